#include "sim/cli/campaign_cli.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "model/assert.hpp"
#include "sim/check/junit.hpp"
#include "sim/check/progress.hpp"
#include "sim/cli/output_file.hpp"

namespace rehearse::cli {

const std::vector<OptionSpec>& campaign_option_specs() {
  static const std::vector<OptionSpec> specs{
      {"--threads", true, "T", "run T cases side by side (1-256, default: every core)"},
      {"--shard", true, "K/N", "run the K-th of N contiguous blocks of the seeds"},
      {"--jsonl", true, "FILE", "write every case as JSON Lines (for rehearse merge)"},
      {"--junit", true, "FILE", "write JUnit XML (testcase per scenario and 100 seeds)"},
      {"--progress", false, "", "progress line on stderr even when it is not a terminal"},
  };
  return specs;
}

std::vector<OptionSpec> with_campaign_options(std::vector<OptionSpec> own) {
  const auto& mine = campaign_option_specs();
  own.insert(own.end(), mine.begin(), mine.end());
  // A command's own option named like a campaign option would shadow it.
  for (std::size_t i = 0; i < own.size(); ++i) {
    for (std::size_t j = i + 1; j < own.size(); ++j) REHEARSE_ASSERT_NE(own[i].name, own[j].name);
  }
  return own;
}

namespace {

Status check_paths(const CampaignSettings& s, const std::vector<std::string>& inputs,
                   bool as_json) {
  for (const auto& [flag, path] :
       {std::pair{"--jsonl", s.jsonl_path}, std::pair{"--junit", s.junit_path}}) {
    if (!path) continue;
    if (*path == "-" && as_json) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("{} - and --json both want standard output: give {} a file",
                                    flag, flag));
    }
    if (Status st = check_output_path(*path, inputs); !st.ok()) return st;
  }
  if (s.jsonl_path && s.jsonl_path == s.junit_path && *s.jsonl_path != "-") {
    return make_error(ErrorCode::invalid_argument,
                      "--jsonl and --junit name the same file: give each its own");
  }
  if (s.jsonl_path == "-" && s.junit_path == "-") {
    return make_error(ErrorCode::invalid_argument,
                      "--jsonl - and --junit - both want standard output: give one a file");
  }
  return {};
}

}  // namespace

Result<CampaignSettings> read_campaign_settings(const ParsedArgs& parsed,
                                                const std::vector<std::string>& inputs,
                                                bool as_json) {
  CampaignSettings s;
  s.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto n = parsed.value("--threads")) {
    auto c = parse_count("--threads", *n, 1, 256);
    if (!c) return c.error();
    s.threads = static_cast<int>(*c);
  }
  if (auto text = parsed.value("--shard")) {
    auto shard = sim::parse_shard(*text);
    if (!shard) return shard.error();
    s.shard = *shard;
  }
  s.jsonl_path = parsed.value("--jsonl");
  s.junit_path = parsed.value("--junit");
  s.show_progress = parsed.has("--progress") || isatty(fileno(stderr)) != 0;
  if (Status st = check_paths(s, inputs, as_json); !st.ok()) return st.error();
  // parse_count and parse_shard enforced these ranges (the default is one shard).
  REHEARSE_ASSERT_GE(s.threads, 1);
  REHEARSE_ASSERT_GE(s.shard.index, 1u);
  REHEARSE_ASSERT_LE(s.shard.index, s.shard.count);
  return s;
}

std::vector<sim::TimedRecord> run_check_cases(const std::vector<sim::CheckCase>& cases,
                                              const sim::CaseFunction& run_case,
                                              const CampaignSettings& settings) {
  REHEARSE_ASSERT_GE(settings.threads, 1);  // read_campaign_settings' range
  sim::CampaignOptions options;
  options.threads = settings.threads;
  if (!settings.show_progress) {
    auto records = sim::run_campaign(cases, run_case, options);
    REHEARSE_ASSERT_EQ(records.size(), cases.size());  // one record per case, none lost
    return records;
  }
  sim::ProgressLine line(stderr, "check", sim::stderr_progress_style());
  options.progress = [&line](std::size_t done, std::size_t total) { line.update(done, total); };
  auto records = sim::run_campaign(cases, run_case, options);
  REHEARSE_ASSERT_EQ(records.size(), cases.size());
  line.finish(cases.size(), cases.size());
  return records;
}

Status write_campaign_outputs(const sim::CampaignHeader& header,
                              const std::vector<sim::TimedRecord>& records, int exit_code,
                              double wall_ms, const CampaignSettings& settings) {
  // `check` computed the code (docs/cli.md lists them) and timed the run.
  REHEARSE_ASSERT_GE(exit_code, kExitOk);
  REHEARSE_ASSERT_LE(exit_code, kExitOutOfMemory);
  REHEARSE_ASSERT_GE(wall_ms, 0.0);
  if (settings.jsonl_path) {
    const std::string text = sim::campaign_jsonl(header, records, exit_code, wall_ms);
    if (Status s = write_output_file(*settings.jsonl_path, text); !s.ok()) return s;
  }
  if (settings.junit_path) {
    return write_output_file(*settings.junit_path, sim::render_junit(header, records));
  }
  return {};
}

std::vector<sim::CaseRecord> plain_records(const std::vector<sim::TimedRecord>& records) {
  std::vector<sim::CaseRecord> out;
  out.reserve(records.size());
  for (const sim::TimedRecord& r : records) out.push_back(r.record);
  REHEARSE_ASSERT_EQ(out.size(), records.size());
  return out;
}

}  // namespace rehearse::cli
