// rehearse validate FILE|DIR... [--strict] [--json]
//
// Checks scenario files without running them. A directory stands for every
// *.json directly inside it, in name order; a directory without one is an
// error (an empty glob must never pass). Errors go to stderr, one per line,
// as "path:/json/pointer: message"; stdout gets one status line per file (or
// one JSON document with --json). Exit 0 when every file is valid, 2 when
// any is not. Flags (valid but suspicious: an invalid retry policy replayed
// on purpose, a retrying publish job without an idempotency key or reason,
// an unusable schedule override) are warnings; --strict makes them failures.
#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/report/report.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kValidateHelp =
    "usage: rehearse validate FILE|DIR... [--strict] [--json]\n"
    "\n"
    "Checks scenario files (docs/scenario-format.md) without running them. A\n"
    "directory means every *.json file directly inside it, in name order.\n"
    "Errors name the file, the JSON pointer (or line:column) and what was expected.\n"
    "Flags (a missing or invalid retry policy, a retrying publish job without an\n"
    "idempotency key or reason, an unusable schedule override, a job that never\n"
    "runs) are warnings of a valid scenario; --strict turns them into failures.\n"
    "\n"
    "Exit codes: 0 every file is valid, 1 a valid file is flagged (with --strict),\n"
    "2 a file is invalid or the arguments are wrong.\n";

const std::vector<OptionSpec> kValidateOptions{
    {"--strict", false, "", "treat every flag as a failure"},
    {"--json", false, "", "print one JSON document"},
};

// How many errors per file are printed; the rest are counted.
constexpr std::size_t kPrintedErrorsMax = 20;

// The file's errors (at most kPrintedErrorsMax) and flags, on stderr.
void print_diagnostics(const std::string& file, const sim::ScenarioCheck& check, bool strict) {
  const std::size_t error_total = check.errors.size() + check.errors_omitted;
  // Errors are omitted only past the ones kept: an omitted one means kept ones.
  if (check.errors_omitted > 0) REHEARSE_ASSERT(!check.valid());
  for (std::size_t i = 0; i < check.errors.size() && i < kPrintedErrorsMax; ++i) {
    fmt::print(stderr, "{}\n", check.errors[i].describe());
  }
  if (error_total > kPrintedErrorsMax) {
    fmt::print(stderr, "{}: ... and {} more errors\n", file, error_total - kPrintedErrorsMax);
  }
  for (const auto& f : check.flags) fmt::print(stderr, "{}\n", sim::describe(f, strict));
  for (const auto& n : check.notes) fmt::print(stderr, "note: {}\n", n);
}

nlohmann::json file_json(const std::string& file, const sim::ScenarioCheck& check, bool ok) {
  if (ok) REHEARSE_ASSERT(check.valid());  // --strict only adds failures
  // A valid file is a loaded scenario: its entry names it.
  REHEARSE_ASSERT_EQ(check.scenario.has_value(), check.valid());
  nlohmann::json entry;
  entry["path"] = file;
  entry["ok"] = ok;
  entry["valid"] = check.valid();
  entry["errors"] = nlohmann::json::array();
  for (const auto& e : check.errors) entry["errors"].push_back(error_object(e));
  entry["errors_omitted"] = check.errors_omitted;
  entry["flags"] = nlohmann::json::array();
  for (const auto& f : check.flags) entry["flags"].push_back(sim::to_json(f));
  entry["notes"] = check.notes;
  if (check.scenario) entry["scenario"] = check.scenario->name;
  return entry;
}

// One status line per file on stdout.
void print_status(const std::string& file, const sim::ScenarioCheck& check, bool ok) {
  if (ok) REHEARSE_ASSERT(check.valid());  // --strict only adds failures
  const std::size_t error_total = check.errors.size() + check.errors_omitted;
  if (ok && check.flags.empty()) {
    fmt::print("ok  {}\n", file);
  } else if (ok) {
    fmt::print("ok  {} ({} flag{})\n", file, check.flags.size(),
               check.flags.size() == 1 ? "" : "s");
  } else if (!check.valid()) {
    fmt::print("FAIL {} ({} error{})\n", file, error_total, error_total == 1 ? "" : "s");
  } else {
    fmt::print("FAIL {} ({} flag{} under --strict)\n", file, check.flags.size(),
               check.flags.size() == 1 ? "" : "s");
  }
}

}  // namespace

int cmd_validate(const Args& args) {
  auto parsed = parse_args(args, kValidateOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse validate --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kValidateHelp, format_options_help(kValidateOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty()) {
    return usage_error("validate: missing FILE or DIR", "see 'rehearse validate --help'");
  }
  const bool strict = parsed->has("--strict");
  const bool as_json = parsed->has("--json");
  auto files = expand_scenario_paths(parsed->positionals);
  if (!files) return input_error(files.error());

  bool all_ok = true;
  bool any_invalid = false;
  std::size_t failed_files = 0;
  nlohmann::json report = nlohmann::json::array();
  for (const auto& file : *files) {
    const sim::ScenarioCheck check = sim::check_scenario_file(file);
    const bool flagged_failure = strict && !check.flags.empty();
    const bool ok = check.valid() && !flagged_failure;
    all_ok = all_ok && ok;
    any_invalid = any_invalid || !check.valid();
    if (!ok) ++failed_files;

    print_diagnostics(file, check, strict);
    if (as_json) {
      report.push_back(file_json(file, check, ok));
    } else {
      print_status(file, check, ok);
    }
  }
  // Exit codes as every command's (docs/cli.md): 2 a file that cannot be
  // used, 1 a valid file that --strict holds to its flags and that fails.
  const int exit_code = all_ok ? kExitOk : any_invalid ? kExitUsage : kExitFailed;
  // The files that failed are counted once each: none exactly when all held.
  REHEARSE_ASSERT_LE(failed_files, files->size());
  REHEARSE_ASSERT_EQ(all_ok, failed_files == 0);
  if (as_json) REHEARSE_ASSERT_EQ(report.size(), files->size());
  if (as_json) {
    nlohmann::json doc;
    doc["ok"] = all_ok;
    doc["strict"] = strict;
    doc["files"] = std::move(report);
    if (!all_ok) {
      doc["error"] = {{"code", "invalid_scenario"},
                      {"exit_code", exit_code},
                      {"message", fmt::format("{} of {} file{} invalid{}", failed_files,
                                              files->size(), files->size() == 1 ? "" : "s",
                                              strict ? " or flagged under --strict" : "")}};
    }
    fmt::print("{}\n", doc.dump(2));
  }
  return exit_code;
}

}  // namespace rehearse::cli
