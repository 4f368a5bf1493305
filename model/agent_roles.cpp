#include "model/agent_roles.hpp"

#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse {
namespace {

struct RoleAlias {
  std::string_view name;
  Role role;
  bool legacy;
};

// The mapping table of docs/semantics.md §8, in one place.
constexpr std::array<RoleAlias, 18> kRoleAliases{{
    {"lead", Role::lead, false},
    {"dev", Role::dev, false},
    {"ops", Role::ops, false},
    {"planning", Role::planning, false},
    {"ceo", Role::lead, true},
    {"chief", Role::lead, true},
    {"manager", Role::lead, true},
    {"engineer", Role::dev, true},
    {"developer", Role::dev, true},
    {"coder", Role::dev, true},
    {"builder", Role::dev, true},
    {"sre", Role::ops, true},
    {"devops", Role::ops, true},
    {"operator", Role::ops, true},
    {"pm", Role::planning, true},
    {"planner", Role::planning, true},
    {"product", Role::planning, true},
    {"strategist", Role::planning, true},
}};

std::string normalise(std::string_view name) {
  while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

const RoleAlias* find_alias(std::string_view name) {
  const std::string key = normalise(name);
  for (const RoleAlias& alias : kRoleAliases) {
    if (alias.name == key) return &alias;
  }
  return nullptr;
}

}  // namespace

const char* to_string(Role role) noexcept {
  switch (role) {
    case Role::lead: return "lead";
    case Role::dev: return "dev";
    case Role::ops: return "ops";
    case Role::planning: return "planning";
  }
  return "unknown";
}

const char* role_env_var(Role role) noexcept {
  switch (role) {
    case Role::lead: return "AGENT_LEAD_ID";
    case Role::dev: return "AGENT_DEV_ID";
    case Role::ops: return "AGENT_OPS_ID";
    case Role::planning: return "AGENT_PLANNING_ID";
  }
  return "AGENT_UNKNOWN_ID";
}

Result<Role> parse_role(std::string_view name) {
  if (const RoleAlias* alias = find_alias(name)) return alias->role;
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("unknown agent role '{}' (expected lead, dev, ops or planning, "
                                "or a legacy name such as ceo, engineer, sre, pm)",
                                name));
}

bool is_legacy_role_name(std::string_view name) {
  const RoleAlias* alias = find_alias(name);
  return alias != nullptr && alias->legacy;
}

Result<std::string> agent_id_for(Role role, const Environment& env) {
  const std::optional<std::string_view> value = env_lookup(env, role_env_var(role));
  if (!value || value->empty()) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("{} is not set: no agent configured for role {}",
                                  role_env_var(role), to_string(role)));
  }
  REHEARSE_ASSERT(!value->empty());
  return std::string(*value);
}

std::string short_id(std::string_view agent_id) {
  std::string out(agent_id.substr(0, kShortIdLength));
  REHEARSE_ASSERT_LE(out.size(), kShortIdLength);  // never the whole secret id
  return out;
}

}  // namespace rehearse
