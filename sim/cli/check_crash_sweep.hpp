// `rehearse check SCENARIO|DIR... --crash-sweep [--pairs|--no-pairs]
// [--points-max N] [--crash-at POINT] [--json]`: crash sweeps over whole
// scenarios (sim/check/crash_sweep.hpp, docs/crash-sweep.md). `check`
// parses these options with the rest of its own and hands the run over here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/check/crash_sweep.hpp"
#include "sim/cli/args.hpp"

namespace rehearse::cli {

struct CrashSweepCliOptions {
  bool pairs = true;
  std::uint64_t points_max = 200'000;
  std::optional<sim::ScenarioCrashPoint> crash_at;  // replay one point only
  bool json = false;
};

// The options this mode adds to `check`, and its paragraph of `check --help`.
const std::vector<OptionSpec>& crash_sweep_option_specs();
const char* crash_sweep_help();
// Whether `--crash-sweep` was given; the options it takes, or a usage error
// (one of them given without --crash-sweep, a swarm option with it, a bad
// count or point).
bool wants_crash_sweep(const ParsedArgs& parsed);
Result<CrashSweepCliOptions> read_crash_sweep_options(const ParsedArgs& parsed);

// Sweeps every scenario the paths name (a directory: its *.json files) and
// prints a row per scenario (points per kind, failing points, seconds), then
// each failure with the command that replays it; --json prints one document.
// Exit codes as `rehearse run`: 0 every point held, 1 a point failed, 2 bad
// input (a file that does not load is an ERROR row; the others still run).
int run_crash_sweep(const std::vector<std::string>& paths, const CrashSweepCliOptions& options);

}  // namespace rehearse::cli
