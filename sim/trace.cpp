#include "sim/trace.hpp"

#include <fmt/format.h>

#include <charconv>

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

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

std::string to_json_line(const TraceEvent& e) {
  // nlohmann::ordered_json keeps insertion order, so the line has a fixed
  // key order; the data object (a std::map-backed json) is already sorted.
  nlohmann::ordered_json line;
  line["t"] = format_instant(e.t);
  line["seq"] = e.seq;
  line["type"] = e.type;
  if (!e.job.empty()) line["job"] = e.job;
  if (e.slot) line["slot"] = format_instant(*e.slot);
  if (!e.item.empty()) line["item"] = e.item;
  if (!e.service.empty()) line["service"] = e.service;
  for (auto it = e.data.begin(); it != e.data.end(); ++it) {
    line[it.key()] = it.value();
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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

std::size_t Trace::record(TraceEvent e) {
  e.seq = next_seq_++;
  attempt_as_number(e.data);
  const std::string line = to_json_line(e);
  hash_ = fnv1a64(line, hash_);
  hash_ = fnv1a64("\n", hash_);
  events_.push_back(std::move(e));
  const std::size_t index = events_.size() - 1;
  // A listener may record an event of its own (the world decoding the disk
  // after an fsync): it is appended now and handed to the listeners after
  // the current one has been seen by all of them, in order.
  pending_.push_back(index);
  if (dispatching_) return index;
  dispatching_ = true;
  while (!pending_.empty()) {
    const std::size_t next = pending_.front();
    pending_.pop_front();
    // Looked up per listener: events_ may have grown under the previous one
    // (a listener that records must not use its event after recording).
    for (const auto& listener : listeners_) listener(events_[next], next);
  }
  dispatching_ = false;
  return index;
}

std::string Trace::to_jsonl() const {
  std::string out;
  for (const auto& e : events_) {
    out += to_json_line(e);
    out += '\n';
  }
  return out;
}

}  // namespace rehearse::sim
