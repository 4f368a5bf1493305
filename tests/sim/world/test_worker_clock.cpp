// Goal: the worker machine's clock reads the simulator's time plus the clock
// steps whose instant has come, and a sleep on it ends when it reads the
// deadline: sooner after a step forward, later after a step back.
// Method: a bare simulator, one process sleeping on the clock; the instant it
// wakes, in true time, against the steps.
#include <gtest/gtest.h>

#include <optional>

#include "sim/kernel/simulator.hpp"
#include "sim/world/worker_clock.hpp"

namespace rehearse::sim {
namespace {

constexpr TimeMs kStart = 1'000'000'000'000;

// True time at which a process that sleeps at `kStart` until `deadline` on
// the clock wakes.
std::optional<TimeMs> woke_at(WorkerClock& clock, Simulator& sim, TimeMs deadline) {
  std::optional<TimeMs> woke;
  const ProcessId p = sim.add_process("worker", [](Simulator&, ProcessId) {});
  sim.boot(p);
  auto body = [&]() -> Task<void> {
    co_await clock.sleep_until(deadline);
    woke = sim.now();
  };
  sim.spawn(p, body(), "sleeper");
  const RunResult r = sim.run();
  EXPECT_TRUE(r.ok()) << r.message;
  return woke;
}

SimulatorOptions options() { return SimulatorOptions{.start_ms = kStart, .seed = 1}; }

TEST(WorkerClock, WithoutStepsItIsTheSimulatorsClock) {
  Simulator sim(options());
  WorkerClock clock(sim);
  EXPECT_EQ(clock.now(), kStart);
  EXPECT_EQ(woke_at(clock, sim, kStart + kHourMs), kStart + kHourMs);
}

TEST(WorkerClock, AStepBackMakesASleepEndThatMuchLater) {
  Simulator sim(options());
  WorkerClock clock(sim);
  clock.add_step(kStart + 10 * kMinuteMs, -kHourMs);
  EXPECT_EQ(clock.offset_at(kStart), 0);
  EXPECT_EQ(clock.offset_at(kStart + 10 * kMinuteMs), -kHourMs);
  // 20 minutes on the clock, an hour of it read again: 1 h 20 min true.
  EXPECT_EQ(woke_at(clock, sim, kStart + 20 * kMinuteMs), kStart + 80 * kMinuteMs);
}

TEST(WorkerClock, AStepForwardPastTheDeadlineEndsTheSleepAtTheStep) {
  Simulator sim(options());
  WorkerClock clock(sim);
  clock.add_step(kStart + 10 * kMinuteMs, 2 * kHourMs);
  EXPECT_EQ(woke_at(clock, sim, kStart + kHourMs), kStart + 10 * kMinuteMs);
}

TEST(WorkerClock, StepsAddUpInTheOrderOfTheirInstants) {
  Simulator sim(options());
  WorkerClock clock(sim);
  clock.add_step(kStart + 2 * kHourMs, kMinuteMs);
  clock.add_step(kStart + kHourMs, -kHourMs);
  EXPECT_EQ(clock.offset_at(kStart + 90 * kMinuteMs), -kHourMs);
  EXPECT_EQ(clock.offset_at(kStart + 2 * kHourMs), -kHourMs + kMinuteMs);
}

}  // namespace
}  // namespace rehearse::sim
