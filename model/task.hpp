// Task<T>: the coroutine type of the core's sequential I/O logic.
//
// A group job, the token client, a reconcile cycle are written as coroutines
// that `co_await` the ports (model/ports.hpp). The executor that resumes them
// (the simulator in sim/, or model/real_driver.hpp in production) is not named
// here: a Task knows only its awaiting parent.
//
// Properties the rest of the project relies on:
//
// - Lazy: calling a coroutine function allocates its frame and runs nothing.
//   The body starts when the Task is awaited, or when an executor starts a root
//   task through start_handle().
// - Move-only owner of its frame: destroying a Task destroys its frame, which
//   destroys the locals in scope at the suspension point, including the Task
//   temporary it is awaiting, and so the whole chain below it. This is how a
//   simulated crash cuts a process: the simulator destroys the root task of
//   each in-flight chain and every destructor on the way runs.
// - Exceptions are captured in the frame and rethrown by `co_await` in the
//   awaiting coroutine (or by take_result() for a root). The core reports
//   expected failures as Result values; an exception means a bug (or a
//   library such as nlohmann::json refusing bad input), and the executor that
//   owns the root decides what to do with it (the simulator ends the run with
//   a distinct outcome naming the process).
//
// Stack depth (why there is no symmetric transfer on the start path).
// g++ 12 does not turn symmetric transfer into a tail call at -O0 or under
// ASan, so a loop of 100'000 `co_await ready_task()` with symmetric transfer
// both ways would nest 100'000 resume() calls and overflow the stack. Here:
// - Awaiting a Task starts the child with a plain resume() inside
//   await_suspend and, if the child finished during that call (it never
//   suspended), returns false so the parent continues in its own loop; the
//   child's final_suspend just returns to that resume() call. The stack goes
//   one level down and comes back up for every such await, however many there
//   are in sequence.
// - A child that did suspend (on a port's awaitable: a timer, a service call)
//   is later resumed by the executor from its event queue, with a fresh stack.
//   When it finishes, final_suspend hands control to the parent (symmetric
//   transfer; at -O0 this costs one frame per nesting level, not per await).
// So the depth of the native stack is bounded by the static nesting depth of
// co_await (a handful of levels), never by the number of awaits executed.
// Port awaitables must keep the other half of the contract: either be ready
// at once (await_ready) or suspend and be resumed later by the executor, never
// resume the awaiting coroutine inline from their own await_suspend.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <utility>

#include "model/result.hpp"

namespace rehearse {

template <typename T = void>
class Task;

namespace task_detail {

class PromiseBase {
 public:
  // Set by the awaiting parent; empty for a root started by an executor.
  std::coroutine_handle<> continuation;
  std::exception_ptr exception;
  // True only while the parent's await_suspend is running our first resume():
  // a completion inside that window returns to it instead of transferring.
  bool starting_inline = false;
  bool completed_inline = false;
  bool started = false;  // the body has begun (a task is started only once)

  // Lazy start; records the first resume so a started task is never awaited.
  struct InitialAwaiter {
    PromiseBase* promise;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    void await_resume() const noexcept { promise->started = true; }
  };
  InitialAwaiter initial_suspend() noexcept { return InitialAwaiter{this}; }

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> self) const noexcept {
      PromiseBase& promise = self.promise();
      if (promise.starting_inline) {
        // Finished without ever suspending: unwind back into the parent's
        // await_suspend, which continues the parent without a transfer.
        promise.completed_inline = true;
        return std::noop_coroutine();
      }
      if (promise.continuation) return promise.continuation;
      return std::noop_coroutine();  // a root: the executor sees done()
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() const noexcept { return {}; }

  void unhandled_exception() noexcept { exception = std::current_exception(); }
};

template <typename T>
class Promise final : public PromiseBase {
 public:
  Task<T> get_return_object() noexcept;

  // By value: accepts `co_return {a, b};` and conversions, at one move's cost.
  void return_value(T value) { result.emplace(std::move(value)); }

  T take() {
    if (exception) std::rethrow_exception(exception);
    REHEARSE_ASSERT(result.has_value());
    return std::move(*result);
  }

  std::optional<T> result;
};

template <>
class Promise<void> final : public PromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (exception) std::rethrow_exception(exception);
  }
};

}  // namespace task_detail

template <typename T>
class [[nodiscard]] Task {
 public:
  using promise_type = task_detail::Promise<T>;
  using value_type = T;

  Task() noexcept = default;
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  // Destroys the frame (and with it every nested frame it is awaiting).
  // Legal at any suspension point; never while the coroutine is running.
  void reset() noexcept {
    if (handle_) {
      handle_.destroy();
      handle_ = {};
    }
  }

  bool valid() const noexcept { return static_cast<bool>(handle_); }
  bool done() const noexcept { return handle_ && handle_.done(); }
  bool failed() const noexcept { return done() && handle_.promise().exception != nullptr; }
  std::exception_ptr exception() const noexcept {
    return handle_ ? handle_.promise().exception : nullptr;
  }

  // For executors of root tasks: the handle to resume() once to start the body.
  // A root has no continuation; when it finishes, done() turns true and the
  // executor collects it with take_result() and destroys it.
  std::coroutine_handle<> start_handle() const noexcept {
    REHEARSE_ASSERT(handle_);
    REHEARSE_ASSERT(!handle_.promise().continuation);
    REHEARSE_ASSERT(!handle_.promise().started);
    return handle_;
  }
  bool started() const noexcept { return handle_ && handle_.promise().started; }

  // The value of a finished root task; rethrows the exception that ended it.
  T take_result() {
    REHEARSE_ASSERT(done());
    return handle_.promise().take();
  }

  class Awaiter {
   public:
    explicit Awaiter(std::coroutine_handle<promise_type> child) noexcept : child_(child) {}

    bool await_ready() const noexcept { return false; }

    // Starts the child on this stack; returns false (do not suspend the
    // parent) when it completed without suspending. See the header comment.
    bool await_suspend(std::coroutine_handle<> parent) noexcept {
      auto& promise = child_.promise();
      promise.continuation = parent;
      promise.starting_inline = true;
      child_.resume();
      // The child is now either done (suspended at final_suspend) or suspended
      // on an awaitable that the executor will resume later; in both cases its
      // frame is alive (our Task owns it), so reading the promise is safe.
      promise.starting_inline = false;
      return !promise.completed_inline;
    }

    T await_resume() { return child_.promise().take(); }

   private:
    std::coroutine_handle<promise_type> child_;
  };

  // Awaiting starts the task; each task can be awaited once.
  Awaiter operator co_await() && noexcept { return make_awaiter(); }
  Awaiter operator co_await() & noexcept { return make_awaiter(); }

 private:
  friend class task_detail::Promise<T>;
  explicit Task(std::coroutine_handle<promise_type> handle) noexcept : handle_(handle) {}

  Awaiter make_awaiter() noexcept {
    REHEARSE_ASSERT(handle_);
    // Awaiting a task twice, or awaiting a root an executor started, is a bug.
    REHEARSE_ASSERT(!handle_.promise().started);
    REHEARSE_ASSERT(!handle_.promise().continuation);
    return Awaiter{handle_};
  }

  std::coroutine_handle<promise_type> handle_;
};

namespace task_detail {

template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>{std::coroutine_handle<Promise<T>>::from_promise(*this)};
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>{std::coroutine_handle<Promise<void>>::from_promise(*this)};
}

}  // namespace task_detail

}  // namespace rehearse
