#include "sim/world/job_kind_table.hpp"

#include <fmt/format.h>

#include <utility>

#include "model/assert.hpp"
#include "sim/world/job_kind_builtins.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

// Kind names appear in files, traces and schema branches: the identifier
// rule of the scenario format, kept short.
bool is_kind_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return name.front() >= 'a' && name.front() <= 'z';
}

void check_entry(const JobKindDef& def) {
  REHEARSE_ASSERT(is_kind_name(def.name));
  REHEARSE_ASSERT(def.read && def.runner_params && def.services && def.calls_per_run);
  REHEARSE_ASSERT_GE(def.settle_ms, 0);
  REHEARSE_ASSERT(def.schema_properties.is_object() && def.schema_defs.is_object());
  for (const std::string& key : def.keys) REHEARSE_ASSERT(def.schema_properties.contains(key));
  REHEARSE_ASSERT_EQ(def.schema_properties.size(), def.keys.size());
}

struct Table {
  std::vector<JobKindDef> defs;
  std::vector<JobKind> kinds;  // 0..defs.size()-1

  void add(JobKindDef def) {
    check_entry(def);
    for (const JobKindDef& d : defs) REHEARSE_ASSERT(d.name != def.name);
    REHEARSE_ASSERT_LT(defs.size(), std::size_t{255});  // JobKind is one byte
    kinds.push_back(static_cast<JobKind>(defs.size()));
    defs.push_back(std::move(def));
  }
};

Table& table() {
  static Table t = [] {
    Table out;
    // In JobKind order: the enumerators name these positions.
    out.add(group_job_kind());
    out.add(fetch_job_kind());
    out.add(reconcile_job_kind());
    out.add(publish_job_kind());
    out.add(call_job_kind());
    REHEARSE_ASSERT(out.defs[static_cast<std::size_t>(JobKind::call)].name == "call");
    return out;
  }();
  return t;
}

// The `job` definition's branch for one kind: its keys apply when its name does.
json kind_branch(const std::string& name) {
  REHEARSE_ASSERT(is_kind_name(name));  // a table entry's name (check_entry)
  return {{"if", {{"properties", {{"kind", {{"const", name}}}}}, {"required", {"kind"}}}},
          {"then", {{"$ref", "#/$defs/job_" + name}}}};
}

}  // namespace

const std::vector<JobKindDef>& job_kind_table() {
  // One JobKind per entry, each its own position.
  REHEARSE_ASSERT_EQ(table().kinds.size(), table().defs.size());
  return table().defs;
}

const JobKindDef& job_kind_def(JobKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  REHEARSE_ASSERT_LT(i, table().defs.size());
  return table().defs[i];
}

std::optional<JobKind> find_job_kind_named(std::string_view name) {
  const Table& t = table();
  for (std::size_t i = 0; i < t.defs.size(); ++i) {
    if (t.defs[i].name == name) {
      REHEARSE_ASSERT_EQ(static_cast<std::size_t>(t.kinds[i]), i);  // JobKind values are positions
      return t.kinds[i];
    }
  }
  return std::nullopt;
}

JobKind add_job_kind(JobKindDef def) {
  Table& t = table();
  t.add(std::move(def));
  const JobKind added = t.kinds.back();
  REHEARSE_ASSERT(job_kind_def(added).name == t.defs.back().name);
  return added;
}

json job_kinds_schema() {
  json defs = json::object();
  json names = json::array();
  json branches = json::array();
  for (const JobKindDef& def : job_kind_table()) {
    names.push_back(def.name);
    branches.push_back(kind_branch(def.name));
    json own{{"properties", def.schema_properties}};
    if (!def.schema_required.empty()) own["required"] = def.schema_required;
    defs["job_" + def.name] = std::move(own);
    for (const auto& [name, body] : def.schema_defs.items()) {
      REHEARSE_ASSERT(!defs.contains(name));  // one owner per helper definition
      defs[name] = body;
    }
  }
  defs["job"] = {{"properties", {{"kind", {{"enum", names}}}}}, {"allOf", branches}};
  // Each kind's "job_<name>" is its own: no helper definition takes that name.
  REHEARSE_ASSERT_GE(defs.size(), job_kind_table().size() + 1);
  return defs;
}

// ------------------------------------------------ scenario.hpp's functions

const std::vector<JobKind>& all_job_kinds() {
  REHEARSE_ASSERT_EQ(table().kinds.size(), table().defs.size());  // one JobKind per entry
  return table().kinds;
}

const char* to_string(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < table().defs.size() ? table().defs[i].name.c_str() : "unknown";
}

bool job_keeps_file(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < table().defs.size() && table().defs[i].keeps_file;
}

// The most cautious answer for a kind the table does not have.
SideEffectKind default_side_effects(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < table().defs.size() ? table().defs[i].side_effects : SideEffectKind::publish;
}

}  // namespace rehearse::sim
