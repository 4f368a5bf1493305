// `rehearse check --coverage` and `--require-coverage` (docs/check.md
// "Coverage"): how many cases reached each reachability point
// (sim/check/reachability.hpp), printed after the summary or as the --json
// document's "coverage"; with --require-coverage, a point no case reached
// fails the run (exit 1). `rehearse merge` applies the same to the merged
// records, so a sharded run is judged whole, not shard by shard.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/case_record.hpp"

namespace rehearse::cli {

struct CoverageTally {
  std::vector<std::pair<std::string, std::size_t>> cases_per_point;  // table order
  std::vector<std::string> unreached;
  std::size_t cases = 0;
};

CoverageTally tally_coverage(const std::vector<sim::CaseRecord>& records);
// The table (point, cases, meaning) and a last line naming the unreached points.
std::string coverage_text(const CoverageTally& tally);
// {"cases", "points": {name: cases}, "unreached": [...]}
nlohmann::json coverage_json(const CoverageTally& tally);
// The run's exit code once coverage is judged: at least 1 when required and a
// point was reached by no case.
int coverage_exit_code(const CoverageTally& tally, bool required, int exit_code);

}  // namespace rehearse::cli
