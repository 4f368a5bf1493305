// The worker machine's wall clock as the world recorded it: the instant and
// size of each clock step from its `fault_start` event (kind clock_step,
// by_ms), never the core's own reading of its clock. Monitors that judge a
// wait the core measures on that clock (a backoff, a schedule's due slots)
// measure it on this table's reading (docs/semantics.md §4 "Clock steps").
#pragma once

#include <utility>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

class WallClockTable {
 public:
  // A clock_step's fault_start; other events are ignored.
  void observe(const TraceEvent& e);
  // What the machine's clock read at true instant `t`.
  TimeMs wall(TimeMs t) const noexcept;
  // The most the clock has read by true instant `t`: after a step back, the
  // reading just before it until the clock climbs past it again.
  TimeMs high_water(TimeMs t) const noexcept;
  // The first true instant at or after `from` at which the clock reads at
  // least `reading`: when a sleep until that reading, begun by `from`, ends.
  TimeMs reached(TimeMs reading, TimeMs from) const noexcept;
  bool stepped() const noexcept { return !steps_.empty(); }

 private:
  std::vector<std::pair<TimeMs, DurationMs>> steps_;  // in trace order: by instant
};

}  // namespace rehearse::sim
