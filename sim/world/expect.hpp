// Expectations: a scenario's `expect` block checked against one run
// (docs/scenario-format.md, `expect`; docs/run.md).
//
// Each key is compared with what the run shows by a source that is not the
// core's own word, except the two the format defines that way:
// - counts, slot outcomes, attempts, lateness, notifications: the monitors'
//   tallies (the run's tallies: the monitors', sim/monitors/monitor_set.hpp);
// - messages per target and kind, 404 answers per item, the messenger's calls:
//   the simulated world's own trace events (message_delivered / _refused,
//   service_reply);
// - `state` and `final_status`: the job's durable state read back from the
//   simulated disk's bytes after the run, decoded with the core's state codec
//   (the store read as a fresh process would read it; an end-of-run
//   expectation of what the file says, not a witness of how it got there);
// - `policy`: the policy the worker runs the job with (model/worker.hpp
//   plan_job on the job's configuration and the scenario's environment), so
//   an expectation can state what `"auto"` chose;
// - `damaged_files`: the simulated disk's bytes of a damaged state file at
//   the end, against the bytes the damage left.
// Each mismatch names its JSON pointer:
// `expect /expect/jobs/weekly/retries: expected 1, got 2`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/world/scenario.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

struct ExpectFailure {
  std::string pointer;   // "/expect/jobs/weekly/retries"
  std::string expected;  // "1", "at most 30m", "ok"
  std::string got;       // "2"
  // The same values for --json: counts and durations (ms) as numbers, names
  // as strings.
  nlohmann::json expected_value;
  nlohmann::json got_value;

  // "expect /expect/jobs/weekly/retries: expected 1, got 2"
  std::string describe() const;
};

std::vector<ExpectFailure> check_expectations(const Scenario& scenario,
                                              const ScenarioRunResult& run);

// Whether checking `expect` needs the run's whole trace (per-target message
// counts, an item's 404 answers are counted from the services' own events),
// so a run that would stream its trace keeps it.
bool expectations_need_trace(const Expectations& expect);

// Messenger sends (delivered or refused) in the run's trace.
std::int64_t messenger_calls(const ScenarioRunResult& run);

// A count from the tallies at `path` (0 when absent: a job, item or event the
// monitors never saw counted nothing).
std::int64_t tally_count(const nlohmann::json& tallies, const std::vector<std::string>& path);

// "0s" or format_duration(ms).
std::string short_duration(DurationMs ms);

}  // namespace rehearse::sim
