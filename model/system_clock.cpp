#include "model/system_clock.hpp"

#include <algorithm>
#include <chrono>

#include "model/assert.hpp"
#include "model/real_driver.hpp"

namespace rehearse {
namespace {

// Registers the sleeper with the driver on suspension; cancels the timer if
// the frame is destroyed before it fires (the task was dropped).
class TimerWait {
 public:
  TimerWait(RealDriver& driver, TimeMs at_ms) noexcept : driver_(driver), at_ms_(at_ms) {}
  TimerWait(const TimerWait&) = delete;
  TimerWait& operator=(const TimerWait&) = delete;
  ~TimerWait() {
    if (id_ != 0) driver_.cancel_timer(id_);
  }

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> sleeper) { id_ = driver_.add_timer(at_ms_, sleeper); }
  void await_resume() noexcept { id_ = 0; }

 private:
  RealDriver& driver_;
  TimeMs at_ms_;
  RealDriver::TimerId id_ = 0;
};

}  // namespace

TimeMs SystemClock::wall_now_ms() noexcept {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
}

TimeMs SystemClock::now() const {
  last_ms_ = std::max(last_ms_, wall_now_ms());
  return last_ms_;
}

Task<void> SystemClock::sleep_until(TimeMs deadline_ms) {
  REHEARSE_ASSERT_GE(deadline_ms, 0);
  TimerWait wait(driver_, deadline_ms);  // a named local: destroyed with the frame
  co_await wait;
}

Clock::WakeId SystemClock::schedule_wake(std::coroutine_handle<> handle) {
  REHEARSE_ASSERT(static_cast<bool>(handle));
  return driver_.add_timer(now(), handle);
}

bool SystemClock::cancel_wake(WakeId id) { return driver_.cancel_timer(id); }

}  // namespace rehearse
