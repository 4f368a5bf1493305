// The worker's state directory as evidence (`rehearse import --log --state`):
// each job's durable record as the worker left it becomes the imported
// scenario's `expect.jobs.<id>.state`, so a replay also says whether the core
// ends where the worker ended (docs/import.md, "The state directory").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_state.hpp"

namespace rehearse::sim {

struct StateEvidence {
  std::string dir;                       // the directory read (for notes)
  std::map<std::string, JobState> jobs;  // its records, by job id
  std::optional<std::string> corrupt;    // why its store cannot be read (kept as it is)
};

// Adds the state expectation of every job the scenario lists: its record,
// a fresh state when the store has none, "unreadable" for all when the store
// is corrupt. Records of jobs the scenario does not list are named in notes.
void expect_end_states(nlohmann::ordered_json& scenario, const StateEvidence& state,
                       std::vector<std::string>& notes);

}  // namespace rehearse::sim
