#include "sim/monitors/wall_clock.hpp"

#include <algorithm>

#include "model/assert.hpp"

namespace rehearse::sim {

void WallClockTable::observe(const TraceEvent& e) {
  if (e.type != "fault_start" || e.str("kind") != "clock_step") return;
  const DurationMs by = e.num("by_ms");
  if (by == 0) return;  // the loader refuses a zero step; a hand-made trace may not
  // The trace is in time order, so the table is too.
  REHEARSE_ASSERT(steps_.empty() || steps_.back().first <= e.t);
  steps_.emplace_back(e.t, by);
}

TimeMs WallClockTable::wall(TimeMs t) const noexcept {
  TimeMs reading = t;
  for (const auto& [at, by] : steps_) {
    if (at > t) break;
    reading += by;
  }
  return reading;
}

TimeMs WallClockTable::high_water(TimeMs t) const noexcept {
  TimeMs most = wall(t);
  DurationMs offset = 0;
  for (const auto& [at, by] : steps_) {
    if (at > t) break;
    if (by < 0) most = std::max(most, at - 1 + offset);
    offset += by;
  }
  return most;
}

TimeMs WallClockTable::reached(TimeMs reading, TimeMs from) const noexcept {
  DurationMs offset = wall(from) - from;
  for (const auto& [at, by] : steps_) {
    if (at <= from) continue;
    // Before this step the clock runs at `offset`.
    if (reading - offset < at) return std::max(reading - offset, from);
    offset += by;
    if (at + offset >= reading) return at;  // the step carried it there
  }
  return std::max(reading - offset, from);
}

}  // namespace rehearse::sim
