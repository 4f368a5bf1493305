#include "sim/kernel/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "model/assert.hpp"

namespace rehearse::sim {

std::string TraceEvent::str(std::string_view key, std::string fallback) const {
  const auto it = data.find(key);
  if (it == data.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

std::int64_t TraceEvent::num(std::string_view key, std::int64_t fallback) const {
  const auto it = data.find(key);
  if (it == data.end() || !it->is_number_integer()) return fallback;
  return it->get<std::int64_t>();
}

bool TraceEvent::flag(std::string_view key) const {
  const auto it = data.find(key);
  return it != data.end() && it->is_boolean() && it->get<bool>();
}

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state) {
  for (const char c : bytes) {
    state ^= static_cast<unsigned char>(c);
    state *= 1099511628211ull;
  }
  return state;
}

std::string hex64(std::uint64_t v) {
  std::string text = fmt::format("{:016x}", v);
  REHEARSE_ASSERT_EQ(text.size(), 16u);  // fixed width: hashes compare as text
  return text;
}

namespace {

using nlohmann::json;
constexpr auto kReplace = json::error_handler_t::replace;

// Text nlohmann's serializer writes unchanged: printable ASCII without '"'
// or '\\'. Anything else (escapes, UTF-8, invalid bytes) goes through the
// serializer itself, so the bytes are its bytes.
bool plain_text(std::string_view text) {
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7E || c == '"' || c == '\\') return false;
  }
  return true;
}

void append_string(std::string& out, std::string_view text) {
  if (!plain_text(text)) {
    out += json(std::string(text)).dump(-1, ' ', false, kReplace);
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

template <typename Integer>
void append_integer(std::string& out, Integer v) {
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  // 24 bytes hold every 64-bit integer.
  REHEARSE_ASSERT(ec == std::errc());
  out.append(buffer, end);
}

void append_value(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::string: return append_string(out, v.get_ref<const std::string&>());
    case json::value_t::number_integer: return append_integer(out, v.get<std::int64_t>());
    case json::value_t::number_unsigned: return append_integer(out, v.get<std::uint64_t>());
    case json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case json::value_t::null: out += "null"; return;
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        append_string(out, it.key());
        out += ':';
        append_value(out, it.value());
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ',';
        append_value(out, v[i]);
      }
      out += ']';
      return;
    }
    default:  // floats, binary: the serializer's own form
      out += v.dump(-1, ' ', false, kReplace);
  }
}

// format_instant of the last instant seen: consecutive events share it.
const std::string& instant_text(TimeMs t) {
  thread_local TimeMs last = 0;
  thread_local std::string text = format_instant(0);
  if (t != last) {
    last = t;
    text = format_instant(t);
  }
  return text;
}

// One of the line's leading keys ("t" first, the others after a comma). A
// data field of the same name takes the key's place with its own value (what
// assigning it to the ordered document did), and is not written again among
// the data fields.
template <typename Write>
void append_head_field(std::string& out, const json& data, const char* key, Write write) {
  REHEARSE_ASSERT(key != nullptr && key[0] != '\0');
  if (key[0] != 't' || key[1] != '\0') out += ',';
  out += '"';
  out += key;
  out += "\":";
  const auto it = data.find(key);
  if (it != data.end()) {
    append_value(out, *it);
  } else {
    write();
  }
}

bool is_head_key(const TraceEvent& e, std::string_view key) {
  return key == "t" || key == "seq" || key == "type" || (key == "job" && !e.job.empty()) ||
         (key == "slot" && e.slot) || (key == "item" && !e.item.empty()) ||
         (key == "service" && !e.service.empty());
}

}  // namespace

void append_json_line(std::string& out, const TraceEvent& e) {
  const json& d = e.data;
  const std::size_t start = out.size();
  out += '{';
  append_head_field(out, d, "t", [&] { append_string(out, instant_text(e.t)); });
  append_head_field(out, d, "seq", [&] { append_integer(out, e.seq); });
  append_head_field(out, d, "type", [&] { append_string(out, e.type); });
  if (!e.job.empty()) append_head_field(out, d, "job", [&] { append_string(out, e.job); });
  if (e.slot) {
    append_head_field(out, d, "slot", [&] { append_string(out, format_instant(*e.slot)); });
  }
  if (!e.item.empty()) append_head_field(out, d, "item", [&] { append_string(out, e.item); });
  if (!e.service.empty()) {
    append_head_field(out, d, "service", [&] { append_string(out, e.service); });
  }
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (is_head_key(e, it.key())) continue;
    out += ',';
    append_string(out, it.key());
    out += ':';
    append_value(out, it.value());
  }
  out += '}';
  // The fixed key order: every line opens with its time.
  REHEARSE_ASSERT_EQ(out.compare(start, 5, R"({"t":)"), 0);
}

std::string to_json_line(const TraceEvent& e) {
  std::string line;
  append_json_line(line, e);
  return line;
}

namespace {

// `attempt` is a count, so a number in every event: the simulated services
// read it from a request header, where it is text.
void attempt_as_number(nlohmann::json& data) {
  const auto it = data.find("attempt");
  if (it == data.end() || !it->is_string()) return;
  const std::string& text = it->get_ref<const std::string&>();
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (!text.empty() && ec == std::errc() && ptr == end) *it = v;
}

}  // namespace

void Trace::hash_event(const TraceEvent& e) {
  line_.clear();
  append_json_line(line_, e);
  line_ += '\n';
  hash_ = fnv1a64(line_, hash_);
}

std::size_t Trace::record(TraceEvent e) {
  e.seq = next_seq_;
  attempt_as_number(e.data);
  const auto index = static_cast<std::size_t>(e.seq);
  if (keep_ == TraceKeep::all) {
    // A kept trace is dense: event i sits at index i (dispatch_kept and the
    // monitors look events up by it).
    REHEARSE_ASSERT_EQ(events_.size(), index);
    // Kept before the sequence moves on: when growing the trace runs out of
    // memory, the trace is as it was, and the records made while the run
    // unwinds (a lock released) still find it dense.
    events_.push_back(std::move(e));
    ++next_seq_;
    hash_event(events_.back());
    dispatch_kept(index);
  } else {
    REHEARSE_ASSERT(events_.empty());  // TraceKeep::none keeps nothing
    ++next_seq_;
    hash_event(e);
    dispatch_streamed(std::move(e));
  }
  return index;
}

// A listener may record an event of its own (the world decoding the disk
// after an fsync): it is appended now and handed to the listeners after the
// current one has been seen by all of them, in order.
void Trace::dispatch_kept(std::size_t index) {
  REHEARSE_ASSERT_LT(index, events_.size());  // record kept the event first
  pending_.push_back(index);
  if (dispatching_) return;
  dispatching_ = true;
  while (!pending_.empty()) {
    const std::size_t next = pending_.front();
    pending_.pop_front();
    REHEARSE_ASSERT_LT(next, events_.size());
    // Looked up per listener: events_ may have grown under the previous one
    // (a listener that records must not use its event after recording).
    for (const auto& listener : listeners_) listener(events_[next], next);
  }
  dispatching_ = false;
}

void Trace::dispatch_streamed(TraceEvent e) {
  REHEARSE_ASSERT_LT(e.seq, next_seq_);  // record assigned its seq
  pending_events_.push_back(std::move(e));
  if (dispatching_) return;
  dispatching_ = true;
  std::optional<std::uint64_t> previous;
  while (!pending_events_.empty()) {
    const TraceEvent& next = pending_events_.front();
    // Handed out in recording order, each once.
    if (previous) REHEARSE_ASSERT_GT(next.seq, *previous);
    previous = next.seq;
    for (const auto& listener : listeners_) listener(next, static_cast<std::size_t>(next.seq));
    pending_events_.pop_front();
  }
  dispatching_ = false;
}

Trace Trace::take() {
  Trace out(keep_);
  out.events_ = std::move(events_);
  out.next_seq_ = next_seq_;
  out.hash_ = hash_;
  *this = Trace(keep_);
  // A kept trace holds every recorded event; a streamed one none.
  REHEARSE_ASSERT_EQ(out.events_.size(), out.keep_ == TraceKeep::all ? out.size() : 0u);
  return out;
}

std::string Trace::to_jsonl() const {
  std::string out;
  for (const auto& e : events_) {
    append_json_line(out, e);
    out += '\n';
  }
  // One line per event: a JSON line never holds a raw newline.
  REHEARSE_ASSERT_EQ(static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')),
                     events_.size());
  return out;
}

}  // namespace rehearse::sim
