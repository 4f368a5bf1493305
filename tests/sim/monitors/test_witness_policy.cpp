// Goal: the monitors judge the retries of a policy written in any of the six
// systems' forms with their own reading (sim/monitors/witness_systems), so a
// correct scenario of every form passes with nothing unchecked, and a core
// that converts a form wrongly is caught by retries_bounded.
// Method: one daily call job against a six-hour outage of its service, long
// enough to spend any budget below. (1) The real core runs the policy as
// written: no violation, nothing unchecked. (2) A wrong conversion: the core
// runs the policy a plausible mistake gives (written in a form the core reads
// natively), and that run's trace is judged by the monitors of the scenario
// the user wrote; retries_bounded must fire. Each case's delays are derived
// by hand in its comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/monitors/monitor_set.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/monitors/witness_policy.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

Scenario outage_world(const json& policy) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "policy-forms", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T20:00:00Z", "seed": 3,
    "services": {"billing-api": {}},
    "jobs": [{"id": "sync", "kind": "call", "schedule": "0 9 * * *",
              "calls": [{"service": "billing-api", "path": "/sync"}]}],
    "faults": [{"at": "2026-12-07T08:00:00Z", "for": "6h", "kind": "http_errors",
                "service": "billing-api", "status": 503}]
  })");
  doc["jobs"][0]["retry_policy"] = policy;
  auto s = load_scenario_json(doc.dump(), "policy-forms");
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return *s;
}

ScenarioRunResult run_core(const Scenario& s) {
  auto r = run_scenario(s, RunOptions{});
  EXPECT_TRUE(r.ok()) << r.error().describe();
  return *r;
}

// The trace of `run` judged by the monitors of `written`, as the world
// would judge it (its store directories locked).
std::vector<Violation> judged_as(const Scenario& written, const ScenarioRunResult& run) {
  MonitorSet set(written);
  set.add_locked_store(kWorldStateDir);
  set.add_locked_store(kWorldLedgerDir);
  const auto& events = run.trace.events();
  for (std::size_t i = 0; i < events.size(); ++i) set.observe(events[i], i);
  set.finish(written.until_ms);
  return set.violations();
}

std::string names(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) out += v.invariant + ": " + v.message + "\n";
  return out;
}

struct FormCase {
  const char* system;
  const char* written;  // the user's policy, in the system's form
  int retries;          // what the system's documentation gives
  const char* wrong;    // what a wrong conversion runs instead
};

// Delays before retry n, by hand from docs/policies.md:
// - temporal 10m x 2, 4 attempts: 10m, 20m, 40m (3 retries). Wrong: the
//   attempts read as retries, a fourth retry.
// - stepfunctions 600 s x 2 capped at 900 s, 3 retries: 10m, 15m, 15m.
//   Wrong: the cap ignored, 20m before retry 2.
// - sidekiq retry 3: 15-24 s, 16-34 s, 31-58 s. Wrong: the (n-1)^4 term
//   dropped, 15 s each, retry 2 early.
// - celery retry_backoff 600 capped at 900 s, no jitter, 3 retries: 10m,
//   15m, 15m. Wrong: retry_backoff_max ignored, 20m before retry 2.
// - k8s backoffLimit 7: 10 s doubling to 320 s, then 360 s (the 6-minute
//   cap) before retry 7. Wrong: the cap ignored, 640 s.
// - bullmq exponential 60 s with jitter 0.5, attempts 3: [30 s, 60 s], [60 s,
//   120 s]. Wrong: the exponent off by one, 120 s before retry 1.
const std::vector<FormCase>& form_cases() {
  static const std::vector<FormCase> kCases{
      {"temporal", R"({"initialInterval": "10m", "backoffCoefficient": 2, "maximumAttempts": 4})",
       3, R"({"attempts": 5, "backoff": {"type": "exponential", "delay": "10m"}})"},
      {"stepfunctions",
       R"({"ErrorEquals": ["States.ALL"], "IntervalSeconds": 600, "MaxAttempts": 3,
           "BackoffRate": 2, "MaxDelaySeconds": 900})",
       3, R"({"attempts": 4, "backoff": {"type": "exponential", "delay": "10m"}})"},
      {"sidekiq", R"({"retry": 3, "queue": "critical"})", 3,
       R"({"attempts": 4, "backoff": 15000})"},
      {"celery",
       R"({"max_retries": 3, "retry_backoff": 600, "retry_backoff_max": 900,
           "retry_jitter": false})",
       3, R"({"attempts": 4, "backoff": {"type": "exponential", "delay": "10m"}})"},
      {"k8s", R"({"apiVersion": "batch/v1", "kind": "Job", "spec": {"backoffLimit": 7}})", 7,
       R"({"attempts": 8, "backoff": {"type": "exponential", "delay": "10s"}})"},
      {"bullmq", R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 60000,
           "jitter": 0.5}, "removeOnFail": true})",
       2, R"({"attempts": 3, "backoff": {"type": "exponential", "delay": 120000}})"},
  };
  return kCases;
}

json wrapped(const FormCase& c) { return json{{c.system, json::parse(c.written)}}; }

TEST(WitnessPolicy, ReadsEverySystemsCountAndCurve) {
  for (const FormCase& c : form_cases()) {
    bool judged = false;
    const WitnessPolicy p = read_policy(wrapped(c), false, &judged);
    EXPECT_TRUE(judged) << c.system;
    ASSERT_TRUE(p.valid) << c.system << ": " << p.why_invalid;
    EXPECT_EQ(p.form, c.system);
    EXPECT_EQ(p.retries_max, c.retries) << c.system;
    EXPECT_TRUE(p.per_slot) << c.system;
    EXPECT_TRUE(p.retries_class("auth")) << c.system;  // every class unless told otherwise
  }
}

TEST(WitnessPolicy, DelayBoundsByHand) {
  bool judged = false;
  const WitnessPolicy sidekiq =
      read_policy(json::parse(R"({"sidekiq": {"retry": 3}})"), {}, &judged);
  EXPECT_EQ(sidekiq.min_delay_ms(1), 15'000 - 1);
  EXPECT_EQ(sidekiq.max_delay_ms(1), 24'000 + 1);
  EXPECT_EQ(sidekiq.min_delay_ms(3), 31'000 - 1);
  EXPECT_EQ(sidekiq.max_delay_ms(3), 58'000 + 1);  // 31 s + 9 x 3 s
  const WitnessPolicy k8s = read_policy(json::parse(R"({"k8s": {}})"), {}, &judged);
  EXPECT_EQ(k8s.retries_max, 6);
  EXPECT_EQ(k8s.base_delay_ms(6), 320'000);
  EXPECT_EQ(k8s.base_delay_ms(7), 360'000);
  const WitnessPolicy celery =
      read_policy(json::parse(R"({"celery": {"retry_backoff": true}})"), {}, &judged);
  EXPECT_EQ(celery.retries_max, 3);
  EXPECT_EQ(celery.min_delay_ms(2), 0);  // full jitter by default
  EXPECT_EQ(celery.max_delay_ms(2), 2'001);
  EXPECT_EQ(celery.base_delay_ms(20), 600'000);  // retry_backoff_max's default
  const WitnessPolicy plain = read_policy(json::parse(R"({"celery": {}})"), {}, &judged);
  EXPECT_EQ(plain.base_delay_ms(2), 180'000);  // default_retry_delay, fixed
  const WitnessPolicy temporal =
      read_policy(json::parse(R"({"temporal": {"initialInterval": 1000, "backoffCoefficient": 1.5,
                                   "maximumAttempts": 5}})"),
                  {}, &judged);
  EXPECT_EQ(temporal.base_delay_ms(3), 2'250);
  EXPECT_EQ(temporal.base_delay_ms(40), 100'000);  // maximumInterval: 100 x initialInterval
  const WitnessPolicy steps = read_policy(
      json::parse(R"({"stepfunctions": [{"MaxAttempts": 2, "JitterStrategy": "FULL"}]})"), {},
      &judged);
  EXPECT_EQ(steps.retries_max, 2);
  EXPECT_EQ(steps.min_delay_ms(2), 0);
  EXPECT_EQ(steps.max_delay_ms(2), 2'001);
}

// What each system refuses (or a plan cannot be drawn for) is invalid for the
// monitors too: such a job must never retry.
TEST(WitnessPolicy, RefusesWhatTheSystemsRefuse) {
  for (const char* bad : {
           R"({"temporal": {"initialInterval": "1m"}})",  // no maximumAttempts
           R"({"temporal": {"maximumAttempts": 0}})",     // unlimited
           R"({"temporal": {"maximumAttempts": 3, "initialInterval": "1h",
                            "maximumInterval": "1m"}})",  // cap below the start
           R"({"stepfunctions": [{"MaxAttempts": 1}, {"MaxAttempts": 2}]})",
           R"({"stepfunctions": {"JitterStrategy": "HALF"}})", R"({"sidekiq": {"retry": "yes"}})",
           R"({"celery": {"max_retries": null}})",
           R"({"celery": {"retry_backoff": true, "retry_jitter": 1}})",
           R"({"k8s": {"kind": "CronJob", "spec": {}}})", R"({"k8s": {"backoffLimit": -1}})",
           R"({"bullmq": {"backoff": {"type": "custom", "delay": 1}}})",
           R"({"temporal": {"maximumAttempts": 2}, "celery": {}})",  // two systems
           R"({"celery": {}, "max": 2})",                            // a stray key beside
           R"({"max": 2, "backoff_sec": 31622401})",                 // a second past 366 days
           R"({"max": 2, "backoff_sec": 9223372036854775})",         // ms would overflow
       }) {
    bool judged = false;
    const WitnessPolicy p = read_policy(json::parse(bad), {}, &judged);
    EXPECT_FALSE(p.valid) << bad;
  }
}

TEST(WitnessPolicy, TheSiblingsNarrowClassesAndChooseTheBudget) {
  bool judged = false;
  const WitnessPolicy p = read_policy(
      json::parse(R"({"celery": {}, "retryable_classes": ["timeout"], "budget": "per_episode"})"),
      {}, &judged);
  ASSERT_TRUE(p.valid) << p.why_invalid;
  EXPECT_FALSE(p.per_slot);
  EXPECT_TRUE(p.retries_class("timeout"));
  EXPECT_FALSE(p.retries_class("provider_5xx"));
}

TEST(WitnessPolicy, ACorrectCoreOfEveryFormPassesWithNothingUnchecked) {
  for (const FormCase& c : form_cases()) {
    const ScenarioRunResult r = run_core(outage_world(wrapped(c)));
    EXPECT_TRUE(r.all_violations.empty()) << c.system << "\n" << names(r.all_violations);
    EXPECT_TRUE(r.tallies["unchecked"].empty()) << c.system << " " << r.tallies["unchecked"];
    EXPECT_EQ(r.tallies["jobs"]["sync"]["retries"], c.retries) << c.system;
  }
}

TEST(WitnessPolicy, AWrongConversionOfEverySystemFiresRetriesBounded) {
  for (const FormCase& c : form_cases()) {
    const Scenario written = outage_world(wrapped(c));
    const ScenarioRunResult lying = run_core(outage_world(json::parse(c.wrong)));
    ASSERT_TRUE(lying.all_violations.empty()) << c.system << " (the wrong policy, as written)\n"
                                              << names(lying.all_violations);
    const std::vector<Violation> found = judged_as(written, lying);
    const bool fired = std::any_of(found.begin(), found.end(), [](const Violation& v) {
      return v.invariant == "retries_bounded";
    });
    EXPECT_TRUE(fired) << c.system << ": " << names(found);
    // The right conversion's own run, judged the same way, is clean.
    const ScenarioRunResult right = run_core(written);
    EXPECT_TRUE(judged_as(written, right).empty()) << c.system;
  }
}

}  // namespace
}  // namespace rehearse::sim
