// Goal: the regular schedule (docs/semantics.md §4) keeps a persisted slot,
// runs nothing before it and coalesces missed slots into one bounded late
// run; the notification vocabulary of §9 round-trips and its fixed fields
// appear in lines and JSON alike.
// Method: the pure schedule transitions driven by hand over the hourly grid
// (and once over a real cron), with exact expected rows; notifications
// built field by field and read back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/notification.hpp"
#include "model/retry_machine.hpp"
#include "tests/model/retry_machine_fixtures.hpp"

namespace rehearse {
namespace {

using nlohmann::json;
using retry_test::at;
using retry_test::fresh;
using retry_test::kHourly;
using retry_test::policy;

// ---- the regular schedule and misfires ----

TEST(RegularSchedule, StartsAtOrAfterStartAndKeepsAPersistedSlot) {
  JobState s = *start_schedule(fresh(), kHourly, at("2026-12-04T10:00:00Z"));
  EXPECT_EQ(s.next_run_at, at("2026-12-04T10:00:00Z")) << "a slot exactly at start counts";
  s = *start_schedule(fresh(), kHourly, at("2026-12-04T10:00:00.001Z"));
  EXPECT_EQ(s.next_run_at, at("2026-12-04T11:00:00Z"));
  JobState persisted = fresh();
  persisted.next_run_at = at("2026-12-04T08:00:00Z");
  EXPECT_EQ(start_schedule(persisted, kHourly, at("2026-12-04T10:30:00Z"))->next_run_at,
            at("2026-12-04T08:00:00Z"))
      << "a restart keeps the slot it missed, so the misfire is seen";
  JobState only_last = fresh();
  only_last.last_slot = at("2026-12-04T07:00:00Z");
  EXPECT_EQ(start_schedule(only_last, kHourly, at("2026-12-04T10:30:00Z"))->next_run_at,
            at("2026-12-04T08:00:00Z"));
}

TEST(RegularSchedule, NothingDueBeforeTheSlot) {
  JobState s = fresh();
  s.next_run_at = at("2026-12-04T11:00:00Z");
  const auto step = *take_due_slot(s, kHourly, at("2026-12-04T10:59:59.999Z"));
  EXPECT_FALSE(step.handout.has_value());
  EXPECT_EQ(step.state, s);
}

TEST(RegularSchedule, MissedSlotsCoalesceIntoOneLateRun) {
  JobState s = fresh();
  s.next_run_at = at("2026-12-04T08:00:00Z");
  // Down from 07:30 to 10:20: 08:00, 09:00 and 10:00 came due.
  const TimeMs now = at("2026-12-04T10:20:00Z");
  const auto step = *take_due_slot(s, kHourly, now);
  ASSERT_TRUE(step.handout.has_value());
  EXPECT_EQ(step.handout->slot, at("2026-12-04T08:00:00Z"));
  EXPECT_EQ(step.handout->coalesced_slots,
            (std::vector<TimeMs>{at("2026-12-04T09:00:00Z"), at("2026-12-04T10:00:00Z")}));
  EXPECT_EQ(step.handout->coalesced_count, 2);
  EXPECT_EQ(step.handout->lateness_ms, 140 * kMinuteMs);
  EXPECT_TRUE(step.handout->misfire);
  EXPECT_EQ(step.state.next_run_at, at("2026-12-04T11:00:00Z"));
  EXPECT_EQ(step.state.last_slot, at("2026-12-04T08:00:00Z"));
  EXPECT_EQ(step.state.misfire_runs, 1);
  EXPECT_EQ(step.state.coalesced_slots, 2);
  EXPECT_EQ(step.state.max_lateness_ms, 140 * kMinuteMs);
  // One slot late within the grace is not a misfire.
  JobState on_time = fresh();
  on_time.next_run_at = at("2026-12-04T08:00:00Z");
  const auto graced = *take_due_slot(on_time, kHourly, at("2026-12-04T08:00:00.400Z"), 500);
  EXPECT_FALSE(graced.handout->misfire);
  EXPECT_EQ(graced.state.misfire_runs, 0);
}

TEST(RegularSchedule, CoalescingIsBounded) {
  const NextSlotFn every_second = [](TimeMs t) -> Result<TimeMs> {
    return (t / kSecondMs + 1) * kSecondMs;
  };
  JobState s = fresh();
  s.next_run_at = 0;
  const TimeMs now = 3 * kCoalesceScanMax * kSecondMs + 500;
  const auto step = *take_due_slot(s, every_second, now);
  ASSERT_TRUE(step.handout.has_value());
  EXPECT_TRUE(step.handout->coalesced_truncated);
  EXPECT_EQ(step.handout->coalesced_count, kCoalesceScanMax);
  EXPECT_EQ(step.handout->coalesced_slots.size(), kCoalescedListMax);
  EXPECT_EQ(step.state.next_run_at, (now / kSecondMs + 1) * kSecondMs) << "still exact";
}

TEST(RegularSchedule, ScheduleErrorsPropagate) {
  const NextSlotFn broken = [](TimeMs) -> Result<TimeMs> {
    return make_error(ErrorCode::never_fires, "never");
  };
  EXPECT_FALSE(start_schedule(fresh(), broken, 0).ok());
  JobState s = fresh();
  s.next_run_at = 0;
  EXPECT_FALSE(take_due_slot(s, broken, 10).ok());
}

TEST(RegularSchedule, WorksWithARealCron) {
  auto cron = CronSchedule::parse("0 17 * * 5");
  ASSERT_TRUE(cron.ok());
  JobState s = *start_schedule(fresh(), *cron, at("2026-11-30T00:00:00Z"));
  EXPECT_EQ(s.next_run_at, at("2026-12-04T17:00:00Z"));
  const auto step = *take_due_slot(s, *cron, at("2026-12-04T17:00:00Z"));
  EXPECT_EQ(step.state.next_run_at, at("2026-12-11T17:00:00Z"));
}

// ---- notifications ----

TEST(Notifications, EventNamesRoundTrip) {
  for (const char* name : {"retry_scheduled", "retry_exhausted", "failed_permanent", "recovered",
                           "policy_invalid", "state_corrupt"}) {
    const auto e = parse_notification_event(name);
    ASSERT_TRUE(e.has_value()) << name;
    EXPECT_STREQ(to_string(*e), name);
  }
  EXPECT_FALSE(parse_notification_event("Recovered").has_value());
}

TEST(Notifications, FixedFieldsInLinesAndJson) {
  Notification n;
  n.event = NotificationEvent::retry_exhausted;
  n.job_id = "weekly-summary";
  n.failure_class = FailureClass::rate_limit;
  n.attempt = 2;
  n.next_action = NextAction::wait_next_run;
  n.at = at("2026-12-04T17:00:00Z");
  n.slot = at("2026-12-04T17:00:00Z");
  EXPECT_EQ(to_string(n),
            "event=retry_exhausted job_id=weekly-summary failure_class=rate_limit attempt=2 "
            "next_action=wait_next_run at=2026-12-04T17:00:00Z slot=2026-12-04T17:00:00Z");
  const json j = to_json(n);
  EXPECT_EQ(j.at("event"), "retry_exhausted");
  EXPECT_EQ(j.at("failure_class"), "rate_limit");
  EXPECT_EQ(j.at("attempt"), 2);
  EXPECT_EQ(j.at("next_action"), "wait_next_run");
  EXPECT_EQ(j.at("at"), "2026-12-04T17:00:00Z");
  auto back = notification_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(*back, n);
  Notification corrupt;
  corrupt.event = NotificationEvent::state_corrupt;
  corrupt.job_id = "*";
  corrupt.next_action = NextAction::manual_review;
  corrupt.detail = "retry_state.json: unexpected end of input";
  const json cj = to_json(corrupt);
  EXPECT_TRUE(cj.at("failure_class").is_null());
  EXPECT_EQ(*notification_from_json(cj), corrupt);
  json extra = cj;
  extra["colour"] = "red";
  EXPECT_EQ(notification_from_json(extra).error().where, "/colour");
  json bad_event = cj;
  bad_event["event"] = "retried";
  EXPECT_EQ(notification_from_json(bad_event).error().where, "/event");
}

}  // namespace
}  // namespace rehearse
