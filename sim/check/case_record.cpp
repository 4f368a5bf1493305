#include "sim/check/case_record.hpp"

#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {

const char* to_string(CaseVerdict verdict) noexcept {
  switch (verdict) {
    case CaseVerdict::pass: return "pass";
    case CaseVerdict::fail: return "fail";
    case CaseVerdict::error: return "error";
  }
  return "error";
}

nlohmann::json to_json(const CaseRecord& record) {
  nlohmann::json out{{"scenario", record.scenario},
                     {"path", record.path},
                     {"seed", record.seed},
                     {"verdict", to_string(record.verdict)},
                     {"violations", record.violations},
                     {"message", record.message},
                     {"replay", record.replay},
                     {"shrunk", record.shrunk},
                     {"trace_hash", record.trace_hash},
                     {"events", record.events}};
  if (!record.reached.empty()) out["reached"] = record.reached;
  // Ten distinct keys, eleven with "reached": case_record_from_json reads them back.
  REHEARSE_ASSERT_EQ(out.size(), record.reached.empty() ? 10u : 11u);
  return out;
}

namespace {

Error record_error(const std::string& key, const std::string& expected) {
  REHEARSE_ASSERT(!key.empty());  // the error names a key of the record
  return make_error(ErrorCode::schema_error, "expected " + expected, "/" + key);
}

Result<CaseVerdict> verdict_from(const nlohmann::json& value) {
  if (!value.is_string()) return record_error("verdict", "\"pass\", \"fail\" or \"error\"");
  for (CaseVerdict v : {CaseVerdict::pass, CaseVerdict::fail, CaseVerdict::error}) {
    if (value.get<std::string>() == to_string(v)) return v;
  }
  return record_error("verdict", "\"pass\", \"fail\" or \"error\"");
}

bool read_string(const nlohmann::json& object, const char* key, std::string& out) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

bool read_count(const nlohmann::json& object, const char* key, std::uint64_t& out) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return false;
  out = it->get<std::uint64_t>();
  return true;
}

bool read_names(const nlohmann::json& object, const char* key, std::vector<std::string>& out) {
  REHEARSE_ASSERT(out.empty());  // a fresh record's list: nothing to append to
  const auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return false;
  for (const auto& name : *it) {
    if (!name.is_string()) return false;
    out.push_back(name.get<std::string>());
  }
  return true;
}

}  // namespace

Result<CaseRecord> case_record_from_json(const nlohmann::json& object) {
  if (!object.is_object()) return make_error(ErrorCode::schema_error, "expected an object", "");
  CaseRecord r;
  for (auto [key, out] : {std::pair{"scenario", &r.scenario}, std::pair{"path", &r.path},
                          std::pair{"message", &r.message}, std::pair{"replay", &r.replay},
                          std::pair{"shrunk", &r.shrunk}, std::pair{"trace_hash", &r.trace_hash}}) {
    if (!read_string(object, key, *out)) return record_error(key, "a string");
  }
  if (!read_count(object, "seed", r.seed)) return record_error("seed", "an unsigned integer");
  if (!read_count(object, "events", r.events)) return record_error("events", "an unsigned integer");
  if (!read_names(object, "violations", r.violations)) {
    return record_error("violations", "an array of invariant names");
  }
  if (object.contains("reached") && !read_names(object, "reached", r.reached)) {
    return record_error("reached", "an array of reachability point names");
  }
  const auto verdict = object.find("verdict");
  Result<CaseVerdict> v = verdict_from(verdict == object.end() ? nlohmann::json() : *verdict);
  if (!v.ok()) return v.error();
  r.verdict = *v;
  return r;
}

}  // namespace rehearse::sim
