// Part of nothing_lost: each notification the core committed to its outbox,
// followed to the messenger (docs/semantics.md §9). A message is the queue's
// `outbox_add` (one per target, by its outbox `id`); it reaches the messenger
// as a `message_delivered` or `message_refused` of kind `notification` naming
// the same job, slot, event, attempt and target (the messenger's record
// carries no outbox id, so messages with equal fields are matched in the
// order they were committed). Two rules:
// - at least once across crashes: a message never leaves the outbox
//   (`outbox_remove`) before it reached the messenger; at the end, one that
//   never reached it fires when the acting worker has been up, without a
//   crash, for the settle bound since both its commit and its last boot (a
//   boot sends what the outbox holds at once; a run's finish sends its own
//   messages right after; each send takes the messenger's latency, well
//   under the bound);
// - a refused notification is logged, not retried: a send of a
//   notification with no committed message of its fields left unsent, after
//   the messenger refused the same notification while the same worker was
//   up (no crash between: a crash may cut a send before its removal, and the
//   next boot sends it again), fires.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

class NoticeSends {
 public:
  // Virtual time a committed message may wait for its send while the worker is up.
  static constexpr DurationMs kSettleMs = 5 * 60 * 1000;

  // `at_least_once`: judge the first rule (a scenario that declares its messenger; a
  // hand-made trace without one has no sends to match).
  NoticeSends(const char* invariant, const ProcessTracker& process, bool at_least_once)
      : invariant_(invariant), process_(process), at_least_once_(at_least_once) {}

  // The raw `outbox_add`, `outbox_remove`, `message_delivered`,
  // `message_refused`; a crash of the acting worker (after the tracker read it).
  void observe(const TraceEvent& e, std::size_t i, Violations& out);
  // Messages still unsent at `until` (each reported at its commit).
  void finish(TimeMs until, Violations& out) const;

 private:
  // job, slot (kNoSlot: none), event, attempt, target.
  using Key = std::tuple<std::string, TimeMs, std::string, std::int64_t, std::string>;
  static constexpr TimeMs kNoSlot = -1;
  static Key key_of(const TraceEvent& e);
  static std::string describe(const Key& k);

  struct Committed {
    Key key;
    std::size_t index = 0;
    TimeMs t = 0;
  };
  struct Refusal {
    std::size_t index = 0;
    TimeMs t = 0;
  };
  void on_send(const TraceEvent& e, std::size_t i, Violations& out);
  void on_remove(const TraceEvent& e, std::size_t i, Violations& out);

  const char* invariant_;
  const ProcessTracker& process_;
  bool at_least_once_;
  std::map<std::int64_t, Committed> unsent_;       // outbox id -> a message not sent yet
  std::map<Key, std::deque<std::int64_t>> order_;  // per fields: unsent ids, in commit order
  std::map<Key, Refusal> refused_;                 // last send refused, in this life of the worker
};

}  // namespace rehearse::sim
