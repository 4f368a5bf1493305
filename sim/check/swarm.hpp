// Swarm derivation for `rehearse check` (docs/check.md): one seed turns a
// scenario document into another ordinary scenario document, the same world
// under a different, randomly drawn set of faults.
//
// Swarm testing (Groce et al., ISSTA 2012): for each seed a random subset of
// the fault kinds is switched on (each applicable kind with probability 1/2),
// so that one seed's world is hit hard by a few kinds rather than lightly by
// all of them. Each kind that is on gets 1..3 instances with times inside the
// span, durations, and key values drawn GENERICALLY from the table of fault
// kinds (sim/world/fault_kinds.hpp): one generator per FaultKeyType, ranges and
// allowed names from the key's description, so a kind is described once and
// a new kind is searched without touching this file.
//
// The result is a plain JSON scenario: it loads with the real loader, can be
// written to a file (`--emit`), shrunk at the JSON level and replayed with
// `rehearse run`. Its `seed` is the case seed, its `description` says where it
// came from, and its `expect` is reduced to `violations` (the invariants the
// base allows to fire; counts do not hold in a varied world).
//
// Every draw comes from sim::Rng (xoshiro256**, sim/kernel/rng.hpp) seeded with the
// case seed and derived with the stream name kSwarmStream, so the derivation
// never shares numbers with the run's own generator (seeded with the same
// seed, but not derived).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse::sim {

inline constexpr const char* kSwarmStream = "rehearse/check/swarm";

struct SwarmOptions {
  int max_instances = 3;  // per kind that is on: 1..max_instances faults
  // Each of the base's own faults is kept with probability 1/2 (false: all kept).
  bool drop_base_faults = true;
  // Extend `until` so that the settle bound (sim/check/liveness.hpp) follows
  // the last fault's end: the liveness phase can then judge the case.
  bool settle = true;
  // `--random-jobs`: the base's jobs get new schedules, policies and kind keys
  // first (randomize_jobs, sim/check/generate.hpp, its own stream).
  bool random_jobs = false;
  // Draw `job_file_corrupted`. Generated worlds only: on a bundled scenario a
  // damage that fails a job closed for good would mask, in half its cases,
  // the behaviour the scenario exists to search.
  bool damage_job_files = false;
  // Draw `clock_step`. Generated worlds only, for the same reason: a bundled
  // scenario's expectations and published seeds are in true time.
  bool step_clocks = false;
};

// What one derivation chose (for the description, reports and tests).
struct SwarmChoice {
  std::vector<std::string> kinds_on;   // applicable kinds switched on, table order
  std::vector<std::string> kinds_off;  // applicable kinds left off
  std::size_t base_faults = 0;
  std::size_t base_faults_kept = 0;
  std::size_t faults_added = 0;
  std::int64_t settle_ms = 0;  // the settle bound after the last fault (0: not extended)
  bool jobs_randomized = false;
};

// The derived document for `seed`. An error when the base does not load (its
// message is the loader's). `origin` names the base in the description (its
// path, or its scenario name).
Result<nlohmann::json> derive_case(const nlohmann::json& base_scenario, std::uint64_t seed,
                                   const SwarmOptions& options, SwarmChoice* choice = nullptr,
                                   const std::string& origin = {});

}  // namespace rehearse::sim
