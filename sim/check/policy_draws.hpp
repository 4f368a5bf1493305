// Retry policies drawn for random jobs and generated worlds (docs/check.md):
// the core's own forms (sim/check/generate.cpp draws them with the job), and
// then, from a stream of their own, the same jobs' policies written as other
// systems write them, so every form a scenario can hold is searched: one row
// per system (Temporal, Step Functions, Sidekiq, Celery, Kubernetes, BullMQ
// with jitter) plus the core's forms with a cap (max_delay). Every drawn
// policy is one the core's parser accepts, so a job never fails closed by
// accident of the draw.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "sim/kernel/rng.hpp"

namespace rehearse::sim {

inline constexpr const char* kPolicyFormsStream = "rehearse/check/policy-forms";
inline constexpr const char* kPolicyOmissionStream = "rehearse/check/policy-omission";
inline constexpr const char* kRetryAfterStream = "rehearse/check/retry-after";
// Jitter shapes by name on the core's BullMQ form (decorrelated, equal, full).
inline constexpr const char* kJitterShapeStream = "rehearse/check/jitter-shape";

// Each job of `jobs` (a scenario's "jobs" array) keeps its drawn policy half
// the time; otherwise it gets a policy in a form drawn from the table, with
// `retryable_classes` or `budget` beside it some of the time. One job in 25
// gets a policy the core refuses instead (a realistic omission, which must
// fail closed and be announced). The core's BullMQ form on an exponential
// curve draws a named jitter shape some of the time (decorrelated, equal,
// full).
void vary_policy_forms(nlohmann::json& jobs, std::uint64_t seed);

// One policy of the form named `form` ("temporal", ..., "capped"), drawn
// from `rng`; a test draws each form directly.
nlohmann::json draw_policy_in_form(const char* form, Rng& rng);

// The form names of the table, in order.
const std::vector<const char*>& drawn_policy_forms();

}  // namespace rehearse::sim
