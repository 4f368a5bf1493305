// The scheduler's core: the Alarm its loop parks on, construction, the
// in-memory job states, and run(), the loop that hands out due slots, starts
// ready runs and parks until the next thing to do. Booting and recovery are
// in scheduler_boot.cpp, slot hand-out and dispatch in scheduler_slots.cpp,
// a run and its outcome made durable in scheduler_outcome.cpp.
#include "model/scheduler.hpp"

#include <utility>

#include "model/assert.hpp"
#include "model/scheduler_detail.hpp"

namespace rehearse {

using scheduler_detail::fresh_state;

// ---- Alarm ------------------------------------------------------------------

namespace scheduler_detail {

class Alarm::Park {
 public:
  Park(Alarm& alarm, std::optional<TimeMs> deadline) noexcept
      : alarm_(alarm), deadline_(deadline) {}
  Park(const Park&) = delete;
  Park& operator=(const Park&) = delete;
  // Destroyed while parked (a crash cut the waiting frame): withdraw the
  // timer and any wake already scheduled, so no destroyed frame is resumed.
  ~Park() {
    if (!parked_) return;
    alarm_.waiter_ = {};
    alarm_.disarm();
    if (alarm_.waiter_wake_ != 0) {
      alarm_.clock_.cancel_wake(alarm_.waiter_wake_);
      alarm_.waiter_wake_ = 0;
    }
  }

  bool await_ready() noexcept {
    if (!alarm_.pending_) return false;
    alarm_.pending_ = false;  // a notify() arrived while nobody was parked
    return true;
  }
  void await_suspend(std::coroutine_handle<> handle) {
    parked_ = true;
    alarm_.waiter_ = handle;
    if (deadline_) alarm_.arm(*deadline_);
  }
  void await_resume() noexcept {
    parked_ = false;
    alarm_.waiter_wake_ = 0;
    alarm_.pending_ = false;
    alarm_.disarm();
  }

 private:
  Alarm& alarm_;
  std::optional<TimeMs> deadline_;
  bool parked_ = false;
};

Alarm::~Alarm() {
  disarm();
  if (waiter_wake_ != 0) clock_.cancel_wake(waiter_wake_);
}

Task<void> Alarm::wait_until(std::optional<TimeMs> deadline) { co_await Park(*this, deadline); }

void Alarm::notify() {
  if (waiter_) {
    disarm();
    wake_waiter();
  } else if (waiter_wake_ == 0) {
    pending_ = true;
  }
  // else: the waiter is already woken and will look at everything anew.
}

Task<void> Alarm::timer(TimeMs deadline) {
  co_await clock_.sleep_until(deadline);
  if (waiter_) wake_waiter();
}

void Alarm::arm(TimeMs deadline) {
  disarm();
  timer_ = timer(deadline);
  timer_start_ = clock_.schedule_wake(timer_.start_handle());
}

void Alarm::disarm() noexcept {
  if (!timer_.valid()) return;
  if (!timer_.started() && timer_start_ != 0) clock_.cancel_wake(timer_start_);
  timer_start_ = 0;
  timer_.reset();  // a sleeping timer's wake-up is cancelled with its frame
}

void Alarm::wake_waiter() {
  waiter_wake_ = clock_.schedule_wake(waiter_);
  waiter_ = {};
}

}  // namespace scheduler_detail

// ---- helpers ----------------------------------------------------------------

namespace scheduler_detail {

JobState fresh_state(const std::string& id) {
  JobState s;
  s.job_id = id;
  return s;
}

}  // namespace scheduler_detail

// ---- construction -----------------------------------------------------------

Scheduler::Scheduler(SchedulerPorts ports, std::vector<ScheduledJob> jobs, SchedulerOptions options)
    : clock_(ports.clock),
      queue_(ports.queue),
      store_(ports.store),
      notifier_(ports.notifier),
      log_(ports.log),
      random_(ports.random),
      jobs_(std::move(jobs)),
      options_(std::move(options)),
      corrupt_policy_(make_error(ErrorCode::corrupt,
                                 "state store corrupt: no retries are scheduled until an operator "
                                 "repairs it")),
      ledger_(ports.ledger),
      alarm_(ports.clock) {
  REHEARSE_ASSERT(options_.concurrency >= 1);
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const ScheduledJob& job = jobs_[i];
    REHEARSE_ASSERT(!job.id.empty());
    REHEARSE_ASSERT(job.runner != nullptr);
    const bool unique = job_index_.emplace(job.id, i).second;
    REHEARSE_ASSERT(unique);  // ids are unique
  }
}

Scheduler::~Scheduler() {
  // A run task not started yet has a start wake pending; withdraw it before
  // its frame goes (a crash cancels the process's events anyway).
  for (auto& [key, run] : runs_) {
    if (run.task.valid() && !run.task.started() && run.start_wake != 0) {
      clock_.cancel_wake(run.start_wake);
    }
  }
}

const ScheduledJob* Scheduler::find_job(const std::string& id) const {
  const auto it = job_index_.find(id);
  return it == job_index_.end() ? nullptr : &jobs_[it->second];
}

const PolicyOrError& Scheduler::effective_policy(const ScheduledJob& job) const {
  // Fail closed: with the store corrupt the counters cannot be trusted, so
  // the machine sees a policy that never retries.
  return corrupt_ ? corrupt_policy_ : job.policy;
}

std::string Scheduler::budget_name(const ScheduledJob& job) const {
  const PolicyOrError& policy = effective_policy(job);
  return policy.ok() ? policy->retry_budget.name : std::string();
}

JobState& Scheduler::state_of(const std::string& id) {
  auto it = states_.find(id);
  if (it == states_.end()) {
    set_state(id, fresh_state(id));
    it = states_.find(id);
  }
  return it->second;
}

void Scheduler::set_state(const std::string& job_id, JobState state) {
  JobState& held = states_[job_id];
  const bool scheduled = job_index_.count(job_id) != 0;
  if (scheduled && held.next_run_at) next_runs_.erase({*held.next_run_at, job_id});
  held = std::move(state);
  if (scheduled && held.next_run_at) next_runs_.emplace(*held.next_run_at, job_id);
}

void Scheduler::mark_schedule_broken(const std::string& job_id, const Error& why) {
  // The schedule cannot give a next slot (past year 9999): the job stops
  // being handed out, once and loudly, instead of the loop spinning on it.
  if (!schedule_broken_.insert(job_id).second) return;
  log_.error("schedule_error", {{"job_id", job_id}, {"error", why.describe()}});
}

void Scheduler::halt(Error why) {
  if (halt_error_) return;
  log_.error("scheduler_halted", {{"error", why.describe()}});
  halt_error_ = std::move(why);
  alarm_.notify();
}

// ---- the loop ---------------------------------------------------------------

Task<void> Scheduler::run() {
  co_await boot();
  while (!halted()) {
    collect_finished_runs();
    if (!deferred_outbox_.empty()) {
      std::vector<OutboxMessage> messages = std::move(deferred_outbox_);
      deferred_outbox_.clear();
      spawn_task({}, send_outbox(std::move(messages)));
    }
    hand_out_due_slots();
    if (halted()) break;
    dispatch();
    if (halted()) break;
    const std::optional<TimeMs> deadline = next_deadline();
    if (halted()) break;
    co_await alarm_.wait_until(deadline);
  }
}

void Scheduler::spawn_task(std::string job_id, Task<void> task) {
  RunTask run;
  run.job_id = std::move(job_id);
  run.task = std::move(task);
  run.start_wake = clock_.schedule_wake(run.task.start_handle());
  runs_.emplace(next_task_key_++, std::move(run));
}

void Scheduler::collect_finished_runs() {
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (it->second.task.done()) {
      it->second.task.take_result();  // rethrows a bug in a run task here
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<TimeMs> Scheduler::next_deadline() {
  std::optional<TimeMs> deadline;
  for (const auto& [at, job_id] : next_runs_) {
    if (schedule_broken_.count(job_id) != 0) continue;
    deadline = at;
    break;
  }
  // With every worker busy, a ready entry must wait for a run to finish
  // (which notifies the alarm): counting it here would spin.
  if (static_cast<int>(busy_.size()) < options_.concurrency) {
    auto ready = queue_.next_ready_at(busy_);
    if (!ready.ok()) {
      halt(std::move(ready).error());
      return deadline;
    }
    if (*ready && (!deadline || **ready < *deadline)) deadline = *ready;
  }
  return deadline;
}

}  // namespace rehearse
