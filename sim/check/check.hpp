// One case of `rehearse check` (docs/check.md): derive the seed's world from a
// scenario (sim/check/swarm.hpp), load it with the real loader, run it once
// with the seed, and judge it by the invariant monitors. The result is a
// CaseRecord (sim/check/case_record.hpp).
//
// check_case() reads only its arguments and builds its own world: cases share
// no mutable state, so a caller may run many of them on threads at once (the
// campaign runner does; parallelism is only ever between runs).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/case_record.hpp"
#include "sim/check/swarm.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

// The name check uses for a core assertion that failed in a run (the run's
// outcome `assertion_failed`): a violation of its own, exit code 3.
inline constexpr const char* kAssertionViolation = "assertion_failed";

// One case: a scenario document and a seed.
struct CheckCaseInput {
  nlohmann::json scenario;  // the base scenario document, as read from its file (null: generated)
  std::string path;         // the file as given on the command line (empty: generated)
  std::string name;         // the scenario's name
  std::uint64_t seed = 0;
};

// Everything `rehearse check` was asked, parsed once (sim/cli/cmd_check.cpp).
struct CheckOptions {
  std::vector<std::string> paths;  // scenario arguments as given (files and directories)
  std::uint64_t seeds = 1;         // seeds per scenario
  std::uint64_t first_seed = 1;
  bool json = false;
  bool check_determinism = false;  // each case twice; traces must be identical
  std::optional<std::string> emit_dir;
  SwarmOptions swarm;
  // Record which reachability points each case reached (CaseRecord::reached,
  // sim/check/reachability.hpp); --require-coverage fails the run when a
  // point was reached by no case.
  bool coverage = false;
  bool require_coverage = false;
  // Test hook: adjusts the options of a case's runs (run 0; run 1 is the
  // determinism re-run). Empty in the command.
  std::function<void(RunOptions& options, int run)> prepare_run;
};

// The case's document: derive_case over the base, or, for a generated case
// (input.scenario null), derive_world_case (sim/check/generate.hpp).
Result<nlohmann::json> derive_for(const CheckCaseInput& input, const SwarmOptions& options);

// derive_for, then check_derived.
CaseRecord check_case(const CheckCaseInput& input, const CheckOptions& options);

// Loads `derived` (a scenario document) with the real loader, runs it with
// input.seed and judges it. A document the loader refuses is an `error` (its
// message is the loader's): the derivation made something invalid.
CaseRecord check_derived(const CheckCaseInput& input, const nlohmann::json& derived,
                         const CheckOptions& options);

// `rehearse check PATH --seeds 1 --first-seed S` (without PATH when generated;
// with --random-jobs when the swarm randomizes jobs).
std::string check_replay_command(const std::string& path, std::uint64_t seed,
                                 const SwarmOptions& swarm = {});

// The exit code a record stands for, as `rehearse run`'s: 0 pass, 1 fail,
// 2 error (the case could not be run as described), 3 a core assertion failed.
int case_exit_code(const CaseRecord& record);
// The worst over records (0 for none).
int worst_exit_code(const std::vector<CaseRecord>& records);

}  // namespace rehearse::sim
