// The JSON Lines file of a `rehearse check` run or shard (`--jsonl FILE`), and
// merging shard files back into the whole run (`rehearse merge`).
//
//   {"type":"header","format":1,"command":"check","scenarios":[...],
//    "first_seed":0,"seeds":2000,"shard":"2/4","options":{...}}
//   {"type":"case", <the CaseRecord's keys (case_record.hpp)>, "wall_ms":12.5}
//   ...one line per case, in the run's case order...
//   {"type":"summary","cases":500,"passed":499,"failed":1,"errors":0,"exit_code":1,
//    "wall_ms":61250}
//
// `first_seed` and `seeds` are the WHOLE run's range; the shard's own seeds
// follow from `shard` (shard_seeds). `options` holds every option that
// changes the records (e.g. random_jobs), so shards of different runs cannot
// be merged. `wall_ms` is the only key that differs between two runs of the
// same seeds (with the summary's `wall_ms`, the time the shard took). A file without its summary
// line is truncated. docs/check-ci.md has the format for users.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/check/campaign.hpp"

namespace rehearse::sim {

inline constexpr int kCampaignFormat = 1;

struct CampaignHeader {
  std::string command = "check";
  std::vector<std::string> scenarios;  // the scenario files, in run order; empty: generated worlds
  std::uint64_t first_seed = 0;        // the whole run's seed range
  std::uint64_t seeds = 0;
  Shard shard;
  nlohmann::json options = nlohmann::json::object();  // the options that change results

  SeedRange whole() const { return {first_seed, seeds}; }
  SeedRange shard_range() const { return shard_seeds(whole(), shard); }
  bool operator==(const CampaignHeader&) const = default;
};

struct CampaignSummary {
  CampaignCounts counts;
  int exit_code = 0;
  double wall_ms = 0;  // the wall time the run (or shard) took; optional when read
  bool operator==(const CampaignSummary&) const = default;
};

// The whole file: header line, one line per record, summary line.
std::string campaign_jsonl(const CampaignHeader& header, const std::vector<TimedRecord>& records,
                           int exit_code, double wall_ms = 0);

// A file read back, with the line number of each case (for errors).
struct CampaignFile {
  std::string path;
  CampaignHeader header;
  std::vector<TimedRecord> records;
  std::vector<std::size_t> lines;  // lines[i]: the line of records[i] (1-based)
  CampaignSummary summary;
  std::size_t summary_line = 0;
};

// Parses `text` (the contents of `path`). An error's `where` is
// "path:line:column" and its message says what was expected there: a header
// first, cases, then one summary whose counts match the cases, nothing after.
Result<CampaignFile> parse_campaign_jsonl(std::string_view text, const std::string& path);
Result<CampaignFile> read_campaign_file(const std::string& path);

// Shard files merged into the whole run: the header with shard 1/1, every
// record in the run's case order, the worst exit code of the shards, the sum
// of their wall times.
struct MergedCampaign {
  CampaignHeader header;
  std::vector<TimedRecord> records;
  int exit_code = 0;
  double wall_ms = 0;
};

// Checks the files belong to one run (same command, scenarios, seed range
// and options; shards K/N with one N, each K exactly once; no case twice,
// none missing, each in its own shard's seeds) and combines them. Errors
// name the file and line and what was expected.
Result<MergedCampaign> merge_campaign_files(const std::vector<CampaignFile>& files);

}  // namespace rehearse::sim
