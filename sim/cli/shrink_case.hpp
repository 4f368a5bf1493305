// `rehearse check --shrink-to DIR`: a failed case's scenario document shrunk
// (sim/check/shrink.hpp) and written as an ordinary scenario file that
// `rehearse run FILE` replays to the same violation with the same build
// (docs/shrinking.md).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/check/case_record.hpp"
#include "sim/check/shrink.hpp"

namespace rehearse::cli {

struct ShrinkCaseOptions {
  std::string dir;  // --shrink-to DIR
  std::size_t max_probes = sim::kDefaultShrinkProbes;
  // How the candidates run: the build under test. Default: this binary's
  // core (a mutant build's rehearse runs its mutant); a test may plug in a
  // faulty variant, as for the case's own run.
  sim::RunOptions run_options;
};

// The invariant a failed case is shrunk for: the first of its violations that
// is an invariant of the monitors' registry (so expect.violations can name it)
// and that one run can show (not `deterministic`, which needs two; not a core
// assertion); empty when none.
std::string invariant_to_shrink(const sim::CaseRecord& record);

// Before anything runs: DIR is created when missing; an existing path that
// is not a directory is an error naming it (exit 2 for the caller).
Status prepare_shrink_dir(const std::string& dir);

// Shrinks `document` (the scenario the failed case ran, as run) for
// invariant_to_shrink(record), writes DIR/<scenario>-seed<S>-<invariant>.json
// by the output-file rule (sim/cli/output_file.hpp: atomic, never over an
// input), sets record.shrunk to that path and returns what to print: before
// and after, the faults after, and `rehearse run <file>`. Errors: nothing to
// shrink for, the document does not reproduce the violation, the file cannot
// be written (record.shrunk stays empty).
Result<std::string> shrink_failed_case(sim::CaseRecord& record, const nlohmann::json& document,
                                       const ShrinkCaseOptions& options);

}  // namespace rehearse::cli
