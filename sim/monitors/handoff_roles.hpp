// Part of stage_monotonic (docs/semantics.md §8 "Roles", docs/reconcile.md
// "Handoff checks"): work is handed over only when the lead agent is in the
// orchestrator's agent list under a role name that maps to lead, and only to
// an agent listed under a role that maps to the stage's role (BUILDING: dev,
// REVIEWING: lead). Judged on each handoff the orchestrator accepted
// (`issue_assigned`, with the agent's first 8 characters) against the agent
// list the job's cycle last got (the world's agents present at the job's
// last `list_agents` 200, their roles as the scenario lists them), with the
// monitors' own table of role names (the four roles and their legacy names).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "sim/monitors/monitor.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// The role a listed role name maps to ("lead", "dev", "ops", "planning"), or
// nullopt for a name that maps to none (a config error).
std::optional<std::string> witness_role_of(const std::string& name);

// The role the scenario's environment names `agent_id` for (AGENT_LEAD_ID:
// lead, AGENT_DEV_ID: dev, AGENT_OPS_ID: ops, AGENT_PLANNING_ID: planning),
// or nullopt when it names it for none.
std::optional<std::string> env_role_of(const Scenario& scenario, const std::string& agent_id);

class HandoffRoles {
 public:
  HandoffRoles(const char* invariant, const Scenario& scenario);

  // `status`: the item's last answered status ("" when none).
  void observe(const TraceEvent& e, std::size_t i, const std::string& status, Violations& out);

 private:
  struct Agent {
    std::string role;
    bool present = true;
  };
  using Listing = std::map<std::string, std::string>;  // short id -> listed role

  void on_assigned(const TraceEvent& e, std::size_t i, const std::string& status,
                   Violations& out) const;
  std::optional<std::string> lead_problem(const Listing& listed) const;

  const char* invariant_;
  std::string lead_;                       // AGENT_LEAD_ID's first 8 characters
  std::map<std::string, Agent> agents_;    // by short id: the world's agents now
  std::map<std::string, Listing> listed_;  // job -> its cycle's last answered list
};

}  // namespace rehearse::sim
