// The trace: every observable event of a run, in virtual-time order.
//
// Written as JSON Lines (`--trace FILE`), one event per line with a fixed key
// order: t, seq, type, then job / slot / item / service when present, then the
// event's own fields sorted by name. The same scenario and seed give a
// byte-identical trace; its hash is 64-bit FNV-1a over the trace bytes.
// Monitors read these events (their own witnesses), never the core's state.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/time.hpp"

namespace rehearse::sim {

// Who recorded an event: the simulated world itself (its services, queue,
// disk, messenger, brokerage, the world runner), or the core through its Log
// port (SimLog). Kept in memory with each event (not in the JSON line, so a
// trace's bytes and hash do not change); the monitors' subscriptions are held
// to it (tests/sim/monitors/test_monitor_sources.cpp).
enum class EventSource { world, core };

struct TraceEvent {
  TimeMs t = 0;
  std::uint64_t seq = 0;  // assigned by Trace::record, strictly increasing
  std::string type;
  std::string job;                                 // empty when not about a job
  std::optional<TimeMs> slot;                      // the regular slot concerned
  std::string item;                                // reconcile item (external issue id)
  std::string service;                             // simulated service concerned
  nlohmann::json data = nlohmann::json::object();  // event-specific fields
  EventSource source = EventSource::world;         // SimLog marks the core's

  // Convenience accessors for data fields (absent -> fallback).
  std::string str(std::string_view key, std::string fallback = {}) const;
  std::int64_t num(std::string_view key, std::int64_t fallback = 0) const;
  bool flag(std::string_view key) const;
};

// 64-bit FNV-1a (offset basis 14695981039346656037, prime 1099511628211).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t state = 14695981039346656037ull);
std::string hex64(std::uint64_t v);

// Serialises one event as a JSON line (without the trailing newline).
std::string to_json_line(const TraceEvent& e);
// The same bytes appended to `out` (a buffer reused across events). Written
// directly, not through an ordered JSON document: the bytes are those
// nlohmann::ordered_json::dump(-1, ' ', false, replace) gives for the line
// (tests/sim/test_trace.cpp holds them to it), at a fraction of the cost.
void append_json_line(std::string& out, const TraceEvent& e);

// What a Trace keeps of the events it has recorded.
enum class TraceKeep : unsigned char {
  // Every event, in memory (events(), to_jsonl()): for --trace, --timeline,
  // --report, tune and tests.
  all,
  // None: each event reaches the listeners and the hash, then is dropped, so
  // memory does not grow with the run's history. events() stays empty;
  // size() and hash() still count every event.
  none,
};

class Trace {
 public:
  using Listener = std::function<void(const TraceEvent&, std::size_t index)>;

  Trace() = default;  // keeps every event; not explicit, so `{}` builds one in aggregates
  explicit Trace(TraceKeep keep) : keep_(keep) {}

  // Appends an event (assigning seq) and hands it to every listener, in the
  // order listeners were added. Returns the event's index. A listener may
  // record an event itself (it then must not use its own event after that):
  // the new one reaches the listeners after the current one, in order. A decimal text
  // `attempt` (a request header's value) is stored as the number it is.
  std::size_t record(TraceEvent e);

  void add_listener(Listener listener) {
    REHEARSE_ASSERT(static_cast<bool>(listener));  // called with every event
    listeners_.push_back(std::move(listener));
  }

  // The kept events (empty under TraceKeep::none).
  const std::vector<TraceEvent>& events() const noexcept { return events_; }
  TraceKeep keep() const noexcept { return keep_; }
  // Events recorded so far (kept or not); the next event's index.
  std::size_t size() const noexcept { return static_cast<std::size_t>(next_seq_); }
  // The recorded events and hash in a Trace of their own, without listeners
  // (this one is left empty).
  Trace take();

  // Running hash over the JSON Lines bytes (each line plus '\n').
  std::uint64_t hash() const noexcept { return hash_; }
  std::string to_jsonl() const;

 private:
  void hash_event(const TraceEvent& e);
  void dispatch_kept(std::size_t index);
  void dispatch_streamed(TraceEvent e);

  TraceKeep keep_ = TraceKeep::all;
  std::vector<TraceEvent> events_;
  std::vector<Listener> listeners_;
  std::deque<std::size_t> pending_;  // kept: recorded, not yet handed to the listeners
  // TraceKeep::none: recorded, not yet handed to every listener (a deque, so
  // that a listener's own record() leaves the event it holds in place).
  std::deque<TraceEvent> pending_events_;
  bool dispatching_ = false;
  std::uint64_t next_seq_ = 0;
  std::uint64_t hash_ = 14695981039346656037ull;
  std::string line_;  // the line being hashed (reused)
};

}  // namespace rehearse::sim
