// The world's private header, shared by sim/world*.cpp: the World class (one
// run of a scenario) and what each worker process owns.
#pragma once

#include "sim/world/world.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <new>
#include <set>
#include <utility>

#include "model/delivery_ledger.hpp"
#include "model/disk_job_queue.hpp"
#include "model/pipeline_store.hpp"
#include "model/reconcile.hpp"
#include "model/scheduler.hpp"
#include "model/state_store.hpp"
#include "model/worker.hpp"
#include "model/worker_lock.hpp"
#include "sim/kernel/memory_reserve.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/expect.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/generic_service.hpp"
#include "sim/world/job_kind_table.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/orchestrator.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"
#include "sim/world/traced_queue.hpp"
#include "sim/world/worker_clock.hpp"
#include "sim/world/world_facts.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim::world_detail {

using nlohmann::json;

// A process's DiskJobQueue handed to the world's TracedQueue, taken back
// when the process's memory goes (before the queue itself).
class QueueAttachment {
 public:
  QueueAttachment() = default;
  QueueAttachment(TracedQueue& queue, ProcessId process) : queue_(&queue), process_(process) {}
  QueueAttachment(const QueueAttachment&) = delete;
  QueueAttachment& operator=(const QueueAttachment&) = delete;
  QueueAttachment& operator=(QueueAttachment&& other) noexcept {
    std::swap(queue_, other.queue_);
    std::swap(process_, other.process_);
    return *this;
  }
  ~QueueAttachment() {
    if (queue_ != nullptr) queue_->detach(process_);
  }

 private:
  TracedQueue* queue_ = nullptr;
  ProcessId process_ = kWorld;
};

// What one worker process owns; destroyed by a crash: the worker model/
// assembles (model/worker.hpp).
struct WorkerMemory {
  DiskLockHandle worker_lock;              // declared first: released last, with the process
  std::optional<DiskJobQueue> disk_queue;  // queue.store disk: the process's queue
  QueueAttachment queue_attachment;        // (gone before the queue it names)
  WorkerPortWrappers wrappers;             // the worker refers to them
  std::unique_ptr<Worker> worker;
};

class World {
 public:
  World(const Scenario& scenario, const RunOptions& options, std::uint64_t seed,
        RunObserverFactory observe)
      : scenario_(scenario),
        options_(options),
        seed_(seed),
        trace_(options.keep_trace || expectations_need_trace(scenario.expect) ? TraceKeep::all
                                                                              : TraceKeep::none),
        sim_(SimulatorOptions{.start_ms = scenario.start_ms,
                              .seed = seed,
                              .events_max = static_cast<std::uint64_t>(
                                  std::max<std::int64_t>(1, scenario.queue.max_events)),
                              .pending_max = std::size_t{1} << 20}),
        worker_clock_(sim_),
        disk_(&trace_, sim_.rng().derive("disk")),
        queue_(&trace_),
        traced_queue_(&trace_, traced_queue_hooks()),
        services_(sim_, trace_),
        messenger_(sim_, trace_, messenger_options(scenario)),
        log_(sim_, trace_),
        make_observer_(std::move(observe)) {}

  World(const World&) = delete;
  World& operator=(const World&) = delete;

  ~World() {
    // Frames and process memory refer to everything below: cut them first,
    // silently (the run is over; nothing of this belongs to its trace).
    finished_ = true;
    for (ProcessId process : processes_) {
      if (sim_.is_up(process)) sim_.crash(process);
    }
  }

  Status prepare();
  Status check_supported() const;
  void add_services();
  void attach_disk_and_queue();
  Status schedule_faults();
  ScenarioRunResult run();
  // After std::bad_alloc out of run(): what the run reached, without going
  // on with it (docs/run.md).
  ScenarioRunResult cut_short_by_out_of_memory();

 private:
  // A scenario that declares no messenger gets one with the single target
  // the notices go to (kImplicitMessengerTarget, docs/scenario-format.md):
  // a notice refused by a channel nobody declared would only be noise.
  static MessengerOptions messenger_options(const Scenario& scenario) {
    MessengerOptions o;
    if (scenario.services.messenger) {
      o.targets = scenario.services.messenger->targets;
      o.latency_ms = scenario.services.messenger->timing.latency_ms;
    } else {
      o.targets = {kImplicitMessengerTarget};
    }
    return o;
  }

  TracedQueueHooks traced_queue_hooks() {
    return TracedQueueHooks{
        .current_process = [this] { return static_cast<QueueProcess>(sim_.current_process()); },
        .now = [this] { return sim_.now(); },
        .dead = [this](QueueProcess process) { return disk_.is_dead(process); }};
  }

  bool queue_on_disk() const { return scenario_.queue.store == QueueStore::disk; }
  // The queue the worker processes use: the world's SimQueue, or the
  // TracedQueue over each process's own DiskJobQueue.
  JobQueue& world_queue() {
    return queue_on_disk() ? static_cast<JobQueue&>(traced_queue_) : queue_;
  }
  std::string queue_file() const {
    return fmt::format("{}/{}", kWorldQueueDir, DiskJobQueue::kFileName);
  }

  std::string ops_target() const {
    if (scenario_.services.messenger && !scenario_.services.messenger->targets.empty()) {
      return scenario_.services.messenger->targets.front();
    }
    return kImplicitMessengerTarget;
  }

  FaultWorld fault_world();
  Status add_fault(const FaultSpec& fault, std::size_t index);
  json fault_start_data(const FaultSpec& fault, std::size_t index, bool lasting,
                        TimeMs until) const;
  void record_world(std::string type, json data, std::string service = {});
  void boot(Simulator& sim, ProcessId process);
  JobKinds job_kinds_for(Simulator& sim, ProcessId process);
  Task<void> worker_main(Simulator& sim, ProcessId process, WorkerMemory& memory);
  Status open_disk_queue(ProcessId process, WorkerMemory& memory, Disk& disk);
  void record_queue_reopened(ProcessId process);
  void on_process_crashed(ProcessId process);
  const JobSpec* find_job(const std::string& id) const;
  void crash_worker(const std::string& cause, DurationMs down_for_ms, int worker,
                    std::optional<CrashEffect> planned = std::nullopt);
  std::vector<ProcessId> crash_targets(int worker, std::optional<CrashEffect> planned) const;
  void schedule_reboot(ProcessId process, DurationMs down_for_ms);
  // RunOptions::crash_plan and record_marks.
  void arm_next_crash_point();
  void after_event();
  bool planned_disk_death(DiskOwner owner);
  // Worker numbers (1-based) of a process; the one acting (holding the
  // worker lock, or with one worker: that worker while up).
  int worker_number(ProcessId process) const;
  std::optional<int> acting_worker() const;
  void miss_crash_point(std::string why);
  RunMark current_mark() const;
  void record_worker_mark(WorkerMarkKind kind, bool planned);
  void corrupt_state(const FaultSpec& fault);
  void corrupt_job_file(const FaultSpec& fault);
  std::string job_file_path(const JobSpec& job) const;
  Status apply_corruption(const std::string& path, const FaultSpec& fault);
  void on_trace_event(const TraceEvent& event, std::size_t index);
  void on_violation(Violation violation);
  void drain_monitor_violations();
  void record_durable_stages();
  nlohmann::json ledger_ahead_of_state() const;
  void record_durable_item(const std::string& job, const std::string& path, PipelineItemFacts item);
  void record_durable_facts(const std::string& type, const std::string& path);
  void record_ledger_facts(const std::string& file);
  RunResult run_loop_guarded(ScenarioRunResult& result);
  void install_observer_and_listeners();
  void record_outcome(const RunResult& run, ScenarioRunResult& result);
  void sync_secrets();
  void read_final_state(ScenarioRunResult& result);
  void keep_state_files(ScenarioRunResult& result);

  const Scenario& scenario_;
  const RunOptions& options_;
  std::uint64_t seed_;

  Trace trace_;
  Simulator sim_;
  WorkerClock worker_clock_;  // the worker machine's wall clock (clock_step faults)
  SimDisk disk_;
  SimQueue queue_;
  TracedQueue traced_queue_;  // queue.store disk
  SimServices services_;
  std::unique_ptr<ModelApi> model_api_;
  std::unique_ptr<SimBrokerage> brokerage_;
  std::unique_ptr<SimOrchestrator> orchestrator_;
  std::map<std::string, std::unique_ptr<GenericService>> user_services_;  // by name
  Messenger messenger_;
  SimLog log_;
  std::vector<std::string> worker_log_;  // RunOptions::keep_worker_log
  RunObserverFactory make_observer_;
  std::unique_ptr<RunObserver> observer_;
  FaultWorld fault_world_;  // what the fault kinds' hooks act on (sim/world/fault_kinds.hpp)

  ProcessId process_ = kWorld;        // worker 1: the one planned crashes cut
  std::vector<ProcessId> processes_;  // every worker process, worker 1 first
  std::string crash_cause_ = "unknown";
  std::optional<DurationMs> torn_down_for_;  // an armed torn_write's down time
  std::size_t secrets_synced_ = 0;
  std::int64_t messenger_calls_ = 0;
  bool store_damaged_ = false;           // the world damaged the state store's files
  bool store_reported_corrupt_ = false;  // and a state_corrupt was sent since the last boot
  void note_store_verdict(const TraceEvent& event);
  std::vector<const JobSpec*> reconcile_specs_;  // the scenario's reconcile jobs
  std::set<std::string> expected_violations_;
  std::set<std::string> fired_;
  std::vector<Violation> violations_;      // first of each invariant
  std::vector<Violation> all_violations_;  // every one, bounded by options_.max_violations
  std::map<std::string, std::size_t> violation_counts_;
  std::size_t violations_dropped_ = 0;
  std::size_t monitor_violations_seen_ = 0;
  // (job, issue) -> the item's durable facts last recorded
  std::map<std::pair<std::string, std::string>, PipelineItemFacts> durable_items_;
  std::uint64_t events_seen_ = 0;
  bool finished_ = false;
  // expect.damaged_files: per state file, the path the last state_corrupted
  // fault damaged and the bytes it left there.
  std::map<StateFile, std::pair<std::string, std::string>> damaged_;
  std::set<std::string> damaged_job_files_;  // jobs whose own file a fault damaged
  void compare_damaged_files(ScenarioRunResult& result) const;
  // The world's readings of the state store and the ledger (record_durable_facts).
  DurableStateReader state_reader_{kWorldStateDir};
  // The world's witness of torn journal tails in the state store.
  JournalTailWatch tail_watch_{kWorldStateDir};
  std::set<std::string> ledger_renamed_;  // ledger files renamed since the directory's fsync
  std::map<std::pair<std::string, std::string>, json> ledger_recorded_;  // (job, slot)
  // The crash plan: the next point, whether a disk point is armed, the
  // disk's fail-stops seen so far, what the next crash does to the disk.
  std::size_t next_point_ = 0;
  bool disk_point_armed_ = false;
  std::uint64_t fail_stops_seen_ = 0;
  std::optional<std::uint64_t> death_events_;  // the event a planned disk death fell in
  CrashEffect crash_effect_ = CrashEffect::power_loss;
  bool crash_planned_ = false;
  std::size_t crash_points_fired_ = 0;
  std::string crash_point_missed_;
  std::vector<RunMark> run_marks_;
  std::vector<WorkerMark> worker_marks_;
};

}  // namespace rehearse::sim::world_detail
