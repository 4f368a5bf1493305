// The report of `rehearse check` (the lines of the cases that did not pass and
// the summary, or the --json document), defined in cmd_check.cpp and called by
// `rehearse merge` too (cmd_merge.cpp), so that shard files merged print what
// the unsharded run prints (docs/check-ci.md).
#pragma once

#include <string>
#include <vector>

#include "sim/check/case_record.hpp"
#include "sim/check/check.hpp"

namespace rehearse::cli {

// `o` supplies --json and --emit; `wall_s` is the time the cases took;
// `shrink_notes` (per case, may be empty) is what --shrink-to printed for it.
void print_check_report(const std::vector<sim::CaseRecord>& records, double wall_s,
                        const sim::CheckOptions& o, int exit_code,
                        const std::vector<std::string>& shrink_notes = {});

}  // namespace rehearse::cli
