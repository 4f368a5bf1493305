// The options of `rehearse check` that belong to the campaign runner
// (sim/check/campaign.hpp), read and carried out in one place so cmd_check
// only adds them: --threads T, --shard K/N, --jsonl FILE, --junit FILE,
// --progress. docs/check-ci.md describes them for users.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/check/campaign.hpp"
#include "sim/check/campaign_file.hpp"
#include "sim/cli/args.hpp"

namespace rehearse::cli {

// Appended to a command's own options.
const std::vector<OptionSpec>& campaign_option_specs();
// `own` followed by the campaign options.
std::vector<OptionSpec> with_campaign_options(std::vector<OptionSpec> own);

struct CampaignSettings {
  int threads = 1;
  sim::Shard shard;
  std::optional<std::string> jsonl_path;
  std::optional<std::string> junit_path;
  bool show_progress = false;  // --progress, or stderr is a terminal
};

// Reads and checks the options, the output paths against `inputs` (before
// anything runs; exit 2 on an error). `as_json`: stdout is taken.
Result<CampaignSettings> read_campaign_settings(const ParsedArgs& parsed,
                                                const std::vector<std::string>& inputs,
                                                bool as_json);

// Runs the cases of this shard on the settings' threads with the progress
// line on stderr when asked for; the records come back in case order.
std::vector<sim::TimedRecord> run_check_cases(const std::vector<sim::CheckCase>& cases,
                                              const sim::CaseFunction& run_case,
                                              const CampaignSettings& settings);

// Writes --jsonl and --junit when given (each whole or not at all).
Status write_campaign_outputs(const sim::CampaignHeader& header,
                              const std::vector<sim::TimedRecord>& records, int exit_code,
                              double wall_ms, const CampaignSettings& settings);

// The records without their wall times.
std::vector<sim::CaseRecord> plain_records(const std::vector<sim::TimedRecord>& records);

}  // namespace rehearse::cli
