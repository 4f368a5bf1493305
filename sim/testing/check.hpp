// Checking a scenario from a user's own tests (docs/library.md): run it in
// the simulated world on the real core and judge it exactly as `rehearse run`
// does (sim/report/report.hpp judge_run: every invariant, the scenario's `expect`,
// and by default a second run with the same seed for `deterministic`).
//
// No GoogleTest or RapidCheck here: sim/testing/gtest.hpp and
// sim/testing/property.hpp turn an outcome into a test failure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/case_record.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::testing {

struct CheckOptions {
  std::optional<std::uint64_t> seed;  // overrides the scenario's own
  bool determinism = true;            // run twice with the seed, compare the traces
  bool strict = false;                // flags and unchecked invariants fail (run --strict)
};

// What one checked run came to.
struct CheckOutcome {
  std::string scenario;  // its name
  std::string path;      // its file; empty for a document
  std::uint64_t seed = 0;
  // Invariants that fired and were not expected (expect.violations), each
  // once, in firing order; `first_message` is the first one's message.
  std::vector<std::string> violations;
  std::string first_message;
  // Everything else that makes the run fail, one line each: the document did
  // not load or could not run, a failed expectation, an expected violation
  // that did not happen, an error inside the run.
  std::vector<std::string> problems;
  std::string findings;  // the lines `rehearse run` prints after its table (empty: held)
  std::string replay;    // the command that replays this run
  std::string document;  // the scenario as JSON, when it did not come from a file

  bool held() const noexcept { return violations.empty() && problems.empty(); }
};

CheckOutcome check_scenario(const sim::Scenario& scenario, const CheckOptions& options = {});
CheckOutcome check_scenario_path(const std::string& path, const CheckOptions& options = {});
CheckOutcome check_scenario_doc(const nlohmann::json& doc, const CheckOptions& options = {});
// Whether the document loads, runs, and every invariant holds.
bool holds(const nlohmann::json& doc, const CheckOptions& options = {});

// The failure message: which invariants, the first message, the findings,
// the replay command (and, for a document, the document to save first).
// Empty when the outcome held.
std::string describe(const CheckOutcome& outcome);

// Seeds first, first + 1, ..., first + count - 1.
struct SeedRange {
  std::uint64_t first = 1;
  std::uint64_t count = 1;
};

// The scenario file once per seed; the outcomes that failed, in seed order
// (empty: every seed held).
std::vector<CheckOutcome> check_seeds(const std::string& path, SeedRange seeds,
                                      const CheckOptions& options = {});

// The swarm search of `rehearse check` (docs/check.md) over a scenario file:
// per seed, the world derived from it (sim/check/swarm.hpp: a random set of
// fault kinds switched on, faults drawn for them), run and judged
// (sim/check/check.hpp check_case). The records of the seeds that did not
// pass, in seed order (empty: every seed passed); a file that cannot be read
// or parsed is one `error` record.
std::vector<sim::CaseRecord> check_swarm(const std::string& path, SeedRange seeds);

// A failed case as a failure message: verdict, invariants, first message and
// the replay command (`rehearse check PATH --seeds 1 --first-seed N`).
std::string describe(const sim::CaseRecord& record);

}  // namespace rehearse::testing
