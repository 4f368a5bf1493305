// Report: what a run of a scenario comes to (docs/run.md).
//
// - the `expect` block is checked in sim/world/expect.hpp (check_expectations).
// - judge_run: the verdict. Without `expect.violations` every invariant must
//   hold; with it, the run passes only if exactly those invariants fired.
//   The scenario's flags and the invariants the monitors could not check are
//   part of the verdict: reported always, failures under `strict`.
// - summary rows, an aligned table, the replay command, and the JSON form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/monitors/monitor_set.hpp"
#include "sim/world/expect.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/service_load.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

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
  // Valid but suspicious (the same flags `rehearse validate` prints).
  std::vector<ScenarioFlag> flags;
  // Invariants the monitors could not judge: tallies()["unchecked"] entries
  // ({"invariant", "subject", "why"}).
  nlohmann::json unchecked = nlohmann::json::array();
  bool strict = false;  // flags and unchecked invariants are failures

  // The run proved less than a clean pass: a flag or an unchecked invariant.
  bool incomplete() const noexcept { return !flags.empty() || !unchecked.empty(); }
  bool held() const noexcept {
    return violations.empty() && expected_missing.empty() && expect_failures.empty() &&
           errors.empty() && !(strict && incomplete());
  }
};

// `determinism` is compare_traces() of a second run with the same seed (or
// empty when the traces are identical or no second run was made).
Verdict judge_run(const Scenario& scenario, const ScenarioRunResult& run,
                  const std::optional<Violation>& determinism, bool strict = false);

// One flag as `validate` and `run` print it:
// "path:/jobs/1/retry_policy: warning [policy_error]: ..." ("error" when strict).
std::string describe(const ScenarioFlag& flag, bool strict);
nlohmann::json to_json(const ScenarioFlag& flag);

// `rehearse run PATH --seed N --trace t.jsonl`
// `strict`: the run was judged with --strict, and so is its replay.
std::string replay_command(const std::string& path, std::uint64_t seed, bool strict = false);

struct SummaryRow {
  std::string scenario;
  std::string path;   // the file; shown when two rows share a scenario name
  std::string error;  // the file did not load or could not run: an ERROR row
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
  // Why the run proved less than it says (unchecked invariants, flags): the
  // result reads "ok*" and these are the footnotes.
  std::vector<std::string> notes;

  // "ok", "ok*", "FAIL" or "ERROR".
  std::string result() const;
};

SummaryRow summarize(const Scenario& scenario, const ScenarioRunResult& run, double wall_ms,
                     bool held);
// The row of a file that did not load or could not run.
SummaryRow error_row(const std::string& path, const std::string& error);
// Footnotes of a verdict's flags and unchecked invariants.
std::vector<std::string> verdict_notes(const Verdict& verdict);

// The rows as an aligned text table with a header line, then one footnote
// line per note of an "ok*" row. A scenario name shared by two rows is shown
// with its file's path.
std::string format_table(const std::vector<SummaryRow>& rows);

// The lines after the table for one scenario: each violation (invariant,
// event index, virtual time, seed, message), each missing expected
// violation, each expectation failure and error, under `strict` each flag
// and unchecked invariant, then the replay command. Empty when the run held.
std::string format_findings(const ScenarioRunResult& run, const Verdict& verdict);

nlohmann::json to_json(const SummaryRow& row);
nlohmann::json to_json(const Violation& violation);

// The run's fleet load (sim/world/service_load.hpp, docs/run.md "Fleet
// load") when the scenario wants one (wants_service_load) and the run kept
// its trace to read it from; nullopt otherwise, and for a run cut short by
// running out of memory (its trace was let go).
std::optional<std::vector<ServiceLoad>> run_service_load(const Scenario& scenario,
                                                         const ScenarioRunResult& run);

// The --json document of one run; with `load` (run_service_load) when there is one.
nlohmann::json report_json(const Scenario& scenario, const ScenarioRunResult& run,
                           const Verdict& verdict, const SummaryRow& row);

}  // namespace rehearse::sim
