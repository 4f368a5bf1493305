// Retry-After and retry budgets (docs/retry.md "Retry-After", "Retry
// budgets"), judged from the world's records: retries_bounded fires on a
// retry queued sooner than the refusal's Retry-After asked (for a policy that
// honours it) and on a retry beyond the retry budget's share of the attempts
// in its window; nothing_lost lets a chain end early when the hint pushes its
// next retry past the deadline, or when the budget's window is full, and
// fires when a chain ends "by the budget" while the window had room.
#include <gtest/gtest.h>

#include "sim/monitors/retry_after_table.hpp"
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

constexpr const char* kSlot = "2026-03-02T17:00:00Z";
constexpr const char* kNext = "2026-03-09T17:00:00Z";

json honouring(json policy) {
  policy["retry_after"] = "honor";
  return policy;
}

std::size_t queue_retry(Script& s, const char* t, const char* ready) {
  return s.add("queue_add", t, "weekly", kSlot,
               {{"added", true}, {"kind", "retry"}, {"ready_at", ready}});
}

// The slot's regular run fails on a 429 that asks for 45 s.
Script refused_with_hint() {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "rate_limit");
  s.add("service_reply", kSlot, "weekly", kSlot,
        {{"status", 429}, {"retry_after", "45"}, {"capacity", "refused"}});
  return s;
}

const json kTenSeconds = json{{"attempts", 3}, {"backoff", "10s"}};

TEST(RetryAfterWitness, TheHeaderIsReadAsDeltaSeconds) {
  EXPECT_EQ(witness_retry_after_ms("45"), 45'000);
  EXPECT_EQ(witness_retry_after_ms("4.5"), 0);
  EXPECT_EQ(witness_retry_after_ms(""), 0);
  EXPECT_EQ(witness_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
}

TEST(RetryAfterWitness, FiresWhenAnHonouringPolicyRetriesSoonerThanAsked) {
  Script s = refused_with_hint();
  const auto bad = queue_retry(s, kSlot, "2026-03-02T17:00:10Z");
  const Outcome o = run(s, weekly_with(honouring(kTenSeconds)), at("2026-03-02T17:01:00Z"));
  expect_first(o, "retries_bounded", bad);
  EXPECT_TRUE(fired(o, "retries_bounded", "outside its policy's window")) << describe(o.seen);
}

TEST(RetryAfterWitness, NearMissTheRetryWaitsTheHint) {
  Script s = refused_with_hint();
  queue_retry(s, kSlot, "2026-03-02T17:00:45Z");
  const Outcome o = run(s, weekly_with(honouring(kTenSeconds)), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetryAfterWitness, NearMissAPolicyThatIgnoresTheHintKeepsItsCurve) {
  Script s = refused_with_hint();
  queue_retry(s, kSlot, "2026-03-02T17:00:10Z");
  const Outcome o = run(s, weekly_with(kTenSeconds), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetryAfterWitness, FiresWhenTheHintIsTakenAsACeiling) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "rate_limit");
  s.add("service_reply", kSlot, "weekly", kSlot, {{"status", 429}, {"retry_after", "5"}});
  // The curve says 10 s; a 5 s hint never shortens it.
  const auto bad = queue_retry(s, kSlot, "2026-03-02T17:00:05Z");
  const Outcome o = run(s, weekly_with(honouring(kTenSeconds)), at("2026-03-02T17:01:00Z"));
  expect_first(o, "retries_bounded", bad);
}

TEST(RetryAfterWitness, NearMissTheHintEndsAChainAtItsDeadline) {
  Script s = refused_with_hint();
  // Per-job, 10 s apart, deadline 30 s: the 45 s hint passes the deadline.
  note(s, "retry_exhausted", "weekly", kSlot, kSlot, 0, "rate_limit");
  const json policy =
      honouring(json{{"until", "30s"}, {"backoff", {{"type", "fixed"}, {"delay", "10s"}}}});
  const Outcome o = run(s, weekly_with(policy), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// A budget of no share and one retry at least in any 10 minutes.
json budgeted() {
  json p = kTenSeconds;
  p["retry_budget"] = {{"name", "shared"}, {"percent", 0}, {"window", "10m"}, {"min_retries", 1}};
  return p;
}

Script two_failures_retried(const char* second_retry_at) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  queue_retry(s, kSlot, "2026-03-02T17:00:10Z");
  retry_run(s, "weekly", kSlot, second_retry_at, 2, "failure", "timeout");
  return s;
}

TEST(RetryBudgetWitness, FiresOnARetryBeyondTheBudget) {
  Script s = two_failures_retried("2026-03-02T17:00:10Z");
  const auto bad = s.add(
      "queue_add", "2026-03-02T17:00:10Z", "weekly", kSlot,
      {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:00:30Z"}, {"attempt", 3}});
  const Outcome o = run(s, weekly_with(budgeted()), at("2026-03-02T17:01:00Z"));
  expect_first(o, "retries_bounded", bad);
  EXPECT_TRUE(fired(o, "retries_bounded", "beyond retry budget shared")) << describe(o.seen);
}

TEST(RetryBudgetWitness, NearMissTheChainEndsWhenTheBudgetIsSpent) {
  Script s = two_failures_retried("2026-03-02T17:00:10Z");
  note(s, "retry_exhausted", "weekly", kSlot, "2026-03-02T17:00:10Z", 1, "timeout");
  const Outcome o = run(s, weekly_with(budgeted()), at("2026-03-02T17:01:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetryBudgetWitness, FiresWhenAChainEndsWithRoomInTheBudget) {
  Script s;
  regular(s, "weekly", kSlot, kSlot, kNext, "failure", "timeout");
  // No retry yet in the window: min_retries 1 leaves room for one.
  const auto bad = note(s, "retry_exhausted", "weekly", kSlot, kSlot, 0, "timeout");
  const Outcome o = run(s, weekly_with(budgeted()), at("2026-03-02T17:01:00Z"));
  expect_first(o, "nothing_lost", bad);
}

TEST(RetryBudgetWitness, NearMissTheWindowMovesOn) {
  Script s = two_failures_retried("2026-03-02T17:11:00Z");
  s.add("queue_add", "2026-03-02T17:11:00Z", "weekly", kSlot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:11:10Z"}, {"attempt", 3}});
  const Outcome o = run(s, weekly_with(budgeted()), at("2026-03-02T17:12:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "retry budget")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
