// Fleets: a scenario's `fleet` block, N jobs generated from distributions.
//
// A scenario that models a whole fleet (thousands to a million jobs) cannot
// list every job; a `fleet` block (docs/scenario-format.md, "Fleet") names a
// job count and four weighted distributions: job kind, schedule, retry policy
// and failure rate. The jobs are generated at load time, deterministically
// from the scenario's `seed`, and join the listed jobs as ordinary JobSpecs:
// the world, the core and the monitors see no difference.
//
// Generation (docs/scenario-format.md has the worked rule):
//   - each distribution is apportioned exactly: bucket i gets
//     floor(N * w_i / W) jobs, and the jobs left over go one each to the
//     buckets with the largest remainders (ties: the earlier bucket), so a
//     bucket's count never depends on the seed;
//   - which job gets which bucket is a Fisher-Yates shuffle of that
//     assignment with the run's generator type (sim/kernel/rng.hpp), derived from the
//     seed with the stream name "fleet/<dimension>"; no std distribution.
//   - a failure-rate bucket is a simulated user service
//     "<id_prefix>-fail-<i>" whose calls fail at that rate with the bucket's
//     HTTP status (default 429, a rate_limit failure) over the whole span: a
//     generated `http_errors` fault. `call` jobs call their bucket's service,
//     or the declared service their kind names (`service`: one provider the
//     fleet shares, with its capacity and the timeline's faults); `group` jobs
//     call model-api, whose faults are the timeline's own.
//
// The loader (sim/world/scenario_jobs.cpp) only calls parse_fleet() and expand_fleet();
// errors carry the JSON pointer inside the block.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/time.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// Bounds of a fleet block (the loader's limits on the whole scenario are in
// sim/world/scenario_loader.hpp).
inline constexpr std::int64_t kMaxFleetJobs = 1'000'000;
inline constexpr std::size_t kMaxFleetBuckets = 1000;  // entries per distribution
inline constexpr std::int64_t kMaxFleetWeight = 1'000'000'000;
inline constexpr int kMaxFleetCallsPerRun = 100;
inline constexpr int kDefaultFleetFailureStatus = 429;

struct FleetKind {
  JobKind kind = JobKind::call;
  int calls = 1;                     // call: calls per run to the job's failure service
  int model_calls = 1;               // group: model-api calls of its one task
  std::vector<std::string> targets;  // group: messenger targets
  // call: a declared service of the user's own every job of the kind calls
  // (a provider the whole fleet shares); empty: its failure bucket's service.
  std::string service = {};
};

struct FleetFailure {
  double rate = 0.0;  // share of calls that fail, [0, 1]
  int status = kDefaultFleetFailureStatus;
};

template <typename T>
struct FleetBucket {
  std::int64_t weight = 1;
  T value;
};

struct FleetSpec {
  std::int64_t jobs = 0;
  std::string id_prefix = "fleet";
  std::vector<FleetBucket<FleetKind>> kinds;
  std::vector<FleetBucket<std::string>> schedules;                   // cron expressions
  std::vector<FleetBucket<std::optional<nlohmann::json>>> policies;  // as written; absent: none
  std::vector<FleetBucket<FleetFailure>> failure_rates;
};

// What the block may refer to: what the rest of the scenario declared.
struct FleetContext {
  TimeMs start_ms = 0;
  bool has_model_api = false;
  std::vector<std::string> targets;     // messenger targets (none: no messenger)
  std::set<std::string> user_services;  // declared user service names
};

struct FleetParse {
  std::optional<FleetSpec> spec;  // set when there was no error
  std::vector<Error> errors;      // Error::where is the JSON pointer
};

// Checks the block at `pointer` ("/fleet") strictly (unknown keys, types,
// ranges, crons, references) and reads it.
FleetParse parse_fleet(const nlohmann::json& block, const std::string& pointer,
                       const FleetContext& context);

// The generated part of the scenario.
struct FleetExpansion {
  std::vector<JobSpec> jobs;                    // ids "<prefix>-<index>", index order
  std::map<std::string, UserService> services;  // one per failure bucket (call kinds only)
  std::vector<FaultSpec> faults;                // one http_errors per failing bucket
};

// Generates the jobs from the spec, deterministically from `seed`.
FleetExpansion expand_fleet(const FleetSpec& spec, std::uint64_t seed, TimeMs start_ms,
                            const std::string& pointer);

// Exact apportionment of `n` items over `weights` (largest remainder, ties to
// the earlier bucket): the count per bucket. Exposed for tests and docs.
std::vector<std::int64_t> apportion(std::int64_t n, const std::vector<std::int64_t>& weights);

// The user service name of failure bucket `index`.
std::string fleet_service_name(const std::string& id_prefix, std::size_t index);

// The keys the block accepts, named like the schema's $defs ("fleet",
// "fleet_kind", "fleet_schedule", "fleet_policy", "fleet_failure").
const std::map<std::string, std::vector<std::string>>& fleet_known_keys();

}  // namespace rehearse::sim
