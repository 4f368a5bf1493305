// Agent roles of the reconcile job (docs/semantics.md §8; incident 000).
//
// The orchestrator's agents work in exactly four roles: lead, dev, ops and
// planning. Each role's agent id comes from the environment
// (AGENT_LEAD_ID, AGENT_DEV_ID, AGENT_OPS_ID, AGENT_PLANNING_ID), never from
// getenv() inside the core: the Environment is passed in. Configurations
// written before the four roles existed use older names; they map onto the
// four (an extension: incident 000 names none):
//   ceo, chief, manager                      -> lead
//   engineer, developer, coder, builder      -> dev
//   sre, devops, operator                    -> ops
//   pm, planner, product, strategist         -> planning
// Any other name is a configuration error (class `config`), never a guess.
// Names are matched exactly after ASCII lower-casing and trimming blanks, so
// "Lead" and " CEO " are accepted while "leader" is not.
//
// Secrets: an agent id is an identifier an attacker can use against the
// orchestrator, so logs and traces carry only short_id(id), its first 8
// characters: enough to find the setting, never the whole id.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "model/environment.hpp"
#include "model/result.hpp"

namespace rehearse {

enum class Role : unsigned char { lead, dev, ops, planning };
inline constexpr std::array<Role, 4> kAllRoles{Role::lead, Role::dev, Role::ops, Role::planning};

// "lead", "dev", "ops", "planning".
const char* to_string(Role role) noexcept;
// The environment variable holding the role's agent id ("AGENT_LEAD_ID", ...).
const char* role_env_var(Role role) noexcept;

// One of the four names or a legacy name (case-insensitive, blanks trimmed);
// anything else is an invalid_argument error whose message names the role and
// lists the accepted names (a config error for the caller).
Result<Role> parse_role(std::string_view name);
// True when `name` is a legacy alias rather than one of the four names.
bool is_legacy_role_name(std::string_view name);

// The role's agent id from the environment. A missing or empty variable is an
// invalid_argument error naming the variable (the id itself never appears).
Result<std::string> agent_id_for(Role role, const Environment& env);

// The first 8 characters of an agent id (all of it when shorter): the only
// form of an agent id that logs and traces may carry.
inline constexpr std::size_t kShortIdLength = 8;
std::string short_id(std::string_view agent_id);

}  // namespace rehearse
