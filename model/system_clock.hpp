// SystemClock: the Clock port on the real wall clock (production adapter).
//
// One of the two files in model/ allowed to read the wall clock (with
// real_driver.cpp, which sleeps). now() is UTC milliseconds since the epoch
// from std::chrono::system_clock, clamped so it never goes backwards for one
// clock object (a wall-clock step back reads as time standing still).
// sleep_until registers a timer with the RealDriver that runs the coroutine;
// the driver resumes the sleeper when the wall clock reaches the deadline.
#pragma once

#include "model/ports.hpp"

namespace rehearse {

class RealDriver;

class SystemClock final : public Clock {
 public:
  explicit SystemClock(RealDriver& driver) noexcept : driver_(driver) {}

  // The raw wall clock, unclamped.
  static TimeMs wall_now_ms() noexcept;

  TimeMs now() const override;
  Task<void> sleep_until(TimeMs deadline_ms) override;
  // A driver timer due now(): resumed from the driver's loop behind the
  // timers already due; the id is the timer id.
  WakeId schedule_wake(std::coroutine_handle<> handle) override;
  bool cancel_wake(WakeId id) override;

 private:
  RealDriver& driver_;
  mutable TimeMs last_ms_ = 0;
};

}  // namespace rehearse
