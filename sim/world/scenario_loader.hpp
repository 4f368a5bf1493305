// The scenario loader's private header, shared by sim/scenario*.cpp: the Loader
// class, the format's bounds and the helpers its readers share.
#pragma once

#include "model/assert.hpp"
#include "model/state_codec.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/spelling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "model/cron.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/fleet.hpp"
#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace scenario_detail {

// Bounds: a limit on everything (TigerBeetle habit); a file beyond these is
// almost certainly generated wrongly, and the run would be unbounded anyway.
// A fleet is described by a `fleet` block (sim/world/fleet.hpp, up to
// kMaxFleetJobs generated jobs); a listed job costs ~200 bytes of JSON, so
// kMaxListedJobs listed jobs fit in kMaxFileBytes.
constexpr std::size_t kMaxFileBytes = 64u << 20;
constexpr std::size_t kMaxListedJobs = 100'000;
constexpr std::size_t kMaxJobs = static_cast<std::size_t>(kMaxFleetJobs);  // listed + generated
constexpr std::size_t kMaxCalls = 100;                                     // calls per call job
constexpr std::size_t kMaxFaults = 100'000;
constexpr std::size_t kMaxListItems = 10'000;
constexpr std::size_t kMaxIdLength = 128;
// Scenarios nest about six levels; the bound keeps every later recursive walk
// of the document (copies, dumps, the policy parser) far from the stack limit.
constexpr std::size_t kMaxNestingDepth = 64;
constexpr std::int64_t kMaxCount = 1'000'000'000'000;

// A task's outputs, in TaskOutput's order (to_string and the job reader).
constexpr std::array<const char*, 3> kTaskOutputNames{"summary", "preview", "skip"};

template <std::size_t N>
std::vector<std::string> to_vector(const std::array<const char*, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

const std::vector<std::string>& keys_of(const std::string& level);

std::string child(const std::string& pointer, std::string_view key);
std::string child(const std::string& pointer, std::size_t index);

std::string join(const std::vector<std::string>& words, std::string_view sep = ", ");
std::string quoted_list(const std::vector<std::string>& words);

// A short description of a value for "expected X, got Y".
std::string describe(const json& v);

bool is_integer(const json& v);
bool is_identifier(std::string_view s);
bool is_kebab(std::string_view s);
bool is_env_name(std::string_view s);
bool is_role_name(std::string_view s);

constexpr const char* kIdentifierRule =
    "1-128 characters: letters, digits and _ . - : @ #, starting with a letter or digit";
constexpr const char* kDurationRule =
    "a duration such as \"90s\", \"30m\", \"1h30m\", \"7d\", or an integer of milliseconds";

// ------------------------------------------------------------------- loader

class Loader;
class LoaderJobKeys;

class Loader {
 public:
  Loader(std::string path, const FaultKinds& kinds) : path_(std::move(path)), fault_kinds_(kinds) {
    scenario_.path = path_;
  }

  void syntax_error(std::string where_suffix, std::string message) {
    REHEARSE_ASSERT(!where_suffix.empty());  // "line:column" in the file
    add(ErrorCode::parse_error, std::move(where_suffix), std::move(message), /*is_pointer=*/false);
  }
  void nesting_error(const std::string& pointer) {
    add(ErrorCode::schema_error, pointer,
        fmt::format("nested more than {} levels deep; a scenario needs a handful",
                    kMaxNestingDepth));
  }
  void duplicate_key(const std::string& pointer) {
    const auto slash = pointer.rfind('/');
    REHEARSE_ASSERT(slash != std::string::npos);  // a key's pointer: its object's, "/", the key
    add(ErrorCode::schema_error, pointer,
        fmt::format("duplicate key '{}' (JSON parsers keep only one; remove the other)",
                    pointer.substr(slash + 1)));
  }

  void load(const json& root);
  void compute_flags();

  ScenarioCheck finish() && {
    ScenarioCheck out;
    out.errors = std::move(errors_);
    out.errors_omitted = omitted_;
    if (out.errors.empty()) {
      out.flags = flags_;
      out.notes = std::move(notes_);
      scenario_.flags = std::move(flags_);
      out.scenario = std::move(scenario_);
    }
    return out;
  }

  bool has_errors() const { return !errors_.empty(); }
  std::size_t error_count() const { return errors_.size() + omitted_; }

  // The built-in job kinds' readers, one in each kind's file
  // (sim/world/job_kind_<name>.cpp), called through LoaderJobKeys.
  void load_fetch(const json& v, const std::string& pointer, JobSpec& job);
  void load_publish(const json& v, const std::string& pointer, JobSpec& job);
  void load_call_job(const json& v, const std::string& pointer, JobSpec& job);
  void load_group(const json& v, const std::string& pointer, JobSpec& job);
  void load_reconcile(const json& v, const std::string& pointer, JobSpec& job);

 private:
  friend class LoaderJobKeys;
  // ---- reporting
  void add(ErrorCode code, std::string location, std::string message, bool is_pointer = true) {
    REHEARSE_ASSERT(!message.empty());  // an error says what is wrong
    if (errors_.size() >= kScenarioErrorLimit) {
      ++omitted_;
      return;
    }
    std::string where = path_;
    if (is_pointer) {
      if (!location.empty()) where += ":" + location;
    } else {
      where += ":" + location;
    }
    errors_.push_back(make_error(code, std::move(message), std::move(where)));
    // Errors past the limit are counted, not kept.
    REHEARSE_ASSERT_LE(errors_.size(), kScenarioErrorLimit);
  }
  void error(const std::string& pointer, std::string message) {
    add(ErrorCode::schema_error, pointer, std::move(message));
  }
  void value_error(const std::string& pointer, std::string message) {
    add(ErrorCode::invalid_argument, pointer, std::move(message));
  }
  void reference_error(const std::string& pointer, std::string message) {
    add(ErrorCode::not_found, pointer, std::move(message));
  }
  void flag(FlagKind kind, const std::string& pointer, std::string message) {
    REHEARSE_ASSERT(!message.empty());
    flags_.push_back(ScenarioFlag{kind, path_ + ":" + pointer, std::move(message)});
  }

  // ---- shape helpers
  static const json* field(const json& obj, std::string_view key) {
    const auto it = obj.find(std::string(key));
    return it == obj.end() ? nullptr : &*it;
  }

  const json* require(const json& obj, const std::string& pointer, std::string_view key,
                      std::string_view expected) {
    REHEARSE_ASSERT(!key.empty() && !expected.empty());  // the message names both
    const json* v = field(obj, key);
    if (v == nullptr) {
      error(pointer, fmt::format("missing required key '{}' ({})", key, expected));
    }
    return v;
  }

  // Reports every key of `obj` not in `allowed`. `elsewhere` maps keys that
  // are valid for another kind of the same object to a hint.
  void check_keys(const json& obj, const std::string& pointer,
                  const std::vector<std::string>& allowed,
                  const std::map<std::string, std::string>& elsewhere = {}) {
    REHEARSE_ASSERT(!allowed.empty());  // every level of the format has keys
    for (const auto& [key, value] : obj.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      const std::string at = child(pointer, key);
      if (const auto hint = elsewhere.find(key); hint != elsewhere.end()) {
        error(at, fmt::format("key '{}' {}", key, hint->second));
      } else if (const auto near = closest(key, allowed)) {
        error(at, fmt::format("unknown key '{}' (did you mean '{}'?)", key, *near));
      } else {
        error(at, fmt::format("unknown key '{}' (expected one of: {})", key, quoted_list(allowed)));
      }
    }
  }

  bool expect_object(const json& v, const std::string& pointer, std::string_view what) {
    if (v.is_object()) return true;
    error(pointer, fmt::format("expected {} (an object), got {}", what, describe(v)));
    return false;
  }

  bool expect_array(const json& v, const std::string& pointer, std::string_view what,
                    bool non_empty, std::size_t max_items = kMaxListItems) {
    REHEARSE_ASSERT_GE(max_items, 1u);  // the loader's own bound
    if (!v.is_array()) {
      error(pointer, fmt::format("expected {} (an array), got {}", what, describe(v)));
      return false;
    }
    if (non_empty && v.empty()) {
      error(pointer, fmt::format("expected {}: at least one entry, got an empty array", what));
      return false;
    }
    if (v.size() > max_items) {
      error(pointer, fmt::format("too many entries: {} (at most {})", v.size(), max_items));
      return false;
    }
    return true;
  }

  std::optional<std::string> read_string(const json& v, const std::string& pointer,
                                         std::string_view what = "a string") {
    if (!v.is_string()) {
      error(pointer, fmt::format("expected {}, got {}", what, describe(v)));
      return std::nullopt;
    }
    return v.get<std::string>();
  }

  std::optional<std::string> read_identifier(const json& v, const std::string& pointer,
                                             std::string_view what) {
    auto s = read_string(v, pointer, what);
    if (!s) return std::nullopt;
    if (!is_identifier(*s)) {
      value_error(pointer,
                  fmt::format("invalid {} \"{}\": expected {}", what, *s, kIdentifierRule));
      return std::nullopt;
    }
    // kIdentifierRule: 1 to kMaxIdLength characters.
    REHEARSE_ASSERT(!s->empty() && s->size() <= kMaxIdLength);
    return s;
  }

  std::optional<std::int64_t> read_int(const json& v, const std::string& pointer, std::int64_t min,
                                       std::int64_t max, std::string_view what = "an integer") {
    // The bounds are the loader's own constants.
    REHEARSE_ASSERT_LE(min, max);
    if (!is_integer(v)) {
      error(pointer, fmt::format("expected {} from {} to {}, got {}", what, min, max, describe(v)));
      return std::nullopt;
    }
    const bool too_big = v.is_number_unsigned() &&
                         v.get<std::uint64_t>() >
                             static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    const std::int64_t n =
        too_big ? std::numeric_limits<std::int64_t>::max() : v.get<std::int64_t>();
    if (too_big || n < min || n > max) {
      value_error(pointer,
                  fmt::format("expected {} from {} to {}, got {}", what, min, max, v.dump()));
      return std::nullopt;
    }
    return n;
  }

  std::optional<std::int64_t> read_count(const json& v, const std::string& pointer) {
    return read_int(v, pointer, 0, kMaxCount, "a count");
  }

  std::optional<bool> read_bool(const json& v, const std::string& pointer) {
    if (!v.is_boolean()) {
      error(pointer, fmt::format("expected true or false, got {}", describe(v)));
      return std::nullopt;
    }
    return v.get<bool>();
  }

  std::optional<double> read_rate(const json& v, const std::string& pointer) {
    if (!v.is_number()) {
      error(pointer, fmt::format("expected a rate from 0 to 1, got {}", describe(v)));
      return std::nullopt;
    }
    const double r = v.get<double>();
    if (!(r >= 0.0 && r <= 1.0)) {
      value_error(pointer, fmt::format("expected a rate from 0 to 1, got {}", v.dump()));
      return std::nullopt;
    }
    return r;
  }

  // A duration: a string with units, or an integer of milliseconds.
  std::optional<DurationMs> read_duration(const json& v, const std::string& pointer,
                                          DurationMs min_ms) {
    REHEARSE_ASSERT_GE(min_ms, 0);
    REHEARSE_ASSERT_LE(min_ms, kMaxInstantMs);
    std::optional<DurationMs> d;
    if (v.is_string()) {
      auto parsed = parse_duration(v.get<std::string>());
      if (!parsed) {
        value_error(pointer, parsed.error().message);
        return std::nullopt;
      }
      d = *parsed;
    } else if (is_integer(v)) {
      if (v.is_number_unsigned() &&
          v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxInstantMs)) {
        value_error(pointer, fmt::format("duration {} ms is too large", v.dump()));
        return std::nullopt;
      }
      d = v.get<std::int64_t>();
    } else {
      error(pointer, fmt::format("expected {}, got {}", kDurationRule, describe(v)));
      return std::nullopt;
    }
    if (*d < min_ms) {
      value_error(pointer, min_ms == 0
                               ? fmt::format("expected a duration >= 0, got {}", v.dump())
                               : fmt::format("expected a positive duration, got {}", v.dump()));
      return std::nullopt;
    }
    if (*d > kMaxInstantMs) {
      value_error(pointer, fmt::format("duration {} is too large", v.dump()));
      return std::nullopt;
    }
    return d;
  }

  std::optional<TimeMs> read_instant(const json& v, const std::string& pointer) {
    auto s = read_string(v, pointer, "an ISO-8601 UTC instant such as \"2026-12-04T17:00:00Z\"");
    if (!s) return std::nullopt;
    auto t = parse_instant(*s);
    if (!t) {
      value_error(pointer, t.error().message);
      return std::nullopt;
    }
    return *t;
  }

  // One of `names`; reports the list and a close match.
  std::optional<std::size_t> read_name(const json& v, const std::string& pointer,
                                       const std::vector<std::string>& names,
                                       std::string_view what) {
    REHEARSE_ASSERT(!names.empty());  // a table of names the loader built
    auto s = read_string(v, pointer, fmt::format("{} (one of: {})", what, join(names)));
    if (!s) return std::nullopt;
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == *s) return i;
    }
    std::string message =
        fmt::format("unknown {} \"{}\" (expected one of: {})", what, *s, join(names));
    if (const auto near = closest(*s, names)) message += fmt::format("; did you mean '{}'?", *near);
    value_error(pointer, std::move(message));
    return std::nullopt;
  }

  // A reference to a declared name (job, issue, agent, target).
  bool check_reference(const std::string& name, const std::string& pointer,
                       const std::vector<std::string>& declared, std::string_view what,
                       std::string_view declared_where) {
    if (std::find(declared.begin(), declared.end(), name) != declared.end()) return true;
    std::string message =
        fmt::format("unknown {} '{}' (not declared in {})", what, name, declared_where);
    if (const auto near = closest(name, declared))
      message += fmt::format("; did you mean '{}'?", *near);
    reference_error(pointer, std::move(message));
    return false;
  }

  // Reads an array of identifiers: unique, each checked against `declared`
  // when given.
  std::vector<std::string> read_name_list(const json& v, const std::string& pointer,
                                          std::string_view what, bool non_empty,
                                          const std::vector<std::string>* declared = nullptr,
                                          std::string_view declared_where = {}) {
    std::vector<std::string> out;
    if (!expect_array(v, pointer, fmt::format("a list of {}s", what), non_empty)) return out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = child(pointer, i);
      auto name = read_identifier(v[i], at, what);
      if (!name) continue;
      if (std::find(out.begin(), out.end(), *name) != out.end()) {
        value_error(at, fmt::format("duplicate {} '{}'", what, *name));
        continue;
      }
      if (declared != nullptr && !check_reference(*name, at, *declared, what, declared_where)) {
        continue;
      }
      out.push_back(*name);
    }
    REHEARSE_ASSERT_LE(out.size(), v.size());  // at most one name per entry
    return out;
  }

  // ---- sections
  void load_header(const json& root);
  void load_notes(const json& v);
  void load_span(const json& root);
  void load_env(const json& v);
  void load_queue(const json& v);
  void load_world(const json& root);
  void load_services(const json& v, const std::string& pointer);
  void load_user_service(const std::string& name, const json& body, const std::string& pointer);
  void load_calls(const json& v, const std::string& pointer, JobSpec& job);
  ServiceTiming load_timing(const json& obj, const std::string& pointer);
  std::optional<ServiceCapacity> load_capacity(const json& v, const std::string& pointer);
  void load_capacity_retry_after(const json& v, const std::string& pointer,
                                 ServiceCapacity& capacity);
  std::optional<ServiceCapacity> checked_capacity(const ServiceCapacity& capacity, const json& v,
                                                  const std::string& pointer);
  void load_orchestrator(const json& v, const std::string& pointer);
  void load_jobs(const json& v, const std::string& pointer);
  void load_job(const json& v, const std::string& pointer);
  std::optional<JobKind> load_job_kind(const json& v, const std::string& pointer);
  void load_job_id(const json& v, const std::string& pointer, JobSpec& job);
  void load_job_zone(const json& v, const std::string& pointer, JobSpec& job);
  void load_job_schedule(const json& v, const std::string& pointer, JobSpec& job);
  void load_job_common(const json& v, const std::string& pointer, std::optional<JobKind> kind,
                       JobSpec& job);
  std::vector<std::string> load_targets(const json& v, const std::string& pointer, bool non_empty);
  bool require_service(ServiceKind kind, const std::string& pointer, std::string_view who);
  void load_faults(const json& v, const std::string& pointer);
  void load_fleet(const json& v, const std::string& pointer);
  void load_fault(const json& v, const std::string& pointer);
  std::optional<TimeMs> read_fault_at(const json& v, const std::string& pointer);
  // ---- one fault, from its kind's table entry (sim/world/fault_kinds.hpp)
  struct FaultReading {
    const json& v;
    const std::string& pointer;
    const FaultKindSpec& kind;
    FaultSpec& fault;
    std::string who;  // "fault '<kind>'", for reference messages
    bool ok = true;   // everything so far was read (else the fault is dropped)
  };
  const FaultKindSpec* load_fault_kind(const json& v, const std::string& pointer);
  bool load_fault_when(const json& v, const std::string& pointer, FaultSpec& fault);
  void read_fault_for(FaultReading& r);
  bool require_fault_target(FaultReading& r);
  void read_fault_key(FaultReading& r, const FaultKeySpec& key);
  void read_absent_fault_key(FaultReading& r, const FaultKeySpec& key);
  std::optional<FaultValue> read_fault_integer(const FaultKeySpec& key, const json& value,
                                               const std::string& at);
  std::optional<FaultValue> read_fault_value(FaultReading& r, const FaultKeySpec& key,
                                             const json& value, const std::string& at);
  std::optional<FaultValue> read_fault_service(FaultReading& r, const FaultKeySpec& key,
                                               const json& value, const std::string& at);
  void unknown_fault_service(const FaultReading& r, const FaultKeySpec& key,
                             const std::string& name, const std::string& at);
  std::optional<FaultValue> read_fault_down_for(FaultReading& r, const json& value,
                                                const std::string& at);
  std::optional<FaultValue> read_fault_reference(const json& value, const std::string& at,
                                                 const std::vector<std::string>& declared,
                                                 std::string_view what, std::string_view where);
  std::optional<FaultValue> read_fault_new_instance(const json& value, const std::string& at);
  std::optional<FaultValue> read_fault_job(const json& value, const std::string& at);
  std::optional<FaultValue> read_fault_rate_limited(const json& value, const std::string& at);
  std::optional<FaultValue> read_fault_cut(FaultReading& r, const json& value,
                                           const std::string& at);
  std::optional<FaultValue> read_fault_flips(FaultReading& r, const json& value,
                                             const std::string& at);
  std::optional<FaultValue> read_fault_step(const json& value, const std::string& at);
  void load_expect(const json& v, const std::string& pointer);
  void load_item_expectations(const json& items, const std::string& pointer);
  void load_service_expectations(const json& services, const std::string& pointer);
  void load_user_service_expectation(const json& body, const std::string& pointer,
                                     ServiceExpectation& service);
  void load_expected_violations(const json& list, const std::string& pointer);
  void load_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                            JobExpectation& out);
  void load_later_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                                  JobExpectation& out);
  std::optional<StateExpectation> load_state_expectation(const json& v, const std::string& pointer);
  std::optional<std::optional<TimeMs>> read_instant_or_null(const json& v,
                                                            const std::string& pointer);
  void load_policy_shape(const json& v, const std::string& pointer, PolicyExpectation& out);
  std::optional<PolicyExpectation> load_policy_expectation(const json& v,
                                                           const std::string& pointer);
  std::optional<std::vector<SlotExpectation>> load_slot_expectations(const json& v,
                                                                     const std::string& pointer);
  std::optional<SlotExpectation> load_slot_expectation(const json& v, const std::string& pointer);
  std::optional<TimeMs> read_attempt_instant(const json& v, const std::string& pointer,
                                             TimeMs slot);
  std::map<std::string, MessageExpectation> load_message_expectations(const json& v,
                                                                      const std::string& pointer,
                                                                      const std::string& job);
  std::optional<LatenessExpectation> load_lateness(const json& v, const std::string& pointer);
  void load_damaged_files(const json& v, const std::string& pointer);
  json native_policy(const json& policy, const std::string& pointer);
  std::map<NotificationEvent, std::int64_t> load_event_counts(const json& v,
                                                              const std::string& pointer);

  std::string path_;
  const FaultKinds& fault_kinds_;  // fault_kinds(), or a test's table
  Scenario scenario_;
  std::vector<Error> errors_;
  std::size_t omitted_ = 0;
  std::vector<ScenarioFlag> flags_;
  std::vector<std::string> notes_;
  bool start_ok_ = false;
  bool until_ok_ = false;
  // Declared names, as far as they parsed (references check against these).
  std::set<ServiceKind> declared_services_;
  std::set<std::string> user_services_;  // declared user service names
  std::vector<FaultSpec> fleet_faults_;  // generated by the fleet block (load_fleet)
  std::vector<std::string> issue_ids_;
  std::vector<std::string> agent_ids_;
  std::vector<std::string> target_names_;
  std::vector<std::string> job_ids_;
  std::set<std::string> job_id_set_;      // job_ids_ for lookups (fleets have many)
  std::vector<std::string> item_issues_;  // issues of every reconcile item
  bool jobs_ok_ = false;  // every job parsed (so unknown-job references are meaningful)
};

// The loader as a job kind's reader (JobKeyReader) of one job's own keys:
// every read goes through the loader's helpers, so a kind's keys are read
// and reported exactly like the format's own.
class LoaderJobKeys final : public JobKeyReader {
 public:
  LoaderJobKeys(Loader& loader, const json& value, const JobSpec& job)
      : loader_(loader), value_(value), job_(job) {}

  // The loader behind a reader the loader made (a built-in kind's reader
  // uses the loader's own helpers for its nested lists).
  static LoaderJobKeys& of(JobKeyReader& keys);
  // Calls the built-in reader `load` on this job.
  void load(void (Loader::*reader)(const json&, const std::string&, JobSpec&), JobSpec& job) {
    REHEARSE_ASSERT(reader != nullptr);
    (loader_.*reader)(value_, job_.pointer, job);
  }

  const std::string& job_id() const override { return job_.id; }
  const std::string& pointer() const override { return job_.pointer; }
  const json* field(std::string_view key) const override { return Loader::field(value_, key); }
  std::optional<std::int64_t> read_int(std::string_view key, std::int64_t min, std::int64_t max,
                                       bool required) override;
  std::optional<bool> read_bool(std::string_view key, bool required) override;
  std::optional<std::string> read_string(std::string_view key, bool required) override;
  std::optional<std::string> read_service(std::string_view key, bool required) override;
  std::optional<std::vector<std::string>> read_targets(std::string_view key,
                                                       bool required) override;
  void error(std::string_view key, std::string message) override;

 private:
  // The key's value; reports a missing required key.
  const json* present(std::string_view key, bool required, std::string_view expected);

  Loader& loader_;
  const json& value_;
  const JobSpec& job_;
};

// Every job kind's own keys, from the table: "job_<kind>" -> its keys.
void add_job_kind_keys(std::map<std::string, std::vector<std::string>>& keys);

}  // namespace scenario_detail

}  // namespace rehearse::sim
