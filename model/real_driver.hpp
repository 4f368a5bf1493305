// RealDriver: runs the core's coroutines on the real clock (production
// adapter), so the core is not simulator-only.
//
// Single-threaded and minimal: run(task) starts the task, then repeatedly
// takes the earliest pending timer (ties in registration order), sleeps the
// thread until its deadline, and resumes the coroutine that waits on it,
// until the task is done. As in the simulator, suspended coroutines are only
// ever resumed from this loop, never inline from another coroutine.
//
// Its only source of wake-ups is its own SystemClock's timers: a task that
// waits on anything else (a port whose adapter needs an I/O loop) would wait
// forever, so run() reports it as an error instead of blocking.
// One of the two files in model/ allowed to sleep (with system_clock.cpp).
#pragma once

#include <coroutine>
#include <cstdint>
#include <map>
#include <utility>

#include "model/result.hpp"
#include "model/system_clock.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

class RealDriver {
 public:
  using TimerId = std::uint64_t;  // 0 is never a timer

  RealDriver() noexcept : clock_(*this) {}
  RealDriver(const RealDriver&) = delete;
  RealDriver& operator=(const RealDriver&) = delete;

  // The Clock port to hand to the core; its sleeps are this driver's timers.
  SystemClock& clock() noexcept { return clock_; }

  // Runs `task` to completion. A value or Status on success; an `internal`
  // error when the task waits on something no timer will ever resume. An
  // exception that ends the task is rethrown here.
  template <typename T>
  Result<T> run(Task<T> task) {
    Status driven = drive(task.start_handle(), [&task] { return task.done(); });
    if (!driven.ok()) return std::move(driven).error();
    return task.take_result();
  }
  Status run(Task<void> task) {
    Status driven = drive(task.start_handle(), [&task] { return task.done(); });
    if (!driven.ok()) return driven;
    task.take_result();
    return {};
  }

  // Runs `task` until it is done or the wall clock reaches `deadline_ms`,
  // whichever comes first: true when it finished. A task that never finishes
  // by itself (a worker's scheduler loop) is left suspended at the deadline;
  // the caller destroys it (its sleeps cancel their timers).
  Result<bool> run_until(Task<void>& task, TimeMs deadline_ms);

  // For the SystemClock: resume `handle` once the wall clock reaches at_ms.
  TimerId add_timer(TimeMs at_ms, std::coroutine_handle<> handle);
  bool cancel_timer(TimerId id);
  std::size_t timer_count() const noexcept { return handles_.size(); }

 private:
  template <typename Done>
  Status drive(std::coroutine_handle<> start, Done done) {
    start.resume();
    while (!done()) {
      if (!resume_next_timer()) {
        return make_error(ErrorCode::internal,
                          "task is suspended but no timer is pending: it waits on something "
                          "the real driver cannot resume");
      }
    }
    return {};
  }
  // Sleeps until the earliest timer is due and resumes its coroutine; false
  // when no timer is pending.
  bool resume_next_timer();

  SystemClock clock_;
  std::map<std::pair<TimeMs, TimerId>, std::coroutine_handle<>> timers_;  // (due, id) order
  std::map<TimerId, TimeMs> handles_;                                     // id -> due
  TimerId next_id_ = 1;
};

}  // namespace rehearse
