#include "sim/check/check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <new>
#include <set>
#include <utility>

#include "model/assert.hpp"
#include "sim/check/generate.hpp"
#include "sim/check/liveness.hpp"
#include "sim/check/reachability.hpp"
#include "sim/monitors/deterministic.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace {

CaseRecord record_of(const CheckCaseInput& input, const CheckOptions& options) {
  CaseRecord r;
  r.scenario = input.name;
  r.path = input.path;
  r.seed = input.seed;
  r.replay = check_replay_command(input.path, input.seed, options.swarm);
  return r;
}

CaseRecord errored(CaseRecord r, std::string message) {
  // An error is never judged: no violation was counted for it.
  REHEARSE_ASSERT(r.violations.empty());
  r.verdict = CaseVerdict::error;
  r.message = std::move(message);
  return r;
}

// Where a derived document is said to come from in loader messages.
std::string derived_label(const CheckCaseInput& input) {
  return fmt::format("{} (derived, seed {})", input.path.empty() ? input.name : input.path,
                     input.seed);
}

RunOptions case_run_options(const CheckCaseInput& input, const CheckOptions& options, int run) {
  REHEARSE_ASSERT(run == 0 || run == 1);  // the case's run and its determinism re-run
  RunOptions o;
  o.seed = input.seed;
  // Determinism needs both traces to name the first event that differs.
  o.keep_trace = options.check_determinism;
  if (options.prepare_run) options.prepare_run(o, run);
  return o;
}

// The run's violations that count: every distinct one not allowed by the
// scenario's expect.violations, then a core assertion or a bounded run the
// outcome shows.
std::vector<Violation> counted_violations(const Scenario& scenario, const ScenarioRunResult& run) {
  const std::set<std::string> allowed(scenario.expect.violations.begin(),
                                      scenario.expect.violations.end());
  std::vector<Violation> out;
  const auto have = [&](const std::string& name) {
    return std::any_of(out.begin(), out.end(),
                       [&](const Violation& v) { return v.invariant == name; });
  };
  for (const Violation& v : run.violations) {
    if (allowed.count(v.invariant) == 0 && !have(v.invariant)) out.push_back(v);
  }
  if (run.outcome == RunOutcome::assertion_failed) {
    out.push_back({kAssertionViolation, run.trace.size(), run.end_ms, run.outcome_message});
  }
  if (run.outcome == RunOutcome::bounded_run && !have("bounded_run")) {
    out.push_back({"bounded_run", run.trace.size(), run.end_ms, run.outcome_message});
  }
  // Each invariant counts once, and none the scenario allows.
  const std::set<std::string> distinct = [&] {
    std::set<std::string> names;
    for (const Violation& v : out) names.insert(v.invariant);
    return names;
  }();
  REHEARSE_ASSERT_EQ(distinct.size(), out.size());
  for (const Violation& v : out) {
    REHEARSE_ASSERT(allowed.count(v.invariant) == 0 || v.invariant == kAssertionViolation ||
                    v.invariant == "bounded_run");
  }
  return out;
}

// The determinism re-run: the same seed must give the same trace, byte for
// byte; on a difference, both hashes and the first event that differs.
std::optional<Violation> rerun_differs(const Scenario& scenario, const CheckCaseInput& input,
                                       const CheckOptions& options,
                                       const ScenarioRunResult& first) {
  REHEARSE_ASSERT(options.check_determinism);
  auto second = run_scenario(scenario, case_run_options(input, options, 1));
  if (!second) {
    return Violation{"deterministic", 0, scenario.start_ms,
                     "the second run could not start: " + second.error().describe()};
  }
  if (second->trace_hash == first.trace_hash && second->trace.size() == first.trace.size()) {
    return std::nullopt;
  }
  std::string message =
      fmt::format("the trace hashes differ ({} over {} events, then {} over {} events)",
                  first.trace_hash, first.trace.size(), second->trace_hash, second->trace.size());
  std::size_t index = 0;
  if (auto found = compare_traces(first.trace, second->trace)) {
    index = found->event_index;
    message += fmt::format("; first diverging event: index {}: {}", index, found->message);
  }
  return Violation{"deterministic", index, scenario.start_ms, std::move(message)};
}

CaseRecord judged(CaseRecord r, const ScenarioRunResult& run,
                  const std::vector<Violation>& violations) {
  r.trace_hash = run.trace_hash;
  r.events = run.events_executed;
  for (const Violation& v : violations) r.violations.push_back(v.invariant);
  if (!violations.empty()) {
    r.verdict = CaseVerdict::fail;
    r.message = violations.front().message;
  } else if (run.out_of_memory || !run.errors.empty()) {
    r.verdict = CaseVerdict::error;
    r.message = run.errors.empty() ? "out of memory" : run.errors.front();
  }
  // A case fails exactly when some violation counts.
  REHEARSE_ASSERT_EQ(r.verdict == CaseVerdict::fail, !violations.empty());
  REHEARSE_ASSERT_EQ(r.violations.size(), violations.size());
  return r;
}

// The liveness phase's reference: the same world without faults, run once
// on demand with the case's seed.
ReferenceRun reference_run(const Scenario& scenario, const CheckCaseInput& input,
                           const CheckOptions& options) {
  auto kept = std::make_shared<std::optional<ScenarioRunResult>>();
  return [&scenario, &input, &options, kept]() -> const ScenarioRunResult* {
    if (!kept->has_value()) {
      Scenario quiet = scenario;
      quiet.faults.clear();
      RunOptions o = case_run_options(input, options, 0);
      o.keep_trace = false;
      auto run = run_scenario(quiet, o);
      if (!run) return nullptr;
      *kept = std::move(*run);
    }
    return &kept->value();
  };
}

// The run's options, with the reachability observer listening when the
// check counts coverage (after any sink a test hook set).
RunOptions observed_run_options(const CheckCaseInput& input, const CheckOptions& options,
                                ReachabilityObserver* observer) {
  // run_and_judge builds an observer exactly when the check counts coverage.
  REHEARSE_ASSERT_EQ(observer != nullptr, options.coverage);
  RunOptions o = case_run_options(input, options, 0);
  if (observer == nullptr) return o;
  o.trace_sink = [observer, inner = std::move(o.trace_sink)](const TraceEvent& e, std::size_t i) {
    if (inner) inner(e, i);
    observer->observe(e);
  };
  return o;
}

CaseRecord run_and_judge(const Scenario& scenario, const CheckCaseInput& input,
                         const CheckOptions& options) {
  CaseRecord r = record_of(input, options);
  std::optional<ReachabilityObserver> observer;
  if (options.coverage) observer.emplace(scenario);
  auto run =
      run_scenario(scenario, observed_run_options(input, options, observer ? &*observer : nullptr));
  if (!run) return errored(std::move(r), run.error().describe());
  if (observer) r.reached = observer->reached();
  std::vector<Violation> violations = counted_violations(scenario, *run);
  if (auto unsettled = judge_liveness(scenario, *run, reference_run(scenario, input, options))) {
    violations.push_back(std::move(*unsettled));
  }
  if (options.check_determinism && !run->out_of_memory) {
    // First: when the run is not reproducible, nothing else it shows is.
    if (auto differs = rerun_differs(scenario, input, options, *run)) {
      violations.insert(violations.begin(), std::move(*differs));
    }
  }
  return judged(std::move(r), *run, violations);
}

}  // namespace

CaseRecord check_derived(const CheckCaseInput& input, const json& derived,
                         const CheckOptions& options) {
  auto scenario = load_scenario_json(derived.dump(), derived_label(input));
  if (!scenario) {
    return errored(record_of(input, options),
                   "the derived scenario does not load (a bug in the derivation): " +
                       scenario.error().describe());
  }
  try {
    CaseRecord r = run_and_judge(*scenario, input, options);
    REHEARSE_ASSERT_EQ(r.seed, input.seed);  // the record is the case's
    return r;
  } catch (const std::bad_alloc&) {
    return errored(record_of(input, options), "out of memory while running this case");
  }
}

Result<json> derive_for(const CheckCaseInput& input, const SwarmOptions& options) {
  Result<json> derived = input.scenario.is_null()
                             ? derive_world_case(input.seed, options)
                             : derive_case(input.scenario, input.seed, options, nullptr,
                                           input.path.empty() ? input.name : input.path);
  // A derived case is a scenario document (check_derived loads it).
  if (derived) REHEARSE_ASSERT(derived->is_object());
  return derived;
}

CaseRecord check_case(const CheckCaseInput& input, const CheckOptions& options) {
  auto derived = derive_for(input, options.swarm);
  if (!derived) return errored(record_of(input, options), derived.error().describe());
  CaseRecord r = check_derived(input, *derived, options);
  // Every verdict but an error carries the run's trace hash.
  REHEARSE_ASSERT(r.verdict == CaseVerdict::error || !r.trace_hash.empty());
  return r;
}

std::string check_replay_command(const std::string& path, std::uint64_t seed,
                                 const SwarmOptions& swarm) {
  const char* jobs = swarm.random_jobs ? " --random-jobs" : "";
  if (path.empty()) return fmt::format("rehearse check --seeds 1 --first-seed {}{}", seed, jobs);
  return fmt::format("rehearse check {} --seeds 1 --first-seed {}{}", path, seed, jobs);
}

int case_exit_code(const CaseRecord& record) {
  switch (record.verdict) {
    case CaseVerdict::pass: return 0;
    case CaseVerdict::error: return 2;
    case CaseVerdict::fail: break;
  }
  const auto& v = record.violations;
  REHEARSE_ASSERT(!v.empty());  // judged: a case fails by the violations it counts
  return std::find(v.begin(), v.end(), kAssertionViolation) != v.end() ? 3 : 1;
}

int worst_exit_code(const std::vector<CaseRecord>& records) {
  int worst = 0;
  for (const CaseRecord& r : records) worst = std::max(worst, case_exit_code(r));
  REHEARSE_ASSERT(worst >= 0 && worst <= 3);
  return worst;
}

}  // namespace rehearse::sim
