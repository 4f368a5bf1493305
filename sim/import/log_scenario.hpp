// The worker's log as a scenario (docs/import.md, "The worker's log").
//
// From the log: the jobs as the first boot configured them, the boots after
// it (restarts), each service's fault windows from its calls
// (fault_windows.hpp), and the expectations of what was observed: every
// slot with its outcome, its runs' start instants and its notifications,
// each job's runs, retries and notifications. Replaying the scenario then
// says whether the core reproduces the incident.
//
// A log holds no world: with --into, the base scenario gives the services,
// the messenger, the orchestrator and every fault the log cannot see (a
// damaged file, a stepped clock, a restart); its jobs take the log's
// configuration where the two differ, each difference noted. Without it,
// only `call` jobs can be rebuilt: their services are declared from the
// calls, with the latencies the runs' durations show, and each boot after
// the first is a restart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/import/imported_scenario.hpp"
#include "sim/import/log_evidence.hpp"
#include "sim/import/state_expectations.hpp"

namespace rehearse::sim {

struct LogImportInput {
  std::optional<nlohmann::ordered_json> base;  // the --into scenario, as written
  std::string base_path;                       // its path (empty without --into)
  std::vector<std::string> logs;               // the log files read, in order
  std::string name;                            // the scenario's name (empty: the base's)
  bool clock_stepped = false;                  // stamps went back: runs' instants are not true time
  std::optional<StateEvidence> state;          // the worker's state directory, when given
};

Result<ImportResult> import_worker_log(const LogImportInput& input, const LogEvidence& evidence);

// expect: what the log observed (the base's `violations` kept).
nlohmann::ordered_json observed_expectations(const LogEvidence& evidence,
                                             const nlohmann::ordered_json& scenario,
                                             bool with_instants);

}  // namespace rehearse::sim
