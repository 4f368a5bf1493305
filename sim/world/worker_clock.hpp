// The worker machine's wall clock: the simulator's time plus every clock step
// (fault kind `clock_step`) whose instant has come. The worker processes, and
// their lock, read it; the services keep true time. Sleeps follow the wall
// clock as an absolute CLOCK_REALTIME sleep does: a step forward ends a sleep
// sooner, a step back later (docs/semantics.md §4 "Clock steps").
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "model/ports.hpp"

namespace rehearse::sim {

class Simulator;

class WorkerClock final : public Clock {
 public:
  explicit WorkerClock(Simulator& simulator) noexcept : simulator_(simulator) {}

  // From `at` on the clock reads `by` more (before the run starts).
  void add_step(TimeMs at, DurationMs by);
  // What the clock reads minus true time at true instant `t`.
  DurationMs offset_at(TimeMs t) const noexcept;

  TimeMs now() const override;
  Task<void> sleep_until(TimeMs deadline_ms) override;
  WakeId schedule_wake(std::coroutine_handle<> handle) override;
  bool cancel_wake(WakeId id) override;

 private:
  // Wakes at each step before the deadline to read the clock again.
  Task<void> stepped_sleep(TimeMs deadline_ms);
  std::optional<TimeMs> next_step_after(TimeMs t) const noexcept;

  Simulator& simulator_;
  std::vector<std::pair<TimeMs, DurationMs>> steps_;  // by instant, then by order added
};

}  // namespace rehearse::sim
