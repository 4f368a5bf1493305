// stage_monotonic (docs/semantics.md §10): a pipeline item's durable stage
// never moves back, and never leaves a terminal stage. Reads the world's
// reading of each pipeline store's durable file (`durable_stage`), never the
// core's stage_changed line; ranks stages with its own table (stage_rank.hpp)
// against its own record of each item's stage (initially the scenario's).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class StageMonotonic final : public Monitor {
 public:
  static constexpr const char* kName = "stage_monotonic";
  static std::vector<std::string> reads() { return {"durable_stage"}; }

  StageMonotonic(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // items.<id>.stage (and queries 0 for an item nothing else counted).
  void tally(nlohmann::json& tallies) const override;

 private:
  std::map<std::string, std::string> stages_;  // item -> its last durable stage
};

}  // namespace rehearse::sim
