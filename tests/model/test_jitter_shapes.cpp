// Goal: the jitter shapes of the core's BullMQ form behave as docs/retry.md
// "Jitter shapes" says: "none", "equal" and "full" are BullMQ's proportions
// 0, 0.5 and 1; "decorrelated" draws each delay from [delay, 3 x the
// previous one] (the first from [delay, 3 x delay]), capped, and the slot's
// record carries the previous delay from one failure to the next.
// Method: draws with scripted uniforms at the ends of [0, 1); a chain of
// failures through on_run_failed; the reader's errors by their pointers.
#include <gtest/gtest.h>

#include <deque>

#include "model/retry_machine.hpp"
#include "tests/model/retry_machine_fixtures.hpp"

namespace rehearse {
namespace {

using retry_test::fresh;
using retry_test::policy;

// Hands out the given uniforms in turn (as 53-bit fractions of [0, 1)).
class Uniforms final : public RandomSource {
 public:
  explicit Uniforms(std::deque<double> values) : values_(std::move(values)) {}
  std::uint64_t next_u64() override {
    EXPECT_FALSE(values_.empty()) << "more draws than scripted";
    const double u = values_.empty() ? 0.0 : values_.front();
    if (!values_.empty()) values_.pop_front();
    return static_cast<std::uint64_t>(u * 0x1.0p53) << 11;
  }

 private:
  std::deque<double> values_;
};

constexpr double kTop = 1.0 - 0x1.0p-53;  // the greatest uniform below 1

TEST(JitterShapes, NamedShapesAreBullMQProportions) {
  const std::pair<const char*, double> cases[] = {{"none", 0.0}, {"equal", 0.5}, {"full", 1.0}};
  for (const auto& [name, proportion] : cases) {
    const std::string text = std::string(R"({"attempts": 3, "backoff": {"type": "fixed",
        "delay": "1m", "jitter": ")") +
                             name + "\"}}";
    const auto p = policy(text.c_str());
    ASSERT_TRUE(p.ok()) << name << ": " << p.error().describe();
    EXPECT_EQ(p->backoff.jitter, proportion) << name;
    EXPECT_FALSE(p->backoff.decorrelated) << name;
  }
}

TEST(JitterShapes, DecorrelatedNeedsAnExponentialCurveAndBadNamesArePointedAt) {
  auto bad = policy(R"({"attempts": 3, "backoff": {"type": "fixed", "delay": "1m",
      "jitter": "decorrelated"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "/backoff/jitter");
  EXPECT_NE(bad.error().message.find("\"type\": \"exponential\""), std::string::npos);
  bad = policy(R"({"attempts": 3, "backoff": {"type": "exponential", "delay": "1m",
      "jitter": "half"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "/backoff/jitter");
  EXPECT_NE(bad.error().message.find("\"decorrelated\""), std::string::npos);
  bad = policy(R"({"max": 2, "backoff": {"type": "exponential", "delay": "1m",
      "jitter": "decorrelated"}})");
  ASSERT_FALSE(bad.ok()) << "the per-job form has no jitter";
}

Backoff decorrelated(DurationMs delay, DurationMs cap = 0) {
  Backoff b;
  b.kind = BackoffKind::exponential;
  b.delay_ms = delay;
  b.max_delay_ms = cap;
  b.decorrelated = true;
  return b;
}

TEST(JitterShapes, DecorrelatedDrawsFromTheBaseToThreeTimesThePrevious) {
  const Backoff b = decorrelated(10 * kSecondMs);
  Uniforms r({0.0, kTop, 0.0, kTop, 0.5});
  EXPECT_EQ(backoff_delay_ms(b, 1, &r, 0), 10 * kSecondMs) << "the first: from the base";
  EXPECT_EQ(backoff_delay_ms(b, 1, &r, 0), 30 * kSecondMs) << "to 3 x the base";
  EXPECT_EQ(backoff_delay_ms(b, 2, &r, 25 * kSecondMs), 10 * kSecondMs);
  EXPECT_EQ(backoff_delay_ms(b, 2, &r, 25 * kSecondMs), 75 * kSecondMs) << "3 x the previous";
  EXPECT_EQ(backoff_delay_ms(b, 3, &r, 20 * kSecondMs), 35 * kSecondMs) << "midway in [10s, 60s]";
}

TEST(JitterShapes, DecorrelatedIsCappedAndBoundedOverAnyHistory) {
  const Backoff b = decorrelated(10 * kSecondMs, 40 * kSecondMs);
  Uniforms r({kTop});
  EXPECT_EQ(backoff_delay_ms(b, 3, &r, 30 * kSecondMs), 40 * kSecondMs) << "min(cap, 90s)";
  EXPECT_EQ(min_backoff_delay_ms(b, 5), 10 * kSecondMs);
  EXPECT_EQ(max_backoff_delay_ms(b, 1), 30 * kSecondMs);
  EXPECT_EQ(max_backoff_delay_ms(b, 2), 40 * kSecondMs);
  EXPECT_EQ(decorrelated_ceiling_ms(b, 0), 30 * kSecondMs);
  EXPECT_EQ(decorrelated_ceiling_ms(b, 12 * kSecondMs), 36 * kSecondMs);
  const Backoff uncapped = decorrelated(10 * kSecondMs);
  EXPECT_EQ(max_backoff_delay_ms(uncapped, 3), 270 * kSecondMs) << "10s x 3^3";
  // A previous delay no history allows (a file edited by hand) counts as the bound.
  Uniforms top({kTop});
  EXPECT_EQ(backoff_delay_ms(uncapped, 2, &top, kHourMs), 90 * kSecondMs) << "3 x retry 1's 30s";
}

TEST(JitterShapes, TheSlotRecordCarriesThePreviousDelayThroughAChain) {
  const auto p = policy(R"({"attempts": 4, "backoff": {"type": "exponential", "delay": "10s",
      "jitter": "decorrelated"}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  Uniforms r({kTop, kTop, kTop});
  const RunRef regular{0, RunKind::regular};
  const RunRef retry{0, RunKind::retry};
  auto t = on_run_failed(p, fresh(), regular, FailureClass::timeout, "t", 0, &r);
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.scheduled_retry->at, 30 * kSecondMs);
  EXPECT_EQ(t.state.slots.at(0).last_delay_ms, 30 * kSecondMs);
  t = on_run_failed(p, t.state, retry, FailureClass::timeout, "t", 30 * kSecondMs, &r);
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.scheduled_retry->at, 30 * kSecondMs + 90 * kSecondMs) << "3 x 30s";
  t = on_run_failed(p, t.state, retry, FailureClass::timeout, "t", 120 * kSecondMs, &r);
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.scheduled_retry->at, 120 * kSecondMs + 270 * kSecondMs) << "3 x 90s";
}

TEST(JitterShapes, OtherCurvesLeaveTheRecordWithoutADelay) {
  const auto p = policy(R"({"attempts": 3, "backoff": {"type": "exponential", "delay": "10s",
      "jitter": "full"}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  Uniforms r({0.5});
  const auto t =
      on_run_failed(p, fresh(), {0, RunKind::regular}, FailureClass::timeout, "t", 0, &r);
  ASSERT_TRUE(t.scheduled_retry.has_value());
  EXPECT_EQ(t.state.slots.at(0).last_delay_ms, 0) << "the state file stays as it was";
}

TEST(JitterShapes, TheShapeIsShown) {
  const auto p = policy(R"({"attempts": 3, "backoff": {"type": "exponential", "delay": "10s",
      "max_delay": "1m", "jitter": "decorrelated"}})");
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_NE(describe(*p).find("jitter=decorrelated"), std::string::npos) << describe(*p);
  EXPECT_EQ(to_json(*p).at("backoff").at("decorrelated_jitter"), true);
  const RetryPlan plan = plan_retries(*p);
  EXPECT_EQ(plan.shortest_window_ms, 20 * kSecondMs) << "two retries at the base";
  EXPECT_EQ(plan.longest_window_ms, 90 * kSecondMs) << "30s, then the cap";
}

}  // namespace
}  // namespace rehearse
