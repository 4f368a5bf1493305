// Goal: retry policies parse strictly in their three forms (docs/semantics.md
// §2), fail closed with a JSON pointer and an expectation on every
// malformed input, and compute backoff exactly as BullMQ 5 does.
// Method: the incidents' own policies as vectors; a table of malformed policies
// with the pointer each must name; backoff vectors worked out by hand from
// BullMQ's formulas (jittered ones with the draws fixed); the auto policy from
// 5- and 6-field crons and from an env-overridden schedule; then properties:
// backoff equals an independent integer reimplementation, generated valid
// policies parse to what was generated, and random JSON never crashes the
// parser and never yields an out-of-range policy.
#include "model/retry_policy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

// A RandomSource that replays fixed 64-bit draws (next_unit = top 53 bits).
class ScriptedRandom : public RandomSource {
 public:
  explicit ScriptedRandom(std::deque<std::uint64_t> draws) : draws_(std::move(draws)) {}
  std::uint64_t next_u64() override {
    EXPECT_FALSE(draws_.empty()) << "more draws than scripted";
    if (draws_.empty()) return 0;
    const auto v = draws_.front();
    draws_.pop_front();
    ++used_;
    return v;
  }
  int used() const { return used_; }

 private:
  std::deque<std::uint64_t> draws_;
  int used_ = 0;
};

constexpr std::uint64_t kHalf = std::uint64_t{1} << 63;  // next_unit() == 0.5
constexpr std::uint64_t kTop = ~std::uint64_t{0};        // next_unit() == 1 - 2^-53

RetryPolicy parse_ok(const json& j, std::optional<ScheduleFacts> schedule = std::nullopt) {
  auto r = parse_retry_policy(j, schedule);
  EXPECT_TRUE(r.ok()) << j.dump() << ": " << (r.ok() ? "" : r.error().describe());
  return r.ok() ? *r : RetryPolicy{};
}

FailureClassSet set_of(std::initializer_list<FailureClass> classes) {
  FailureClassSet s;
  for (auto c : classes) insert(s, c);
  return s;
}

// ---- the three forms ----

TEST(RetryPolicyParse, PerJobFormFromReport004) {
  const auto p = parse_ok(json::parse(R"({
    "max": 2, "backoff_sec": 300,
    "retryable_classes": ["timeout", "network", "provider_5xx", "rate_limit"],
    "reason": "Review-only draft generation; no automatic live publish."})"));
  EXPECT_EQ(p.form, PolicyForm::per_job);
  EXPECT_EQ(p.max_retries, 2);
  EXPECT_EQ(p.backoff, (Backoff{BackoffKind::fixed, 300'000, 0.0}));
  EXPECT_EQ(p.retryable_classes, default_retryable_classes());
  EXPECT_EQ(p.budget, BudgetScope::per_episode);
  EXPECT_EQ(p.reason, "Review-only draft generation; no automatic live publish.");
}

TEST(RetryPolicyParse, PerJobDefaultsAndBackoffObject) {
  // Omitted classes: the table's per-job defaults; omitted budget: per_episode.
  const auto p =
      parse_ok(json::parse(R"({"max": 3, "backoff": {"type": "exponential", "delay": "30s"}})"));
  EXPECT_EQ(p.retryable_classes, default_retryable_classes());
  EXPECT_FALSE(contains(p.retryable_classes, FailureClass::auth));
  EXPECT_FALSE(contains(p.retryable_classes, FailureClass::unknown));
  EXPECT_EQ(p.backoff, (Backoff{BackoffKind::exponential, 30'000, 0.0}));
  EXPECT_EQ(p.budget, BudgetScope::per_episode);

  const auto q = parse_ok(json::parse(
      R"({"max": 1, "backoff": {"type": "fixed", "delay": 1500}, "budget": "per_slot",
          "retryable_classes": ["not_found"]})"));
  EXPECT_EQ(q.backoff, (Backoff{BackoffKind::fixed, 1500, 0.0}));
  EXPECT_EQ(q.budget, BudgetScope::per_slot);
  EXPECT_EQ(q.retryable_classes, set_of({FailureClass::not_found}));  // 000: transient 404s
}

TEST(RetryPolicyParse, PerJobDisabledNeedsReason) {
  const auto p = parse_ok(json::parse(
      R"({"max": 0, "retryable_classes": [], "reason": "publishes live; never re-run"})"));
  EXPECT_EQ(p.max_retries, 0);
  EXPECT_TRUE(p.retryable_classes.none());
  EXPECT_FALSE(policy_retries(p));

  for (const char* text : {R"({"max": 0, "retryable_classes": []})", R"({"max": 0})",
                           R"({"max": 2, "backoff_sec": 5, "retryable_classes": []})"}) {
    auto r = parse_retry_policy(json::parse(text));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().where, "/reason") << text;
    EXPECT_NE(r.error().message.find("reason"), std::string::npos);
  }
}

TEST(RetryPolicyParse, BullmqFormFromReport001) {
  const auto p = parse_ok(
      json::parse(R"({"attempts": 4, "backoff": {"type": "exponential", "delay": 1800000}})"));
  EXPECT_EQ(p.form, PolicyForm::bullmq);
  EXPECT_EQ(p.max_retries, 3);  // attempts counts the first run
  EXPECT_EQ(p.backoff, (Backoff{BackoffKind::exponential, 1'800'000, 0.0}));
  EXPECT_EQ(p.retryable_classes, all_classes_set());  // BullMQ retries every class
  EXPECT_EQ(p.budget, BudgetScope::per_slot);

  const auto q = parse_ok(json::parse(R"({"attempts": 2, "backoff": {"type": "exponential",
      "delay": 60000}})"));
  EXPECT_EQ(q.max_retries, 1);
}

TEST(RetryPolicyParse, BullmqBareNumberMeansFixedAndJitterParses) {
  // Backoffs.normalize: a finite number is {type: 'fixed', delay}.
  const auto p = parse_ok(json::parse(R"({"attempts": 3, "backoff": 5000})"));
  EXPECT_EQ(p.backoff, (Backoff{BackoffKind::fixed, 5000, 0.0}));
  const auto s = parse_ok(json::parse(R"({"attempts": 3, "backoff": "2m"})"));
  EXPECT_EQ(s.backoff, (Backoff{BackoffKind::fixed, 120'000, 0.0}));
  const auto j = parse_ok(json::parse(R"({"attempts": 5, "backoff": {"type": "exponential",
      "delay": "1m", "jitter": 0.5}, "retryable_classes": ["rate_limit"], "budget": "per_episode",
      "reason": "quota resets hourly"})"));
  EXPECT_EQ(j.backoff, (Backoff{BackoffKind::exponential, 60'000, 0.5}));
  EXPECT_EQ(j.retryable_classes, set_of({FailureClass::rate_limit}));
  EXPECT_EQ(j.budget, BudgetScope::per_episode);
  EXPECT_EQ(j.reason, "quota resets hourly");
  for (const char* edge :
       {R"({"attempts": 2, "backoff": {"type": "fixed", "delay": 1, "jitter": 0}})",
        R"({"attempts": 2, "backoff": {"type": "fixed", "delay": 1, "jitter": 1}})"}) {
    parse_ok(json::parse(edge));
  }
  // attempts 1: no retries, no backoff needed.
  const auto once = parse_ok(json::parse(R"({"attempts": 1})"));
  EXPECT_EQ(once.max_retries, 0);
}

TEST(RetryPolicyParse, AutoFollowsScheduleFacts) {
  const auto low = parse_ok(json("auto"), ScheduleFacts{"0 17 * * 5", true});
  EXPECT_EQ(low.form, PolicyForm::auto_schedule);
  EXPECT_EQ(low.max_retries, 3);
  EXPECT_EQ(low.backoff, (Backoff{BackoffKind::exponential, 30 * kMinuteMs, 0.0}));
  EXPECT_EQ(low.retryable_classes, all_classes_set());
  EXPECT_EQ(low.budget, BudgetScope::per_slot);
  EXPECT_EQ(low.schedule_expression, "0 17 * * 5");
  const auto high = parse_ok(json("auto"), ScheduleFacts{"*/3 * * * *", false});
  EXPECT_EQ(high.max_retries, 1);
  EXPECT_EQ(high.backoff, (Backoff{BackoffKind::exponential, 60 * kSecondMs, 0.0}));
  EXPECT_EQ(high.budget, BudgetScope::per_slot);

  auto none = parse_retry_policy(json("auto"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().where, "");
  EXPECT_NE(none.error().message.find("schedule"), std::string::npos);
}

// ---- fail closed ----

struct BadPolicy {
  const char* json_text;
  const char* where;
  const char* says;  // a fragment the message must contain
};

TEST(RetryPolicyParse, MalformedPoliciesNameThePointerAndTheExpectation) {
  const std::vector<BadPolicy> cases{
      {"null", "", "missing retry policy"},
      {"{}", "", "empty retry policy"},
      {R"("")", "", "expected \"auto\""},
      {R"("Auto")", "", "expected \"auto\""},
      {"42", "", "got the integer 42"},
      {"[]", "", "got an array"},
      {R"({"max": -1, "backoff_sec": 5})", "/max", "integer from 0 to 1000"},
      {R"({"max": 1.5, "backoff_sec": 5})", "/max", "non-integer number"},
      {R"({"max": 2.0, "backoff_sec": 5})", "/max", "non-integer number"},
      {R"({"max": "2", "backoff_sec": 5})", "/max", "got the string"},
      {R"({"max": 1001, "backoff_sec": 5})", "/max", "integer from 0 to 1000"},
      {R"({"max": true, "backoff_sec": 5})", "/max", "got true"},
      {R"({"max": 2, "backoff_sec": -5})", "/backoff_sec", "whole seconds"},
      {R"({"max": 2, "backoff_sec": 1e3})", "/backoff_sec", "non-integer"},
      {R"({"max": 2, "backoff_sec": 300, "extra": 1})", "/extra", "unknown key \"extra\""},
      {R"({"max": 2, "backoff_sec": 300, "a/b~": 1})", "/a~1b~0", "unknown key"},
      {R"({"max": 2, "backoff_sec": 300, "retryable_classes": ["timeout", "fatal"]})",
       "/retryable_classes/1", "unknown failure class \"fatal\""},
      {R"({"max": 2, "backoff_sec": 300, "retryable_classes": ["timeout", "timeout"]})",
       "/retryable_classes/1", "listed twice"},
      {R"({"max": 2, "backoff_sec": 300, "retryable_classes": [3]})", "/retryable_classes/0",
       "failure class name"},
      {R"({"max": 2, "backoff_sec": 300, "retryable_classes": "timeout"})", "/retryable_classes",
       "array of failure class names"},
      {R"({"max": 2, "backoff": {"type": "quadratic", "delay": "1m"}})", "/backoff/type",
       "unknown backoff type \"quadratic\""},
      {R"({"max": 2, "backoff": {"type": 1, "delay": "1m"}})", "/backoff/type",
       "\"exponential\", \"fixed\" or \"linear\""},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": "1m", "max_delay": 0}})",
       "/backoff/max_delay", "above 0"},
      {R"({"max": 2, "backoff": {"delay": "1m"}})", "/backoff/type", "missing backoff type"},
      {R"({"max": 2, "backoff": {"type": "fixed"}})", "/backoff/delay", "missing backoff delay"},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": "soon"}})", "/backoff/delay",
       "expected a duration"},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": -5}})", "/backoff/delay",
       "duration in milliseconds"},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": 2.5}})", "/backoff/delay",
       "expected a duration"},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": "400d"}})", "/backoff/delay",
       "at most 366d"},
      {R"({"max": 2, "backoff": {"type": "fixed", "delay": "1m", "jitter": 0.5}})",
       "/backoff/jitter", "unknown key \"jitter\""},
      {R"({"max": 2, "backoff": 5000})", "/backoff", "backoff_sec"},
      {R"({"max": 2, "backoff_sec": 300, "backoff": {"type": "fixed", "delay": 1}})", "/backoff",
       "use one of them"},
      {R"({"max": 2})", "", "missing backoff"},
      {R"({"max": 2, "backoff_sec": 300, "budget": "forever"})", "/budget",
       "\"per_slot\" or \"per_episode\""},
      {R"({"max": 2, "backoff_sec": 300, "budget": 1})", "/budget", "\"per_slot\""},
      {R"({"max": 2, "backoff_sec": 300, "reason": ""})", "/reason", "non-empty string"},
      {R"({"max": 2, "backoff_sec": 300, "reason": 7})", "/reason", "non-empty string"},
      {R"({"max": 2, "attempts": 3})", "/attempts", "mixes the per-job form"},
      {R"({"backoff_sec": 30, "attempts": 3})", "/attempts", "mixes the per-job form"},
      {R"({"backoff_sec": 30})", "/max", "missing max"},
      {R"({"attempts": 0})", "/attempts", "integer from 1 to 1001"},
      {R"({"attempts": -2, "backoff": 1})", "/attempts", "integer from 1"},
      {R"({"attempts": 3, "backoff": true})", "/backoff", "fixed delay"},
      {R"({"attempts": 3, "backoff": -1})", "/backoff", "duration in milliseconds"},
      {R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 1000, "jitter": 1.5}})",
       "/backoff/jitter", "between 0 and 1"},
      {R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 1000, "jitter": -0.1}})",
       "/backoff/jitter", "between 0 and 1"},
      {R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 1000, "jitter": "0.5"}})",
       "/backoff/jitter", "between 0 and 1"},
      {R"({"attempts": 3, "backoff": {"type": "decorrelatedJitter", "delay": 1000}})",
       "/backoff/type", "custom strategies"},
      {R"({"attempts": 3, "backoff": 1000, "max_attempts": 4})", "/max_attempts", "unknown key"},
      {R"({"backoff": {"type": "fixed", "delay": 1}})", "", "neither \"max\" nor \"attempts\""},
      {R"({"maxx": 2, "backoff_sec": 1})", "/maxx", "unknown key \"maxx\" in a per-job"},
      {R"({"maxx": 2})", "/maxx", "unknown key"},
  };
  for (const auto& c : cases) {
    const json j = json::parse(c.json_text);
    auto r = parse_retry_policy(j, ScheduleFacts{"0 * * * *", false});
    ASSERT_FALSE(r.ok()) << c.json_text << " parsed: " << to_json(*r).dump();
    EXPECT_EQ(r.error().where, c.where) << c.json_text << ": " << r.error().describe();
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.json_text << ": message \"" << r.error().message << "\" lacks \"" << c.says << "\"";
    EXPECT_FALSE(r.error().message.empty());
  }
}

// ---- backoff, as BullMQ 5 computes it ----

TEST(Backoff, JsMathRoundHalvesGoUp) {
  EXPECT_EQ(js_math_round(1.5), 2.0);
  EXPECT_EQ(js_math_round(2.5), 3.0);  // not banker's rounding
  EXPECT_EQ(js_math_round(0.5), 1.0);
  EXPECT_EQ(js_math_round(-0.5), 0.0);
  EXPECT_EQ(js_math_round(-1.5), -1.0);
  EXPECT_EQ(js_math_round(-2.5), -2.0);
  EXPECT_EQ(js_math_round(2.4999999999999996), 2.0);
  EXPECT_EQ(js_math_round(0.49999999999999994), 0.0);  // floor(x + 0.5) would say 1
  EXPECT_EQ(js_math_round(4503599627370495.5), 4503599627370496.0);
  EXPECT_EQ(js_math_round(9007199254740991.0), 9007199254740991.0);
}

TEST(Backoff, ExponentialVectorsByHand) {
  // round(2^(n-1) * delay): the n-th consecutive failure waits that long.
  const Backoff odd{BackoffKind::exponential, 3, 0.0};
  const std::vector<DurationMs> odd_expected{3, 6, 12, 24, 48, 96, 192, 384};
  for (int n = 1; n <= 8; ++n) EXPECT_EQ(backoff_delay_ms(odd, n), odd_expected[n - 1]) << n;
  const Backoff seven{BackoffKind::exponential, 7, 0.0};
  EXPECT_EQ(backoff_delay_ms(seven, 1), 7);
  EXPECT_EQ(backoff_delay_ms(seven, 2), 14);
  EXPECT_EQ(backoff_delay_ms(seven, 10), 3584);
  // 001's low-frequency policy: 30, 60, 120 minutes.
  const Backoff low{BackoffKind::exponential, 1'800'000, 0.0};
  EXPECT_EQ(backoff_delay_ms(low, 1), 30 * kMinuteMs);
  EXPECT_EQ(backoff_delay_ms(low, 2), 60 * kMinuteMs);
  EXPECT_EQ(backoff_delay_ms(low, 3), 120 * kMinuteMs);
  const Backoff one{BackoffKind::exponential, 1, 0.0};
  EXPECT_EQ(backoff_delay_ms(one, 40), DurationMs{1} << 39);
  const Backoff zero{BackoffKind::exponential, 0, 0.0};
  EXPECT_EQ(backoff_delay_ms(zero, 40), 0);
}

TEST(Backoff, FixedIgnoresTheAttempt) {
  const Backoff fixed{BackoffKind::fixed, 300'000, 0.0};
  for (int n : {1, 2, 3, 50, 1000}) EXPECT_EQ(backoff_delay_ms(fixed, n), 300'000);
}

TEST(Backoff, SaturatesInsteadOfOverflowing) {
  const Backoff big{BackoffKind::exponential, kBackoffDelayMaxMs, 0.0};
  EXPECT_EQ(backoff_delay_ms(big, 1), kBackoffDelayMaxMs);
  EXPECT_EQ(backoff_delay_ms(big, 30), kBackoffSaturationMs);
  EXPECT_EQ(backoff_delay_ms(big, 1001), kBackoffSaturationMs);
  EXPECT_EQ(backoff_delay_ms(Backoff{BackoffKind::exponential, 1, 0.0}, 63), kBackoffSaturationMs);
  EXPECT_EQ(backoff_delay_ms(Backoff{BackoffKind::exponential, 1, 0.0}, 1'000'000),
            kBackoffSaturationMs);
  // Saturation point + any supported instant still fits in int64.
  EXPECT_GT(std::numeric_limits<TimeMs>::max() - kMaxInstantMs, kBackoffSaturationMs);
}

TEST(Backoff, JitterVectorsByHand) {
  // floor(rand * max * j + max * (1 - j)), evaluated in doubles like JS.
  struct Case {
    Backoff backoff;
    int n;
    std::uint64_t draw;
    DurationMs expected;
  };
  const std::vector<Case> cases{
      {{BackoffKind::exponential, 1000, 0.5}, 3, kHalf, 3000},  // max 4000: 1000 + 2000
      {{BackoffKind::exponential, 1000, 0.5}, 3, 0, 2000},
      {{BackoffKind::exponential, 1000, 0.5}, 3, kTop, 4000},  // double rounding reaches max
      {{BackoffKind::exponential, 1'800'000, 1.0}, 2, kTop, 3'599'999},
      {{BackoffKind::exponential, 1'800'000, 1.0}, 2, 0, 0},
      {{BackoffKind::exponential, 7, 0.3}, 4, 0, 39},  // 56 * 0.7 = 39.199...
      {{BackoffKind::exponential, 7, 0.3}, 4, kTop, 55},
      {{BackoffKind::exponential, 3, 0.1}, 1, kHalf, 2},  // 0.15 + 2.7
      {{BackoffKind::exponential, 60000, 0.25}, 1, 0x123456789abcdef0ULL, 46066},
      {{BackoffKind::fixed, 1000, 0.3}, 7, kHalf, 850},
      {{BackoffKind::fixed, 1000, 0.3}, 1, 0, 700},
      {{BackoffKind::fixed, 1000, 0.3}, 1, kTop, 1000},
      {{BackoffKind::fixed, 999, 0.7}, 1, 0, 299},  // 299.70000000000005
      {{BackoffKind::fixed, 999, 0.7}, 1, kTop, 998},
      {{BackoffKind::fixed, 1, 1.0}, 1, kTop, 0},
      {{BackoffKind::fixed, 300000, 0.1}, 2, 0xdeadbeefcafebabeULL, 296095},
  };
  for (const auto& c : cases) {
    ScriptedRandom random({c.draw});
    EXPECT_EQ(backoff_delay_ms(c.backoff, c.n, &random), c.expected)
        << to_string(c.backoff.kind) << " delay " << c.backoff.delay_ms << " j " << c.backoff.jitter
        << " n " << c.n;
    EXPECT_EQ(random.used(), 1);
  }
  // No jitter: no draw at all (the seeded stream is not disturbed).
  ScriptedRandom untouched({});
  EXPECT_EQ(backoff_delay_ms(Backoff{BackoffKind::exponential, 5, 0.0}, 2, &untouched), 10);
  EXPECT_EQ(backoff_delay_ms(Backoff{BackoffKind::exponential, 5, 0.0}, 2, nullptr), 10);
  EXPECT_EQ(untouched.used(), 0);
}

// ---- plan, reports, side effects ----

TEST(RetryPlan, LowFrequencyAutoPlanGivesThreeAndAHalfHours) {
  const RetryPlan plan = plan_retries(auto_retry_policy(ScheduleFacts{"0 17 * * 5", true}));
  EXPECT_EQ(plan.max_retries, 3);
  EXPECT_EQ(plan.delays_ms,
            (std::vector<DurationMs>{30 * kMinuteMs, 60 * kMinuteMs, 120 * kMinuteMs}));
  EXPECT_EQ(plan.offsets_ms,
            (std::vector<DurationMs>{30 * kMinuteMs, 90 * kMinuteMs, 210 * kMinuteMs}));
  EXPECT_EQ(plan.recovery_window_ms, 3 * kHourMs + 30 * kMinuteMs);
  const json j = to_json(plan);
  EXPECT_EQ(j.at("max_retries"), 3);
  EXPECT_EQ(j.at("delays_ms"), json::parse("[1800000, 3600000, 7200000]"));
  EXPECT_EQ(j.at("retryable_classes").size(), kFailureClassCount);
  EXPECT_EQ(j.at("budget"), "per_slot");
  EXPECT_EQ(j.at("form"), "auto");
}

TEST(RetryPlan, DisabledPolicyHasAnEmptyPlan) {
  const auto p = parse_ok(json::parse(R"({"max": 0, "retryable_classes": [], "reason": "r"})"));
  const RetryPlan plan = plan_retries(p);
  EXPECT_TRUE(plan.delays_ms.empty());
  EXPECT_EQ(plan.recovery_window_ms, 0);
  EXPECT_EQ(to_json(plan).at("retryable_classes"), json::array());
}

TEST(RetryPolicyReport, JsonAndDescribe) {
  const auto p = parse_ok(json::parse(R"({"max": 2, "backoff_sec": 300, "reason": "drafts"})"));
  const json j = to_json(p);
  EXPECT_EQ(j.at("form"), "per_job");
  EXPECT_EQ(j.at("max_retries"), 2);
  EXPECT_EQ(j.at("backoff").at("type"), "fixed");
  EXPECT_EQ(j.at("backoff").at("delay_ms"), 300000);
  EXPECT_EQ(j.at("backoff").at("delay"), "5m");
  EXPECT_EQ(j.at("budget"), "per_episode");
  EXPECT_EQ(j.at("reason"), "drafts");
  EXPECT_EQ(j.at("retryable_classes"),
            json::parse(R"(["timeout", "network", "provider_5xx", "rate_limit"])"));
  EXPECT_EQ(describe(p),
            "per_job max=2 backoff=fixed 5m classes=timeout,network,provider_5xx,rate_limit "
            "budget=per_episode");
  const json a = to_json(auto_retry_policy(ScheduleFacts{"0 17 * * 5", true}));
  EXPECT_EQ(a.at("schedule"), "0 17 * * 5");
  EXPECT_EQ(a.at("low_frequency"), true);
}

TEST(SideEffects, PublishingRetryNeedsKeyOrReason) {
  const auto retrying = parse_ok(json::parse(R"({"attempts": 3, "backoff": 1000})"));
  const auto with_reason =
      parse_ok(json::parse(R"({"attempts": 3, "backoff": 1000, "reason": "idempotent API"})"));
  const auto disabled = parse_ok(json::parse(R"({"max": 0, "reason": "never re-run"})"));
  SideEffectDeclaration publish{SideEffectKind::publish, "", ""};
  EXPECT_TRUE(side_effect_warning(publish, retrying).has_value());
  EXPECT_FALSE(side_effect_warning(publish, with_reason).has_value());
  EXPECT_FALSE(side_effect_warning(publish, disabled).has_value());
  EXPECT_FALSE(side_effect_warning({SideEffectKind::publish, "post-{slot}", ""}, retrying));
  EXPECT_FALSE(side_effect_warning({SideEffectKind::publish, "", "dedup by slot"}, retrying));
  EXPECT_FALSE(side_effect_warning({SideEffectKind::draft, "", ""}, retrying));
  EXPECT_FALSE(side_effect_warning({SideEffectKind::none, "", ""}, retrying));
  EXPECT_EQ(parse_side_effect_kind("publish"), SideEffectKind::publish);
  EXPECT_FALSE(parse_side_effect_kind("Publish").has_value());
}

// ---- auto from real schedules (§11: 5- and 6-field crons; env override) ----

RetryPolicy auto_for(const std::string& expression) {
  auto schedule = CronSchedule::parse(expression);
  EXPECT_TRUE(schedule.ok()) << expression;
  return parse_ok(json("auto"), schedule_facts(*schedule));
}

TEST(AutoPolicy, FiveAndSixFieldCronsPickTheRightPolicy) {
  for (const char* low : {"0 17 * * 5", "0 0 17 * * 5", "0 9 1 * *", "@weekly", "@monthly",
                          "0 0 9 L * *", "0 0 12 * * 5#3"}) {
    const auto p = auto_for(low);
    EXPECT_TRUE(p.low_frequency) << low;
    EXPECT_EQ(p.max_retries, 3) << low;
    EXPECT_EQ(p.backoff.delay_ms, 30 * kMinuteMs) << low;
  }
  for (const char* high : {"10 17 * * 1-5", "*/3 * * * *", "0 */5 * * * *", "@daily", "0 9 * * *",
                           "30 10 17 * * 1-5"}) {
    const auto p = auto_for(high);
    EXPECT_FALSE(p.low_frequency) << high;
    EXPECT_EQ(p.max_retries, 1) << high;
    EXPECT_EQ(p.backoff.delay_ms, 60 * kSecondMs) << high;
  }
}

TEST(AutoPolicy, FollowsTheEnvOverriddenSchedule) {
  // Daily default, weekly override: the override decides (001).
  Environment env{{"WEEKLY_SUMMARY_CRON", "0 17 * * 5"}};
  auto weekly = effective_schedule("0 9 * * *", std::string("WEEKLY_SUMMARY_CRON"), env);
  ASSERT_TRUE(weekly.ok()) << weekly.error().describe();
  const auto p = parse_ok(json("auto"), schedule_facts(weekly->schedule));
  EXPECT_EQ(p.max_retries, 3);
  EXPECT_EQ(p.schedule_expression, "0 17 * * 5");
  // Weekly default, weekday override: back to the frequent policy.
  Environment env2{{"WEEKLY_SUMMARY_CRON", "10 17 * * 1-5"}};
  auto weekday = effective_schedule("0 17 * * 5", std::string("WEEKLY_SUMMARY_CRON"), env2);
  ASSERT_TRUE(weekday.ok());
  EXPECT_EQ(parse_ok(json("auto"), schedule_facts(weekday->schedule)).max_retries, 1);
  // Unset: the default decides.
  auto fallback = effective_schedule("0 17 * * 5", std::string("WEEKLY_SUMMARY_CRON"), {});
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(parse_ok(json("auto"), schedule_facts(fallback->schedule)).max_retries, 3);
}

// ---- properties ----

// Independent reimplementation: integer shifts instead of doubles.
DurationMs reference_backoff(BackoffKind kind, DurationMs delay, int n) {
  if (kind == BackoffKind::fixed) return delay;
  if (delay == 0) return 0;
  DurationMs value = delay;
  for (int i = 1; i < n; ++i) {
    if (value > kBackoffSaturationMs / 2) return kBackoffSaturationMs;
    value *= 2;
  }
  return std::min(value, kBackoffSaturationMs);
}

REHEARSE_PROP(BackoffProperty, MatchesIndependentFormula, ()) {
  const bool exponential = *rc::gen::arbitrary<bool>();
  const DurationMs delay =
      *rc::gen::oneOf(rc::gen::inRange<DurationMs>(0, 10), rc::gen::inRange<DurationMs>(0, 100'000),
                      rc::gen::inRange<DurationMs>(0, kBackoffDelayMaxMs + 1));
  const int attempts = *rc::gen::inRange(2, kRetryCountMax + 2);
  const int n = *rc::gen::inRange(1, attempts);  // retried failures: n < attempts
  const Backoff b{exponential ? BackoffKind::exponential : BackoffKind::fixed, delay, 0.0};
  RC_ASSERT(backoff_delay_ms(b, n) == reference_backoff(b.kind, delay, n));
}

REHEARSE_PROP(BackoffProperty, JitterStaysInBullmqRange, (std::uint64_t draw)) {
  const DurationMs delay = *rc::gen::inRange<DurationMs>(0, kBackoffDelayMaxMs + 1);
  const int n = *rc::gen::inRange(1, 40);
  const double jitter = *rc::gen::inRange(0, 1001) / 1000.0;
  const Backoff b{*rc::gen::arbitrary<bool>() ? BackoffKind::exponential : BackoffKind::fixed,
                  delay, jitter};
  ScriptedRandom random({draw});
  const DurationMs max_delay = reference_backoff(b.kind, delay, n);
  const DurationMs got = backoff_delay_ms(b, n, &random);
  // The formula written out again, in the same double operations as JS.
  if (jitter > 0.0) {
    const double rand = static_cast<double>(draw >> 11) * 0x1.0p-53;
    const double m = static_cast<double>(max_delay);
    const double expected = std::floor(rand * m * jitter + m * (1.0 - jitter));
    RC_ASSERT(got == static_cast<DurationMs>(expected));
    RC_ASSERT(random.used() == 1);
  } else {
    RC_ASSERT(got == max_delay);
  }
  RC_ASSERT(got >=
            static_cast<DurationMs>(std::floor(static_cast<double>(max_delay) * (1.0 - jitter))) -
                1);
  RC_ASSERT(got <= max_delay);
}

REHEARSE_PROP(RetryPolicyProperty, GeneratedValidPoliciesParseToTheirParameters, ()) {
  const bool bullmq = *rc::gen::arbitrary<bool>();
  const int retries = *rc::gen::inRange(0, 6);
  const bool exponential = *rc::gen::arbitrary<bool>();
  const DurationMs delay_s = *rc::gen::inRange<DurationMs>(0, 4000);
  std::vector<std::string> class_list;
  FailureClassSet classes;
  for (const FailureClass c : all_failure_classes()) {
    if (*rc::gen::arbitrary<bool>()) {
      class_list.emplace_back(to_string(c));
      insert(classes, c);
    }
  }
  const bool list_classes = *rc::gen::arbitrary<bool>();
  json j = json::object();
  if (bullmq) {
    j["attempts"] = retries + 1;
    j["backoff"] = {{"type", exponential ? "exponential" : "fixed"},
                    {"delay", format_duration(delay_s * kSecondMs)}};
  } else {
    j["max"] = retries;
    if (exponential) {
      j["backoff"] = {{"type", "exponential"}, {"delay", delay_s * kSecondMs}};
    } else {
      j["backoff_sec"] = delay_s;
    }
  }
  if (list_classes) j["retryable_classes"] = class_list;
  j["reason"] = "generated";
  const auto r = parse_retry_policy(j);
  RC_ASSERT(r.ok());
  RC_ASSERT(r->max_retries == retries);
  RC_ASSERT(r->backoff.delay_ms == delay_s * kSecondMs);
  RC_ASSERT(r->backoff.kind == (exponential ? BackoffKind::exponential : BackoffKind::fixed));
  const FailureClassSet expected_classes =
      list_classes ? classes : (bullmq ? all_classes_set() : default_retryable_classes());
  RC_ASSERT(r->retryable_classes == expected_classes);
  RC_ASSERT(r->budget == (bullmq ? BudgetScope::per_slot : BudgetScope::per_episode));
}

// Random JSON built from the policy vocabulary and junk.
rc::Gen<json> scalar_json() {
  return rc::gen::oneOf(
      rc::gen::just(json(nullptr)),
      rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) { return json(b); }),
      rc::gen::map(rc::gen::arbitrary<std::int64_t>(), [](std::int64_t v) { return json(v); }),
      rc::gen::map(rc::gen::inRange<std::int64_t>(-3, 2000),
                   [](std::int64_t v) { return json(v); }),
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [](std::uint64_t v) { return json(v); }),
      rc::gen::map(rc::gen::arbitrary<double>(),
                   [](double v) { return std::isfinite(v) ? json(v) : json(0.5); }),
      rc::gen::map(rc::gen::elementOf(std::vector<std::string>{
                       "auto", "fixed", "exponential", "timeout", "auth", "per_slot", "per_episode",
                       "30m", "1h30m", "90", "", "linear", "rate_limit", "400d", "1x", "unknown"}),
                   [](const std::string& s) { return json(s); }),
      rc::gen::map(rc::gen::arbitrary<std::string>(),
                   [](const std::string& s) { return json(s); }));
}

const std::vector<std::string> kPolicyKeys{
    "max",          "backoff_sec", "backoff",         "retryable_classes",
    "reason",       "budget",      "attempts",        "type",
    "delay",        "jitter",      "extra",           "max_delay",
    "bullmq",       "temporal",    "stepfunctions",   "sidekiq",
    "celery",       "k8s",         "maximumAttempts", "retry",
    "backoffLimit", "max_retries"};

rc::Gen<json> random_json(int depth) {
  if (depth <= 0) return scalar_json();
  return rc::gen::oneOf(
      scalar_json(),
      rc::gen::map(rc::gen::container<std::vector<json>>(random_json(depth - 1)),
                   [](const std::vector<json>& items) { return json(items); }),
      rc::gen::map(rc::gen::container<std::vector<std::pair<std::string, json>>>(
                       rc::gen::pair(rc::gen::oneOf(rc::gen::elementOf(kPolicyKeys),
                                                    rc::gen::arbitrary<std::string>()),
                                     random_json(depth - 1))),
                   [](const std::vector<std::pair<std::string, json>>& items) {
                     json o = json::object();
                     for (const auto& [k, v] : items) o[k] = v;
                     return o;
                   }));
}

// A valid policy of either form with one key replaced by random JSON, one key
// removed, or one key added: reaches the deep branches that random trees
// rarely reach.
rc::Gen<json> mutated_valid_policy() {
  const std::vector<json> templates{
      json::parse(R"({"max": 2, "backoff_sec": 300, "retryable_classes": ["timeout"],
                      "reason": "r", "budget": "per_slot"})"),
      json::parse(R"({"max": 1, "backoff": {"type": "exponential", "delay": "30s"}})"),
      json::parse(R"({"attempts": 4, "backoff": {"type": "exponential", "delay": 1800000,
                      "jitter": 0.5}, "retryable_classes": ["rate_limit", "auth"]})"),
      json::parse(R"({"attempts": 2, "backoff": 60000, "budget": "per_episode"})"),
      json::parse(R"({"attempts": 3, "backoff": {"type": "linear", "delay": "1m",
                      "max_delay": "90s"}})"),
      json::parse(R"({"temporal": {"initialInterval": "30m", "maximumAttempts": 4,
                      "maximumInterval": "1h"}, "reason": "r"})"),
      json::parse(R"({"stepfunctions": {"IntervalSeconds": 5, "JitterStrategy": "FULL"}})"),
      json::parse(R"({"celery": {"max_retries": 2, "retry_backoff": true}})"),
      json::parse(R"({"sidekiq": {"retry": 5}, "retryable_classes": ["timeout"]})"),
      json::parse(R"({"k8s": {"backoffLimit": 2}, "budget": "per_episode"})"),
      json::parse(R"({"bullmq": {"attempts": 3, "removeOnFail": true}})"),
      json("auto")};
  return rc::gen::exec([templates] {
    json j = *rc::gen::elementOf(templates);
    if (!j.is_object()) return j;
    const int action = *rc::gen::resize(100, rc::gen::inRange(0, 6));
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.push_back(k);
    const std::string key = *rc::gen::elementOf(keys);
    const std::vector<json> plausible{0,
                                      1,
                                      3,
                                      -1,
                                      2.5,
                                      "30m",
                                      "fixed",
                                      "exponential",
                                      json::array(),
                                      json::array({"timeout"}),
                                      "per_slot",
                                      "reason",
                                      0.25,
                                      1001,
                                      nullptr};
    if (action == 4) return j;  // unchanged: valid policies must stay accepted
    if (action == 5) {
      j[key] = *rc::gen::elementOf(plausible);
    } else if (action == 0) {
      j[key] = *rc::gen::scale(0.1, random_json(2));
    } else if (action == 1) {
      j.erase(key);
    } else if (action == 2) {
      j[*rc::gen::elementOf(kPolicyKeys)] = *rc::gen::scale(0.1, random_json(1));
    } else if (j.contains("backoff") && j["backoff"].is_object()) {
      j["backoff"][*rc::gen::elementOf(kPolicyKeys)] = *scalar_json();
    } else {
      // A system's own policy: one of its keys replaced (or added).
      for (auto& [k, inner] : j.items()) {
        if (!inner.is_object()) continue;
        std::vector<std::string> inner_keys{"extra"};
        for (const auto& [ik, iv] : inner.items()) inner_keys.push_back(ik);
        inner[*rc::gen::elementOf(inner_keys)] = *scalar_json();
        break;
      }
    }
    return j;
  });
}

REHEARSE_PROP(RetryPolicyProperty, RandomJsonNeverCrashesAndNeverYieldsOutOfRange, ()) {
  // Scaled down trees (a depth-3 tree of size-100 containers would be a
  // million nodes); the mutation choices are drawn at full size (inRange
  // scales with the size in RapidCheck).
  const json j = *rc::gen::weightedOneOf<json>(
      {{1, rc::gen::scale(0.1, random_json(3))}, {3, mutated_valid_policy()}});
  const auto r = parse_retry_policy(j, ScheduleFacts{"0 * * * *", *rc::gen::arbitrary<bool>()});
  if (!r.ok()) {
    RC_ASSERT(!r.error().message.empty());
    const std::string& where = r.error().where;
    const bool pointer_or_root =
        where.empty() || where.front() == '/';  // RC_ASSERT evaluates both sides of ||
    RC_ASSERT(pointer_or_root);
    RC_TAG("rejected");
    return;
  }
  RC_TAG("accepted", to_string(r->form));
  RC_ASSERT(r->max_retries >= 0);
  RC_ASSERT(r->max_retries <= kRetryCountMax);
  RC_ASSERT(r->backoff.delay_ms >= 0);
  RC_ASSERT(r->backoff.delay_ms <= kBackoffDelayMaxMs);
  RC_ASSERT(r->backoff.jitter >= 0.0);
  RC_ASSERT(r->backoff.jitter <= 1.0);
  const bool explained = policy_retries(*r) || !r->reason.empty();
  if (r->form == PolicyForm::per_job) RC_ASSERT(explained);
  // A plan can always be made, and its delays are within the saturation bound.
  const RetryPlan plan = plan_retries(*r);
  RC_ASSERT(static_cast<int>(plan.delays_ms.size()) == r->max_retries);
  for (const DurationMs d : plan.delays_ms) RC_ASSERT(d >= 0 && d <= kBackoffSaturationMs);
}

}  // namespace
}  // namespace rehearse
