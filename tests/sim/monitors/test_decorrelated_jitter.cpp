// Decorrelated jitter (docs/retry.md "Jitter shapes"), judged from the
// queue's own records: retries_bounded fires on a retry queued more than 3
// times the previous retry's wait after its failure, or past the cap, and
// stays quiet on a chain that grows within both.
#include <gtest/gtest.h>

#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

constexpr const char* kSlot = "2026-03-02T17:00:00Z";
constexpr const char* kNext = "2026-03-09T17:00:00Z";
constexpr const char* kFirstRetry = "2026-03-02T17:00:20Z";  // 20 s after the failure

json decorrelated(const char* cap = nullptr) {
  json backoff{{"type", "exponential"}, {"delay", "10s"}, {"jitter", "decorrelated"}};
  if (cap != nullptr) backoff["max_delay"] = cap;
  return json{{"attempts", 4}, {"backoff", backoff}};
}

// The queue's add of the retry run `attempt` (the regular run is attempt 1).
std::size_t queue_retry(Script& s, const char* t, const char* ready, int attempt) {
  return s.add("queue_add", t, "weekly", kSlot,
               {{"added", true}, {"kind", "retry"}, {"ready_at", ready}, {"attempt", attempt}});
}

// The regular run fails, its retry waits 20 s and fails too; the second
// retry is queued at that failure, due at `ready`.
std::pair<Script, std::size_t> second_retry_due(const char* ready) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  queue_retry(s, kSlot, kFirstRetry, 2);
  note(s, "retry_scheduled", "weekly", kSlot, kSlot, 1, "timeout");
  retry_run(s, "weekly", kSlot, kFirstRetry, 2, "failure", "timeout");
  const std::size_t second = queue_retry(s, kFirstRetry, ready, 3);
  return {std::move(s), second};
}

const TimeMs kEnd = at("2026-03-02T17:10:00Z");

TEST(DecorrelatedJitterWitness, NearMissTheSecondRetryWaitsThreeTimesTheFirst) {
  const auto [s, second] = second_retry_due("2026-03-02T17:01:20Z");  // 60 s = 3 x 20 s
  const Outcome o = run(s, weekly_with(decorrelated()), kEnd);
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(DecorrelatedJitterWitness, FiresOnASecondRetryBeyondThreeTimesTheFirst) {
  // 65 s: within any history's bound for retry 2 (90 s), not after a 20 s wait.
  const auto [s, second] = second_retry_due("2026-03-02T17:01:25Z");
  const Outcome o = run(s, weekly_with(decorrelated()), kEnd);
  expect_first(o, "retries_bounded", second);
  EXPECT_TRUE(fired(o, "retries_bounded", "outside its policy's window")) << describe(o.seen);
}

TEST(DecorrelatedJitterWitness, FiresOnAFirstRetryBeyondThreeTimesTheBase) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  const std::size_t first = queue_retry(s, kSlot, "2026-03-02T17:00:31Z", 2);
  const Outcome o = run(s, weekly_with(decorrelated()), kEnd);
  expect_first(o, "retries_bounded", first);
}

TEST(DecorrelatedJitterWitness, FiresOnARetryPastTheCap) {
  const auto [s, second] = second_retry_due("2026-03-02T17:01:00Z");  // 40 s, cap 25 s
  const Outcome o = run(s, weekly_with(decorrelated("25s")), kEnd);
  expect_first(o, "retries_bounded", second);
}

TEST(DecorrelatedJitterWitness, NearMissTheCapHoldsTheChainDown) {
  const auto [s, second] = second_retry_due("2026-03-02T17:00:45Z");  // 25 s, the cap
  const Outcome o = run(s, weekly_with(decorrelated("25s")), kEnd);
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
