// What the monitors believe a job's retry policy allows: their own reading
// of `retry_policy` in every form a scenario can write (docs/monitors.md "The
// policy table"), never model/retry_policy's parser nor model/policy_forms'
// conversions. The six systems' forms are read by witness_systems.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/time.hpp"

namespace rehearse::sim {

// The delay before retry n (>= 1), as the monitors compute it: a curve, an
// optional cap on it, and a jitter that widens it into an interval.
struct WitnessDelays {
  enum class Curve : unsigned char {
    fixed,        // delay
    exponential,  // round(delay * factor^(n-1))
    linear,       // delay * n
    sidekiq,      // 15 s + (n-1)^4 s (Sidekiq's count ** 4 + 15, count = n - 1)
    block,        // a sidekiq_retry_in block at count = n - 1 (s), or `sidekiq` when <= 0
  };
  enum class Jitter : unsigned char {
    none,
    proportional,  // BullMQ's j: [floor(d * (1 - j)), d]
    full,          // Step Functions FULL, Celery retry_jitter: [0, d]
    sidekiq,       // + rand(10) * n s: [d, d + 9 n s]
    // Brooker's decorrelated: [delay, min(cap, 3 * previous)], the first from
    // [delay, 3 * delay]; over any history retry n is within
    // [min(delay, cap), min(cap, delay * 3^n)] (the curve is not used).
    decorrelated,
  };
  Curve curve = Curve::fixed;
  double factor = 2.0;
  DurationMs delay_ms = 0;
  std::optional<DurationMs> cap_ms;  // applies to the curve, before jitter
  Jitter jitter = Jitter::none;
  double proportion = 0.0;  // Jitter::proportional only
  nlohmann::json block;     // Curve::block: the block's arithmetic (["+", a, b], "count", 5)

  // The curve's delay for retry n, capped, before jitter (saturating).
  DurationMs base_ms(int n) const;
  // Decorrelated jitter: the greatest delay of retry n over any history, and
  // the greatest after a previous delay of previous_ms.
  DurationMs decorrelated_bound_ms(int n) const;
  DurationMs decorrelated_after_ms(DurationMs previous_ms) const;
};

// One of several retriers (Step Functions): the classes it takes (those no
// earlier retrier took), its own count of retries and its own curve.
struct WitnessRule {
  std::set<std::string> classes;
  int retries_max = 0;
  WitnessDelays delays;
};

// A count limit of none (Temporal's maximumAttempts 0, Celery's None, the
// per-job form's `until` alone): above every count, so comparisons hold.
inline constexpr int kWitnessUnlimited = 2147483647;

struct WitnessPolicy {
  bool valid = false;
  std::string why_invalid;
  // Which form the policy was written in: "per_job", "bullmq", "auto", or a
  // system's name ("temporal", "stepfunctions", "sidekiq", "celery", "k8s").
  std::string form;
  // kWitnessUnlimited: no count, the deadline ends the chain.
  int retries_max = 0;
  // A retry may come due no later than slot + deadline_ms (0: no deadline).
  DurationMs deadline_ms = 0;
  bool per_slot = false;
  // "retry_after": "honor": a refusal's Retry-After, as the world sent it,
  // is a floor under the delay of the retry it causes.
  bool honors_retry_after = false;
  // "retry_budget": retries as a share of the attempts of every job naming
  // it, per worker process (the monitors' reading; empty name: none).
  struct Budget {
    std::string name;
    int percent = 20;
    DurationMs window_ms = 10'000;
    int min_retries = 3;
  } budget;
  bool all_classes = false;
  std::set<std::string> classes;
  WitnessDelays delays;
  // Several retriers: a failure goes to the first whose classes hold its
  // class, counted apart; `classes` is then their union.
  std::vector<WitnessRule> rules;

  bool retries_class(const std::string& failure_class) const;
  // The retrier a class goes to, or nullptr (none, or no rules).
  const WitnessRule* rule_of(const std::string& failure_class) const;
  // The delay the policy gives retry n (>= 1) before jitter.
  DurationMs base_delay_ms(int n) const { return delays.base_ms(n); }
  // The least delay before retry n (>= 1) the policy allows (jitter's floor
  // included, 1 ms slack).
  DurationMs min_delay_ms(int n) const;
  // The largest delay before retry n (>= 1): the base delay, or above it by
  // Sidekiq's additive jitter; 1 ms slack.
  DurationMs max_delay_ms(int n) const;
  // Whether a retry due at `due` (the core's clock) is past the deadline of
  // the chain of `slot`.
  bool past_deadline(TimeMs slot, TimeMs due) const {
    return deadline_ms > 0 && due > slot + deadline_ms;
  }
};

WitnessPolicy invalid_witness_policy(std::string why);

// The monitors' own evaluation of a sidekiq_retry_in block's arithmetic at
// `count` (Ruby's integer semantics); nullopt where Ruby would raise.
std::optional<std::int64_t> eval_block(const nlohmann::json& ast, std::int64_t count);

// The classes, budget, reason and retry_after a policy of any form may carry beside its
// retry keys; fills `p`. An error, or "".
std::string read_classes_and_budget(const nlohmann::json& j, WitnessPolicy& p);

// The monitors' reading of a job's `retry_policy` (absent: invalid).
// `low_frequency` is empty when the effective schedule is unknown (an
// "auto" policy cannot then be read). `*judged` is false when the monitors do
// not judge the job's retries (such an "auto").
WitnessPolicy read_policy(const std::optional<nlohmann::json>& written,
                          std::optional<bool> low_frequency, bool* judged);

}  // namespace rehearse::sim
