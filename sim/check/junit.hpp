// JUnit XML for CI systems (`rehearse check --junit FILE`, `rehearse merge
// --junit FILE`): one <testsuite> per scenario (a generated world's is
// "generated"), one <testcase> per block of kJunitSeedGroup seeds of it
// (blocks counted from the run's first seed, so the names stay the same
// from run to run: "seeds 0..99", "seeds 100..199"). A block with failing
// seeds carries one <failure> (an <error> when its seeds only erred) whose
// text names every failing seed with its invariants, message, replay command
// and shrunk scenario file. Times are wall seconds (the only thing here that
// is not the same from run to run). docs/check-ci.md has the layout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/check/campaign_file.hpp"

namespace rehearse::sim {

inline constexpr std::uint64_t kJunitSeedGroup = 100;

// The document for `records` (in run order) of the run `header` describes.
std::string render_junit(const CampaignHeader& header, const std::vector<TimedRecord>& records);

// `text` made safe for XML 1.0 character data and attribute values: the five
// markup characters as entities, tab / newline / carriage return as character
// references (so attributes keep them), other control characters and bytes
// that are not UTF-8 as U+FFFD.
std::string xml_escape(std::string_view text);

}  // namespace rehearse::sim
