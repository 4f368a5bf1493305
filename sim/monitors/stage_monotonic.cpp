#include "sim/monitors/stage_monotonic.hpp"

#include <fmt/format.h>

#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

StageMonotonic::StageMonotonic(const Scenario& scenario, MonitorContext&) {
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) stages_[item.issue] = item.stage;
  }
}

Violations StageMonotonic::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
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
  stages_[e.item] = to;
  return out;
}

void StageMonotonic::tally(nlohmann::json& tallies) const {
  for (const auto& [id, stage] : stages_) {
    nlohmann::json& o = tallies["items"][id];
    o["stage"] = stage;
    if (!o.contains("queries")) o["queries"] = 0;
  }
}

}  // namespace rehearse::sim
