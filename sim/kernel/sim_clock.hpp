// SimClock: the Clock port on the simulator's virtual time.
//
// now() is the time of the event being executed. sleep_until(t) schedules a
// wake-up event at max(t, now) for the sleeping coroutine's process and
// suspends; the executor resumes it from the event queue. A deadline already
// past still suspends (FIFO behind the events already due now), so every sleep
// is a suspension point where a crash can cut the process. If the sleeping
// frame is destroyed first (a crash, or its owner dropping the task), the
// wake-up is cancelled with it.
#pragma once

#include "model/ports.hpp"

namespace rehearse::sim {

class Simulator;

class SimClock final : public Clock {
 public:
  explicit SimClock(Simulator& simulator) noexcept : simulator_(simulator) {}

  TimeMs now() const override;
  Task<void> sleep_until(TimeMs deadline_ms) override;
  // An event at now() (label "notify") for the current process; the id is
  // the event's tag.
  WakeId schedule_wake(std::coroutine_handle<> handle) override;
  bool cancel_wake(WakeId id) override;

 private:
  Simulator& simulator_;
};

}  // namespace rehearse::sim
