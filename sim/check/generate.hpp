// Random jobs and whole generated worlds for `rehearse check` (docs/check.md).
//
// Two things a seed can vary beyond the swarm's faults (sim/check/swarm.hpp):
//
// - `--random-jobs` (randomize_jobs): the base scenario's jobs keep their ids,
//   kinds and what they name that the world declares (reconcile items), and
//   get a new schedule, retry policy and kind-specific keys (a group job's
//   tasks and their model calls, a fetch job's requests, a reconcile job's
//   batch size, the targets and calls a job uses).
// - no scenario at all (generate_world): a whole world drawn from the seed,
//   services, jobs (a group job and a reconcile job some of the time) and a
//   span, plus a few faults placed where the bundled scenarios never reach
//   (an outage that recovers and comes back, a token whose lifetime ends near
//   a request, a revocation right after that reissue, the messenger refusing
//   a delivery). One world in four reads its jobs' schedules in time zones,
//   half of those starting just before a daylight-saving gap or fold. The
//   swarm then adds its faults on top (derive_world_case).
//
// Job kinds and their keys come from the scenario loader's table
// (scenario_known_keys(): "job" and "job_<kind>"); each key of a kind is
// drawn by one drawer per key name (job_key_drawable says which exist, and a
// test holds that every key of every kind has one). Backoff types, budget
// scopes and failure classes are the core's enumerations, and a backoff type
// is offered to a policy form only when the core's parser accepts it there.
//
// Every draw comes from sim::Rng seeded with the case seed and derived with a
// stream name of its own (kRandomJobsStream, kWorldStream), never shared
// with the swarm's stream or the run's generator: the same seed gives the
// same document, byte for byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/check/swarm.hpp"

namespace rehearse::sim {

inline constexpr const char* kRandomJobsStream = "rehearse/check/random-jobs";
inline constexpr const char* kWorldStream = "rehearse/check/world";
// The name of every generated world (its emitted files: world.seed-<S>.json).
inline constexpr const char* kGeneratedWorldName = "world";

// The base document with its jobs randomized for `seed` (ids, kinds and
// reconcile items kept). An error when the base does not load or the result
// does not (the loader's message).
Result<nlohmann::json> randomize_jobs(const nlohmann::json& base_scenario, std::uint64_t seed);

// A whole scenario document drawn from `seed` (before the swarm's faults);
// it always loads with the real loader.
nlohmann::json generate_world(std::uint64_t seed);

// generate_world, then derive_case over it with the same seed: the case
// `rehearse check` runs without a scenario.
Result<nlohmann::json> derive_world_case(std::uint64_t seed, const SwarmOptions& options,
                                         SwarmChoice* choice = nullptr);

// Whether randomize_jobs / generate_world can draw the job key `name` (a
// key of some "job_<kind>" entry of scenario_known_keys()).
bool job_key_drawable(std::string_view name);

}  // namespace rehearse::sim
