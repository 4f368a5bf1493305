// rehearse merge FILE... [--json] [--junit FILE] [--jsonl FILE]
//
// Combines the JSON Lines files of `rehearse check --shard K/N --jsonl FILE`
// into the report of the whole run: the same lines, --json document and exit
// code the unsharded run gives (the report is printed by the same code,
// print_check_report of cmd_check.cpp; wall times are the sum of the shards'). The files must be
// the shards of one run: the same command, scenarios, seed range and options, shards K/N with one
// N, each K once, every case present once. Anything else is bad input (exit 2) naming the file and
// line and what was expected. docs/check-ci.md.
#include <fmt/core.h>

#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/check/campaign_file.hpp"
#include "sim/check/check.hpp"
#include "sim/check/junit.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/campaign_cli.hpp"
#include "sim/cli/check_coverage.hpp"
#include "sim/cli/check_report.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/output_file.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kMergeHelp =
    "usage: rehearse merge FILE... [--json] [--junit FILE] [--jsonl FILE]\n"
    "\n"
    "Combines the JSON Lines files written by 'rehearse check --shard K/N --jsonl FILE'\n"
    "into one report: the same lines, --json document and exit code as the same\n"
    "check run without --shard. The files may come in any order; they must be the\n"
    "shards of one run (same command, scenarios, first seed, seed count and options;\n"
    "shards K/N with the same N, each K exactly once, every case once). A missing,\n"
    "duplicate or foreign shard, a truncated or corrupt line is bad input: exit 2,\n"
    "naming the file and line and what was expected there.\n"
    "\n"
    "--junit FILE writes JUnit XML for CI (one testcase per scenario and block of\n"
    "100 seeds); --jsonl FILE writes the merged run as one JSON Lines file. Both\n"
    "follow the output-file rule of docs/cli.md (a regular file is replaced\n"
    "atomically; an input is never overwritten). docs/check-ci.md has the recipes.\n"
    "\n"
    "Exit codes: those of the check run (the worst over the shards: 0 every case\n"
    "held, 1 an invariant failed, ...), 2 bad input.\n";

const std::vector<OptionSpec> kMergeOptions{
    {"--json", false, "", "print one JSON document (as 'check --json' does)"},
    {"--junit", true, "FILE", "write JUnit XML of the merged run"},
    {"--jsonl", true, "FILE", "write the merged run as one JSON Lines file"},
};

Result<std::vector<sim::CampaignFile>> read_files(const std::vector<std::string>& paths) {
  std::vector<sim::CampaignFile> files;
  for (const std::string& path : paths) {
    auto file = sim::read_campaign_file(path);
    if (!file) return file.error();
    files.push_back(std::move(*file));
  }
  REHEARSE_ASSERT_EQ(files.size(), paths.size());  // one file per path, in order
  return files;
}

// The outputs other than stdout, checked before anything is read.
Status check_outputs(const ParsedArgs& parsed) {
  const auto junit = parsed.value("--junit");
  const auto jsonl = parsed.value("--jsonl");
  for (const auto& path : {junit, jsonl}) {
    if (!path) continue;
    if (*path == "-" && parsed.has("--json")) {
      return make_error(ErrorCode::invalid_argument,
                        "--json wants standard output: give --junit / --jsonl a file");
    }
    if (Status s = check_output_path(*path, parsed.positionals); !s.ok()) return s;
  }
  if (junit && junit == jsonl && *junit != "-") {
    return make_error(ErrorCode::invalid_argument,
                      "--junit and --jsonl name the same file: give each its own");
  }
  return {};
}

Status write_outputs(const ParsedArgs& parsed, const sim::MergedCampaign& merged) {
  // The merged run is written as the whole run, never as one of its shards.
  REHEARSE_ASSERT(merged.header.shard == sim::Shard{});
  if (const auto junit = parsed.value("--junit")) {
    if (Status s = write_output_file(*junit, sim::render_junit(merged.header, merged.records));
        !s.ok()) {
      return s;
    }
  }
  if (const auto jsonl = parsed.value("--jsonl")) {
    return write_output_file(*jsonl,
                             sim::campaign_jsonl(merged.header, merged.records, merged.exit_code));
  }
  return {};
}

// What the report needs of the check options: --json from this command,
// --emit from the shards' header.
sim::CheckOptions report_options(const ParsedArgs& parsed, const sim::CampaignHeader& header) {
  sim::CheckOptions o;
  o.json = parsed.has("--json");
  const auto emit = header.options.find("emit");
  if (emit != header.options.end() && emit->is_string()) o.emit_dir = emit->get<std::string>();
  o.coverage = header.options.value("coverage", false);
  o.require_coverage = header.options.value("require_coverage", false);
  return o;
}

}  // namespace

int cmd_merge(const Args& args) {
  auto parsed = parse_args(args, kMergeOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse merge --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kMergeHelp, format_options_help(kMergeOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty()) {
    return usage_error("merge: missing FILE (the shard files of one check run)",
                       "see 'rehearse merge --help'");
  }
  if (Status s = check_outputs(*parsed); !s.ok()) return input_error(s.error());
  auto files = read_files(parsed->positionals);
  if (!files) return input_error(files.error());
  auto merged = sim::merge_campaign_files(*files);
  if (!merged) return input_error(merged.error());
  if (Status s = write_outputs(*parsed, *merged); !s.ok()) return input_error(s.error());
  const sim::CheckOptions report = report_options(*parsed, merged->header);
  const std::vector<sim::CaseRecord> records = plain_records(merged->records);
  const int exit_code =
      coverage_exit_code(tally_coverage(records), report.require_coverage, merged->exit_code);
  // Judging coverage can only make the shards' worst code worse.
  REHEARSE_ASSERT_GE(exit_code, merged->exit_code);
  print_check_report(records, merged->wall_ms / 1000, report, exit_code);
  return exit_code;
}

}  // namespace rehearse::cli
