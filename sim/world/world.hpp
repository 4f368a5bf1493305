// World: one simulated world assembled from a scenario, and the run of it.
//
// run_world() builds everything a scenario names (docs/run.md): the
// Simulator with the run's one seeded generator, the simulated disk with the
// REAL StateStore and DeliveryLedger over it, the durable queue (SimQueue,
// or under `queue.store: disk` the REAL DiskJobQueue on that disk, reached
// through the tracing TracedQueue: docs/worker.md), the
// simulated services (model-api, brokerage) behind SimServices, the
// Messenger, the SimLog, the Trace, and one worker process whose boot
// function opens the REAL worker (model/worker.hpp) with the scenario's jobs
// as job configurations (sim/world/world_runners.hpp): schedules, policies, config
// errors and runners are the worker's, as in production. The policy is handed
// to the core's parser exactly as written, so a missing or invalid policy
// fails closed inside the core, never in the harness.
//
// Faults from the timeline are injected only into the simulated
// implementations, at their instant (ordered by time, then file order):
// service windows into ModelApi / SimBrokerage, revocations into the
// brokerage, outages into the Messenger, restarts as Simulator crashes and
// boots, corruption and torn writes into SimDisk. The world records its own
// trace events (process_boot, process_crash, fault_start, fault_end,
// store_corrupt_injected, run_end; docs/trace-events.md).
//
// Every trace event goes to the run's observer (sim/world/run_observer.hpp;
// the invariant monitors) as it is recorded; a violation does not stop the run (every one is
// recorded, up to RunOptions::max_violations, and the first of each invariant reported). A run that
// reaches `queue.max_events` fails with the invariant `bounded_run`.
//
// Nothing here reads a wall clock or the process environment: the same
// scenario and seed give the same trace, byte for byte.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/disk.hpp"
#include "model/job_queue.hpp"
#include "model/job_runner.hpp"
#include "model/job_state.hpp"
#include "model/ports.hpp"
#include "model/result.hpp"
#include "model/state_store.hpp"
#include "model/time.hpp"
#include "model/token_client.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/run_observer.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse {
class DeliveryLedger;
}  // namespace rehearse

namespace rehearse::sim {

// Where the worker keeps its durable files on the simulated disk.
inline constexpr const char* kWorldStateDir = "/srv/state";
inline constexpr const char* kWorldLedgerDir = "/srv/ledger";
// The worker's job queue under `queue.store: disk` (DiskJobQueue's queue.json).
inline constexpr const char* kWorldQueueDir = "/srv/queue";
// How long the worker stays down after its scheduler halted on an I/O error
// (a supervisor restarts it) or a disk fault killed it outside a torn_write.
inline constexpr DurationMs kWorldSupervisorRestartMs = kMinuteMs;

// What a job's runner may use: the ports of the worker process that runs it.
// Everything here lives exactly as long as that process (until it crashes).
struct RunnerPorts {
  Simulator& simulator;
  ProcessId process;
  Clock& clock;
  rehearse::Services& services;
  Notifier& notifier;
  Log& log;
  Disk& disk;
  DeliveryLedger& ledger;     // the per-(job, slot) send guard and marker
  TokenClient& token_client;  // the process's token cache (fetch jobs)
  const Scenario& scenario;
};

// Builds the runner of one job. Returning nullptr means "the core's own
// runner" (the job-kind registry, model/job_kinds.hpp; make_default_runner). A TEST target uses
// this to swap in a deliberately faulty variant of a core component (the seed bugs) without any
// switch in model/. Called at every boot of the worker, since runners are
// process memory.
using RunnerFactory =
    std::function<std::unique_ptr<JobRunner>(const JobSpec& job, RunnerPorts& ports)>;

// The core's runner for a job, from the job-kind registry (model/job_kinds.hpp)
// exactly as the worker builds it. An error for a kind this build cannot run.
Result<std::unique_ptr<JobRunner>> make_default_runner(const JobSpec& job, RunnerPorts& ports);

// Whether this build can run a job kind (the registry has it) / a fault kind.
bool world_supports(JobKind kind) noexcept;
bool world_supports(FaultKind kind) noexcept;

// What a test may put between the worker process and the world's queue,
// messenger and disk: decorators over those ports (each null: the world's own
// object). Built at every boot, before the worker opens, and kept in the
// process's memory (a crash destroys them with the worker). A TEST target
// uses this to plug in a core component that lies (tests/variants/): the
// world's own objects still record what really reached them.
struct WorkerPortWrappers {
  std::unique_ptr<JobQueue> queue;
  std::unique_ptr<Notifier> notifier;
  std::unique_ptr<Disk> disk;
};
using WorkerPortsDecorator =
    std::function<WorkerPortWrappers(JobQueue& queue, Notifier& notifier, Disk& disk)>;

struct RunProgress {
  TimeMs now_ms = 0;
  TimeMs start_ms = 0;
  TimeMs until_ms = 0;
  std::uint64_t events = 0;  // simulator events executed so far
};

// --- planned crashes of the worker (crash sweeps: sim/check/crash_sweep.hpp) ---

// What a planned crash does to the disk (docs/sim-disk.md): the machine loses
// power with the worker (every unsynced byte, entry, rename and removal is
// lost) or the worker process alone dies (the page cache survives; only its
// locks go). A scenario's own `restart` faults are always power losses.
enum class CrashEffect : unsigned char { power_loss, process_only };
const char* to_string(CrashEffect effect) noexcept;

// Where a planned crash falls.
enum class CrashAt : unsigned char {
  // Once `index` simulator events have executed (0: before the first), as
  // Simulator::plan_crash: between two suspension points of the core.
  event,
  // The worker's disk operation number `index` (0-based, counted over the
  // whole run) does not happen: the worker dies there (SimDisk's fail-stop),
  // inside the synchronous code between two suspension points, and the world
  // crashes it at that instant.
  disk_operation,
};
const char* to_string(CrashAt at) noexcept;

struct WorkerCrashPoint {
  CrashAt at = CrashAt::event;
  std::uint64_t index = 0;
  CrashEffect effect = CrashEffect::process_only;

  bool operator==(const WorkerCrashPoint&) const = default;
};

// Crash points in run order: the first is armed at the start, each next one
// once the previous one fired (a point that cannot fire, because the worker
// is down then or the run never gets there, ends the plan: see
// ScenarioRunResult::crash_points_fired). After each, the worker boots again
// `reboot_after_ms` later.
struct WorkerCrashPlan {
  std::vector<WorkerCrashPoint> points;
  DurationMs reboot_after_ms = kWorldSupervisorRestartMs;
};

// The state of a run after some number of simulator events: what a crash
// sweep compares to prove that a crashed run's prefix is the baseline's.
struct RunMark {
  std::uint64_t trace_events = 0;
  std::uint64_t trace_hash = 0;       // the trace's running FNV-1a 64
  std::uint64_t disk_operations = 0;  // SimDisk::operations() (only the worker uses the port)
  bool worker_up = false;
};

// A moment of the worker's life, for a crash sweep's recovery windows.
enum class WorkerMarkKind : unsigned char { boot, crash, run_done };
struct WorkerMark {
  WorkerMarkKind kind = WorkerMarkKind::boot;
  // Simulator events executed before it (for an event's effect: that event's index).
  std::uint64_t events = 0;
  std::uint64_t disk_operations = 0;
  bool planned = false;  // a crash of RunOptions::crash_plan
};

struct RunOptions {
  std::optional<std::uint64_t> seed;  // overrides the scenario's seed
  // Every trace event as it is recorded (e.g. a streaming writer).
  std::function<void(const TraceEvent&, std::size_t index)> trace_sink;
  // Called every progress_every_events simulator events, and once at the end.
  std::function<void(const RunProgress&)> progress;
  std::uint64_t progress_every_events = 200'000;
  // Keep every trace event in ScenarioRunResult::trace. Off: the events are
  // streamed (listeners, hash, trace_sink) and dropped, so memory is bounded
  // by the jobs and open slots, not by the run's history.
  bool keep_trace = true;
  RunnerFactory runner_factory;
  WorkerPortsDecorator worker_ports;  // empty: the worker uses the world's own ports
  // Passed to the worker as WorkerOptions::store_decorator (model/worker.hpp):
  // what stands between the worker and its state store. Empty: nothing.
  std::function<std::unique_ptr<JobStateStore>(StateStore& store, Disk& disk)> store_decorator;
  // Stop at the first unexpected violation. Off by default: a run goes on to
  // `until` and records every violation (up to max_violations), so that one
  // run shows everything that went wrong. Invariants listed in
  // scenario.expect.violations never stop the run.
  bool stop_on_violation = false;
  // At most this many violations are kept in ScenarioRunResult::all_violations;
  // the rest are only counted (violation_counts, violations_dropped).
  std::size_t max_violations = 1000;
  // Planned crashes of the worker (crash sweeps); none by default.
  std::optional<WorkerCrashPlan> crash_plan;
  // Record ScenarioRunResult::run_marks (one per executed event) and
  // worker_marks. Off by default (memory grows with the run).
  bool record_marks = false;
  // Keep ScenarioRunResult::worker_log: the worker's log as the production
  // adapter writes it (docs/log-format.md). Off by default (memory grows
  // with the run).
  bool keep_worker_log = false;
  // Keep ScenarioRunResult::state_files: the worker's state directory
  // (kWorldStateDir) as its files are at the end. Off by default.
  bool keep_state_files = false;
};

// The end state of one job, read back from the durable store after the run.
struct FinalJobState {
  std::string job_id;
  std::optional<JobState> state;  // empty when the store could not be read
};

// A reconcile item as its job's pipeline store durably holds it after the run.
struct FinalItemState {
  std::string job_id;
  std::string issue;
  std::string stage;
  std::string reconcile_error;
};

// A state file a state_corrupted fault damaged, at the end of the run.
struct DamagedFile {
  StateFile file = StateFile::retry_state;
  std::string path;   // the bytes actually damaged (the journal while one existed)
  bool kept = false;  // byte-identical to what the last damage left
};

// Everything one run produced. (Named apart from the Simulator's RunResult.)
struct ScenarioRunResult {
  std::string scenario;  // the scenario's name
  std::string path;      // its file, as given
  std::uint64_t seed = 0;
  TimeMs start_ms = 0;
  TimeMs until_ms = 0;
  TimeMs end_ms = 0;  // virtual time when the run ended (until, or earlier when stopped)

  RunOutcome outcome = RunOutcome::completed;
  std::string outcome_message;
  std::uint64_t events_executed = 0;  // simulator events

  // Every event, in order (RunOptions::keep_trace); otherwise its count and
  // hash only.
  Trace trace;
  std::string trace_hash;  // hex64 of the FNV-1a 64 over the JSON Lines bytes
  // The worker's log lines in log format 1 (RunOptions::keep_worker_log).
  std::vector<std::string> worker_log;
  // The state directory's files at the end, by name, in name order
  // (RunOptions::keep_state_files).
  std::vector<std::pair<std::string, std::string>> state_files;
  std::int64_t messenger_calls = 0;  // messenger sends (delivered or refused)

  // Every distinct invariant that fired, first occurrence each, in firing order.
  std::vector<Violation> violations;
  // Every violation, in firing order, up to RunOptions::max_violations.
  std::vector<Violation> all_violations;
  std::map<std::string, std::size_t> violation_counts;  // per invariant, all of them
  std::size_t violations_dropped = 0;  // seen beyond max_violations (counted, not kept)
  nlohmann::json tallies;              // the observer's tallies() at the end

  // Durable end state: one entry per scenario job, in scenario order.
  std::vector<FinalJobState> final_states;
  std::vector<FinalItemState> final_items;  // reconcile jobs' items, store order
  bool store_corrupt = false;
  std::string store_error;                 // why the store could not be read, if it could not
  std::vector<DamagedFile> damaged_files;  // one per state file a fault damaged
  // The run ended with a torn tail in the state journal that no process has
  // reported yet (the world's own reading: a fault cut or flipped its last
  // record after the last boot read it). The read-back drops it, as the next
  // boot would, so final_states may be older than what was acknowledged.
  bool unreported_torn_tail = false;
  // The worker's store was failing closed at the end: the world damaged the
  // state store's files and a state_corrupt notification reached the outbox
  // since the last boot (it may have found a loss the files alone cannot
  // show, e.g. from the delivery ledger, which the read-back does not ask).
  bool store_failing_closed = false;

  // The run ran out of memory and was cut short where it was: end_ms,
  // events_executed, the violations and (when they still fit) the tallies
  // are the run so far; errors says where (docs/run.md).
  bool out_of_memory = false;

  // RunOptions::crash_plan: how many of its points fired (in order), and why
  // the next one did not (empty when all fired).
  std::size_t crash_points_fired = 0;
  std::string crash_point_missed;
  // RunOptions::record_marks: run_marks[k] is the state once k events had
  // executed (run_marks[0]: after the first boot, before any event);
  // worker_marks the worker's boots, crashes and queue_done records in order.
  std::vector<RunMark> run_marks;
  std::vector<WorkerMark> worker_marks;

  // The run could not be carried out as the scenario says (a core task ended
  // with an exception, the queue overflowed): a failure, not an invariant.
  std::vector<std::string> errors;
};

// Runs one scenario once, watched by the observer `observe` builds (the
// invariant monitors: run_scenario(), sim/monitors/monitored_run.hpp).
// Errors (exit 2 for a CLI): a job or fault kind this build cannot run.
// Everything that happens inside the run (violations, failures) is in the
// result.
Result<ScenarioRunResult> run_world(const Scenario& scenario, RunOptions options,
                                    const RunObserverFactory& observe);

}  // namespace rehearse::sim
