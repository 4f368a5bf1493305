// The queue's durable promise, part of state_durable (docs/monitors.md): an
// entry the queue acknowledged (its `queue_add` recorded it added) and did not
// finish (`queue_done`) or drop (`queue_cancel`), and a message its outbox
// acknowledged (`outbox_add`) and did not remove (`outbox_remove`), is still
// in the queue when a boot reopens it. Judged at the world's `queue_reopened`
// (a world with the core's DiskJobQueue on its disk: the ids the world's own
// reader found in the file's durable bytes), never from the core's codec or
// log: an acknowledged operation that a crash took back fires there.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sim/kernel/trace.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class QueuePromise {
 public:
  // Every event the owner reads: the queue's records update what it holds.
  void note(const TraceEvent& e);
  // A `queue_reopened`: each acknowledged entry or message missing from it
  // fires (once: the promise is broken, what is left is judged from here).
  Violations check_reopened(const TraceEvent& e, std::size_t index, const char* invariant);

 private:
  struct Held {
    std::string what;  // how a message names it
    TimeMs t = 0;      // when it was acknowledged
  };
  std::map<std::uint64_t, Held> entries_;  // by entry id
  std::map<std::uint64_t, Held> outbox_;   // by message id
};

}  // namespace rehearse::sim
