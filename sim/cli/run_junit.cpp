#include "sim/cli/run_junit.hpp"

#include <fmt/format.h>

#include <cstddef>

#include "model/assert.hpp"
#include "sim/check/junit.hpp"

namespace rehearse::cli {
namespace {

// What failed, most telling first: the invariants that fired, the expected
// violations that never did, the expectations, the run's own errors, and
// under --strict what made the run incomplete.
std::vector<std::pair<std::string, std::string>> failed_parts(const sim::Verdict& verdict) {
  std::vector<std::pair<std::string, std::string>> parts;  // (type, words)
  for (const sim::Violation& v : verdict.violations) parts.emplace_back(v.invariant, v.invariant);
  for (const std::string& name : verdict.expected_missing) {
    parts.emplace_back("expectation", fmt::format("expected {} never fired", name));
  }
  if (!verdict.expect_failures.empty()) {
    parts.emplace_back("expectation",
                       fmt::format("{} expectation{} failed", verdict.expect_failures.size(),
                                   verdict.expect_failures.size() == 1 ? "" : "s"));
  }
  for (const std::string& e : verdict.errors) parts.emplace_back("error", e);
  if (verdict.strict && verdict.incomplete()) {
    parts.emplace_back("strict", "--strict: a flag or an invariant the monitors could not check");
  }
  return parts;
}

}  // namespace

RunJunitCase junit_case(const sim::Scenario& scenario, const sim::ScenarioRunResult& run,
                        const sim::Verdict& verdict, double wall_ms) {
  REHEARSE_ASSERT_GE(wall_ms, 0.0);  // measured on a steady clock
  RunJunitCase c;
  c.path = scenario.path.empty() ? scenario.name : scenario.path;
  c.scenario = scenario.name;
  c.seconds = wall_ms / 1000.0;
  if (verdict.held()) return c;
  c.outcome = RunJunitCase::Outcome::failed;
  const auto parts = failed_parts(verdict);
  std::vector<std::string> words;
  for (const auto& part : parts) words.push_back(part.second);
  c.type = parts.empty() ? std::string("failed") : parts.front().first;
  c.message = fmt::format("seed {}: {}", run.seed, fmt::join(words, ", "));
  c.text = sim::format_findings(run, verdict);
  return c;
}

RunJunitCase junit_error_case(const std::string& path, const Error& error) {
  RunJunitCase c;
  c.path = path;
  c.scenario = path;
  c.outcome = RunJunitCase::Outcome::error;
  c.message = error.describe();
  c.type = to_string(error.code);
  c.text = error.describe() + "\n";
  return c;
}

std::string render_run_junit(const std::vector<RunJunitCase>& cases) {
  std::size_t failures = 0, errors = 0;
  double seconds = 0;
  for (const RunJunitCase& c : cases) {
    REHEARSE_ASSERT_GE(c.seconds, 0.0);
    // A failure or error always says what it was (the message and type attributes).
    if (c.outcome != RunJunitCase::Outcome::passed) REHEARSE_ASSERT(!c.type.empty());
    failures += c.outcome == RunJunitCase::Outcome::failed ? 1 : 0;
    errors += c.outcome == RunJunitCase::Outcome::error ? 1 : 0;
    seconds += c.seconds;
  }
  const std::string counts =
      fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\"", cases.size(), failures, errors);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"rehearse run\" {} time=\"{:.3f}\">\n", counts, seconds);
  out += fmt::format("  <testsuite name=\"rehearse run\" {} skipped=\"0\" time=\"{:.3f}\">\n",
                     counts, seconds);
  for (const RunJunitCase& c : cases) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"",
                       sim::xml_escape(c.scenario), sim::xml_escape(c.path), c.seconds);
    if (c.outcome == RunJunitCase::Outcome::passed) {
      out += "/>\n";
      continue;
    }
    const char* element = c.outcome == RunJunitCase::Outcome::failed ? "failure" : "error";
    out += fmt::format(">\n      <{} message=\"{}\" type=\"{}\">{}</{}>\n    </testcase>\n",
                       element, sim::xml_escape(c.message), sim::xml_escape(c.type),
                       sim::xml_escape(c.text), element);
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace rehearse::cli
