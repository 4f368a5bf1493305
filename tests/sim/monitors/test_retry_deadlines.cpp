// Deadlines and several retriers (docs/policies.md "Unlimited retries and
// deadlines", "Several retriers"), judged from the world's records:
// retries_bounded fires on a retry queued due after slot + deadline and on a
// retrier's retry beyond its own MaxAttempts; nothing_lost fires on a chain
// ended before its deadline or before the failure's retrier spent its count.
#include <gtest/gtest.h>

#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

constexpr const char* kSlot = "2026-03-02T17:00:00Z";
constexpr const char* kNext = "2026-03-09T17:00:00Z";

json until(const char* deadline) { return json{{"until", deadline}, {"backoff_sec", 600}}; }

std::size_t queue_retry(Script& s, const char* t, const char* ready) {
  return s.add("queue_add", t, "weekly", kSlot,
               {{"added", true}, {"kind", "retry"}, {"ready_at", ready}});
}

TEST(RetryDeadlines, FiresWhenARetryIsQueuedPastTheDeadline) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  // 10 min after a failure at the slot, with a deadline of 5 min.
  const auto bad = queue_retry(s, kSlot, "2026-03-02T17:10:00Z");
  const Outcome o = run(s, weekly_with(until("5m")), at("2026-03-02T17:01:00Z"));
  expect_first(o, "retries_bounded", bad);
  EXPECT_TRUE(fired(o, "retries_bounded", "deadline")) << describe(o.seen);
}

TEST(RetryDeadlines, NearMissARetryDueExactlyAtTheDeadline) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  queue_retry(s, kSlot, "2026-03-02T17:10:00Z");
  note(s, "retry_scheduled", "weekly", kSlot, kSlot, 1, "timeout");
  const Outcome o = run(s, weekly_with(until("10m")), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetryDeadlines, FiresWhenAnUnlimitedChainEndsLongBeforeItsDeadline) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  const auto bad = note(s, "retry_exhausted", "weekly", kSlot, kSlot, 0, "timeout");
  const Outcome o = run(s, weekly_with(until("1h")), at("2026-03-02T17:01:00Z"));
  expect_first(o, "nothing_lost", bad);
}

TEST(RetryDeadlines, NearMissTheChainEndsWhenTheNextRetryWouldPassTheDeadline) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  note(s, "retry_exhausted", "weekly", kSlot, kSlot, 0, "timeout");
  const Outcome o = run(s, weekly_with(until("5m")), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// Two retriers: timeouts once after 1 min, everything else twice after 10 min.
json two_retriers() {
  return json::parse(R"({"stepfunctions": {"Type": "Task", "End": true, "Retry": [
      {"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 60, "MaxAttempts": 1},
      {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 600, "MaxAttempts": 2,
       "BackoffRate": 1}]}})");
}

Script a_timeout_retried(const char* second_class) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  queue_retry(s, kSlot, "2026-03-02T17:01:00Z");
  note(s, "retry_scheduled", "weekly", kSlot, kSlot, 1, "timeout");
  retry_run(s, "weekly", kSlot, "2026-03-02T17:01:00Z", 2, "failure", second_class);
  return s;
}

TEST(RetryDeadlines, FiresWhenARetrierRetriesBeyondItsOwnMaxAttempts) {
  Script s = a_timeout_retried("timeout");
  // The timeout retrier has spent its one retry.
  const auto bad = queue_retry(s, "2026-03-02T17:01:00Z", "2026-03-02T17:02:00Z");
  const Outcome o = run(s, weekly_with(two_retriers()), at("2026-03-02T17:03:00Z"));
  expect_first(o, "retries_bounded", bad);
}

TEST(RetryDeadlines, FiresWhenTheChainEndsWithTheFailuresRetrierUnspent) {
  Script s = a_timeout_retried("provider_5xx");
  // A 5xx goes to the second retrier, whose own count is still 0 of 2.
  const auto bad =
      note(s, "retry_exhausted", "weekly", kSlot, "2026-03-02T17:01:00Z", 1, "provider_5xx");
  const Outcome o = run(s, weekly_with(two_retriers()), at("2026-03-02T17:03:00Z"));
  expect_first(o, "nothing_lost", bad);
}

TEST(RetryDeadlines, NearMissTheSecondRetrierStartsItsOwnCount) {
  Script s = a_timeout_retried("provider_5xx");
  queue_retry(s, "2026-03-02T17:01:00Z", "2026-03-02T17:11:00Z");
  note(s, "retry_scheduled", "weekly", kSlot, "2026-03-02T17:01:00Z", 2, "provider_5xx");
  const Outcome o = run(s, weekly_with(two_retriers()), at("2026-03-02T17:03:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
