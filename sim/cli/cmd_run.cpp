// rehearse run SCENARIO... [--seed N] [--trace FILE] [--json] [--strict] [--progress]
//                          [--junit FILE]
//
// Runs each scenario in the simulated world (sim/world/world.hpp), twice with the
// same seed so that the two traces can be compared (invariant
// `deterministic`), and reports a summary table, then every violation,
// missing expected violation and expectation failure with the command that
// replays it. A file that does not load (or holds a kind this build cannot
// run) is an ERROR row of its own and the others still run. The scenario's
// flags go to stderr as `validate` prints them; a flag or an invariant the
// monitors could not check makes the row "ok*" with a footnote, and a
// failure under --strict. The exit code is the worst of all files: 0
// everything held, 1 an invariant, an expectation (or under --strict a flag
// or unchecked invariant) failed, 2 bad input, 3 an assertion of the core
// failed in a run (outcome assertion_failed). docs/run.md has the details.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "model/assert.hpp"
#include "sim/check/progress.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/output_dir.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/run_junit.hpp"
#include "sim/cli/run_what_if.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/monitors/monitor_set.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/report.hpp"
#include "sim/report/timeline.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kRunHelp =
    "usage: rehearse run SCENARIO... [--seed N] [--trace FILE] [--json] [--strict]\n"
    "                                [--progress] [--timeline [--verbose]]\n"
    "                                [--report FILE.html] [--junit FILE] [--once]\n"
    "                                [--worker-log FILE] [--worker-state DIR]\n"
    "                                [--policy JOB=POLICY]...\n"
    "\n"
    "Runs scenario files (docs/scenario-format.md) in the simulated world: the real\n"
    "core against the scenario's services and faults, watched by the invariant\n"
    "monitors. A directory means every *.json file directly inside it, in name order.\n"
    "Each scenario runs twice with the same seed and the two traces must be identical\n"
    "(their hashes are compared; only when they differ are both runs repeated with\n"
    "their traces kept, to name the first event that differs). --once runs each\n"
    "scenario once: the invariant 'deterministic' is then reported unchecked.\n"
    "\n"
    "Prints one summary row per scenario (slots delivered / skipped / failed / in\n"
    "flight, retries, exhausted slots, notifications, simulator events, virtual span,\n"
    "wall time, FNV-1a 64 trace hash), then each violation and failed expectation with\n"
    "the command that replays it. A file that does not load is an ERROR row; the\n"
    "others still run. Flags (as 'validate' prints them) go to stderr; a flag or an\n"
    "invariant the monitors could not check shows as 'ok*' with a footnote, and\n"
    "fails the scenario under --strict.\n"
    "\n"
    "--trace FILE writes the first run's trace as JSON Lines; it takes exactly one\n"
    "scenario. '-' is standard output; a device or FIFO is written through; a\n"
    "symlink is followed; a regular file is replaced atomically; an input file is\n"
    "never overwritten (exit 2). See docs/cli.md.\n"
    "--timeline prints each run as a timeline before the table (docs/report.md);\n"
    "--report FILE.html writes one self-contained HTML report (one scenario only;\n"
    "the same output-file rule as --trace).\n"
    "--worker-log FILE writes the worker's log as a production worker's log adapter\n"
    "would, one JSON object per line stamped by the worker's clock (docs/log-format.md;\n"
    "one scenario only; the same output-file rule).\n"
    "--worker-state DIR writes the worker's state directory as its disk holds it when\n"
    "the run ends (docs/state-file.md; one scenario only): DIR must not exist or be\n"
    "empty, and appears whole or not at all.\n"
    "--policy JOB=POLICY replaces the job's retry_policy (JSON as a scenario holds\n"
    "it, auto, or @FILE; other systems' forms wrapped in their key, {\"k8s\": ...}):\n"
    "what if it had run with that policy? The scenario's expectations (an imported\n"
    "incident's observed outcomes, docs/import.md) that no longer hold are listed as\n"
    "changed, not failed; invariants still fail the run (docs/run.md \"What if\").\n"
    "--junit FILE writes JUnit XML for CI: a testcase per scenario file, its\n"
    "findings and replay command in the failure text.\n"
    "\n"
    "Exit codes (the worst over all files): 0 every invariant and expectation held,\n"
    "1 one failed (or, with --strict, a flag or unchecked invariant), 2 bad input,\n"
    "3 an assertion of the core failed in a run (a bug in the core; the error line\n"
    "names it, the replay line reproduces it).\n"
    "4 a run ran out of memory (reported as far as it got; see docs/run.md).\n";

const std::vector<OptionSpec> kRunOptions{
    {"--seed", true, "N", "override every scenario's seed (0..2^64-1)"},
    {"--trace", true, "FILE", "write the trace as JSON Lines (one scenario only; - is stdout)"},
    {"--json", false, "", "print one JSON document"},
    {"--strict", false, "", "flags and unchecked invariants are failures (exit 1)"},
    {"--progress", false, "", "progress on stderr even when it is not a terminal"},
    {"--timeline", false, "", "print the run as a timeline (colour on a terminal)"},
    {"--verbose", false, "", "with --timeline: show disk, queue and outbox detail too"},
    {"--junit", true, "FILE", "write JUnit XML (a testcase per scenario file)"},
    {"--report", true, "FILE", "write a self-contained HTML report (one scenario only)"},
    {"--worker-log", true, "FILE",
     "write the worker's log as a production worker would (docs/log-format.md; one scenario "
     "only)"},
    {"--worker-state", true, "DIR",
     "write the worker's state directory at the end (docs/state-file.md; one scenario only)"},
    {"--once", false, "", "run each scenario once (no determinism re-run; reported unchecked)"},
    {"--policy", true, "JOB=POLICY",
     "what if JOB had this policy (JSON, auto or @FILE): the expected outcomes that change are "
     "reported, not failed (one scenario only)",
     true},
};

// A run cut short by running out of memory (docs/run.md).

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

// The timeline on stdout; colour only on a terminal and without NO_COLOR
// (no-color.org: set and not empty).
// The fleet load's lines close it (docs/run.md "Fleet load").
void print_timeline(const sim::Scenario& scenario, const sim::ScenarioRunResult& run,
                    bool verbose) {
  sim::TimelineOptions options;
  options.verbose = verbose;
  const char* no_color = std::getenv("NO_COLOR");
  options.color = isatty(fileno(stdout)) != 0 && (no_color == nullptr || *no_color == '\0');
  const auto load = sim::run_service_load(scenario, run);
  fmt::print("{} (seed {})\n{}{}\n", run.path.empty() ? run.scenario : run.path, run.seed,
             sim::render_timeline(run.trace.events(), options),
             load ? sim::render_load_summary(*load, options) : std::string());
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  REHEARSE_ASSERT_GE(ms, 0.0);  // a steady clock never goes back
  return ms;
}

struct RunSettings {
  std::optional<std::uint64_t> seed;
  std::optional<std::string> trace_path;
  std::optional<std::string> report_path;
  std::optional<std::string> junit_path;
  std::optional<std::string> worker_log_path;
  std::optional<std::string> worker_state_path;  // a directory
  bool timeline = false;
  bool verbose = false;
  bool as_json = false;
  bool strict = false;
  bool show_progress = false;
  sim::ProgressStyle progress_style = sim::ProgressStyle::in_place;
  bool once = false;  // no determinism re-run
  WhatIf what_if;     // --policy JOB=POLICY
};

// What the runs come to so far: the table rows, the lines after the table,
// the --json entries and the worst exit code.
struct RunReport {
  std::vector<sim::SummaryRow> rows;
  std::string findings;
  nlohmann::json documents = nlohmann::json::array();
  std::vector<RunJunitCase> junit;
  int exit_code = kExitOk;
  std::size_t errors = 0;

  void worsen(int code) {
    // Only the codes docs/cli.md lists for `run`.
    REHEARSE_ASSERT_GE(code, kExitOk);
    REHEARSE_ASSERT_LE(code, kExitOutOfMemory);
    exit_code = std::max(exit_code, code);
  }
};

// A file that did not load (or could not run) is a row of its own; the
// other files still run.
void add_error_row(RunReport& report, const std::string& path, const Error& error) {
  fmt::print(stderr, "rehearse: error: {}\n", error.describe());
  report.rows.push_back(sim::error_row(path, error.describe()));
  report.documents.push_back(
      {{"path", path}, {"result", "ERROR"}, {"held", false}, {"error", error_object(error)}});
  report.junit.push_back(junit_error_case(path, error));
  report.worsen(kExitUsage);
  ++report.errors;
}

// Progress on stderr: on a terminal one line rewritten at most once per wall
// second, elsewhere (a CI log) a line of its own at most every ten seconds:
// how far in virtual time, events per wall second and the wall time left at
// that rate. (The wall clock is the CLI's; the run itself never reads it.)
std::function<void(const sim::RunProgress&)> progress_printer(const std::string& label,
                                                              sim::ProgressStyle style) {
  struct Shown {
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last{};
  };
  auto shown = std::make_shared<Shown>();
  const bool in_place = style == sim::ProgressStyle::in_place;
  const auto interval = in_place ? std::chrono::seconds(1) : std::chrono::seconds(10);
  return [label, shown, in_place, interval](const sim::RunProgress& p) {
    REHEARSE_ASSERT_GE(p.now_ms, p.start_ms);  // virtual time starts at the scenario's start
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.now_ms >= p.until_ms;
    if (!last && now - shown->last < interval) return;
    shown->last = now;
    const double wall_s = std::chrono::duration<double>(now - shown->started).count();
    const double span = static_cast<double>(std::max<TimeMs>(1, p.until_ms - p.start_ms));
    const double done = static_cast<double>(p.now_ms - p.start_ms) / span;
    const double rate = wall_s > 0 ? static_cast<double>(p.events) / wall_s : 0.0;
    const double eta_s = done > 0 ? wall_s * (1.0 - done) / done : 0.0;
    fmt::print(stderr,
               "{}{}: {:5.1f}% of virtual time (at {}), {} events, {:.0f} events/s, "
               "ETA {:.0f}s{}",
               in_place ? "\r" : "", label, 100.0 * done, format_instant(p.now_ms), p.events, rate,
               eta_s, in_place ? "   " : "\n");
    std::fflush(stderr);
  };
}

// Ends the progress line of a run on a terminal (off one, every line ended).
void end_progress(const RunSettings& settings) {
  if (settings.show_progress && settings.progress_style == sim::ProgressStyle::in_place) {
    fmt::print(stderr, "\n");
  }
}

sim::RunOptions run_options(const sim::Scenario& scenario, const RunSettings& settings,
                            const std::string& label) {
  sim::RunOptions options;
  options.seed = settings.seed;
  // The outputs that need every event keep them; otherwise they stream. The
  // --json document's fleet load is read from the trace, for the scenarios
  // that have one.
  options.keep_trace = settings.trace_path || settings.report_path || settings.timeline ||
                       (settings.as_json && sim::wants_service_load(scenario));
  options.keep_worker_log = settings.worker_log_path.has_value();
  options.keep_state_files = settings.worker_state_path.has_value();
  if (settings.show_progress) {
    options.progress = progress_printer(scenario.name + label, settings.progress_style);
    options.progress_every_events = 4096;  // the printer itself keeps to once a second
  }
  return options;
}

// Both runs again with their traces kept, to name the first event where they
// differ (only after their hashes differed).
sim::Violation locate_divergence(const sim::Scenario& scenario, const sim::ScenarioRunResult& first,
                                 const sim::ScenarioRunResult& second) {
  // Called only once the two runs' traces differed in hash or length.
  REHEARSE_ASSERT(first.trace_hash != second.trace_hash ||
                  first.trace.size() != second.trace.size());
  const std::string hashes =
      fmt::format("the trace hashes differ ({} over {} events, then {} over {} events)",
                  first.trace_hash, first.trace.size(), second.trace_hash, second.trace.size());
  sim::RunOptions kept;
  kept.seed = first.seed;
  auto a = sim::run_scenario(scenario, kept);
  auto b = sim::run_scenario(scenario, kept);
  if (!a || !b) return {"deterministic", 0, scenario.start_ms, hashes};
  if (auto found = sim::compare_traces(a->trace, b->trace)) {
    found->message = hashes + "; " + found->message;
    return *found;
  }
  return {"deterministic", 0, scenario.start_ms,
          hashes + "; two more runs to find where gave identical traces (" + a->trace_hash +
              "): the run is not reproducible"};
}

// The same seed again: the traces must be byte-identical, i.e. have the same
// hash and length.
std::optional<sim::Violation> second_run(const sim::Scenario& scenario,
                                         const sim::ScenarioRunResult& first,
                                         const RunSettings& settings) {
  REHEARSE_ASSERT(!settings.once);  // --once skips the re-run
  sim::RunOptions again = run_options(scenario, settings, " (determinism re-run)");
  again.seed = first.seed;
  again.keep_trace = false;
  again.keep_worker_log = false;
  again.keep_state_files = false;
  auto second = sim::run_scenario(scenario, again);
  end_progress(settings);
  if (!second) {
    return sim::Violation{"deterministic", 0, scenario.start_ms,
                          "the second run could not start: " + second.error().describe()};
  }
  if (second->trace_hash == first.trace_hash && second->trace.size() == first.trace.size()) {
    return std::nullopt;
  }
  return locate_divergence(scenario, first, *second);
}

// --once: what the skipped re-run would have checked, said in the verdict.
void note_determinism_unchecked(sim::Verdict& verdict) {
  verdict.unchecked.push_back({{"invariant", "deterministic"},
                               {"subject", "the run"},
                               {"why", "run --once skips the re-run with the same seed"}});
}

void write_outputs(const sim::Scenario& scenario, const sim::ScenarioRunResult& first,
                   const sim::Verdict& verdict, const RunSettings& settings, RunReport& report) {
  REHEARSE_ASSERT(!first.out_of_memory);  // run_one writes no output of a cut run
  if (settings.trace_path) {
    if (Status s = write_output_file(*settings.trace_path, first.trace.to_jsonl()); !s.ok()) {
      return add_error_row(report, scenario.path, s.error());
    }
  }
  if (settings.worker_log_path) {
    std::string text;
    for (const std::string& line : first.worker_log) text += line + "\n";
    if (Status s = write_output_file(*settings.worker_log_path, text); !s.ok()) {
      return add_error_row(report, scenario.path, s.error());
    }
  }
  if (settings.worker_state_path) {
    if (Status s = write_output_dir(*settings.worker_state_path, first.state_files); !s.ok()) {
      return add_error_row(report, scenario.path, s.error());
    }
  }
  if (settings.timeline && !settings.as_json) print_timeline(scenario, first, settings.verbose);
  if (settings.report_path) {
    const std::string html = sim::render_html_report(scenario, first, verdict);
    if (Status s = write_output_file(*settings.report_path, html); !s.ok()) {
      return add_error_row(report, scenario.path, s.error());
    }
  }
}

void run_one(const sim::Scenario& scenario, const RunSettings& settings, RunReport& report) {
  for (const sim::ScenarioFlag& flag : scenario.flags) {
    fmt::print(stderr, "{}\n", sim::describe(flag, settings.strict));
  }
  const auto started = std::chrono::steady_clock::now();
  auto first = sim::run_scenario(scenario, run_options(scenario, settings, ""));
  const double wall_ms = elapsed_ms(started);
  end_progress(settings);
  if (!first) return add_error_row(report, scenario.path, first.error());
  std::optional<sim::Violation> determinism;
  if (!settings.once && !first->out_of_memory) determinism = second_run(scenario, *first, settings);
  sim::Verdict verdict = sim::judge_run(scenario, *first, determinism, settings.strict);
  if (settings.once || first->out_of_memory) note_determinism_unchecked(verdict);
  std::vector<sim::ExpectFailure> changed;
  if (!settings.what_if.empty()) changed = take_changed(verdict);
  if (!first->out_of_memory) {
    const std::size_t errors = report.errors;
    write_outputs(scenario, *first, verdict, settings, report);
    if (report.errors != errors) return;
  }
  sim::SummaryRow row = sim::summarize(scenario, *first, wall_ms, verdict.held());
  row.notes = sim::verdict_notes(verdict);
  report.worsen(verdict.held() ? kExitOk : kExitFailed);
  if (first->out_of_memory) {
    REHEARSE_ASSERT(!first->errors.empty());  // a run cut by memory says so in its errors
    fmt::print(stderr, "rehearse: {}: {}\n", scenario.path, first->errors.back());
    report.worsen(kExitOutOfMemory);
  }
  if (first->outcome == sim::RunOutcome::assertion_failed) report.worsen(kExitAssertion);
  report.findings += sim::format_findings(*first, verdict);
  if (!settings.what_if.empty())
    report.findings += format_changed(scenario.path, settings.what_if, changed);
  report.junit.push_back(junit_case(scenario, *first, verdict, wall_ms));
  if (settings.as_json) {
    report.documents.push_back(sim::report_json(scenario, *first, verdict, row));
    if (!settings.what_if.empty())
      report.documents.back()["what_if"] = changed_json(settings.what_if, changed);
  }
  report.rows.push_back(std::move(row));
}

// Running out of memory outside the run loop (a re-run, a report being
// rendered): an error row that says so, and the other files still run.
void run_one_guarded(const sim::Scenario& scenario, const RunSettings& settings,
                     RunReport& report) {
  try {
    run_one(scenario, settings, report);
  } catch (const std::bad_alloc&) {
    add_error_row(report, scenario.path,
                  make_error(ErrorCode::out_of_memory,
                             "out of memory while running or reporting this scenario (try "
                             "--once, and no --trace, --timeline or --report)"));
    report.worsen(kExitOutOfMemory);
  }
}

void print_report(const RunReport& report, const RunSettings& settings) {
  // Every error is a row of its own, and any error makes the run exit 2 or worse.
  REHEARSE_ASSERT_LE(report.errors, report.rows.size());
  if (report.errors > 0) REHEARSE_ASSERT_GE(report.exit_code, kExitUsage);
  if (!settings.as_json) {
    fmt::print("{}", sim::format_table(report.rows));
    if (!report.findings.empty()) fmt::print("\n{}", report.findings);
    return;
  }
  nlohmann::json doc;
  doc["ok"] = report.exit_code == kExitOk;
  doc["exit_code"] = report.exit_code;
  doc["strict"] = settings.strict;
  doc["scenarios"] = report.documents;
  if (report.errors > 0) {
    doc["error"] = {{"code", "invalid_scenario"},
                    {"exit_code", kExitUsage},
                    {"message",
                     fmt::format("{} of {} scenario file{} did not load or could not run",
                                 report.errors, report.rows.size(),
                                 report.rows.size() == 1 ? "" : "s")}};
  }
  fmt::print("{}\n", doc.dump(2));
}

// No two of --trace, --report, --junit and --worker-log may name the same file or both be
// standard output.
Status distinct_outputs(const RunSettings& settings) {
  const std::pair<const char*, const std::optional<std::string>*> outputs[] = {
      {"--trace", &settings.trace_path},
      {"--report", &settings.report_path},
      {"--junit", &settings.junit_path},
      {"--worker-log", &settings.worker_log_path}};
  for (std::size_t i = 0; i < std::size(outputs); ++i) {
    for (std::size_t j = i + 1; j < std::size(outputs); ++j) {
      const auto& a = *outputs[i].second;
      const auto& b = *outputs[j].second;
      if (!a || a != b) continue;
      return make_error(ErrorCode::invalid_argument,
                        *a == "-" ? fmt::format("{} - and {} - both want standard output: give "
                                                "one a file",
                                                outputs[i].first, outputs[j].first)
                                  : fmt::format("{} and {} name the same file: give each its own",
                                                outputs[i].first, outputs[j].first));
    }
  }
  return {};
}

Result<RunSettings> read_settings(const ParsedArgs& parsed) {
  RunSettings settings;
  if (auto text = parsed.value("--seed")) {
    auto s = parse_seed(*text);
    if (!s) return s.error();
    settings.seed = *s;
  }
  settings.trace_path = parsed.value("--trace");
  settings.report_path = parsed.value("--report");
  settings.junit_path = parsed.value("--junit");
  settings.worker_log_path = parsed.value("--worker-log");
  settings.worker_state_path = parsed.value("--worker-state");
  settings.timeline = parsed.has("--timeline");
  settings.verbose = parsed.has("--verbose");
  if (settings.verbose && !settings.timeline) {
    return make_error(ErrorCode::invalid_argument,
                      "--verbose only adds detail to --timeline: give --timeline too");
  }
  settings.as_json = parsed.has("--json");
  settings.strict = parsed.has("--strict");
  settings.once = parsed.has("--once");
  settings.show_progress = parsed.has("--progress") || isatty(fileno(stderr)) != 0;
  settings.progress_style = sim::stderr_progress_style();
  for (const auto& [flag, path] :
       {std::pair{"--trace", settings.trace_path}, std::pair{"--report", settings.report_path},
        std::pair{"--junit", settings.junit_path},
        std::pair{"--worker-log", settings.worker_log_path}}) {
    if (settings.as_json && path == "-") {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("{} - and --json both want standard output: give {} a file",
                                    flag, flag));
    }
  }
  if (Status s = distinct_outputs(settings); !s.ok()) return s.error();
  auto what_if = read_what_if(parsed.all("--policy"));
  if (!what_if) return std::move(what_if).error();
  settings.what_if = std::move(*what_if);
  return settings;
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
  auto settings = read_settings(*parsed);
  if (!settings) return input_error(settings.error());
  auto files = expand_scenario_paths(parsed->positionals);
  if (!files) return input_error(files.error());
  if (!settings->what_if.empty() && files->size() != 1) {
    return usage_error(
        fmt::format("--policy takes exactly one scenario ({} given)", files->size()));
  }
  for (const auto& [flag, path] :
       {std::pair{"--trace", settings->trace_path}, std::pair{"--report", settings->report_path},
        std::pair{"--worker-log", settings->worker_log_path}}) {
    if (!path) continue;
    if (files->size() != 1) {
      return usage_error(fmt::format(
          "{} takes exactly one scenario ({} given): run them one at a time", flag, files->size()));
    }
    if (Status s = check_output_path(*path, *files); !s.ok()) return input_error(s.error());
  }
  if (settings->worker_state_path) {
    if (files->size() != 1) {
      return usage_error(
          fmt::format("--worker-state takes exactly one scenario ({} given)", files->size()));
    }
    if (Status s = check_output_dir(*settings->worker_state_path); !s.ok()) {
      return input_error(s.error());
    }
  }
  if (settings->junit_path) {
    if (Status s = check_output_path(*settings->junit_path, *files); !s.ok()) {
      return input_error(s.error());
    }
  }

  RunReport report;
  for (const std::string& file : *files) {
    auto scenario = settings->what_if.empty() ? sim::load_scenario_file(file)
                                              : load_what_if(file, settings->what_if);
    if (!scenario) {
      add_error_row(report, file, scenario.error());
      continue;
    }
    run_one_guarded(*scenario, *settings, report);
  }
  print_report(report, *settings);
  if (settings->junit_path) {
    const std::string xml = render_run_junit(report.junit);
    if (Status s = write_output_file(*settings->junit_path, xml); !s.ok()) {
      return input_error(s.error());
    }
  }
  return report.exit_code;
}

}  // namespace rehearse::cli
