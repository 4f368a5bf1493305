// Simulator: the discrete-event kernel of a run.
//
// It owns the virtual clock (integer ms), the event queue, the run's seeded
// generator, and the simulated processes. It is the executor of the core's
// coroutines: every resumption of a suspended coroutine comes from an event
// popped here, never inline from another coroutine (model/task.hpp explains
// why that keeps the native stack shallow).
//
// Events. An event is a coroutine to resume or a callback to call, at a time,
// on behalf of a process (or of the world: faults, simulated services). Events
// run in (time, sequence) order, the sequence assigned at scheduling; each
// executed event gets an index 0, 1, 2, ... Executing an event sets now() to
// its time; time never goes backwards. Listeners see every executed event.
//
// Processes. A simulated process is a boot function plus what it owns while
// up: its root tasks (spawn) and its memory (emplace_memory). crash(process)
// destroys every root task frame of the process at its suspension point (and
// with it every nested frame, running the destructors of locals), cancels the
// process's pending events, and destroys its memory, newest first. Durable
// things (disk, durable queue, services) are objects outside the process and
// survive; boot(process) runs the boot function again. Destructors that run
// during a crash must not have effects outside the process (no sends, no disk
// writes): a real crash runs none.
//
// Bounds. A run executes at most events_max events: reaching it with events
// still due is the distinct outcome `bounded_run`. At most pending_max events
// may be pending: exceeding it ends the run with `queue_overflow`.
//
// Crash-anywhere. plan_crash() crashes a process after exactly k executed
// events (k = 0: before the first). sweep_crash_points() runs a scenario once
// to count the events it executes, then re-runs it once per crash point
// 0..count and collects the verdicts. Determinism makes the prefix up to the
// crash identical to the baseline.
#pragma once

#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/result.hpp"
#include "model/task.hpp"
#include "model/time.hpp"
#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/kernel/sim_clock.hpp"

namespace rehearse::sim {

using ProcessId = std::uint32_t;
// The world: faults, simulated services' own timers, the test itself. Its
// events are never cancelled by a crash and it cannot be crashed.
inline constexpr ProcessId kWorld = 0;

enum class RunOutcome : unsigned char {
  completed,         // no event left at or before the horizon
  bounded_run,       // events_max executed and events still due: the run failed its bound
  queue_overflow,    // more than pending_max events pending at once
  task_failed,       // a root task ended with an exception (message names it)
  stopped,           // stop() was called (e.g. by a monitor that saw a violation)
  assertion_failed,  // an assertion of the core (model/assert.hpp) failed; message says which
};
const char* to_string(RunOutcome outcome) noexcept;

// What the simulator's assertion handler throws: while the simulator runs
// an event (or boots a process) a failed REHEARSE_ASSERT* ends the run with
// `assertion_failed` instead of aborting the program. Deliberately not a
// std::exception, so that no `catch (const std::exception&)` in the core
// takes it for an I/O or adapter error and carries on.
struct AssertionFailedInRun {
  AssertionFailure failure;
};

struct RunResult {
  RunOutcome outcome = RunOutcome::completed;
  std::uint64_t events_executed = 0;  // by this simulator since construction
  TimeMs now_ms = 0;
  std::string message;  // why, for every outcome but `completed`

  bool ok() const noexcept { return outcome == RunOutcome::completed; }
};

enum class EventKind : unsigned char { resume, call };

// What listeners see after each executed event.
struct ExecutedEvent {
  std::uint64_t index = 0;  // 0-based count of events executed before this one
  TimeMs time_ms = 0;
  std::uint64_t seq = 0;  // scheduling order (ties at equal time ran in this order)
  ProcessId process = kWorld;
  EventKind kind = EventKind::call;
  const char* label = "";  // static text: "start", "wake", "boot", ...
};

enum class ProcessChange : unsigned char { booted, crashed };

struct SimulatorOptions {
  TimeMs start_ms = 0;
  std::uint64_t seed = 0;
  std::uint64_t events_max = 10'000'000;
  std::size_t pending_max = std::size_t{1} << 20;
};

// Crash `process` once exactly `after_events` events have executed; boot it
// again `reboot_after_ms` later (never, when empty).
struct CrashPlan {
  ProcessId process = kWorld;
  std::uint64_t after_events = 0;
  std::optional<DurationMs> reboot_after_ms;
};

class Simulator {
 public:
  using Callback = std::function<void()>;
  using BootFn = std::function<void(Simulator&, ProcessId)>;
  using EventListener = std::function<void(const ExecutedEvent&)>;
  using ProcessListener = std::function<void(ProcessId, ProcessChange, TimeMs)>;

  explicit Simulator(SimulatorOptions options = {});
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // --- time and randomness ---
  TimeMs now() const noexcept { return now_ms_; }
  Clock& clock() noexcept { return clock_; }
  Rng& rng() noexcept { return rng_; }
  const SimulatorOptions& options() const noexcept { return options_; }

  // --- processes ---
  // Registers a process (down until booted). Ids are 1, 2, ... in call order.
  ProcessId add_process(std::string name, BootFn boot);
  // Brings a down process up: runs its boot function, which typically creates
  // the process's memory and spawns its root tasks. Events scheduled during
  // boot belong to the process.
  void boot(ProcessId process);
  // Cuts an up process (see the header comment). Not callable from inside
  // the process's own execution.
  void crash(ProcessId process);
  // World events that boot / crash a process at `at_ms` (a `restart` fault is
  // schedule_crash(p, t, down_for)).
  EventId schedule_boot(ProcessId process, TimeMs at_ms);
  EventId schedule_crash(ProcessId process, TimeMs at_ms,
                         std::optional<DurationMs> reboot_after_ms = std::nullopt);

  bool is_up(ProcessId process) const;
  const std::string& process_name(ProcessId process) const;
  std::uint64_t boot_count(ProcessId process) const;
  std::uint64_t crash_count(ProcessId process) const;
  std::size_t root_count(ProcessId process) const;
  std::size_t process_count() const noexcept { return processes_.size() - 1; }

  // Adds a root task to an up process; it starts from an event at now().
  // When it finishes it is destroyed; if it ended with an exception the run
  // ends with `task_failed`.
  void spawn(ProcessId process, Task<void> task, std::string name = {});

  // Creates an object owned by the process: destroyed by a crash (after the
  // process's frames, newest first), recreated by the boot function.
  template <typename T, typename... Args>
  T& emplace_memory(ProcessId process, Args&&... args) {
    Process& owner = process_ref(process);
    REHEARSE_ASSERT(owner.up);
    auto cell = std::make_unique<MemoryCell<T>>(std::forward<Args>(args)...);
    T& ref = cell->value;
    owner.memory.push_back(std::move(cell));
    return ref;
  }

  // --- events ---
  // Scheduled for the process currently executing (kWorld outside any
  // process): that is how a process's timers and pending replies die with it.
  // `at_ms` must not be in the past. An empty id means the queue was full: the
  // run then ends with `queue_overflow`.
  EventId schedule_resume(TimeMs at_ms, std::coroutine_handle<> handle,
                          const char* label = "resume");
  EventId schedule_call(TimeMs at_ms, Callback callback, const char* label = "call");
  EventId schedule_call_for(ProcessId process, TimeMs at_ms, Callback callback,
                            const char* label = "call");
  bool cancel(EventId id);
  bool is_pending(EventId id) const noexcept { return queue_.is_pending(id); }
  std::size_t pending_count() const noexcept { return queue_.size(); }

  // The process on whose behalf the current event runs (kWorld when idle).
  ProcessId current_process() const noexcept { return current_process_; }
  // Events executed so far; while an event runs, that event's own index (so
  // a simulated adapter can stamp what it records with it).
  std::uint64_t events_executed() const noexcept { return events_executed_; }
  // True while crash() is tearing a process down (simulated adapters may
  // refuse effects requested by destructors then).
  bool crashing() const noexcept { return crashing_; }

  void add_event_listener(EventListener listener);
  void add_process_listener(ProcessListener listener);

  // --- running ---
  // Executes every event due at or before `horizon_ms`, then advances now() to
  // the horizon (unless the run ended early).
  RunResult run_until(TimeMs horizon_ms);
  // Executes events until none is left.
  RunResult run();
  // Ends the run after the current event with outcome `stopped`.
  void stop(std::string reason);

  // --- crash-anywhere ---
  void plan_crash(CrashPlan plan);
  bool crash_plan_fired() const noexcept { return crash_plan_fired_; }

 private:
  struct MemoryBase {
    virtual ~MemoryBase() = default;
  };
  template <typename T>
  struct MemoryCell final : MemoryBase {
    template <typename... Args>
    explicit MemoryCell(Args&&... args) : value(std::forward<Args>(args)...) {}
    T value;
  };
  struct Root {
    Task<void> task;
    std::string name;
  };
  struct Process {
    std::string name;
    BootFn boot;
    bool up = false;
    std::uint64_t boots = 0;
    std::uint64_t crashes = 0;
    // Declared before roots so that, on destruction, frames go first.
    std::vector<std::unique_ptr<MemoryBase>> memory;
    std::vector<Root> roots;
  };
  struct Action {
    ProcessId process = kWorld;
    EventKind kind = EventKind::call;
    const char* label = "";
    std::coroutine_handle<> handle;
    Callback callback;
  };

  Process& process_ref(ProcessId process);
  const Process& process_ref(ProcessId process) const;
  EventId push(TimeMs at_ms, Action action);
  void execute(PoppedEvent<Action>& event);
  // Ends the run with `assertion_failed` (unless it is already ending).
  void halt_on_assertion(ProcessId process, const std::string& where,
                         const AssertionFailure& failure);
  void collect_finished_roots(ProcessId process);
  void teardown(Process& process);
  void fire_crash_plan();
  void notify_process(ProcessId process, ProcessChange change);
  RunResult finish(RunOutcome outcome, std::string message);
  RunResult run_loop(std::optional<TimeMs> horizon_ms);

  SimulatorOptions options_;
  TimeMs now_ms_;
  Rng rng_;
  SimClock clock_;
  EventQueue<Action> queue_;
  // Index 0 is the world (never up, never crashed).
  std::vector<Process> processes_;
  std::vector<EventListener> event_listeners_;
  std::vector<ProcessListener> process_listeners_;
  ProcessId current_process_ = kWorld;
  std::uint64_t events_executed_ = 0;
  bool crashing_ = false;
  // A reason to end the run after the current event (overflow, failure, stop).
  std::optional<std::pair<RunOutcome, std::string>> halt_;
  std::optional<CrashPlan> crash_plan_;
  bool crash_plan_fired_ = false;
};

// --- crash-anywhere enumeration ---------------------------------------------

// What one run of a crash-sweep scenario reports.
struct CrashSweepRun {
  std::uint64_t events_executed = 0;
  bool crash_fired = false;  // the planned crash happened (sim.crash_plan_fired())
  Status verdict;            // the scenario's own checks on the end state
};

// Builds a fresh world, plans the crash when given one (crash after that many
// events), runs, and judges. Must be deterministic.
using CrashSweepScenario =
    std::function<CrashSweepRun(std::optional<std::uint64_t> crash_after_events)>;

struct CrashSweepFailure {
  std::uint64_t crash_after_events = 0;
  Error error;
};

struct CrashSweepReport {
  std::uint64_t baseline_events = 0;  // events in the run without a crash
  std::uint64_t points = 0;           // crash points tried: 0..baseline_events
  std::vector<CrashSweepFailure> failures;

  bool held() const noexcept { return failures.empty(); }
};

// Runs the baseline (an error if it fails or exceeds points_max points), then
// every crash point. A point whose planned crash did not fire is a failure
// (the prefix was not deterministic).
Result<CrashSweepReport> sweep_crash_points(const CrashSweepScenario& scenario,
                                            std::uint64_t points_max = 100'000);

}  // namespace rehearse::sim
