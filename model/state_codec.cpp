#include "model/state_codec.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/time.hpp"

namespace rehearse {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------
// Strict JSON parsing: a SAX handler that builds the DOM like nlohmann's own,
// but refuses duplicate keys and keeps the parse error's byte position.

// Bytes from the outside world (a JSON token) made printable for a message.
std::string printable(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

std::string line_column(std::string_view bytes, std::size_t offset) {
  offset = std::min(offset, bytes.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (bytes[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return fmt::format("{}:{}", line, offset - line_start + 1);
}

// Stands in for a job already handed to StrictSax::on_job: binary values
// cannot come from JSON text, so it is never confused with one.
json job_placeholder() { return json::binary({}); }

class StrictSax {
 public:
  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) { return put(json(v)); }
  bool string(std::string& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t /*size*/) { return open(json::object()); }
  bool start_array(std::size_t /*size*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      error_ =
          make_error(ErrorCode::corrupt,
                     fmt::format("duplicate key \"{}\" (each key may appear once)", printable(k)),
                     pointer() + "/" + json_pointer_token(k));
      return false;
    }
    top.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    // keep only the explanation; the position is ours.
    if (const auto colon = what.find(": "); colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
    error_position_ = position == 0 ? 0 : position - 1;
    error_ = make_error(ErrorCode::corrupt, "invalid JSON: " + printable(what));
    return false;
  }

  json root;
  std::optional<Error> error_;
  std::optional<std::size_t> error_position_;
  // When set, each container value of /jobs is handed over as soon as it is
  // complete and replaced in the tree by a placeholder (which keeps its key
  // for duplicate detection): a 100k-job snapshot never exists as one tree.
  std::function<void(const std::string& key, json&& value)> on_job;

 private:
  struct Frame {
    json* value = nullptr;
    std::string token;  // this container's reference token in its parent
    std::string key;    // objects: the key whose value comes next
  };

  // Places v in the current container (or as the root) and returns where.
  json* place(json&& v, std::string* token) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& top = stack_.back();
    if (top.value->is_object()) {
      if (token) *token = json_pointer_token(top.key);
      auto& slot = (*top.value)[top.key];
      slot = std::move(v);
      return &slot;
    }
    if (token) *token = std::to_string(top.value->size());
    top.value->push_back(std::move(v));
    return &top.value->back();
  }
  bool put(json&& v) {
    place(std::move(v), nullptr);
    return true;
  }
  bool open(json&& container) {
    std::string token;
    json* where = place(std::move(container), &token);
    stack_.push_back(Frame{where, std::move(token), {}});
    return true;
  }
  bool close() {
    if (on_job && stack_.size() == 3 && stack_[0].value->is_object() && stack_[1].token == "jobs" &&
        stack_[1].value->is_object()) {
      json value = std::move(*stack_[2].value);
      *stack_[2].value = job_placeholder();
      stack_.pop_back();
      on_job(stack_[1].key, std::move(value));
      return true;
    }
    stack_.pop_back();
    return true;
  }
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 1; i < stack_.size(); ++i) p += "/" + stack_[i].token;
    return p;
  }

  std::vector<Frame> stack_;
};

Result<json> parse_with(std::string_view bytes, StrictSax& sax);

// ---------------------------------------------------------------------------
// Field decoding with JSON pointers.

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
                  const std::vector<std::string>& optional = {}) {
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

// Shorthand: assign a decoded field or return its error.
#define REHEARSE_READ(target, expr)             \
  do {                                          \
    auto rehearse_read_ = (expr);               \
    if (!rehearse_read_.ok()) {                 \
      return std::move(rehearse_read_).error(); \
    }                                           \
    (target) = std::move(*rehearse_read_);      \
  } while (false)

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
  return {};
}

constexpr auto kStrictDump = json::error_handler_t::replace;

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
  return j;
}

Result<SlotRecord> decode_slot(const json& v, const std::string& where) {
  if (auto s = check_keys(v, where, slot_field_names(), "a slot record"); !s.ok()) {
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
  return slot;
}

// ---------------------------------------------------------------------------
// Journal framing.

constexpr std::string_view kHeaderPrefix = "#rehearse-journal format=";

std::string hex8(std::uint32_t v) { return fmt::format("{:08x}", v); }

// Parses a decimal without sign or leading zeros (except "0") from the front
// of text, advancing it. Fails on overflow past INT64_MAX.
std::optional<std::uint64_t> take_decimal(std::string_view& text) {
  std::size_t n = 0;
  while (n < text.size() && n < 20 && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0 || (n > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, value);
  if (ec != std::errc() || ptr != text.data() + n) return std::nullopt;
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  text.remove_prefix(n);
  return value;
}

bool take_literal(std::string_view& text, std::string_view literal) {
  if (text.substr(0, literal.size()) != literal) return false;
  text.remove_prefix(literal.size());
  return true;
}

std::optional<std::uint32_t> take_hex8(std::string_view& text) {
  if (text.size() < 8) return std::nullopt;
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const char c = text[i];
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    v = (v << 4) | digit;
  }
  text.remove_prefix(8);
  return v;
}

// One line of the journal, without its newline, checked for frame and
// checksum. The payload is not decoded here.
struct Frame {
  std::uint64_t seq = 0;
  std::string_view payload;
};

// The frame of a record line, or why it is not one.
Result<Frame> parse_frame(std::string_view line) {
  const std::string_view whole = line;
  Frame frame;
  const auto seq = take_decimal(line);
  if (!seq || !take_literal(line, " ")) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \"<seq> \"");
  }
  const auto length = take_decimal(line);
  if (!length || !take_literal(line, " ")) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \"<length> \"");
  }
  if (*length + 9 != line.size()) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("record length {} does not match the line ({} payload bytes "
                                  "present before the checksum)",
                                  *length, line.size() < 9 ? 0 : line.size() - 9));
  }
  frame.seq = *seq;
  frame.payload = line.substr(0, static_cast<std::size_t>(*length));
  line.remove_prefix(static_cast<std::size_t>(*length));
  const std::string_view covered = whole.substr(0, whole.size() - line.size());
  const auto stored = (take_literal(line, " ") ? take_hex8(line) : std::nullopt);
  if (!stored || !line.empty()) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \" <crc32c>\"");
  }
  const std::uint32_t actual = crc32c(covered);
  if (actual != *stored) {
    return make_error(ErrorCode::corrupt, fmt::format("checksum mismatch (stored {}, computed {})",
                                                      hex8(*stored), hex8(actual)));
  }
  return frame;
}

// The size of the record an intact "<seq> <length> " prefix announces
// (without checking anything else), if the prefix is there.
std::optional<std::uint64_t> announced_size(std::string_view region) {
  const std::size_t total = region.size();
  const auto seq = take_decimal(region);
  if (!seq || !take_literal(region, " ")) return std::nullopt;
  const auto length = take_decimal(region);
  if (!length || !take_literal(region, " ")) return std::nullopt;
  const std::uint64_t prefix = total - region.size();
  return prefix + *length + 10;  // payload, " ", 8 hex digits, "\n"
}

// Is there an intact record starting after any newline of region?
bool intact_record_follows(std::string_view region) {
  for (std::size_t pos = region.find('\n'); pos != std::string_view::npos;
       pos = region.find('\n', pos + 1)) {
    const std::size_t start = pos + 1;
    const std::size_t end = region.find('\n', start);
    if (end == std::string_view::npos) return false;  // unterminated: not intact
    if (parse_frame(region.substr(start, end - start)).ok()) return true;
  }
  return false;
}

Error at_line(Error e, std::uint64_t line) {
  e.where =
      e.where.empty() ? fmt::format("line {}", line) : fmt::format("line {}#{}", line, e.where);
  return e;
}

}  // namespace

// ---------------------------------------------------------------------------

std::string json_pointer_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      length = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      length = 3;
      if (b0 == 0xe0) lo = 0xa0;  // no overlongs
      if (b0 == 0xed) hi = 0x9f;  // no surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      length = 4;
      if (b0 == 0xf0) lo = 0x90;  // no overlongs
      if (b0 == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      const unsigned char min = k == 1 ? lo : static_cast<unsigned char>(0x80);
      const unsigned char max = k == 1 ? hi : static_cast<unsigned char>(0xbf);
      if (b < min || b > max) return false;
    }
    i += length;
  }
  return true;
}

Result<json> parse_json_strict(std::string_view bytes) {
  StrictSax sax;
  return parse_with(bytes, sax);
}

namespace {
Result<json> parse_with(std::string_view bytes, StrictSax& sax) {
  if (bytes.empty()) {
    return make_error(ErrorCode::corrupt, "empty file: expected a JSON document", "1:1");
  }
  bool ok = false;
  try {
    ok = json::sax_parse(bytes.begin(), bytes.end(), &sax, json::input_format_t::json, true);
  } catch (const json::exception& e) {
    // sax_parse reports through parse_error; anything thrown is unexpected input.
    return make_error(ErrorCode::corrupt, "invalid JSON: " + printable(e.what()));
  }
  if (sax.error_) {
    Error e = *sax.error_;
    if (sax.error_position_) e.where = line_column(bytes, *sax.error_position_);
    return e;
  }
  if (!ok) return make_error(ErrorCode::corrupt, "invalid JSON");
  return std::move(sax.root);
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
                                  "next_retry_at", "next_action",  "stalled_count", "last_error"};
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

namespace {

constexpr std::string_view kSnapshotChecksumPrefix = "crc32c=";

// The snapshot without its checksum key: what format 1 wrote before the
// checksum existed, and what the checksum covers.
std::string encode_state_body(const StateDocument& document) {
  std::string out = fmt::format("{{\"format\":{},\"journal_seq\":{},\"jobs\":{{", kStateFormat,
                                document.journal_seq);
  bool first = true;
  for (const auto& [id, state] : document.jobs) {
    REHEARSE_ASSERT(id == state.job_id);
    out += first ? "\n" : ",\n";
    first = false;
    out += json(id).dump(-1, ' ', false, kStrictDump);
    out += ":";
    out += encode_job(state).dump(-1, ' ', false, kStrictDump);
  }
  out += first ? "}}\n" : "\n}}\n";
  return out;
}

// The snapshot's "checksum" (docs/state-file.md): crc32c of the canonical
// encoding of what was decoded, so whitespace and key order stay free and
// any changed value is caught. Absent in snapshots written before it existed.
Status check_snapshot_checksum(const json& value, const StateDocument& document) {
  std::string_view text;
  if (value.is_string()) text = value.get_ref<const std::string&>();
  std::string_view rest = text;
  const auto stored = take_literal(rest, kSnapshotChecksumPrefix) ? take_hex8(rest) : std::nullopt;
  if (!stored || !rest.empty()) {
    return schema("/checksum",
                  "expected \"crc32c=<8 lowercase hex digits>\", got " +
                      (value.is_string() ? "\"" + printable(text) + "\"" : type_of(value)));
  }
  const std::uint32_t computed = crc32c(encode_state_body(document));
  if (computed != *stored) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("checksum mismatch (stored {}, computed {}): the snapshot was "
                                  "altered after it was written",
                                  hex8(*stored), hex8(computed)),
                      "/checksum");
  }
  return {};
}

}  // namespace

std::string encode_state(const StateDocument& document) {
  std::string out = encode_state_body(document);
  const std::uint32_t crc = crc32c(out);
  // "...}\n" becomes "...,\"checksum\":\"crc32c=xxxxxxxx\"}\n": the last key.
  REHEARSE_ASSERT(out.size() >= 2 && out.compare(out.size() - 2, 2, "}\n") == 0);
  out.resize(out.size() - 2);
  out += fmt::format(",\"checksum\":\"{}{}\"}}\n", kSnapshotChecksumPrefix, hex8(crc));
  return out;
}

Result<StateDocument> decode_state(std::string_view bytes) {
  // Jobs are decoded one by one while the document is parsed; the first
  // job error (in document order) is reported after the document-level
  // checks, so that e.g. a newer format says so first.
  StateDocument document;
  std::optional<Error> job_error;
  StrictSax sax;
  sax.on_job = [&](const std::string& id, json&& record) {
    if (job_error) return;
    const std::string where = "/jobs/" + json_pointer_token(id);
    auto state = decode_job(record, where);
    if (!state.ok()) {
      job_error = std::move(state).error();
      return;
    }
    if (state->job_id != id) {
      job_error =
          schema(where + "/job_id", fmt::format("expected the job id \"{}\" (its key), got \"{}\"",
                                                printable(id), printable(state->job_id)));
      return;
    }
    document.jobs.emplace(id, std::move(*state));
  };
  auto parsed = parse_with(bytes, sax);
  if (!parsed.ok()) return std::move(parsed).error();
  const json& root = *parsed;
  if (!root.is_object()) {
    return schema("",
                  "expected the state document, an object {\"format\": 1, \"journal_seq\": "
                  "N, \"jobs\": {...}}, got " +
                      type_of(root));
  }
  // The format first, so that a newer file says so instead of "unknown key".
  if (!root.contains("format")) return schema("", "missing key \"format\" in the state document");
  if (auto format = read_integer(root.at("format"), "/format", kStateFormat, kStateFormat,
                                 "the state format version 1");
      !format.ok()) {
    return std::move(format).error();
  }
  static const std::vector<std::string> top_keys = {"checksum", "format", "jobs", "journal_seq"};
  // "checksum" is absent from snapshots written before it existed.
  if (auto s = check_keys(root, "", top_keys, "the state document", {"checksum"}); !s.ok()) {
    return s.error();
  }
  std::int64_t seq = 0;
  REHEARSE_READ(seq, read_integer(root.at("journal_seq"), "/journal_seq", 0,
                                  std::numeric_limits<std::int64_t>::max(),
                                  "the journal sequence number"));
  document.journal_seq = static_cast<std::uint64_t>(seq);
  const json& jobs = root.at("jobs");
  if (!jobs.is_object()) {
    return schema("/jobs",
                  "expected an object of job records keyed by job id, got " + type_of(jobs));
  }
  if (job_error) return *job_error;
  for (const auto& [id, record] : jobs.items()) {
    if (record == job_placeholder()) continue;  // decoded while parsing
    // Not a container, so never handed over: not a job record either.
    auto state = decode_job(record, "/jobs/" + json_pointer_token(id));
    REHEARSE_ASSERT(!state.ok());
    return std::move(state).error();
  }
  REHEARSE_ASSERT_EQ(document.jobs.size(), jobs.size());
  if (root.contains("checksum")) {
    if (auto s = check_snapshot_checksum(root.at("checksum"), document); !s.ok()) return s.error();
  }
  return document;
}

// Slicing by 8 (eight bytes per step through eight tables, table k being
// the CRC of a byte followed by k zero bytes): the same value as the
// byte-at-a-time loop at the tail, several times faster; every write checks
// the whole journal with it (docs/state-file.md). Bytes are read one by one,
// so the result does not depend on the machine's byte order.
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) noexcept {
  using Tables = std::array<std::array<std::uint32_t, 256>, 8>;
  static const Tables tables = [] {
    Tables t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
      t[0][i] = c;
    }
    for (std::size_t k = 1; k < t.size(); ++k) {
      for (std::size_t i = 0; i < 256; ++i) {
        t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffU];
      }
    }
    return t;
  }();
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]));
  };
  crc = ~crc;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint32_t lo =
        crc ^ (byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24);
    const std::uint32_t hi = byte(i + 4) | byte(i + 5) << 8 | byte(i + 6) << 16 | byte(i + 7) << 24;
    crc = tables[7][lo & 0xffU] ^ tables[6][(lo >> 8) & 0xffU] ^ tables[5][(lo >> 16) & 0xffU] ^
          tables[4][lo >> 24] ^ tables[3][hi & 0xffU] ^ tables[2][(hi >> 8) & 0xffU] ^
          tables[1][(hi >> 16) & 0xffU] ^ tables[0][hi >> 24];
  }
  for (; i < bytes.size(); ++i) crc = tables[0][(crc ^ byte(i)) & 0xffU] ^ (crc >> 8);
  return ~crc;
}

std::string encode_journal_header(std::uint64_t base_seq) {
  const std::string covered = fmt::format("{}{} base={}", kHeaderPrefix, kJournalFormat, base_seq);
  return fmt::format("{} crc32c={}\n", covered, hex8(crc32c(covered)));
}

std::string encode_journal_record(std::uint64_t seq, const JobState& state) {
  REHEARSE_ASSERT(seq >= 1);
  const std::string payload = encode_job(state).dump(-1, ' ', false, kStrictDump);
  std::string line = fmt::format("{} {} {}", seq, payload.size(), payload);
  line += fmt::format(" {}\n", hex8(crc32c(line)));
  return line;
}

Result<JournalScan> decode_journal_region(std::string_view bytes, std::uint64_t offset,
                                          std::uint64_t line, std::uint64_t first_seq) {
  JournalScan scan;
  scan.valid_end = offset;
  std::uint64_t expected = first_seq;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t newline = bytes.find('\n', pos);
    std::optional<Error> bad;  // why [pos, ...) is not an intact record
    if (newline == std::string_view::npos) {
      bad = make_error(ErrorCode::corrupt, "unterminated record (no newline before end of file)");
    } else {
      auto frame = parse_frame(bytes.substr(pos, newline - pos));
      if (!frame.ok()) {
        bad = std::move(frame).error();
      } else {
        // An intact frame is no torn write: anything wrong with it now is corruption.
        if (frame->seq != expected) {
          return at_line(make_error(ErrorCode::corrupt,
                                    fmt::format("expected record sequence number {}, got {}",
                                                expected, frame->seq)),
                         line);
        }
        auto payload = parse_json_strict(frame->payload);
        if (!payload.ok()) {
          Error e = std::move(payload).error();
          e.message = "record payload: " + e.message;
          e.where.clear();
          return at_line(std::move(e), line);
        }
        auto state = decode_job(*payload, "");
        if (!state.ok()) return at_line(std::move(state).error(), line);
        JournalRecord record;
        record.seq = frame->seq;
        record.state = std::move(*state);
        record.offset = offset + pos;
        record.end = offset + newline + 1;
        record.line = line;
        scan.records.push_back(std::move(record));
        scan.valid_end = offset + newline + 1;
        ++expected;
        ++line;
        pos = newline + 1;
        continue;
      }
    }
    // [pos, end) starts with a record that is not intact. It is a torn tail
    // only if it can be what one interrupted append left behind.
    const std::string_view region = bytes.substr(pos);
    if (intact_record_follows(region)) {
      Error e = *bad;
      e.message = "bad record before intact ones (not a torn tail): " + e.message;
      return at_line(std::move(e), line);
    }
    if (const auto announced = announced_size(region); announced && region.size() > *announced) {
      Error e = *bad;
      e.message = fmt::format(
          "bad last record followed by {} more bytes than it announces (not "
          "a torn tail): {}",
          region.size() - *announced, e.message);
      return at_line(std::move(e), line);
    }
    scan.torn_tail = TornTail{offset + pos, region.size(), line, bad->message};
    break;
  }
  return scan;
}

Result<JournalHeader> decode_journal_header(std::string_view bytes) {
  const std::size_t newline = bytes.find('\n');
  const auto bad_header = [&](const std::string& why) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("bad journal header ({}); expected \"{}{} base=<seq> "
                                  "crc32c=<8 hex>\"",
                                  why, kHeaderPrefix, kJournalFormat),
                      "line 1");
  };
  if (newline == std::string_view::npos) {
    return bad_header(bytes.empty() ? "empty file" : "no newline");
  }
  std::string_view header = bytes.substr(0, newline);
  const std::string_view whole_header = header;
  if (!take_literal(header, kHeaderPrefix)) return bad_header("unknown prefix");
  const auto format = take_decimal(header);
  if (!format) return bad_header("no format number");
  if (*format != static_cast<std::uint64_t>(kJournalFormat)) {
    return bad_header(fmt::format("unsupported format {}", *format));
  }
  if (!take_literal(header, " base=")) return bad_header("no base");
  const auto base = take_decimal(header);
  if (!base) return bad_header("bad base sequence number");
  const std::string_view covered = whole_header.substr(0, whole_header.size() - header.size());
  if (!take_literal(header, " crc32c=")) return bad_header("no checksum");
  const auto stored = take_hex8(header);
  if (!stored || !header.empty()) return bad_header("bad checksum field");
  if (crc32c(covered) != *stored) return bad_header("checksum mismatch");
  return JournalHeader{*base, newline + 1};
}

Result<JournalScan> decode_journal(std::string_view bytes) {
  auto header = decode_journal_header(bytes);
  if (!header.ok()) return std::move(header).error();
  auto scan =
      decode_journal_region(bytes.substr(header->length), header->length, 2, header->base_seq + 1);
  if (!scan.ok()) return scan;
  scan->base_seq = header->base_seq;
  scan->header_length = header->length;
  return scan;
}

}  // namespace rehearse
