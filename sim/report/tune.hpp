// The sweep engine of `rehearse tune` (docs/tune.md): a grid of retry
// policies for one job, each run against the same Monte Carlo sample of
// outages in the simulated world, and per policy the recovery probability
// (with a Wilson 95% interval), time to recovery, extra calls to the failing
// provider, delay caused on the serial queue, and how often the retry chain
// runs into the next regular slot; the Pareto front of recovery against cost
// (extra calls and the p95 time to recovery).
//
// Every run is an ordinary world run (sim/world/world.hpp): the scenario with the
// job's retry_policy replaced and its fault timeline replaced by one outage
// of the job's provider. Run i of every policy meets the same outage (length,
// slot, phase, world seed, all drawn from a stream derived from the base seed
// and i alone), so policies are compared on common random numbers. Threads
// only run whole runs; results are gathered by index, so the result does not
// depend on the thread count.
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
#include "sim/kernel/rng.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// The policies swept: every combination of the lists.
struct TuneGrid {
  std::vector<int> attempts{2, 3, 4, 5, 6};  // the first run included (BullMQ's count)
  std::vector<DurationMs> delays{kMinuteMs,      5 * kMinuteMs, 15 * kMinuteMs,
                                 30 * kMinuteMs, kHourMs,       2 * kHourMs};
  std::vector<BackoffKind> kinds{BackoffKind::exponential, BackoffKind::fixed, BackoffKind::linear};
  std::vector<DurationMs> caps{0};   // 0: no cap
  std::vector<double> jitters{0.0};  // BullMQ's proportional jitter
};
// "attempts=2-6;delay=1m,5m,30m;backoff=exponential,fixed;cap=none,4h;jitter=0,0.5";
// keys left out keep their defaults. Errors name the key and what was expected.
Result<TuneGrid> parse_tune_grid(std::string_view text);

enum class OutageShape : unsigned char { list, uniform, lognormal, empirical };
struct OutageDistribution {
  OutageShape shape = OutageShape::uniform;
  std::vector<DurationMs> values;      // list (taken in turn), empirical (drawn)
  DurationMs low_ms = 30 * kMinuteMs;  // uniform, lognormal
  DurationMs high_ms = 12 * kHourMs;
  std::string text;  // as given, for reports
};
// "30m,2h,6h" | "uniform:30m-12h" | "lognormal:30m-12h" (the bounds are the
// 5th and 95th percentiles; draws are clamped to [low / 4, high * 4]). An
// empirical list is read by the command from a file and given as `empirical`.
Result<OutageDistribution> parse_outages(std::string_view text);
Result<OutageDistribution> empirical_outages(std::string_view file_text, std::string name);

struct TuneOptions {
  std::string job_id;
  TuneGrid grid;
  OutageDistribution outages;
  int runs = 100;          // Monte Carlo runs per policy (--seeds)
  std::uint64_t seed = 1;  // base seed of the outage sample
  int threads = 1;
  // The service the outage breaks: one the job calls (its calls for a
  // `call` job); empty: the job's first such service.
  std::string service;
  // quota_exhausted or http_errors (503); default: quota_exhausted for
  // model-api, http_errors otherwise.
  std::optional<FaultKind> fault;
  // Called from the calling thread after each finished run (done, total).
  std::function<void(std::size_t, std::size_t)> progress;
};

struct TunePolicy {
  int attempts = 1;
  Backoff backoff;
  nlohmann::json written;  // the retry_policy the runs use
  std::string label;       // "4 x 30m exponential"
  bool in_grid = true;
  bool current = false;  // the job's own policy
};

struct TuneRow {
  TunePolicy policy;
  int runs = 0;
  int recovered = 0;
  double recovery = 0.0, recovery_low = 0.0, recovery_high = 0.0;  // Wilson 95%
  std::optional<DurationMs> ttr_p50_ms, ttr_p95_ms;  // time to recovery, recovered runs
  double extra_calls = 0.0;     // mean calls to the provider by the job's retries
  double queue_delay_ms = 0.0;  // mean of each run's longest start delay of another job
  DurationMs queue_delay_max_ms = 0;
  double next_slot_overrun = 0.0;  // share of runs whose retry chain reaches the next slot
  // On the Pareto front of recovery against cost: no other row recovers at
  // least as often with no more extra calls and no later p95 time to
  // recovery, being better in one of the three.
  bool pareto = false;
};

struct TuneResult {
  std::string scenario;
  std::string job;
  std::string schedule;
  std::string provider;  // the failing service, by name (a built-in one or the user's own)
  std::vector<std::string> services;  // every service the job calls that an outage can break
  std::string fault;                  // the injected fault kind
  std::string outages;
  int runs_per_policy = 0;
  std::uint64_t seed = 0;
  std::vector<TuneRow> rows;  // grid order, then the current policy if it is not in the grid
  std::size_t current = 0;    // index of the job's own policy in rows
  std::vector<std::size_t> dominating;  // rows on the front that dominate the current policy
  // Rows on the front that recover more often than the current policy.
  std::vector<std::size_t> front_above;
};

// Errors: an unknown job, a job kind without a provider, a job that calls no
// service an outage can break, a --service the job does not call, a schedule that
// never fires in the span, a job whose own policy does not parse (it is
// still reported: as "none"), a grid policy the core refuses.
Result<TuneResult> run_tune(const Scenario& scenario, const TuneOptions& options);

// Wilson score interval for k successes in n trials at z = 1.96.
void wilson_interval(int k, int n, double& low, double& high);

// Run `run`'s outage length from its own generator (the list's entry `run`
// mod n; otherwise drawn from `rng`).
DurationMs draw_outage_length(const OutageDistribution& d, std::size_t run, Rng& rng);

// Runs `one(i)` for every i < total on `threads` threads, each index exactly
// once; `progress` (if set) is called from the calling thread between its
// runs, at most once per percent, and once at the end with done == total.
void run_sweep_parallel(std::size_t total, int threads, const std::function<void(std::size_t)>& one,
                        const std::function<void(std::size_t, std::size_t)>& progress);

}  // namespace rehearse::sim
