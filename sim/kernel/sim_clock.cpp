#include "sim/kernel/sim_clock.hpp"

#include <algorithm>

#include "sim/kernel/simulator.hpp"

namespace rehearse::sim {
namespace {

// Lives in the sleeping coroutine's frame: schedules the wake-up when the
// coroutine suspends and cancels it if the frame is destroyed before it fires.
class WakeUp {
 public:
  WakeUp(Simulator& simulator, TimeMs at_ms) noexcept : simulator_(simulator), at_ms_(at_ms) {}
  WakeUp(const WakeUp&) = delete;
  WakeUp& operator=(const WakeUp&) = delete;
  ~WakeUp() {
    if (id_) simulator_.cancel(id_);
  }

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> sleeper) {
    // One wake-up per sleep: await_resume cleared the previous one's id.
    REHEARSE_ASSERT(!id_);
    id_ = simulator_.schedule_resume(std::max(at_ms_, simulator_.now()), sleeper, "wake");
  }
  void await_resume() noexcept { id_ = EventId{}; }

 private:
  Simulator& simulator_;
  TimeMs at_ms_;
  EventId id_;
};

}  // namespace

TimeMs SimClock::now() const { return simulator_.now(); }

Task<void> SimClock::sleep_until(TimeMs deadline_ms) {
  // A named local, not a temporary: its destructor must run when a crash
  // destroys this frame at the co_await below.
  WakeUp wake(simulator_, deadline_ms);
  co_await wake;
}

Clock::WakeId SimClock::schedule_wake(std::coroutine_handle<> handle) {
  return simulator_.schedule_resume(simulator_.now(), handle, "notify").tag;
}

bool SimClock::cancel_wake(WakeId id) { return id != 0 && simulator_.cancel(EventId{id}); }

}  // namespace rehearse::sim
