// Scheduler: the loop that runs scheduled jobs over the ports (docs/semantics.md
// §4, §6 last bullet and §9).
//
// A coroutine driver, not a decision maker: every rule comes from the pure
// retry machine (model/retry_machine.hpp: apply_policy, start_schedule,
// take_due_slot, on_slot_due, on_run_started, on_run_succeeded,
// on_run_failed, on_run_stalled). The scheduler feeds it events and carries
// its effects to the durable queue (model/job_queue.hpp), the state store
// (model/state_store.hpp), the notifier and the log, in an order that keeps
// every crash safe (docs/scheduler.md, "Order of durable steps"):
//
//   hand-out of a regular slot   queue add (idempotent key) -> state write -> cancels
//   a run finishes               intent on the queue entry -> state write ->
//                                queue finish (retry added, cancels, outbox, atomically)
//                                -> notifications sent -> outbox cleared
//   after a restart              intents replayed -> apply_policy -> pending retries
//                                restored -> ACTIVE entries recovered as stalled ->
//                                outbox flushed -> misfired slots coalesced
//
// Structure. run() is the one root task: it boots, then loops handing out
// due regular slots at their instant (so next_run_at and misfires never
// depend on how busy the workers are), taking ready entries while fewer than
// `concurrency` runs are in flight (one run per job at a time), and parking
// until the next slot, the next ready entry, or a run finishing. Each run is
// a task of its own, started through the Clock port's executor wake-ups and
// owned by the Scheduler (a crash destroys it with the process's memory).
//
// Fail-closed modes:
//  - a corrupt state store (health corrupt at boot, a write refused as
//    corrupt, or records the delivery ledger proves lost at boot): regular
//    runs continue from in-memory state, no retry is scheduled or run (a
//    queued retry is dropped, `retry_dropped`, even when the write of its
//    own start is what found the damage), nothing is written to the store,
//    `state_corrupt` is notified once per boot;
//  - a torn journal tail the store dropped: reported (`state_tail_dropped`
//    with the copy the store kept) and shown in notices();
//  - an invalid policy: runs on its schedule, never retried, `policy_invalid`
//    once (when the recorded error changes);
//  - any other failure of the store or the queue (an io_error) halts the
//    scheduler: run() returns and the process should be restarted, where the
//    recovery above picks up (an fsync failure is not retried in place).
#pragma once

#include <coroutine>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/delivery_ledger.hpp"
#include "model/job_queue.hpp"
#include "model/job_runner.hpp"
#include "model/job_state.hpp"
#include "model/notification.hpp"
#include "model/ports.hpp"
#include "model/random.hpp"
#include "model/result.hpp"
#include "model/retry_budget.hpp"
#include "model/retry_machine.hpp"
#include "model/state_store.hpp"
#include "model/status_view.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

// One scheduled job as the scheduler runs it.
struct ScheduledJob {
  std::string id;
  CronSchedule schedule;  // the job's effective schedule
  PolicyOrError policy = make_error(ErrorCode::invalid_argument, "no retry policy");
  JobRunner* runner = nullptr;  // not owned; must outlive the scheduler
  std::string notify_target;    // where its notifications go (empty: the ops target)
};

struct SchedulerOptions {
  // Runs in flight at once (BullMQ's worker concurrency; 1 by default): a
  // long retry chain of one job can delay other jobs' slots.
  int concurrency = 1;
  // A slot handed out later than this after its instant counts as a misfire.
  DurationMs misfire_grace_ms = 0;
  // Store-wide notifications (state_corrupt); empty: every job's target.
  std::string ops_target;
  // The schedule's origin for jobs that never ran (empty: now at boot; a
  // boot that finds the store corrupt always starts from now).
  std::optional<TimeMs> start_ms;
};

// The ports the scheduler runs on. All must outlive it.
struct SchedulerPorts {
  Clock& clock;
  JobQueue& queue;
  JobStateStore& store;
  Notifier& notifier;
  Log& log;
  RandomSource& random;
  // The group jobs' delivery ledger, when the process has one: at boot, a
  // slot it knows that the retry state does not proves the state lost
  // acknowledged records (then the store is treated as corrupt).
  DeliveryLedger* ledger = nullptr;
};

namespace scheduler_detail {

// Parks one coroutine until a deadline or an earlier notify(), and resumes it
// from the executor (Clock::schedule_wake), never inline. A notify() while
// nobody is parked is remembered, so a wake-up is never lost. The deadline is
// a timer task started through the executor and destroyed when superseded.
class Alarm {
 public:
  explicit Alarm(Clock& clock) noexcept : clock_(clock) {}
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;
  ~Alarm();

  // One waiter at a time. Empty deadline: until notified.
  Task<void> wait_until(std::optional<TimeMs> deadline);
  void notify();

 private:
  class Park;
  Task<void> timer(TimeMs deadline);
  void arm(TimeMs deadline);
  void disarm() noexcept;
  void wake_waiter();

  Clock& clock_;
  std::coroutine_handle<> waiter_;
  Clock::WakeId waiter_wake_ = 0;
  Task<void> timer_;
  Clock::WakeId timer_start_ = 0;
  bool pending_ = false;
};

}  // namespace scheduler_detail

class Scheduler {
 public:
  Scheduler(SchedulerPorts ports, std::vector<ScheduledJob> jobs, SchedulerOptions options = {});
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  ~Scheduler();

  // Boots (recovery) and runs until halted. Never returns otherwise.
  Task<void> run();

  bool halted() const noexcept { return halt_error_.has_value(); }
  const std::optional<Error>& halt_error() const noexcept { return halt_error_; }
  bool state_corrupt() const noexcept { return corrupt_; }
  bool booted() const noexcept { return booted_; }
  // The in-memory view of every job's state (what the store holds, or in
  // corrupt mode what this boot knows).
  const std::map<std::string, JobState>& states() const noexcept { return states_; }
  std::uint64_t runs_started() const noexcept { return runs_started_; }
  // What the status view shows besides the states: retries dropped because
  // the store could not be trusted, and the store's damage reports.
  const StatusNotices& notices() const noexcept { return notices_; }

 private:
  struct RunTask {
    std::string job_id;
    Task<void> task;
    Clock::WakeId start_wake = 0;
  };
  // What must follow a state write, recorded first as the entry's intent.
  struct Effects {
    std::string op;  // "finish", "stall_rerun", "stall_fail"
    std::optional<JobState> state;
    std::vector<QueueEntrySpec> adds;
    std::vector<RetryCancel> cancels;
    std::vector<Notification> notifications;
  };

  const ScheduledJob* find_job(const std::string& id) const;
  const PolicyOrError& effective_policy(const ScheduledJob& job) const;
  // The retry budget the job's effective policy names ("" for none).
  std::string budget_name(const ScheduledJob& job) const;
  void note_budget_attempt(const std::string& job_id);
  JobState& state_of(const std::string& id);

  // Boot steps.
  Task<void> boot();
  void load_states();
  void check_against_ledger();
  void report_store_damage();
  void replay_intents();
  void apply_policies();
  void start_schedules();
  void restore_pending_retries();
  void recover_stalled();
  void restore_orphaned_retries();

  // Loop steps.
  void hand_out_due_slots();
  void dispatch();
  bool entry_is_current(const QueueEntry& entry, std::string& why) const;
  // Finishes an entry the state no longer backs; false when halted.
  bool drop_entry(const QueueEntry& entry, const std::string& why);
  std::optional<TimeMs> next_deadline();
  std::vector<std::size_t> due_jobs(TimeMs now) const;
  void collect_finished_runs();
  void spawn_task(std::string job_id, Task<void> task);
  // A run's start: on_run_started written, superseded retries cancelled,
  // the entry checked again. False: the run does not go on (halted, or a
  // retry dropped because that write found the store corrupt).
  bool begin_run(const ScheduledJob& job, const QueueEntry& entry, TimeMs now);
  Task<void> execute(QueueEntry entry);

  // Durable plumbing.
  Status persist(const std::string& job_id, const JobState& next);
  // Every write of states_ goes through here, so that next_runs_ follows it.
  void set_state(const std::string& job_id, JobState state);
  // Computes the effects, writes them as the entry's intent, writes the
  // state, then applies the queue effects; returns the outbox messages to
  // send. Empty on a halt.
  std::vector<OutboxMessage> commit_entry(const QueueEntry& entry,
                                          const std::function<Effects()>& compute);
  std::vector<OutboxMessage> apply_effects(const QueueEntry& entry, const Effects& effects);
  std::vector<OutboxMessage> outbox_first(const std::vector<Notification>& notifications);
  std::string encode_intent(const Effects& effects) const;
  Result<Effects> decode_intent(const std::string& text) const;
  std::vector<OutboxMessage> outbox_messages(const std::vector<Notification>& notifications) const;
  Task<void> send_outbox(std::vector<OutboxMessage> messages);
  void log_notification(const Notification& notification);
  void enter_corrupt_mode(const Error& why);
  void mark_schedule_broken(const std::string& job_id, const Error& why);
  void halt(Error why);

  Clock& clock_;
  JobQueue& queue_;
  JobStateStore& store_;
  Notifier& notifier_;
  Log& log_;
  RandomSource& random_;
  std::vector<ScheduledJob> jobs_;
  SchedulerOptions options_;
  PolicyOrError corrupt_policy_;

  std::map<std::string, JobState> states_;
  // (next_run_at, job) of every scheduled job that has one: next_deadline()
  // reads its first entry instead of scanning every job.
  std::set<std::pair<TimeMs, std::string>> next_runs_;
  std::map<std::string, std::size_t, std::less<>> job_index_;  // id -> jobs_ index
  std::set<std::string> busy_;                                 // jobs with a run in flight
  std::set<std::string> schedule_broken_;                      // jobs whose schedule gave an error
  bool corrupt_ = false;
  bool corrupt_notified_ = false;
  bool booted_ = false;
  std::optional<Error> halt_error_;
  std::vector<OutboxMessage> deferred_outbox_;
  std::uint64_t runs_started_ = 0;
  // Retry budgets' counts, in this process's memory (model/retry_budget.hpp).
  RetryBudgets budgets_;
  DeliveryLedger* ledger_ = nullptr;
  StatusNotices notices_;
  std::uint64_t torn_tails_reported_ = 0;

  // Declared last: destroyed first (the run tasks may refer to the rest).
  scheduler_detail::Alarm alarm_;
  std::map<std::uint64_t, RunTask> runs_;  // by spawn order
  std::uint64_t next_task_key_ = 1;
};

}  // namespace rehearse
