// The world: one run of a scenario (sim/world/world.hpp). The World class is in
// sim/world/world_detail.hpp; this file sets up its services, disk and queue, and
// holds the entry points. Faults, crashes, processes, observations and the
// run itself are in world_faults, _crashes, _processes, _observe and _run.cpp.
#include "sim/world/world_detail.hpp"

namespace rehearse::sim {

namespace world_detail {

namespace {

ModelOutput to_model_output(TaskOutput output) {
  switch (output) {
    case TaskOutput::summary: return ModelOutput::summary;
    case TaskOutput::preview: return ModelOutput::preview;
    case TaskOutput::skip: return ModelOutput::skip;
  }
  return ModelOutput::skip;
}

}  // namespace

void World::record_world(std::string type, json data, std::string service) {
  REHEARSE_ASSERT(!type.empty());  // the world names each of its own records
  TraceEvent e;
  e.t = sim_.now();
  e.type = std::move(type);
  e.service = std::move(service);
  e.data = std::move(data);
  trace_.record(std::move(e));
}

Status World::prepare() {
  // A world is prepared once, before its run.
  REHEARSE_ASSERT(expected_violations_.empty());
  REHEARSE_ASSERT(processes_.empty());
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
  // Once, from prepare(): every service is registered under its name once.
  REHEARSE_ASSERT(model_api_ == nullptr && brokerage_ == nullptr && orchestrator_ == nullptr);
  REHEARSE_ASSERT(user_services_.empty());
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
    auto service =
        std::make_unique<GenericService>(name, sim_.rng(),
                                         GenericServiceOptions{.latency_ms = user.timing.latency_ms,
                                                               .timeout_ms = user.timing.timeout_ms,
                                                               .capacity = user.capacity});
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
            // The disk kills the issuer of the operation under way.
            REHEARSE_ASSERT_EQ(owner, sim_.current_process());
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

}  // namespace world_detail

using world_detail::World;

const char* to_string(CrashEffect effect) noexcept {
  return effect == CrashEffect::power_loss ? "power_loss" : "process_crash";
}

const char* to_string(CrashAt at) noexcept {
  return at == CrashAt::event ? "event" : "disk_operation";
}

bool world_supports(JobKind kind) noexcept {
  return find_job_kind(to_string(kind)) != nullptr || job_kind_def(kind).runner != nullptr;
}

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

Result<ScenarioRunResult> run_world(const Scenario& scenario, RunOptions options,
                                    const RunObserverFactory& observe) {
  REHEARSE_ASSERT(static_cast<bool>(observe));
  const std::uint64_t seed = options.seed.value_or(scenario.seed);
  // A reserve spent by an earlier run is taken back when the memory is
  // there again; if not, this run is cut short at its first event.
  rearm_memory_reserve();
  auto world = std::make_unique<World>(scenario, options, seed, observe);
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
