#include "sim/import/state_expectations.hpp"

#include <fmt/format.h>

#include <set>

#include "model/failure.hpp"
#include "model/time.hpp"

namespace rehearse::sim {
namespace {

using ojson = nlohmann::ordered_json;

ojson instant_or_null(const std::optional<TimeMs>& t) {
  return t ? ojson(format_instant(*t)) : ojson(nullptr);
}

// The record as expect.jobs.<id>.state names its keys (docs/scenario-format.md).
ojson state_expectation(const JobState& s) {
  ojson out = ojson::object();
  out["retry_status"] = to_string(s.retry_status);
  out["next_action"] = to_string(s.next_action);
  out["next_run_at"] = instant_or_null(s.next_run_at);
  out["next_retry_at"] = instant_or_null(s.next_retry_at);
  out["retry_count"] = s.retry_count;
  out["failure_class"] = s.failure_class ? ojson(to_string(*s.failure_class)) : ojson(nullptr);
  return out;
}

}  // namespace

void expect_end_states(ojson& scenario, const StateEvidence& state,
                       std::vector<std::string>& notes) {
  ojson& jobs = scenario["expect"]["jobs"];
  std::set<std::string> listed;
  for (const ojson& j : scenario.value("jobs", ojson::array())) {
    const std::string id = j.value("id", std::string());
    if (id.empty()) continue;
    listed.insert(id);
    if (state.corrupt) {
      jobs[id]["state"] = "unreadable";
    } else {
      const auto record = state.jobs.find(id);
      jobs[id]["state"] =
          state_expectation(record != state.jobs.end() ? record->second : JobState{});
    }
  }
  if (state.corrupt) {
    notes.push_back(fmt::format(
        "the state directory {} holds a store that cannot be read ({}): its bytes are kept as "
        "they are (the import only reads), and the replay's store is expected unreadable too",
        state.dir, *state.corrupt));
    return;
  }
  for (const auto& [id, record] : state.jobs) {
    if (listed.count(id) == 0) {
      notes.push_back(fmt::format(
          "the state directory {} holds a record of job '{}', which the scenario does not list: "
          "not expected",
          state.dir, id));
    }
  }
  notes.push_back(fmt::format(
      "expect.jobs.<id>.state: each job's durable record as the state directory {} holds it",
      state.dir));
}

}  // namespace rehearse::sim
