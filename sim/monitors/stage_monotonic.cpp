#include "sim/monitors/stage_monotonic.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

StageMonotonic::StageMonotonic(const Scenario& scenario, MonitorContext&)
    : roles_(kName, scenario) {
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) stages_[item.issue] = item.stage;
  }
}

namespace {

// The stages the world's reconcile jobs hand to an agent (the default
// stage_roles: a scenario cannot change them).
bool needs_agent(const std::string& stage) {
  const bool needs = stage == "BUILDING" || stage == "REVIEWING";
  // Both are stages of the rank table.
  REHEARSE_ASSERT(!needs || stage_rank(stage) >= 0);
  return needs;
}

bool answered_assign(const TraceEvent& e) {
  const std::int64_t status = e.num("status", 0);
  return e.type == "service_reply" && e.service == "orchestrator" &&
         e.str("operation") == "assign" && status >= 200 && status < 300;
}

bool answered_issue(const TraceEvent& e) {
  return e.type == "service_reply" && e.service == "orchestrator" && !e.item.empty() &&
         e.str("operation") == "get_issue" && e.num("status", 0) == 200;
}

// The stage an external status leads to, by the monitors' own table
// (docs/semantics.md §8); "" for a status that moves nothing.
std::string stage_of_status(const std::string& status) {
  if (status == "todo") return "DESIGNING";
  if (status == "in_progress") return "BUILDING";
  if (status == "in_review") return "REVIEWING";
  if (status == "done") return "DONE";
  return "";
}

}  // namespace

Violations StageMonotonic::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (answered_assign(e)) handed_over_.insert(e.item.empty() ? e.str("target") : e.item);
  if (answered_issue(e)) status_seen_[e.item] = e.str("body_class");
  if (e.type != "durable_stage") {
    const auto status = status_seen_.find(e.item);
    roles_.observe(e, i, status == status_seen_.end() ? std::string() : status->second, out);
    return out;
  }
  const std::string to = e.str("stage");
  const auto it = stages_.find(e.item);
  if (it == stages_.end()) {
    stages_[e.item] = to;
    return out;
  }
  const std::string prev = it->second;
  if (terminal_stage(prev) && to != prev) {
    out.push_back(
        {kName, i, e.t, fmt::format("item {} left terminal stage {} for {}", e.item, prev, to)});
  } else if (stage_rank(prev) >= 0 && stage_rank(to) >= 0 && stage_rank(to) < stage_rank(prev)) {
    out.push_back(
        {kName, i, e.t, fmt::format("item {} moved back from {} to {}", e.item, prev, to)});
  }
  if (to != prev) {
    check_handed_over(e, i, to, out);
    check_status_mapped(e, i, prev, to, out);
    status_seen_.erase(e.item);
  }
  stages_[e.item] = to;
  return out;
}

// A stage that needs an agent is written only after its handoff was answered:
// a stage written first and a crash before the `assign` leave an item in a
// stage whose work nobody was given.
void StageMonotonic::check_handed_over(const TraceEvent& e, std::size_t i, const std::string& to,
                                       Violations& out) {
  // observe() judges a change of an item's durable stage.
  REHEARSE_ASSERT_EQ(e.type, "durable_stage");
  const bool handed = handed_over_.erase(e.item) > 0;
  if (!needs_agent(to) || handed) return;
  out.push_back({kName, i, e.t,
                 fmt::format("item {} entered {} but the orchestrator answered no assign for it "
                             "since its last stage: the stage was written before the handoff",
                             e.item, to)});
}

// The stage a change went to is the one the orchestrator's answer called for:
// a stage moved with no answer since the last change, by a status that maps
// to no stage, from a stored stage the table does not know, or past what the
// status says, is a mapping the core got wrong.
void StageMonotonic::check_status_mapped(const TraceEvent& e, std::size_t i,
                                         const std::string& prev, const std::string& to,
                                         Violations& out) {
  // Asked only when the stage changed.
  REHEARSE_ASSERT_NE(prev, to);
  if (to == "DESIGN_FAILED" || terminal_stage(prev)) return;

  const auto seen = status_seen_.find(e.item);
  std::string why;
  if (stage_rank(prev) < 0) {
    why = fmt::format("its stored stage {} is unknown, which no status changes", prev);
  } else if (seen == status_seen_.end()) {
    why = "the orchestrator answered no get_issue for it since its last stage";
  } else {
    const std::string mapped = stage_of_status(seen->second);
    // The status table leads only to stages the rank table knows.
    if (!mapped.empty()) REHEARSE_ASSERT_GE(stage_rank(mapped), 0);
    const std::string wanted = stage_rank(mapped) > stage_rank(prev) ? mapped : prev;
    if (wanted == to) return;
    why = mapped.empty()
              ? fmt::format("its last status {} maps to no stage", seen->second)
              : fmt::format("its last status {} leads from {} to {}", seen->second, prev, wanted);
  }
  out.push_back(
      {kName, i, e.t,
       fmt::format("item {} moved from {} to {}, but {} (status mapping)", e.item, prev, to, why)});
}

void StageMonotonic::tally(nlohmann::json& tallies) const {
  for (const auto& [id, stage] : stages_) {
    nlohmann::json& o = tallies["items"][id];
    o["stage"] = stage;
    if (!o.contains("queries")) o["queries"] = 0;
  }
}

}  // namespace rehearse::sim
