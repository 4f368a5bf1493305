// The monitors' own reading of other systems' retry policies (BullMQ,
// Temporal, AWS Step Functions, Sidekiq, Celery, Kubernetes Jobs), written
// from each system's documented meaning of its count and its delay formula
// (docs/policies.md, docs/monitors.md "The policy table"), one row per
// system. Independent of model/policy_forms on purpose: a wrong conversion
// in the core must meet a reading that does not share it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>

#include "model/time.hpp"
#include "sim/monitors/witness_policy.hpp"

namespace rehearse::sim {

struct WitnessSystem {
  std::string_view name;  // the scenario's key: "temporal"
  // The system's policy object: retries, delays, validity (classes and
  // budget are the wrapper's: every class, per slot, unless it says more).
  WitnessPolicy (*read)(const nlohmann::json& value);
};

std::span<const WitnessSystem> witness_systems();
const WitnessSystem* find_witness_system(std::string_view name);

// The longest delay any form may give (docs/retry.md: at most 366 days).
inline constexpr DurationMs kWitnessDelayMaxMs = 366 * kDayMs;

// A delay as policies write it: integer milliseconds or a duration string,
// from 0 to kWitnessDelayMaxMs; nullopt otherwise.
std::optional<DurationMs> read_witness_delay(const nlohmann::json& value);

}  // namespace rehearse::sim
