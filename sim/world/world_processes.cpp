// The world's worker processes: booted with their memory, their jobs and
// their queue, each a coroutine until a crash takes its memory.
#include "sim/world/world_detail.hpp"

namespace rehearse::sim::world_detail {

// A boot: the process's memory, and its root task (worker_main).
void World::boot(Simulator& sim, ProcessId process) {
  // The simulator boots a process up, on its own behalf.
  REHEARSE_ASSERT(sim.is_up(process));
  REHEARSE_ASSERT_EQ(sim.current_process(), process);
  WorkerMemory& memory = sim.emplace_memory<WorkerMemory>(process);
  if (options_.worker_ports) {
    memory.wrappers = options_.worker_ports(world_queue(), messenger_, disk_);
  }
  sim.spawn(process, worker_main(sim, process, memory), "scheduler");
}

// The core's job kinds and the runners of the table's kinds the core does
// not have; a test's factory goes first where it gives a runner (a
// deliberately faulty variant), the kind's own factory otherwise.
JobKinds World::job_kinds_for(Simulator& sim, ProcessId process) {
  JobKinds kinds = job_kinds();
  for (const JobKindDef& def : job_kind_table()) {
    if (def.runner && find_job_kind(def.name, kinds) == nullptr) {
      kinds.push_back({def.name, def.runner});
    }
  }
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
  // A new incarnation runs in its own process, with memory the crash wiped.
  REHEARSE_ASSERT_EQ(sim.current_process(), process);
  REHEARSE_ASSERT(memory.worker == nullptr);
  JobQueue& queue = memory.wrappers.queue ? *memory.wrappers.queue : world_queue();
  Notifier& notifier =
      memory.wrappers.notifier ? *memory.wrappers.notifier : static_cast<Notifier&>(messenger_);
  Disk& disk = memory.wrappers.disk ? *memory.wrappers.disk : static_cast<Disk&>(disk_);
  auto lock = co_await take_worker_lock(disk, worker_clock_, log_, kWorldStateDir,
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
      WorkerPorts{worker_clock_, queue, disk, services_, notifier, log_, sim.rng(), scenario_.env},
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
  // `queue.store: disk` only, once per incarnation, by the process itself.
  REHEARSE_ASSERT(queue_on_disk());
  REHEARSE_ASSERT(!memory.disk_queue.has_value());
  REHEARSE_ASSERT_EQ(sim_.current_process(), process);
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
  REHEARSE_ASSERT(queue_on_disk());  // no queue file otherwise
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
  // Tokens are only ever added, so the synced prefix never outgrows them.
  REHEARSE_ASSERT_LE(secrets_synced_, tokens.size());
  while (secrets_synced_ < tokens.size()) observer_->add_secret(tokens[secrets_synced_++].value);
}

}  // namespace rehearse::sim::world_detail
