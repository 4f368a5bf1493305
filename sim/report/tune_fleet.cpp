// The fleet sweep (sim/report/tune_fleet.hpp, docs/tune.md "Fleets").
#include "sim/report/tune_fleet.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "model/assert.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/service_load.hpp"

namespace rehearse::sim {
namespace {

using json = nlohmann::json;

// Where every run's outage starts: the scenario's own first fault on the
// service (the incident's timeline), else 10 minutes into the run.
inline constexpr DurationMs kDefaultOutageOffsetMs = 10 * kMinuteMs;
// The run goes on until the metastability minute (an hour after the
// outage) is over, and a minute more.
inline constexpr DurationMs kAfterOutageMs = kMetastableAfterMs + 2 * kMinuteMs;

Error bad(std::string where, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message), std::move(where));
}

bool calls_service(const JobSpec& job, const std::string& service) {
  return std::any_of(job.calls.begin(), job.calls.end(),
                     [&](const JobSpec::Call& c) { return c.service == service; });
}

std::vector<std::string> calling_jobs(const Scenario& scenario, const std::string& service) {
  std::vector<std::string> out;
  for (const JobSpec& j : scenario.jobs) {
    if (calls_service(j, service)) out.push_back(j.id);
  }
  return out;
}

Result<std::string> choose_service(const Scenario& scenario, const std::string& wanted) {
  std::vector<std::string> limited;
  for (const auto& [name, service] : scenario.services.user) {
    if (service.capacity && !calling_jobs(scenario, name).empty()) limited.push_back(name);
  }
  if (limited.empty()) {
    return bad("--fleet",
               "no service of the scenario's own has a `capacity` that a job calls: a "
               "fleet sweep needs one (docs/scenario-format.md, \"Capacity\")");
  }
  if (wanted.empty()) return limited.front();
  if (std::find(limited.begin(), limited.end(), wanted) != limited.end()) return wanted;
  return bad("--service", fmt::format("\"{}\" is not a service with a capacity that a job calls; "
                                      "the scenario has: {}",
                                      wanted, fmt::join(limited, ", ")));
}

TimeMs outage_start(const Scenario& scenario, const std::string& service) {
  for (const FaultSpec& f : scenario.faults) {
    if (f.user_service == service) return f.at_ms;
  }
  return scenario.start_ms + kDefaultOutageOffsetMs;
}

// ------------------------------------------------------------ policies

std::string fleet_label(const FleetPolicy& p) {
  const Backoff& b = p.backoff;
  std::string s =
      fmt::format("{} x {} {}", p.attempts, format_duration(b.delay_ms), to_string(b.kind));
  if (b.max_delay_ms > 0) s += fmt::format(" cap {}", format_duration(b.max_delay_ms));
  s += p.jitter == JitterShape::none ? std::string(", no jitter")
                                     : fmt::format(", {} jitter", to_string(p.jitter));
  if (p.budget_percent > 0) s += fmt::format(", budget {}%", p.budget_percent);
  return s;
}

// The core's BullMQ form with the shape by name, and a budget every job of
// the fleet shares (docs/retry.md, "Jitter shapes", "Retry budgets").
json fleet_policy_json(const FleetPolicy& p) {
  json backoff{{"type", to_string(p.backoff.kind)},
               {"delay", p.backoff.delay_ms},
               {"jitter", to_string(p.jitter)}};
  if (p.backoff.max_delay_ms > 0) backoff["max_delay"] = p.backoff.max_delay_ms;
  json out{{"attempts", p.attempts}, {"backoff", backoff}};
  if (p.budget_percent > 0) {
    out["retry_budget"] = {{"name", "tune-fleet"}, {"percent", p.budget_percent}};
  }
  return out;
}

Result<std::vector<FleetPolicy>> fleet_policies(const FleetGrid& grid) {
  std::vector<FleetPolicy> out;
  for (const int budget : grid.budgets) {
    for (const BackoffKind kind : grid.kinds) {
      for (const DurationMs cap : grid.caps) {
        for (const int attempts : grid.attempts) {
          for (const DurationMs delay : grid.delays) {
            for (const JitterShape jitter : grid.jitters) {
              FleetPolicy p;
              p.attempts = attempts;
              p.backoff = Backoff{kind, delay, 0.0};
              p.backoff.max_delay_ms = cap;
              p.jitter = jitter;
              p.budget_percent = budget;
              p.written = fleet_policy_json(p);
              p.label = fleet_label(p);
              auto parsed = parse_retry_policy(p.written);
              if (!parsed) {
                return bad("--grid", fmt::format("{}: {}", p.label, parsed.error().describe()));
              }
              p.backoff = parsed->backoff;
              out.push_back(std::move(p));
            }
          }
        }
      }
    }
  }
  return out;
}

// ------------------------------------------------------------ one run

struct FleetSample {
  DurationMs length_ms = 0;
  std::uint64_t world_seed = 0;
};

struct FleetRunMetrics {
  std::int64_t hit = 0, recovered = 0;
  std::int64_t calls = 0, useful = 0;
  std::int64_t peak_after = 0;
  std::optional<DurationMs> drain_ms;
  bool metastable = false;
  std::int64_t goodput_milli = 0;
  std::vector<std::int64_t> calls_per_minute;
};

struct Setup {
  const Scenario* scenario = nullptr;
  std::string service;
  std::vector<std::string> jobs;
  TimeMs outage_at = 0;
};

Scenario fleet_scenario(const Setup& setup, const FleetPolicy& policy, const FleetSample& s) {
  Scenario sc = *setup.scenario;
  const TimeMs outage_end = setup.outage_at + s.length_ms;
  sc.until_ms = std::max(sc.until_ms, outage_end + kAfterOutageMs);
  sc.expect = Expectations{};
  sc.faults.clear();
  for (JobSpec& j : sc.jobs) {
    if (calls_service(j, setup.service)) j.retry_policy = policy.written;
  }
  FaultSpec f;
  f.kind = FaultKind::http_errors;
  f.at_ms = std::max(setup.outage_at, sc.start_ms);
  f.for_ms = outage_end - f.at_ms;
  f.user_service = setup.service;
  f.http_status = 503;
  f.note = "rehearse tune --fleet outage";
  f.pointer = "/faults/0";
  sc.faults.push_back(f);
  return sc;
}

// Slots of the fleet's jobs whose run failed while the outage lasted, and
// whether a later run of the same slot ended well.
class RecoveryTally {
 public:
  RecoveryTally(const Setup& setup, TimeMs outage_end)
      : from_(setup.outage_at), until_(outage_end), jobs_(setup.jobs.begin(), setup.jobs.end()) {}

  void add(const TraceEvent& e) {
    if (e.type != "run_finished" || !e.slot || jobs_.count(e.job) == 0) return;
    const std::string outcome = e.str("outcome");
    const auto key = std::make_pair(e.job, *e.slot);
    if (outcome == "failure" && e.t >= from_ && e.t <= until_) {
      slots_.emplace(key, false);
    } else if (outcome == "success" || outcome == "skipped" || outcome == "already_complete") {
      if (auto it = slots_.find(key); it != slots_.end()) it->second = true;
    }
  }
  std::int64_t hit() const { return static_cast<std::int64_t>(slots_.size()); }
  std::int64_t recovered() const {
    return std::count_if(slots_.begin(), slots_.end(), [](const auto& kv) { return kv.second; });
  }

 private:
  TimeMs from_, until_;
  std::set<std::string> jobs_;
  std::map<std::pair<std::string, TimeMs>, bool> slots_;
};

FleetRunMetrics metrics_of(const ServiceLoad& load, const RecoveryTally& tally) {
  FleetRunMetrics m;
  m.hit = tally.hit();
  m.recovered = tally.recovered();
  m.calls = load.calls;
  m.useful = load.useful;
  m.peak_after = load.peak_after_trigger_per_minute.value_or(0);
  m.drain_ms = load.drain_ms;
  m.metastable = load.metastable_judged() && load.metastable;
  m.goodput_milli = load.goodput_per_minute_milli;
  m.calls_per_minute = load.calls_per_minute;
  // A recovered slot is a hit one; useful replies are answered calls.
  REHEARSE_ASSERT_LE(m.recovered, m.hit);
  REHEARSE_ASSERT_LE(m.useful, m.calls);
  return m;
}

Result<FleetRunMetrics> run_one(const Setup& setup, const FleetPolicy& policy,
                                const FleetSample& s) {
  const Scenario sc = fleet_scenario(setup, policy, s);
  ServiceLoadCounter counter(sc, sc.start_ms);
  RecoveryTally tally(setup, setup.outage_at + s.length_ms);
  RunOptions ro;
  ro.seed = s.world_seed;
  ro.stop_on_violation = false;
  ro.keep_trace = false;
  ro.trace_sink = [&](const TraceEvent& e, std::size_t) {
    counter.add(e);
    tally.add(e);
  };
  auto r = run_scenario(sc, std::move(ro));
  if (!r) return std::move(r).error();
  for (const ServiceLoad& load : counter.finish(r->end_ms)) {
    if (load.service == setup.service) return metrics_of(load, tally);
  }
  return bad("--fleet", fmt::format("the run recorded no load on {}", setup.service));
}

// ------------------------------------------------------------ aggregation

// Nearest rank over the runs; a run that never drained ranks last, and a
// rank that lands on one is "never" (absent).
std::optional<DurationMs> drain_rank(const std::vector<FleetRunMetrics>& runs, double q) {
  std::vector<DurationMs> v;
  for (const FleetRunMetrics& m : runs) v.push_back(m.drain_ms.value_or(kMaxInstantMs));
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  const DurationMs d = v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
  if (d == kMaxInstantMs) return std::nullopt;
  return d;
}

std::vector<double> mean_curve(const std::vector<FleetRunMetrics>& runs) {
  std::size_t minutes = 0;
  for (const FleetRunMetrics& m : runs) minutes = std::max(minutes, m.calls_per_minute.size());
  std::vector<double> out(minutes, 0.0);
  for (const FleetRunMetrics& m : runs) {
    for (std::size_t i = 0; i < m.calls_per_minute.size(); ++i) {
      out[i] += static_cast<double>(m.calls_per_minute[i]);
    }
  }
  for (double& v : out) v /= static_cast<double>(runs.size());
  return out;
}

FleetRow aggregate(const FleetPolicy& policy, const std::vector<FleetRunMetrics>& runs) {
  REHEARSE_ASSERT(!runs.empty());  // --seeds is at least 1
  FleetRow row;
  row.policy = policy;
  row.runs = static_cast<int>(runs.size());
  std::int64_t calls = 0, useful = 0, peak = 0, goodput = 0;
  int metastable = 0;
  for (const FleetRunMetrics& m : runs) {
    row.hit_slots += m.hit;
    row.recovered_slots += m.recovered;
    calls += m.calls;
    useful += m.useful;
    peak += m.peak_after;
    row.peak_after_max = std::max(row.peak_after_max, m.peak_after);
    goodput += m.goodput_milli;
    metastable += m.metastable ? 1 : 0;
    row.drained_runs += m.drain_ms ? 1 : 0;
  }
  const double n = static_cast<double>(runs.size());
  row.recovery = row.hit_slots > 0
                     ? static_cast<double>(row.recovered_slots) / static_cast<double>(row.hit_slots)
                     : 1.0;
  wilson_interval(static_cast<int>(row.recovered_slots), static_cast<int>(row.hit_slots),
                  row.recovery_low, row.recovery_high);
  row.calls = static_cast<double>(calls) / n;
  if (useful > 0) row.amplification = static_cast<double>(calls) / static_cast<double>(useful);
  row.peak_after = static_cast<double>(peak) / n;
  row.drain_p50_ms = drain_rank(runs, 0.50);
  row.drain_p95_ms = drain_rank(runs, 0.95);
  row.metastable = metastable / n;
  row.goodput_per_minute = static_cast<double>(goodput) / 1000.0 / n;
  row.calls_per_minute = mean_curve(runs);
  REHEARSE_ASSERT(0.0 <= row.metastable && row.metastable <= 1.0);
  REHEARSE_ASSERT_LE(row.drained_runs, row.runs);
  return row;
}

// The costs compared on the front, lower is better: absent reads as never.
struct Costs {
  double amplification, peak, drain, metastable;
};
Costs costs(const FleetRow& r) {
  const double never = static_cast<double>(kMaxInstantMs);
  return {r.amplification.value_or(never), r.peak_after,
          r.drain_p95_ms ? static_cast<double>(*r.drain_p95_ms) : never, r.metastable};
}

bool dominates(const FleetRow& a, const FleetRow& b) {
  const Costs ca = costs(a), cb = costs(b);
  const bool no_worse = a.recovery >= b.recovery && ca.amplification <= cb.amplification &&
                        ca.peak <= cb.peak && ca.drain <= cb.drain &&
                        ca.metastable <= cb.metastable;
  const bool better = a.recovery > b.recovery || ca.amplification < cb.amplification ||
                      ca.peak < cb.peak || ca.drain < cb.drain || ca.metastable < cb.metastable;
  return no_worse && better;
}

void mark_front(std::vector<FleetRow>& rows) {
  for (FleetRow& row : rows) {
    row.pareto = std::none_of(rows.begin(), rows.end(),
                              [&](const FleetRow& other) { return dominates(other, row); });
  }
  // Domination is a strict order: some row is never dominated.
  REHEARSE_ASSERT(rows.empty() || std::any_of(rows.begin(), rows.end(),
                                              [](const FleetRow& r) { return r.pareto; }));
}

std::vector<FleetSample> draw_samples(const FleetTuneOptions& options) {
  std::vector<FleetSample> out;
  for (std::size_t i = 0; i < static_cast<std::size_t>(options.runs); ++i) {
    Rng rng = Rng(options.seed).derive(static_cast<std::uint64_t>(i));
    FleetSample s;
    s.length_ms = std::max<DurationMs>(kSecondMs, draw_outage_length(options.outages, i, rng));
    s.world_seed = rng.next_u64();
    out.push_back(s);
  }
  return out;
}

Result<std::vector<FleetRunMetrics>> run_all(const Setup& setup,
                                             const std::vector<FleetPolicy>& policies,
                                             const FleetTuneOptions& options) {
  const std::vector<FleetSample> samples = draw_samples(options);
  const std::size_t runs = samples.size();
  std::vector<FleetRunMetrics> metrics(policies.size() * runs);
  std::mutex error_mutex;
  std::optional<Error> first_error;
  auto one = [&](std::size_t index) {
    auto m = run_one(setup, policies[index / runs], samples[index % runs]);
    if (m) {
      metrics[index] = std::move(*m);
      return;
    }
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!first_error) first_error = m.error();
  };
  run_sweep_parallel(metrics.size(), std::max(1, options.threads), one, options.progress);
  if (first_error) return *first_error;
  return metrics;
}

}  // namespace

Result<FleetTuneResult> run_fleet_tune(const Scenario& scenario, const FleetTuneOptions& options) {
  auto service = choose_service(scenario, options.service);
  if (!service) return std::move(service).error();
  auto policies = fleet_policies(options.grid);
  if (!policies) return std::move(policies).error();
  Setup setup{&scenario, *service, calling_jobs(scenario, *service),
              outage_start(scenario, *service)};
  auto metrics = run_all(setup, *policies, options);
  if (!metrics) return std::move(metrics).error();

  FleetTuneResult result;
  result.scenario = scenario.name;
  result.service = *service;
  result.fault = "http_errors";
  result.outages = options.outages.text;
  const UserService& declared = scenario.services.user.at(*service);
  result.capacity_per_minute_milli =
      service_capacity_per_minute_milli(*declared.capacity, declared.timing.latency_ms);
  result.jobs = setup.jobs;
  result.runs_per_policy = options.runs;
  result.seed = options.seed;
  result.start_ms = scenario.start_ms;
  result.outage_at_ms = setup.outage_at;
  const auto runs = static_cast<std::size_t>(options.runs);
  for (std::size_t p = 0; p < policies->size(); ++p) {
    const auto first = metrics->begin() + static_cast<std::ptrdiff_t>(p * runs);
    result.rows.push_back(
        aggregate((*policies)[p], {first, first + static_cast<std::ptrdiff_t>(runs)}));
  }
  mark_front(result.rows);
  // One row per policy of the grid, each over every run.
  REHEARSE_ASSERT_EQ(result.rows.size(), policies->size());
  for (const FleetRow& row : result.rows) REHEARSE_ASSERT_EQ(row.runs, options.runs);
  return result;
}

}  // namespace rehearse::sim
