#include "sim/monitors/handoff_roles.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>
#include <utility>

#include "model/assert.hpp"
#include "model/environment.hpp"

namespace rehearse::sim {

namespace {

constexpr std::size_t kShortId = 8;  // the orchestrator's records carry this much

std::string short_of(const std::string& id) {
  std::string out = id.substr(0, kShortId);
  REHEARSE_ASSERT_LE(out.size(), kShortId);
  return out;
}

// The role a handoff for the item's status goes to (the world's stage_roles:
// BUILDING dev, REVIEWING lead); "" for a status that calls for none.
std::string role_for_status(const std::string& status) {
  const std::string role = status == "in_progress" ? "dev" : status == "in_review" ? "lead" : "";
  // A role of the witnesses' own table, or none.
  REHEARSE_ASSERT(role.empty() || witness_role_of(role) == role);
  return role;
}

}  // namespace

std::optional<std::string> witness_role_of(const std::string& name) {
  static const std::array<std::pair<const char*, const char*>, 18> kNames{{
      {"lead", "lead"},
      {"ceo", "lead"},
      {"chief", "lead"},
      {"manager", "lead"},
      {"dev", "dev"},
      {"engineer", "dev"},
      {"developer", "dev"},
      {"coder", "dev"},
      {"builder", "dev"},
      {"ops", "ops"},
      {"sre", "ops"},
      {"devops", "ops"},
      {"operator", "ops"},
      {"planning", "planning"},
      {"pm", "planning"},
      {"planner", "planning"},
      {"product", "planning"},
      {"strategist", "planning"},
  }};
  for (const auto& [listed, role] : kNames) {
    if (name != listed) continue;
    // The table maps every name onto one of the four roles.
    const std::string_view r = role;
    REHEARSE_ASSERT(r == "lead" || r == "dev" || r == "ops" || r == "planning");
    return std::string(role);
  }
  return std::nullopt;
}

std::optional<std::string> env_role_of(const Scenario& scenario, const std::string& agent_id) {
  static const std::array<std::pair<const char*, const char*>, 4> kEnvRoles{
      {{"AGENT_LEAD_ID", "lead"},
       {"AGENT_DEV_ID", "dev"},
       {"AGENT_OPS_ID", "ops"},
       {"AGENT_PLANNING_ID", "planning"}}};
  for (const auto& [var, role] : kEnvRoles) {
    const auto named = env_lookup(scenario.env, var);
    if (!named || *named != agent_id) continue;
    // Each variable names one of the witnesses' four roles.
    REHEARSE_ASSERT(witness_role_of(role) == std::string(role));
    return std::string(role);
  }
  return std::nullopt;
}

HandoffRoles::HandoffRoles(const char* invariant, const Scenario& scenario)
    : invariant_(invariant) {
  if (const auto lead = env_lookup(scenario.env, "AGENT_LEAD_ID"); lead && !lead->empty()) {
    lead_ = short_of(std::string(*lead));
  }
  if (!scenario.services.orchestrator) return;
  for (const OrchestratorAgent& a : scenario.services.orchestrator->agents) {
    agents_[short_of(a.id)] = Agent{a.role, a.present};
  }
  // Agents are keyed by short id (two may share one): never more than listed.
  REHEARSE_ASSERT_LE(agents_.size(), scenario.services.orchestrator->agents.size());
  REHEARSE_ASSERT_LE(lead_.size(), kShortId);
}

void HandoffRoles::observe(const TraceEvent& e, std::size_t i, const std::string& status,
                           Violations& out) {
  if (e.type == "agent_removed" || e.type == "agent_restored") {
    const auto it = agents_.find(e.str("agent"));
    if (it != agents_.end()) it->second.present = e.type == "agent_restored";
  } else if (e.type == "service_reply" && e.service == "orchestrator" &&
             e.str("operation") == "list_agents" && e.num("status", 0) == 200) {
    Listing& listed = listed_[e.job];
    listed.clear();
    for (const auto& [id, agent] : agents_) {
      if (agent.present) listed[id] = agent.role;
    }
    // A list holds only the agents the tracker knows (those present).
    REHEARSE_ASSERT_LE(listed.size(), agents_.size());
  } else if (e.type == "issue_assigned") {
    on_assigned(e, i, status, out);
  }
}

// Why the lead check fails on `listed` (nullopt: it passes).
std::optional<std::string> HandoffRoles::lead_problem(const Listing& listed) const {
  if (lead_.empty()) return "AGENT_LEAD_ID is not set";
  // Listings are keyed by short id: the lead is looked up the same way.
  REHEARSE_ASSERT_LE(lead_.size(), kShortId);
  const auto it = listed.find(lead_);
  if (it == listed.end()) return fmt::format("the lead agent {} was not in the list", lead_);
  if (witness_role_of(it->second) != "lead") {
    return fmt::format("the lead agent {} is listed as '{}'", lead_, it->second);
  }
  return std::nullopt;
}

// A handoff the orchestrator accepted: the lead check and the receiving
// agent's listed role, against the list the job's cycle last got.
void HandoffRoles::on_assigned(const TraceEvent& e, std::size_t i, const std::string& status,
                               Violations& out) const {
  // observe() hands over only accepted handoffs.
  REHEARSE_ASSERT_EQ(e.type, "issue_assigned");
  const auto list = listed_.find(e.job);

  const Listing none;
  const Listing& listed = list == listed_.end() ? none : list->second;
  std::optional<std::string> why = list == listed_.end()
                                       ? std::optional<std::string>("its cycle got no agent list")
                                       : lead_problem(listed);
  const std::string wanted = role_for_status(status);
  const std::string agent = e.str("agent");
  if (!why && !wanted.empty()) {
    const auto it = listed.find(agent);
    if (it == listed.end()) {
      why = fmt::format("agent {} was not in the list", agent);
    } else if (witness_role_of(it->second) != wanted) {
      why = fmt::format("agent {} is listed as '{}', not as {}", agent, it->second, wanted);
    }
  }
  if (!why) return;
  out.push_back({invariant_, i, e.t,
                 fmt::format("issue {} was handed to agent {} although {} (a config error: "
                             "no handoff)",
                             e.item, agent, *why)});
}

}  // namespace rehearse::sim
