// Goal: the scheduler loop (model/scheduler.hpp) runs jobs on their regular
// grid and carries the pure retry machine's decisions through the durable
// queue, the state store, notifications and logs exactly as docs/semantics.md
// §4, §6 and §9 say, in a run without crashes: the 004 hourly outage example
// end to end, a regular slot superseding a pending per_episode retry, per_slot
// budgets, a long run delaying another job's slot under concurrency 1
// (measured), and the same seed giving the same trace.
// Method: the scheduler as a simulated process in the world of
// scheduler_fixtures.hpp, its model API's outages scripted; checks read the
// durable state store, the messenger's accepted notifications and the trace.
#include "model/scheduler.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/state_store.hpp"
#include "model/status_view.hpp"
#include "sim/kernel/trace.hpp"
#include "tests/model/scheduler_fixtures.hpp"

namespace rehearse::sim::scheduler_test {
namespace {

// --- 004's hourly example ----------------------------------------------------

// Hourly job, per-job form {max 2, backoff 300 s} (per_episode), model API
// rate-limited 10:00-14:00. 10:00 fails (retrying 1/2), the retry fails
// (2/2), the next retry fails (retry_exhausted); 11:00, 12:00, 13:00 run on
// schedule, fail, no accelerated retries; 14:00 succeeds and resets.
TEST(Scheduler, HourlyOutageExampleEndToEnd) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.start();

  // Failure 1 (the 10:00 run answers at 10:00:30): retrying 1/2.
  w.run_until(at("2026-03-02T10:01:00Z"));
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.failure_class, FailureClass::rate_limit);
  EXPECT_EQ(s.retry_count, 1);
  EXPECT_EQ(s.retry_limit, 2);
  EXPECT_EQ(s.next_action, NextAction::retry);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));

  // Failure 2: retrying 2/2, the next retry 5 minutes after it.
  w.run_until(at("2026-03-02T10:07:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:11:00Z"));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));

  // Failure 3: the budget is spent.
  w.run_until(at("2026-03-02T10:12:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_action, NextAction::wait_next_run);
  EXPECT_FALSE(s.next_retry_at.has_value());
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(badge(s), "rate_limit 2/2 retry_exhausted");
  // The status view lists it among the exhausted, with its policy.
  const StatusReport report = build_status(
      {{s, policy_of({"digest", "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))}});
  ASSERT_EQ(report.exhausted.size(), 1u);
  EXPECT_EQ(report.exhausted[0].badge, "rate_limit 2/2 retry_exhausted");
  EXPECT_NE(render_text(report).find("policy: per_job max=2 backoff=fixed 5m"), std::string::npos);

  // 11:00-13:00 fail on schedule, without accelerated retries; 14:00 succeeds.
  w.run_until(at("2026-03-02T14:30:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
  EXPECT_FALSE(s.next_retry_at.has_value());
  EXPECT_EQ(s.next_run_at, at("2026-03-02T15:00:00Z"));
  EXPECT_TRUE(s.slots.empty());

  const std::vector<Started> runs = starts(w, "digest");
  std::vector<std::pair<TimeMs, std::string>> seen;
  for (const Started& r : runs) seen.emplace_back(r.t, r.kind);
  const std::vector<std::pair<TimeMs, std::string>> want = {
      {at("2026-03-02T10:00:00Z"), "regular"}, {at("2026-03-02T10:05:30Z"), "retry"},
      {at("2026-03-02T10:11:00Z"), "retry"},   {at("2026-03-02T11:00:00Z"), "regular"},
      {at("2026-03-02T12:00:00Z"), "regular"}, {at("2026-03-02T13:00:00Z"), "regular"},
      {at("2026-03-02T14:00:00Z"), "regular"}};
  EXPECT_EQ(seen, want);
  // Every regular run started exactly at its slot (no start delay).
  for (const Started& r : runs) {
    if (r.kind == "regular") {
      EXPECT_EQ(r.slot, r.t);
      EXPECT_EQ(r.start_delay_ms, 0);
    }
  }

  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted",
                                      "retry_exhausted", "retry_exhausted", "retry_exhausted",
                                      "recovered"}));
  const std::vector<json> notes = w.notes("digest");
  ASSERT_EQ(notes.size(), 7u);
  const std::vector<int> attempts = {1, 2, 2, 2, 2, 2, 2};
  for (std::size_t i = 0; i < notes.size(); ++i) {
    EXPECT_EQ(notes[i].at("attempt").get<int>(), attempts[i]) << i;
    // Fixed fields on every notification.
    for (const char* key : {"event", "job_id", "failure_class", "attempt", "next_action", "at"}) {
      EXPECT_TRUE(notes[i].contains(key)) << key;
    }
  }
  EXPECT_EQ(notes[0].at("next_action"), "retry");
  EXPECT_EQ(notes[0].at("next_retry_at"), "2026-03-02T10:05:30Z");
  EXPECT_EQ(notes[2].at("next_action"), "wait_next_run");
  EXPECT_EQ(notes[6].at("failure_class"), "rate_limit");
  // The log uses the same names (trace events of the same type).
  EXPECT_EQ(w.events("retry_scheduled", "digest").size(), 2u);
  EXPECT_EQ(w.events("retry_exhausted", "digest").size(), 4u);
  EXPECT_EQ(w.events("recovered", "digest").size(), 1u);
  // next_run_at never moved off the hourly grid: every handed-out slot is one.
  for (const TraceEvent& e : w.events("slot_due", "digest")) {
    ASSERT_TRUE(e.slot.has_value());
    EXPECT_EQ(*e.slot % kHourMs, 0);
  }
  EXPECT_TRUE(w.queue().entries().empty());
  EXPECT_TRUE(w.queue().outbox().empty());
}

// A regular slot that comes due while a retry is pending supersedes it
// (per_episode): the pending retry is dropped, the count is kept.
TEST(Scheduler, PerEpisodeRegularSlotSupersedesPendingRetry) {
  // Retries 40 minutes apart: the 10:00 failure's retry (10:40:30) fails
  // again and schedules one for 11:21:00; the 11:00 slot supersedes it.
  World w(at("2026-03-02T09:30:00Z"),
          {{"digest", "0 * * * *", {{"max", 3}, {"backoff_sec", 2400}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T12:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:59:00Z"));
  JobState s = w.stored("digest");
  ASSERT_EQ(s.retry_count, 2);
  ASSERT_EQ(s.next_retry_at, at("2026-03-02T11:21:00Z"));
  w.run_until(at("2026-03-02T11:01:00Z"));
  ASSERT_EQ(w.events("retry_superseded", "digest").size(), 1u);
  // The 11:00 run failed with the episode's count at 2 -> retry 3/3.
  s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 3);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T11:40:30Z"));
  w.run_until(at("2026-03-02T11:30:00Z"));
  // The superseded retry never ran.
  for (const Started& r : starts(w, "digest")) {
    EXPECT_NE(r.t, at("2026-03-02T11:21:00Z"));
  }
}

// --- per_slot ----------------------------------------------------------------

// BullMQ form, per_slot: every slot is its own instance with a full budget
// and stays on its grid; a slot's retries do not touch the next slot's.
TEST(Scheduler, PerSlotEachSlotHasFullBudgetOnItsGrid) {
  World w(at("2026-03-02T09:30:00Z"),
          {{"sync",
            "0 * * * *",
            {{"attempts", 3}, {"backoff", {{"type", "fixed"}, {"delay", "10m"}}}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T11:15:00Z"));
  w.start();
  w.run_until(at("2026-03-02T11:45:00Z"));

  std::vector<std::tuple<TimeMs, TimeMs, std::string, std::int64_t>> seen;
  for (const Started& r : starts(w, "sync")) seen.emplace_back(r.t, r.slot, r.kind, r.attempt);
  const TimeMs s10 = at("2026-03-02T10:00:00Z");
  const TimeMs s11 = at("2026-03-02T11:00:00Z");
  const std::vector<std::tuple<TimeMs, TimeMs, std::string, std::int64_t>> want = {
      {s10, s10, "regular", 1},
      {at("2026-03-02T10:10:30Z"), s10, "retry", 2},
      {at("2026-03-02T10:21:00Z"), s10, "retry", 3},
      {s11, s11, "regular", 1},  // on its grid, budget untouched by 10:00's
      {at("2026-03-02T11:10:30Z"), s11, "retry", 2},
      {at("2026-03-02T11:21:00Z"), s11, "retry", 3}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(w.note_events("sync"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted",
                                      "retry_scheduled", "retry_scheduled", "recovered"}));
  const std::vector<json> notes = w.notes("sync");
  EXPECT_EQ(notes[3].at("attempt"), 1);  // 11:00's first failure: a fresh budget
  EXPECT_EQ(notes[3].at("slot"), "2026-03-02T11:00:00Z");
  const JobState s = w.stored("sync");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T12:00:00Z"));
  EXPECT_TRUE(s.slots.empty());
}

// --- concurrency -------------------------------------------------------------

// With concurrency 1 a long run of one job delays another job's slot; the
// delay is measured (run_started.start_delay_ms) while the slot itself is
// handed out on time (no misfire). With concurrency 2 it is not delayed.
TEST(Scheduler, ConcurrencyOneDelaysAnotherJobsSlotAndMeasuresIt) {
  for (int concurrency : {1, 2}) {
    SchedulerOptions options;
    options.concurrency = concurrency;
    World w(at("2026-03-02T09:30:00Z"),
            {{"long", "0 * * * *", per_job_max2()}, {"short", "5 * * * *", per_job_max2()}},
            options);
    w.api().set_latency("long", 20 * kMinuteMs);
    w.start();
    w.run_until(at("2026-03-02T10:30:00Z"));
    const std::vector<Started> runs = starts(w, "short");
    ASSERT_EQ(runs.size(), 1u);
    const std::vector<TraceEvent> due = w.events("slot_due", "short");
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].t, at("2026-03-02T10:05:00Z")) << "handed out at its instant";
    if (concurrency == 1) {
      EXPECT_EQ(runs[0].t, at("2026-03-02T10:20:00Z"));
      EXPECT_EQ(runs[0].start_delay_ms, 15 * kMinuteMs);
    } else {
      EXPECT_EQ(runs[0].t, at("2026-03-02T10:05:00Z"));
      EXPECT_EQ(runs[0].start_delay_ms, 0);
    }
    EXPECT_EQ(w.stored("short").misfire_runs, 0);
    EXPECT_EQ(w.stored("short").next_run_at, at("2026-03-02T11:05:00Z"));
  }
}

// The same seed gives a byte-identical trace (determinism, invariant 10).
TEST(Scheduler, SameSeedSameTrace) {
  auto run_once = [] {
    World w(at("2026-03-02T09:30:00Z"),
            {{"digest", "0 * * * *", per_job_max2()},
             {"sync",
              "*/20 * * * *",
              {{"attempts", 3},
               {"backoff", {{"type", "exponential"}, {"delay", "2m"}, {"jitter", 0.5}}}}}});
    w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T11:00:00Z"), 503);
    w.restart(at("2026-03-02T10:10:10Z"), at("2026-03-02T10:12:00Z"));
    w.start();
    w.run_until(at("2026-03-02T12:00:00Z"));
    return std::make_pair(w.trace().hash(), w.trace().size());
  };
  const auto a = run_once();
  const auto b = run_once();
  EXPECT_EQ(a, b);
  EXPECT_GT(a.second, 50u);
}

}  // namespace
}  // namespace rehearse::sim::scheduler_test
