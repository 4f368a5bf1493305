// The table of other systems' retry policies (docs/policies.md has each
// formula with its source). Every converter (policy_<system>.cpp) reads the
// system's keys strictly, applies the system's defaults for what is absent,
// and fills a Backoff whose delay before retry n is the system's own.
#include "model/policy_forms.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse {

using nlohmann::json;
using namespace policy_json;

namespace {

using namespace policy_forms_detail;

const std::array<PolicySystem, 6> kSystems{{
    {"bullmq", "BullMQ", PolicyForm::bullmq, "attempts, backoff {type, delay, jitter}",
     "attempts counts every run, the first included: attempts - 1 retries", true,
     "fixed: delay; exponential: round(2^(n-1) * delay) ms; jitter j: "
     "floor(rand * d * j + d * (1 - j)); no backoff: at once",
     "docs.bullmq.io guide 'Retrying failing jobs'; bullmq src/classes/backoffs.ts",
     &convert_bullmq},
    {"temporal", "Temporal", PolicyForm::temporal,
     "initialInterval, backoffCoefficient, maximumInterval, maximumAttempts",
     "maximumAttempts counts every run, the first included (1: no retries; 0: unlimited)", true,
     "min(initialInterval * backoffCoefficient^(n-1), maximumInterval); defaults 1s, 2, "
     "100 x initialInterval",
     "docs.temporal.io 'What is a Temporal Retry Policy?'; temporal api RetryPolicy",
     &convert_temporal},
    {"stepfunctions", "AWS Step Functions", PolicyForm::stepfunctions,
     "IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy",
     "MaxAttempts counts retries only (0: never retry)", false,
     "min(IntervalSeconds * BackoffRate^(n-1), MaxDelaySeconds) s; FULL jitter: a draw from "
     "[0, d]; defaults 1, 3, 2.0",
     "AWS Step Functions developer guide 'Handling errors' (Retry fields); CDK JitterType",
     &convert_stepfunctions},
    {"sidekiq", "Sidekiq", PolicyForm::sidekiq, "retry",
     "retry counts retries only (true: 25; false or 0: none)", false,
     "(count ** 4) + 15 + rand(10) * (count + 1) s, count = n - 1",
     "Sidekiq wiki 'Error Handling' (automatic job retry); sidekiq lib/sidekiq/job_retry.rb",
     &convert_sidekiq},
    {"celery", "Celery", PolicyForm::celery,
     "max_retries, retry_backoff, retry_backoff_max, retry_jitter, default_retry_delay",
     "max_retries counts retries only (default 3)", false,
     "retry_backoff f: min(f * 2^(n-1), retry_backoff_max) s, with retry_jitter a draw from "
     "[0, d]; defaults max 600 s, jitter on; without retry_backoff: default_retry_delay (180 s)",
     "Celery docs 'Tasks' (automatic retry for known exceptions); celery.utils.time "
     "get_exponential_backoff_interval",
     &convert_celery},
    {"k8s", "Kubernetes Job", PolicyForm::k8s, "backoffLimit",
     "backoffLimit counts retries after the first pod (default 6)", false,
     "min(10 s * 2^(n-1), 6 min)",
     "kubernetes.io docs 'Jobs', section 'Pod backoff failure policy'", &convert_k8s},
}};

}  // namespace

std::span<const PolicySystem> policy_systems() { return kSystems; }

const PolicySystem* find_policy_system(std::string_view name) {
  for (const PolicySystem& s : kSystems) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string policy_system_names() {
  std::string out;
  for (const PolicySystem& s : kSystems)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", s.name);
  return out;
}

Result<SystemPolicy> convert_system_policy(std::string_view system, const json& value) {
  const PolicySystem* s = find_policy_system(system);
  if (s == nullptr) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("unknown system \"{}\": expected one of {}", system,
                                  policy_system_names()));
  }
  auto converted = s->convert(value);
  if (!converted.ok()) return converted;
  converted->system = s;
  return converted;
}

Result<json> select_stepfunctions_state(const json& definition, std::string_view state) {
  return policy_forms_detail::select_state(definition, state);
}

namespace {
std::string count_surprise(const PolicySystem& s, int retries, DurationMs deadline_ms) {
  if (retries == kRetriesUnlimited) {
    return fmt::format(
        "{}'s count has no limit here: the retries go on until the deadline {} "
        "after the slot, however many that makes",
        s.title, format_duration(deadline_ms));
  }
  if (s.count_includes_first_run) {
    return fmt::format("{}'s count includes the first run: attempts {} means {} retr{}", s.title,
                       retries + 1, retries, retries == 1 ? "y" : "ies");
  }
  return fmt::format("{}'s count is of retries only: {} retr{} means {} runs in all", s.title,
                     retries, retries == 1 ? "y" : "ies", retries + 1);
}
}  // namespace

std::vector<std::string> policy_surprises(const SystemPolicy& converted, const RetryPlan& plan) {
  std::vector<std::string> out;
  const Backoff& b = converted.policy.backoff;
  if (converted.system != nullptr && converted.policy.rules.empty()) {
    out.push_back(count_surprise(*converted.system, plan.max_retries, plan.deadline_ms));
  }
  if (!converted.policy.rules.empty()) {
    out.push_back(
        fmt::format("each of the {} retriers counts its own retries: a failure of "
                    "another class starts its retrier at retry 1, and the chain ends "
                    "when the failing class's retrier is spent, whatever the others "
                    "have left (at most {} retries in all)",
                    converted.policy.rules.size(), plan.max_retries));
    return out;  // the curve's notes are each retrier's own (policy explain lists them)
  }
  if (plan.max_retries > 0 && b.delay_ms == 0 && b.kind == BackoffKind::fixed) {
    out.push_back(
        "no delay: every retry runs at once, so a provider outage of even a few "
        "seconds exhausts the retries");
  }
  if (plan.stop == RetryPlan::Stop::deadline && plan.max_retries != kRetriesUnlimited) {
    out.push_back(
        fmt::format("the deadline {} ends the chain after {} of the {} retries the "
                    "count allows",
                    format_duration(plan.deadline_ms), plan.planned, plan.max_retries));
  }
  if (plan.capped_from > 0) {
    out.push_back(fmt::format(
        "the maximum delay {} flattens the curve from retry {}: {} retries wait {} each instead "
        "of growing",
        format_duration(b.max_delay_ms), plan.capped_from, plan.planned - plan.capped_from + 1,
        format_duration(b.max_delay_ms)));
  }
  if (plan.shortest_window_ms < plan.recovery_window_ms) {
    out.push_back(fmt::format("jitter can shorten the recovery window from {} to {}",
                              format_duration(plan.recovery_window_ms),
                              format_duration(plan.shortest_window_ms)));
  }
  if (plan.longest_window_ms > plan.recovery_window_ms) {
    out.push_back(fmt::format("jitter can lengthen the recovery window from {} to {}",
                              format_duration(plan.recovery_window_ms),
                              format_duration(plan.longest_window_ms)));
  }
  return out;
}

}  // namespace rehearse
