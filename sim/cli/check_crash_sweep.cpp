#include "sim/cli/check_crash_sweep.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

using nlohmann::json;

constexpr long long kPointsMaxLimit = 1'000'000'000;

// The command that replays one point alone.
std::string replay_command(const std::string& path, const sim::ScenarioCrashPoint& point) {
  return fmt::format("rehearse check {} --crash-sweep --crash-at {}", path, to_string(point));
}

json count_json(const sim::ScenarioCrashCount& c) {
  return {{"planned", c.planned}, {"run", c.run}};
}

json report_json(const sim::ScenarioCrashReport& r, double seconds) {
  // The sweep keeps at most one failure per failing point; a failed baseline
  // counts as a failing point, so it never reads as held.
  if (!r.baseline_failed) REHEARSE_ASSERT_LE(r.failures.size(), r.failing_points);
  if (r.baseline_failed) REHEARSE_ASSERT(!r.held());
  json failures = json::array();
  for (const sim::ScenarioCrashFailure& f : r.failures) {
    json one{{"what", f.what}, {"message", f.message}};
    if (!r.baseline_failed) {
      one["point"] = to_string(f.point);
      one["replay"] = replay_command(r.path, f.point);
    } else {
      one["point"] = "baseline";
      one["replay"] = fmt::format("rehearse run {}", r.path);
    }
    failures.push_back(std::move(one));
  }
  return {{"scenario", r.scenario},
          {"path", r.path},
          {"seed", r.seed},
          {"ok", r.held()},
          {"baseline_events", r.baseline_events},
          {"baseline_disk_operations", r.baseline_disk_operations},
          {"points",
           {{"events", count_json(r.events)},
            {"events_worker_down", r.events_down},
            {"disk_power_loss", count_json(r.disk_power_loss)},
            {"disk_process_crash", count_json(r.disk_process_crash)},
            {"pairs", count_json(r.pairs)},
            {"run", r.points_run()}}},
          {"recovery_events_max", r.recovery_events_max},
          {"recoveries_bounded", r.recoveries_bounded},
          {"cut", r.cut.empty() ? json(nullptr) : json(r.cut)},
          {"duplicates_in_window", r.duplicates_in_window},
          {"points_with_window_duplicates", r.points_with_window_duplicates},
          {"baseline_failed", r.baseline_failed},
          {"failing_points", r.failing_points},
          {"failures", std::move(failures)},
          {"seconds", seconds}};
}

std::string count_text(const sim::ScenarioCrashCount& c) {
  REHEARSE_ASSERT_LE(c.run, c.planned);  // a cut runs fewer points, never more
  return c.run == c.planned ? std::to_string(c.run) : fmt::format("{}/{}", c.run, c.planned);
}

void print_row(const sim::ScenarioCrashReport& r, double seconds) {
  fmt::print("{:<36} {:>7} {:>5} {:>9} {:>9} {:>13} {:>8} {:>6} {:>8.1f}\n", r.scenario,
             count_text(r.events), r.events_down, count_text(r.disk_power_loss),
             count_text(r.disk_process_crash), count_text(r.pairs), r.failing_points,
             r.duplicates_in_window, seconds);
}

void print_findings(const sim::ScenarioCrashReport& r) {
  if (r.baseline_failed) {
    fmt::print("  {}: fails without any crash (nothing swept); replay: rehearse run {}\n",
               r.scenario, r.path);
  }
  for (const sim::ScenarioCrashFailure& f : r.failures) {
    if (r.baseline_failed) {
      fmt::print("    {}: {}\n", f.what, f.message);
      continue;
    }
    fmt::print("  FAIL {} at {}: {}: {}\n    replay: {}\n", r.scenario, to_string(f.point), f.what,
               f.message, replay_command(r.path, f.point));
  }
  if (r.failing_points > r.failures.size() && !r.baseline_failed) {
    fmt::print("  ({} failing points in all; the first {} failures are listed)\n", r.failing_points,
               r.failures.size());
  }
  if (r.recoveries_bounded > 0) {
    fmt::print("  {}: {} recoveries were longer than {} events; their pairs stop there\n",
               r.scenario, r.recoveries_bounded, r.recovery_events_max);
  }
  if (!r.cut.empty()) fmt::print("  {}: CUT: {}\n", r.scenario, r.cut);
}

// A progress line on stderr, on a terminal only.
sim::ScenarioCrashProgress progress_line(const std::string& name) {
  if (isatty(fileno(stderr)) == 0) return {};
  return [name](std::uint64_t done, std::uint64_t total) {
    REHEARSE_ASSERT_GE(done, 1u);  // called after each point ran
    REHEARSE_ASSERT_LE(done, total);
    if (done % 50 == 0 || done == total) {
      fmt::print(stderr, "\r{}: {}/{} points", name, done, total);
      if (done == total) fmt::print(stderr, "\r\033[K");
      std::fflush(stderr);
    }
  };
}

// One point alone (--crash-at): its failures, with the replay line.
int replay_point(const std::string& file, const sim::Scenario& scenario,
                 const CrashSweepCliOptions& options, json& out) {
  REHEARSE_ASSERT(options.crash_at.has_value());  // run_crash_sweep's choice
  sim::ScenarioCrashOptions sweep;
  auto failures = sim::replay_scenario_crash_point(scenario, *options.crash_at, sweep);
  if (!failures.ok()) return input_error(failures.error());
  json list = json::array();
  for (const sim::ScenarioCrashFailure& f : *failures) {
    list.push_back({{"what", f.what}, {"message", f.message}});
    if (!options.json) fmt::print("  FAIL {}: {}\n", f.what, f.message);
  }
  if (!options.json) {
    fmt::print("{} at {}: {}\n", scenario.name, to_string(*options.crash_at),
               failures->empty() ? "held" : "FAILED");
  }
  out.push_back({{"scenario", scenario.name},
                 {"path", file},
                 {"point", to_string(*options.crash_at)},
                 {"ok", failures->empty()},
                 {"failures", std::move(list)}});
  return failures->empty() ? kExitOk : kExitFailed;
}

// One scenario's sweep: the row, the findings, the --json entry.
int sweep_one(const std::string& file, const sim::Scenario& scenario,
              const CrashSweepCliOptions& options, json& out) {
  REHEARSE_ASSERT(!options.crash_at.has_value());
  REHEARSE_ASSERT_GE(options.points_max, 1u);  // parse_count's range, or the default
  sim::ScenarioCrashOptions sweep;
  sweep.pairs = options.pairs;
  sweep.points_max = options.points_max;
  const auto started = std::chrono::steady_clock::now();
  auto report = sim::sweep_scenario_crashes(scenario, sweep, progress_line(scenario.name));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!report.ok()) {
    if (!options.json) fmt::print("{:<36} ERROR {}\n", file, report.error().describe());
    out.push_back({{"path", file}, {"error", error_object(report.error())}});
    return kExitUsage;
  }
  if (!options.json) {
    print_row(*report, seconds);
    print_findings(*report);
  }
  out.push_back(report_json(*report, seconds));
  return report->held() ? kExitOk : kExitFailed;
}

}  // namespace

const std::vector<OptionSpec>& crash_sweep_option_specs() {
  static const std::vector<OptionSpec> specs{
      {"--crash-sweep", false, "",
       "crash the worker at every event and disk operation (docs/crash-sweep.md)"},
      {"--pairs", false, "", "with --crash-sweep: crash again during each recovery (default)"},
      {"--no-pairs", false, "", "with --crash-sweep: single crashes only"},
      {"--points-max", true, "N",
       "with --crash-sweep: at most N runs per scenario (default 200000; a cut is reported)"},
      {"--crash-at", true, "POINT",
       "with --crash-sweep: run one point only (as a failure's replay line prints it)"},
  };
  return specs;
}

const char* crash_sweep_help() {
  return "\n"
         "--crash-sweep (docs/crash-sweep.md) runs each scenario once per crash point\n"
         "instead: the worker crashes after every event of the run (a process crash), and\n"
         "at every disk operation (a power loss, and a process crash); --pairs (the\n"
         "default) crashes it again at every point of the recovery that follows each\n"
         "first crash. Every invariant is checked after each point; a failing point is\n"
         "printed with its replay (--crash-at POINT). --points-max N bounds the runs per\n"
         "scenario; a cut sweep says so.\n";
}

bool wants_crash_sweep(const ParsedArgs& parsed) { return parsed.has("--crash-sweep"); }

Result<CrashSweepCliOptions> read_crash_sweep_options(const ParsedArgs& parsed) {
  CrashSweepCliOptions o;
  const bool sweep = parsed.has("--crash-sweep");
  for (const char* name : {"--pairs", "--no-pairs", "--points-max", "--crash-at"}) {
    if (!sweep && (parsed.has(name) || parsed.value(name))) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("option '{}' needs --crash-sweep", name));
    }
  }
  for (const char* name : {"--seeds", "--first-seed", "--check-determinism", "--emit"}) {
    if (sweep && (parsed.has(name) || parsed.value(name))) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("option '{}' does not apply to --crash-sweep", name));
    }
  }
  if (parsed.has("--pairs") && parsed.has("--no-pairs")) {
    return make_error(ErrorCode::invalid_argument, "--pairs and --no-pairs contradict each other");
  }
  o.pairs = !parsed.has("--no-pairs");
  if (auto text = parsed.value("--points-max")) {
    auto n = parse_count("--points-max", *text, 1, kPointsMaxLimit);
    if (!n) return n.error();
    o.points_max = static_cast<std::uint64_t>(*n);
  }
  if (auto text = parsed.value("--crash-at")) {
    auto point = sim::parse_crash_point(*text);
    if (!point) return point.error();
    o.crash_at = *point;
  }
  o.json = parsed.has("--json");
  // Without --crash-sweep the loop above refused every option of this mode.
  if (!sweep) REHEARSE_ASSERT(o.pairs && !o.crash_at.has_value());
  REHEARSE_ASSERT_GE(o.points_max, 1u);
  REHEARSE_ASSERT_LE(o.points_max, static_cast<std::uint64_t>(kPointsMaxLimit));
  return o;
}

int run_crash_sweep(const std::vector<std::string>& paths, const CrashSweepCliOptions& options) {
  auto files = expand_scenario_paths(paths);
  if (!files) return input_error(files.error());
  if (!options.json && !options.crash_at) {
    fmt::print("{:<36} {:>7} {:>5} {:>9} {:>9} {:>13} {:>8} {:>6} {:>8}\n", "scenario", "events",
               "down", "disk-pl", "disk-pc", "pairs", "failing", "in-win", "seconds");
  }
  json entries = json::array();
  int exit_code = kExitOk;
  for (const std::string& file : *files) {
    auto scenario = sim::load_scenario_file(file);
    if (!scenario) {
      if (!options.json) fmt::print("{:<36} ERROR {}\n", file, scenario.error().describe());
      entries.push_back({{"path", file}, {"error", error_object(scenario.error())}});
      exit_code = std::max(exit_code, kExitUsage);
      continue;
    }
    const int code = options.crash_at ? replay_point(file, *scenario, options, entries)
                                      : sweep_one(file, *scenario, options, entries);
    exit_code = std::max(exit_code, code);
  }
  // One entry per file, loaded or not; the codes of `run` only (0, 1, 2).
  REHEARSE_ASSERT_EQ(entries.size(), files->size());
  REHEARSE_ASSERT_LE(exit_code, kExitUsage);
  if (options.json) {
    json doc{{"mode", "crash_sweep"},
             {"pairs", options.pairs},
             {"points_max", options.points_max},
             {"scenarios", std::move(entries)},
             {"ok", exit_code == kExitOk},
             {"exit_code", exit_code}};
    fmt::print("{}\n", doc.dump(2));
  }
  return exit_code;
}

}  // namespace rehearse::cli
