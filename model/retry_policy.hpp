// Retry policies (docs/semantics.md §2): parsing of the three explicit forms,
// BullMQ-exact backoff, the retry plan shown by `rehearse policy explain`, and
// the side-effect check.
//
// A policy is one of:
//   per-job  {"max", "backoff_sec" | "backoff": {"type", "delay"},
//             "retryable_classes"?, "reason"?, "budget"?}            (004)
//   BullMQ   {"attempts", "backoff": number | {"type", "delay", "jitter"?},
//             "retryable_classes"?, "budget"?, "reason"?}            (001)
//   "auto"   chosen from the job's effective schedule                 (001)
// There is no global fallback: anything else is an Error naming the JSON
// pointer inside the policy and what was expected. See docs/retry.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/random.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse {

enum class PolicyForm : unsigned char { per_job, bullmq, auto_schedule };
enum class BackoffKind : unsigned char { fixed, exponential };
enum class BudgetScope : unsigned char { per_slot, per_episode };

// "per_job", "bullmq", "auto".
const char* to_string(PolicyForm form) noexcept;
const char* to_string(BackoffKind kind) noexcept;
const char* to_string(BudgetScope scope) noexcept;
std::optional<BackoffKind> parse_backoff_kind(std::string_view name) noexcept;
std::optional<BudgetScope> parse_budget_scope(std::string_view name) noexcept;

// Limits on what a file may ask for (everything has a limit): more retries
// than this is a typo, and a single delay longer than a leap year is too.
inline constexpr int kRetryCountMax = 1000;
inline constexpr DurationMs kBackoffDelayMaxMs = 366 * kDayMs;
// Computed backoffs saturate here (2^(n-1) * delay grows without bound);
// adding it to any supported instant cannot overflow int64.
inline constexpr DurationMs kBackoffSaturationMs = kMaxInstantMs;

struct Backoff {
  BackoffKind kind = BackoffKind::fixed;
  DurationMs delay_ms = 0;
  double jitter = 0.0;  // BullMQ's jitter, in [0, 1]; 0 = none

  bool operator==(const Backoff&) const = default;
};

struct RetryPolicy {
  PolicyForm form = PolicyForm::per_job;
  // Accelerated retries after a failure: per-job `max`, BullMQ `attempts - 1`.
  int max_retries = 0;
  Backoff backoff;
  FailureClassSet retryable_classes;
  BudgetScope budget = BudgetScope::per_episode;
  std::string reason;
  // "auto" only: the effective schedule it was chosen from.
  std::string schedule_expression;
  bool low_frequency = false;

  bool operator==(const RetryPolicy&) const = default;
};

// What "auto" needs to know about the job's effective schedule (docs/semantics.md §3).
struct ScheduleFacts {
  std::string expression;
  bool low_frequency = false;
};
// Inline so that code which never meets "auto" does not need cron.cpp linked.
inline ScheduleFacts schedule_facts(const CronSchedule& schedule) {
  return ScheduleFacts{schedule.source(), schedule.is_low_frequency()};
}

// Parses a policy in any of the three forms, strictly (fail closed): unknown
// keys, unknown class names or backoff types, wrong JSON types, negative or
// non-integer numbers, jitter outside [0, 1], keys of both forms mixed, a
// policy that never retries without a `reason` (per-job form), and a missing
// or empty policy are errors. `schedule` is required for "auto" only.
Result<RetryPolicy> parse_retry_policy(const nlohmann::json& policy,
                                       const std::optional<ScheduleFacts>& schedule = std::nullopt);

// The "auto" policy for a schedule: low-frequency -> attempts 4, exponential
// 30m; otherwise attempts 2, exponential 60s; every class; per_slot.
RetryPolicy auto_retry_policy(const ScheduleFacts& schedule);

// True when some failure can be retried at all.
bool policy_retries(const RetryPolicy& policy) noexcept;

// JavaScript's Math.round: halves round towards +infinity (-2.5 -> -2).
double js_math_round(double x) noexcept;

// BullMQ 5's delay before retry n (n >= 1: the n-th consecutive failure of
// this budget), without jitter:
//   fixed        delay
//   exponential  Math.round(2^(n-1) * delay)
// saturating at kBackoffSaturationMs.
DurationMs backoff_delay_ms(const Backoff& backoff, int n);
// With BullMQ's jitter when backoff.jitter > 0 (one draw from `random`):
//   Math.floor(rand * max * jitter + max * (1 - jitter)), max = the delay above.
// `random` may be null only when the backoff has no jitter.
DurationMs backoff_delay_ms(const Backoff& backoff, int n, RandomSource* random);

// The plan after one failure, without jitter (`rehearse policy explain`).
struct RetryPlan {
  PolicyForm form = PolicyForm::per_job;
  int max_retries = 0;
  std::vector<DurationMs> delays_ms;   // delay before retry 1..max
  std::vector<DurationMs> offsets_ms;  // cumulative: retry k runs offsets_ms[k-1] after the failure
  DurationMs recovery_window_ms = 0;   // the last offset (0 without retries)
  FailureClassSet retryable_classes;
  BudgetScope budget = BudgetScope::per_episode;
  Backoff backoff;
};
RetryPlan plan_retries(const RetryPolicy& policy);

nlohmann::json to_json(const RetryPolicy& policy);
nlohmann::json to_json(const RetryPlan& plan);
// One line for the status view: "per_job max=2 backoff=fixed 5m classes=timeout,network
// budget=per_episode".
std::string describe(const RetryPolicy& policy);

// Side effects (004): what a re-run does outside.
enum class SideEffectKind : unsigned char { none, draft, publish };
const char* to_string(SideEffectKind kind) noexcept;
std::optional<SideEffectKind> parse_side_effect_kind(std::string_view name) noexcept;

struct SideEffectDeclaration {
  SideEffectKind kind = SideEffectKind::none;
  std::string idempotency_key;  // empty: none declared
  std::string reason;           // job-level reason; the policy's reason also counts
};

// A `publish` job whose policy retries must say why a re-run is safe (an
// idempotency key, or a reason); otherwise this returns the warning text.
std::optional<std::string> side_effect_warning(const SideEffectDeclaration& declaration,
                                               const RetryPolicy& policy);

}  // namespace rehearse
