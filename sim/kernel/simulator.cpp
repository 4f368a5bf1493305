#include "sim/kernel/simulator.hpp"

#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace rehearse::sim {
namespace {

// Restores the current process when an event (or a boot, or a crash) ends,
// also when a callback throws.
class CurrentProcessScope {
 public:
  CurrentProcessScope(ProcessId& slot, ProcessId process) noexcept
      : slot_(slot), saved_(std::exchange(slot, process)) {}
  ~CurrentProcessScope() { slot_ = saved_; }
  CurrentProcessScope(const CurrentProcessScope&) = delete;
  CurrentProcessScope& operator=(const CurrentProcessScope&) = delete;

 private:
  ProcessId& slot_;
  ProcessId saved_;
};

// The first assertion that failed during the current event (or boot). The
// handler records it before it throws, so that the run ends with it even
// when the exception only ends a task frame nobody awaits yet (a run task
// the scheduler collects later) or a catch in the core swallows it.
thread_local std::optional<AssertionFailure> t_failed_assertion;

// The simulator's assertion handler (model/assert.hpp): the run ends with
// `assertion_failed` (see halt_on_assertion) and the program goes on.
[[noreturn]] void throw_in_run(const AssertionFailure& failure) {
  if (!t_failed_assertion) t_failed_assertion = failure;
  throw AssertionFailedInRun{failure};
}

std::optional<AssertionFailure> take_failed_assertion() {
  return std::exchange(t_failed_assertion, std::nullopt);
}

// The assertion a task ended with, if that is how it ended.
std::optional<AssertionFailure> assertion_of(const std::exception_ptr& error) {
  REHEARSE_ASSERT(error != nullptr);  // only a failed task's exception is asked about
  try {
    std::rethrow_exception(error);
  } catch (const AssertionFailedInRun& e) {
    return e.failure;
  } catch (...) {
    return std::nullopt;
  }
}

std::string describe_exception(const std::exception_ptr& error) {
  REHEARSE_ASSERT(error != nullptr);  // rethrowing a null exception_ptr is undefined
  try {
    std::rethrow_exception(error);
  } catch (const AssertionFailedInRun& e) {
    return e.failure.describe();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "non-standard exception";
  }
}

}  // namespace

const char* to_string(RunOutcome outcome) noexcept {
  switch (outcome) {
    case RunOutcome::completed: return "completed";
    case RunOutcome::bounded_run: return "bounded_run";
    case RunOutcome::queue_overflow: return "queue_overflow";
    case RunOutcome::task_failed: return "task_failed";
    case RunOutcome::stopped: return "stopped";
    case RunOutcome::assertion_failed: return "assertion_failed";
  }
  // Every outcome is named above: anything else is a corrupted RunOutcome.
  REHEARSE_UNREACHABLE();
}

Simulator::Simulator(SimulatorOptions options)
    : options_(options),
      now_ms_(options.start_ms),
      rng_(options.seed),
      clock_(*this),
      queue_(options.pending_max) {
  processes_.emplace_back();  // the world
  processes_.front().name = "world";
}

Simulator::~Simulator() {
  // Frames first (their destructors may cancel events in the queue), then
  // memory, newest process first; the queue itself goes last.
  for (std::size_t i = processes_.size(); i-- > 1;) teardown(processes_[i]);
}

Simulator::Process& Simulator::process_ref(ProcessId process) {
  REHEARSE_ASSERT(process >= 1);
  REHEARSE_ASSERT(process < processes_.size());
  return processes_[process];
}

const Simulator::Process& Simulator::process_ref(ProcessId process) const {
  REHEARSE_ASSERT(process >= 1);
  REHEARSE_ASSERT(process < processes_.size());
  return processes_[process];
}

ProcessId Simulator::add_process(std::string name, BootFn boot) {
  REHEARSE_ASSERT(static_cast<bool>(boot));
  Process process;
  process.name = std::move(name);
  process.boot = std::move(boot);
  processes_.push_back(std::move(process));
  // Process 0 is the world: a real process never gets its id.
  REHEARSE_ASSERT_GE(processes_.size(), 2u);
  return static_cast<ProcessId>(processes_.size() - 1);
}

void Simulator::boot(ProcessId process) {
  Process& p = process_ref(process);
  REHEARSE_ASSERT(!p.up);
  // A process boots with no frame and no memory: the crash took them all.
  REHEARSE_ASSERT(p.roots.empty());
  REHEARSE_ASSERT(p.memory.empty());
  p.up = true;
  ++p.boots;
  // Every crash follows a boot, and at most one boot is not yet crashed.
  REHEARSE_ASSERT_EQ(p.boots, p.crashes + 1);
  notify_process(process, ProcessChange::booted);
  const CurrentProcessScope scope(current_process_, process);
  // Copy: the boot function may add processes (reallocating processes_).
  const BootFn boot_fn = p.boot;
  const AssertionHandlerScope handler(&throw_in_run);
  try {
    boot_fn(*this, process);
  } catch (const AssertionFailedInRun&) {
    // Reported just below.
  }
  if (auto failure = take_failed_assertion()) halt_on_assertion(process, "boot", *failure);
}

void Simulator::halt_on_assertion(ProcessId process, const std::string& where,
                                  const AssertionFailure& failure) {
  if (halt_) return;
  halt_.emplace(RunOutcome::assertion_failed,
                fmt::format("process '{}' {} at {}: {}", process_name(process), where,
                            format_instant(now_ms_), failure.describe()));
}

void Simulator::teardown(Process& process) {
  // A destructor never crashes a process, so teardowns do not nest.
  REHEARSE_ASSERT(!crashing_);
  crashing_ = true;
  // Newest root first, as a stack unwinds; each destroy() runs the destructors
  // of the locals in scope at the suspension point, nested frames included.
  while (!process.roots.empty()) process.roots.pop_back();
  while (!process.memory.empty()) process.memory.pop_back();
  // A memory cell's destructor must not spawn: no frame may outlive the crash.
  REHEARSE_ASSERT(process.roots.empty());
  crashing_ = false;
}

void Simulator::crash(ProcessId process) {
  Process& p = process_ref(process);
  REHEARSE_ASSERT(p.up);
  // A process cannot destroy the frame it is running in.
  REHEARSE_ASSERT(current_process_ != process);
  {
    // Events a destructor schedules belong to the dying process (and are
    // cancelled just below).
    const CurrentProcessScope scope(current_process_, process);
    teardown(p);
    queue_.cancel_if([process](const Action& action) { return action.process == process; });
  }
  p.up = false;
  ++p.crashes;
  REHEARSE_ASSERT_EQ(p.crashes, p.boots);
  notify_process(process, ProcessChange::crashed);
}

EventId Simulator::schedule_boot(ProcessId process, TimeMs at_ms) {
  (void)process_ref(process);
  return schedule_call_for(
      kWorld, at_ms, [this, process] { boot(process); }, "boot");
}

EventId Simulator::schedule_crash(ProcessId process, TimeMs at_ms,
                                  std::optional<DurationMs> reboot_after_ms) {
  (void)process_ref(process);
  return schedule_call_for(
      kWorld, at_ms,
      [this, process, reboot_after_ms] {
        if (!is_up(process)) return;  // already down: nothing to cut
        crash(process);
        if (reboot_after_ms) schedule_boot(process, now_ms_ + *reboot_after_ms);
      },
      "crash");
}

bool Simulator::is_up(ProcessId process) const { return process_ref(process).up; }
const std::string& Simulator::process_name(ProcessId process) const {
  return process == kWorld ? processes_.front().name : process_ref(process).name;
}
std::uint64_t Simulator::boot_count(ProcessId process) const { return process_ref(process).boots; }
std::uint64_t Simulator::crash_count(ProcessId process) const {
  return process_ref(process).crashes;
}
std::size_t Simulator::root_count(ProcessId process) const {
  return process_ref(process).roots.size();
}

void Simulator::spawn(ProcessId process, Task<void> task, std::string name) {
  Process& p = process_ref(process);
  REHEARSE_ASSERT(p.up);
  REHEARSE_ASSERT(task.valid());
  Action action;
  action.process = process;
  action.kind = EventKind::resume;
  action.label = "start";
  action.handle = task.start_handle();
  p.roots.push_back(Root{std::move(task), std::move(name)});
  push(now_ms_, std::move(action));
}

EventId Simulator::push(TimeMs at_ms, Action action) {
  REHEARSE_ASSERT(at_ms >= now_ms_);
  const EventId id = queue_.push(at_ms, std::move(action));
  REHEARSE_ASSERT(!id || queue_.is_pending(id));
  if (!id && !halt_) {
    halt_.emplace(RunOutcome::queue_overflow,
                  fmt::format("more than {} events pending at {}", queue_.pending_max(),
                              format_instant(now_ms_)));
  }
  return id;
}

EventId Simulator::schedule_resume(TimeMs at_ms, std::coroutine_handle<> handle,
                                   const char* label) {
  REHEARSE_ASSERT(static_cast<bool>(handle));
  Action action;
  action.process = current_process_;
  action.kind = EventKind::resume;
  action.label = label;
  action.handle = handle;
  return push(at_ms, std::move(action));
}

EventId Simulator::schedule_call(TimeMs at_ms, Callback callback, const char* label) {
  return schedule_call_for(current_process_, at_ms, std::move(callback), label);
}

EventId Simulator::schedule_call_for(ProcessId process, TimeMs at_ms, Callback callback,
                                     const char* label) {
  REHEARSE_ASSERT(static_cast<bool>(callback));
  if (process != kWorld) REHEARSE_ASSERT(process_ref(process).up);
  Action action;
  action.process = process;
  action.kind = EventKind::call;
  action.label = label;
  action.callback = std::move(callback);
  return push(at_ms, std::move(action));
}

bool Simulator::cancel(EventId id) { return queue_.cancel(id); }

void Simulator::add_event_listener(EventListener listener) {
  REHEARSE_ASSERT(static_cast<bool>(listener));  // called after every event
  event_listeners_.push_back(std::move(listener));
}

void Simulator::add_process_listener(ProcessListener listener) {
  REHEARSE_ASSERT(static_cast<bool>(listener));
  process_listeners_.push_back(std::move(listener));
}

void Simulator::notify_process(ProcessId process, ProcessChange change) {
  // Told after the change: a booted process is up, a crashed one down.
  REHEARSE_ASSERT_EQ(process_ref(process).up, change == ProcessChange::booted);
  for (const auto& listener : process_listeners_) listener(process, change, now_ms_);
}

void Simulator::stop(std::string reason) {
  if (!halt_) halt_.emplace(RunOutcome::stopped, std::move(reason));
}

void Simulator::plan_crash(CrashPlan plan) {
  (void)process_ref(plan.process);
  crash_plan_ = plan;
  crash_plan_fired_ = false;
}

void Simulator::fire_crash_plan() {
  REHEARSE_ASSERT(crash_plan_.has_value());
  REHEARSE_ASSERT_EQ(events_executed_, crash_plan_->after_events);
  REHEARSE_ASSERT(!crash_plan_fired_);
  const CrashPlan plan = *crash_plan_;
  crash_plan_.reset();
  if (!is_up(plan.process)) return;  // nothing to cut: crash_plan_fired() stays false
  crash(plan.process);
  crash_plan_fired_ = true;
  if (plan.reboot_after_ms) schedule_boot(plan.process, now_ms_ + *plan.reboot_after_ms);
}

void Simulator::execute(PoppedEvent<Action>& event) {
  Action& action = event.payload;
  // crash() cancels every event of the process: what runs belongs to the
  // world or to a process that is up.
  REHEARSE_ASSERT(action.process == kWorld || process_ref(action.process).up);
  REHEARSE_ASSERT(action.kind != EventKind::resume || static_cast<bool>(action.handle));
  const CurrentProcessScope scope(current_process_, action.process);
  if (action.kind == EventKind::resume) {
    // The handle's frame is alive: a crash or a frame's destruction cancels
    // its events (SimClock's wake-up cancels itself; crash() cancels the rest).
    action.handle.resume();
  } else {
    action.callback();
  }
  if (action.process != kWorld && process_ref(action.process).up) {
    collect_finished_roots(action.process);
  }
}

void Simulator::collect_finished_roots(ProcessId process) {
  Process& p = process_ref(process);
  REHEARSE_ASSERT(p.up);  // a down process has no root left to collect
  for (std::size_t i = 0; i < p.roots.size();) {
    Root& root = p.roots[i];
    if (!root.task.done()) {
      ++i;
      continue;
    }
    const auto assertion = root.task.failed() ? assertion_of(root.task.exception()) : std::nullopt;
    if (assertion) {
      halt_on_assertion(process, fmt::format("task '{}'", root.name), *assertion);
    } else if (root.task.failed() && !halt_) {
      halt_.emplace(RunOutcome::task_failed,
                    fmt::format("process '{}' task '{}' failed at {}: {}", p.name, root.name,
                                format_instant(now_ms_),
                                describe_exception(root.task.exception())));
    }
    p.roots.erase(p.roots.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // What is left is still running: a finished root is reported once.
  for (const Root& root : p.roots) REHEARSE_ASSERT(!root.task.done());
}

RunResult Simulator::finish(RunOutcome outcome, std::string message) {
  RunResult result;
  result.outcome = outcome;
  result.events_executed = events_executed_;
  result.now_ms = now_ms_;
  result.message = std::move(message);
  // Time only moves forward from the start.
  REHEARSE_ASSERT_GE(result.now_ms, options_.start_ms);
  return result;
}

RunResult Simulator::run_loop(std::optional<TimeMs> horizon_ms) {
  REHEARSE_ASSERT(current_process_ == kWorld);  // run() is not reentrant
  const AssertionHandlerScope handler(&throw_in_run);
  t_failed_assertion.reset();
  // The (time, seq) of the last event run: each pop is strictly later, as
  // every push is at now or after, with a larger seq than any before.
  std::optional<std::pair<TimeMs, std::uint64_t>> last;
  for (;;) {
    if (crash_plan_ && events_executed_ == crash_plan_->after_events) fire_crash_plan();
    if (halt_) {
      auto [outcome, message] = std::move(*halt_);
      halt_.reset();
      return finish(outcome, std::move(message));
    }
    if (queue_.empty() || (horizon_ms && queue_.next_time() > *horizon_ms)) {
      if (horizon_ms && *horizon_ms > now_ms_) now_ms_ = *horizon_ms;
      return finish(RunOutcome::completed, {});
    }
    if (events_executed_ >= options_.events_max) {
      return finish(RunOutcome::bounded_run,
                    fmt::format("event bound of {} reached at {} with {} events pending",
                                options_.events_max, format_instant(now_ms_), queue_.size()));
    }
    auto event = queue_.pop();
    REHEARSE_ASSERT(event.has_value());
    REHEARSE_ASSERT(event->time >= now_ms_);
    if (last) REHEARSE_ASSERT(*last < std::make_pair(event->time, event->seq));
    last.emplace(event->time, event->seq);
    REHEARSE_ASSERT_LE(event->seq, queue_.pushed_count());
    now_ms_ = event->time;
    const ExecutedEvent executed{events_executed_,       event->time,         event->seq,
                                 event->payload.process, event->payload.kind, event->payload.label};
    try {
      execute(*event);
    } catch (const AssertionFailedInRun&) {
      // From a callback; reported just below.
    }
    // A root task that ended with it was named by collect_finished_roots.
    if (auto failure = take_failed_assertion()) {
      halt_on_assertion(executed.process, fmt::format("event '{}'", executed.label), *failure);
    }
    // The event's scope gave the world back its turn.
    REHEARSE_ASSERT_EQ(current_process_, kWorld);
    ++events_executed_;
    REHEARSE_ASSERT_EQ(executed.index + 1, events_executed_);
    for (const auto& listener : event_listeners_) listener(executed);
  }
}

RunResult Simulator::run_until(TimeMs horizon_ms) {
  RunResult result = run_loop(horizon_ms);
  // A completed run reached the horizon (now() never moves back).
  if (result.ok()) REHEARSE_ASSERT_GE(result.now_ms, horizon_ms);
  return result;
}

RunResult Simulator::run() {
  RunResult result = run_loop(std::nullopt);
  // Without a horizon a run completes only when no event is left.
  if (result.ok()) REHEARSE_ASSERT(queue_.empty());
  return result;
}

Result<CrashSweepReport> sweep_crash_points(const CrashSweepScenario& scenario,
                                            std::uint64_t points_max) {
  const CrashSweepRun baseline = scenario(std::nullopt);
  if (!baseline.verdict.ok()) {
    return make_error(ErrorCode::invalid_argument, "the scenario fails without any crash: " +
                                                       baseline.verdict.error().describe());
  }
  CrashSweepReport report;
  report.baseline_events = baseline.events_executed;
  report.points = baseline.events_executed + 1;
  if (report.points > points_max) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("{} crash points exceed the sweep bound of {}", report.points,
                                  points_max));
  }
  for (std::uint64_t k = 0; k < report.points; ++k) {
    CrashSweepRun run = scenario(k);
    if (!run.crash_fired) {
      report.failures.push_back(
          {k, make_error(ErrorCode::internal,
                         fmt::format("crash point {} was not reached: the run diverged from "
                                     "the baseline before it, or the process was down",
                                     k))});
    } else if (!run.verdict.ok()) {
      report.failures.push_back({k, std::move(run.verdict).error()});
    }
  }
  REHEARSE_ASSERT_LE(report.failures.size(), report.points);
  return report;
}

}  // namespace rehearse::sim
