// rehearse status STATE_DIR [STATE_DIR] [--json] [--html FILE] [--scenario FILE]
//
// The core's status view (model/status_view.hpp) of a real state directory
// (sim/cli/state_dir.hpp), read through the production POSIX disk adapter,
// read-only: every write the store might attempt is refused, and the lock
// file is used only when it already exists. With two directories, each job's records are merged
// field by field (model/view_merge.hpp): the first directory plays `jobs.json`, the second
// `jobs_state.json` (it wins ties). docs/report.md has the details.
#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/retry_machine.hpp"
#include "model/state_codec.hpp"
#include "model/status_view.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/state_dir.hpp"
#include "sim/report/html_report.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kStatusHelp =
    "usage: rehearse status STATE_DIR [STATE_DIR] [--json] [--html FILE] [--scenario FILE]\n"
    "\n"
    "Shows the status view of a state directory (retry_state.json and its journal,\n"
    "docs/state-file.md): retrying, exhausted and failed jobs apart, with counts,\n"
    "badges and policies. The directory is only read, never written or repaired.\n"
    "Two directories: each job's records are merged field by field (the newer\n"
    "updated_at wins; the second directory wins ties).\n"
    "\n"
    "Policies are not stored in a state directory: --scenario FILE takes each job's\n"
    "retry_policy from a scenario file; without it the policy reads 'not known'.\n"
    "\n"
    "Exit codes: 0 shown, 2 bad input (missing directory, corrupt state file).\n";

const std::vector<OptionSpec> kStatusOptions{
    {"--json", false, "", "print the view as one JSON document"},
    {"--html", true, "FILE", "also write the view as a self-contained HTML page"},
    {"--scenario", true, "FILE", "take the jobs' retry policies from this scenario file"},
};

constexpr const char* kPolicyUnknown = "not known (not stored in a state directory; --scenario)";

// Each job's policy from the scenario file, when one is given.
Result<std::map<std::string, PolicyOrError>> scenario_policies(const std::string& path) {
  auto scenario = sim::load_scenario_file(path);
  if (!scenario) return std::move(scenario).error();
  std::map<std::string, PolicyOrError> out;
  for (const sim::JobSpec& job : scenario->jobs) {
    out.emplace(job.id, sim::scenario_job_policy(*scenario, job));
  }
  return out;
}

// Jobs without a known policy: the view shows what the state recorded (its
// retry_limit and policy_error), and says the policy is not known, instead
// of calling it invalid.
void restore_unknown_policies(StatusReport& report, const std::map<std::string, JobState>& states) {
  std::vector<StatusViewError> errors;
  std::set<std::string> overruns;
  for (auto* group : {&report.retrying, &report.exhausted, &report.failed, &report.ok}) {
    for (StatusJobView& v : *group) {
      if (v.policy_error.find(kPolicyUnknown) != std::string::npos) {
        const auto it = states.find(v.job_id);
        if (it != states.end()) {
          v.state.retry_limit = it->second.retry_limit;
          v.state.policy_error = it->second.policy_error;
        }
        v.policy = kPolicyUnknown;
        v.policy_error = v.state.policy_error;
        v.badge = badge(v.state);
        v.limit_overrun = v.state.retry_count > v.state.retry_limit;
      }
      if (!v.policy_error.empty()) errors.push_back({v.job_id, v.policy_error});
      if (v.limit_overrun) overruns.insert(v.job_id);
    }
  }
  std::sort(errors.begin(), errors.end(),
            [](const StatusViewError& a, const StatusViewError& b) { return a.job_id < b.job_id; });
  report.policy_errors = std::move(errors);
  report.limit_overruns.assign(overruns.begin(), overruns.end());
}

// One directory: its states as they are; two: merged record by record.
StatusReport build_report(const std::vector<std::map<std::string, JobState>>& dirs,
                          const std::map<std::string, PolicyOrError>& policies) {
  // cmd_status takes one or two directories: two sides to fill at most.
  REHEARSE_ASSERT_GE(dirs.size(), 1u);
  REHEARSE_ASSERT_LE(dirs.size(), 2u);
  std::map<std::string, JobState> seen;  // the state each job recorded (for unknown policies)
  std::vector<StatusSource> sources;
  std::set<std::string> ids;
  for (const auto& dir : dirs) {
    for (const auto& [id, state] : dir) ids.insert(id);
  }
  for (const std::string& id : ids) {
    StatusSource source;
    source.job_id = id;
    nlohmann::json* sides[2] = {&source.jobs_json_record, &source.jobs_state_record};
    for (std::size_t i = 0; i < dirs.size(); ++i) {
      const auto it = dirs[i].find(id);
      if (it == dirs[i].end()) continue;
      *sides[dirs.size() == 1 ? 1 : i] = encode_job(it->second);
      seen[id] = it->second;
    }
    const auto policy = policies.find(id);
    source.policy = policy != policies.end()
                        ? policy->second
                        : PolicyOrError(make_error(ErrorCode::invalid_argument, kPolicyUnknown));
    sources.push_back(std::move(source));
  }
  // One source per job found in any directory, each job recorded by at least one.
  REHEARSE_ASSERT_EQ(sources.size(), ids.size());
  REHEARSE_ASSERT_EQ(seen.size(), ids.size());
  StatusReport report = build_status_from_stores(sources);
  restore_unknown_policies(report, seen);
  return report;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  REHEARSE_ASSERT_EQ(out.find_first_of("<>"), std::string::npos);  // no markup gets through
  return out;
}

std::string status_html(const StatusReport& report, const std::vector<std::string>& dirs) {
  std::string title = "rehearse status:";
  for (const std::string& d : dirs) title += " " + d;
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>" +
         html_escape(title) +
         "</title><style>body{font:14px system-ui,sans-serif;margin:16px}"
         "pre{font:12px/1.35 ui-monospace,monospace;background:#f8fafc;border:1px solid #e5e7eb;"
         "padding:8px}</style></head><body>\n<h1>" +
         html_escape(title) + "</h1>\n<pre>" + html_escape(render_text(report)) +
         "</pre>\n</body></html>\n";
}

// Every regular file directly inside the given directories (the state files
// an --html path must never replace).
std::vector<std::string> files_in(const std::vector<std::string>& dirs) {
  std::vector<std::string> files;
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
  }
  return files;
}

}  // namespace

int cmd_status(const Args& args) {
  auto parsed = parse_args(args, kStatusOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse status --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kStatusHelp, format_options_help(kStatusOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty() || parsed->positionals.size() > 2) {
    return usage_error("status: expected one or two STATE_DIR arguments",
                       "see 'rehearse status --help'");
  }
  std::map<std::string, PolicyOrError> policies;
  if (auto scenario = parsed->value("--scenario")) {
    auto loaded = scenario_policies(*scenario);
    if (!loaded) return usage_error(loaded.error().describe());
    policies = std::move(*loaded);
  }
  ReadOnlyDisk disk;
  std::vector<std::map<std::string, JobState>> dirs;
  for (const std::string& dir : parsed->positionals) {
    auto states = read_state_dir(disk, dir);
    if (!states) {
      return usage_error(
          fmt::format("status: {} (nothing was written)", states.error().describe()));
    }
    dirs.push_back(std::move(*states));
  }
  const StatusReport report = build_report(dirs, policies);
  if (auto html = parsed->value("--html")) {
    // The state directories' files and the scenario are inputs: never overwritten.
    std::vector<std::string> inputs = files_in(parsed->positionals);
    if (auto scenario = parsed->value("--scenario")) inputs.push_back(*scenario);
    if (Status s = check_output_path(*html, inputs); !s.ok())
      return usage_error(s.error().describe());
    if (Status s = write_output_file(*html, status_html(report, parsed->positionals)); !s.ok()) {
      return usage_error(s.error().describe());
    }
  }
  if (parsed->has("--json")) {
    fmt::print("{}\n", to_json(report).dump(2));
  } else {
    fmt::print("{}", render_text(report));
  }
  return kExitOk;
}

}  // namespace rehearse::cli
