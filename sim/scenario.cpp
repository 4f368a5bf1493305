// The scenario loader: JSON text -> Scenario, strictly.
//
// One pass over the document collects every error it can (a user fixing a
// file wants the full list, not one error per run), in three layers:
//   1. syntax (nlohmann's parse error, converted to line:column) and
//      duplicate keys (nlohmann keeps the last one silently; we refuse);
//   2. shape: known keys only, types, ranges, instants, durations, crons;
//   3. meaning: references between jobs, services, issues, agents, targets,
//      and faults inside the time span.
// Flags (valid but suspicious: invalid retry policies on purpose, risky
// side effects, unusable schedule overrides) are computed only for a valid
// scenario, so they never pile onto errors.
#include "sim/scenario.hpp"
#include "model/state_codec.hpp"
#include "sim/spelling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "model/cron.hpp"
#include "sim/fault_kinds.hpp"
#include "sim/fleet.hpp"

namespace rehearse::sim {

using nlohmann::json;

// ------------------------------------------------------------- vocabulary

namespace {

constexpr std::array<const char*, 4> kServiceNames{"model-api", "orchestrator", "brokerage",
                                                   "messenger"};
constexpr std::array<const char*, 3> kTaskOutputNames{"summary", "preview", "skip"};
constexpr std::array<const char*, 3> kStateFileNames{"retry_state.json", "jobs.json",
                                                     "jobs_state.json"};
constexpr std::array<const char*, 5> kCorruptionModeNames{"garbage", "empty", "truncated", "schema",
                                                          "flip"};
constexpr std::array<const char*, 4> kFlagKindNames{"policy_error", "side_effects",
                                                    "schedule_config", "schedule_idle"};

template <std::size_t N>
std::vector<std::string> to_vector(const std::array<const char*, N>& names) {
  return std::vector<std::string>(names.begin(), names.end());
}

template <std::size_t N>
std::optional<std::size_t> index_of(const std::array<const char*, N>& names,
                                    std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return i;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(ServiceKind kind) noexcept {
  return kServiceNames[static_cast<std::size_t>(kind)];
}
std::optional<ServiceKind> parse_service_kind(std::string_view name) noexcept {
  const auto i = index_of(kServiceNames, name);
  if (!i) return std::nullopt;
  return static_cast<ServiceKind>(*i);
}
const char* to_string(TaskOutput output) noexcept {
  return kTaskOutputNames[static_cast<std::size_t>(output)];
}
const char* to_string(FaultKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Names in the table are literals, so data() is a C string.
  return i < fault_kinds().size() ? fault_kinds()[i].name.data() : "unknown";
}
std::optional<FaultKind> parse_fault_kind(std::string_view name) noexcept {
  const FaultKindSpec* spec = find_fault_kind(name);
  if (spec == nullptr) return std::nullopt;
  return static_cast<FaultKind>(spec - fault_kinds().data());
}
const char* to_string(StateFile file) noexcept {
  return kStateFileNames[static_cast<std::size_t>(file)];
}
const char* to_string(CorruptionMode mode) noexcept {
  return kCorruptionModeNames[static_cast<std::size_t>(mode)];
}
const char* to_string(FlagKind kind) noexcept {
  return kFlagKindNames[static_cast<std::size_t>(kind)];
}

bool fault_has_duration(FaultKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < fault_kinds().size() && fault_kinds()[i].lasting;
}

bool Services::has(ServiceKind kind) const noexcept {
  switch (kind) {
    case ServiceKind::model_api: return model_api.has_value();
    case ServiceKind::orchestrator: return orchestrator.has_value();
    case ServiceKind::brokerage: return brokerage.has_value();
    case ServiceKind::messenger: return messenger.has_value();
  }
  return false;
}

const JobSpec* Scenario::find_job(std::string_view id) const noexcept {
  for (const auto& job : jobs) {
    if (job.id == id) return &job;
  }
  return nullptr;
}

const std::vector<std::string>& issue_status_names() {
  // The orchestrator's external statuses. Only in_progress, in_review and done
  // move an internal stage (docs/semantics.md §8); the others exist so a
  // scenario can send "unknown to the mapping" statuses without typos passing.
  static const std::vector<std::string> kNames{"backlog", "todo", "in_progress", "in_review",
                                               "blocked", "done", "cancelled"};
  return kNames;
}

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> kNames{"DESIGNING", "BUILDING", "REVIEWING", "DONE",
                                               "DESIGN_FAILED"};
  return kNames;
}

const std::vector<std::string>& notification_event_names() {
  // The core's NotificationEvent names (model/notification.hpp); the tests
  // check that each parses there, so the two lists cannot drift apart.
  static const std::vector<std::string> kNames{"retry_scheduled",  "retry_exhausted",
                                               "failed_permanent", "recovered",
                                               "policy_invalid",   "state_corrupt"};
  return kNames;
}

namespace {

void add_job_kind_keys(std::map<std::string, std::vector<std::string>>& keys);

// Every fault kind's keys, from the table: "fault_<kind>" -> its keys.
void add_fault_kind_keys(std::map<std::string, std::vector<std::string>>& keys) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    keys["fault_" + std::string(kind.name)] = fault_key_names(kind);
  }
}

}  // namespace

const std::vector<std::string>& slot_outcome_names() {
  // In SlotOutcome's order (the loader maps an index to the enum).
  static const std::vector<std::string> kNames{"delivered", "skipped",    "failed",   "exhausted",
                                               "in_flight", "superseded", "coalesced"};
  return kNames;
}

const char* to_string(SlotOutcome outcome) noexcept {
  const auto i = static_cast<std::size_t>(outcome);
  return i < slot_outcome_names().size() ? slot_outcome_names()[i].c_str() : "?";
}

std::optional<SlotOutcome> parse_slot_outcome(std::string_view name) noexcept {
  const auto& names = slot_outcome_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<SlotOutcome>(i);
  }
  return std::nullopt;
}

const std::vector<std::string>& queue_store_names() {
  static const std::vector<std::string> kNames{"memory", "disk"};
  return kNames;
}

const char* to_string(QueueStore store) noexcept {
  const auto i = static_cast<std::size_t>(store);
  return i < queue_store_names().size() ? queue_store_names()[i].c_str() : "?";
}

const std::map<std::string, std::vector<std::string>>& scenario_known_keys() {
  static const std::map<std::string, std::vector<std::string>> kKeys = [] {
    std::map<std::string, std::vector<std::string>> keys{
        {"scenario",
         {"format", "scenario", "description", "start", "until", "seed", "env", "queue", "services",
          "jobs", "fleet", "faults", "expect"}},
        {"queue", {"store", "concurrency", "workers", "standby_poll", "max_events"}},
        {"services", {"model-api", "orchestrator", "brokerage", "messenger"}},
        {"model_api", {"latency", "timeout"}},
        {"orchestrator", {"instance", "issues", "agents", "latency", "timeout"}},
        {"issue", {"id", "status"}},
        {"agent", {"id", "role", "present"}},
        {"brokerage", {"token_lifetime", "issue_latency", "latency", "timeout"}},
        {"messenger", {"targets", "latency", "timeout"}},
        {"user_service", {"latency", "timeout"}},
        {"job",
         {"id", "kind", "schedule", "schedule_env", "retry_policy", "side_effects",
          "idempotency_key", "note"}},
        {"task", {"id", "produces", "model_calls"}},
        {"item", {"issue", "stage", "lost"}},
        {"call", {"service", "method", "path"}},
        {"fault", {"at", "kind", "note"}},
        {"expect", {"jobs", "items", "services", "notifications", "violations", "damaged_files"}},
        {"job_expectation",
         {"delivered_slots", "skipped_slots", "failed_slots", "in_flight_slots", "final_status",
          "retries", "runs", "calls", "notifications", "max_delay", "state", "policy", "slots",
          "messages", "lateness"}},
        {"state_expectation",
         {"retry_status", "next_action", "next_run_at", "next_retry_at", "retry_count",
          "failure_class"}},
        {"policy_expectation", {"max_retries", "backoff", "delay", "budget"}},
        {"slot_expectation",
         {"slot", "outcome", "attempts", "attempt_at", "tolerance", "notifications"}},
        {"message_expectation", {"delivery", "failure_notice", "notification", "refused"}},
        {"lateness_expectation", {"at_least", "at_most"}},
        {"item_expectation", {"stage", "reason_contains", "queries", "not_found"}},
        {"expect_services", {"model-api", "orchestrator", "brokerage", "messenger"}},
        {"service_expectation", {"calls"}},
        {"brokerage_expectation", {"calls", "token_issues"}},
    };
    add_job_kind_keys(keys);
    add_fault_kind_keys(keys);
    return keys;
  }();
  return kKeys;
}

// ------------------------------------------------------------------ helpers

namespace {

// Bounds: a limit on everything (TigerBeetle habit); a file beyond these is
// almost certainly generated wrongly, and the run would be unbounded anyway.
// A fleet is described by a `fleet` block (sim/fleet.hpp, up to
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

const std::vector<std::string>& keys_of(const std::string& level) {
  const auto& all = scenario_known_keys();
  const auto it = all.find(level);
  REHEARSE_ASSERT(it != all.end());
  return it->second;
}

std::string child(const std::string& pointer, std::string_view key) {
  return pointer + "/" + json_pointer_token(key);
}
std::string child(const std::string& pointer, std::size_t index) {
  return pointer + "/" + std::to_string(index);
}

std::string join(const std::vector<std::string>& words, std::string_view sep = ", ") {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

std::string quoted_list(const std::vector<std::string>& words) {
  std::vector<std::string> q;
  q.reserve(words.size());
  for (const auto& w : words) q.push_back("'" + w + "'");
  return join(q);
}

// A short description of a value for "expected X, got Y".
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + v.dump();
    case json::value_t::string: {
      std::string s = v.dump();
      if (s.size() > 42) s = s.substr(0, 40) + "...\"";
      return "string " + s;
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

bool is_integer(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return alnum(c) || c == '_' || c == '.' || c == '-' || c == ':' || c == '@' || c == '#';
  });
}

bool is_kebab(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength || s.front() == '-' || s.back() == '-') return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && s[i - 1] != '-');
    if (!ok) return false;
  }
  return true;
}

bool is_env_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength) return false;
  if (s[0] >= '0' && s[0] <= '9') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool is_role_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxIdLength || s[0] < 'a' || s[0] > 'z') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

constexpr const char* kIdentifierRule =
    "1-128 characters: letters, digits and _ . - : @ #, starting with a letter or digit";
constexpr const char* kDurationRule =
    "a duration such as \"90s\", \"30m\", \"1h30m\", \"7d\", or an integer of milliseconds";

// Where a syntax error is: nlohmann's byte count -> 1-based line and column.
std::string line_column(std::string_view text, std::size_t byte) {
  const std::size_t index = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return fmt::format("{}:{}", line, index - line_start + 1);
}

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
// error ..." -> "syntax error ..." (the location is reported separately).
std::string strip_json_exception_prefix(std::string what) {
  if (const auto column = what.find(", column "); column != std::string::npos) {
    if (const auto colon = what.find(": ", column); colon != std::string::npos) {
      return what.substr(colon + 2);
    }
  }
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto close = what.find("] "); close != std::string::npos) {
      return what.substr(close + 2);
    }
  }
  return what;
}

// Thrown from the parse callback to stop at a document nested too deeply.
struct NestingTooDeep {
  std::string pointer;
};

// Tracks the JSON pointer during a callback parse to report duplicate keys,
// which nlohmann otherwise resolves silently (the last one wins), and to stop
// at absurd nesting.
class DuplicateKeyFinder {
 public:
  std::vector<std::string> duplicates;  // pointers of the repeated keys

  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back(
            Frame{event == json::parse_event_t::array_start, 0, next_token(), {}, {}});
        if (frames_.size() > kMaxNestingDepth) throw NestingTooDeep{pointer()};
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case json::parse_event_t::key: {
        if (frames_.empty()) break;
        Frame& top = frames_.back();
        top.last_key = parsed.get<std::string>();
        if (!top.keys.insert(top.last_key).second && duplicates.size() < kScenarioErrorLimit) {
          duplicates.push_back(pointer() + "/" + json_pointer_token(top.last_key));
        }
        break;
      }
      case json::parse_event_t::value:
        next_token();  // advances the index of an enclosing array
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array = false;
    std::size_t next_index = 0;
    std::string token;  // this container's token in its parent
    std::string last_key;
    std::set<std::string> keys;
  };

  std::string next_token() {
    if (frames_.empty()) return {};
    Frame& top = frames_.back();
    if (top.is_array) return std::to_string(top.next_index++);
    return json_pointer_token(top.last_key);
  }

  std::string pointer() const {
    std::string out;
    for (std::size_t i = 1; i < frames_.size(); ++i) out += "/" + frames_[i].token;
    return out;
  }

  std::vector<Frame> frames_;
};

// ------------------------------------------------------------------- loader

class Loader;

// One job kind of the scenario format: its name, its own keys (besides the
// keys every job has), what a re-run does outside when the job declares
// nothing, and the loader's reader of its keys. The core's runner of the
// kind comes from its own registry by name (model/job_kinds.hpp).
struct ScenarioJobKind {
  JobKind kind;
  const char* name;
  std::vector<std::string> keys;
  SideEffectKind side_effects;
  bool keeps_file;  // a durable file of its own (ledger, pipeline): job_file_corrupted
  void (Loader::*load)(const json& v, const std::string& pointer, JobSpec& job);
};

class Loader {
 public:
  // The job kinds, in JobKind order.
  static const std::vector<ScenarioJobKind>& job_kinds();

  Loader(std::string path, const FaultKinds& kinds) : path_(std::move(path)), fault_kinds_(kinds) {
    scenario_.path = path_;
  }

  void syntax_error(std::string where_suffix, std::string message) {
    add(ErrorCode::parse_error, std::move(where_suffix), std::move(message), /*is_pointer=*/false);
  }
  void nesting_error(const std::string& pointer) {
    add(ErrorCode::schema_error, pointer,
        fmt::format("nested more than {} levels deep; a scenario needs a handful",
                    kMaxNestingDepth));
  }
  void duplicate_key(const std::string& pointer) {
    const auto slash = pointer.rfind('/');
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

 private:
  // ---- reporting
  void add(ErrorCode code, std::string location, std::string message, bool is_pointer = true) {
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
    flags_.push_back(ScenarioFlag{kind, path_ + ":" + pointer, std::move(message)});
  }

  // ---- shape helpers
  static const json* field(const json& obj, std::string_view key) {
    const auto it = obj.find(std::string(key));
    return it == obj.end() ? nullptr : &*it;
  }

  const json* require(const json& obj, const std::string& pointer, std::string_view key,
                      std::string_view expected) {
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
    return s;
  }

  std::optional<std::int64_t> read_int(const json& v, const std::string& pointer, std::int64_t min,
                                       std::int64_t max, std::string_view what = "an integer") {
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
    return out;
  }

  // ---- sections
  void load_header(const json& root);
  void load_span(const json& root);
  void load_env(const json& v);
  void load_queue(const json& v);
  void load_world(const json& root);
  void load_services(const json& v, const std::string& pointer);
  void load_user_service(const std::string& name, const json& body, const std::string& pointer);
  void load_calls(const json& v, const std::string& pointer, JobSpec& job);
  ServiceTiming load_timing(const json& obj, const std::string& pointer);
  void load_orchestrator(const json& v, const std::string& pointer);
  void load_jobs(const json& v, const std::string& pointer);
  void load_job(const json& v, const std::string& pointer);
  std::optional<JobKind> load_job_kind(const json& v, const std::string& pointer);
  void load_job_id(const json& v, const std::string& pointer, JobSpec& job);
  void load_job_schedule(const json& v, const std::string& pointer, JobSpec& job);
  void load_job_common(const json& v, const std::string& pointer, std::optional<JobKind> kind,
                       JobSpec& job);
  void load_fetch(const json& v, const std::string& pointer, JobSpec& job);
  void load_publish(const json& v, const std::string& pointer, JobSpec& job);
  void load_call_job(const json& v, const std::string& pointer, JobSpec& job);
  void load_group(const json& v, const std::string& pointer, JobSpec& job);
  void load_reconcile(const json& v, const std::string& pointer, JobSpec& job);
  std::vector<std::string> load_targets(const json& v, const std::string& pointer, bool non_empty);
  bool require_service(ServiceKind kind, const std::string& pointer, std::string_view who);
  void load_faults(const json& v, const std::string& pointer);
  void load_fleet(const json& v, const std::string& pointer);
  void load_fault(const json& v, const std::string& pointer);
  std::optional<TimeMs> read_fault_at(const json& v, const std::string& pointer);
  // ---- one fault, from its kind's table entry (sim/fault_kinds.hpp)
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
  std::optional<FaultValue> read_fault_cut(FaultReading& r, const json& value,
                                           const std::string& at);
  std::optional<FaultValue> read_fault_flips(FaultReading& r, const json& value,
                                             const std::string& at);
  void load_expect(const json& v, const std::string& pointer);
  void load_item_expectations(const json& items, const std::string& pointer);
  void load_service_expectations(const json& services, const std::string& pointer);
  void load_expected_violations(const json& list, const std::string& pointer);
  void load_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                            JobExpectation& out);
  void load_later_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                                  JobExpectation& out);
  std::optional<StateExpectation> load_state_expectation(const json& v, const std::string& pointer);
  std::optional<std::optional<TimeMs>> read_instant_or_null(const json& v,
                                                            const std::string& pointer);
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

void Loader::load(const json& root) {
  if (!root.is_object()) {
    error("", fmt::format("expected a scenario (a JSON object) at the top level, got {}",
                          describe(root)));
    return;
  }
  check_keys(root, "", keys_of("scenario"));
  load_header(root);
  load_span(root);
  if (const json* v = field(root, "env")) load_env(*v);
  if (const json* v = field(root, "queue")) load_queue(*v);
  load_world(root);
}

// format, scenario (the name) and description.
void Loader::load_header(const json& root) {
  if (const json* v = require(root, "", "format", "the integer 1")) {
    if (!is_integer(*v)) {
      error("/format", fmt::format("expected the integer 1, got {}", describe(*v)));
    } else if (v->dump() != "1") {
      value_error("/format",
                  fmt::format("unsupported format {} (this rehearse reads format 1)", v->dump()));
    }
  }
  if (const json* v = require(root, "", "scenario", "a kebab-case name")) {
    if (auto s = read_string(*v, "/scenario", "a kebab-case name")) {
      if (is_kebab(*s)) {
        scenario_.name = *s;
      } else {
        value_error("/scenario",
                    fmt::format("invalid name \"{}\": expected kebab-case (lower-case letters and "
                                "digits separated by single hyphens, e.g. \"weekly-quota-outage\")",
                                *s));
      }
    }
  }
  if (const json* v = field(root, "description")) {
    if (auto s = read_string(*v, "/description")) scenario_.description = *s;
  }
}

// start, until (after start) and seed.
void Loader::load_span(const json& root) {
  if (const json* v = require(root, "", "start", "an ISO-8601 UTC instant")) {
    if (auto t = read_instant(*v, "/start")) {
      scenario_.start_ms = *t;
      start_ok_ = true;
    }
  }
  if (const json* v = require(root, "", "until", "an ISO-8601 UTC instant after start")) {
    if (auto t = read_instant(*v, "/until")) {
      scenario_.until_ms = *t;
      until_ok_ = true;
    }
  }
  if (start_ok_ && until_ok_ && scenario_.until_ms <= scenario_.start_ms) {
    value_error("/until",
                fmt::format("until {} must be after start {}", format_instant(scenario_.until_ms),
                            format_instant(scenario_.start_ms)));
    until_ok_ = false;
  }
  if (const json* v = field(root, "seed")) {
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<std::int64_t>() >= 0)) {
      error("/seed", fmt::format("expected an unsigned 64-bit integer, got {}", describe(*v)));
    } else {
      scenario_.seed = v->get<std::uint64_t>();
    }
  }
}

void Loader::load_env(const json& v) {
  if (!expect_object(v, "/env", "environment variables")) return;
  for (const auto& [name, value] : v.items()) {
    const std::string at = child("/env", name);
    if (!is_env_name(name)) {
      value_error(at, fmt::format("invalid environment variable name '{}' (letters, digits "
                                  "and _, not starting with a digit)",
                                  name));
      continue;
    }
    if (auto s = read_string(value, at, "a string value")) scenario_.env[name] = *s;
  }
}

void Loader::load_queue(const json& v) {
  if (!expect_object(v, "/queue", "queue settings")) return;
  check_keys(v, "/queue", keys_of("queue"));
  if (const json* st = field(v, "store")) {
    if (auto i = read_name(*st, "/queue/store", queue_store_names(), "queue store")) {
      scenario_.queue.store = static_cast<QueueStore>(*i);
    }
  }
  if (const json* c = field(v, "concurrency")) {
    if (auto n = read_int(*c, "/queue/concurrency", 1, 64)) {
      scenario_.queue.concurrency = static_cast<int>(*n);
    }
  }
  if (const json* w = field(v, "workers")) {
    if (auto n = read_int(*w, "/queue/workers", 1, 4))
      scenario_.queue.workers = static_cast<int>(*n);
  }
  if (const json* p = field(v, "standby_poll")) {
    if (auto d = read_duration(*p, "/queue/standby_poll", 1)) scenario_.queue.standby_poll_ms = *d;
  }
  if (const json* m = field(v, "max_events")) {
    if (auto n = read_int(*m, "/queue/max_events", 1, 100'000'000)) {
      scenario_.queue.max_events = *n;
    }
  }
}

// services, jobs, fleet, faults, expect: each reads what the ones before declared.
void Loader::load_world(const json& root) {
  if (const json* v = field(root, "services")) load_services(*v, "/services");
  if (const json* v = field(root, "jobs")) {
    load_jobs(*v, "/jobs");
  } else if (field(root, "fleet") == nullptr) {
    error("", "missing required key 'jobs' (a non-empty array of jobs; or a 'fleet' block)");
  } else {
    jobs_ok_ = true;  // no listed job; the fleet's own check decides below
  }
  // The fleet before the faults, so that a listed fault may name a generated
  // job or failure-rate service; its own faults still come after the listed
  // ones (the order that breaks ties between faults at one instant).
  if (const json* v = field(root, "fleet")) load_fleet(*v, "/fleet");
  if (const json* v = field(root, "faults")) load_faults(*v, "/faults");
  for (FaultSpec& fault : fleet_faults_) scenario_.faults.push_back(std::move(fault));
  if (const json* v = field(root, "expect")) {
    load_expect(*v, "/expect");
    scenario_.expect_source = *v;
  }
}

ServiceTiming Loader::load_timing(const json& obj, const std::string& pointer) {
  ServiceTiming timing;
  if (const json* v = field(obj, "latency")) {
    if (auto d = read_duration(*v, child(pointer, "latency"), 0)) timing.latency_ms = *d;
  }
  if (const json* v = field(obj, "timeout")) {
    if (auto d = read_duration(*v, child(pointer, "timeout"), 1)) timing.timeout_ms = *d;
  }
  return timing;
}

void Loader::load_services(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "the simulated services")) return;
  for (const auto& [name, body] : v.items()) {
    const auto kind = parse_service_kind(name);
    const std::string at = child(pointer, name);
    if (!kind) {
      load_user_service(name, body, at);
      continue;
    }
    // Declared even if its body has errors, so references to it do not
    // cascade into "not declared" errors.
    declared_services_.insert(*kind);
    if (!expect_object(body, at, fmt::format("the '{}' service settings", name))) continue;
    switch (*kind) {
      case ServiceKind::model_api:
        check_keys(body, at, keys_of("model_api"));
        scenario_.services.model_api = ModelApiService{load_timing(body, at)};
        break;
      case ServiceKind::orchestrator: load_orchestrator(body, at); break;
      case ServiceKind::brokerage: {
        check_keys(body, at, keys_of("brokerage"));
        BrokerageService brokerage;
        brokerage.timing = load_timing(body, at);
        if (const json* t = field(body, "token_lifetime")) {
          if (auto d = read_duration(*t, child(at, "token_lifetime"), 1)) {
            brokerage.token_lifetime_ms = *d;
          }
        }
        if (const json* t = field(body, "issue_latency")) {
          if (auto d = read_duration(*t, child(at, "issue_latency"), 0)) {
            brokerage.issue_latency_ms = *d;
          }
        }
        scenario_.services.brokerage = brokerage;
        break;
      }
      case ServiceKind::messenger: {
        check_keys(body, at, keys_of("messenger"));
        MessengerService messenger;
        messenger.timing = load_timing(body, at);
        if (const json* t = require(body, at, "targets", "a non-empty array of target names")) {
          messenger.targets = read_name_list(*t, child(at, "targets"), "target", true);
        }
        target_names_ = messenger.targets;
        scenario_.services.messenger = messenger;
        break;
      }
    }
  }
}

// A key of /services that is no built-in name declares a user service, unless
// it is so close to a built-in name that it is more likely a typo of it.
void Loader::load_user_service(const std::string& name, const json& body,
                               const std::string& pointer) {
  if (const auto near = closest(name, keys_of("services"))) {
    error(pointer, fmt::format("unknown key '{}' (did you mean '{}'? a service of your own needs "
                               "a name not this close to a built-in one)",
                               name, *near));
    return;
  }
  if (!is_identifier(name)) {
    value_error(pointer,
                fmt::format("invalid service name \"{}\": expected {}", name, kIdentifierRule));
    return;
  }
  user_services_.insert(name);
  if (!expect_object(body, pointer, fmt::format("the '{}' service settings", name))) return;
  check_keys(body, pointer, keys_of("user_service"));
  scenario_.services.user[name] = UserService{load_timing(body, pointer)};
}

// A call job's `calls`: a non-empty list of {service, method?, path?}, each
// service a user service declared in /services.
void Loader::load_calls(const json& v, const std::string& pointer, JobSpec& job) {
  if (!expect_array(v, pointer, "a list of calls {service, method, path}", true, kMaxCalls)) return;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = child(pointer, i);
    if (!expect_object(v[i], at, "a call {service, method, path}")) continue;
    check_keys(v[i], at, keys_of("call"));
    JobSpec::Call call;
    if (const json* s = require(v[i], at, "service", "a service declared in /services")) {
      const std::string sp = child(at, "service");
      if (auto name = read_identifier(*s, sp, "service name")) {
        if (parse_service_kind(*name)) {
          value_error(sp, fmt::format("a call job calls services of your own; '{}' is a built-in "
                                      "service with its own job kind",
                                      *name));
        } else if (user_services_.count(*name) == 0) {
          reference_error(sp, fmt::format("job '{}' calls the '{}' service, which is not declared "
                                          "in /services",
                                          job.id, *name));
        }
        call.service = *name;
      }
    }
    if (const json* m = field(v[i], "method")) {
      const std::vector<std::string> methods{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
      if (auto k = read_name(*m, child(at, "method"), methods, "HTTP method")) {
        call.method = methods[*k];
      }
    }
    if (const json* p = field(v[i], "path")) {
      const std::string pp = child(at, "path");
      if (auto text = read_string(*p, pp, "a path starting with '/'")) {
        if (text->empty() || text->front() != '/') {
          value_error(pp,
                      fmt::format("invalid path \"{}\": expected a path starting with '/'", *text));
        } else {
          call.path = *text;
        }
      }
    }
    job.calls.push_back(std::move(call));
  }
}

void Loader::load_orchestrator(const json& v, const std::string& pointer) {
  check_keys(v, pointer, keys_of("orchestrator"));
  OrchestratorService orchestrator;
  orchestrator.timing = load_timing(v, pointer);
  if (const json* i = field(v, "instance")) {
    if (auto s = read_identifier(*i, child(pointer, "instance"), "instance id")) {
      orchestrator.instance = *s;
    }
  }
  if (const json* list = field(v, "issues")) {
    const std::string at = child(pointer, "issues");
    if (expect_array(*list, at, "a list of issues", false)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ip = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ip, "an issue")) continue;
        check_keys(entry, ip, keys_of("issue"));
        OrchestratorIssue issue;
        bool ok = true;
        if (const json* id = require(entry, ip, "id", "the issue id")) {
          auto s = read_identifier(*id, child(ip, "id"), "issue id");
          if (s && std::find(issue_ids_.begin(), issue_ids_.end(), *s) != issue_ids_.end()) {
            value_error(child(ip, "id"), fmt::format("duplicate issue id '{}'", *s));
            s.reset();
          }
          if (s) {
            issue.id = *s;
            issue_ids_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* st = require(entry, ip, "status", "the external status")) {
          if (auto k = read_name(*st, child(ip, "status"), issue_status_names(), "issue status")) {
            issue.status = issue_status_names()[*k];
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (ok) orchestrator.issues.push_back(issue);
      }
    }
  }
  if (const json* list = field(v, "agents")) {
    const std::string at = child(pointer, "agents");
    if (expect_array(*list, at, "a list of agents", false)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ap = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ap, "an agent")) continue;
        check_keys(entry, ap, keys_of("agent"));
        OrchestratorAgent agent;
        bool ok = true;
        if (const json* id = require(entry, ap, "id", "the agent id")) {
          auto s = read_identifier(*id, child(ap, "id"), "agent id");
          if (s && std::find(agent_ids_.begin(), agent_ids_.end(), *s) != agent_ids_.end()) {
            value_error(child(ap, "id"), fmt::format("duplicate agent id '{}'", *s));
            s.reset();
          }
          if (s) {
            agent.id = *s;
            agent_ids_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* r = require(entry, ap, "role", "the role name the orchestrator reports")) {
          auto s = read_string(*r, child(ap, "role"), "a role name");
          if (s && !is_role_name(*s)) {
            value_error(
                child(ap, "role"),
                fmt::format("invalid role name \"{}\": expected lower-case letters, digits, "
                            "_ and -, starting with a letter",
                            *s));
            s.reset();
          }
          if (s) {
            agent.role = *s;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* p = field(entry, "present")) {
          if (auto b = read_bool(*p, child(ap, "present"))) agent.present = *b;
        }
        if (ok) orchestrator.agents.push_back(agent);
      }
    }
  }
  scenario_.services.orchestrator = orchestrator;
}

bool Loader::require_service(ServiceKind kind, const std::string& pointer, std::string_view who) {
  if (declared_services_.count(kind) != 0) return true;
  reference_error(pointer, fmt::format("{} uses the '{}' service, which is not declared in "
                                       "/services",
                                       who, to_string(kind)));
  return false;
}

std::vector<std::string> Loader::load_targets(const json& v, const std::string& pointer,
                                              bool non_empty) {
  if (declared_services_.count(ServiceKind::messenger) == 0) {
    reference_error(pointer,
                    "targets are messenger targets, but no 'messenger' service is "
                    "declared in /services");
    return {};
  }
  return read_name_list(v, pointer, "target", non_empty, &target_names_,
                        "/services/messenger/targets");
}

void Loader::load_jobs(const json& v, const std::string& pointer) {
  if (!expect_array(v, pointer, "a list of jobs", true, kMaxListedJobs)) return;
  const std::size_t errors_before = errors_.size() + omitted_;
  for (std::size_t i = 0; i < v.size(); ++i) load_job(v[i], child(pointer, i));
  jobs_ok_ = errors_.size() + omitted_ == errors_before;
}

void Loader::load_job(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "a job")) return;
  JobSpec job;
  job.pointer = pointer;
  const std::optional<JobKind> kind = load_job_kind(v, pointer);
  load_job_id(v, pointer, job);
  load_job_schedule(v, pointer, job);
  load_job_common(v, pointer, kind, job);
  if (!kind) return;
  job.kind = *kind;
  (this->*job_kinds()[static_cast<std::size_t>(*kind)].load)(v, pointer, job);
  scenario_.jobs.push_back(std::move(job));
}

// The kind decides which keys are allowed, so it is read first; keys of
// another kind are refused with what they belong to.
std::optional<JobKind> Loader::load_job_kind(const json& v, const std::string& pointer) {
  std::optional<JobKind> kind;
  std::vector<std::string> names;
  for (const ScenarioJobKind& spec : job_kinds()) names.emplace_back(spec.name);
  if (const json* k = require(v, pointer, "kind", "one of: " + join(names))) {
    if (auto i = read_name(*k, child(pointer, "kind"), names, "job kind")) {
      kind = static_cast<JobKind>(*i);
    }
  }
  std::vector<std::string> allowed = keys_of("job");
  std::map<std::string, std::string> elsewhere;
  for (std::size_t k = 0; k < job_kinds().size(); ++k) {
    const auto& specific = job_kinds()[k].keys;
    const bool mine = !kind || static_cast<std::size_t>(*kind) == k;
    for (const auto& key : specific) {
      if (mine) {
        allowed.push_back(key);
      } else if (elsewhere.count(key) == 0) {
        elsewhere[key] = fmt::format("does not apply to a '{}' job", to_string(*kind));
      }
    }
  }
  for (const auto& key : allowed) elsewhere.erase(key);
  check_keys(v, pointer, allowed, elsewhere);
  return kind;
}

void Loader::load_job_id(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* id = require(v, pointer, "id", "the job id")) {
    if (auto s = read_identifier(*id, child(pointer, "id"), "job id")) {
      if (!job_id_set_.insert(*s).second) {
        value_error(child(pointer, "id"), fmt::format("duplicate job id '{}'", *s));
      } else {
        job.id = *s;
        job_ids_.push_back(*s);
      }
    }
  }
}

void Loader::load_job_schedule(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* s = require(v, pointer, "schedule", "a cron expression")) {
    const std::string at = child(pointer, "schedule");
    if (auto text = read_string(*s, at, "a cron expression")) {
      job.schedule = *text;
      auto parsed = CronSchedule::parse(*text);
      if (!parsed) {
        add(parsed.error().code, at,
            fmt::format("invalid cron \"{}\": {}", *text, parsed.error().message));
      } else {
        // Whether it can fire at all (`0 0 30 2 *` cannot): searching from the
        // epoch keeps this independent of a possibly invalid start.
        auto first = parsed->next_after(start_ok_ ? scenario_.start_ms : 0);
        if (!first && first.error().code == ErrorCode::never_fires) {
          add(ErrorCode::never_fires, at, fmt::format("invalid cron \"{}\": never fires", *text));
        }
      }
    }
  }
  if (const json* e = field(v, "schedule_env")) {
    const std::string at = child(pointer, "schedule_env");
    if (auto name = read_string(*e, at, "an environment variable name")) {
      if (is_env_name(*name)) {
        job.schedule_env = *name;
      } else {
        value_error(at, fmt::format("invalid environment variable name \"{}\" (letters, digits "
                                    "and _, not starting with a digit)",
                                    *name));
      }
    }
  }
}

// The keys every kind shares: policy, side effects, idempotency key, note.
void Loader::load_job_common(const json& v, const std::string& pointer, std::optional<JobKind> kind,
                             JobSpec& job) {
  if (const json* p = field(v, "retry_policy")) job.retry_policy = *p;
  if (kind) job.side_effects = default_side_effects(*kind);
  if (const json* s = field(v, "side_effects")) {
    const std::vector<std::string> names{"none", "draft", "publish"};
    if (auto i = read_name(*s, child(pointer, "side_effects"), names, "side effect")) {
      job.side_effects = *parse_side_effect_kind(names[*i]);
    }
  }
  if (const json* k = field(v, "idempotency_key")) {
    const std::string at = child(pointer, "idempotency_key");
    if (auto s = read_string(*k, at, "a non-empty string")) {
      if (s->empty()) {
        value_error(at, "expected a non-empty string, got an empty one");
      } else {
        job.idempotency_key = *s;
      }
    }
  }
  if (const json* n = field(v, "note")) {
    if (auto s = read_string(*n, child(pointer, "note"))) job.note = *s;
  }
}

// A publish job's own key: where its posts go. Each run asks the model API
// for the post (model/publish_job.hpp), so the world must have it.
void Loader::load_publish(const json& v, const std::string& pointer, JobSpec& job) {
  require_service(ServiceKind::model_api, pointer, fmt::format("publish job '{}'", job.id));
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

// A call job's own key: the calls of one run.
void Loader::load_call_job(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* c = require(v, pointer, "calls", "a non-empty list of calls")) {
    load_calls(*c, child(pointer, "calls"), job);
  }
}

void Loader::load_fetch(const json& v, const std::string& pointer, JobSpec& job) {
  const std::string who = fmt::format("job '{}'", job.id.empty() ? pointer : job.id);
  if (const json* s = field(v, "service")) {
    const std::string at = child(pointer, "service");
    if (read_name(*s, at, {"brokerage"}, "fetch service")) {
      require_service(ServiceKind::brokerage, at, who);
    }
  } else {
    require_service(ServiceKind::brokerage, pointer, who);
  }
  if (const json* r = field(v, "requests")) {
    if (auto n = read_int(*r, child(pointer, "requests"), 1, 1000)) {
      job.requests = static_cast<int>(*n);
    }
  }
  if (const json* p = field(v, "parallel")) {
    if (auto b = read_bool(*p, child(pointer, "parallel"))) job.parallel = *b;
  }
}

void Loader::load_group(const json& v, const std::string& pointer, JobSpec& job) {
  bool calls_model = false;
  if (const json* list = require(v, pointer, "tasks", "a non-empty array of tasks")) {
    const std::string at = child(pointer, "tasks");
    if (expect_array(*list, at, "a list of tasks", true, 100)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string tp = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, tp, "a task")) continue;
        check_keys(entry, tp, keys_of("task"));
        GroupTask task;
        bool ok = true;
        if (const json* id = require(entry, tp, "id", "the task id")) {
          auto s = read_identifier(*id, child(tp, "id"), "task id");
          const bool duplicate = s && std::any_of(job.tasks.begin(), job.tasks.end(),
                                                  [&](const GroupTask& t) { return t.id == *s; });
          if (duplicate) value_error(child(tp, "id"), fmt::format("duplicate task id '{}'", *s));
          if (s && !duplicate) {
            task.id = *s;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* p = require(entry, tp, "produces", "one of: summary, preview, skip")) {
          if (auto i = read_name(*p, child(tp, "produces"), to_vector(kTaskOutputNames),
                                 "task output")) {
            task.produces = static_cast<TaskOutput>(*i);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        // A task that skips usually decides so without asking the model.
        task.model_calls = task.produces == TaskOutput::skip ? 0 : 1;
        if (const json* c = field(entry, "model_calls")) {
          if (auto k = read_int(*c, child(tp, "model_calls"), 0, 100)) {
            task.model_calls = static_cast<int>(*k);
          }
        }
        if (task.model_calls > 0) calls_model = true;
        if (ok) job.tasks.push_back(task);
      }
    }
  }
  if (calls_model) {
    require_service(ServiceKind::model_api, child(pointer, "tasks"),
                    fmt::format("group job '{}'", job.id));
  }
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

void Loader::load_reconcile(const json& v, const std::string& pointer, JobSpec& job) {
  const bool has_orchestrator = require_service(ServiceKind::orchestrator, pointer,
                                                fmt::format("reconcile job '{}'", job.id));
  if (const json* list = require(v, pointer, "items", "a non-empty array of items")) {
    const std::string at = child(pointer, "items");
    if (expect_array(*list, at, "a list of items", true)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ip = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ip, "an item")) continue;
        check_keys(entry, ip, keys_of("item"));
        ReconcileItem item;
        bool ok = true;
        if (const json* s = field(entry, "stage")) {
          if (auto k = read_name(*s, child(ip, "stage"), stage_names(), "stage")) {
            item.stage = stage_names()[*k];
          }
        }
        if (const json* l = field(entry, "lost")) {
          if (auto b = read_bool(*l, child(ip, "lost"))) item.lost = *b;
        }
        if (const json* is = require(entry, ip, "issue", "the external issue id")) {
          const std::string isp = child(ip, "issue");
          auto s = read_identifier(*is, isp, "issue id");
          if (s && std::any_of(job.items.begin(), job.items.end(),
                               [&](const ReconcileItem& i) { return i.issue == *s; })) {
            value_error(isp, fmt::format("duplicate item '{}' in this job", *s));
            s.reset();
          }
          if (s && has_orchestrator) {
            const bool known =
                std::find(issue_ids_.begin(), issue_ids_.end(), *s) != issue_ids_.end();
            if (item.lost && known) {
              value_error(isp, fmt::format("item '{}' is declared lost, but the orchestrator "
                                           "has an issue '{}' at start; remove one of the two",
                                           *s, *s));
              s.reset();
            } else if (!item.lost && !known) {
              std::string message = fmt::format(
                  "unknown issue '{}' (not in /services/orchestrator/issues; an issue already "
                  "gone at start needs \"lost\": true)",
                  *s);
              if (const auto near = closest(*s, issue_ids_)) {
                message += fmt::format("; did you mean '{}'?", *near);
              }
              reference_error(isp, std::move(message));
              s.reset();
            }
          }
          if (s) {
            item.issue = *s;
            item_issues_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (ok) job.items.push_back(item);
      }
    }
  }
  if (const json* b = field(v, "batch_size")) {
    if (auto n = read_int(*b, child(pointer, "batch_size"), 1, 10'000)) {
      job.batch_size = static_cast<int>(*n);
    }
  }
}

std::optional<TimeMs> Loader::read_fault_at(const json& v, const std::string& pointer) {
  auto s = read_string(v, pointer,
                       "an ISO-8601 UTC instant (\"2026-12-04T17:00:00Z\") or an offset from start "
                       "(\"+16h\")");
  if (!s) return std::nullopt;
  TimeMs at = 0;
  if (!s->empty() && s->front() == '+') {
    auto d = parse_duration(std::string_view(*s).substr(1));
    if (!d) {
      value_error(pointer, fmt::format("invalid offset \"{}\": {}", *s, d.error().message));
      return std::nullopt;
    }
    if (!start_ok_) return std::nullopt;  // start's own error is reported
    if (*d > kMaxInstantMs - scenario_.start_ms) {
      value_error(pointer, fmt::format("offset \"{}\" is too large", *s));
      return std::nullopt;
    }
    at = scenario_.start_ms + *d;
  } else {
    auto t = parse_instant(*s);
    if (!t) {
      value_error(pointer, t.error().message + " (or an offset from start such as \"+16h\")");
      return std::nullopt;
    }
    at = *t;
  }
  if (!start_ok_ || !until_ok_) return std::nullopt;
  if (at < scenario_.start_ms || at > scenario_.until_ms) {
    value_error(pointer, fmt::format("fault at {} is outside the scenario's time span [{}, {}]",
                                     format_instant(at), format_instant(scenario_.start_ms),
                                     format_instant(scenario_.until_ms)));
    return std::nullopt;
  }
  return at;
}

// The `fleet` block (sim/fleet.hpp): read and checked there, generated from
// the scenario's seed; the jobs, services and faults join the listed ones.
void Loader::load_fleet(const json& v, const std::string& pointer) {
  const FleetContext context{scenario_.start_ms,
                             declared_services_.count(ServiceKind::model_api) != 0, target_names_,
                             user_services_};
  FleetParse parsed = parse_fleet(v, pointer, context);
  for (Error& e : parsed.errors) add(e.code, e.where, std::move(e.message));
  jobs_ok_ = jobs_ok_ && parsed.spec && start_ok_;
  if (!jobs_ok_) return;
  if (scenario_.jobs.size() + static_cast<std::size_t>(parsed.spec->jobs) > kMaxJobs) {
    value_error(child(pointer, "jobs"),
                fmt::format("too many jobs: {} listed + {} in the fleet (at most {} in all)",
                            scenario_.jobs.size(), parsed.spec->jobs, kMaxJobs));
    jobs_ok_ = false;
    return;
  }
  FleetExpansion fleet = expand_fleet(*parsed.spec, scenario_.seed, scenario_.start_ms, pointer);
  for (JobSpec& job : fleet.jobs) {
    if (!job_id_set_.insert(job.id).second) {
      value_error(child(pointer, "id_prefix"),
                  fmt::format("the fleet's job id '{}' is also a listed job's id", job.id));
      jobs_ok_ = false;
      return;
    }
    job_ids_.push_back(job.id);
    scenario_.jobs.push_back(std::move(job));
  }
  for (auto& [name, service] : fleet.services) {
    user_services_.insert(name);
    scenario_.services.user[name] = service;
  }
  fleet_faults_ = std::move(fleet.faults);  // after the listed faults
}

void Loader::load_faults(const json& v, const std::string& pointer) {
  if (!expect_array(v, pointer, "a list of faults", false, kMaxFaults)) return;
  for (std::size_t i = 0; i < v.size(); ++i) load_fault(v[i], child(pointer, i));
}

// A fault: its kind first (it decides the keys), then the instant, then the
// kind's keys in the table's order, each by the reader of its type.
void Loader::load_fault(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "a fault")) return;
  FaultSpec fault;
  fault.pointer = pointer;
  const FaultKindSpec* kind = load_fault_kind(v, pointer);
  const bool when_ok = load_fault_when(v, pointer, fault);
  if (kind == nullptr) return;
  fault.kind = static_cast<FaultKind>(kind - fault_kinds_.data());
  FaultReading r{v, pointer, *kind, fault, fmt::format("fault '{}'", kind->name), when_ok};
  if (kind->lasting) read_fault_for(r);
  if (!require_fault_target(r)) return;
  for (const FaultKeySpec& key : kind->keys) read_fault_key(r, key);
  if (r.ok) scenario_.faults.push_back(std::move(fault));
}

// The kind, and every key checked against it: a key of another kind is
// refused with what it belongs to.
const FaultKindSpec* Loader::load_fault_kind(const json& v, const std::string& pointer) {
  const FaultKindSpec* kind = nullptr;
  if (const json* k = require(v, pointer, "kind", "a fault kind")) {
    std::vector<std::string> names;
    for (const FaultKindSpec& spec : fault_kinds_) names.emplace_back(spec.name);
    if (auto i = read_name(*k, child(pointer, "kind"), names, "fault kind")) {
      kind = &fault_kinds_[*i];
    }
  }
  std::vector<std::string> allowed = keys_of("fault");
  std::map<std::string, std::string> elsewhere;
  for (const FaultKindSpec& spec : fault_kinds_) {
    const bool mine = kind == nullptr || kind == &spec;
    for (const std::string& key : fault_key_names(spec)) {
      if (mine) {
        allowed.push_back(key);
      } else if (elsewhere.count(key) == 0) {
        elsewhere[key] =
            key == "for"
                ? fmt::format("does not apply to '{}': it happens at one instant", kind->name)
                : fmt::format("does not apply to a '{}' fault", kind->name);
      }
    }
  }
  for (const auto& key : allowed) elsewhere.erase(key);
  check_keys(v, pointer, allowed, elsewhere);
  return kind;
}

// `at` (inside the span) and `note`; false when `at` is missing or wrong.
bool Loader::load_fault_when(const json& v, const std::string& pointer, FaultSpec& fault) {
  bool ok = true;
  if (const json* a =
          require(v, pointer, "at", "an instant or an offset from start such as \"+16h\"")) {
    if (auto t = read_fault_at(*a, child(pointer, "at"))) {
      fault.at_ms = *t;
    } else {
      ok = false;
    }
  } else {
    ok = false;
  }
  if (const json* n = field(v, "note")) {
    if (auto s = read_string(*n, child(pointer, "note"))) fault.note = *s;
  }
  return ok;
}

// A lasting kind's `for`: positive, and the fault ends by `until`.
void Loader::read_fault_for(FaultReading& r) {
  const json* f = field(r.v, "for");
  if (f == nullptr) return;
  const std::string at = child(r.pointer, "for");
  auto d = read_duration(*f, at, 1);
  if (!d) {
    r.ok = false;
    return;
  }
  r.fault.for_ms = *d;
  if (r.ok && until_ok_ && *d > scenario_.until_ms - r.fault.at_ms) {
    value_error(at, fmt::format("the fault would end at {}, after until {} (omit 'for' to "
                                "last until the end)",
                                format_instant(r.fault.at_ms + *d),
                                format_instant(scenario_.until_ms)));
    r.ok = false;
  }
}

// An orchestrator kind needs the orchestrator before any of its keys mean
// anything. (A service kind's service is checked with its `service` key, the
// messenger with `targets`.)
bool Loader::require_fault_target(FaultReading& r) {
  if (r.kind.applies_to != FaultTarget::orchestrator) return true;
  if (require_service(ServiceKind::orchestrator, r.pointer, r.who)) return true;
  r.ok = false;
  return false;
}

void Loader::read_fault_key(FaultReading& r, const FaultKeySpec& key) {
  const json* value = field(r.v, key.name);
  if (value == nullptr) {
    read_absent_fault_key(r, key);
    return;
  }
  auto got = read_fault_value(r, key, *value, child(r.pointer, key.name));
  if (!got) {
    r.ok = false;
    return;
  }
  if (key.store) {
    key.store(r.fault, *got);
  } else {
    r.fault.params[std::string(key.name)] = got->value;
  }
}

// What a missing required fault key's message says is expected.
std::string expected_value(const FaultKeySpec& key) {
  if (!key.expected.empty()) return std::string(key.expected);
  switch (key.type) {
    case FaultKeyType::integer: return fmt::format("{} from {} to {}", key.what, key.min, key.max);
    case FaultKeyType::down_time: return kDurationRule;
    case FaultKeyType::issue_list: return "a non-empty array of issue ids";
    case FaultKeyType::issue: return "an issue id from /services/orchestrator/issues";
    case FaultKeyType::agent: return "an agent id from /services/orchestrator/agents";
    default: return fmt::format("{} (one of: {})", key.what, join(key.names));
  }
}

// A key that is not there: an error when required, else its default.
void Loader::read_absent_fault_key(FaultReading& r, const FaultKeySpec& key) {
  if (key.type == FaultKeyType::targets) {  // every target: the messenger must exist
    if (!require_service(ServiceKind::messenger, r.pointer, r.who)) r.ok = false;
    return;
  }
  if (key.required) {
    r.ok = false;
    if (key.type == FaultKeyType::service) {
      error(r.pointer, fmt::format("missing required key 'service' (one of: {}, or a service of "
                                   "your own declared in /services)",
                                   join(key.names)));
      return;
    }
    require(r.v, r.pointer, key.name, expected_value(key));
    return;
  }
  if (key.default_value.is_null()) return;
  FaultValue value{key.default_value};
  if (key.default_value.is_string()) {
    const auto it =
        std::find(key.names.begin(), key.names.end(), key.default_value.get<std::string>());
    value.index = static_cast<std::size_t>(it - key.names.begin());
  }
  if (key.type == FaultKeyType::service &&
      !require_service(*parse_service_kind(key.names[value.index]), r.pointer, r.who)) {
    r.ok = false;
  }
  if (key.store) key.store(r.fault, value);
}

// An integer key: from `min` to `max` and, when the key lists `names`, one of
// them (an HTTP status a fault may answer with, say).
std::optional<FaultValue> Loader::read_fault_integer(const FaultKeySpec& key, const json& value,
                                                     const std::string& at) {
  const auto n = read_int(value, at, key.min, key.max, key.what);
  if (!n) return std::nullopt;
  if (key.names.empty() || std::ranges::count(key.names, std::to_string(*n)) > 0) {
    return FaultValue{*n};
  }
  value_error(at, fmt::format("expected {}: one of {}, got {}", key.what,
                              fmt::join(key.names, ", "), value.dump()));
  return std::nullopt;
}

// One present value, by the reader of its type.
std::optional<FaultValue> Loader::read_fault_value(FaultReading& r, const FaultKeySpec& key,
                                                   const json& value, const std::string& at) {
  switch (key.type) {
    case FaultKeyType::service: return read_fault_service(r, key, value, at);
    case FaultKeyType::down_time: return read_fault_down_for(r, value, at);
    case FaultKeyType::integer: return read_fault_integer(key, value, at);
    case FaultKeyType::worker:  // one of the worker processes /queue/workers starts
      if (auto n =
              read_int(value, at, 1, scenario_.queue.workers, "a worker number (queue.workers)")) {
        return FaultValue{*n};
      }
      return std::nullopt;
    case FaultKeyType::rate:
      if (auto x = read_rate(value, at)) return FaultValue{*x};
      return std::nullopt;
    case FaultKeyType::name:
      if (auto i = read_name(value, at, key.names, key.what)) return FaultValue{key.names[*i], *i};
      return std::nullopt;
    case FaultKeyType::issue:
      return read_fault_reference(value, at, issue_ids_, "issue", "/services/orchestrator/issues");
    case FaultKeyType::agent:
      return read_fault_reference(value, at, agent_ids_, "agent", "/services/orchestrator/agents");
    case FaultKeyType::new_instance: return read_fault_new_instance(value, at);
    case FaultKeyType::job: return read_fault_job(value, at);
    case FaultKeyType::cut: return read_fault_cut(r, value, at);
    case FaultKeyType::flips: return read_fault_flips(r, value, at);
    case FaultKeyType::issue_list:
    case FaultKeyType::targets: {
      const std::size_t before = errors_.size() + omitted_;
      const std::vector<std::string> names =
          key.type == FaultKeyType::targets ? load_targets(value, at, true)
                                            : read_name_list(value, at, "issue", true, &issue_ids_,
                                                             "/services/orchestrator/issues");
      if (errors_.size() + omitted_ != before) return std::nullopt;
      return FaultValue{names};
    }
  }
  return std::nullopt;
}

// `service`: a built-in the kind allows, or (where allowed) a service of the
// user's own; never the messenger, which has its own kind.
std::optional<FaultValue> Loader::read_fault_service(FaultReading& r, const FaultKeySpec& key,
                                                     const json& value, const std::string& at) {
  const std::string name = value.is_string() ? value.get<std::string>() : std::string();
  // The run could not apply a service fault to the messenger, so the loader
  // (and so `validate`) refuses it.
  if (key.names.size() > 1 && name == to_string(ServiceKind::messenger)) {
    value_error(at, fmt::format("fault kind '{}' cannot target the messenger (use "
                                "messenger_down for the messenger)",
                                r.kind.name));
    return std::nullopt;
  }
  if (key.user_services && user_services_.count(name) != 0) return FaultValue{name, 0, true};
  // Neither a built-in nor one of the user's: list both kinds of candidate.
  if (key.user_services && value.is_string() && !parse_service_kind(name)) {
    unknown_fault_service(r, key, name, at);
    return std::nullopt;
  }
  auto i = read_name(value, at, key.names, fmt::format("service for '{}'", r.kind.name));
  if (!i) return std::nullopt;
  if (!require_service(*parse_service_kind(key.names[*i]), at, r.who)) return std::nullopt;
  return FaultValue{key.names[*i], *i};
}

// A name that is neither a built-in service nor one of the user's own: the
// error lists both, and the nearest of them.
void Loader::unknown_fault_service(const FaultReading& r, const FaultKeySpec& key,
                                   const std::string& name, const std::string& at) {
  std::vector<std::string> candidates = key.names;
  const std::vector<std::string> own(user_services_.begin(), user_services_.end());
  candidates.insert(candidates.end(), own.begin(), own.end());
  std::string message = fmt::format("unknown service for '{}' \"{}\" (expected a built-in: {}",
                                    r.kind.name, name, join(key.names));
  message += own.empty() ? std::string("; no service of your own is declared in /services)")
                         : fmt::format("; or one of yours in /services: {})", join(own));
  if (const auto near = closest(name, candidates)) {
    message += fmt::format("; did you mean '{}'?", *near);
  }
  reference_error(at, std::move(message));
}

// How long the process stays down: it must come back by `until`.
std::optional<FaultValue> Loader::read_fault_down_for(FaultReading& r, const json& value,
                                                      const std::string& at) {
  auto ms = read_duration(value, at, 0);
  if (!ms) return std::nullopt;
  if (r.ok && until_ok_ && *ms > scenario_.until_ms - r.fault.at_ms) {
    value_error(at, fmt::format("the process would be down until {}, after until {}",
                                format_instant(r.fault.at_ms + *ms),
                                format_instant(scenario_.until_ms)));
    return std::nullopt;
  }
  return FaultValue{*ms};
}

std::optional<FaultValue> Loader::read_fault_reference(const json& value, const std::string& at,
                                                       const std::vector<std::string>& declared,
                                                       std::string_view what,
                                                       std::string_view where) {
  auto s = read_identifier(value, at, fmt::format("{} id", what));
  if (!s || !check_reference(*s, at, declared, what, where)) return std::nullopt;
  return FaultValue{*s};
}

// `job`: a declared job that keeps a durable file of its own (a group or
// publish job's delivery ledger, a reconcile job's pipeline file).
std::optional<FaultValue> Loader::read_fault_job(const json& value, const std::string& at) {
  auto s = read_identifier(value, at, "job id");
  if (!s) return std::nullopt;
  std::vector<std::string> with_file;
  const JobSpec* named = nullptr;
  for (const JobSpec& job : scenario_.jobs) {
    if (job_keeps_file(job.kind)) with_file.push_back(job.id);
    if (job.id == *s) named = &job;
  }
  if (named != nullptr && !job_keeps_file(named->kind)) {
    reference_error(at, fmt::format("job '{}' is a {} job, which keeps no file of its own (a "
                                    "group or publish job's delivery ledger, a reconcile job's "
                                    "pipeline file)",
                                    *s, to_string(named->kind)));
    return std::nullopt;
  }
  if (!check_reference(*s, at, with_file, "job with a file", "/jobs")) return std::nullopt;
  return FaultValue{*s};
}

std::optional<FaultValue> Loader::read_fault_new_instance(const json& value,
                                                          const std::string& at) {
  auto s = read_identifier(value, at, "instance id");
  if (!s) return std::nullopt;
  const auto& orchestrator = scenario_.services.orchestrator;
  if (orchestrator && *s == orchestrator->instance) {
    value_error(at, fmt::format("new_instance '{}' is the instance the orchestrator already "
                                "runs (see /services/orchestrator/instance)",
                                *s));
    return std::nullopt;
  }
  return FaultValue{*s};
}

// state_corrupted's exact damage: `cut` belongs to mode truncated only.
std::optional<FaultValue> Loader::read_fault_cut(FaultReading& r, const json& value,
                                                 const std::string& at) {
  if (r.fault.mode != CorruptionMode::truncated) {
    value_error(at, fmt::format("'cut' applies to mode 'truncated' only (the mode is '{}')",
                                to_string(r.fault.mode)));
    return std::nullopt;
  }
  auto n = read_int(value, at, 0, kMaxCount, "a byte count");
  if (!n) return std::nullopt;
  return FaultValue{static_cast<std::uint64_t>(*n)};
}

// `flips` belongs to mode flip only: unique byte offsets.
std::optional<FaultValue> Loader::read_fault_flips(FaultReading& r, const json& value,
                                                   const std::string& at) {
  if (r.fault.mode != CorruptionMode::flip) {
    value_error(at, fmt::format("'flips' applies to mode 'flip' only (the mode is '{}')",
                                to_string(r.fault.mode)));
    return std::nullopt;
  }
  if (!value.is_array() || value.empty()) {
    error(at, "expected a non-empty array of byte offsets, got " + describe(value));
    return std::nullopt;
  }
  std::vector<std::uint64_t> flips;
  bool good = true;
  for (std::size_t k = 0; k < value.size(); ++k) {
    const std::string here = at + "/" + std::to_string(k);
    auto n = read_int(value[k], here, 0, kMaxCount, "a byte offset");
    if (!n) {
      good = false;
      continue;
    }
    const auto offset = static_cast<std::uint64_t>(*n);
    if (std::find(flips.begin(), flips.end(), offset) != flips.end()) {
      value_error(here, fmt::format("byte offset {} is listed twice", offset));
      good = false;
      continue;
    }
    flips.push_back(offset);
  }
  if (!good) return std::nullopt;
  return FaultValue{flips};
}

std::map<NotificationEvent, std::int64_t> Loader::load_event_counts(const json& v,
                                                                    const std::string& pointer) {
  std::map<NotificationEvent, std::int64_t> out;
  if (!expect_object(v, pointer, "notification counts by event")) return out;
  const auto& events = notification_event_names();
  for (const auto& [name, count] : v.items()) {
    const std::string at = child(pointer, name);
    const auto event = parse_notification_event(name);
    if (!event) {
      std::string message =
          fmt::format("unknown notification event '{}' (expected one of: {})", name, join(events));
      if (const auto near = closest(name, events))
        message += fmt::format("; did you mean '{}'?", *near);
      value_error(at, std::move(message));
      continue;
    }
    if (auto n = read_count(count, at)) out[*event] = *n;
  }
  return out;
}

void Loader::load_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                                  JobExpectation& out) {
  if (!expect_object(v, pointer, "a job expectation")) return;
  check_keys(v, pointer, keys_of("job_expectation"));
  const auto count = [&](std::string_view key, std::optional<std::int64_t>& slot) {
    if (const json* c = field(v, key)) slot = read_count(*c, child(pointer, key));
  };
  count("delivered_slots", out.delivered_slots);
  count("skipped_slots", out.skipped_slots);
  count("failed_slots", out.failed_slots);
  count("in_flight_slots", out.in_flight_slots);
  count("retries", out.retries);
  count("runs", out.runs);
  count("calls", out.calls);
  if (const json* s = field(v, "final_status")) {
    const std::vector<std::string> names{"ok", "retrying", "retry_exhausted", "failed"};
    if (auto i = read_name(*s, child(pointer, "final_status"), names, "final status")) {
      out.final_status = parse_retry_status(names[*i]);
    }
  }
  if (const json* n = field(v, "notifications")) {
    out.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  if (const json* d = field(v, "max_delay")) {
    out.max_delay_ms = read_duration(*d, child(pointer, "max_delay"), 0);
  }
  load_later_job_expectation(v, pointer, job, out);
}

// expect.items: per reconcile item, stage, reason, queries, 404 answers.
void Loader::load_item_expectations(const json& items, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "items");
  if (expect_object(items, at, "expectations by issue id")) {
    for (const auto& [issue, body] : items.items()) {
      const std::string ip = child(at, issue);
      if (jobs_ok_ &&
          !check_reference(issue, ip, item_issues_, "item", "the items of any reconcile job")) {
        continue;
      }
      if (!expect_object(body, ip, "an item expectation")) continue;
      check_keys(body, ip, keys_of("item_expectation"));
      ItemExpectation& item = expect.items[issue];
      if (const json* s = field(body, "stage")) {
        if (auto k = read_name(*s, child(ip, "stage"), stage_names(), "stage")) {
          item.stage = stage_names()[*k];
        }
      }
      if (const json* r = field(body, "reason_contains")) {
        item.reason_contains = read_string(*r, child(ip, "reason_contains"));
      }
      if (const json* q = field(body, "queries"))
        item.queries = read_count(*q, child(ip, "queries"));
      if (const json* n = field(body, "not_found")) {
        item.not_found = read_count(*n, child(ip, "not_found"));
      }
    }
  }
}

// expect.services: calls per service (token issues for the brokerage).
void Loader::load_service_expectations(const json& services, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "services");
  if (expect_object(services, at, "expectations by service")) {
    std::vector<std::string> names = keys_of("expect_services");
    names.insert(names.end(), user_services_.begin(), user_services_.end());
    check_keys(services, at, names);
    for (const auto& [name, body] : services.items()) {
      const auto kind = parse_service_kind(name);
      const std::string sp = child(at, name);
      if (!kind && user_services_.count(name) != 0 &&
          expect_object(body, sp, "a service expectation")) {
        check_keys(body, sp, keys_of("service_expectation"),
                   {{"token_issues", "applies to the 'brokerage' service only"}});
        ServiceExpectation& service = expect.user_services[name];
        if (const json* c = field(body, "calls"))
          service.calls = read_count(*c, child(sp, "calls"));
      }
      if (!kind) continue;
      if (!require_service(*kind, sp, "this expectation")) continue;
      if (!expect_object(body, sp, "a service expectation")) continue;
      const bool brokerage = *kind == ServiceKind::brokerage;
      std::map<std::string, std::string> elsewhere;
      if (!brokerage) elsewhere["token_issues"] = "applies to the 'brokerage' service only";
      check_keys(body, sp, keys_of(brokerage ? "brokerage_expectation" : "service_expectation"),
                 elsewhere);
      ServiceExpectation& service = expect.services[*kind];
      if (const json* c = field(body, "calls")) service.calls = read_count(*c, child(sp, "calls"));
      if (brokerage) {
        if (const json* t = field(body, "token_issues")) {
          service.token_issues = read_count(*t, child(sp, "token_issues"));
        }
      }
    }
  }
}

// expect.violations: invariant names, each at most once.
void Loader::load_expected_violations(const json& list, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "violations");
  if (expect_array(list, at, "a list of invariant names", false)) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string vp = child(at, i);
      auto k = read_name(list[i], vp, invariant_names(), "invariant");
      if (!k) continue;
      const std::string& name = invariant_names()[*k];
      if (std::find(expect.violations.begin(), expect.violations.end(), name) !=
          expect.violations.end()) {
        value_error(vp, fmt::format("duplicate invariant '{}'", name));
        continue;
      }
      expect.violations.push_back(name);
    }
  }
}

void Loader::load_expect(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "expectations")) return;
  check_keys(v, pointer, keys_of("expect"));
  Expectations& expect = scenario_.expect;
  if (const json* jobs = field(v, "jobs")) {
    const std::string at = child(pointer, "jobs");
    if (expect_object(*jobs, at, "expectations by job id")) {
      for (const auto& [id, body] : jobs->items()) {
        const std::string jp = child(at, id);
        // Only meaningful when every job parsed; otherwise the job may exist
        // with an error of its own, already reported.
        if (jobs_ok_ && !check_reference(id, jp, job_ids_, "job", "/jobs")) continue;
        load_job_expectation(body, jp, id, expect.jobs[id]);
      }
    }
  }
  if (const json* items = field(v, "items")) load_item_expectations(*items, pointer);
  if (const json* services = field(v, "services")) load_service_expectations(*services, pointer);
  if (const json* n = field(v, "notifications")) {
    expect.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  if (const json* list = field(v, "violations")) load_expected_violations(*list, pointer);
  if (const json* d = field(v, "damaged_files"))
    load_damaged_files(*d, child(pointer, "damaged_files"));
}

// ------------------------------------------- expect: the later job keys

// The keys added to format 1 after its first release: state, policy, slots,
// messages, lateness (docs/scenario-format.md, `expect`). Absent: not checked.
void Loader::load_later_job_expectation(const json& v, const std::string& pointer,
                                        const std::string& job, JobExpectation& out) {
  if (const json* s = field(v, "state")) {
    out.state = load_state_expectation(*s, child(pointer, "state"));
  }
  if (const json* p = field(v, "policy")) {
    out.policy = load_policy_expectation(*p, child(pointer, "policy"));
  }
  if (const json* l = field(v, "slots")) {
    out.slots = load_slot_expectations(*l, child(pointer, "slots"));
  }
  if (const json* m = field(v, "messages")) {
    out.messages = load_message_expectations(*m, child(pointer, "messages"), job);
  }
  if (const json* l = field(v, "lateness")) {
    out.lateness = load_lateness(*l, child(pointer, "lateness"));
  }
}

std::optional<std::optional<TimeMs>> Loader::read_instant_or_null(const json& v,
                                                                  const std::string& pointer) {
  if (v.is_null()) return std::optional<TimeMs>();
  if (auto t = read_instant(v, pointer)) return std::optional<TimeMs>(*t);
  return std::nullopt;
}

std::optional<StateExpectation> Loader::load_state_expectation(const json& v,
                                                               const std::string& pointer) {
  StateExpectation out;
  if (v.is_string() && v.get<std::string>() == "unreadable") {
    out.unreadable = true;
    return out;
  }
  if (!expect_object(v, pointer, "the job's final state (or \"unreadable\")")) return std::nullopt;
  check_keys(v, pointer, keys_of("state_expectation"));
  if (const json* s = field(v, "retry_status")) {
    const std::vector<std::string> names{"ok", "retrying", "retry_exhausted", "failed"};
    if (auto i = read_name(*s, child(pointer, "retry_status"), names, "retry status")) {
      out.retry_status = parse_retry_status(names[*i]);
    }
  }
  if (const json* a = field(v, "next_action")) {
    const std::vector<std::string> names{"none", "retry", "wait_next_run", "manual_review"};
    if (auto i = read_name(*a, child(pointer, "next_action"), names, "next action")) {
      out.next_action = parse_next_action(names[*i]);
    }
  }
  if (const json* t = field(v, "next_run_at")) {
    out.next_run_at = read_instant_or_null(*t, child(pointer, "next_run_at"));
  }
  if (const json* t = field(v, "next_retry_at")) {
    out.next_retry_at = read_instant_or_null(*t, child(pointer, "next_retry_at"));
  }
  if (const json* c = field(v, "retry_count")) {
    out.retry_count = read_count(*c, child(pointer, "retry_count"));
  }
  if (const json* f = field(v, "failure_class")) {
    if (f->is_null()) {
      out.failure_class = std::optional<FailureClass>();
    } else {
      std::vector<std::string> names;
      for (const FailureClass c : all_failure_classes()) names.emplace_back(to_string(c));
      if (auto i =
              read_name(*f, child(pointer, "failure_class"), names, "failure class (or null)")) {
        out.failure_class = std::optional<FailureClass>(all_failure_classes()[*i]);
      }
    }
  }
  return out;
}

std::optional<PolicyExpectation> Loader::load_policy_expectation(const json& v,
                                                                 const std::string& pointer) {
  if (!expect_object(v, pointer, "the policy the job runs with")) return std::nullopt;
  check_keys(v, pointer, keys_of("policy_expectation"));
  PolicyExpectation out;
  if (const json* m = field(v, "max_retries")) {
    out.max_retries =
        read_int(*m, child(pointer, "max_retries"), 0, kRetryCountMax, "a retry count");
  }
  if (const json* b = field(v, "backoff")) {
    const std::vector<std::string> names{"fixed", "exponential", "linear", "polynomial"};
    if (auto i = read_name(*b, child(pointer, "backoff"), names, "backoff")) {
      out.backoff = parse_backoff_kind(names[*i]);
    }
  }
  if (const json* d = field(v, "delay")) {
    out.delay_ms = read_duration(*d, child(pointer, "delay"), 0);
  }
  if (const json* b = field(v, "budget")) {
    const std::vector<std::string> names{"per_slot", "per_episode"};
    if (auto i = read_name(*b, child(pointer, "budget"), names, "budget scope")) {
      out.budget = parse_budget_scope(names[*i]);
    }
  }
  return out;
}

// Every slot of the job, in time order, each at most once.
std::optional<std::vector<SlotExpectation>> Loader::load_slot_expectations(
    const json& v, const std::string& pointer) {
  if (!expect_array(v, pointer, "a list of slots", false)) return std::nullopt;
  std::vector<SlotExpectation> out;
  bool good = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = child(pointer, i);
    auto slot = load_slot_expectation(v[i], at);
    if (!slot) {
      good = false;
      continue;
    }
    if (!out.empty() && slot->slot <= out.back().slot) {
      value_error(at + "/slot",
                  fmt::format("slot {} is not after the previous one ({}): list each "
                              "slot once, in time order",
                              format_instant(slot->slot), format_instant(out.back().slot)));
      good = false;
      continue;
    }
    out.push_back(std::move(*slot));
  }
  if (!good) return std::nullopt;
  return out;
}

std::optional<SlotExpectation> Loader::load_slot_expectation(const json& v,
                                                             const std::string& pointer) {
  if (!expect_object(v, pointer, "a slot expectation")) return std::nullopt;
  check_keys(v, pointer, keys_of("slot_expectation"));
  SlotExpectation out;
  out.pointer = pointer;
  const json* s = require(v, pointer, "slot", "the slot's instant");
  if (s == nullptr) return std::nullopt;
  auto slot = read_instant(*s, child(pointer, "slot"));
  if (!slot) return std::nullopt;
  out.slot = *slot;
  if (const json* o = field(v, "outcome")) {
    if (auto i = read_name(*o, child(pointer, "outcome"), slot_outcome_names(), "slot outcome")) {
      out.outcome = static_cast<SlotOutcome>(*i);
    }
  }
  if (const json* a = field(v, "attempts")) {
    out.attempts = read_count(*a, child(pointer, "attempts"));
  }
  if (const json* t = field(v, "tolerance")) {
    if (auto d = read_duration(*t, child(pointer, "tolerance"), 0)) out.tolerance_ms = *d;
  }
  if (const json* list = field(v, "attempt_at")) {
    const std::string at = child(pointer, "attempt_at");
    if (expect_array(*list, at, "a list of attempt instants", false)) {
      std::vector<TimeMs> instants;
      for (std::size_t k = 0; k < list->size(); ++k) {
        if (auto t = read_attempt_instant((*list)[k], child(at, k), out.slot)) {
          instants.push_back(*t);
        }
      }
      if (instants.size() == list->size()) out.attempt_at = std::move(instants);
      if (out.attempts && *out.attempts != static_cast<std::int64_t>(list->size())) {
        value_error(at, fmt::format("{} attempt instants for {} attempts: give one per attempt",
                                    list->size(), *out.attempts));
      }
    }
  }
  if (const json* n = field(v, "notifications")) {
    out.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  return out;
}

// An INSTANT, or "+DURATION": that long after the slot's instant.
std::optional<TimeMs> Loader::read_attempt_instant(const json& v, const std::string& pointer,
                                                   TimeMs slot) {
  auto s = read_string(v, pointer, "an ISO-8601 UTC instant or an offset from the slot (\"+30m\")");
  if (!s) return std::nullopt;
  if (!s->empty() && s->front() == '+') {
    auto d = parse_duration(std::string_view(*s).substr(1));
    if (!d) {
      value_error(pointer, fmt::format("invalid offset \"{}\": {}", *s, d.error().message));
      return std::nullopt;
    }
    if (*d > kMaxInstantMs - slot) {
      value_error(pointer, fmt::format("offset \"{}\" is too large", *s));
      return std::nullopt;
    }
    return slot + *d;
  }
  auto t = parse_instant(*s);
  if (!t) {
    value_error(pointer, t.error().message + " (or an offset from the slot such as \"+30m\")");
    return std::nullopt;
  }
  return *t;
}

std::map<std::string, MessageExpectation> Loader::load_message_expectations(
    const json& v, const std::string& pointer, const std::string& job) {
  std::map<std::string, MessageExpectation> out;
  if (!expect_object(v, pointer, "message counts by messenger target")) return out;
  if (!require_service(ServiceKind::messenger, pointer, "job '" + job + "' messages")) return out;
  for (const auto& [target, body] : v.items()) {
    const std::string tp = child(pointer, target);
    if (!check_reference(target, tp, target_names_, "target", "/services/messenger/targets")) {
      continue;
    }
    if (!expect_object(body, tp, "message counts by kind")) continue;
    check_keys(body, tp, keys_of("message_expectation"));
    MessageExpectation& m = out[target];
    const auto count = [&, &body = body](std::string_view key, std::optional<std::int64_t>& slot) {
      if (const json* c = field(body, key)) slot = read_count(*c, child(tp, key));
    };
    count("delivery", m.delivery);
    count("failure_notice", m.failure_notice);
    count("notification", m.notification);
    count("refused", m.refused);
  }
  return out;
}

std::optional<LatenessExpectation> Loader::load_lateness(const json& v,
                                                         const std::string& pointer) {
  if (!expect_object(v, pointer, "bounds on the largest lateness")) return std::nullopt;
  check_keys(v, pointer, keys_of("lateness_expectation"));
  LatenessExpectation out;
  if (const json* d = field(v, "at_least")) {
    out.at_least_ms = read_duration(*d, child(pointer, "at_least"), 0);
  }
  if (const json* d = field(v, "at_most")) {
    out.at_most_ms = read_duration(*d, child(pointer, "at_most"), 0);
  }
  if (out.at_least_ms && out.at_most_ms && *out.at_least_ms > *out.at_most_ms) {
    value_error(pointer,
                fmt::format("at_least ({}) is above at_most ({})",
                            format_duration(*out.at_least_ms), format_duration(*out.at_most_ms)));
    return std::nullopt;
  }
  return out;
}

// expect.damaged_files: state file -> "kept" | "changed"; the file must be
// one a state_corrupted fault damages.
void Loader::load_damaged_files(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "damaged state files by name")) return;
  std::vector<std::string> files;
  for (int i = 0; i <= static_cast<int>(StateFile::jobs_state); ++i) {
    files.emplace_back(to_string(static_cast<StateFile>(i)));
  }
  for (const auto& [name, body] : v.items()) {
    const std::string at = child(pointer, name);
    const auto it = std::find(files.begin(), files.end(), name);
    if (it == files.end()) {
      std::string message =
          fmt::format("unknown state file '{}' (expected one of: {})", name, join(files));
      if (const auto near = closest(name, files)) {
        message += fmt::format("; did you mean '{}'?", *near);
      }
      value_error(at, std::move(message));
      continue;
    }
    const auto file = static_cast<StateFile>(it - files.begin());
    const bool damaged =
        std::any_of(scenario_.faults.begin(), scenario_.faults.end(), [&](const FaultSpec& f) {
          return f.kind == FaultKind::state_corrupted && f.file == file;
        });
    if (!damaged) {
      reference_error(at, fmt::format("no state_corrupted fault damages '{}'", name));
      continue;
    }
    const std::vector<std::string> outcomes{"kept", "changed"};
    if (auto i = read_name(body, at, outcomes, "damaged file outcome")) {
      scenario_.expect.damaged_files[file] = static_cast<DamagedFileOutcome>(*i);
    }
  }
}

void Loader::compute_flags() {
  if (!scenario_.services.messenger && !scenario_.jobs.empty()) {
    notes_.push_back(fmt::format(
        "{}:/services: no messenger declared: every notice goes to the implicit target \"{}\", "
        "which accepts it (declare \"messenger\": {{\"targets\": [...]}} to name your own)",
        path_, kImplicitMessengerTarget));
  }
  for (const auto& job : scenario_.jobs) {
    // The schedule the job actually runs on (an env override may replace it).
    std::optional<CronSchedule> schedule;
    if (job.schedule_env) {
      auto eff = effective_schedule(job.schedule, job.schedule_env, scenario_.env);
      if (eff) {
        schedule = eff->schedule;
      } else {
        const auto value = env_lookup(scenario_.env, *job.schedule_env);
        flag(FlagKind::schedule_config, job.pointer + "/schedule_env",
             fmt::format("{}=\"{}\" gives job '{}' no usable schedule: every run fails with a "
                         "config error ({})",
                         *job.schedule_env, value ? std::string(*value) : std::string(), job.id,
                         eff.error().message));
      }
    } else if (auto parsed = CronSchedule::parse(job.schedule)) {
      schedule = *parsed;
    }
    if (schedule) {
      // The first slot at or after start (next_after is strictly after).
      const TimeMs start = scenario_.start_ms;
      auto first = start % kSecondMs == 0 && schedule->matches(start) ? Result<TimeMs>(start)
                                                                      : schedule->next_after(start);
      if (!first || *first > scenario_.until_ms) {
        flag(FlagKind::schedule_idle, job.pointer + "/schedule",
             fmt::format("job '{}' never runs: its schedule \"{}\" does not fire between start "
                         "and until",
                         job.id, schedule->source()));
      }
    }
    // "auto" follows the effective schedule; without one, the config flag
    // above already says what is wrong.
    const bool is_auto = job.retry_policy && job.retry_policy->is_string() &&
                         job.retry_policy->get<std::string>() == "auto";
    if (is_auto && !schedule) continue;

    // The core's own parser decides, so validate reports exactly what a run
    // will do: an invalid policy fails closed there (never retried).
    std::optional<ScheduleFacts> facts;
    if (schedule) facts = schedule_facts(*schedule);
    auto policy = parse_retry_policy(job.retry_policy ? *job.retry_policy : json(), facts);
    if (!policy) {
      const std::string where =
          job.retry_policy ? job.pointer + "/retry_policy" + policy.error().where : job.pointer;
      flag(FlagKind::policy_error, where,
           fmt::format("job '{}': {}; the job runs on schedule but is never retried", job.id,
                       job.retry_policy ? policy.error().message
                                        : std::string("no retry_policy (there is no default)")));
      continue;
    }
    SideEffectDeclaration declaration;
    declaration.kind = job.side_effects;
    declaration.idempotency_key = job.idempotency_key.value_or("");
    if (auto warning = side_effect_warning(declaration, *policy)) {
      flag(FlagKind::side_effects, job.pointer, fmt::format("job '{}': {}", job.id, *warning));
    }
  }
}

// The table of job kinds (the loader's keys and readers follow from it).
const std::vector<ScenarioJobKind>& Loader::job_kinds() {
  static const std::vector<ScenarioJobKind> kKinds = [] {
    std::vector<ScenarioJobKind> kinds{
        {JobKind::group,
         "group",
         {"tasks", "targets"},
         SideEffectKind::draft,
         true,
         &Loader::load_group},
        {JobKind::fetch,
         "fetch",
         {"service", "requests", "parallel"},
         SideEffectKind::none,
         false,
         &Loader::load_fetch},
        {JobKind::reconcile,
         "reconcile",
         {"items", "batch_size"},
         SideEffectKind::none,
         true,
         &Loader::load_reconcile},
        {JobKind::publish,
         "publish",
         {"targets"},
         SideEffectKind::publish,
         true,
         &Loader::load_publish},
        {JobKind::call, "call", {"calls"}, SideEffectKind::none, false, &Loader::load_call_job},
    };
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      REHEARSE_ASSERT(static_cast<std::size_t>(kinds[i].kind) == i);  // in JobKind order
    }
    return kinds;
  }();
  return kKinds;
}

// Every job kind's own keys, from the table: "job_<kind>" -> its keys.
void add_job_kind_keys(std::map<std::string, std::vector<std::string>>& keys) {
  for (const ScenarioJobKind& kind : Loader::job_kinds()) {
    keys[std::string("job_") + kind.name] = kind.keys;
  }
}

}  // namespace

const char* to_string(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() ? Loader::job_kinds()[i].name : "unknown";
}

bool job_keeps_file(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() && Loader::job_kinds()[i].keeps_file;
}

// What a re-run does outside when a job declares nothing (the table's
// side_effects; the most cautious answer for a kind it does not know).
SideEffectKind default_side_effects(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() ? Loader::job_kinds()[i].side_effects
                                        : SideEffectKind::publish;
}

// ------------------------------------------------------------ entry points

ScenarioCheck check_scenario_json(std::string_view text, const std::string& path) {
  return check_scenario_json(text, path, fault_kinds());
}

ScenarioCheck check_scenario_json(std::string_view text, const std::string& path,
                                  const FaultKinds& kinds) {
  Loader loader(path, kinds);
  if (text.size() > kMaxFileBytes) {
    loader.syntax_error("1:1", fmt::format("file is {} bytes; scenarios are limited to {} bytes",
                                           text.size(), kMaxFileBytes));
    return std::move(loader).finish();
  }
  DuplicateKeyFinder duplicates;
  json root;
  try {
    root = json::parse(text.begin(), text.end(),
                       [&duplicates](int, json::parse_event_t event, json& parsed) {
                         return duplicates.on_event(event, parsed);
                       });
  } catch (const json::parse_error& e) {
    loader.syntax_error(line_column(text, e.byte), strip_json_exception_prefix(e.what()));
    return std::move(loader).finish();
  } catch (const NestingTooDeep& e) {
    loader.nesting_error(e.pointer);
    return std::move(loader).finish();
  } catch (const json::exception& e) {
    // e.g. a number too large for a double: no position is known.
    loader.syntax_error("1:1", strip_json_exception_prefix(e.what()));
    return std::move(loader).finish();
  }
  for (const auto& pointer : duplicates.duplicates) loader.duplicate_key(pointer);
  loader.load(root);
  if (!loader.has_errors()) loader.compute_flags();
  return std::move(loader).finish();
}

ScenarioCheck check_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    ScenarioCheck out;
    out.errors.push_back(make_error(ErrorCode::io_error, "cannot open the file", path));
    return out;
  }
  // Refuse a huge file before reading it (check_scenario_json has the same bound).
  if (const auto size = in.tellg(); size > 0 && static_cast<std::size_t>(size) > kMaxFileBytes) {
    ScenarioCheck out;
    out.errors.push_back(make_error(
        ErrorCode::invalid_argument,
        fmt::format("file is {} bytes; scenarios are limited to {} bytes", size, kMaxFileBytes),
        path));
    return out;
  }
  in.seekg(0);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    ScenarioCheck out;
    out.errors.push_back(make_error(ErrorCode::io_error, "cannot read the file", path));
    return out;
  }
  return check_scenario_json(buffer.str(), path);
}

namespace {
Result<Scenario> first_error(ScenarioCheck check) {
  if (check.valid()) return std::move(*check.scenario);
  Error first = check.errors.front();
  const std::size_t more = check.errors.size() - 1 + check.errors_omitted;
  if (more > 0) {
    first.message += fmt::format(" (and {} more error{}; 'rehearse validate' lists them)", more,
                                 more == 1 ? "" : "s");
  }
  return first;
}
}  // namespace

Result<Scenario> load_scenario_json(std::string_view text, const std::string& path) {
  return first_error(check_scenario_json(text, path));
}

Result<Scenario> load_scenario_file(const std::string& path) {
  return first_error(check_scenario_file(path));
}

}  // namespace rehearse::sim
