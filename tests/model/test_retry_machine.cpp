// Goal: the retry state machine follows docs/semantics.md §4 and the boundary
// cases of §11 (004's three-failure test, non-retryable classes, limit
// overrun, counters across a restart, invalid policies, stalls); the regular
// schedule and the notifications are in test_regular_schedule.cpp.
// Method: each rule as a unit test driving the pure transitions by hand with
// exact expected rows and notifications; the worked per_episode example of
// §2 (hourly, max 2, outage 10:00-14:00); then properties that drive a
// small event loop over random outcome sequences and check the invariants
// from outside (retries within budget for both scopes, no retry of a class the
// policy does not retry or under an invalid policy, next_run_at always the
// schedule's own next slot).
#include "model/retry_machine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/model/retry_machine_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

using retry_test::at;
using retry_test::fresh;
using retry_test::kHourly;
using retry_test::next_hour;
using retry_test::policy;

class ScriptedRandom : public RandomSource {
 public:
  explicit ScriptedRandom(std::deque<std::uint64_t> draws) : draws_(std::move(draws)) {}
  std::uint64_t next_u64() override {
    EXPECT_FALSE(draws_.empty());
    if (draws_.empty()) return 0;
    const auto v = draws_.front();
    draws_.pop_front();
    return v;
  }

 private:
  std::deque<std::uint64_t> draws_;
};

// ---- docs/semantics.md §11 (004): failures 1-2 retrying, failure 3 exhausted ----

TEST(RetryMachine, ThreeFailuresWithMaxTwoKeepTheRegularTime) {
  const auto p = policy(R"({"max": 2, "backoff_sec": 300, "reason": "drafts only"})");
  ASSERT_TRUE(p.ok());
  JobState s = apply_policy(p, fresh(), at("2026-12-04T09:00:00Z")).state;
  EXPECT_EQ(s.retry_limit, 2);
  s = *start_schedule(s, kHourly, at("2026-12-04T10:00:00Z"));
  EXPECT_EQ(s.next_run_at, at("2026-12-04T10:00:00Z"));

  auto step = *take_due_slot(s, kHourly, at("2026-12-04T10:00:00Z"));
  ASSERT_TRUE(step.handout.has_value());
  EXPECT_EQ(step.handout->slot, at("2026-12-04T10:00:00Z"));
  EXPECT_FALSE(step.handout->misfire);
  s = step.state;
  const TimeMs regular = at("2026-12-04T11:00:00Z");
  EXPECT_EQ(s.next_run_at, regular);
  const TimeMs slot = at("2026-12-04T10:00:00Z");

  // Failure 1.
  auto t = on_run_failed(p, s, {slot, RunKind::regular}, FailureClass::rate_limit, "HTTP 429", slot,
                         nullptr);
  s = t.state;
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.retry_count, 1);
  EXPECT_EQ(s.next_retry_at, at("2026-12-04T10:05:00Z"));
  EXPECT_EQ(s.next_action, NextAction::retry);
  EXPECT_EQ(s.failure_class, FailureClass::rate_limit);
  EXPECT_EQ(s.last_error, "HTTP 429");
  EXPECT_EQ(s.next_run_at, regular);
  EXPECT_EQ(s.updated_at, slot);
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(*t.scheduled_retry, (RetryRef{slot, at("2026-12-04T10:05:00Z")}));
  ASSERT_EQ(t.notifications.size(), 1U);
  EXPECT_EQ(t.notifications[0].event, NotificationEvent::retry_scheduled);
  EXPECT_EQ(t.notifications[0].attempt, 1);
  EXPECT_EQ(t.notifications[0].next_action, NextAction::retry);
  EXPECT_EQ(t.notifications[0].job_id, "threads-timely");
  EXPECT_EQ(t.notifications[0].next_retry_at, at("2026-12-04T10:05:00Z"));
  EXPECT_EQ(badge(s), "rate_limit 1/2 retrying");

  // Failure 2 (the first retry).
  s = on_run_started(p, s, {slot, RunKind::retry}, at("2026-12-04T10:05:00Z")).state;
  EXPECT_FALSE(s.next_retry_at.has_value()) << "a running retry is no longer scheduled";
  EXPECT_EQ(s.next_action, NextAction::retry);
  t = on_run_failed(p, s, {slot, RunKind::retry}, FailureClass::rate_limit, "HTTP 429",
                    at("2026-12-04T10:05:00Z"), nullptr);
  s = t.state;
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_retry_at, at("2026-12-04T10:10:00Z"));
  EXPECT_EQ(s.next_run_at, regular);
  EXPECT_EQ(t.notifications.at(0).attempt, 2);

  // Failure 3: the budget is spent.
  s = on_run_started(p, s, {slot, RunKind::retry}, at("2026-12-04T10:10:00Z")).state;
  t = on_run_failed(p, s, {slot, RunKind::retry}, FailureClass::rate_limit, "HTTP 429",
                    at("2026-12-04T10:10:00Z"), nullptr);
  s = t.state;
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_FALSE(s.next_retry_at.has_value());
  EXPECT_EQ(s.next_action, NextAction::wait_next_run);
  EXPECT_EQ(s.next_run_at, regular);
  EXPECT_FALSE(t.scheduled_retry.has_value());
  ASSERT_EQ(t.notifications.size(), 1U);
  EXPECT_EQ(t.notifications[0].event, NotificationEvent::retry_exhausted);
  EXPECT_EQ(t.notifications[0].attempt, 2);
  EXPECT_EQ(t.notifications[0].next_action, NextAction::wait_next_run);
  EXPECT_EQ(badge(s), "rate_limit 2/2 retry_exhausted");
  EXPECT_TRUE(s.slots.empty()) << "an exhausted slot is no longer in flight";
}

TEST(RetryMachine, NonRetryableClassIsNeverRetried) {
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  for (const FailureClass c :
       {FailureClass::auth, FailureClass::validation, FailureClass::not_found, FailureClass::config,
        FailureClass::unknown}) {
    const auto t = on_run_failed(p, fresh(), {0, RunKind::regular}, c, "boom", 1000, nullptr);
    EXPECT_EQ(t.state.retry_status, RetryStatus::failed) << to_string(c);
    EXPECT_EQ(t.state.next_action, NextAction::manual_review);
    EXPECT_EQ(t.state.retry_count, 0) << "did not retry: nothing consumed";
    EXPECT_FALSE(t.state.next_retry_at.has_value());
    EXPECT_FALSE(t.scheduled_retry.has_value());
    ASSERT_EQ(t.notifications.size(), 1U);
    EXPECT_EQ(t.notifications[0].event, NotificationEvent::failed_permanent);
    EXPECT_EQ(t.notifications[0].failure_class, c);
    EXPECT_EQ(t.notifications[0].next_action, NextAction::manual_review);
  }
  // A policy that lists not_found retries it (000: 404s that are transient).
  const auto transient_404 = policy(R"({"max": 1, "backoff_sec": 60,
      "retryable_classes": ["not_found"]})");
  const auto t = on_run_failed(transient_404, fresh(), {0, RunKind::regular},
                               FailureClass::not_found, "404", 0, nullptr);
  EXPECT_EQ(t.state.retry_status, RetryStatus::retrying);
}

TEST(RetryMachine, SuccessResetsAndReportsRecovery) {
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  JobState s =
      on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::timeout, "t/o", 0, nullptr)
          .state;
  s = on_run_started(p, s, {0, RunKind::retry}, 300'000).state;
  const auto t = on_run_succeeded(p, s, {0, RunKind::retry}, 300'500);
  EXPECT_EQ(t.state.retry_status, RetryStatus::ok);
  EXPECT_EQ(t.state.retry_count, 0);
  EXPECT_FALSE(t.state.next_retry_at.has_value());
  EXPECT_EQ(t.state.next_action, NextAction::none);
  EXPECT_FALSE(t.state.failure_class.has_value());
  EXPECT_TRUE(t.state.last_error.empty());
  EXPECT_TRUE(t.state.slots.empty());
  ASSERT_EQ(t.notifications.size(), 1U);
  EXPECT_EQ(t.notifications[0].event, NotificationEvent::recovered);
  EXPECT_EQ(t.notifications[0].attempt, 1) << "recovered after one retry";
  EXPECT_EQ(t.notifications[0].failure_class, FailureClass::timeout);
  EXPECT_EQ(t.notifications[0].next_action, NextAction::none);
  EXPECT_EQ(badge(t.state), "ok");
  // A success of a healthy job says nothing.
  EXPECT_TRUE(
      on_run_succeeded(p, t.state, {kHourMs, RunKind::regular}, kHourMs).notifications.empty());
  // ...and the next outage starts with a fresh budget.
  const auto next = on_run_failed(p, t.state, {kHourMs, RunKind::regular}, FailureClass::timeout,
                                  "t/o", kHourMs, nullptr);
  EXPECT_EQ(next.state.retry_count, 1);
}

TEST(RetryMachine, LimitOverrunStaysVisible) {
  // The policy's max was lowered from 5 to 2 while the job had used 3.
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  JobState s = fresh();
  s.retry_status = RetryStatus::retrying;
  s.failure_class = FailureClass::rate_limit;
  s.retry_count = 3;
  s.retry_limit = 5;
  const auto t =
      on_run_failed(p, s, {0, RunKind::regular}, FailureClass::rate_limit, "429", 0, nullptr);
  EXPECT_EQ(t.state.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(t.state.retry_count, 3) << "the overrun is kept, not clamped away";
  EXPECT_EQ(t.state.retry_limit, 2);
  EXPECT_FALSE(t.scheduled_retry.has_value());
  EXPECT_EQ(badge(t.state), "rate_limit 3/2 retry_exhausted");
}

TEST(RetryMachine, CounterSurvivesARestart) {
  // The state is all there is: a "restart" re-applies the policy to the
  // persisted row and the next failure continues the count.
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  JobState s = apply_policy(p, fresh(), 0).state;
  s = on_run_failed(p, s, {0, RunKind::regular}, FailureClass::network, "reset", 0, nullptr).state;
  const JobState persisted = s;  // what the store wrote
  JobState reloaded = apply_policy(p, persisted, 200'000).state;
  EXPECT_EQ(reloaded, persisted) << "re-applying a valid policy changes nothing";
  EXPECT_TRUE(apply_policy(p, persisted, 200'000).notifications.empty());
  reloaded = on_run_started(p, reloaded, {0, RunKind::retry}, 300'000).state;
  const auto t = on_run_failed(p, reloaded, {0, RunKind::retry}, FailureClass::network, "reset",
                               300'000, nullptr);
  EXPECT_EQ(t.state.retry_count, 2);
}

TEST(RetryMachine, InvalidPolicyRunsButNeverRetries) {
  const auto bad = policy(R"({"max": 2, "backoff_sec": 300, "retryable_clases": []})");
  ASSERT_FALSE(bad.ok());
  JobState s = fresh();
  // A retry left over from before the policy broke is dropped (fail closed).
  s.retry_status = RetryStatus::retrying;
  s.retry_count = 1;
  s.failure_class = FailureClass::timeout;
  s.next_retry_at = 5000;
  s.next_action = NextAction::retry;
  s.slots[0] = SlotRecord{
      0, RetryStatus::retrying, FailureClass::timeout, 1, 5000, NextAction::retry, 0, "t/o", {}};
  auto t = apply_policy(bad, s, 1000);
  EXPECT_EQ(t.state.retry_limit, 0);
  EXPECT_NE(t.state.policy_error.find("/retryable_clases"), std::string::npos);
  EXPECT_EQ(t.cancelled_retries, (std::vector<RetryRef>{{0, 5000}}));
  EXPECT_EQ(t.state.next_action, NextAction::manual_review);
  EXPECT_FALSE(t.state.next_retry_at.has_value());
  ASSERT_EQ(t.notifications.size(), 1U);
  EXPECT_EQ(t.notifications[0].event, NotificationEvent::policy_invalid);
  EXPECT_EQ(t.notifications[0].failure_class, FailureClass::config);
  EXPECT_EQ(t.notifications[0].next_action, NextAction::manual_review);
  EXPECT_EQ(t.notifications[0].detail, t.state.policy_error);
  s = t.state;
  // Once: re-applying the same invalid policy (e.g. after a restart) is quiet.
  EXPECT_TRUE(apply_policy(bad, s, 2000).notifications.empty());
  // Even a timeout (retryable by every default) is not retried.
  t = on_run_failed(bad, s, {kHourMs, RunKind::regular}, FailureClass::timeout, "t/o", kHourMs,
                    nullptr);
  EXPECT_EQ(t.state.retry_status, RetryStatus::failed);
  EXPECT_EQ(t.state.next_action, NextAction::manual_review);
  EXPECT_FALSE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.notifications.at(0).event, NotificationEvent::failed_permanent);
  EXPECT_NE(t.notifications.at(0).detail.find("retry policy invalid"), std::string::npos);
  EXPECT_EQ(badge(t.state), "timeout 1/0 failed policy_invalid");
  // Fixing the policy clears the error.
  const auto fixed = policy(R"({"max": 2, "backoff_sec": 300})");
  EXPECT_TRUE(apply_policy(fixed, t.state, 3000).state.policy_error.empty());
}

TEST(RetryMachine, BullmqSingleAttemptIsExhaustedAtOnce) {
  const auto p = policy(R"({"attempts": 1})");
  const auto t =
      on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::auth, "401", 0, nullptr);
  EXPECT_EQ(t.state.retry_status, RetryStatus::retry_exhausted)
      << "BullMQ retries every class; the budget of 0 is spent";
  EXPECT_EQ(badge(t.state), "auth 0/0 retry_exhausted");
}

TEST(RetryMachine, JitteredRetryDrawsOnceFromTheRunsGenerator) {
  const auto p = policy(R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 1000,
      "jitter": 0.5}})");
  ScriptedRandom random({std::uint64_t{1} << 63});
  const auto t = on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::timeout, "t/o",
                               10'000, &random);
  // n = 1: max 1000; floor(0.5 * 1000 * 0.5 + 500) = 750.
  EXPECT_EQ(t.state.next_retry_at, 10'750);
}

TEST(RetryMachine, RetryTimeSaturatesAtTheEndOfTime) {
  const auto p = policy(R"({"max": 1000, "backoff": {"type": "exponential", "delay": "366d"}})");
  JobState s = fresh();
  s.retry_status = RetryStatus::retrying;
  s.retry_count = 900;
  const auto t = on_run_failed(p, s, {0, RunKind::regular}, FailureClass::timeout, "t/o",
                               kMaxInstantMs - 5, nullptr);
  EXPECT_EQ(t.state.next_retry_at, kMaxInstantMs);
}

TEST(RetryMachine, DecideFailureTable) {
  const auto p = policy(R"({"max": 2, "backoff": {"type": "exponential", "delay": "1m"}})");
  auto d = decide_failure(p, 0, FailureClass::timeout, nullptr, FailureAt{});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  EXPECT_EQ(d.retry_count, 1);
  EXPECT_EQ(d.delay_ms, kMinuteMs);
  d = decide_failure(p, 1, FailureClass::timeout, nullptr, FailureAt{});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  EXPECT_EQ(d.retry_count, 2);
  EXPECT_EQ(d.delay_ms, 2 * kMinuteMs);
  d = decide_failure(p, 2, FailureClass::timeout, nullptr, FailureAt{});
  EXPECT_EQ(d.kind, FailureDecisionKind::exhausted);
  EXPECT_EQ(d.retry_count, 2);
  d = decide_failure(p, 0, FailureClass::auth, nullptr, FailureAt{});
  EXPECT_EQ(d.kind, FailureDecisionKind::permanent);
  EXPECT_EQ(d.retry_count, 0);
  d = decide_failure(policy("{}"), 0, FailureClass::timeout, nullptr, FailureAt{});
  EXPECT_EQ(d.kind, FailureDecisionKind::permanent);
}

// ---- budget scopes ----

TEST(RetryMachine, PerEpisodeWorkedExampleHourlyMaxTwoOutageTenToFourteen) {
  // docs/semantics.md §2: 10:00 fails (retrying 1/2), retry fails (2/2),
  // retry fails (retry_exhausted); 11:00, 12:00, 13:00 run on schedule, fail,
  // and get no accelerated retries; 14:00 succeeds and resets the counter.
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  ASSERT_EQ(p->budget, BudgetScope::per_episode);
  JobState s = apply_policy(p, fresh(), at("2026-12-04T09:59:00Z")).state;
  s = *start_schedule(s, kHourly, at("2026-12-04T10:00:00Z"));
  std::vector<Notification> all;
  int retries_run = 0;
  auto take = [&](Transition t) {
    all.insert(all.end(), t.notifications.begin(), t.notifications.end());
    s = std::move(t.state);
    return t.scheduled_retry;
  };
  for (const char* hour : {"2026-12-04T10:00:00Z", "2026-12-04T11:00:00Z", "2026-12-04T12:00:00Z",
                           "2026-12-04T13:00:00Z", "2026-12-04T14:00:00Z"}) {
    const TimeMs now = at(hour);
    auto step = *take_due_slot(s, kHourly, now);
    ASSERT_TRUE(step.handout.has_value()) << hour;
    s = step.state;
    EXPECT_EQ(s.next_run_at, now + kHourMs) << "the regular schedule never moves";
    take(on_slot_due(p, s, now, now));
    take(on_run_started(p, s, {now, RunKind::regular}, now));
    if (now == at("2026-12-04T14:00:00Z")) {
      take(on_run_succeeded(p, s, {now, RunKind::regular}, now));
      break;
    }
    auto retry = take(on_run_failed(p, s, {now, RunKind::regular}, FailureClass::rate_limit,
                                    "usage limit", now, nullptr));
    while (retry) {
      ++retries_run;
      take(on_run_started(p, s, {retry->slot, RunKind::retry}, retry->at));
      retry = take(on_run_failed(p, s, {retry->slot, RunKind::retry}, FailureClass::rate_limit,
                                 "usage limit", retry->at, nullptr));
    }
    EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted) << hour;
    EXPECT_EQ(s.retry_count, 2) << hour;
    EXPECT_EQ(s.next_action, NextAction::wait_next_run) << hour;
  }
  EXPECT_EQ(retries_run, 2) << "only 10:00 got accelerated retries";
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
  std::vector<std::string> events;
  for (const auto& n : all) {
    events.push_back(std::string(to_string(n.event)) + " " + std::to_string(n.attempt));
  }
  EXPECT_EQ(events,
            (std::vector<std::string>{"retry_scheduled 1", "retry_scheduled 2", "retry_exhausted 2",
                                      "retry_exhausted 2", "retry_exhausted 2", "retry_exhausted 2",
                                      "recovered 2"}));
}

TEST(RetryMachine, PerEpisodeRegularSlotSupersedesAPendingRetry) {
  // Backoff (2h) longer than the interval (1h): the 11:00 slot comes due
  // while the 10:00 retry is pending and takes its place.
  const auto p = policy(R"({"max": 3, "backoff": {"type": "fixed", "delay": "2h"}})");
  const TimeMs ten = at("2026-12-04T10:00:00Z");
  const TimeMs eleven = at("2026-12-04T11:00:00Z");
  JobState s = on_run_failed(p, fresh(), {ten, RunKind::regular}, FailureClass::provider_5xx, "503",
                             ten, nullptr)
                   .state;
  EXPECT_EQ(s.next_retry_at, at("2026-12-04T12:00:00Z"));
  auto t = on_slot_due(p, s, eleven, eleven);
  EXPECT_EQ(t.cancelled_retries, (std::vector<RetryRef>{{ten, at("2026-12-04T12:00:00Z")}}));
  EXPECT_EQ(t.state.retry_status, RetryStatus::retrying);
  EXPECT_EQ(t.state.retry_count, 1) << "the episode's count carries on";
  EXPECT_FALSE(t.state.next_retry_at.has_value());
  EXPECT_EQ(t.state.next_action, NextAction::wait_next_run);
  EXPECT_TRUE(t.state.slots.empty());
  EXPECT_TRUE(t.notifications.empty());
  // The 11:00 run fails too: the episode's second retry.
  t = on_run_failed(p, t.state, {eleven, RunKind::regular}, FailureClass::provider_5xx, "503",
                    eleven, nullptr);
  EXPECT_EQ(t.state.retry_count, 2);
  EXPECT_EQ(t.scheduled_retry, (RetryRef{eleven, at("2026-12-04T13:00:00Z")}));
}

TEST(RetryMachine, PerEpisodeQueuedRegularRunSupersedesAtStart) {
  // The 11:00 slot came due while the 10:00 retry was running (no
  // supersede then); that retry failed and scheduled another; when the queued
  // 11:00 run starts, it supersedes that one.
  const auto p = policy(R"({"max": 3, "backoff_sec": 600})");
  const TimeMs ten = at("2026-12-04T10:00:00Z");
  const TimeMs eleven = at("2026-12-04T11:00:00Z");
  JobState s =
      on_run_failed(p, fresh(), {ten, RunKind::regular}, FailureClass::timeout, "t/o", ten, nullptr)
          .state;
  s = on_run_started(p, s, {ten, RunKind::retry}, ten + 600'000).state;
  auto due = on_slot_due(p, s, eleven, eleven);
  EXPECT_TRUE(due.cancelled_retries.empty()) << "a running retry is not superseded";
  s = on_run_failed(p, due.state, {ten, RunKind::retry}, FailureClass::timeout, "t/o",
                    eleven + 1000, nullptr)
          .state;
  EXPECT_EQ(s.retry_count, 2);
  const auto start = on_run_started(p, s, {eleven, RunKind::regular}, eleven + 2000);
  EXPECT_EQ(start.cancelled_retries, (std::vector<RetryRef>{{ten, eleven + 1000 + 600'000}}));
  EXPECT_EQ(start.state.next_action, NextAction::wait_next_run);
  EXPECT_EQ(start.state.retry_count, 2);
}

// A retry recorded as started whose end was lost with damage to the store
// (the state a boot reads back after a journal cut): under per_episode the
// next regular run supersedes it and a success ends it, so no later boot
// restores it; under per_slot its record stays, and the boot restores it.
JobState with_orphaned_retry(const PolicyOrError& p, TimeMs slot) {
  JobState s = on_run_failed(p, fresh(), {slot, RunKind::regular}, FailureClass::timeout, "t/o",
                             slot + 30'000, nullptr)
                   .state;
  s = on_run_started(p, s, {slot, RunKind::retry}, slot + 330'000).state;
  EXPECT_EQ(s.slots.at(slot).next_action, NextAction::retry);
  EXPECT_FALSE(s.slots.at(slot).next_retry_at.has_value()) << "started: no instant";
  return s;
}

TEST(RetryMachine, PerEpisodeAnOrphanedStartedRetryGoesWithTheNextRegularRun) {
  const auto p = policy(R"({"max": 2, "backoff_sec": 300})");
  const TimeMs three = at("2026-11-30T03:00:00Z");
  const TimeMs four = at("2026-11-30T04:00:00Z");
  const JobState s = with_orphaned_retry(p, three);
  const auto start = on_run_started(p, s, {four, RunKind::regular}, four + 60'000);
  EXPECT_EQ(start.state.slots.count(three), 0U) << "superseded with the episode's pending ones";
  EXPECT_EQ(start.state.retry_count, 1) << "the episode's count carries on";
  const auto ok = on_run_succeeded(p, s, {four, RunKind::regular}, four + 60'200);
  EXPECT_TRUE(ok.state.slots.empty()) << "a success ends the episode, its orphan with it";
  EXPECT_EQ(ok.state.retry_count, 0);
}

TEST(RetryMachine, PerSlotAnOrphanedStartedRetryIsKeptForTheBootToRestore) {
  const auto p = policy(R"({"attempts": 3, "backoff": {"type": "fixed", "delay": "5m"}})");
  ASSERT_EQ(p->budget, BudgetScope::per_slot);
  const TimeMs three = at("2026-11-30T03:00:00Z");
  const TimeMs four = at("2026-11-30T04:00:00Z");
  const JobState s = with_orphaned_retry(p, three);
  const auto start = on_run_started(p, s, {four, RunKind::regular}, four + 60'000);
  const auto ok = on_run_succeeded(p, start.state, {four, RunKind::regular}, four + 60'200);
  ASSERT_EQ(ok.state.slots.count(three), 1U) << "its own budget, still owed";
  EXPECT_EQ(ok.state.slots.at(three).next_action, NextAction::retry);
}

TEST(RetryMachine, PerSlotBudgetsAreIndependentAndTheRowShowsTheLatest) {
  const auto p = policy(R"({"attempts": 3, "backoff": {"type": "fixed", "delay": "90m"}})");
  ASSERT_EQ(p->budget, BudgetScope::per_slot);
  const TimeMs a = at("2026-12-04T10:00:00Z");
  const TimeMs b = at("2026-12-04T11:00:00Z");
  JobState s =
      on_run_failed(p, fresh(), {a, RunKind::regular}, FailureClass::rate_limit, "429", a, nullptr)
          .state;
  auto due = on_slot_due(p, s, b, b);
  EXPECT_TRUE(due.cancelled_retries.empty()) << "per_slot: the next slot leaves A's retry alone";
  s = due.state;
  auto t = on_run_failed(p, s, {b, RunKind::regular}, FailureClass::timeout, "t/o", b, nullptr);
  s = t.state;
  EXPECT_EQ(s.retry_count, 1) << "B starts with a full budget";
  EXPECT_EQ(s.failure_class, FailureClass::timeout) << "the row shows the latest event";
  ASSERT_EQ(s.slots.size(), 2U);
  EXPECT_EQ(s.slots.at(a).retry_count, 1);
  EXPECT_EQ(s.slots.at(a).next_retry_at, a + 90 * kMinuteMs);
  EXPECT_EQ(s.slots.at(b).next_retry_at, b + 90 * kMinuteMs);
  // A's retry fails: A's own count goes to 2; B untouched.
  s = on_run_started(p, s, {a, RunKind::retry}, a + 90 * kMinuteMs).state;
  EXPECT_EQ(s.failure_class, FailureClass::rate_limit) << "the retry start is the latest event";
  t = on_run_failed(p, s, {a, RunKind::retry}, FailureClass::rate_limit, "429", a + 90 * kMinuteMs,
                    nullptr);
  s = t.state;
  EXPECT_EQ(s.slots.at(a).retry_count, 2);
  EXPECT_EQ(s.slots.at(b).retry_count, 1);
  EXPECT_EQ(s.retry_count, 2);
  // B succeeds on its retry; A is still in flight.
  s = on_run_started(p, s, {b, RunKind::retry}, b + 90 * kMinuteMs).state;
  t = on_run_succeeded(p, s, {b, RunKind::retry}, b + 90 * kMinuteMs);
  EXPECT_EQ(t.state.retry_status, RetryStatus::ok);
  EXPECT_EQ(t.state.slots.count(b), 0U);
  EXPECT_EQ(t.state.slots.count(a), 1U);
  ASSERT_EQ(t.notifications.size(), 1U);
  EXPECT_EQ(t.notifications[0].event, NotificationEvent::recovered);
  EXPECT_EQ(t.notifications[0].attempt, 1) << "B's own retries";
  EXPECT_EQ(t.notifications[0].slot, b);
}

// ---- stalls (a crash while a run was active) ----

TEST(RetryMachine, FirstStallRerunsWithoutConsumingARetrySecondFails) {
  const auto p = policy(R"({"max": 2, "backoff_sec": 60})");
  JobState s =
      on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::timeout, "t/o", 0, nullptr)
          .state;
  s = on_run_started(p, s, {0, RunKind::retry}, 60'000).state;
  const JobState before_stall = s;
  auto first = on_run_stalled(p, s, {0, RunKind::retry}, 500'000);
  EXPECT_EQ(first.decision, StallDecision::rerun);
  EXPECT_TRUE(first.transition.notifications.empty());
  EXPECT_EQ(first.transition.state.retry_count, before_stall.retry_count) << "no retry consumed";
  EXPECT_EQ(first.transition.state.retry_status, before_stall.retry_status);
  EXPECT_EQ(first.transition.state.slots.at(0).stalled_count, 1);
  s = first.transition.state;
  auto second = on_run_stalled(p, s, {0, RunKind::retry}, 900'000);
  EXPECT_EQ(second.decision, StallDecision::fail);
  const JobState& failed = second.transition.state;
  EXPECT_EQ(failed.retry_status, RetryStatus::failed);
  EXPECT_EQ(failed.failure_class, FailureClass::unknown);
  EXPECT_EQ(failed.next_action, NextAction::manual_review);
  EXPECT_EQ(failed.last_error, kStalledError);
  EXPECT_EQ(failed.retry_count, 1);
  EXPECT_TRUE(failed.slots.empty());
  ASSERT_EQ(second.transition.notifications.size(), 1U);
  EXPECT_EQ(second.transition.notifications[0].event, NotificationEvent::failed_permanent);
  EXPECT_FALSE(second.transition.scheduled_retry.has_value())
      << "a stalled-out run is not retried, even when BullMQ would retry its class";
  // A run that ends normally after one stall forgets the stall.
  auto rerun = on_run_stalled(p, fresh(), {kHourMs, RunKind::regular}, kHourMs + 5);
  EXPECT_EQ(rerun.transition.state.slots.at(kHourMs).stalled_count, 1);
  const auto done =
      on_run_succeeded(p, rerun.transition.state, {kHourMs, RunKind::regular}, kHourMs + 10);
  EXPECT_TRUE(done.state.slots.empty());
  EXPECT_EQ(decide_stall(0), StallDecision::rerun);
  EXPECT_EQ(decide_stall(1), StallDecision::fail);
}

// ---- properties over random outcome sequences ----

// One scripted outcome of a run: success, or a failure of some class.
struct Outcome {
  bool success = false;
  FailureClass failure_class = FailureClass::timeout;
};

rc::Gen<Outcome> outcome_gen() {
  return rc::gen::build<Outcome>(
      rc::gen::set(&Outcome::success, rc::gen::weightedElement<bool>({{1, true}, {3, false}})),
      rc::gen::set(&Outcome::failure_class, rc::gen::elementOf(all_failure_classes())));
}

rc::Gen<json> policy_json_gen() {
  return rc::gen::exec([] {
    const int retries = *rc::gen::inRange(0, 5);
    const std::string delay =
        *rc::gen::elementOf(std::vector<std::string>{"1m", "5m", "30m", "59m", "1h", "90m", "3h"});
    const std::string kind = *rc::gen::elementOf(std::vector<std::string>{"fixed", "exponential"});
    json classes = json::array();
    for (const FailureClass c : all_failure_classes()) {
      if (*rc::gen::arbitrary<bool>()) classes.push_back(to_string(c));
    }
    json j;
    switch (*rc::gen::inRange(0, 4)) {
      case 0:
        j = {{"max", retries},
             {"backoff", {{"type", kind}, {"delay", delay}}},
             {"retryable_classes", classes},
             {"reason", "generated"}};
        break;
      case 1:
        j = {{"attempts", retries + 1}, {"backoff", {{"type", kind}, {"delay", delay}}}};
        break;
      case 2: j = "auto"; break;
      default:
        j = {{"max", retries}, {"backoff_sec", "300"}};  // invalid on purpose
        break;
    }
    if (j.is_object() && *rc::gen::arbitrary<bool>()) {
      j["budget"] = *rc::gen::elementOf(std::vector<std::string>{"per_slot", "per_episode"});
    }
    return j;
  });
}

// A tiny driver: one job, zero-length runs, retries in a durable queue,
// random restarts. It feeds the machine and records what happened, then the
// property judges from the record alone.
struct DriveLog {
  std::vector<std::pair<TimeMs, TimeMs>> retries_run;   // (slot, time) of each retry executed
  std::vector<TimeMs> successes;                        // times of successful runs
  std::vector<std::pair<FailureClass, bool>> failures;  // class, whether a retry was scheduled
  bool next_run_checked = true;
};

struct Driven {
  DriveLog log;
  JobState state;
};

Driven drive(const PolicyOrError& p, const std::vector<Outcome>& outcomes,
             const std::vector<int>& downtimes_min) {
  Driven out;
  JobState& s = out.state;
  s = apply_policy(p, fresh("prop"), 0).state;
  const TimeMs start = 10 * kDayMs;
  s = *start_schedule(s, kHourly, start);
  std::vector<RetryRef> queue;
  TimeMs now = start;
  std::size_t next_outcome = 0;
  std::size_t next_down = 0;
  auto apply = [&](const Transition& t) {
    s = t.state;
    for (const auto& c : t.cancelled_retries) {
      queue.erase(std::remove(queue.begin(), queue.end(), c), queue.end());
    }
    if (t.scheduled_retry) queue.push_back(*t.scheduled_retry);
  };
  auto run = [&](const RunRef& r) {
    apply(on_run_started(p, s, r, now));
    const Outcome o = outcomes[next_outcome++];
    if (o.success) {
      out.log.successes.push_back(now);
      apply(on_run_succeeded(p, s, r, now));
    } else {
      const auto t = on_run_failed(p, s, r, o.failure_class, "x", now, nullptr);
      out.log.failures.emplace_back(o.failure_class, t.scheduled_retry.has_value());
      apply(t);
    }
  };
  while (next_outcome < outcomes.size()) {
    // A restart now and then: time jumps, the queue and state survive.
    if (next_down < downtimes_min.size() && downtimes_min[next_down] >= 0 &&
        next_outcome % 3 == 2) {
      now += downtimes_min[next_down] * kMinuteMs;
      ++next_down;
      s = apply_policy(p, s, now).state;
    } else if (next_down < downtimes_min.size() && next_outcome % 3 == 2) {
      ++next_down;
    }
    const auto earliest =
        std::min_element(queue.begin(), queue.end(),
                         [](const RetryRef& a, const RetryRef& b) { return a.at < b.at; });
    const bool retry_first = earliest != queue.end() && earliest->at < *s.next_run_at;
    if (retry_first) {
      const RetryRef r = *earliest;
      queue.erase(earliest);
      now = std::max(now, r.at);
      out.log.retries_run.emplace_back(r.slot, now);
      run({r.slot, RunKind::retry});
    } else {
      now = std::max(now, *s.next_run_at);
      const TimeMs before = *s.next_run_at;
      auto step = *take_due_slot(s, kHourly, now);
      s = step.state;
      // The regular schedule's own next slot: the first grid hour after now.
      if (*s.next_run_at != (now / kHourMs + 1) * kHourMs || step.handout->slot != before) {
        out.log.next_run_checked = false;
      }
      apply(on_slot_due(p, s, step.handout->slot, now));
      run({step.handout->slot, RunKind::regular});
    }
  }
  return out;
}

REHEARSE_PROP(RetryMachineProperty, RetriesNeverExceedTheBudgetInEitherScope, ()) {
  const json pj = *policy_json_gen();
  const auto p = parse_retry_policy(pj, ScheduleFacts{"0 * * * *", *rc::gen::arbitrary<bool>()});
  const auto outcomes = *rc::gen::nonEmpty(rc::gen::container<std::vector<Outcome>>(outcome_gen()));
  const auto downtimes = *rc::gen::container<std::vector<int>>(rc::gen::inRange(-1, 300));
  const Driven d = drive(p, outcomes, downtimes);
  RC_ASSERT(d.log.next_run_checked);
  if (!p.ok()) {
    RC_TAG("invalid policy");
    RC_ASSERT(d.log.retries_run.empty());
    return;
  }
  RC_TAG(to_string(p->budget));
  const int max = p->max_retries;
  if (p->budget == BudgetScope::per_slot) {
    std::map<TimeMs, int> per_slot;
    for (const auto& [slot, when] : d.log.retries_run) {
      (void)when;
      RC_ASSERT(++per_slot[slot] <= max);
    }
  } else {
    // Between two successes, at most max retries ran.
    std::vector<TimeMs> cuts = d.log.successes;
    for (std::size_t i = 0; i <= cuts.size(); ++i) {
      const TimeMs lo = i == 0 ? -1 : cuts[i - 1];
      const TimeMs hi = i == cuts.size() ? std::numeric_limits<TimeMs>::max() : cuts[i];
      const auto n = std::count_if(d.log.retries_run.begin(), d.log.retries_run.end(),
                                   [&](const auto& r) { return r.second > lo && r.second < hi; });
      RC_ASSERT(n <= max);
    }
  }
}

REHEARSE_PROP(RetryMachineProperty, ClassesOutsideThePolicyAreNeverRetried, ()) {
  const json pj = *policy_json_gen();
  const auto p = parse_retry_policy(pj, ScheduleFacts{"0 * * * *", false});
  const auto outcomes = *rc::gen::nonEmpty(rc::gen::container<std::vector<Outcome>>(outcome_gen()));
  const Driven d = drive(p, outcomes, {});
  for (const auto& [cls, retried] : d.log.failures) {
    if (!p.ok() || !contains(p->retryable_classes, cls)) RC_ASSERT(!retried);
  }
  RC_ASSERT(d.log.next_run_checked);
  // The row's limit is always the policy's.
  RC_ASSERT(d.state.retry_limit == (p.ok() ? p->max_retries : 0));
}

}  // namespace
}  // namespace rehearse
