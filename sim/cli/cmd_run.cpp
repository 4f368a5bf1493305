// rehearse run SCENARIO... [--seed N] [--trace FILE] [--json] [--progress]
//
// Runs each scenario in the simulated world (sim/world.hpp), twice with the
// same seed so that the two traces can be compared (invariant
// `deterministic`), and reports a summary table, then every violation,
// missing expected violation and expectation failure with the command that
// replays it. Exit 0 when everything held, 1 when an invariant or an
// expectation failed, 2 on bad input (a scenario that does not load, a kind
// this build cannot run, wrong arguments). docs/run.md has the details.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/html_report.hpp"
#include "sim/timeline.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/report.hpp"
#include "sim/world.hpp"
#include "sim/monitors.hpp"
#include "sim/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kRunHelp =
    "usage: rehearse run SCENARIO... [--seed N] [--trace FILE] [--json] [--progress]\n"
    "                    [--timeline [--verbose]] [--report FILE.html]\n"
    "\n"
    "Runs scenario files (docs/scenario-format.md) in the simulated world: the real\n"
    "core against the scenario's services and faults, watched by the invariant\n"
    "monitors. A directory means every *.json file directly inside it, in name order.\n"
    "Each scenario runs twice with the same seed and the two traces must be identical.\n"
    "\n"
    "Prints one summary row per scenario (slots delivered / skipped / failed / in\n"
    "flight, retries, exhausted slots, notifications, simulator events, virtual span,\n"
    "wall time, FNV-1a 64 trace hash), then each violation and failed expectation with\n"
    "the command that replays it.\n"
    "\n"
    "--trace FILE writes the first run's trace as JSON Lines (atomically: a temporary\n"
    "file renamed into place); it takes exactly one scenario.\n"
    "--timeline prints each run as a timeline before the table (docs/report.md);\n"
    "--report FILE.html writes one self-contained HTML report (one scenario only).\n"
    "\n"
    "Exit codes: 0 every invariant and expectation held, 1 one failed, 2 bad input.\n";

const std::vector<OptionSpec> kRunOptions{
    {"--seed", true, "N", "override every scenario's seed (0..2^64-1)"},
    {"--trace", true, "FILE", "write the trace as JSON Lines (one scenario only)"},
    {"--json", false, "", "print one JSON document"},
    {"--progress", false, "", "progress on stderr even when it is not a terminal"},
    {"--timeline", false, "", "print the run as a timeline (colour on a terminal)"},
    {"--verbose", false, "", "with --timeline: show disk, queue and outbox detail too"},
    {"--report", true, "FILE", "write a self-contained HTML report (one scenario only)"},
};

Result<std::uint64_t> parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("--seed: expected an integer 0..18446744073709551615, got '{}'",
                                  text));
  }
  return v;
}

// Never a half-written file: the bytes go to a temporary file beside the
// target, which is renamed over it once complete.
Status write_atomically(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorCode::io_error, "cannot create the trace file", temp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      return make_error(ErrorCode::io_error, "cannot write the trace file", temp);
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return make_error(ErrorCode::io_error, "cannot rename the trace file: " + ec.message(), path);
  }
  return {};
}

// The timeline on stdout; colour only on a terminal and without NO_COLOR.
void print_timeline(const sim::ScenarioRunResult& run, bool verbose) {
  sim::TimelineOptions options;
  options.verbose = verbose;
  const char* no_color = std::getenv("NO_COLOR");  // no-color.org: set and not empty
  options.color = isatty(fileno(stdout)) != 0 && (no_color == nullptr || *no_color == '\0');
  fmt::print("{} (seed {})\n{}\n", run.path.empty() ? run.scenario : run.path, run.seed,
             sim::render_timeline(run.trace.events(), options));
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

}  // namespace

int cmd_run(const Args& args) {
  auto parsed = parse_args(args, kRunOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse run --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kRunHelp, format_options_help(kRunOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty()) {
    return usage_error("run: missing SCENARIO file or directory", "see 'rehearse run --help'");
  }
  std::optional<std::uint64_t> seed;
  if (auto text = parsed->value("--seed")) {
    auto s = parse_seed(*text);
    if (!s) return usage_error(s.error().describe());
    seed = *s;
  }
  const std::optional<std::string> trace_path = parsed->value("--trace");
  const bool as_json = parsed->has("--json");
  const bool show_progress = parsed->has("--progress") || isatty(fileno(stderr)) != 0;

  auto files = expand_scenario_paths(parsed->positionals);
  if (!files) return usage_error(files.error().describe());
  const std::optional<std::string> report_path = parsed->value("--report");
  if (report_path && files->size() != 1) {
    return usage_error(fmt::format("--report takes exactly one scenario ({} given)", files->size()));
  }
  if (trace_path && files->size() != 1) {
    return usage_error(
        fmt::format("--trace takes exactly one scenario ({} given): run them one at a time",
                    files->size()));
  }

  // Load everything first: bad input is reported before anything runs.
  std::vector<sim::Scenario> scenarios;
  bool load_failed = false;
  for (const std::string& file : *files) {
    auto loaded = sim::load_scenario_file(file);
    if (!loaded) {
      fmt::print(stderr, "rehearse: error: {}\n", loaded.error().describe());
      load_failed = true;
      continue;
    }
    scenarios.push_back(std::move(loaded).value());
  }
  if (load_failed) return kExitUsage;

  std::vector<sim::SummaryRow> rows;
  std::string findings;
  nlohmann::json documents = nlohmann::json::array();
  bool all_held = true;
  for (const sim::Scenario& scenario : scenarios) {
    sim::RunOptions options;
    options.seed = seed;
    if (show_progress) {
      options.progress = [&scenario](const sim::RunProgress& p) {
        const double span = static_cast<double>(std::max<TimeMs>(1, p.until_ms - p.start_ms));
        const double done = 100.0 * static_cast<double>(p.now_ms - p.start_ms) / span;
        fmt::print(stderr, "\r{}: {:5.1f}% of virtual time, {} events", scenario.name, done,
                   p.events);
        std::fflush(stderr);
      };
    }
    const auto started = std::chrono::steady_clock::now();
    auto first = sim::run_scenario(scenario, options);
    const double wall_ms = elapsed_ms(started);
    if (show_progress) fmt::print(stderr, "\n");
    if (!first) {
      fmt::print(stderr, "rehearse: error: {}\n", first.error().describe());
      return kExitUsage;
    }
    // The same seed again: the traces must be byte-identical.
    sim::RunOptions again;
    again.seed = first->seed;
    auto second = sim::run_scenario(scenario, again);
    std::optional<sim::Violation> determinism;
    if (!second) {
      determinism = sim::Violation{"deterministic", 0, scenario.start_ms,
                                   "the second run could not start: " + second.error().describe()};
    } else {
      determinism = sim::compare_traces(first->trace, second->trace);
    }

    if (trace_path) {
      if (Status s = write_atomically(*trace_path, first->trace.to_jsonl()); !s.ok()) {
        fmt::print(stderr, "rehearse: error: {}\n", s.error().describe());
        return kExitUsage;
      }
    }
    const sim::Verdict verdict = sim::judge_run(scenario, *first, determinism);
    if (parsed->has("--timeline") && !as_json) print_timeline(*first, parsed->has("--verbose"));
    if (report_path) {
      const std::string html = sim::render_html_report(scenario, *first, verdict);
      if (Status s = write_output_file(*report_path, html, "the report file"); !s.ok()) {
        fmt::print(stderr, "rehearse: error: {}\n", s.error().describe());
        return kExitUsage;
      }
    }
    all_held = all_held && verdict.held();
    const sim::SummaryRow row = sim::summarize(scenario, *first, wall_ms, verdict.held());
    rows.push_back(row);
    findings += sim::format_findings(*first, verdict);
    if (as_json) documents.push_back(sim::report_json(scenario, *first, verdict, row));
  }

  if (as_json) {
    nlohmann::json doc;
    doc["ok"] = all_held;
    doc["scenarios"] = std::move(documents);
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", sim::format_table(rows));
    if (!findings.empty()) fmt::print("\n{}", findings);
  }
  return all_held ? kExitOk : kExitFailed;
}

}  // namespace rehearse::cli
