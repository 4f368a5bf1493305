// Inferred fault windows written into a scenario (docs/import.md, "The
// imported scenario"). The base scenario gives the jobs, the services and the
// span; the import adds one fault per window, each with its evidence in its
// `note`, and the file's `notes` say what was read and what was guessed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/import/fault_windows.hpp"

namespace rehearse::sim {

struct ImportInput {
  nlohmann::ordered_json base;  // the --into scenario as written
  std::string base_path;
  std::vector<std::string> sources;  // the files the evidence came from
  std::string name;                  // the new scenario name (empty: the base's)
};

struct ImportResult {
  nlohmann::ordered_json scenario;
  std::vector<nlohmann::ordered_json> faults;  // the faults added, as written
  std::vector<Ambiguity> ambiguities;          // the windows' and the merge's
};

// Fails (exit 2 at the command line) when the base scenario has no usable
// span or the result does not load: the error names the file and pointer.
Result<ImportResult> import_windows(const ImportInput& input, const InferredWindows& inferred);

// The fault a window becomes, clipped to [start, until]; none when the
// window lies outside it (an ambiguity says so).
nlohmann::ordered_json fault_of(const InferredWindow& w, TimeMs start_ms, TimeMs until_ms);

// "inferred from 4 failed calls (503) ...": the evidence as one sentence.
std::string evidence_note(const InferredWindow& w);

}  // namespace rehearse::sim
