#include "model/worker.hpp"

#include <fmt/format.h>

#include <utility>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/retry_policy.hpp"

namespace rehearse {

void record_config_error(JobStateStore& store, const std::string& job_id, const std::string& error,
                         TimeMs now) {
  if (!store.health().ok()) return;
  auto current = store.read(job_id);
  if (!current.ok()) return;
  if (current->retry_status == RetryStatus::failed &&
      current->failure_class == FailureClass::config && current->last_error == error) {
    return;
  }
  (void)store.update(job_id, [&](JobState& state) {
    state.retry_status = RetryStatus::failed;
    state.failure_class = FailureClass::config;
    state.next_action = NextAction::manual_review;
    state.next_retry_at.reset();
    state.last_error = error;
    state.updated_at = now;
  });
}

JobPlan plan_job(const JobConfig& job, const Environment& env) {
  JobPlan plan{effective_schedule(job.schedule, job.schedule_env, env, job.schedule_tz),
               make_error(ErrorCode::invalid_argument,
                          fmt::format("job '{}' has no retry_policy", job.id))};
  if (plan.schedule.ok() && job.retry_policy) {
    // Exactly as written: the core's parser decides, and fails closed.
    plan.policy = parse_retry_policy(*job.retry_policy, schedule_facts(plan.schedule->schedule));
  }
  // A policy is parsed only for a usable schedule and a written policy.
  REHEARSE_ASSERT(!plan.policy.ok() || (plan.schedule.ok() && job.retry_policy));
  return plan;
}

Worker::Worker(WorkerPorts ports, std::vector<JobConfig> jobs, WorkerOptions options)
    : ports_(ports), jobs_(std::move(jobs)), options_(std::move(options)) {}

Worker::~Worker() {
  // Runs refer to the runners, runners to the token cache and the ledger.
  scheduler_.reset();
  runners_.clear();
  job_ports_.reset();
  token_client_.reset();
}

Result<std::unique_ptr<Worker>> Worker::open(WorkerPorts ports, std::vector<JobConfig> jobs,
                                             WorkerOptions options, const JobKinds& kinds) {
  auto store = StateStore::open(ports.disk, options.state_dir);
  if (!store.ok()) return std::move(store).error();
  auto ledger = DeliveryLedger::open(ports.disk, options.ledger_dir);
  if (!ledger.ok()) return std::move(ledger).error();

  std::unique_ptr<Worker> worker(new Worker(ports, std::move(jobs), std::move(options)));
  Worker& w = *worker;
  w.store_.emplace(std::move(store).value());
  if (w.options_.store_decorator) {
    w.decorated_store_ = w.options_.store_decorator(*w.store_, ports.disk);
  }
  w.ledger_.emplace(std::move(ledger).value());
  w.token_client_ = std::make_unique<TokenClient>(ports.clock, ports.services, ports.log);
  w.job_ports_ =
      std::make_unique<JobPorts>(JobPorts{ports.clock, ports.services, ports.notifier, ports.log,
                                          ports.disk, *w.ledger_, *w.token_client_, ports.env});
  std::vector<ScheduledJob> scheduled;
  for (const JobConfig& job : w.jobs_) w.add_job(job, kinds, scheduled);

  SchedulerOptions scheduler_options;
  scheduler_options.concurrency = w.options_.concurrency;
  scheduler_options.misfire_grace_ms = w.options_.misfire_grace_ms;
  scheduler_options.ops_target = w.options_.ops_target;
  scheduler_options.start_ms = w.options_.start_ms;
  w.scheduler_ = std::make_unique<Scheduler>(SchedulerPorts{ports.clock, ports.queue, w.states(),
                                                            ports.notifier, ports.log, ports.random,
                                                            &*w.ledger_},
                                             std::move(scheduled), scheduler_options);
  return worker;
}

void Worker::refuse_job(const JobConfig& job, const char* event, const Error& error) {
  // No silent fallback: the job cannot be scheduled, and says so at every
  // boot (a `config` failure, in the log and in its state).
  ports_.log.error(event, {{"job_id", job.id},
                           {"failure_class", to_string(FailureClass::config)},
                           {"error", error.describe()}});
  record_config_error(states(), job.id, error.describe(), ports_.clock.now());
  config_errors_.emplace_back(job.id, error.describe());
}

void Worker::log_job_configured(const JobConfig& job, const std::string& effective) {
  // What a reader of the log needs to rebuild the job (docs/log-format.md):
  // the configuration as written, and the schedule the worker actually uses.
  LogFields fields{{"job_id", job.id}, {"kind", job.kind}, {"schedule", job.schedule}};
  if (job.schedule_env) fields.push_back({"schedule_env", *job.schedule_env});
  if (job.schedule_tz) fields.push_back({"schedule_tz", *job.schedule_tz});
  fields.push_back({"effective_schedule", effective});
  fields.push_back({"retry_policy", job.retry_policy.value_or(nlohmann::json())});
  fields.push_back({"targets", job.targets});
  fields.push_back({"params", job.params});
  ports_.log.info("job_configured", fields);
}

void Worker::add_job(const JobConfig& job, const JobKinds& kinds,
                     std::vector<ScheduledJob>& scheduled) {
  JobPlan plan = plan_job(job, ports_.env);
  if (!plan.schedule.ok()) {
    refuse_job(job, "schedule_config_error", plan.schedule.error());
    return;
  }
  auto made = make_job_runner(job, plan.policy, *job_ports_, kinds);
  if (!made.ok()) {
    refuse_job(job, "job_config_error", made.error());
    return;
  }
  log_job_configured(job, plan.schedule->expression);
  std::unique_ptr<JobRunner> runner = std::move(made).value();
  ScheduledJob entry;
  entry.id = job.id;
  entry.schedule = plan.schedule->schedule;
  entry.policy = std::move(plan.policy);
  entry.runner = runner.get();
  entry.notify_target = job.targets.empty() ? options_.ops_target : job.targets.front();
  runners_.push_back(std::move(runner));
  scheduled.push_back(std::move(entry));
  scheduled_.push_back(job.id);
}

}  // namespace rehearse
