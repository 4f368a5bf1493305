// Shared fixtures of the reconcile tests (tests/model/test_reconcile*.cpp):
// the start instant, the agents' long ids (so that a leak of a whole id is
// detectable) and the environment naming them, and the vocabularies of
// orchestrator statuses and pipeline stages the properties draw from.
// Inline: every test file of the binary includes it.
#pragma once

#include <string>
#include <vector>

#include "model/agent_roles.hpp"
#include "model/reconcile.hpp"
#include "model/time.hpp"

namespace rehearse::reconcile_test {

inline const TimeMs kStart = parse_instant("2026-12-01T09:00:00Z").value();
// Long ids, so that a leak of a whole id is detectable.
inline const std::string kLeadId = "agt-lead-5f2c81d9e0b34a7c9d11";
inline const std::string kDevId = "agt-dev0-93ab7c1e44d2f0a8b6c5";
inline const std::string kOpsId = "agt-ops0-1c9e5a7b3d2f8e6a4b0c";
inline const std::string kPlanId = "agt-plan-7d3f9b1a5c8e2d4f6a0b";

inline Environment default_env() {
  return Environment{{"AGENT_LEAD_ID", kLeadId},
                     {"AGENT_DEV_ID", kDevId},
                     {"AGENT_OPS_ID", kOpsId},
                     {"AGENT_PLANNING_ID", kPlanId}};
}
inline const std::vector<std::string>& all_statuses() {
  static const std::vector<std::string> kStatuses{"backlog", "todo", "in_progress", "in_review",
                                                  "blocked", "done", "cancelled",   "weird"};
  return kStatuses;
}
inline const std::vector<std::string>& all_stages() {
  static const std::vector<std::string> kStages{"DESIGNING", "BUILDING",      "REVIEWING",
                                                "DONE",      "DESIGN_FAILED", "LEGACY_QA"};
  return kStages;
}

// A total order over observations for the check: terminal above everything.
inline int order_of(const std::string& stage) {
  if (is_terminal_stage(stage)) return 10;
  return stage_rank(stage).value_or(-1);
}

}  // namespace rehearse::reconcile_test
