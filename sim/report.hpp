// Report: what a run of a scenario comes to (docs/run.md).
//
// - check_expectations: every field of the scenario's `expect` block against
//   the monitors' tallies (counts the monitors derived from the trace, never
//   the core's own word) and the final durable state (the store read back
//   after the run). Each mismatch names its JSON pointer:
//   `expect /expect/jobs/weekly/retries: expected 1, got 2`.
// - judge_run: the verdict. Without `expect.violations` every invariant must
//   hold; with it, the run passes only if exactly those invariants fired.
// - summary rows, an aligned table, the replay command, and the JSON form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// world.hpp first: it orders the sim headers so that the scenario's
// `sim::Services` does not hide the `rehearse::Services` port.
#include "sim/world.hpp"
#include "sim/monitors.hpp"
#include "sim/scenario.hpp"

namespace rehearse::sim {

struct ExpectFailure {
  std::string pointer;   // "/expect/jobs/weekly/retries"
  std::string expected;  // "1", "at most 30m", "ok"
  std::string got;       // "2"

  // "expect /expect/jobs/weekly/retries: expected 1, got 2"
  std::string describe() const;
};

std::vector<ExpectFailure> check_expectations(const Scenario& scenario,
                                              const ScenarioRunResult& run);

struct Verdict {
  // Violations that make the run fail: every one when none was expected,
  // otherwise those not listed in expect.violations.
  std::vector<Violation> violations;
  // Expected (expect.violations) and seen: reported, not failures.
  std::vector<Violation> expected_seen;
  // Listed in expect.violations but never fired: failures.
  std::vector<std::string> expected_missing;
  std::vector<ExpectFailure> expect_failures;
  std::vector<std::string> errors;  // the run could not be carried out

  bool held() const noexcept {
    return violations.empty() && expected_missing.empty() && expect_failures.empty() &&
           errors.empty();
  }
};

// `determinism` is compare_traces() of a second run with the same seed (or
// empty when the traces are identical or no second run was made).
Verdict judge_run(const Scenario& scenario, const ScenarioRunResult& run,
                  const std::optional<Violation>& determinism);

// `rehearse run PATH --seed N --trace t.jsonl`
std::string replay_command(const std::string& path, std::uint64_t seed);

struct SummaryRow {
  std::string scenario;
  std::int64_t jobs = 0;
  std::int64_t delivered = 0;
  std::int64_t skipped = 0;
  std::int64_t failed = 0;
  std::int64_t in_flight = 0;
  std::int64_t retries = 0;
  std::int64_t exhausted = 0;      // slots whose retries ran out
  std::int64_t notifications = 0;  // over every event kind
  std::uint64_t events = 0;        // simulator events executed
  DurationMs span_ms = 0;          // virtual time covered
  double wall_ms = 0;              // measured by the caller (never inside a run)
  std::string trace_hash;
  bool held = true;
};

SummaryRow summarize(const Scenario& scenario, const ScenarioRunResult& run, double wall_ms,
                     bool held);

// The rows as an aligned text table with a header line.
std::string format_table(const std::vector<SummaryRow>& rows);

// The lines after the table for one scenario: each violation (invariant,
// event index, virtual time, seed, message), each missing expected
// violation, each expectation failure and error, then the replay command.
// Empty when the run held.
std::string format_findings(const ScenarioRunResult& run, const Verdict& verdict);

nlohmann::json to_json(const SummaryRow& row);
nlohmann::json to_json(const Violation& violation);
nlohmann::json report_json(const Scenario& scenario, const ScenarioRunResult& run,
                           const Verdict& verdict, const SummaryRow& row);

}  // namespace rehearse::sim
