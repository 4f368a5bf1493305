// stage_monotonic (docs/semantics.md §10): a pipeline item's durable stage
// never moves back, and never leaves a terminal stage. Reads the world's
// reading of each pipeline store's durable file (`durable_stage`), never the
// core's stage_changed line; ranks stages with its own table (stage_rank.hpp)
// against its own record of each item's stage (initially the scenario's).
// Also handoff before the stage (docs/reconcile.md): an item enters a stage
// that needs an agent (BUILDING, REVIEWING) only after the orchestrator
// answered an `assign` for it with a 2xx since its last stage change; the
// answer is the orchestrator's own `service_reply`.
// And the status mapping (docs/semantics.md §8): a stage change other than
// DESIGN_FAILED (a 404's, judged by nothing_lost and item_queries_bounded)
// goes to the later of the item's stage and the stage of the status the
// orchestrator last answered for it (`get_issue` 200: todo DESIGNING,
// in_progress BUILDING, in_review REVIEWING, done DONE) since its last
// change; an unknown status, or an unknown stored stage, changes nothing.
// And the roles of a handoff (handoff_roles.hpp).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/handoff_roles.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class StageMonotonic final : public Monitor {
 public:
  static constexpr const char* kName = "stage_monotonic";
  static constexpr const char* kSummary =
      "a reconcile item's stage never goes back, and handoffs go to the right roles";
  static std::vector<std::string> reads() {
    return {"durable_stage", "service_reply", "issue_assigned", "agent_removed", "agent_restored"};
  }

  StageMonotonic(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // items.<id>.stage (and queries 0 for an item nothing else counted).
  void tally(nlohmann::json& tallies) const override;

 private:
  void check_handed_over(const TraceEvent& e, std::size_t i, const std::string& to,
                         Violations& out);
  void check_status_mapped(const TraceEvent& e, std::size_t i, const std::string& prev,
                           const std::string& to, Violations& out);

  std::map<std::string, std::string> stages_;  // item -> its last durable stage
  // Items the orchestrator answered an `assign` for (2xx) since their last
  // durable stage change.
  std::set<std::string> handed_over_;
  // item -> the status of the orchestrator's last `get_issue` 200 answer for
  // it since its last durable stage change.
  std::map<std::string, std::string> status_seen_;
  HandoffRoles roles_;
};

}  // namespace rehearse::sim
