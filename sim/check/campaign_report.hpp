// The report of a `rehearse check` run, printed the same way for one run and
// for shard files merged by `rehearse merge` (so the two cannot drift apart):
// a table with one row per scenario (seeds, passed, failed, errors), a total
// line, then every failing or erring seed with its invariants, message,
// replay command and shrunk file; or, under --json, one document with the
// same content. No wall time appears in either (docs/check-ci.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/campaign_file.hpp"

namespace rehearse::sim {

std::string format_check_report(const CampaignHeader& header,
                                const std::vector<TimedRecord>& records, int exit_code);

// {"ok", "exit_code", "command", "first_seed", "seeds", "shard", "options",
//  "counts": {cases, passed, failed, errors},
//  "scenarios": [{"path", "scenario", "cases", "passed", "failed", "errors"}],
//  "failures": [the records that did not pass, as to_json(CaseRecord)]}
nlohmann::json check_report_json(const CampaignHeader& header,
                                 const std::vector<TimedRecord>& records, int exit_code);

}  // namespace rehearse::sim
