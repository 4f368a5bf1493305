// Goal: a refusal's Retry-After reaches the retry decision as docs/retry.md
// "Retry-After" says: read as delta-seconds only, a floor under the curve's
// delay for a policy that honours it (never a way to retry sooner), counted
// against the deadline like any delay, ignored by default.
// Method: the header parser by a table; decide_failure and on_run_failed by
// hand with exact delays; the policy key in the rehearse forms and beside a
// system's form, with its errors' pointers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/job_runner.hpp"
#include "model/retry_machine.hpp"
#include "tests/model/retry_machine_fixtures.hpp"

namespace rehearse {
namespace {

using retry_test::fresh;
using retry_test::policy;

TEST(RetryAfter, HeaderIsReadAsDeltaSecondsOnly) {
  EXPECT_EQ(parse_retry_after_ms("120"), 120 * kSecondMs);
  EXPECT_EQ(parse_retry_after_ms(" 5 "), 5 * kSecondMs);
  EXPECT_EQ(parse_retry_after_ms("0"), 0);
  EXPECT_EQ(parse_retry_after_ms(""), 0);
  EXPECT_EQ(parse_retry_after_ms("-1"), 0);
  EXPECT_EQ(parse_retry_after_ms("1.5"), 0);
  EXPECT_EQ(parse_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT"), 0)
      << "the HTTP-date form needs a clock; it is not read";
  EXPECT_EQ(parse_retry_after_ms("999999999999"), 366 * kDayMs) << "capped like any delay";
  EXPECT_EQ(parse_retry_after_ms("9999999999999"), 0) << "longer than any sane header";
}

TEST(RetryAfter, TheFailureInfoCarriesTheHeader) {
  ServiceResponse refused;
  refused.status = 429;
  refused.body = nlohmann::json{{"message", "rate limit exceeded"}};
  refused.headers["retry-after"] = "30";
  const FailureInfo info = to_failure_info(ServiceResult(refused));
  EXPECT_EQ(info.retry_after_ms, 30 * kSecondMs);
  EXPECT_EQ(classify(info), FailureClass::rate_limit);
  refused.headers.clear();
  EXPECT_EQ(to_failure_info(ServiceResult(refused)).retry_after_ms, 0);
}

TEST(RetryAfter, AnHonouringPolicyWaitsAtLeastTheHintNeverLess) {
  const auto p = policy(R"({"max": 3, "backoff": {"type": "exponential", "delay": "1m"},
      "retry_after": "honor"})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  FailureAt at{0, 10'000, nullptr, 5 * kMinuteMs};
  auto d = decide_failure(p, 0, FailureClass::rate_limit, nullptr, at);
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  EXPECT_EQ(d.delay_ms, 5 * kMinuteMs) << "the hint is longer than the curve's 1m";
  EXPECT_EQ(d.retry_count, 1) << "a lengthened retry still spends one";
  at.retry_after_ms = 10 * kSecondMs;
  d = decide_failure(p, 1, FailureClass::rate_limit, nullptr, at);
  EXPECT_EQ(d.delay_ms, 2 * kMinuteMs) << "a shorter hint never shortens the curve";
}

TEST(RetryAfter, IgnoredByDefaultAndWhenSaidSo) {
  for (const char* text :
       {R"({"max": 3, "backoff": {"type": "fixed", "delay": "1m"}})",
        R"({"max": 3, "backoff": {"type": "fixed", "delay": "1m"}, "retry_after": "ignore"})"}) {
    const auto p = policy(text);
    ASSERT_TRUE(p.ok()) << text;
    const auto d =
        decide_failure(p, 0, FailureClass::rate_limit, nullptr, FailureAt{0, 0, nullptr, kHourMs});
    EXPECT_EQ(d.delay_ms, kMinuteMs) << text;
  }
}

TEST(RetryAfter, TheDeadlineJudgesTheLengthenedDelay) {
  const auto p = policy(R"({"until": "10m", "backoff": {"type": "fixed", "delay": "1m"},
      "retry_after": "honor"})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  auto d = decide_failure(p, 0, FailureClass::rate_limit, nullptr,
                          FailureAt{0, kMinuteMs, nullptr, 9 * kMinuteMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry) << "due at 10m: inside the deadline";
  d = decide_failure(p, 0, FailureClass::rate_limit, nullptr,
                     FailureAt{0, kMinuteMs, nullptr, 9 * kMinuteMs + kSecondMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::exhausted) << "due past slot + 10m";
}

TEST(RetryAfter, RetriersHonourItToo) {
  const auto p = policy(R"({"stepfunctions": {"Retry": [
      {"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 2, "MaxAttempts": 2},
      {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 3}]},
      "retry_after": "honor"})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  const std::vector<int> counts;
  const auto d = decide_failure(p, 0, FailureClass::rate_limit, nullptr,
                                FailureAt{0, 0, &counts, 30 * kSecondMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  EXPECT_EQ(d.delay_ms, 30 * kSecondMs);
  EXPECT_EQ(d.rule, std::optional<std::size_t>(1));
}

TEST(RetryAfter, OnRunFailedCarriesItIntoTheQueuedRetry) {
  const auto p = policy(R"({"attempts": 3, "backoff": 1000, "retry_after": "honor"})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  const auto t =
      on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::rate_limit,
                    "rate limit exceeded", 10'000, nullptr, FailureContext{7 * kSecondMs});
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.scheduled_retry->at, 17'000);
}

TEST(RetryAfter, TheKeyIsCheckedAndShown) {
  auto bad = policy(R"({"max": 1, "backoff_sec": 1, "retry_after": "always"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "/retry_after");
  EXPECT_NE(bad.error().message.find("\"honor\" or \"ignore\""), std::string::npos);
  bad = policy(R"({"attempts": 2, "retry_after": true})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "/retry_after");
  const auto wrapped = policy(R"({"temporal": {"maximumAttempts": 3}, "retry_after": "honor"})");
  ASSERT_TRUE(wrapped.ok()) << wrapped.error().describe();
  EXPECT_TRUE(wrapped->honor_retry_after);
  EXPECT_EQ(to_json(*wrapped).at("retry_after"), "honor");
  EXPECT_EQ(to_json(plan_retries(*wrapped)).at("retry_after"), "honor");
  EXPECT_NE(describe(*wrapped).find("retry_after=honor"), std::string::npos);
  EXPECT_FALSE(to_json(*policy(R"({"attempts": 2})")).contains("retry_after"));
}

}  // namespace
}  // namespace rehearse
