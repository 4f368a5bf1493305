// Goal: Task<T> is a lazy, move-only owner of its coroutine frame whose
// destruction tears down the whole awaited chain; values and exceptions cross
// co_await; long sequences of awaits never deepen the native stack; and the
// RealDriver runs a coroutine on the real clock.
// Method: small coroutines over a test-local Gate (a hand-resumed awaitable
// standing in for an executor's event queue: it holds suspended coroutines
// until the test resumes them one by one from its own loop), RAII counters for
// destructor runs, the address of a local as a stack-depth probe, and a
// RealDriver run with real sleeps of a few milliseconds.
#include "model/task.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/real_driver.hpp"
#include "model/system_clock.hpp"

namespace rehearse {
namespace {

// Holds suspended coroutines until the test releases them, oldest first, from
// its own loop: the way an executor resumes from its queue.
class Gate {
 public:
  class Wait {
   public:
    explicit Wait(Gate& gate) noexcept : gate_(gate) {}
    Wait(const Wait&) = delete;
    Wait& operator=(const Wait&) = delete;
    ~Wait() {
      // Destroyed while still registered: the frame died at this suspension
      // point, so the gate must forget it (as SimClock cancels its wake-up).
      if (handle_) {
        auto& waiting = gate_.waiting_;
        waiting.erase(std::find(waiting.begin(), waiting.end(), handle_));
      }
    }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> handle) {
      handle_ = handle;
      gate_.waiting_.push_back(handle);
    }
    void await_resume() noexcept { handle_ = {}; }

   private:
    Gate& gate_;
    std::coroutine_handle<> handle_;
  };

  std::size_t waiting() const noexcept { return waiting_.size(); }

  // Resumes the oldest waiter; false when none.
  bool release_one() {
    if (waiting_.empty()) return false;
    const auto handle = waiting_.front();
    waiting_.pop_front();
    handle.resume();
    return true;
  }
  std::size_t release_all() {
    std::size_t n = 0;
    while (release_one()) ++n;
    return n;
  }

 private:
  std::deque<std::coroutine_handle<>> waiting_;
};

// Counts destructor runs.
struct Tracked {
  explicit Tracked(int& counter) noexcept : counter_(&counter) {}
  Tracked(Tracked&& other) noexcept : counter_(std::exchange(other.counter_, nullptr)) {}
  Tracked(const Tracked&) = delete;
  ~Tracked() {
    if (counter_) ++*counter_;
  }
  int* counter_;
};

// Starts a root task the way an executor does.
template <typename T>
void start(Task<T>& task) {
  task.start_handle().resume();
}

Task<int> answer() { co_return 42; }

Task<int> add_answers() {
  const int a = co_await answer();
  const int b = co_await answer();
  co_return a + b;
}

TEST(Task, IsLazyUntilStarted) {
  bool ran = false;
  auto body = [](bool& flag) -> Task<void> {
    flag = true;
    co_return;
  };
  Task<void> task = body(ran);
  EXPECT_FALSE(ran);
  EXPECT_FALSE(task.started());
  EXPECT_FALSE(task.done());
  start(task);
  EXPECT_TRUE(ran);
  EXPECT_TRUE(task.started());
  EXPECT_TRUE(task.done());
}

TEST(Task, ReturnsValuesThroughAwait) {
  Task<int> task = add_answers();
  start(task);
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.take_result(), 84);
}

TEST(Task, CarriesMoveOnlyAndBracedValues) {
  auto make_ptr = []() -> Task<std::unique_ptr<int>> { co_return std::make_unique<int>(7); };
  auto make_pair = []() -> Task<std::pair<int, std::string>> { co_return {3, "three"}; };
  auto outer = [&]() -> Task<std::string> {
    std::unique_ptr<int> p = co_await make_ptr();
    std::pair<int, std::string> q = co_await make_pair();
    co_return std::to_string(*p + q.first) + q.second;
  };
  Task<std::string> task = outer();
  start(task);
  EXPECT_EQ(task.take_result(), "10three");
}

TEST(Task, ValueArrivesAfterSuspensionThroughEveryLevel) {
  Gate gate;
  std::vector<std::string> steps;
  auto leaf = [&]() -> Task<int> {
    steps.push_back("leaf waits");
    Gate::Wait wait(gate);
    co_await wait;
    steps.push_back("leaf resumed");
    co_return 5;
  };
  auto middle = [&]() -> Task<int> {
    const int v = co_await leaf();
    steps.push_back("middle got " + std::to_string(v));
    co_return v * 2;
  };
  auto top = [&]() -> Task<int> {
    const int v = co_await middle();
    steps.push_back("top got " + std::to_string(v));
    co_return v + 1;
  };
  Task<int> task = top();
  start(task);
  EXPECT_FALSE(task.done());
  EXPECT_EQ(gate.waiting(), 1u);
  EXPECT_EQ(steps, std::vector<std::string>{"leaf waits"});
  ASSERT_TRUE(gate.release_one());
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.take_result(), 11);
  EXPECT_EQ(steps,
            (std::vector<std::string>{"leaf waits", "leaf resumed", "middle got 5", "top got 10"}));
}

TEST(Task, ExceptionIsRethrownAtAwaitAndCatchable) {
  auto fails = []() -> Task<int> {
    throw std::runtime_error("boom");
    co_return 0;
  };
  auto catches = [&]() -> Task<std::string> {
    try {
      co_await fails();
    } catch (const std::runtime_error& e) {
      co_return std::string("caught ") + e.what();
    }
    co_return "not caught";
  };
  Task<std::string> task = catches();
  start(task);
  EXPECT_EQ(task.take_result(), "caught boom");
}

TEST(Task, ExceptionAfterSuspensionEndsRootAsFailed) {
  Gate gate;
  auto fails_later = [&]() -> Task<void> {
    Gate::Wait wait(gate);
    co_await wait;
    throw std::logic_error("late");
  };
  auto root = [&]() -> Task<void> { co_await fails_later(); };
  Task<void> task = root();
  start(task);
  EXPECT_FALSE(task.failed());
  gate.release_all();
  ASSERT_TRUE(task.done());
  EXPECT_TRUE(task.failed());
  EXPECT_THROW(task.take_result(), std::logic_error);
}

TEST(Task, MoveTransfersOwnership) {
  int destroyed = 0;
  auto body = [](Tracked t) -> Task<int> {
    (void)t;
    co_return 1;
  };
  Task<int> a = body(Tracked(destroyed));
  Task<int> b = std::move(a);
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_TRUE(b.valid());
  Task<int> c;
  c = std::move(b);
  EXPECT_EQ(destroyed, 0);
  start(c);
  EXPECT_EQ(c.take_result(), 1);
}

TEST(Task, DestroyingAnUnstartedTaskDestroysItsParameters) {
  int destroyed = 0;
  auto body = [](Tracked t) -> Task<void> {
    (void)t;
    co_return;
  };
  {
    Task<void> task = body(Tracked(destroyed));
    EXPECT_EQ(destroyed, 0);  // the parameter copy lives in the frame
  }
  EXPECT_EQ(destroyed, 1);
}

// A chain of three frames, each with a local, suspended at the innermost
// await: destroying the root must run every local's destructor and unregister
// the waiter, without resuming anything.
TEST(Task, DestroyingRootTearsDownTheWholeChain) {
  Gate gate;
  int destroyed = 0;
  bool resumed = false;
  auto leaf = [&]() -> Task<int> {
    Tracked local(destroyed);
    Gate::Wait wait(gate);
    co_await wait;
    resumed = true;
    co_return 1;
  };
  auto middle = [&]() -> Task<int> {
    Tracked local(destroyed);
    const int v = co_await leaf();
    resumed = true;
    co_return v;
  };
  auto root = [&]() -> Task<void> {
    Tracked local(destroyed);
    co_await middle();
    resumed = true;
  };
  Task<void> task = root();
  start(task);
  ASSERT_EQ(gate.waiting(), 1u);
  EXPECT_EQ(destroyed, 0);
  task.reset();
  EXPECT_EQ(destroyed, 3);
  EXPECT_EQ(gate.waiting(), 0u);
  EXPECT_FALSE(resumed);
  EXPECT_FALSE(task.valid());
}

// Stack-depth probe: the native frame address of a plain function called
// from inside the awaited task (not the address of a coroutine local: those
// live in the heap-allocated frame). With recursion (symmetric transfer
// compiled as a call, as g++ 12 does at -O0 and under ASan) 100'000
// sequential awaits spread these addresses over megabytes and overflow an
// 8 MiB stack (checked by hand: that variant of this header segfaults at -O0);
// here the spread stays within a few frames.
struct StackSpread {
  std::uintptr_t low = UINTPTR_MAX;
  std::uintptr_t high = 0;
  std::size_t samples = 0;
  std::uintptr_t bytes() const { return high - low; }
};

[[gnu::noinline]] void record_stack_depth(StackSpread& spread) {
  const auto a = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  spread.low = std::min(spread.low, a);
  spread.high = std::max(spread.high, a);
  ++spread.samples;
}

constexpr int kChainLength = 100'000;

Task<int> ready_step(StackSpread& spread) {
  record_stack_depth(spread);
  co_return 1;
}

TEST(Task, HundredThousandReadyAwaitsKeepTheStackFlat) {
  StackSpread spread;
  auto chain = [&]() -> Task<long> {
    long sum = 0;
    for (int i = 0; i < kChainLength; ++i) {
      const int v = co_await ready_step(spread);
      sum += v;
    }
    co_return sum;
  };
  Task<long> task = chain();
  start(task);
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.take_result(), kChainLength);
  EXPECT_EQ(spread.samples, static_cast<std::size_t>(kChainLength));
  EXPECT_LT(spread.bytes(), 4096u);
}

TEST(Task, HundredThousandSuspendingAwaitsKeepTheStackFlat) {
  Gate gate;
  StackSpread spread;
  auto suspending_step = [&]() -> Task<int> {
    Gate::Wait wait(gate);
    co_await wait;
    record_stack_depth(spread);
    co_return 1;
  };
  auto chain = [&]() -> Task<long> {
    long sum = 0;
    for (int i = 0; i < kChainLength; ++i) {
      const int v = co_await suspending_step();
      sum += v;
    }
    co_return sum;
  };
  Task<long> task = chain();
  start(task);
  std::size_t released = 0;
  while (gate.release_one()) ++released;
  EXPECT_EQ(released, static_cast<std::size_t>(kChainLength));
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.take_result(), kChainLength);
  EXPECT_EQ(spread.samples, static_cast<std::size_t>(kChainLength));
  EXPECT_LT(spread.bytes(), 4096u);
}

// Nesting (not sequence) is what costs stack: a ready chain 50 levels deep
// still completes and returns through every level.
Task<int> nested(int depth) {
  if (depth == 0) co_return 0;
  const int below = co_await nested(depth - 1);
  co_return below + 1;
}

TEST(Task, NestedAwaitsReturnThroughEveryLevel) {
  Task<int> task = nested(50);
  start(task);
  EXPECT_EQ(task.take_result(), 50);
}

// --- RealDriver on the real clock --------------------------------------------

TEST(RealDriver, RunsSleepsOnTheWallClock) {
  RealDriver driver;
  Clock& clock = driver.clock();
  std::vector<TimeMs> woke_ms;
  auto sleeper = [&]() -> Task<int> {
    for (int i = 0; i < 3; ++i) {
      co_await clock.sleep_for(4);
      woke_ms.push_back(clock.now());
    }
    co_return 3;
  };
  const TimeMs begin_ms = SystemClock::wall_now_ms();
  Result<int> result = driver.run(sleeper());
  const TimeMs end_ms = SystemClock::wall_now_ms();
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, 3);
  ASSERT_EQ(woke_ms.size(), 3u);
  // Each sleep lasted at least its 4 ms; time never went backwards.
  EXPECT_GE(woke_ms[0], begin_ms + 4);
  EXPECT_GE(woke_ms[1], woke_ms[0] + 4);
  EXPECT_GE(woke_ms[2], woke_ms[1] + 4);
  EXPECT_GE(end_ms - begin_ms, 12);
  EXPECT_EQ(driver.timer_count(), 0u);
}

TEST(RealDriver, PastDeadlineStillYieldsOnceAndReturns) {
  RealDriver driver;
  Clock& clock = driver.clock();
  int steps = 0;
  auto body = [&]() -> Task<void> {
    co_await clock.sleep_until(0);  // 1970: long past
    ++steps;
    co_await clock.sleep_for(-5);
    ++steps;
  };
  Status status = driver.run(body());
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_EQ(steps, 2);
}

TEST(RealDriver, ReportsATaskThatWaitsOnNothingItCanResume) {
  RealDriver driver;
  Gate gate;  // nobody will release it
  int destroyed = 0;
  auto stuck = [&]() -> Task<void> {
    Tracked local(destroyed);
    Gate::Wait wait(gate);
    co_await wait;
  };
  Status status = driver.run(stuck());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::internal);
  EXPECT_EQ(destroyed, 1);  // the stuck frame was destroyed when run() returned
  EXPECT_EQ(gate.waiting(), 0u);
}

TEST(RealDriver, RethrowsTheTasksException) {
  RealDriver driver;
  auto body = [&]() -> Task<int> {
    co_await driver.clock().sleep_for(1);
    throw std::runtime_error("after sleep");
  };
  EXPECT_THROW((void)driver.run(body()), std::runtime_error);
}

TEST(RealDriver, WakeResumesOnceAndCancelWithdrawsIt) {
  RealDriver driver;
  SystemClock& clock = driver.clock();
  Clock::WakeId cancelled_id = 0;
  int woken = 0;
  auto body = [&]() -> Task<int> {
    Clock::WakeId id = 0;
    struct Park {
      Clock& clock;
      Clock::WakeId* id;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) { *id = clock.schedule_wake(h); }
      void await_resume() const noexcept {}
    };
    co_await Park{clock, &id};
    ++woken;
    // A wake that is withdrawn before the driver delivers it.
    cancelled_id = clock.schedule_wake(std::noop_coroutine());
    EXPECT_TRUE(clock.cancel_wake(cancelled_id));
    co_return woken;
  };
  Result<int> result = driver.run(body());
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, 1);
  EXPECT_NE(cancelled_id, 0u);
  EXPECT_FALSE(clock.cancel_wake(cancelled_id));
  EXPECT_EQ(driver.timer_count(), 0u);
}

TEST(RealDriver, DroppedSleepCancelsItsTimer) {
  RealDriver driver;
  auto inner = [&]() -> Task<void> { co_await driver.clock().sleep_for(60'000); };
  {
    Task<void> task = inner();
    start(task);
    EXPECT_EQ(driver.timer_count(), 1u);
  }
  EXPECT_EQ(driver.timer_count(), 0u);
}

}  // namespace
}  // namespace rehearse
