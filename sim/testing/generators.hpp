// RapidCheck generators of scenario documents (docs/library.md).
//
// Every generator yields `nlohmann::json` in the scenario file format
// (docs/scenario-format.md), so what a property generates is exactly what a
// user could save as a file and hand to `rehearse run`; and every document
// loads with the real loader (tests/testing/test_generators.cpp holds that
// over hundreds of cases).
//
// Fault schedules are drawn from the table of fault kinds
// (sim/world/fault_kinds.hpp) and nothing else: a kind is applicable when what it
// applies to is declared and each of its required keys has something to
// choose from; its keys are drawn by one generator per key type
// (FaultKeyType), with the ranges and allowed names of the table. A kind
// added to the table is generated without a change here.
//
// Shrinking is RapidCheck's own, over the parts generated: a schedule shrinks
// by dropping faults, a fault's time moves towards `start`, a duration
// (`for`, `down_for`) towards its least, a rate towards 1 (the default: every
// call hit), an optional key towards absent, a name towards the key's default
// or the first allowed name; a scenario by dropping jobs, tasks, calls and
// items and by shortening its span.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <rapidcheck.h>
#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/testing/check.hpp"
#include "sim/world/scenario.hpp"

// How RapidCheck shows a generated document in a counterexample (found by
// argument-dependent lookup): as compact JSON.
namespace nlohmann {
inline void showValue(const json& value, std::ostream& os) { os << value.dump(); }
}  // namespace nlohmann

namespace rehearse::testing {

// What a fault of a scenario may name: its span and what it declares. Read
// from a loaded scenario (fault_targets), so the loader decides what is
// declared.
struct FaultTargets {
  TimeMs start_ms = 0;
  TimeMs until_ms = 0;
  std::vector<std::string> services;       // declared built-in services ("model-api", ...)
  std::vector<std::string> user_services;  // declared services of the user's own
  std::vector<std::string> rate_limited;   // those whose capacity declares a rate
  bool orchestrator = false;
  std::string instance;             // the orchestrator's instance id (when declared)
  std::vector<std::string> issues;  // orchestrator issue ids
  std::vector<std::string> agents;  // orchestrator agent ids
  bool messenger = false;
  std::vector<std::string> targets;    // messenger targets
  int workers = 1;                     // worker processes (queue.workers)
  std::vector<std::string> file_jobs;  // jobs with a durable file of their own
};

FaultTargets fault_targets(const sim::Scenario& scenario);

struct FaultLimits {
  std::size_t max_faults = 6;
  // The fault kinds (table names) that may be drawn; empty: every applicable one.
  std::vector<std::string> kinds{};
  // A lasting fault's `for` and a process's `down_for` are at most this long
  // (and always end by `until`).
  DurationMs max_duration_ms = 6 * kHourMs;
};

struct ScenarioLimits {
  std::size_t max_jobs = 3;
  int max_span_hours = 24;
  FaultLimits faults{};
  // The job kinds ("group", "call", ...) that may be drawn; empty: every kind
  // this build's world runs.
  std::vector<std::string> job_kinds{};
};

namespace gen {

// The fault kinds (names, table order) a scenario with these targets can take
// (of `allowed`, when not empty).
std::vector<std::string> applicable_fault_kinds(const FaultTargets& targets,
                                                const std::vector<std::string>& allowed = {});

// One fault of an applicable kind: {"at": "+Ns", "kind": ..., keys...}.
// Throws std::invalid_argument when no kind applies (limits.kinds names none
// that does; with every kind allowed a worker restart always applies).
rc::Gen<nlohmann::json> fault(const FaultTargets& targets, const FaultLimits& limits = {});
// A JSON array of 0..limits.max_faults faults.
rc::Gen<nlohmann::json> fault_schedule(const FaultTargets& targets, const FaultLimits& limits = {});
rc::Gen<nlohmann::json> fault_schedule(const sim::Scenario& scenario,
                                       const FaultLimits& limits = {});

// The document with a generated schedule appended to its own faults and its
// `expect` removed (a scripted expectation does not survive extra faults;
// the invariants are what is checked). Throws std::invalid_argument when the
// document does not load.
rc::Gen<nlohmann::json> with_faults(const nlohmann::json& scenario_doc,
                                    const FaultLimits& limits = {});

// A whole scenario: a span of 1..max_span_hours hours, 1..max_jobs jobs of
// the kinds this build's world runs (cron schedules, retry policies in the
// core's forms), the services, issues, agents and targets they use, and a
// fault schedule for them. No `expect`: every invariant must hold.
rc::Gen<nlohmann::json> scenario(const ScenarioLimits& limits = {});

// Parts of a scenario, for properties of one piece.
rc::Gen<std::string> cron_schedule();
rc::Gen<nlohmann::json> retry_policy();

}  // namespace gen
}  // namespace rehearse::testing

// Inside a RapidCheck property: the scenario document runs on the real core
// (check_scenario_doc); a violation fails the case with describe()'s message
// (the invariants, the first message, the replay command and the document),
// and RapidCheck shrinks the generated document. Optional second argument:
// CheckOptions.
#define REHEARSE_RC_ASSERT_HOLDS(...)                                                         \
  do {                                                                                        \
    const auto rehearse_outcome_ = ::rehearse::testing::check_scenario_doc(__VA_ARGS__);      \
    if (!rehearse_outcome_.held()) RC_FAIL(::rehearse::testing::describe(rehearse_outcome_)); \
  } while (false)
