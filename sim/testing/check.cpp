// Checking a scenario from a user's own tests (sim/testing/check.hpp).
#include "sim/testing/check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "model/assert.hpp"
#include "sim/check/check.hpp"
#include "sim/monitors/deterministic.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"

namespace rehearse::testing {

namespace {

// The same seed again: a differing trace is a `deterministic` violation,
// located at its first differing event (both runs again, traces kept).
std::optional<sim::Violation> determinism_violation(const sim::Scenario& scenario,
                                                    const sim::ScenarioRunResult& first) {
  REHEARSE_ASSERT(!first.out_of_memory);  // a cut run is not compared (check_scenario)
  sim::RunOptions again;
  again.seed = first.seed;
  again.keep_trace = false;
  auto second = sim::run_scenario(scenario, again);
  if (!second) {
    return sim::Violation{"deterministic", 0, scenario.start_ms,
                          "the second run could not start: " + second.error().describe()};
  }
  if (second->trace_hash == first.trace_hash && second->trace.size() == first.trace.size()) {
    return std::nullopt;
  }
  const std::string hashes =
      fmt::format("the trace hashes differ ({} then {})", first.trace_hash, second->trace_hash);
  sim::RunOptions kept;
  kept.seed = first.seed;
  auto a = sim::run_scenario(scenario, kept);
  auto b = sim::run_scenario(scenario, kept);
  if (a && b) {
    if (auto found = sim::compare_traces(a->trace, b->trace)) {
      found->message = hashes + "; " + found->message;
      return found;
    }
  }
  return sim::Violation{"deterministic", 0, scenario.start_ms, hashes};
}

// Everything in the verdict that fails the run but is not an invariant.
std::vector<std::string> problems_of(const sim::Verdict& verdict,
                                     const sim::ScenarioRunResult& run) {
  std::vector<std::string> out;
  for (const std::string& name : verdict.expected_missing) {
    out.push_back(
        fmt::format("expected invariant {} to be violated (expect.violations), but it held", name));
  }
  for (const sim::ExpectFailure& f : verdict.expect_failures) out.push_back(f.describe());
  for (const std::string& e : verdict.errors) out.push_back("error: " + e);
  if (run.outcome == sim::RunOutcome::assertion_failed && verdict.errors.empty()) {
    out.push_back("a core assertion failed: " + run.outcome_message);
  }
  if (verdict.strict) {
    for (const std::string& note : sim::verdict_notes(verdict)) out.push_back("strict: " + note);
  }
  return out;
}

CheckOutcome load_failure(std::string path, const Error& error, const CheckOptions& options) {
  CheckOutcome out;
  out.path = std::move(path);
  out.seed = options.seed.value_or(0);
  out.problems.push_back("the scenario does not load: " + error.describe());
  REHEARSE_ASSERT(!out.held());  // a file that does not load never passes
  return out;
}

}  // namespace

CheckOutcome check_scenario(const sim::Scenario& scenario, const CheckOptions& options) {
  CheckOutcome out;
  out.scenario = scenario.name;
  out.path = scenario.path;
  out.seed = options.seed.value_or(scenario.seed);
  out.replay = sim::replay_command(scenario.path.empty() ? scenario.name : scenario.path, out.seed);
  sim::RunOptions run_options;
  run_options.seed = options.seed;
  run_options.keep_trace = false;
  auto run = sim::run_scenario(scenario, run_options);
  if (!run) {
    out.problems.push_back("the scenario cannot run: " + run.error().describe());
    return out;
  }
  std::optional<sim::Violation> determinism;
  if (options.determinism && !run->out_of_memory)
    determinism = determinism_violation(scenario, *run);
  const sim::Verdict verdict = sim::judge_run(scenario, *run, determinism, options.strict);
  for (const sim::Violation& v : verdict.violations) {
    if (out.violations.empty()) out.first_message = v.message;
    out.violations.push_back(v.invariant);
  }
  out.problems = problems_of(verdict, *run);
  out.findings = sim::format_findings(*run, verdict);
  // Whatever fails the verdict is a violation or a problem of the outcome.
  if (!verdict.held()) REHEARSE_ASSERT(!out.held());
  return out;
}

CheckOutcome check_scenario_path(const std::string& path, const CheckOptions& options) {
  auto scenario = sim::load_scenario_file(path);
  if (!scenario) return load_failure(path, scenario.error(), options);
  return check_scenario(*scenario, options);
}

CheckOutcome check_scenario_doc(const nlohmann::json& doc, const CheckOptions& options) {
  // Named as the file it would be saved to, so messages and the replay
  // command agree with the advice in describe().
  const std::string name = doc.is_object() ? doc.value("scenario", "scenario") : "scenario";
  const std::string file = name + ".json";
  auto scenario = sim::load_scenario_json(doc.dump(), file);
  CheckOutcome out =
      scenario ? check_scenario(*scenario, options) : load_failure(file, scenario.error(), options);
  out.path.clear();
  out.scenario = name;
  out.document = doc.dump(2);
  out.replay = sim::replay_command(file, out.seed);
  return out;
}

bool holds(const nlohmann::json& doc, const CheckOptions& options) {
  return check_scenario_doc(doc, options).held();
}

std::string describe(const CheckOutcome& o) {
  if (o.held()) return {};
  std::string out = fmt::format("scenario {}{}, seed {}:\n", o.scenario,
                                o.path.empty() ? "" : " (" + o.path + ")", o.seed);
  if (!o.violations.empty()) {
    out += fmt::format("  invariant(s) violated: {}\n", fmt::join(o.violations, ", "));
    out += fmt::format("  first: {}: {}\n", o.violations.front(), o.first_message);
  }
  for (const std::string& p : o.problems) out += "  " + p + "\n";
  if (!o.findings.empty()) out += o.findings;
  if (!o.document.empty()) {
    out += fmt::format("  replay: save the document below as {}.json, then: {}\n", o.scenario,
                       o.replay);
    out += o.document + "\n";
  } else {
    out += "  replay: " + o.replay + "\n";
  }
  return out;
}

std::vector<CheckOutcome> check_seeds(const std::string& path, SeedRange seeds,
                                      const CheckOptions& options) {
  std::vector<CheckOutcome> failed;
  auto scenario = sim::load_scenario_file(path);
  if (!scenario) {
    failed.push_back(load_failure(path, scenario.error(), options));
    return failed;
  }
  for (std::uint64_t i = 0; i < seeds.count; ++i) {
    CheckOptions one = options;
    one.seed = seeds.first + i;
    CheckOutcome outcome = check_scenario(*scenario, one);
    REHEARSE_ASSERT_EQ(outcome.seed, seeds.first + i);  // its replay names this seed
    if (!outcome.held()) failed.push_back(std::move(outcome));
  }
  REHEARSE_ASSERT_LE(failed.size(), seeds.count);  // each seed fails at most once
  return failed;
}

namespace {

// The record of a swarm whose file could not be read as JSON.
sim::CaseRecord unreadable(const std::string& path, const std::string& why) {
  sim::CaseRecord record;
  record.path = path;
  record.verdict = sim::CaseVerdict::error;
  record.message = why;
  return record;
}

}  // namespace

std::vector<sim::CaseRecord> check_swarm(const std::string& path, SeedRange seeds) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {unreadable(path, path + ": cannot be read")};
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (doc.is_discarded()) return {unreadable(path, path + ": not a JSON document")};
  std::vector<sim::CaseRecord> failed;
  const sim::CheckOptions options;
  for (std::uint64_t i = 0; i < seeds.count; ++i) {
    sim::CheckCaseInput input{doc, path, doc.is_object() ? doc.value("scenario", "") : "",
                              seeds.first + i};
    sim::CaseRecord record = sim::check_case(input, options);
    REHEARSE_ASSERT_EQ(record.seed, seeds.first + i);  // its replay names this seed
    if (record.verdict != sim::CaseVerdict::pass) failed.push_back(std::move(record));
  }
  REHEARSE_ASSERT_LE(failed.size(), seeds.count);
  return failed;
}

std::string describe(const sim::CaseRecord& r) {
  if (r.verdict == sim::CaseVerdict::pass) return {};
  std::string out = fmt::format("scenario {} ({}), swarm seed {}: {}\n", r.scenario, r.path, r.seed,
                                sim::to_string(r.verdict));
  if (!r.violations.empty()) {
    out += fmt::format("  invariant(s) violated: {}\n", fmt::join(r.violations, ", "));
  }
  out += fmt::format("  first: {}\n", r.message);
  if (!r.replay.empty()) out += fmt::format("  replay: {}\n", r.replay);
  return out;
}

}  // namespace rehearse::testing
