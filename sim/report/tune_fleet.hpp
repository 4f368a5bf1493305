// The fleet sweep of `rehearse tune --fleet` (docs/tune.md "Fleets"): a grid
// of retry policies (attempts, base delay, curve, cap, jitter shape, retry
// budget), each applied to every job of a scenario that calls one
// capacity-limited service of the user's own, run against the same Monte
// Carlo sample of outages of that service. Per policy, from the service's
// load as the world recorded it (sim/world/service_load.hpp): recovery of the
// slots the outage hit, work amplification, the peak load after the outage,
// the time to drain, goodput and the share of runs that went metastable; and
// the Pareto front over them.
//
// Every run is an ordinary world run: the scenario with every calling job's
// retry_policy replaced and its fault timeline replaced by one outage of the
// service. The outage starts where the scenario's own first fault on the
// service starts (10 minutes after the start without one); run i draws its
// length and the world's seed from a stream derived from the base seed and i
// alone, so every policy meets the same outages. Threads run whole runs;
// results are gathered by index, so nothing depends on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"
#include "sim/report/tune.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// Brooker's four ("Exponential Backoff and Jitter", AWS Architecture Blog):
// none, equal ([d/2, d]), full ([0, d]), decorrelated ([delay, 3 x previous]).
enum class JitterShape : unsigned char { none, equal, full, decorrelated };
const char* to_string(JitterShape shape) noexcept;

// The policies swept: every combination of the lists.
struct FleetGrid {
  std::vector<int> attempts{4, 6};  // the first run included (BullMQ's count)
  std::vector<DurationMs> delays{5 * kSecondMs, 30 * kSecondMs};
  std::vector<BackoffKind> kinds{BackoffKind::exponential};
  std::vector<DurationMs> caps{0};  // 0: no cap
  std::vector<JitterShape> jitters{JitterShape::none, JitterShape::equal, JitterShape::full,
                                   JitterShape::decorrelated};
  std::vector<int> budgets{0};  // a fleet-wide retry budget's percent; 0: none
};
// "attempts=4,6;delay=5s,30s;backoff=exponential;cap=none;jitter=none,full;budget=none,20";
// keys left out keep their defaults. Decorrelated jitter needs every backoff
// of the grid to be exponential. Errors name the key and what was expected.
Result<FleetGrid> parse_fleet_grid(std::string_view text);

struct FleetTuneOptions {
  std::string service;  // empty: the first user service with a capacity a job calls
  FleetGrid grid;
  OutageDistribution outages;  // the outage's length; the command's default uniform:5m-30m
  int runs = 10;               // runs per policy (--seeds)
  std::uint64_t seed = 1;
  int threads = 1;
  // Called from the calling thread after each finished run (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct FleetPolicy {
  int attempts = 1;
  Backoff backoff;
  JitterShape jitter = JitterShape::none;
  int budget_percent = 0;  // 0: no retry budget
  nlohmann::json written;  // the retry_policy every calling job runs with
  std::string label;       // "6 x 5s exponential, full jitter, budget 20%"
};

struct FleetRow {
  FleetPolicy policy;
  int runs = 0;
  // Slots of the fleet's jobs whose run failed during the outage, and those
  // of them a later run of the same slot recovered; pooled over the runs.
  std::int64_t hit_slots = 0;
  std::int64_t recovered_slots = 0;
  double recovery = 0.0, recovery_low = 0.0, recovery_high = 0.0;  // Wilson 95%
  double calls = 0.0;                   // mean requests to the service per run
  std::optional<double> amplification;  // all calls / all useful replies; none useful: absent
  double peak_after = 0.0;              // mean of each run's busiest minute after the outage
  std::int64_t peak_after_max = 0;
  // Time from the outage's end to the last failed reply, over the runs
  // (nearest rank); a run that never drained counts as never: absent when
  // it decides the rank.
  std::optional<DurationMs> drain_p50_ms, drain_p95_ms;
  int drained_runs = 0;
  double metastable = 0.0;               // share of the runs judged metastable
  double goodput_per_minute = 0.0;       // mean useful replies per minute of the run
  std::vector<double> calls_per_minute;  // mean over the runs, minute 0 at the scenario's start
  // No other row is at least as good on recovery, amplification, peak after
  // the outage, p95 drain and metastable share, and better on one.
  bool pareto = false;
};

struct FleetTuneResult {
  std::string scenario;
  std::string service;
  std::string fault;    // the injected fault kind
  std::string outages;  // as given
  std::optional<std::int64_t> capacity_per_minute_milli;
  std::vector<std::string> jobs;  // the jobs that call the service (each runs the policy)
  int runs_per_policy = 0;
  std::uint64_t seed = 0;
  TimeMs start_ms = 0;
  TimeMs outage_at_ms = 0;     // where every run's outage starts
  std::vector<FleetRow> rows;  // grid order
};

// Errors: no user service with a capacity that a job calls (or --service
// names one that is not, or that no job calls), a grid policy the core refuses.
Result<FleetTuneResult> run_fleet_tune(const Scenario& scenario, const FleetTuneOptions& options);

}  // namespace rehearse::sim
