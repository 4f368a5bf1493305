#include "sim/world/worker_clock.hpp"

#include <algorithm>

#include "model/assert.hpp"
#include "sim/kernel/simulator.hpp"

namespace rehearse::sim {

void WorkerClock::add_step(TimeMs at, DurationMs by) {
  REHEARSE_ASSERT_NE(by, 0);
  const auto later = std::upper_bound(steps_.begin(), steps_.end(), at,
                                      [](TimeMs t, const std::pair<TimeMs, DurationMs>& step) {
                                        return t < step.first;
                                      });
  steps_.insert(later, {at, by});
}

DurationMs WorkerClock::offset_at(TimeMs t) const noexcept {
  DurationMs offset = 0;
  for (const auto& [at, by] : steps_) {
    if (at > t) break;
    offset += by;
  }
  return offset;
}

std::optional<TimeMs> WorkerClock::next_step_after(TimeMs t) const noexcept {
  for (const auto& [at, by] : steps_) {
    if (at > t) return at;
  }
  return std::nullopt;
}

TimeMs WorkerClock::now() const {
  const TimeMs t = simulator_.now();
  return steps_.empty() ? t : t + offset_at(t);
}

Task<void> WorkerClock::sleep_until(TimeMs deadline_ms) {
  // Without steps the wall clock is the simulator's: the same events as ever.
  if (steps_.empty()) return simulator_.clock().sleep_until(deadline_ms);
  return stepped_sleep(deadline_ms);
}

Task<void> WorkerClock::stepped_sleep(TimeMs deadline_ms) {
  Clock& truth = simulator_.clock();
  while (true) {
    const TimeMs t = simulator_.now();
    // When the clock, as it runs now, reaches the deadline.
    const TimeMs reached = deadline_ms - offset_at(t);
    const auto step = next_step_after(t);
    if (!step || *step >= reached) {
      co_await truth.sleep_until(reached);
      co_return;
    }
    co_await truth.sleep_until(*step);
    // A step forward may have carried the clock past the deadline.
    if (now() >= deadline_ms) co_return;
  }
}

Clock::WakeId WorkerClock::schedule_wake(std::coroutine_handle<> handle) {
  return simulator_.clock().schedule_wake(handle);
}

bool WorkerClock::cancel_wake(WakeId id) { return simulator_.clock().cancel_wake(id); }

}  // namespace rehearse::sim
