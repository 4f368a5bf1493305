#include "model/real_driver.hpp"

#include <chrono>
#include <thread>

namespace rehearse {

RealDriver::TimerId RealDriver::add_timer(TimeMs at_ms, std::coroutine_handle<> handle) {
  REHEARSE_ASSERT(static_cast<bool>(handle));
  const TimerId id = next_id_++;
  timers_.emplace(std::make_pair(at_ms, id), handle);
  handles_.emplace(id, at_ms);
  return id;
}

bool RealDriver::cancel_timer(TimerId id) {
  const auto it = handles_.find(id);
  if (it == handles_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  handles_.erase(it);
  return true;
}

Result<bool> RealDriver::run_until(Task<void>& task, TimeMs deadline_ms) {
  task.start_handle().resume();
  while (!task.done()) {
    if (timers_.empty()) {
      return make_error(ErrorCode::internal,
                        "task is suspended but no timer is pending: it waits on something "
                        "the real driver cannot resume");
    }
    if (timers_.begin()->first.first > deadline_ms) {
      for (TimeMs left = deadline_ms - SystemClock::wall_now_ms(); left > 0;
           left = deadline_ms - SystemClock::wall_now_ms()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(left));
      }
      return false;
    }
    resume_next_timer();
  }
  task.take_result();
  return true;
}

bool RealDriver::resume_next_timer() {
  if (timers_.empty()) return false;
  const auto [key, handle] = *timers_.begin();
  // Sleep in slices and re-read the clock: sleep_for may return late but
  // never early, and the wall clock may be adjusted while we sleep.
  for (TimeMs remaining_ms = key.first - SystemClock::wall_now_ms(); remaining_ms > 0;
       remaining_ms = key.first - SystemClock::wall_now_ms()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(remaining_ms));
  }
  timers_.erase(timers_.begin());
  handles_.erase(key.second);
  handle.resume();
  return true;
}

}  // namespace rehearse
