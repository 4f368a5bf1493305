#include "sim/world.hpp"

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
#include "sim/brokerage.hpp"
#include "sim/expect.hpp"
#include "sim/fault_kinds.hpp"
#include "sim/generic_service.hpp"
#include "sim/memory_reserve.hpp"
#include "sim/messenger.hpp"
#include "sim/model_api.hpp"
#include "sim/orchestrator.hpp"
#include "sim/sim_disk.hpp"
#include "sim/sim_log.hpp"
#include "sim/sim_queue.hpp"
#include "sim/sim_services.hpp"
#include "sim/traced_queue.hpp"
#include "sim/world_facts.hpp"
#include "sim/world_runners.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

ModelOutput to_model_output(TaskOutput output) {
  switch (output) {
    case TaskOutput::summary: return ModelOutput::summary;
    case TaskOutput::preview: return ModelOutput::preview;
    case TaskOutput::skip: return ModelOutput::skip;
  }
  return ModelOutput::skip;
}

CorruptionKind to_corruption_kind(CorruptionMode mode) {
  switch (mode) {
    case CorruptionMode::garbage: return CorruptionKind::garbage;
    case CorruptionMode::empty: return CorruptionKind::empty;
    case CorruptionMode::truncated: return CorruptionKind::truncate;
    case CorruptionMode::flip: return CorruptionKind::flip_bytes;
    case CorruptionMode::schema: break;
  }
  return CorruptionKind::garbage;
}

std::string state_file_path(StateFile file) {
  return fmt::format("{}/{}", kWorldStateDir, to_string(file));
}

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
  World(const Scenario& scenario, const RunOptions& options, std::uint64_t seed)
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
        disk_(&trace_, sim_.rng().derive("disk")),
        queue_(&trace_),
        traced_queue_(&trace_, traced_queue_hooks()),
        services_(sim_, trace_),
        messenger_(sim_, trace_, messenger_options(scenario)),
        log_(sim_, trace_) {}

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
  void install_monitors_and_listeners();
  void record_outcome(const RunResult& run, ScenarioRunResult& result);
  void sync_secrets();
  void read_final_state(ScenarioRunResult& result);

  const Scenario& scenario_;
  const RunOptions& options_;
  std::uint64_t seed_;

  Trace trace_;
  Simulator sim_;
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
  std::unique_ptr<MonitorSet> monitors_;
  FaultWorld fault_world_;  // what the fault kinds' hooks act on (sim/fault_kinds.hpp)

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

void World::record_world(std::string type, json data, std::string service) {
  TraceEvent e;
  e.t = sim_.now();
  e.type = std::move(type);
  e.service = std::move(service);
  e.data = std::move(data);
  trace_.record(std::move(e));
}

Status World::prepare() {
  if (Status s = check_supported(); !s.ok()) return s;
  for (const std::string& name : scenario_.expect.violations) expected_violations_.insert(name);
  add_services();
  attach_disk_and_queue();
  return schedule_faults();
}

// Every job and fault kind of the scenario is one this build can run.
Status World::check_supported() const {
  for (const JobSpec& job : scenario_.jobs) {
    if (!world_supports(job.kind)) {
      return make_error(ErrorCode::unsupported,
                        fmt::format("job kind '{}' is not available in this build",
                                    to_string(job.kind)),
                        scenario_.path + ":" + job.pointer + "/kind");
    }
  }
  for (const FaultSpec& fault : scenario_.faults) {
    if (!world_supports(fault.kind)) {
      return make_error(ErrorCode::unsupported,
                        fmt::format("fault kind '{}' is not available in this build",
                                    to_string(fault.kind)),
                        scenario_.path + ":" + fault.pointer + "/kind");
    }
    // The loader refuses a service fault on the messenger (so `validate`
    // and `run` accept the same files); a scenario built in code may not.
    if (fault.service == ServiceKind::messenger) {
      return make_error(ErrorCode::unsupported,
                        fmt::format("fault kind '{}' cannot target the messenger (use "
                                    "messenger_down for the messenger)",
                                    to_string(fault.kind)),
                        scenario_.path + ":" + fault.pointer + "/service");
    }
  }
  return {};
}

// The simulated services the scenario declares, with their scripted outputs.
void World::add_services() {
  if (scenario_.services.model_api) {
    const ServiceTiming& timing = scenario_.services.model_api->timing;
    model_api_ =
        std::make_unique<ModelApi>(sim_.rng(), ModelApiOptions{.latency_ms = timing.latency_ms,
                                                               .timeout_ms = timing.timeout_ms});
    for (const JobSpec& job : scenario_.jobs) {
      if (job.kind == JobKind::group) {
        for (const GroupTask& task : job.tasks) {
          model_api_->set_output(job.id, task.id, to_model_output(task.produces));
        }
      } else if (job.kind == JobKind::publish) {
        model_api_->set_output(job.id, kPublishTask, ModelOutput::summary);
      }
    }
    services_.add(*model_api_);
  }
  if (scenario_.services.brokerage) {
    const BrokerageService& b = *scenario_.services.brokerage;
    BrokerageConfig config;
    config.token_lifetime_ms = b.token_lifetime_ms;
    config.issue_latency_ms = b.issue_latency_ms;
    config.latency_ms = b.timing.latency_ms;
    config.timeout_ms = b.timing.timeout_ms;
    brokerage_ = std::make_unique<SimBrokerage>(sim_, trace_, config);
    services_.add(*brokerage_);
  }

  if (scenario_.services.orchestrator) {
    orchestrator_ =
        std::make_unique<SimOrchestrator>(sim_, trace_, *scenario_.services.orchestrator);
    for (const JobSpec& job : scenario_.jobs) {
      if (job.kind == JobKind::reconcile) orchestrator_->apply_job_items(job.items);
    }
    services_.add(*orchestrator_);
  }
  for (const auto& [name, user] : scenario_.services.user) {
    auto service = std::make_unique<GenericService>(
        name, sim_.rng(),
        GenericServiceOptions{.latency_ms = user.timing.latency_ms,
                              .timeout_ms = user.timing.timeout_ms});
    services_.add(*service);
    user_services_.emplace(name, std::move(service));
  }
}

// The disk and the queue: one worker process, a crash is a power loss of its
// machine (unsynced bytes are lost; a correct core loses nothing).
void World::attach_disk_and_queue() {
  REHEARSE_ASSERT(disk_.make_dirs("/srv").ok());
  disk_.set_hooks(SimDiskHooks{
      .current_owner = [this] { return static_cast<DiskOwner>(sim_.current_process()); },
      .now = [this] { return sim_.now(); },
      .on_death =
          [this](DiskOwner owner) {
            if (owner == kWorld) return;
            if (planned_disk_death(owner)) return;
            DurationMs down = kWorldSupervisorRestartMs;
            std::string cause = "disk_fault";
            if (torn_down_for_) {
              down = *torn_down_for_;
              torn_down_for_.reset();
              cause = "torn_write";
            }
            // The dying process is the one executing: crash it from a world
            // event at this instant.
            sim_.schedule_call_for(
                kWorld, sim_.now(), [this, cause, down] { crash_worker(cause, down, 0); }, "crash");
          },
  });
  bind_to_simulator(queue_, sim_, SimQueueBinding{kWorldSupervisorRestartMs, &disk_});
}

// Faults in time order, then file order (a stable sort).
Status World::schedule_faults() {
  fault_world_ = fault_world();
  std::vector<std::size_t> order(scenario_.faults.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    return scenario_.faults[a].at_ms < scenario_.faults[b].at_ms;
  });
  for (std::size_t index : order) {
    if (Status s = add_fault(scenario_.faults[index], index); !s.ok()) return s;
  }
  return {};
}

// What the fault kinds' hooks may act on: the services the scenario
// declares, the worker process and the state files.
FaultWorld World::fault_world() {
  FaultWorld w;
  w.model_api = model_api_.get();
  w.brokerage = brokerage_.get();
  w.orchestrator = orchestrator_.get();
  w.messenger = &messenger_;
  w.user_service = [this](const std::string& name) -> GenericService* {
    const auto it = user_services_.find(name);
    return it == user_services_.end() ? nullptr : it->second.get();
  };
  w.crash_worker = [this](const std::string& cause, DurationMs down_for_ms, int worker) {
    crash_worker(cause, down_for_ms, worker);
  };
  w.corrupt_state = [this](const FaultSpec& fault) { corrupt_state(fault); };
  w.corrupt_job_file = [this](const FaultSpec& fault) { corrupt_job_file(fault); };
  w.tear_next_write = [this](StateFile file, DurationMs down_for_ms) {
    // Every write of the state store's files starts with this prefix (the
    // journal, the snapshot and its temp file).
    disk_.arm_torn_write(file == StateFile::retry_state
                             ? fmt::format("{}/retry_state", kWorldStateDir)
                             : state_file_path(file));
    torn_down_for_ = down_for_ms;
  };
  w.until_ms = scenario_.until_ms;
  return w;
}

// The fields of a fault's `fault_start` event (docs/trace-events.md): the
// common ones and the kind's own (its table entry's trace fields).
json World::fault_start_data(const FaultSpec& fault, std::size_t index, bool lasting,
                             TimeMs until) const {
  json start_data{{"fault", index}, {"kind", to_string(fault.kind)}};
  if (lasting) start_data["until"] = format_instant(until);
  if (!fault.note.empty()) start_data["note"] = fault.note;
  for (const FaultTraceField& field : fault_kind_spec(fault.kind).trace) {
    if (auto value = field.read(fault)) start_data[std::string(field.name)] = std::move(*value);
  }
  return start_data;
}

// A fault's events (fault_start, fault_end for a lasting one) and its kind's
// hooks: `schedule` now, `at_instant` at its instant (sim/fault_kinds.hpp).
Status World::add_fault(const FaultSpec& fault, std::size_t index) {
  const FaultKindSpec& kind = fault_kind_spec(fault.kind);
  const TimeMs from = fault.at_ms;
  const TimeMs until = fault.end_ms(scenario_.until_ms);
  const std::string service = kind.applies_to == FaultTarget::messenger
                                  ? std::string(Messenger::kServiceName)
                              : fault.service ? std::string(to_string(*fault.service))
                                              : fault.user_service;
  const json start_data = fault_start_data(fault, index, kind.lasting, until);
  sim_.schedule_call(
      from,
      [this, &fault, &kind, start_data, service] {
        record_world("fault_start", start_data, service);
        if (kind.at_instant) kind.at_instant(fault, fault_world_);
      },
      "fault");
  // Scheduled after fault_start at the same instant: the record comes first.
  if (kind.schedule) {
    if (Status s = kind.schedule(fault, index, from, until, fault_world_); !s.ok()) {
      return make_error(s.error().code, s.error().message, scenario_.path + ":" + fault.pointer);
    }
  }
  if (kind.lasting && until <= scenario_.until_ms) {
    json end_data{{"fault", index}, {"kind", to_string(fault.kind)}};
    sim_.schedule_call(
        until, [this, end_data, service] { record_world("fault_end", end_data, service); },
        "fault_end");
  }
  return {};
}

// Worker `worker` (1-based) crashes alone, the page cache surviving; worker
// 0 is the machine: every worker process goes down with its unsynced writes.
// A planned crash (a crash sweeps') is a power loss of the machine or a
// crash of worker 1 alone. Each process crashed boots again down_for_ms later.
void World::crash_worker(const std::string& cause, DurationMs down_for_ms, int worker,
                         std::optional<CrashEffect> planned) {
  if (finished_) return;
  const std::vector<ProcessId> targets = crash_targets(worker, planned);
  if (targets.empty()) return;  // already down: nothing to cut
  const CrashEffect effect =
      planned.value_or(worker > 0 ? CrashEffect::process_only : CrashEffect::power_loss);
  bool first = true;
  for (ProcessId p : targets) {
    crash_cause_ = cause;
    // The machine's power loss happens once; the other processes die with it.
    crash_effect_ = first ? effect : CrashEffect::process_only;
    crash_planned_ = planned.has_value();
    first = false;
    sim_.crash(p);
    schedule_reboot(p, down_for_ms);
  }
  if (planned) {
    ++crash_points_fired_;
    arm_next_crash_point();
  }
}

int World::worker_number(ProcessId process) const {
  for (std::size_t w = 0; w < processes_.size(); ++w) {
    if (processes_[w] == process) return static_cast<int>(w + 1);
  }
  return 0;
}

std::optional<int> World::acting_worker() const {
  if (processes_.size() == 1) {
    if (sim_.is_up(process_)) return 1;
    return std::nullopt;
  }
  const auto holder = disk_.lock_holder(worker_lock_path(kWorldStateDir));
  if (!holder || !sim_.is_up(static_cast<ProcessId>(*holder))) return std::nullopt;
  return worker_number(static_cast<ProcessId>(*holder));
}

// A planned crash names its worker: a process-only one cuts that process, a
// power loss the machine.
std::vector<ProcessId> World::crash_targets(int worker, std::optional<CrashEffect> planned) const {
  std::vector<ProcessId> targets;
  if ((planned && *planned == CrashEffect::process_only) || (!planned && worker > 0)) {
    const ProcessId one =
        worker > 0 ? processes_.at(static_cast<std::size_t>(worker - 1)) : process_;
    if (sim_.is_up(one)) targets.push_back(one);
    return targets;
  }
  for (ProcessId p : processes_) {
    if (sim_.is_up(p)) targets.push_back(p);
  }
  return targets;
}

void World::schedule_reboot(ProcessId process, DurationMs down_for_ms) {
  const TimeMs at = sim_.now() + std::max<DurationMs>(0, down_for_ms);
  sim_.schedule_call_for(
      kWorld, at,
      [this, process] {
        if (!finished_ && !sim_.is_up(process)) sim_.boot(process);
      },
      "boot");
}

// The next point of RunOptions::crash_plan: an event point fires from
// after_event (or at once when its count is already reached), a disk point
// is a fail-stop of the worker's disk operations (planned_disk_death).
void World::arm_next_crash_point() {
  if (!options_.crash_plan || next_point_ >= options_.crash_plan->points.size()) return;
  const WorkerCrashPoint& point = options_.crash_plan->points[next_point_];
  if (point.at == CrashAt::event) {
    if (events_seen_ > point.index) {
      miss_crash_point(fmt::format("event point {} is behind the run ({} events executed)",
                                   point.index, events_seen_));
    } else if (events_seen_ == point.index) {
      after_event();  // the count is reached now: the worker is down, so it is missed
    }
    return;
  }
  const std::uint64_t done = disk_.operations();
  if (done > point.index) {
    miss_crash_point(fmt::format("disk point {} is behind the run ({} operations performed)",
                                 point.index, done));
    return;
  }
  // One worker: its own operations; several: whichever process does the
  // point's operation dies (planned_disk_death).
  std::optional<DiskOwner> owner;
  if (processes_.size() == 1) owner = static_cast<DiskOwner>(process_);
  disk_.fail_stop_after(point.index - done, owner);
  fail_stops_seen_ = disk_.counters().fail_stops;
  disk_point_armed_ = true;
}

// After every executed event (and once before the first): the run's mark,
// then an event crash point whose count is reached.
void World::after_event() {
  if (options_.record_marks && run_marks_.size() == events_seen_) {
    run_marks_.push_back(current_mark());
  }
  if (!options_.crash_plan || next_point_ >= options_.crash_plan->points.size()) return;
  const WorkerCrashPoint point = options_.crash_plan->points[next_point_];
  if (point.at != CrashAt::event || point.index != events_seen_) return;
  const std::optional<int> acting = acting_worker();
  if (!acting) {
    miss_crash_point(fmt::format("the worker is down after {} events", events_seen_));
    return;
  }
  ++next_point_;
  crash_worker("crash_sweep", options_.crash_plan->reboot_after_ms, *acting, point.effect);
}

// The disk's death of the worker is the armed disk point's fail-stop: crash
// it from a world event at this instant with the point's effect.
bool World::planned_disk_death(DiskOwner owner) {
  if (!disk_point_armed_ || disk_.counters().fail_stops <= fail_stops_seen_) return false;
  const int worker = worker_number(static_cast<ProcessId>(owner));
  disk_point_armed_ = false;
  const WorkerCrashPoint point = options_.crash_plan->points[next_point_++];
  death_events_ = sim_.events_executed();
  const DurationMs down = options_.crash_plan->reboot_after_ms;
  sim_.schedule_call_for(
      kWorld, sim_.now(),
      [this, down, worker, effect = point.effect] {
        crash_worker("crash_sweep", down, worker, effect);
      },
      "crash");
  return true;
}

void World::miss_crash_point(std::string why) {
  if (crash_point_missed_.empty()) crash_point_missed_ = std::move(why);
  next_point_ = options_.crash_plan->points.size();  // the plan ends here
}

RunMark World::current_mark() const {
  return RunMark{trace_.size(), trace_.hash(), disk_.operations(), acting_worker().has_value()};
}

void World::record_worker_mark(WorkerMarkKind kind, bool planned) {
  if (!options_.record_marks) return;
  std::uint64_t events = sim_.events_executed();
  if (kind == WorkerMarkKind::crash && planned && death_events_) {
    events = *death_events_;  // a disk point: the event it fell in, not the crash's
    death_events_.reset();
  }
  worker_marks_.push_back(WorkerMark{kind, events, disk_.operations(), planned});
}

void World::corrupt_state(const FaultSpec& fault) {
  // The live state of retry_state.json is its journal while one exists: the
  // store follows the journal between full loads (docs/state-file.md), so
  // damage must reach the bytes the core actually reads to be a fault at all.
  std::string path = state_file_path(fault.file);
  if (fault.file == StateFile::retry_state) {
    const std::string journal = fmt::format("{}/{}", kWorldStateDir, StateStore::kJournalName);
    if (disk_.live_content(journal).has_value()) path = journal;
  }
  const bool existed = disk_.live_content(path).has_value();
  const bool exact = fault.cut.has_value() || !fault.flips.empty();
  bool applied = false;
  std::string refused;  // why exact damage could not be done to this file
  if (existed && fault.mode != CorruptionMode::schema) {
    Status s = apply_corruption(path, fault);
    applied = s.ok();
    if (!s.ok() && exact) refused = s.error().message;
  }
  if (!applied && refused.empty()) {
    // A file that does not exist yet (the store keeps its snapshot only after
    // a compaction), a schema break, or damage the kind cannot do (truncating
    // an empty file): the file is put in place already damaged. Valid JSON of
    // the wrong shape for `schema`; bytes that are not JSON otherwise.
    std::string bytes;
    switch (fault.mode) {
      case CorruptionMode::schema: bytes = "{\"format\":\"not-a-version\",\"jobs\":7}\n"; break;
      case CorruptionMode::empty: bytes = ""; break;
      case CorruptionMode::truncated: bytes = "{\"format\":1,\"journal_seq\":"; break;
      case CorruptionMode::garbage:
      case CorruptionMode::flip: bytes = "\x7f\x01garbage\xff\xfe"; break;
    }
    applied = disk_.put_durable(path, bytes).ok();
  }
  json data{{"file", to_string(fault.file)},
            {"path", path},
            {"mode", to_string(fault.mode)},
            {"existed", existed},
            {"applied", applied}};
  if (fault.cut) data["cut"] = *fault.cut;
  if (!fault.flips.empty()) data["flips"] = fault.flips;
  if (!refused.empty()) data["error"] = refused;
  // A cut at a record boundary of the journal leaves a valid, shorter
  // journal: records lost that the file cannot show (docs/state-file.md,
  // "What stays undetectable"); state_durable then holds the store to
  // keeping the file only once the core itself found the loss.
  if (applied && path.ends_with(StateStore::kJournalName) &&
      journal_records_whole(disk_.live_content(path).value_or(std::string()))) {
    data["records_whole"] = true;
    data["ledger_ahead"] = ledger_ahead_of_state();
  }
  record_world("store_corrupt_injected", std::move(data));
  if (!applied) return;
  damaged_[fault.file] = {path, disk_.live_content(path).value_or(std::string())};
  // Who reads the damaged bytes is a world fact (`disk_read`): state_durable
  // asks for a report of the damage from a process that read it.
  disk_.watch_reads(path);
}

// The jobs whose durable delivery ledger (the world's own reading) holds a
// slot later than the durable state's last slot for the job, or any slot of
// a job the state does not know: records the state lost, which the ledger
// proves (docs/scheduler.md, "Fail-closed modes"). Each as {job,
// ledger_slot, state_last_slot (null when none)}, in job order.
json World::ledger_ahead_of_state() const {
  std::map<std::string, TimeMs> ledger_last;
  for (const auto& [key, slot] : ledger_recorded_) {
    const auto t = parse_instant(key.second);
    if (!t.ok()) continue;
    auto [it, added] = ledger_last.emplace(key.first, *t);
    if (!added) it->second = std::max(it->second, *t);
  }
  DurableStateReader reader(state_reader_.dir());
  std::map<std::string, json> state;
  for (auto& [job, facts] : reader.changed(disk_, /*full=*/true)) state[job] = std::move(facts);
  json out = json::array();
  for (const auto& [job, ledger_slot] : ledger_last) {
    std::optional<TimeMs> state_last;
    if (const auto it = state.find(job); it != state.end()) {
      const json& last = it->second.value("last_slot", json());
      if (last.is_string()) {
        if (const auto t = parse_instant(last.get<std::string>()); t.ok()) state_last = *t;
      }
    }
    if (state_last && *state_last >= ledger_slot) continue;
    out.push_back({{"job", job},
                   {"ledger_slot", format_instant(ledger_slot)},
                   {"state_last_slot", state_last ? json(format_instant(*state_last)) : json()}});
  }
  return out;
}

// The file a job keeps of its own that its reader loads: a ledger's journal
// while one exists, else its snapshot; a reconcile job's pipeline file.
std::string World::job_file_path(const JobSpec& job) const {
  if (job.kind == JobKind::reconcile) {
    return fmt::format("{}/{}", reconcile_config_from(job).store_dir, PipelineStore::kFileName);
  }
  const std::string name = DeliveryLedger::encode_job_id(job.id);
  const std::string journal =
      fmt::format("{}/{}{}", kWorldLedgerDir, name, DeliveryLedger::kJournalSuffix);
  if (disk_.live_content(journal).has_value()) return journal;
  return fmt::format("{}/{}{}", kWorldLedgerDir, name, DeliveryLedger::kFileSuffix);
}

// A job_file_corrupted fault: the file is replaced, durably, by bytes its
// reader must refuse (not JSON, empty, or JSON of the wrong shape), whether
// or not it existed. Who reads them afterwards is a world fact (`disk_read`).
void World::corrupt_job_file(const FaultSpec& fault) {
  const JobSpec* job = find_job(fault.job);
  REHEARSE_ASSERT(job != nullptr);  // the loader checked the reference
  const std::string path = job_file_path(*job);
  const bool existed = disk_.live_content(path).has_value();
  std::string bytes;
  switch (fault.mode) {
    case CorruptionMode::schema: bytes = "{\"format\":\"not-a-version\",\"jobs\":7}\n"; break;
    case CorruptionMode::empty: break;
    default: bytes = "\x7f\x01garbage\xff\xfe"; break;
  }
  const bool applied = disk_.put_durable(path, bytes).ok();
  TraceEvent e;
  e.t = sim_.now();
  e.type = "job_file_damaged";
  e.job = fault.job;
  e.data = json{
      {"path", path}, {"mode", to_string(fault.mode)}, {"existed", existed}, {"applied", applied}};
  trace_.record(std::move(e));
  if (!applied) return;
  damaged_job_files_.insert(fault.job);
  disk_.watch_reads(path);
}

// Each damaged state file at the end: the very bytes the damage left, or not.
void World::compare_damaged_files(ScenarioRunResult& result) const {
  for (const auto& [file, damage] : damaged_) {
    const std::optional<std::string> now = disk_.live_content(damage.first);
    result.damaged_files.push_back(DamagedFile{file, damage.first, now == damage.second});
  }
}

// The damage a state_corrupted fault does to an existing file: exact when the
// fault says where (`cut`, `flips`: each byte XORed with 0x01), drawn from
// the disk's generator otherwise.
Status World::apply_corruption(const std::string& path, const FaultSpec& fault) {
  if (fault.mode == CorruptionMode::truncated && fault.cut) {
    Corruption c;
    c.kind = CorruptionKind::truncate;
    c.offset = *fault.cut;
    return disk_.corrupt(path, c);
  }
  if (fault.mode == CorruptionMode::flip && !fault.flips.empty()) {
    const std::size_t size = disk_.live_content(path)->size();
    for (const std::uint64_t offset : fault.flips) {
      if (offset >= size) {
        return make_error(ErrorCode::invalid_argument,
                          fmt::format("flip offset {} is past the end of the file ({} bytes)",
                                      offset, size),
                          path);
      }
    }
    for (const std::uint64_t offset : fault.flips) {
      Corruption c;
      c.kind = CorruptionKind::flip_bytes;
      c.offset = offset;
      c.xor_mask = 0x01;
      if (Status s = disk_.corrupt(path, c); !s.ok()) return s;
    }
    return {};
  }
  return disk_.corrupt(path, to_corruption_kind(fault.mode));
}

// A boot: the process's memory, and its root task (worker_main).
void World::boot(Simulator& sim, ProcessId process) {
  WorkerMemory& memory = sim.emplace_memory<WorkerMemory>(process);
  if (options_.worker_ports) {
    memory.wrappers = options_.worker_ports(world_queue(), messenger_, disk_);
  }
  sim.spawn(process, worker_main(sim, process, memory), "scheduler");
}

// The core's job kinds; a test's factory goes first where it gives a runner
// (a deliberately faulty variant), the core's factory otherwise.
JobKinds World::job_kinds_for(Simulator& sim, ProcessId process) {
  JobKinds kinds = job_kinds();
  if (!options_.runner_factory) return kinds;
  for (JobKindEntry& kind : kinds) {
    kind.make = [this, &sim, process,
                 core = kind.make](const JobConfig& config, const PolicyOrError& policy,
                                   JobPorts& ports) -> Result<std::unique_ptr<JobRunner>> {
      const JobSpec* spec = find_job(config.id);
      REHEARSE_ASSERT(spec != nullptr);
      RunnerPorts runner_ports{
          sim,       process,    ports.clock,  ports.services,     ports.notifier,
          ports.log, ports.disk, ports.ledger, ports.token_client, scenario_};
      if (auto runner = options_.runner_factory(*spec, runner_ports)) return runner;
      return core(config, policy, ports);
    };
  }
  return kinds;
}

// The worker process's life, as a production program's main: the state
// directory's worker lock (standing by while another process holds it), the
// worker model/ assembles, its scheduler loop; once the scheduler halts (an
// I/O error of the store or the queue) a supervisor restarts the process.
Task<void> World::worker_main(Simulator& sim, ProcessId process, WorkerMemory& memory) {
  JobQueue& queue = memory.wrappers.queue ? *memory.wrappers.queue : world_queue();
  Notifier& notifier =
      memory.wrappers.notifier ? *memory.wrappers.notifier : static_cast<Notifier&>(messenger_);
  Disk& disk = memory.wrappers.disk ? *memory.wrappers.disk : static_cast<Disk&>(disk_);
  auto lock = co_await take_worker_lock(disk, sim.clock(), log_, kWorldStateDir,
                                        scenario_.queue.standby_poll_ms);
  if (!lock.ok()) {
    log_.error("worker_boot_failed", {{"error", lock.error().describe()}});
    co_return;  // a disk fault killed the process here; the world reboots it
  }
  memory.worker_lock = std::move(lock).value();
  if (queue_on_disk()) {
    if (Status s = open_disk_queue(process, memory, disk); !s.ok()) {
      log_.error("worker_boot_failed", {{"error", s.error().describe()}});
      co_return;  // fails closed: a damaged queue file is kept for its operator
    }
  }
  WorkerOptions options;
  options.state_dir = kWorldStateDir;
  options.ledger_dir = kWorldLedgerDir;
  options.ops_target = ops_target();
  options.concurrency = scenario_.queue.concurrency;
  options.start_ms = scenario_.start_ms;
  options.store_decorator = options_.store_decorator;
  auto worker = Worker::open(
      WorkerPorts{sim.clock(), queue, disk, services_, notifier, log_, sim.rng(), scenario_.env},
      job_configs_of(scenario_.jobs), std::move(options), job_kinds_for(sim, process));
  if (!worker.ok()) {
    log_.error("worker_boot_failed", {{"error", worker.error().describe()}});
    co_return;  // a disk fault killed the process here; the world reboots it
  }
  memory.worker = std::move(worker).value();
  co_await memory.worker->run();
  sim_.schedule_call_for(
      kWorld, sim_.now(),
      [this] { crash_worker("scheduler_halted", kWorldSupervisorRestartMs, 0); }, "crash");
}

// `queue.store: disk`: the process opens the core's DiskJobQueue on the disk
// it uses, after the worker lock as a production main does; the world's
// TracedQueue forwards the process's calls to it until the process dies, and
// the world reads what the reopened file durably holds.
Status World::open_disk_queue(ProcessId process, WorkerMemory& memory, Disk& disk) {
  auto opened = DiskJobQueue::open(disk, kWorldQueueDir);
  if (!opened.ok()) return std::move(opened).error();
  memory.disk_queue.emplace(std::move(opened).value());
  traced_queue_.attach(static_cast<QueueProcess>(process), *memory.disk_queue);
  memory.queue_attachment = QueueAttachment(traced_queue_, process);
  record_queue_reopened(process);
  return {};
}

// The witness of the queue's durable promise (docs/monitors.md,
// state_durable): what the reopened queue file durably holds, read with the
// world's own minimal reader (world_facts.hpp), not the core's codec, whose
// bug would otherwise hide itself. No file is an empty queue.
void World::record_queue_reopened(ProcessId process) {
  const std::string path = queue_file();
  const std::optional<std::string> bytes = disk_.durable_content(path);
  json data{{"path", path},
            {"process", process},
            {"entries", json::array()},
            {"outbox", json::array()},
            {"readable", true}};
  if (bytes) {
    if (const std::optional<QueueFileFacts> facts = queue_file_facts(*bytes)) {
      data["entries"] = facts->entries;
      data["outbox"] = facts->outbox;
    } else {
      data["readable"] = false;
    }
  }
  record_world("queue_reopened", std::move(data), "queue");
}

const JobSpec* World::find_job(const std::string& id) const {
  for (const JobSpec& job : scenario_.jobs) {
    if (job.id == id) return &job;
  }
  return nullptr;
}

void World::sync_secrets() {
  if (!brokerage_) return;
  const auto& tokens = brokerage_->tokens();
  while (secrets_synced_ < tokens.size()) monitors_->add_secret(tokens[secrets_synced_++].value);
}

void World::on_violation(Violation violation) {
  ++violation_counts_[violation.invariant];
  if (all_violations_.size() < options_.max_violations) {
    all_violations_.push_back(violation);
  } else {
    ++violations_dropped_;
  }
  if (fired_.count(violation.invariant) != 0) return;  // the first occurrence is the one reported
  fired_.insert(violation.invariant);
  const bool expected = expected_violations_.count(violation.invariant) != 0;
  const std::string reason =
      fmt::format("invariant {} violated at event {}: {}", violation.invariant,
                  violation.event_index, violation.message);
  violations_.push_back(std::move(violation));
  if (!expected && options_.stop_on_violation) sim_.stop(reason);
}

// Whether the worker's store is failing closed at the end, from world facts
// only: a `state_corrupt` notification the outbox received since the last
// boot, after the world damaged the state store's files (liveness does not
// judge jobs a store keeps from changing: docs/check.md).
void World::note_store_verdict(const TraceEvent& event) {
  const std::string& type = event.type;
  if (type == "store_corrupt_injected") {
    if (event.flag("applied")) store_damaged_ = true;
  } else if (type == "disk_corrupted" || type == "disk_torn_write") {
    const std::string path = event.str("path");
    const std::string_view dir = kWorldStateDir;
    if (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
        path[dir.size()] == '/') {
      store_damaged_ = true;
    }
  } else if (type == "process_boot") {
    store_reported_corrupt_ = false;
  } else if (type == "outbox_add" && event.str("event") == "state_corrupt") {
    store_reported_corrupt_ = store_damaged_;
  }
}

void World::on_trace_event(const TraceEvent& event, std::size_t index) {
  if (options_.trace_sink) options_.trace_sink(event, index);
  if (event.type == "queue_done") record_worker_mark(WorkerMarkKind::run_done, false);
  note_store_verdict(event);
  if (event.service == to_string(ServiceKind::messenger) &&
      (event.type == "message_delivered" || event.type == "message_refused")) {
    ++messenger_calls_;
  }
  // A token issued by the brokerage is a secret from the moment it exists.
  sync_secrets();
  monitors_->observe(event, index);
  drain_monitor_violations();
  // Last: it may record events of its own (and `event` is not used after).
  std::vector<TraceEvent> tails = tail_watch_.events_after(disk_, event, sim_.now());
  if (event.type == "disk_rename" || event.type == "disk_fsync" || event.type == "disk_fsync_dir") {
    const std::string type = event.type;
    const std::string path = event.str(type == "disk_rename" ? "to" : "path");
    record_durable_stages();
    record_durable_facts(type, path);
  }
  for (TraceEvent& e : tails) trace_.record(std::move(e));
}

// The world's own reading of the state store and the delivery ledger
// (sim/world_facts.hpp): after the journal's fsync (its new records) or a
// directory fsync of the state directory (a compaction or a new journal:
// everything), each job whose durable facts changed gets a
// `durable_job_state`; a ledger file renamed into place gets its slots read
// once the ledger directory's fsync made the rename durable, and each slot
// whose facts changed gets a `durable_delivery`.
void World::record_durable_facts(const std::string& type, const std::string& path) {
  for (TraceEvent& e : state_reader_.events_after(disk_, type, path, sim_.now())) {
    trace_.record(std::move(e));
  }
  const std::string ledger_dir = kWorldLedgerDir;
  const bool in_ledger_dir = path.rfind(ledger_dir + "/", 0) == 0;
  if (type == "disk_rename" && in_ledger_dir) {
    ledger_renamed_.insert(path);
  } else if (type == "disk_fsync" && in_ledger_dir && path.ends_with(".ledger.journal")) {
    record_ledger_facts(path);  // an append made durable
  } else if (type == "disk_fsync_dir" && path == ledger_dir) {
    const std::set<std::string> files = std::move(ledger_renamed_);
    ledger_renamed_.clear();
    for (const std::string& file : files) record_ledger_facts(file);
  }
}

void World::record_ledger_facts(const std::string& file) {
  const std::string* bytes = disk_.durable_view(file);
  if (bytes == nullptr) return;
  const bool journal = file.size() > 15 && file.ends_with(".ledger.journal");
  auto facts = journal ? ledger_journal_facts(*bytes) : ledger_facts(*bytes);
  if (!facts) return;
  const std::string& job = facts->first;
  for (auto& [slot_text, slot] : facts->second) {
    json& last = ledger_recorded_[{job, slot_text}];
    if (last == slot) continue;
    last = slot;
    const auto slot_t = parse_instant(slot_text);
    TraceEvent e;
    e.t = sim_.now();
    e.type = "durable_delivery";
    e.job = job;
    if (slot_t.ok()) e.slot = *slot_t;
    e.data = slot;
    trace_.record(std::move(e));
  }
}

// The world's own reading of each pipeline store's durable bytes (docs/
// monitors.md: stage_monotonic reads it, never the core's stage_changed):
// after every rename or fsync, the durable pipeline file is read with a
// minimal reader of the world's own (pipeline_item_facts), and every item
// whose durable stage or error differs from the last one recorded gets a
// `durable_stage` event, and one whose next attempt or last visit differs a
// `durable_schedule` event. Not the core's codec: a codec that misread a
// field would otherwise hide its own bug. Bytes that do not parse record
// nothing (the core fails such a cycle closed; state_durable is about the
// state store).
void World::record_durable_stages() {
  for (const JobSpec* reconcile : reconcile_specs_) {  // not every job: per event
    const JobSpec& spec = *reconcile;
    const std::string path =
        fmt::format("{}/{}", reconcile_config_from(spec).store_dir, PipelineStore::kFileName);
    const std::optional<std::string> bytes = disk_.durable_content(path);
    if (!bytes) continue;
    for (PipelineItemFacts& item : pipeline_item_facts(*bytes)) {
      record_durable_item(spec.id, path, std::move(item));
    }
  }
}

void World::record_durable_item(const std::string& job, const std::string& path,
                                PipelineItemFacts item) {
  PipelineItemFacts& last = durable_items_[{job, item.issue}];
  const auto event = [&](const char* type, json data) {
    TraceEvent e;
    e.t = sim_.now();
    e.type = type;
    e.job = job;
    e.item = item.issue;
    e.data = std::move(data);
    trace_.record(std::move(e));
  };
  if (last.stage != item.stage || last.error != item.error) {
    event("durable_stage", json{{"stage", item.stage}, {"path", path}, {"error", item.error}});
  }
  if (last.next_attempt_at != item.next_attempt_at || last.updated_at != item.updated_at) {
    event("durable_schedule", json{{"next_attempt_at", item.next_attempt_at},
                                   {"updated_at", item.updated_at},
                                   {"path", path}});
  }
  last = std::move(item);
}

// Every violation the monitors found since the last call (an event may show
// several), in the order they found them.
void World::drain_monitor_violations() {
  const std::vector<Violation>& found = monitors_->violations();
  while (monitor_violations_seen_ < found.size()) on_violation(found[monitor_violations_seen_++]);
}

void World::read_final_state(ScenarioRunResult& result) {
  // Read back what the store durably holds, as a fresh process would; the
  // read is not part of the run, so it is not traced.
  disk_.set_trace(nullptr);
  // A torn write or fail-stop the run armed and never reached belongs to the
  // run, not to this read (it would kill the reader and make the read-back
  // fail: a harness error).
  disk_.disarm_torn_write();
  disk_.cancel_fail_stop();
  compare_damaged_files(result);
  result.unreported_torn_tail = tail_watch_.unreported_tail();
  result.store_failing_closed = store_reported_corrupt_;
  auto store = StateStore::open(disk_, kWorldStateDir);
  if (!store.ok()) {
    result.store_error = store.error().describe();
  } else if (!store->health().ok()) {
    result.store_corrupt = true;
    result.store_error = store->health().error ? store->health().error->describe() : "corrupt";
  }
  for (const JobSpec& spec : scenario_.jobs) {
    FinalJobState f;
    f.job_id = spec.id;
    if (store.ok() && store->health().ok()) {
      auto s = store->read(spec.id);
      if (s.ok()) f.state = std::move(s).value();
    }
    result.final_states.push_back(std::move(f));
  }
  // Reconcile items as their pipeline stores durably hold them.
  for (const JobSpec& spec : scenario_.jobs) {
    if (spec.kind != JobKind::reconcile) continue;
    PipelineStore pipeline(disk_, reconcile_config_from(spec).store_dir);
    auto items = pipeline.load();
    // A file the world damaged holds no items to read back: the job failed
    // closed on it (state_durable judges that), and its items have no end state.
    if (!items.ok() && damaged_job_files_.count(spec.id) != 0) continue;
    if (!items.ok()) {
      result.errors.push_back(fmt::format("job {}: the pipeline store cannot be read back: {}",
                                          spec.id, items.error().describe()));
      continue;
    }
    for (const PipelineItem& item : *items) {
      result.final_items.push_back(
          FinalItemState{spec.id, item.issue, item.stage, item.reconcile_error});
    }
  }
}

// The run loop, with running out of memory as an end of its own: the trace's
// kept events are let go (what memory there is goes to the report), and the
// run ends where it was, reported like a stopped run with an error saying why
// (docs/run.md). Everything after this still reads the monitors' tallies.
RunResult World::run_loop_guarded(ScenarioRunResult& result) {
  // Going on to the end-of-run steps after std::bad_alloc crashed: the
  // simulator is left mid-event. It propagates to run_scenario, which asks
  // the world for the run so far (cut_short_by_out_of_memory) and stops.
  (void)result;
  return sim_.run_until(scenario_.until_ms);
}

// The monitors, and the listeners that feed them and the world's own
// records (log lines, trace events, progress, process crashes and boots).
void World::install_monitors_and_listeners() {
  monitors_ = std::make_unique<MonitorSet>(scenario_);
  // The world's own layout: its stores change only under their locks.
  monitors_->add_locked_store(kWorldStateDir);
  monitors_->add_locked_store(kWorldLedgerDir);
  if (queue_on_disk()) monitors_->add_locked_store(kWorldQueueDir);
  for (const JobSpec& spec : scenario_.jobs) {
    if (spec.kind == JobKind::reconcile) {
      monitors_->add_locked_store(reconcile_config_from(spec).store_dir);
      reconcile_specs_.push_back(&spec);
    }
  }
  // Log lines are text the secrets monitor reads too, as they are written
  // (at their own trace event), and then dropped.
  log_.set_line_observer([this](const std::string& line) {
    monitors_->observe_text(line, trace_.size() - 1, sim_.now());
    drain_monitor_violations();
  });
  // Full agent ids are secrets the monitors take from the scenario itself.
  trace_.add_listener(
      [this](const TraceEvent& event, std::size_t index) { on_trace_event(event, index); });
  sim_.add_event_listener([this](const ExecutedEvent&) {
    ++events_seen_;
    // An allocation the memory reserve served: end the run here, at an
    // event boundary, as out of memory (sim/memory_reserve.hpp).
    if (memory_reserve_spent()) throw std::bad_alloc();
    after_event();
    if (options_.progress && options_.progress_every_events > 0 &&
        events_seen_ % options_.progress_every_events == 0) {
      options_.progress(
          RunProgress{sim_.now(), scenario_.start_ms, scenario_.until_ms, events_seen_});
    }
  });
  sim_.add_process_listener([this](ProcessId process, ProcessChange change, TimeMs) {
    if (finished_) return;
    if (change == ProcessChange::crashed) {
      on_process_crashed(process);
    } else {
      record_worker_mark(WorkerMarkKind::boot, false);
      record_world("process_boot", json{{"process", sim_.process_name(process)},
                                        {"pid", process},
                                        {"boots", sim_.boot_count(process)}});
    }
  });
}

// A worker process died: the queue call its death cut is settled against
// what the crash leaves of the queue file, then the machine goes down with
// the worker (a planned crash may cut the process alone).
void World::on_process_crashed(ProcessId process) {
  const bool process_only = crash_effect_ == CrashEffect::process_only;
  if (queue_on_disk()) {
    const std::string path = queue_file();
    traced_queue_.settle(static_cast<QueueProcess>(process),
                         process_only ? disk_.live_content(path) : disk_.durable_content(path));
  }
  if (process_only) {
    disk_.process_crashed(static_cast<DiskOwner>(process));
  } else {
    disk_.crash();
  }
  record_worker_mark(WorkerMarkKind::crash, crash_planned_);
  crash_effect_ = CrashEffect::power_loss;
  crash_planned_ = false;
  record_world("process_crash", json{{"process", sim_.process_name(process)},
                                     {"pid", process},
                                     {"cause", crash_cause_},
                                     {"crashes", sim_.crash_count(process)}});
  crash_cause_ = "unknown";
}

// The run loop's outcome into the result; a bounded run is a violation,
// an overflow, a failed task or a failed assertion an error.
void World::record_outcome(const RunResult& run, ScenarioRunResult& result) {
  result.outcome = run.outcome;
  result.outcome_message = run.message;
  result.events_executed = run.events_executed;
  result.end_ms = sim_.now();
  switch (run.outcome) {
    case RunOutcome::completed:
    case RunOutcome::stopped: break;
    case RunOutcome::bounded_run:
      on_violation(Violation{
          "bounded_run", trace_.size(), sim_.now(),
          fmt::format("the run reached its bound of {} events (queue.max_events) with events "
                      "still due before {}: a scenario meant to run this long needs a larger "
                      "queue.max_events; a short one that loops points at the core",
                      scenario_.queue.max_events, format_instant(scenario_.until_ms))});
      break;
    case RunOutcome::queue_overflow:
    case RunOutcome::task_failed:
    case RunOutcome::assertion_failed:
      result.errors.push_back(
          fmt::format("the run ended with {}: {}", to_string(run.outcome), run.message));
      break;
  }
}

ScenarioRunResult World::run() {
  ScenarioRunResult result;
  result.scenario = scenario_.name;
  result.path = scenario_.path;
  result.seed = seed_;
  result.start_ms = scenario_.start_ms;
  result.until_ms = scenario_.until_ms;

  install_monitors_and_listeners();
  for (int w = 1; w <= scenario_.queue.workers; ++w) {
    processes_.push_back(sim_.add_process(w == 1 ? "worker" : fmt::format("worker-{}", w),
                                          [this](Simulator& s, ProcessId p) { boot(s, p); }));
  }
  process_ = processes_.front();
  // A first disk point is armed before the first boot, which it may cut; an
  // event point 0 fires once the worker is up, before the first event.
  if (options_.crash_plan && !options_.crash_plan->points.empty() &&
      options_.crash_plan->points.front().at == CrashAt::disk_operation) {
    arm_next_crash_point();
  }
  for (ProcessId process : processes_) sim_.boot(process);
  after_event();  // the mark before the first event
  const RunResult run = run_loop_guarded(result);

  record_outcome(run, result);
  // (No seed here: a scenario without random faults gives the same trace
  // under every seed, and the trace shows that.)
  record_world("run_end",
               json{{"outcome", to_string(run.outcome)}, {"events", run.events_executed}});
  // End-of-run invariants judge a run that reached `until` only: a stopped
  // or bounded run has already failed, and its end state is not an end.
  if (run.outcome == RunOutcome::completed) {
    monitors_->finish(scenario_.until_ms);
    drain_monitor_violations();
  }
  result.tallies = monitors_->tallies();
  finished_ = true;
  // Reading the stores back needs memory of its own: not after the reserve
  // served the loop's last events.
  if (memory_reserve_spent()) throw std::bad_alloc();
  read_final_state(result);
  result.violations = violations_;
  result.all_violations = all_violations_;
  result.violation_counts = violation_counts_;
  result.violations_dropped = violations_dropped_;
  result.messenger_calls = messenger_calls_;
  result.crash_points_fired = crash_points_fired_;
  result.crash_point_missed = crash_point_missed_;
  if (options_.crash_plan && crash_point_missed_.empty() &&
      crash_points_fired_ < options_.crash_plan->points.size()) {
    result.crash_point_missed = fmt::format("crash point {} of the plan was not reached by the end",
                                            crash_points_fired_ + 1);
  }
  result.run_marks = std::move(run_marks_);
  result.worker_marks = std::move(worker_marks_);
  // Hand the events over in a Trace of their own, without the world's listeners.
  result.trace_hash = hex64(trace_.hash());
  result.trace = trace_.take();
  if (options_.progress) {
    options_.progress(
        RunProgress{sim_.now(), scenario_.start_ms, scenario_.until_ms, events_seen_});
  }
  return result;
}

// The run so far, after running out of memory mid-event: the kept trace is
// let go first, so that there is memory for the report; the run is not
// continued (the event that failed is half done) and nothing is read from
// the stores. The monitors' tallies are reported when they still fit.
ScenarioRunResult World::cut_short_by_out_of_memory() {
  { const Trace dropped = trace_.take(); }
  ScenarioRunResult result;
  result.out_of_memory = true;
  result.outcome = RunOutcome::stopped;
  result.scenario = scenario_.name;
  result.path = scenario_.path;
  result.seed = seed_;
  result.start_ms = scenario_.start_ms;
  result.until_ms = scenario_.until_ms;
  result.end_ms = sim_.now();
  result.events_executed = events_seen_;
  result.trace_hash = hex64(trace_.hash());
  result.violations = std::move(violations_);
  result.all_violations = std::move(all_violations_);
  result.violation_counts = std::move(violation_counts_);
  result.violations_dropped = violations_dropped_;
  result.errors.push_back(fmt::format(
      "out of memory at {} ({:.1f}% of the span), after {} events and {} trace events: the run "
      "was cut short there; the counts reported are the run so far (try --once, and no "
      "--trace, --timeline or --report)",
      format_instant(sim_.now()),
      100.0 * static_cast<double>(sim_.now() - scenario_.start_ms) /
          static_cast<double>(std::max<TimeMs>(1, scenario_.until_ms - scenario_.start_ms)),
      events_seen_, trace_.size()));
  try {
    if (monitors_) result.tallies = monitors_->tallies();
  } catch (const std::bad_alloc&) {
    result.tallies = nullptr;  // the job counts are left out
  }
  return result;
}

}  // namespace

const char* to_string(CrashEffect effect) noexcept {
  return effect == CrashEffect::power_loss ? "power_loss" : "process_crash";
}

const char* to_string(CrashAt at) noexcept {
  return at == CrashAt::event ? "event" : "disk_operation";
}

bool world_supports(JobKind kind) noexcept { return find_job_kind(to_string(kind)) != nullptr; }

bool world_supports(FaultKind kind) noexcept {
  return static_cast<std::size_t>(kind) < fault_kinds().size();
}

Result<std::unique_ptr<JobRunner>> make_default_runner(const JobSpec& job, RunnerPorts& ports) {
  const JobConfig config = job_config_of(job);
  const JobPlan plan = plan_job(config, ports.scenario.env);
  JobPorts job_ports{ports.clock, ports.services, ports.notifier,     ports.log,
                     ports.disk,  ports.ledger,   ports.token_client, ports.scenario.env};
  return make_job_runner(config, plan.policy, job_ports);
}

Result<ScenarioRunResult> run_scenario(const Scenario& scenario, RunOptions options) {
  const std::uint64_t seed = options.seed.value_or(scenario.seed);
  // A reserve spent by an earlier run is taken back when the memory is
  // there again; if not, this run is cut short at its first event.
  rearm_memory_reserve();
  auto world = std::make_unique<World>(scenario, options, seed);
  if (Status s = world->prepare(); !s.ok()) return s.error();
  try {
    return world->run();
  } catch (const std::bad_alloc&) {
    ScenarioRunResult so_far = world->cut_short_by_out_of_memory();
    world.reset();
    return so_far;
  }
}

}  // namespace rehearse::sim
