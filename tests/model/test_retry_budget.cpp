// Goal: retry budgets follow docs/retry.md "Retry budgets": a retry is made
// iff the retries of the window plus one fit max(min_retries, attempts *
// percent / 100); the counts are shared by name and slide with the window;
// the decision says the budget (not the count) ended the chain; the policy
// key is checked with pointers and shown by explain.
// Method: RetryBudgets driven by hand at chosen instants; decide_failure and
// on_run_failed with FailureContext; the parser on the rehearse forms.
#include "model/retry_budget.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/retry_machine.hpp"
#include "tests/model/retry_machine_fixtures.hpp"

namespace rehearse {
namespace {

using retry_test::fresh;
using retry_test::policy;

RetryBudget budget(int percent, int min_retries, DurationMs window = kMinuteMs) {
  return RetryBudget{"partner", percent, window, min_retries};
}

TEST(RetryBudget, RetriesAreAShareOfTheAttemptsWithAFloor) {
  RetryBudgets b;
  const RetryBudget twenty = budget(20, 2);
  EXPECT_TRUE(b.allows(twenty, 0)) << "min_retries allows the first two with no attempts";
  b.note_retry("partner", 0);
  b.note_retry("partner", 0);
  EXPECT_FALSE(b.allows(twenty, 0));
  for (int i = 0; i < 14; ++i) b.note_attempt("partner", 1000);
  EXPECT_FALSE(b.allows(twenty, 1000)) << "14 attempts * 20% = 2: the floor still decides";
  b.note_attempt("partner", 1000);
  EXPECT_TRUE(b.allows(twenty, 1000)) << "15 attempts * 20% = 3 > 2 retries";
  EXPECT_EQ(b.counts(twenty, 1000).attempts, 15);
  EXPECT_EQ(b.counts(twenty, 1000).retries, 2);
}

TEST(RetryBudget, TheWindowSlides) {
  RetryBudgets b;
  const RetryBudget one = budget(0, 1);
  b.note_retry("partner", 0);
  EXPECT_FALSE(b.allows(one, kMinuteMs - 1));
  EXPECT_TRUE(b.allows(one, kMinuteMs)) << "(now - window, now]: the retry at 0 has left";
}

TEST(RetryBudget, CountsAreSharedByNameAndJudgedByEachPolicysNumbers) {
  RetryBudgets b;
  b.note_retry("partner", 0);
  EXPECT_FALSE(b.allows(budget(0, 1), 0));
  EXPECT_TRUE(b.allows(budget(0, 2), 0)) << "the same count, a more lenient policy";
  EXPECT_TRUE(b.allows(RetryBudget{"other", 0, kMinuteMs, 1}, 0)) << "another budget";
}

TEST(RetryBudget, AMachineClockSetBackDoesNotCountTheFuture) {
  RetryBudgets b;
  b.note_retry("partner", 10 * kMinuteMs);
  EXPECT_TRUE(b.allows(budget(0, 1), 5 * kMinuteMs));
  EXPECT_FALSE(b.allows(budget(0, 1), 10 * kMinuteMs));
}

TEST(RetryBudget, ASpentBudgetEndsTheChainAndSaysSo) {
  const auto p = policy(R"({"attempts": 5, "backoff": "10s",
      "retry_budget": {"name": "partner", "percent": 10, "window": "1m", "min_retries": 0}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  FailureAt at{0, 0};
  at.budget_spent = true;
  const auto d = decide_failure(p, 0, FailureClass::rate_limit, nullptr, at);
  EXPECT_EQ(d.kind, FailureDecisionKind::exhausted);
  EXPECT_TRUE(d.budget_spent);
  EXPECT_EQ(d.retry_count, 0) << "no retry spent";
  const auto t = on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::rate_limit,
                               "rate limit exceeded", 0, nullptr, FailureContext{0, true});
  EXPECT_FALSE(t.scheduled_retry.has_value());
  ASSERT_EQ(t.notifications.size(), 1u);
  EXPECT_NE(t.notifications[0].detail.find("retry budget partner spent"), std::string::npos)
      << t.notifications[0].detail;
}

TEST(RetryBudget, TheCountAndTheDeadlineAreAskedFirst) {
  const auto p = policy(R"({"attempts": 2, "backoff": "10s",
      "retry_budget": {"name": "partner"}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  FailureAt at{0, 0};
  at.budget_spent = true;
  const auto d = decide_failure(p, 1, FailureClass::rate_limit, nullptr, at);
  EXPECT_EQ(d.kind, FailureDecisionKind::exhausted);
  EXPECT_FALSE(d.budget_spent) << "the count was spent anyway";
}

TEST(RetryBudget, TheKeyIsCheckedAndShown) {
  struct Case {
    const char* text;
    const char* where;
  };
  for (const Case& c :
       std::vector<Case>{{R"({"attempts": 2, "retry_budget": 20})", "/retry_budget"},
                         {R"({"attempts": 2, "retry_budget": {"percent": 20}})", "/retry_budget"},
                         {R"({"attempts": 2, "retry_budget": {"name": "p", "percent": 120}})",
                          "/retry_budget/percent"},
                         {R"({"attempts": 2, "retry_budget": {"name": "p", "window": "2h"}})",
                          "/retry_budget/window"},
                         {R"({"attempts": 2, "retry_budget": {"name": "p", "min_retries": -1}})",
                          "/retry_budget/min_retries"},
                         {R"({"attempts": 2, "retry_budget": {"name": "p", "ratio": 0.2}})",
                          "/retry_budget/ratio"}}) {
    const auto p = policy(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.error().where, c.where) << c.text << ": " << p.error().describe();
  }
  const auto p = policy(R"({"temporal": {"maximumAttempts": 3},
      "retry_budget": {"name": "partner", "percent": 20, "window": "30s", "min_retries": 5}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->retry_budget, (RetryBudget{"partner", 20, 30 * kSecondMs, 5}));
  EXPECT_EQ(to_json(*p).at("retry_budget").at("window_ms"), 30'000);
  EXPECT_NE(describe(*p).find("retry_budget=partner:20%/30s+5"), std::string::npos) << describe(*p);
}

}  // namespace
}  // namespace rehearse
