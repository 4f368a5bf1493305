// Private header of the generators (sim/check/generate*.cpp): the world a job is
// drawn in, the draws the whole-world generator shares, and the placed faults.
#pragma once

#include "sim/check/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "model/agent_roles.hpp"
#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"
#include "model/time_zone.hpp"
#include "sim/check/draw.hpp"
#include "sim/check/policy_draws.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/job_kind_table.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim::generate_detail {

using nlohmann::json;

// What a drawn job may name: the services, targets and issues declared.
using JobWorld = JobDrawWorld;

std::string draw_schedule(Rng& rng, TimeMs start_ms);
json draw_retry_policy(Rng& rng);
const std::vector<std::string>& kind_keys(JobKind kind);
bool draw_kind_keys(JobKind kind, Rng& rng, const JobWorld& w, json& job);

struct Placed {
  const Scenario& world;
  Rng& rng;
  json& faults;
};

void place_relapse(Placed& p);
void place_token_edge(Placed& p, json& brokerage);
void place_refusal(Placed& p);
json base_world(std::uint64_t seed, Rng& rng);
void add_missing_idempotency_keys(json& doc);
void place_permanent_refusal(Placed& p);
void place_takeover(Placed& p);
void place_long_orchestrator_outage(Placed& p);

}  // namespace rehearse::sim::generate_detail
