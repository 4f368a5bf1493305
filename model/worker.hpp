// Worker: one worker process assembled from job configurations, the way a
// production program and the simulated world both build it (docs/worker.md).
//
// open() does, in order:
//   1. opens the state store (state_dir) and the delivery ledger (ledger_dir);
//      a failure here is the process's (e.g. the disk refused): returned;
//   2. per job, in configuration order: its effective schedule (the default,
//      or the environment variable schedule_env names when that is set and
//      non-empty; set-but-empty or unparsable is a config error, never a
//      fallback: cron.hpp effective_schedule); its policy, handed to the
//      core's parser exactly as written (absent: "has no retry_policy");
//      its runner from the job-kind registry (model/job_kinds.hpp; the
//      caller may pass its own table, e.g. the simulated world's, whose
//      entries wrap the core's factories);
//   3. a job that cannot be scheduled (schedule error, unknown kind, unusable
//      params) is logged (`schedule_config_error` / `job_config_error`) and
//      its state records the config error (failed / config / manual_review,
//      record_config_error below); it is not scheduled;
//   4. builds the Scheduler over the queue, the store and the other ports. An
//      invalid policy is the scheduler's to report (policy_invalid): the job
//      runs on its schedule and is never retried.
// run() is the scheduler's root task. The Worker is process memory: a crash
// destroys it (the scheduler first, then the runners, then what they use).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/delivery_ledger.hpp"
#include "model/job_kinds.hpp"
#include "model/job_queue.hpp"
#include "model/ports.hpp"
#include "model/random.hpp"
#include "model/result.hpp"
#include "model/scheduler.hpp"
#include "model/state_store.hpp"
#include "model/task.hpp"
#include "model/token_client.hpp"

namespace rehearse {

// The ports of the worker process. All must outlive the Worker.
struct WorkerPorts {
  Clock& clock;
  JobQueue& queue;
  Disk& disk;
  Services& services;
  Notifier& notifier;
  Log& log;
  RandomSource& random;
  const Environment& env;
};

struct WorkerOptions {
  std::string state_dir = "state";    // the retry state store's directory
  std::string ledger_dir = "ledger";  // the delivery ledger's directory
  // Store-wide notifications, and jobs without targets.
  std::string ops_target = "ops";
  int concurrency = 1;
  DurationMs misfire_grace_ms = 0;
  std::optional<TimeMs> start_ms;  // the schedules' origin (empty: now at boot)
  // Stands between the worker (scheduler, config errors) and the state store
  // it opened: called once per open with that store and the process's disk,
  // its result is what the worker uses (it must outlive nothing but the
  // Worker, which owns it). Empty: the store itself. A port for a decorator
  // (e.g. a store with extra duties, or a test's faulty variant).
  std::function<std::unique_ptr<JobStateStore>(StateStore& store, Disk& disk)> store_decorator;
};

// The job's state shows a config error (docs/semantics.md §3): failed, class
// config, manual_review, last_error = error. Never over a corrupt store, and
// not again when the state already says exactly that.
void record_config_error(JobStateStore& store, const std::string& job_id, const std::string& error,
                         TimeMs now);

// A job's schedule and policy as the worker derives them (no I/O).
struct JobPlan {
  Result<EffectiveSchedule> schedule;
  PolicyOrError policy;  // meaningful when the schedule is ok
};
JobPlan plan_job(const JobConfig& job, const Environment& env);

class Worker {
 public:
  static Result<std::unique_ptr<Worker>> open(WorkerPorts ports, std::vector<JobConfig> jobs,
                                              WorkerOptions options,
                                              const JobKinds& kinds = job_kinds());
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker();

  // Boots (recovery) and runs until the scheduler halts (an I/O error of the
  // store or the queue: restart the process).
  Task<void> run() { return scheduler_->run(); }

  Scheduler& scheduler() noexcept { return *scheduler_; }
  StateStore& store() noexcept { return *store_; }
  DeliveryLedger& ledger() noexcept { return *ledger_; }
  // The jobs scheduled, in configuration order.
  const std::vector<std::string>& scheduled() const noexcept { return scheduled_; }
  // The jobs that could not be scheduled, with why (configuration order).
  const std::vector<std::pair<std::string, std::string>>& config_errors() const noexcept {
    return config_errors_;
  }

 private:
  Worker(WorkerPorts ports, std::vector<JobConfig> jobs, WorkerOptions options);
  void add_job(const JobConfig& job, const JobKinds& kinds, std::vector<ScheduledJob>& scheduled);
  void refuse_job(const JobConfig& job, const char* event, const Error& error);
  void log_job_configured(const JobConfig& job, const std::string& effective);

  WorkerPorts ports_;
  std::vector<JobConfig> jobs_;
  WorkerOptions options_;
  std::optional<StateStore> store_;
  std::unique_ptr<JobStateStore> decorated_store_;  // store_decorator's, if any
  JobStateStore& states() noexcept {
    return decorated_store_ ? *decorated_store_ : static_cast<JobStateStore&>(*store_);
  }
  std::optional<DeliveryLedger> ledger_;
  std::unique_ptr<TokenClient> token_client_;
  std::unique_ptr<JobPorts> job_ports_;
  std::vector<std::unique_ptr<JobRunner>> runners_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::string> scheduled_;
  std::vector<std::pair<std::string, std::string>> config_errors_;
};

}  // namespace rehearse
