#include "sim/monitors/stage_monotonic.hpp"

#include <fmt/format.h>

#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

StageMonotonic::StageMonotonic(const Scenario& scenario, MonitorContext&) {
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) stages_[item.issue] = item.stage;
  }
}

namespace {

// The stages the world's reconcile jobs hand to an agent (the default
// stage_roles: a scenario cannot change them).
bool needs_agent(const std::string& stage) { return stage == "BUILDING" || stage == "REVIEWING"; }

bool answered_assign(const TraceEvent& e) {
  const std::int64_t status = e.num("status", 0);
  return e.type == "service_reply" && e.service == "orchestrator" &&
         e.str("operation") == "assign" && status >= 200 && status < 300;
}

}  // namespace

Violations StageMonotonic::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (answered_assign(e)) handed_over_.insert(e.item.empty() ? e.str("target") : e.item);
  if (e.type != "durable_stage") return out;
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
  if (to != prev) check_handed_over(e, i, to, out);
  stages_[e.item] = to;
  return out;
}

// A stage that needs an agent is written only after its handoff was answered:
// a stage written first and a crash before the `assign` leave an item in a
// stage whose work nobody was given.
void StageMonotonic::check_handed_over(const TraceEvent& e, std::size_t i, const std::string& to,
                                       Violations& out) {
  const bool handed = handed_over_.erase(e.item) > 0;
  if (!needs_agent(to) || handed) return;
  out.push_back({kName, i, e.t,
                 fmt::format("item {} entered {} but the orchestrator answered no assign for it "
                             "since its last stage: the stage was written before the handoff",
                             e.item, to)});
}

void StageMonotonic::tally(nlohmann::json& tallies) const {
  for (const auto& [id, stage] : stages_) {
    nlohmann::json& o = tallies["items"][id];
    o["stage"] = stage;
    if (!o.contains("queries")) o["queries"] = 0;
  }
}

}  // namespace rehearse::sim
