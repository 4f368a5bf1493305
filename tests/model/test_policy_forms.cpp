// Other systems' retry policies (model/policy_forms.hpp), the extended
// backoff (cap, linear, polynomial, no delay) and the JS-object-literal
// reader. Every expected delay below is worked out by hand from the system's
// documented formula (docs/policies.md), not copied from the output.
#include "model/policy_forms.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/js_literal.hpp"
#include "model/retry_policy.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

class FixedRandom final : public RandomSource {
 public:
  explicit FixedRandom(std::uint64_t v) : v_(v) {}
  std::uint64_t next_u64() override { return v_; }

 private:
  std::uint64_t v_;
};
FailureClassSet set_of(std::initializer_list<FailureClass> classes) {
  FailureClassSet s;
  for (auto c : classes) insert(s, c);
  return s;
}

constexpr std::uint64_t kTop = ~std::uint64_t{0};  // next_unit() just below 1

SystemPolicy convert_ok(const char* system, const char* text) {
  auto value = parse_js_literal(text);
  EXPECT_TRUE(value.ok()) << text << ": " << value.error().describe();
  auto c = convert_system_policy(system, *value);
  EXPECT_TRUE(c.ok()) << system << " " << text << ": " << c.error().describe();
  return c.ok() ? *c : SystemPolicy{};
}

std::vector<DurationMs> delays(const SystemPolicy& c) { return plan_retries(c.policy).delays_ms; }

std::vector<DurationMs> seconds(std::initializer_list<DurationMs> s) {
  std::vector<DurationMs> out;
  for (const DurationMs v : s) out.push_back(v * kSecondMs);
  return out;
}

const std::vector<DurationMs> kThirtyOneTwo{30 * kMinuteMs, 60 * kMinuteMs, 120 * kMinuteMs};

// ---- the done-means check: four systems, one plan ----

TEST(PolicyForms, FourSystemsWriteTheSameThirtySixtyOneTwenty) {
  EXPECT_EQ(
      delays(convert_ok("bullmq", "{attempts: 4, backoff: {type: 'exponential', delay: 1800000}}")),
      kThirtyOneTwo);
  EXPECT_EQ(delays(convert_ok(
                "temporal", "{initialInterval: '30m', backoffCoefficient: 2, maximumAttempts: 4}")),
            kThirtyOneTwo);
  EXPECT_EQ(delays(convert_ok("stepfunctions", R"({"ErrorEquals": ["States.ALL"],
      "IntervalSeconds": 1800, "MaxAttempts": 3, "BackoffRate": 2.0})")),
            kThirtyOneTwo);
  EXPECT_EQ(delays(convert_ok("celery",
                              "{max_retries: 3, retry_backoff: 1800, "
                              "retry_backoff_max: 7200, retry_jitter: false}")),
            kThirtyOneTwo);
}

// ---- BullMQ: attempts includes the first run; no backoff = at once ----

TEST(PolicyForms, BullmqAttemptsAndImmediateRetries) {
  const auto p = convert_ok("bullmq", "{attempts: 5}");
  EXPECT_EQ(p.policy.max_retries, 4);
  EXPECT_EQ(delays(p), (std::vector<DurationMs>{0, 0, 0, 0}));
  const auto none = convert_ok("bullmq", "{removeOnFail: 100}");
  EXPECT_EQ(none.policy.max_retries, 0);  // attempts defaults to 1
  EXPECT_EQ(none.ignored, std::vector<std::string>{"removeOnFail"});
  const auto opts = convert_ok("bullmq",
                               "{attempts: 3, backoff: 5_000, removeOnComplete: true, "
                               "priority: 2, jobId: 'x',}");
  EXPECT_EQ(delays(opts), (std::vector<DurationMs>{5000, 5000}));
  EXPECT_EQ(opts.ignored.size(), 3u);
  // Jitter 0.5 of exponential 1000 ms at retry 3: max 4000, drawn from [2000, 4000].
  const auto j = convert_ok("bullmq",
                            "{attempts: 4, backoff: {type: 'exponential', delay: 1000, "
                            "jitter: 0.5}}");
  FixedRandom zero(0);
  EXPECT_EQ(backoff_delay_ms(j.policy.backoff, 3, &zero), 2000);
  const RetryPlan plan = plan_retries(j.policy);
  EXPECT_EQ(plan.shortest_window_ms, 500 + 1000 + 2000);
  EXPECT_EQ(plan.recovery_window_ms, 1000 + 2000 + 4000);
}

// ---- Temporal: min(initial * coeff^(n-1), maximumInterval), default cap 100 x initial ----

TEST(PolicyForms, TemporalCoefficientAndDefaultCap) {
  const auto d = convert_ok("temporal", "{maximumAttempts: 10}");
  EXPECT_EQ(d.policy.max_retries, 9);
  // 1, 2, 4, 8, 16, 32, 64 s, then 128 s capped at 100 x 1 s.
  EXPECT_EQ(delays(d), seconds({1, 2, 4, 8, 16, 32, 64, 100, 100}));
  EXPECT_EQ(plan_retries(d.policy).capped_from, 8);
  const auto f = convert_ok("temporal",
                            "{initialInterval: 10000, backoffCoefficient: 1.5, "
                            "maximumAttempts: 4}");
  EXPECT_EQ(delays(f), (std::vector<DurationMs>{10'000, 15'000, 22'500}));
  const auto one = convert_ok("temporal", "{maximumAttempts: 1}");
  EXPECT_EQ(one.policy.max_retries, 0);
  const auto c = convert_ok("temporal",
                            "{initialInterval: '1m', maximumInterval: '3m', "
                            "maximumAttempts: 5}");
  EXPECT_EQ(delays(c),
            (std::vector<DurationMs>{kMinuteMs, 2 * kMinuteMs, 3 * kMinuteMs, 3 * kMinuteMs}));
}

// ---- Step Functions: MaxAttempts counts retries; FULL jitter draws from [0, d] ----

TEST(PolicyForms, StepFunctionsDefaultsCapAndJitter) {
  const auto d = convert_ok("stepfunctions", R"([{"ErrorEquals": ["States.ALL"]}])");
  EXPECT_EQ(d.policy.max_retries, 3);
  EXPECT_EQ(delays(d), seconds({1, 2, 4}));
  const auto c = convert_ok("stepfunctions", R"({"IntervalSeconds": 2, "MaxAttempts": 4,
      "MaxDelaySeconds": 5})");
  EXPECT_EQ(delays(c), seconds({2, 4, 5, 5}));
  const auto j = convert_ok("stepfunctions", R"({"IntervalSeconds": 10, "MaxAttempts": 2,
      "JitterStrategy": "FULL"})");
  FixedRandom zero(0), top(kTop);
  EXPECT_EQ(backoff_delay_ms(j.policy.backoff, 2, &zero), 0);
  EXPECT_EQ(backoff_delay_ms(j.policy.backoff, 2, &top), 20'000);
  EXPECT_EQ(plan_retries(j.policy).shortest_window_ms, 0);
  EXPECT_EQ(convert_ok("stepfunctions", R"({"MaxAttempts": 0})").policy.max_retries, 0);
}

// ---- Sidekiq: (count ** 4) + 15 + rand(10) * (count + 1) s, count = n - 1 ----

TEST(PolicyForms, SidekiqPolynomial) {
  const auto p = convert_ok("sidekiq", "{retry: 3, queue: 'low'}");
  EXPECT_EQ(delays(p), seconds({15, 16, 31}));  // 0+15, 1+15, 16+15
  FixedRandom top(kTop);                        // rand(10) = 9
  EXPECT_EQ(backoff_delay_ms(p.policy.backoff, 3, &top), (31 + 9 * 3) * kSecondMs);
  EXPECT_EQ(plan_retries(p.policy).longest_window_ms, (15 + 9 + 16 + 18 + 31 + 27) * kSecondMs);
  const auto all = convert_ok("sidekiq", "{retry: true}");
  EXPECT_EQ(all.policy.max_retries, 25);
  EXPECT_EQ(delays(all).back(), (331'776 + 15) * kSecondMs);  // 24^4 + 15
  EXPECT_EQ(convert_ok("sidekiq", "{retry: false}").policy.max_retries, 0);
  EXPECT_EQ(convert_ok("sidekiq", "{}").policy.max_retries, 25);
}

// ---- Celery: factor * 2^retries capped at retry_backoff_max (600), full jitter on ----

TEST(PolicyForms, CeleryDefaultsCapAndFixedCountdown) {
  const auto t =
      convert_ok("celery", "{retry_backoff: true, max_retries: 12, retry_jitter: false}");
  EXPECT_EQ(delays(t), seconds({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600}));
  EXPECT_EQ(plan_retries(t.policy).capped_from, 11);
  const auto cap = convert_ok("celery", "{retry_backoff: 1800}");  // default max 600 s, jitter on
  EXPECT_EQ(delays(cap), seconds({600, 600, 600}));
  EXPECT_TRUE(cap.policy.backoff.full_jitter);
  EXPECT_EQ(plan_retries(cap.policy).capped_from, 1);
  const auto frac = convert_ok("celery", "{retry_backoff: 2.7, retry_jitter: false}");
  EXPECT_EQ(delays(frac), seconds({2, 4, 8}));  // int(max(1, 2.7)) = 2
  const auto fixed = convert_ok("celery", "{max_retries: 2}");
  EXPECT_EQ(delays(fixed), seconds({180, 180}));
  const auto own = convert_ok("celery",
                              "{max_retries: 2, default_retry_delay: 30, "
                              "autoretry_for: ['IOError']}");
  EXPECT_EQ(delays(own), seconds({30, 30}));
  // IOError (OSError) stands for the network's failures and timeouts.
  EXPECT_TRUE(own.ignored.empty());
  EXPECT_TRUE(contains(own.policy.retryable_classes, FailureClass::network));
  EXPECT_FALSE(contains(own.policy.retryable_classes, FailureClass::auth));
}

// ---- Kubernetes: backoffLimit retries, 10 s doubling capped at 6 min ----

TEST(PolicyForms, KubernetesBackoffLimit) {
  EXPECT_EQ(delays(convert_ok("k8s", "{}")), seconds({10, 20, 40, 80, 160, 320}));
  EXPECT_EQ(delays(convert_ok("k8s", "{backoffLimit: 8}")),
            seconds({10, 20, 40, 80, 160, 320, 360, 360}));
  const auto m = convert_ok("k8s",
                            "{apiVersion: 'batch/v1', kind: 'Job', metadata: {name: 'x'}, "
                            "spec: {backoffLimit: 2, template: {}}}");
  EXPECT_EQ(delays(m), seconds({10, 20}));
  EXPECT_EQ(m.ignored, std::vector<std::string>{"template"});
}

// ---- surprises ----

TEST(PolicyForms, SurprisesAreFlagged) {
  const auto has = [](const std::vector<std::string>& notes, const char* text) {
    for (const auto& n : notes) {
      if (n.find(text) != std::string::npos) return true;
    }
    return false;
  };
  const auto b = convert_ok("bullmq", "{attempts: 4, backoff: {type: 'exponential', delay: 1000}}");
  EXPECT_TRUE(has(policy_surprises(b, plan_retries(b.policy)), "attempts 4 means 3 retries"));
  const auto c = convert_ok("celery", "{retry_backoff: 1800}");
  const auto notes = policy_surprises(c, plan_retries(c.policy));
  EXPECT_TRUE(has(notes, "flattens the curve from retry 1"));
  EXPECT_TRUE(has(notes, "jitter can shorten the recovery window from 30m to 0ms"));
  const auto s = convert_ok("stepfunctions", R"({"MaxAttempts": 2})");
  EXPECT_TRUE(has(policy_surprises(s, plan_retries(s.policy)), "2 retries means 3 runs"));
  const auto now = convert_ok("bullmq", "{attempts: 3}");
  EXPECT_TRUE(has(policy_surprises(now, plan_retries(now.policy)), "runs at once"));
}

// ---- errors name the pointer ----

TEST(PolicyForms, BadPoliciesNameThePointer) {
  struct Case {
    const char* system;
    const char* text;
    const char* where;
    const char* says;
  };
  const std::vector<Case> cases{
      {"bullmq", "{attempts: 3, backoff: {type: 'linear', delay: 1}}", "/backoff/type", "custom"},
      {"bullmq", "{attempts: 3, retries: 2}", "/retries", "unknown key \"retries\""},
      {"bullmq", "{attempts: 0}", "/attempts", "integer from 1"},
      {"temporal", "{initialInterval: '1s'}", "/maximumAttempts", "scheduleToCloseTimeout"},
      {"temporal", "{maximumAttempts: 0}", "/maximumAttempts", "scheduleToCloseTimeout"},
      {"temporal", "{maximumAttempts: 3, backoffCoefficient: 0.5}", "/backoffCoefficient",
       "from 1"},
      {"temporal", "{maximumAttempts: 3, initialInterval: '1m', maximumInterval: '30s'}",
       "/maximumInterval", "no shorter"},
      {"stepfunctions", "[{}, {}]", "/0/ErrorEquals", "States.ALL must be in the last retrier"},
      {"stepfunctions", "[{JitterStrategy: 'HALF'}]", "/0/JitterStrategy", "\"FULL\" or \"NONE\""},
      {"stepfunctions", "{IntervalSeconds: 0}", "/IntervalSeconds", "from 1"},
      {"sidekiq", "{retry: 'yes'}", "/retry", "true, false or the number"},
      {"celery", "{max_retries: null}", "/max_retries", "without limit"},
      {"celery", "{retry_jitter: 1, retry_backoff: true}", "/retry_jitter", "true or false"},
      {"k8s", "{backoffLimit: -1}", "/backoffLimit", "from 0"},
      {"k8s", "{kind: 'Job', spec: {backofflimit: 2}}", "/spec/backofflimit", "unknown key"},
      {"k8s", "[]", "", "expected a Kubernetes Job policy object"},
  };
  for (const auto& c : cases) {
    auto value = parse_js_literal(c.text);
    ASSERT_TRUE(value.ok()) << c.text;
    auto r = convert_system_policy(c.system, *value);
    ASSERT_FALSE(r.ok()) << c.system << " " << c.text;
    EXPECT_EQ(r.error().where, c.where) << c.text << ": " << r.error().describe();
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.text << ": \"" << r.error().message << "\" lacks \"" << c.says << "\"";
  }
  EXPECT_FALSE(convert_system_policy("resque", json::object()).ok());
}

// ---- a scenario's retry_policy takes the same forms ----

TEST(PolicyForms, WrappedFormsParseAsRetryPolicies) {
  auto p = parse_retry_policy(json::parse(R"({"temporal": {"initialInterval": "30m",
      "maximumAttempts": 4}, "retryable_classes": ["rate_limit"], "budget": "per_episode"})"));
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(p->form, PolicyForm::temporal);
  EXPECT_EQ(plan_retries(*p).delays_ms, kThirtyOneTwo);
  EXPECT_EQ(p->retryable_classes, set_of({FailureClass::rate_limit}));
  EXPECT_EQ(p->budget, BudgetScope::per_episode);
  auto bad = parse_retry_policy(json::parse(R"({"celery": {"max_retries": "3"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where, "/celery/max_retries");
  auto two = parse_retry_policy(json::parse(R"({"k8s": {}, "sidekiq": {}})"));
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("two systems"), std::string::npos);
  auto extra = parse_retry_policy(json::parse(R"({"k8s": {}, "max": 2})"));
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.error().where, "/max");
}

// ---- core backoff shapes ----

TEST(Backoff, LinearPolynomialAndCap) {
  Backoff linear{BackoffKind::linear, 10 * kMinuteMs, 0.0};
  EXPECT_EQ(backoff_delay_ms(linear, 3), 30 * kMinuteMs);
  linear.max_delay_ms = 25 * kMinuteMs;
  EXPECT_EQ(backoff_delay_ms(linear, 3), 25 * kMinuteMs);
  EXPECT_EQ(formula_delay_ms(linear, 3), 30 * kMinuteMs);
  Backoff poly{BackoffKind::polynomial, 15 * kSecondMs, 0.0};
  poly.exponent = 2;
  EXPECT_EQ(backoff_delay_ms(poly, 4), (9 + 15) * kSecondMs);
  auto p = parse_retry_policy(json::parse(R"({"attempts": 4, "backoff": {"type": "linear",
      "delay": "30m", "max_delay": "1h"}})"));
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_EQ(plan_retries(*p).delays_ms,
            (std::vector<DurationMs>{30 * kMinuteMs, 60 * kMinuteMs, 60 * kMinuteMs}));
}

// ---- properties ----

REHEARSE_PROP(PolicyFormsProperty, ExponentialWithoutJitterNeverShrinks, ()) {
  Backoff b{BackoffKind::exponential, *rc::gen::inRange<DurationMs>(0, kBackoffDelayMaxMs + 1),
            0.0};
  b.factor = *rc::gen::inRange(100, 1001) / 100.0;  // 1.00 .. 10.00
  if (*rc::gen::arbitrary<bool>())
    b.max_delay_ms = *rc::gen::inRange<DurationMs>(1, kBackoffDelayMaxMs);
  const int n = *rc::gen::inRange(1, kRetryCountMax);
  RC_ASSERT(backoff_delay_ms(b, n + 1) >= backoff_delay_ms(b, n));
}

REHEARSE_PROP(PolicyFormsProperty, CapIsRespectedWithAnyKindAndJitter, (std::uint64_t draw)) {
  const auto kind = *rc::gen::element(BackoffKind::fixed, BackoffKind::exponential,
                                      BackoffKind::linear, BackoffKind::polynomial);
  Backoff b{kind, *rc::gen::inRange<DurationMs>(0, kBackoffDelayMaxMs + 1), 0.0};
  b.factor = *rc::gen::inRange(100, 400) / 100.0;
  b.max_delay_ms = *rc::gen::inRange<DurationMs>(1, kBackoffDelayMaxMs + 1);
  const int shape = *rc::gen::inRange(0, 3);
  if (shape == 1) b.jitter = *rc::gen::inRange(1, 1001) / 1000.0;
  if (shape == 2) b.full_jitter = true;
  const int n = *rc::gen::inRange(1, kRetryCountMax + 1);
  FixedRandom random(draw);
  const DurationMs d = backoff_delay_ms(b, n, &random);
  RC_ASSERT(d >= 0);
  RC_ASSERT(d <= b.max_delay_ms);
  RC_ASSERT(d >= min_backoff_delay_ms(b, n));
}

REHEARSE_PROP(PolicyFormsProperty, EachSystemCountsAttemptsItsWay, ()) {
  const int count = *rc::gen::inRange(1, 200);
  const auto retries = [](const char* system, const json& v) {
    auto c = convert_system_policy(system, v);
    RC_ASSERT(c.ok());
    return c->policy.max_retries;
  };
  RC_ASSERT(retries("bullmq", {{"attempts", count}}) == count - 1);
  RC_ASSERT(retries("temporal", {{"maximumAttempts", count}}) == count - 1);
  RC_ASSERT(retries("stepfunctions", {{"MaxAttempts", count}}) == count);
  RC_ASSERT(retries("sidekiq", {{"retry", count}}) == count);
  RC_ASSERT(retries("celery", {{"max_retries", count}}) == count);
  RC_ASSERT(retries("k8s", {{"backoffLimit", count}}) == count);
}

REHEARSE_PROP(PolicyFormsProperty, SidekiqDrawStaysInItsRange, (std::uint64_t draw)) {
  const auto c = convert_system_policy("sidekiq", {{"retry", 25}});
  RC_ASSERT(c.ok());
  const int n = *rc::gen::inRange(1, 26);
  FixedRandom random(draw);
  const DurationMs d = backoff_delay_ms(c->policy.backoff, n, &random);
  const DurationMs base = (static_cast<DurationMs>(std::pow(n - 1, 4)) + 15) * kSecondMs;
  RC_ASSERT(d >= base);
  RC_ASSERT(d <= base + 9 * n * kSecondMs);
  RC_ASSERT((d - base) % (n * kSecondMs) == 0);
}

REHEARSE_PROP(JsLiteralProperty, JsonIsASubset, ()) {
  // ASCII strings (control characters come out as \u escapes).
  const auto ascii = rc::gen::container<std::string>(rc::gen::inRange<char>(1, 127));
  const auto keys = *rc::gen::container<std::vector<std::string>>(ascii);
  json object = json::object();
  for (const auto& k : keys) {
    object[k] = *rc::gen::oneOf(rc::gen::map(rc::gen::arbitrary<std::int32_t>(),
                                             [](std::int32_t v) { return json(v); }),
                                rc::gen::map(ascii, [](std::string v) { return json(v); }),
                                rc::gen::just(json(nullptr)), rc::gen::just(json(true)));
  }
  const std::string text = object.dump();
  auto parsed = parse_js_literal(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == object);
}

// ---- the JS-object-literal reader ----

TEST(JsLiteral, AcceptsWhatPoliciesArePastedAs) {
  auto v = parse_js_literal(R"(// BullMQ job options
{
  attempts: 4, /* the first run included */
  backoff: {type: 'exponential', delay: 1_800_000,},
  'removeOnFail': true,
  tags: ["a", 'b\'c',],
  ratio: -1.5e1,
})");
  ASSERT_TRUE(v.ok()) << v.error().describe();
  EXPECT_EQ(*v, json::parse(R"({"attempts": 4, "backoff": {"type": "exponential",
      "delay": 1800000}, "removeOnFail": true, "tags": ["a", "b'c"], "ratio": -15.0})"));
  EXPECT_TRUE((*v)["attempts"].is_number_integer());
  EXPECT_EQ(*parse_js_literal("{s: '\\u00e9\\n'}"), json::parse(R"({"s": "\u00e9\n"})"));
}

TEST(JsLiteral, RefusesWithLineAndColumn) {
  struct Case {
    const char* text;
    const char* where;
    const char* says;
  };
  const std::vector<Case> cases{
      {"{a: 1,\n b: }", "2:5", "expected a value"},
      {"{a: undefined}", "1:5", "'undefined'"},
      {"{a: 1, a: 2}", "1:8", "given twice"},
      {"{a: 1__0}", "1:7", "between two digits"},
      {"{a: 1_}", "1:7", "between two digits"},
      {"{a: 0x10}", "1:5", "hex"},
      {"{a: 010}", "1:5", "zero-led"},
      {"{a: +1}", "1:5", "expected a value"},
      {"{a: 'open}", "1:5", "unterminated string"},
      {"{a: 1} x", "1:8", "end of the input"},
      {"{a 1}", "1:4", "':' after the key \"a\""},
      {"{a: 1 b: 2}", "1:7", "',' or '}'"},
      {"[1,,2]", "1:4", "holes"},
      {"{a: 'x\n'}", "1:7", "line break"},
      {"{a: 1 /* open", "1:7", "unterminated /* comment"},
      {"{a: .5}", "1:5", "expected a value"},
      {"{a: 1.}", "1:7", "digit after '.'"},
      {"{a: NaN}", "1:5", "'NaN'"},
      {"", "1:1", "expected a value"},
  };
  for (const auto& c : cases) {
    auto r = parse_js_literal(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code, ErrorCode::parse_error);
    EXPECT_EQ(r.error().where, c.where) << c.text << ": " << r.error().describe();
    EXPECT_NE(r.error().message.find(c.says), std::string::npos)
        << c.text << ": \"" << r.error().message << "\" lacks \"" << c.says << "\"";
  }
}

}  // namespace
}  // namespace rehearse
