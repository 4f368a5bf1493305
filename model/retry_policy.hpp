// Retry policies (docs/semantics.md §2): parsing of the three explicit forms,
// BullMQ-exact backoff, the retry plan shown by `rehearse policy explain`, and
// the side-effect check.
//
// A policy is one of:
//   per-job  {"max", "backoff_sec" | "backoff": {"type", "delay"},
//             "retryable_classes"?, "reason"?, "budget"?, "retry_after"?,
//             "retry_budget"?}                                        (004)
//   BullMQ   {"attempts", "backoff": number | {"type", "delay", "jitter"?},
//             "retryable_classes"?, "budget"?, "reason"?, "retry_after"?,
//             "retry_budget"?}                                        (001)
//   "auto"   chosen from the job's effective schedule                 (001)
// There is no global fallback: anything else is an Error naming the JSON
// pointer inside the policy and what was expected. See docs/retry.md.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/random.hpp"
#include "model/result.hpp"
#include "model/retry_budget.hpp"
#include "model/time.hpp"

namespace rehearse {

// per_job, bullmq and auto are rehearse's own forms; the others are a policy as
// another retry system writes it, converted by model/policy_forms.hpp.
enum class PolicyForm : unsigned char {
  per_job,
  bullmq,
  auto_schedule,
  temporal,
  stepfunctions,
  sidekiq,
  celery,
  k8s
};
// fixed: d; exponential: d * factor^(n-1); linear: d * n;
// polynomial: d + unit * (n-1)^exponent (Sidekiq's count ** 4 + 15);
// expression: a sidekiq_retry_in block's value at count = n - 1, in seconds,
// or d + unit * (n-1)^exponent when it is not above 0 (Sidekiq's fallback).
enum class BackoffKind : unsigned char { fixed, exponential, linear, polynomial, expression };
enum class BudgetScope : unsigned char { per_slot, per_episode };

// "per_job", "bullmq", "auto", "temporal", "stepfunctions", "sidekiq", "celery", "k8s".
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
// A count limit of "none": the policy retries until its deadline (Temporal's
// maximumAttempts 0, Celery's max_retries None). Counts compare below it, so
// the budget arithmetic needs no special case; printing says "unlimited".
inline constexpr int kRetriesUnlimited = std::numeric_limits<int>::max();
// What `policy explain` lists of an unlimited plan at most.
inline constexpr int kPlanRetriesMax = 1000;

// A delay of 0 (any kind) retries at once (BullMQ without a backoff).
// Jitter is one of four shapes (at most one is set):
//   jitter in (0, 1]    BullMQ: a draw from [d * (1 - jitter), d]
//   full_jitter         Step Functions FULL, Celery retry_jitter: a draw from [0, d]
//   additive_steps > 0  Sidekiq: d + rand(additive_steps) * n * unit
//   decorrelated        Brooker's "decorrelated jitter" (AWS Architecture Blog,
//                       "Exponential Backoff and Jitter"): min(cap, a draw from
//                       [delay, 3 * the previous delay]), the first from
//                       [delay, 3 * delay]; the curve's formula is not used
// where d is the capped delay before retry n.
struct Backoff {
  BackoffKind kind = BackoffKind::fixed;
  DurationMs delay_ms = 0;
  double jitter = 0.0;  // BullMQ's jitter, in [0, 1]; 0 = none
  double factor = 2.0;  // exponential: growth per retry (BullMQ 2; Temporal backoffCoefficient)
  DurationMs max_delay_ms = 0;     // cap on each delay before jitter; 0 = none
  int exponent = 4;                // polynomial
  DurationMs unit_ms = kSecondMs;  // polynomial and additive jitter
  bool full_jitter = false;
  int additive_steps = 0;
  bool decorrelated = false;
  // expression: the block's arithmetic in `count`, as model/ruby_snippet's
  // AST in compact JSON text.
  std::string expression = {};

  bool operator==(const Backoff&) const = default;
};

// One of several retriers (Step Functions' Retry array): the classes it
// takes (those of its error names that no earlier retrier took), its own
// count of retries and its own curve. Each counts only the retries it made.
struct RetryRule {
  FailureClassSet classes;
  int max_retries = 0;
  Backoff backoff;
  std::vector<std::string> error_names = {};  // as written, for explain and the docs

  bool operator==(const RetryRule&) const = default;
};

struct RetryPolicy {
  PolicyForm form = PolicyForm::per_job;
  // Accelerated retries after a failure: per-job `max`, BullMQ `attempts - 1`;
  // kRetriesUnlimited with a deadline.
  int max_retries = 0;
  // A retry runs only when it comes due at or before slot + deadline_ms (the
  // regular slot its chain belongs to): Temporal's scheduleToCloseTimeout,
  // Celery's expires, a Job's activeDeadlineSeconds, the per-job `until`.
  // 0: no deadline. Required when max_retries is kRetriesUnlimited.
  DurationMs deadline_ms = 0;
  Backoff backoff;
  FailureClassSet retryable_classes;
  BudgetScope budget = BudgetScope::per_episode;
  std::string reason;
  // "retry_after": "honor": a refusal's Retry-After (in seconds) lengthens the
  // delay before the retry it causes to at least that long; the count, the
  // deadline and the classes decide as before. Off by default: BullMQ,
  // Temporal, Sidekiq, Celery, Step Functions and Kubernetes ignore it.
  bool honor_retry_after = false;
  // "retry_budget": retries as a share of the attempts of every job naming
  // the same budget (model/retry_budget.hpp); an empty name: none.
  RetryBudget retry_budget = {};
  // Several retriers (at least two; per_slot only): a failure takes the
  // first rule whose classes hold its class, and that rule's count and curve
  // decide. max_retries, backoff and retryable_classes then mirror the whole:
  // the first rule's curve, the sum of the counts, the union of the classes.
  std::vector<RetryRule> rules;
  // "auto" only: the effective schedule it was chosen from.
  std::string schedule_expression;
  bool low_frequency = false;

  bool operator==(const RetryPolicy&) const = default;
};

// What "auto" needs to know about the job's effective schedule (docs/semantics.md §3).
struct ScheduleFacts {
  std::string expression = {};
  bool low_frequency = false;
};
// Inline so that code which never meets "auto" does not need model/cron_*.cpp linked.
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
inline bool unlimited_retries(const RetryPolicy& policy) noexcept {
  return policy.max_retries == kRetriesUnlimited;
}
// "3", or "unlimited".
std::string format_retry_limit(int limit);
// An unlimited count needs a deadline and a first delay above 0 (retrying at
// once without a count would spin until the deadline); "" when it holds.
std::string unlimited_policy_problem(const RetryPolicy& policy);

// JavaScript's Math.round: halves round towards +infinity (-2.5 -> -2).
double js_math_round(double x) noexcept;

// The delay before retry n (n >= 1: the n-th consecutive failure of this
// budget) by the formula alone, without cap or jitter:
//   fixed        delay
//   exponential  Math.round(factor^(n-1) * delay)   (BullMQ 5 exactly for factor 2)
//   linear       delay * n
//   polynomial   delay + unit * (n-1)^exponent
// saturating at kBackoffSaturationMs.
DurationMs formula_delay_ms(const Backoff& backoff, int n);
// The formula's delay, capped at max_delay_ms when one is set (no jitter).
DurationMs backoff_delay_ms(const Backoff& backoff, int n);
// With the backoff's jitter, one draw from `random` (see Backoff):
//   BullMQ    Math.floor(rand * d * jitter + d * (1 - jitter))
//   full      Math.floor(rand * (d + 1))
//   additive  d + Math.floor(rand * steps) * n * unit
// `random` may be null only when the backoff has no jitter.
DurationMs backoff_delay_ms(const Backoff& backoff, int n, RandomSource* random);
// Decorrelated jitter draws from the delay before the previous retry of the
// chain (`previous_ms`; 0: none yet, the base delay stands in). The other
// shapes ignore it.
DurationMs backoff_delay_ms(const Backoff& backoff, int n, RandomSource* random,
                            DurationMs previous_ms);
// Decorrelated jitter's greatest delay after a previous delay of previous_ms
// (0: none): min(cap, 3 * max(previous, delay)).
DurationMs decorrelated_ceiling_ms(const Backoff& backoff, DurationMs previous_ms);
// The least and the greatest delay jitter can give before retry n.
DurationMs min_backoff_delay_ms(const Backoff& backoff, int n);
DurationMs max_backoff_delay_ms(const Backoff& backoff, int n);
bool has_jitter(const Backoff& backoff) noexcept;

// The plan after one failure, without jitter (`rehearse policy explain`).
struct RetryPlan {
  PolicyForm form = PolicyForm::per_job;
  int max_retries = 0;
  DurationMs deadline_ms = 0;  // the policy's; 0: none
  // The count of retries the plan holds, and why it stops there: the count
  // limit, the deadline (the next retry would come due after it, the failure
  // taken at the slot), or kPlanRetriesMax (an unlimited plan listed in part).
  int planned = 0;
  enum class Stop : unsigned char { count, deadline, listed } stop = Stop::count;
  std::vector<DurationMs> delays_ms;   // delay before retry 1..planned
  std::vector<DurationMs> offsets_ms;  // cumulative: retry k runs offsets_ms[k-1] after the failure
  DurationMs recovery_window_ms = 0;   // the last offset (0 without retries)
  // With jitter, the window's range (both equal recovery_window_ms without).
  DurationMs shortest_window_ms = 0;
  DurationMs longest_window_ms = 0;
  int capped_from = 0;  // the first retry whose delay the cap shortened (0: none)
  FailureClassSet retryable_classes;
  BudgetScope budget = BudgetScope::per_episode;
  Backoff backoff;
  // The delays are the curve's; a refusal's Retry-After may lengthen each.
  bool honor_retry_after = false;
  RetryBudget retry_budget = {};  // a shared budget may cut the plan short
};
RetryPlan plan_retries(const RetryPolicy& policy);
// The plan of one rule of a policy with several (its count, its curve, the
// policy's deadline).
RetryPlan plan_rule(const RetryPolicy& policy, std::size_t rule);
// The rule a failure of class `c` takes; nullopt when none does.
std::optional<std::size_t> rule_for(const RetryPolicy& policy, FailureClass c);

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
