// Part of queue_discipline (docs/worker.md, "One acting worker"): a standby
// asks for the worker lock every `queue.standby_poll`, so once the holder's
// lock is gone a standby that stays up holds it at most one poll interval
// later. Reads the disk's records of the lock (`disk_lock` / `disk_unlock`
// of a `worker.lock`, and the locks a crash releases) and the processes'
// boots and crashes; never the core's `worker_lock_taken`.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "model/time.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/wall_clock.hpp"

namespace rehearse::sim {

class TakeoverWatch {
 public:
  // `clock`: the machine's clock, on which a standby's poll sleeps.
  TakeoverWatch(const char* invariant, DurationMs poll_ms, const WallClockTable& clock);

  void observe(const TraceEvent& e, std::size_t i, Violations& out);
  void finish(TimeMs until, std::size_t index, Violations& out);

 private:
  // The lock free since `since`, with the standbys up at that instant.
  struct Vacancy {
    TimeMs since = 0;
    std::set<std::int64_t> standbys;
  };

  void release(TimeMs t, std::int64_t holder);
  void check_deadline(TimeMs t, std::size_t i, Violations& out);

  const char* invariant_;
  DurationMs poll_ms_;
  const WallClockTable& clock_;
  std::set<std::int64_t> up_;           // processes alive, by pid
  std::optional<std::int64_t> holder_;  // the worker lock's holder
  std::optional<Vacancy> vacancy_;
};

}  // namespace rehearse::sim
