// One job's record in the state files: the checks a record passes before it
// is written (validate_job_state), its JSON encoding, and the strict decoding
// that names the JSON pointer and what was expected for every error; the
// format is docs/state-file.md. The snapshot (state_codec_snapshot.cpp) and the
// journal (state_codec_journal.cpp) hold these records.
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/retry_policy.hpp"
#include "model/state_codec.hpp"
#include "model/state_codec_detail.hpp"
#include "model/time.hpp"

namespace rehearse {

using nlohmann::json;
using state_codec_detail::check_keys;
using state_codec_detail::kStrictDump;
using state_codec_detail::printable;
using state_codec_detail::read_integer;
using state_codec_detail::schema;
using state_codec_detail::type_of;

namespace state_codec_detail {

Error schema(const std::string& where, std::string message) {
  return make_error(ErrorCode::schema_error, std::move(message), where);
}

std::string type_of(const json& v) {
  if (v.is_number_integer()) return "integer";
  if (v.is_number_float()) return "non-integer number";
  return v.type_name();
}

// `expected` (sorted) are the keys allowed; each is required unless listed
// in `optional`.
Status check_keys(const json& object, const std::string& where,
                  const std::vector<std::string>& expected, const char* what,
                  const std::vector<std::string>& optional) {
  if (!object.is_object()) {
    return schema(where, fmt::format("expected {} object, got {}", what, type_of(object)));
  }
  for (const auto& [key, value] : object.items()) {
    if (!std::binary_search(expected.begin(), expected.end(), key)) {
      return schema(where + "/" + json_pointer_token(key),
                    fmt::format("unknown key \"{}\" in {}; expected only: {}", printable(key), what,
                                fmt::join(expected, ", ")));
    }
  }
  for (const auto& key : expected) {
    if (!object.contains(key) &&
        std::find(optional.begin(), optional.end(), key) == optional.end()) {
      return schema(where, fmt::format("missing key \"{}\" in {}", key, what));
    }
  }
  return {};
}

Result<std::int64_t> read_integer(const json& v, const std::string& where, std::int64_t min,
                                  std::int64_t max, const char* what) {
  const auto expected = [&] {
    return fmt::format("expected {} (an integer in {}..{})", what, min, max);
  };
  if (!v.is_number_integer()) return schema(where, expected() + ", got " + type_of(v));
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max)) {
      return schema(where, expected() + fmt::format(", got {}", u));
    }
    return static_cast<std::int64_t>(u);
  }
  const auto i = v.get<std::int64_t>();
  if (i < min || i > max) return schema(where, expected() + fmt::format(", got {}", i));
  return i;
}

}  // namespace state_codec_detail

namespace {

Result<int> read_count(const json& v, const std::string& where, const char* what) {
  auto r = read_integer(v, where, 0, std::numeric_limits<int>::max(), what);
  if (!r.ok()) return std::move(r).error();
  return static_cast<int>(*r);
}

Result<std::string> read_string(const json& v, const std::string& where, const char* what) {
  if (!v.is_string()) {
    return schema(where, fmt::format("expected {} (a string), got {}", what, type_of(v)));
  }
  return v.get<std::string>();
}

Result<TimeMs> read_instant(const json& v, const std::string& where, const char* what) {
  if (!v.is_string()) {
    return schema(where, fmt::format("expected {} (an ISO-8601 UTC instant string such as "
                                     "\"2026-12-04T17:00:00Z\"), got {}",
                                     what, type_of(v)));
  }
  const auto& text = v.get_ref<const std::string&>();
  auto t = parse_instant(text);
  if (!t.ok()) {
    return schema(where, fmt::format("expected {} (an ISO-8601 UTC instant such as "
                                     "\"2026-12-04T17:00:00Z\"): {}",
                                     what, printable(t.error().message)));
  }
  return *t;
}

Result<std::optional<TimeMs>> read_optional_instant(const json& v, const std::string& where,
                                                    const char* what) {
  if (v.is_null()) return std::optional<TimeMs>{};
  auto t = read_instant(v, where, what);
  if (!t.ok()) {
    Error e = std::move(t).error();
    e.message += " or null";
    return e;
  }
  return std::optional<TimeMs>{*t};
}

template <typename Enum, typename Parse>
Result<Enum> read_enum(const json& v, const std::string& where, const char* what,
                       const std::vector<std::string>& names, Parse parse) {
  const auto expected = [&] {
    return fmt::format("expected {}, one of: {}", what, fmt::join(names, ", "));
  };
  if (!v.is_string()) return schema(where, expected() + ", got " + type_of(v));
  const auto& text = v.get_ref<const std::string&>();
  const std::optional<Enum> e = parse(text);
  if (!e) return schema(where, expected() + fmt::format(", got \"{}\"", printable(text)));
  return *e;
}

const std::vector<std::string>& status_names() {
  static const std::vector<std::string> names = {to_string(RetryStatus::ok),
                                                 to_string(RetryStatus::retrying),
                                                 to_string(RetryStatus::retry_exhausted),
                                                 to_string(RetryStatus::failed)};
  return names;
}
const std::vector<std::string>& action_names() {
  static const std::vector<std::string> names = {to_string(NextAction::none),
                                                 to_string(NextAction::retry),
                                                 to_string(NextAction::wait_next_run),
                                                 to_string(NextAction::manual_review)};
  return names;
}
const std::vector<std::string>& class_names_all() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const FailureClass c : all_failure_classes()) n.emplace_back(to_string(c));
    return n;
  }();
  return names;
}

Result<RetryStatus> read_status(const json& v, const std::string& where) {
  return read_enum<RetryStatus>(v, where, "a retry status", status_names(), parse_retry_status);
}
Result<NextAction> read_action(const json& v, const std::string& where) {
  return read_enum<NextAction>(v, where, "a next action", action_names(), parse_next_action);
}
Result<std::optional<FailureClass>> read_optional_class(const json& v, const std::string& where) {
  if (v.is_null()) return std::optional<FailureClass>{};
  auto c = read_enum<FailureClass>(v, where, "a failure class (or null)", class_names_all(),
                                   parse_failure_class);
  if (!c.ok()) return std::move(c).error();
  return std::optional<FailureClass>{*c};
}

json optional_instant(const std::optional<TimeMs>& t) {
  return t ? json(format_instant(*t)) : json(nullptr);
}
json optional_class(const std::optional<FailureClass>& c) {
  return c ? json(to_string(*c)) : json(nullptr);
}

bool instant_in_range(TimeMs t) { return t >= kMinInstantMs && t <= kMaxInstantMs; }

Status invalid(const std::string& where, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message), where);
}

Status check_instant(const std::optional<TimeMs>& t, const std::string& where) {
  if (t && !instant_in_range(*t)) {
    return invalid(where, fmt::format("instant {} ms is outside 1970..9999", *t));
  }
  return {};
}

Status check_count(std::int64_t n, const std::string& where) {
  if (n < 0) return invalid(where, fmt::format("must not be negative, got {}", n));
  return {};
}

Status check_enums(RetryStatus s, NextAction a, const std::optional<FailureClass>& c,
                   const std::string& where) {
  if (static_cast<std::size_t>(s) >= status_names().size()) {
    return invalid(where + "/retry_status", "retry status out of range");
  }
  if (static_cast<std::size_t>(a) >= action_names().size()) {
    return invalid(where + "/next_action", "next action out of range");
  }
  if (c && static_cast<std::size_t>(*c) >= kFailureClassCount) {
    return invalid(where + "/failure_class", "failure class out of range");
  }
  return {};
}

Status validate_slot(const SlotRecord& slot, TimeMs key, const std::string& where) {
  if (slot.slot != key) {
    return invalid(where + "/slot",
                   fmt::format("slot record {} is filed under key {}", slot.slot, key));
  }
  if (auto s = check_instant(slot.slot, where + "/slot"); !s.ok()) return s;
  if (auto s = check_enums(slot.retry_status, slot.next_action, slot.failure_class, where);
      !s.ok()) {
    return s;
  }
  if (auto s = check_count(slot.retry_count, where + "/retry_count"); !s.ok()) return s;
  if (auto s = check_instant(slot.next_retry_at, where + "/next_retry_at"); !s.ok()) return s;
  if (auto s = check_count(slot.stalled_count, where + "/stalled_count"); !s.ok()) return s;
  for (const int n : slot.rule_counts) {
    if (auto s = check_count(n, where + "/rule_counts"); !s.ok()) return s;
  }
  if (slot.last_delay_ms < 0 || slot.last_delay_ms > kBackoffDelayMaxMs) {
    return invalid(where + "/last_delay_ms", fmt::format("last delay {} ms is outside [0, {}]",
                                                         slot.last_delay_ms, kBackoffDelayMaxMs));
  }
  return {};
}

json encode_slot(const SlotRecord& slot) {
  json j = json::object();
  j["slot"] = format_instant(slot.slot);
  j["retry_status"] = to_string(slot.retry_status);
  j["failure_class"] = optional_class(slot.failure_class);
  j["retry_count"] = slot.retry_count;
  j["next_retry_at"] = optional_instant(slot.next_retry_at);
  j["next_action"] = to_string(slot.next_action);
  j["stalled_count"] = slot.stalled_count;
  j["last_error"] = slot.last_error;
  if (!slot.rule_counts.empty()) j["rule_counts"] = slot.rule_counts;
  if (slot.last_delay_ms > 0) j["last_delay_ms"] = slot.last_delay_ms;
  return j;
}

Result<SlotRecord> decode_slot(const json& v, const std::string& where) {
  // rule_counts: only for a policy of several retriers; last_delay_ms: only
  // under decorrelated jitter (older files lack both).
  if (auto s = check_keys(v, where, slot_field_names(), "a slot record",
                          {"rule_counts", "last_delay_ms"});
      !s.ok()) {
    return s.error();
  }
  SlotRecord slot;
  REHEARSE_READ(slot.slot, read_instant(v.at("slot"), where + "/slot", "the slot instant"));
  REHEARSE_READ(slot.retry_status, read_status(v.at("retry_status"), where + "/retry_status"));
  REHEARSE_READ(slot.failure_class,
                read_optional_class(v.at("failure_class"), where + "/failure_class"));
  REHEARSE_READ(slot.retry_count,
                read_count(v.at("retry_count"), where + "/retry_count", "a retry count"));
  REHEARSE_READ(slot.next_retry_at,
                read_optional_instant(v.at("next_retry_at"), where + "/next_retry_at",
                                      "the next retry instant"));
  REHEARSE_READ(slot.next_action, read_action(v.at("next_action"), where + "/next_action"));
  REHEARSE_READ(slot.stalled_count,
                read_count(v.at("stalled_count"), where + "/stalled_count", "a stall count"));
  REHEARSE_READ(slot.last_error,
                read_string(v.at("last_error"), where + "/last_error", "the last error text"));
  if (v.contains("rule_counts")) {
    const json& counts = v.at("rule_counts");
    if (!counts.is_array() || counts.size() > kRuleCountMax) {
      return schema(where + "/rule_counts",
                    fmt::format("expected a list of at most {} retry counts", kRuleCountMax));
    }
    for (std::size_t i = 0; i < counts.size(); ++i) {
      int n = 0;
      REHEARSE_READ(n, read_count(counts.at(i), fmt::format("{}/rule_counts/{}", where, i),
                                  "a retrier's retry count"));
      slot.rule_counts.push_back(n);
    }
  }
  if (v.contains("last_delay_ms")) {
    REHEARSE_READ(slot.last_delay_ms,
                  read_integer(v.at("last_delay_ms"), where + "/last_delay_ms", 1,
                               kBackoffDelayMaxMs, "a delay in milliseconds"));
  }
  return slot;
}

}  // namespace

const std::vector<std::string>& job_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"job_id",       "retry_status",    "failure_class",
                                  "retry_count",  "retry_limit",     "next_retry_at",
                                  "next_action",  "last_error",      "updated_at",
                                  "next_run_at",  "last_slot",       "policy_error",
                                  "misfire_runs", "coalesced_slots", "max_lateness_ms",
                                  "slots"};
    std::sort(n.begin(), n.end());
    return n;
  }();
  return names;
}

const std::vector<std::string>& slot_field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"slot",          "retry_status", "failure_class", "retry_count",
                                  "next_retry_at", "next_action",  "stalled_count", "last_error",
                                  "rule_counts",   "last_delay_ms"};
    std::sort(n.begin(), n.end());
    return n;
  }();
  return names;
}

Status validate_job_state(const JobState& state) {
  if (state.job_id.empty()) return invalid("/job_id", "job id must not be empty");
  if (!is_valid_utf8(state.job_id)) return invalid("/job_id", "job id must be valid UTF-8");
  if (auto s = check_enums(state.retry_status, state.next_action, state.failure_class, "");
      !s.ok()) {
    return s;
  }
  if (auto s = check_count(state.retry_count, "/retry_count"); !s.ok()) return s;
  if (auto s = check_count(state.retry_limit, "/retry_limit"); !s.ok()) return s;
  if (auto s = check_instant(state.next_retry_at, "/next_retry_at"); !s.ok()) return s;
  if (auto s = check_instant(state.updated_at, "/updated_at"); !s.ok()) return s;
  if (auto s = check_instant(state.next_run_at, "/next_run_at"); !s.ok()) return s;
  if (auto s = check_instant(state.last_slot, "/last_slot"); !s.ok()) return s;
  if (auto s = check_count(state.misfire_runs, "/misfire_runs"); !s.ok()) return s;
  if (auto s = check_count(state.coalesced_slots, "/coalesced_slots"); !s.ok()) return s;
  if (auto s = check_count(state.max_lateness_ms, "/max_lateness_ms"); !s.ok()) return s;
  for (const auto& [key, slot] : state.slots) {
    if (!instant_in_range(key)) {
      return invalid("/slots", fmt::format("slot key {} ms is outside 1970..9999", key));
    }
    if (auto s = validate_slot(slot, key, "/slots/" + json_pointer_token(format_instant(key)));
        !s.ok()) {
      return s;
    }
  }
  return {};
}

json encode_job(const JobState& state) {
  REHEARSE_ASSERT(validate_job_state(state).ok());
  json j = json::object();
  j["job_id"] = state.job_id;
  j["retry_status"] = to_string(state.retry_status);
  j["failure_class"] = optional_class(state.failure_class);
  j["retry_count"] = state.retry_count;
  j["retry_limit"] = state.retry_limit;
  j["next_retry_at"] = optional_instant(state.next_retry_at);
  j["next_action"] = to_string(state.next_action);
  j["last_error"] = state.last_error;
  j["updated_at"] = optional_instant(state.updated_at);
  j["next_run_at"] = optional_instant(state.next_run_at);
  j["last_slot"] = optional_instant(state.last_slot);
  j["policy_error"] = state.policy_error;
  j["misfire_runs"] = state.misfire_runs;
  j["coalesced_slots"] = state.coalesced_slots;
  j["max_lateness_ms"] = state.max_lateness_ms;
  json slots = json::object();
  for (const auto& [key, slot] : state.slots) slots[format_instant(key)] = encode_slot(slot);
  j["slots"] = std::move(slots);
  return j;
}

Result<JobState> decode_job(const json& v, const std::string& where) {
  if (auto s = check_keys(v, where, job_field_names(), "a job record"); !s.ok()) {
    return s.error();
  }
  JobState state;
  REHEARSE_READ(state.job_id, read_string(v.at("job_id"), where + "/job_id", "the job id"));
  if (state.job_id.empty()) return schema(where + "/job_id", "expected a non-empty job id");
  REHEARSE_READ(state.retry_status, read_status(v.at("retry_status"), where + "/retry_status"));
  REHEARSE_READ(state.failure_class,
                read_optional_class(v.at("failure_class"), where + "/failure_class"));
  REHEARSE_READ(state.retry_count,
                read_count(v.at("retry_count"), where + "/retry_count", "a retry count"));
  REHEARSE_READ(state.retry_limit,
                read_count(v.at("retry_limit"), where + "/retry_limit", "a retry limit"));
  REHEARSE_READ(state.next_retry_at,
                read_optional_instant(v.at("next_retry_at"), where + "/next_retry_at",
                                      "the next retry instant"));
  REHEARSE_READ(state.next_action, read_action(v.at("next_action"), where + "/next_action"));
  REHEARSE_READ(state.last_error,
                read_string(v.at("last_error"), where + "/last_error", "the last error text"));
  REHEARSE_READ(state.updated_at, read_optional_instant(v.at("updated_at"), where + "/updated_at",
                                                        "the update instant"));
  REHEARSE_READ(state.next_run_at,
                read_optional_instant(v.at("next_run_at"), where + "/next_run_at",
                                      "the next regular run instant"));
  REHEARSE_READ(state.last_slot, read_optional_instant(v.at("last_slot"), where + "/last_slot",
                                                       "the last regular slot instant"));
  REHEARSE_READ(state.policy_error, read_string(v.at("policy_error"), where + "/policy_error",
                                                "the policy error text"));
  REHEARSE_READ(state.misfire_runs,
                read_count(v.at("misfire_runs"), where + "/misfire_runs", "a misfire run count"));
  REHEARSE_READ(state.coalesced_slots,
                read_count(v.at("coalesced_slots"), where + "/coalesced_slots",
                           "a coalesced slot count"));
  REHEARSE_READ(state.max_lateness_ms,
                read_integer(v.at("max_lateness_ms"), where + "/max_lateness_ms", 0,
                             std::numeric_limits<std::int64_t>::max(),
                             "a lateness in milliseconds"));
  const json& slots = v.at("slots");
  const std::string slots_where = where + "/slots";
  if (!slots.is_object()) {
    return schema(slots_where, "expected an object of slot records keyed by slot instant, got " +
                                   type_of(slots));
  }
  for (const auto& [key, record] : slots.items()) {
    const std::string slot_where = slots_where + "/" + json_pointer_token(key);
    auto at = parse_instant(key);
    if (!at.ok()) {
      return schema(slot_where, fmt::format("expected a slot key that is an ISO-8601 UTC "
                                            "instant, got \"{}\"",
                                            printable(key)));
    }
    if (format_instant(*at) != key) {
      // One spelling per instant, so two keys can never name the same slot.
      return schema(slot_where, fmt::format("expected the canonical spelling \"{}\" of slot key "
                                            "\"{}\"",
                                            format_instant(*at), printable(key)));
    }
    SlotRecord slot;
    REHEARSE_READ(slot, decode_slot(record, slot_where));
    if (slot.slot != *at) {
      return schema(slot_where + "/slot",
                    fmt::format("expected the slot's own instant \"{}\" (its key), got \"{}\"", key,
                                format_instant(slot.slot)));
    }
    state.slots.emplace(*at, std::move(slot));
  }
  return state;
}

}  // namespace rehearse
