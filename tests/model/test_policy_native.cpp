// Retry settings as the systems' users keep them (model/policy_text.hpp) and
// the deadline that ends a chain without a count (docs/policies.md
// "Unlimited retries"). Each snippet is written as the system's documentation
// writes it; each expected plan is worked out by hand from the system's
// formula.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/policy_forms.hpp"
#include "model/policy_text.hpp"
#include "model/retry_machine.hpp"
#include "model/retry_policy.hpp"

namespace rehearse {
namespace {

SystemPolicy native_ok(const char* system, const std::string& text) {
  auto value = read_native_policy(system, text);
  EXPECT_TRUE(value.ok()) << system << ": " << (value.ok() ? "" : value.error().describe());
  if (!value.ok()) return {};
  auto converted = convert_system_policy(system, *value);
  EXPECT_TRUE(converted.ok()) << system << ": "
                              << (converted.ok() ? "" : converted.error().describe());
  return converted.ok() ? *converted : SystemPolicy{};
}

Error native_error(const char* system, const std::string& text) {
  auto value = read_native_policy(system, text);
  if (!value.ok()) return value.error();
  auto converted = convert_system_policy(system, *value);
  EXPECT_FALSE(converted.ok()) << system << " accepted: " << text;
  return converted.ok() ? Error{} : converted.error();
}

TEST(PolicyNative, TemporalDefaultRunsUntilScheduleToClose) {
  // The TypeScript SDK's activity options; maximumAttempts absent is 0.
  const auto p = native_ok("temporal", R"({
    startToCloseTimeout: '1 minute',
    scheduleToCloseTimeout: '10 minutes',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
  })");
  EXPECT_TRUE(unlimited_retries(p.policy));
  EXPECT_EQ(p.policy.deadline_ms, 10 * kMinuteMs);
  const RetryPlan plan = plan_retries(p.policy);
  // 1, 2, 4, 8, 16, 32, 60, 60, 60, 60 s: +1 +3 +7 +15 +31 +63 +123 +183
  // +243 +303 +363 +423 +483 +543 s; the next, +603 s, passes 600 s.
  ASSERT_EQ(plan.planned, 14);
  EXPECT_EQ(plan.stop, RetryPlan::Stop::deadline);
  EXPECT_EQ(plan.offsets_ms.back(), 543 * kSecondMs);
  EXPECT_EQ(plan.delays_ms[6], kMinuteMs);
}

TEST(PolicyNative, TemporalPythonSdk) {
  const auto p = native_ok("temporal", R"(RetryPolicy(
      initial_interval=timedelta(seconds=2),
      backoff_coefficient=3.0,
      maximum_attempts=4,
      non_retryable_error_types=["ValueError"],
  ))");
  EXPECT_EQ(p.policy.max_retries, 3);
  EXPECT_EQ(plan_retries(p.policy).delays_ms, (std::vector<DurationMs>{2000, 6000, 18000}));
  EXPECT_FALSE(contains(p.policy.retryable_classes, FailureClass::validation));
  EXPECT_TRUE(contains(p.policy.retryable_classes, FailureClass::timeout));
}

TEST(PolicyNative, TemporalWithoutDeadlineTeachesTheFix) {
  const Error e = native_error("temporal", "{initialInterval: '1s'}");
  EXPECT_EQ(e.where, "/maximumAttempts");
  EXPECT_NE(e.message.find("scheduleToCloseTimeout"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("docs/policies.md"), std::string::npos) << e.message;
}

TEST(PolicyNative, CeleryDecoratorAsPythonWritesIt) {
  const auto p = native_ok("celery", R"(@app.task(bind=True, autoretry_for=(RequestException,),
           retry_kwargs={'max_retries': 5}, retry_backoff=True)
def fetch(self, url):
    return requests.get(url)
)");
  EXPECT_EQ(p.policy.max_retries, 5);
  EXPECT_TRUE(p.policy.backoff.full_jitter);
  // retry_backoff True: 1 s doubling, capped at 600 s, before the jitter.
  EXPECT_EQ(plan_retries(p.policy).delays_ms,
            (std::vector<DurationMs>{1000, 2000, 4000, 8000, 16000}));
  // RequestException: the HTTP client's failures, not a local config error.
  EXPECT_TRUE(contains(p.policy.retryable_classes, FailureClass::network));
  EXPECT_FALSE(contains(p.policy.retryable_classes, FailureClass::config));
}

TEST(PolicyNative, CeleryNoneRunsUntilExpires) {
  const auto p =
      native_ok("celery", "@app.task(max_retries=None, default_retry_delay=60, expires=3600)");
  EXPECT_TRUE(unlimited_retries(p.policy));
  const RetryPlan plan = plan_retries(p.policy);
  EXPECT_EQ(plan.planned, 60);  // a retry each minute, the last at +60 min
  EXPECT_EQ(plan.stop, RetryPlan::Stop::deadline);
  const Error e = native_error("celery", "@app.task(max_retries=None)");
  EXPECT_NE(e.message.find("expires"), std::string::npos) << e.message;
}

TEST(PolicyNative, KubernetesManifestInYaml) {
  const auto p = native_ok("k8s", R"(apiVersion: batch/v1
kind: Job
metadata:
  name: nightly-report
spec:
  backoffLimit: 4
  activeDeadlineSeconds: 60
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: report
        image: busybox
)");
  EXPECT_EQ(p.policy.max_retries, 4);
  EXPECT_EQ(p.policy.deadline_ms, 60 * kSecondMs);
  // 10 s, 20 s, 40 s: +10 +30 +70 s; the third passes the 60 s deadline.
  const RetryPlan plan = plan_retries(p.policy);
  EXPECT_EQ(plan.planned, 2);
  EXPECT_EQ(plan.stop, RetryPlan::Stop::deadline);
}

TEST(PolicyNative, KubernetesRefusals) {
  EXPECT_EQ(native_error("k8s", "kind: Deployment\nspec: {}\n").where, "/kind");
  const Error two = native_error("k8s", "kind: Job\n---\nkind: Job\n");
  EXPECT_NE(two.message.find("document"), std::string::npos) << two.describe();
  const auto cron = native_ok("k8s", R"(kind: CronJob
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      backoffLimit: 1
)");
  EXPECT_EQ(cron.policy.max_retries, 1);
}

TEST(PolicyNative, UnknownKeyNamesTheOneItResembles) {
  const Error e = native_error("celery", "{max_retry: 3}");
  EXPECT_NE(e.message.find("did you mean \"max_retries\""), std::string::npos) << e.message;
}

TEST(PolicyDeadline, DecideFailureStopsAtTheDeadline) {
  RetryPolicy p;
  p.max_retries = kRetriesUnlimited;
  p.deadline_ms = 10 * kMinuteMs;
  p.backoff = Backoff{BackoffKind::fixed, 4 * kMinuteMs, 0.0};
  p.retryable_classes = all_classes_set();
  // Slot at 0: a failure at +5 min retries at +9 min; one at +7 min would
  // come due at +11 min, past the deadline.
  auto d = decide_failure(p, 1, FailureClass::timeout, nullptr, FailureAt{0, 5 * kMinuteMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  d = decide_failure(p, 2, FailureClass::timeout, nullptr, FailureAt{0, 7 * kMinuteMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::exhausted);
  // Due exactly at the deadline still runs.
  d = decide_failure(p, 2, FailureClass::timeout, nullptr, FailureAt{0, 6 * kMinuteMs});
  EXPECT_EQ(d.kind, FailureDecisionKind::retry);
  EXPECT_EQ(unlimited_policy_problem(p), "");
  p.deadline_ms = 0;
  EXPECT_NE(unlimited_policy_problem(p), "");
}

TEST(PolicyDeadline, PerJobUntil) {
  auto p = parse_retry_policy(nlohmann::json::parse(
      R"({"until": "2h", "backoff": {"type": "exponential", "delay": "10m"}})"));
  ASSERT_TRUE(p.ok()) << p.error().describe();
  EXPECT_TRUE(unlimited_retries(*p));
  // 10, 20, 40 min: +10 +30 +70 min; the next, +150 min, passes 2 h.
  EXPECT_EQ(plan_retries(*p).planned, 3);
  EXPECT_EQ(describe(*p).find("max=unlimited") != std::string::npos, true) << describe(*p);
  auto zero = parse_retry_policy(nlohmann::json::parse(R"({"until": "2h", "backoff_sec": 0})"));
  EXPECT_FALSE(zero.ok());
}

}  // namespace
}  // namespace rehearse
