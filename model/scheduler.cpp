#include "model/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/state_codec.hpp"

namespace rehearse {

using nlohmann::json;

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

namespace {

constexpr const char* kOpFinish = "finish";
constexpr const char* kOpStallRerun = "stall_rerun";
constexpr const char* kOpStallFail = "stall_fail";

LogLevel level_of(NotificationEvent event) {
  switch (event) {
    case NotificationEvent::retry_scheduled: return LogLevel::warning;
    case NotificationEvent::recovered: return LogLevel::info;
    case NotificationEvent::retry_exhausted:
    case NotificationEvent::failed_permanent:
    case NotificationEvent::policy_invalid:
    case NotificationEvent::state_corrupt: return LogLevel::error;
  }
  return LogLevel::error;
}

JobState fresh_state(const std::string& id) {
  JobState s;
  s.job_id = id;
  return s;
}

Error intent_error(std::string message) {
  return make_error(ErrorCode::schema_error, std::move(message), "queue intent");
}

}  // namespace

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

// ---- boot -------------------------------------------------------------------

Task<void> Scheduler::boot() {
  const TimeMs now = clock_.now();
  log_.info("scheduler_boot", {{"at", format_instant(now)},
                               {"jobs", jobs_.size()},
                               {"concurrency", options_.concurrency}});
  load_states();
  if (!halted()) replay_intents();
  if (!halted()) apply_policies();
  if (!halted()) start_schedules();
  if (!halted()) restore_pending_retries();
  if (!halted()) recover_stalled();
  if (!halted()) restore_orphaned_retries();
  if (halted()) co_return;
  booted_ = true;
  // What the outbox still holds (a crash cut a send, or this boot added it):
  // sent at least once, by a task of its own so that slots are not delayed.
  auto left = queue_.outbox_list();
  if (!left.ok()) {
    halt(std::move(left).error());
    co_return;
  }
  // The listing holds everything deferred so far (this boot's included).
  deferred_outbox_ = std::move(*left);
  co_return;
}

void Scheduler::load_states() {
  report_store_damage();
  const StoreHealth health = store_.health();
  if (!health.ok()) {
    enter_corrupt_mode(health.error ? *health.error
                                    : make_error(ErrorCode::corrupt, "state store corrupt"));
  } else {
    auto all = store_.read_all();
    if (!all.ok()) {
      if (all.error().code != ErrorCode::corrupt) {
        halt(std::move(all).error());
        return;
      }
      enter_corrupt_mode(all.error());
    } else {
      for (const ScheduledJob& job : jobs_) {
        const auto it = all->find(job.id);
        set_state(job.id, it != all->end() ? it->second : fresh_state(job.id));
      }
      check_against_ledger();
    }
  }
  for (const ScheduledJob& job : jobs_) state_of(job.id);
}

// The ledger records a slot only after its hand-out was written to the state
// (docs/scheduler.md, "Order of durable steps"), so a slot the ledger knows
// past the state's last slot proves the state lost acknowledged records (a
// journal cut at a record boundary looks whole). The counters cannot be
// trusted then: fail closed, as for a corrupt file, from fresh states.
// (The ledger's slots are ascending, so its last record is its latest.)
void Scheduler::check_against_ledger() {
  // A fresh start (no state files at all) is a first boot or an operator's
  // explicit reset, not a loss: the ledger then guards deliveries alone.
  if (ledger_ == nullptr || store_.health().fresh_start) return;
  for (const ScheduledJob& job : jobs_) {
    auto records = ledger_->read_job(job.id);
    if (!records.ok() || records->empty()) continue;  // a bad ledger fails its runs visibly
    const TimeMs known = records->back().slot;        // ascending by slot
    const JobState& s = state_of(job.id);
    if (s.last_slot && *s.last_slot >= known) continue;
    const std::string last = s.last_slot ? format_instant(*s.last_slot) : "none";
    log_.error("state_records_lost", {{"job_id", job.id},
                                      {"ledger_slot", format_instant(known)},
                                      {"state_last_slot", last}});
    const Error why = make_error(
        ErrorCode::corrupt,
        fmt::format("the retry state lost acknowledged records: the delivery ledger has slot {} of "
                    "job {}, the state's last slot is {}",
                    format_instant(known), job.id, last),
        store_.journal_path());
    for (const ScheduledJob& j : jobs_) set_state(j.id, fresh_state(j.id));
    enter_corrupt_mode(why);
    return;
  }
}

// A torn journal tail the store dropped (at the load, or found while
// following the journal): reported once each, with the copy the store kept.
void Scheduler::report_store_damage() {
  const StoreHealth health = store_.health();
  if (health.torn_tails_dropped <= torn_tails_reported_ || !health.torn_tail) return;
  torn_tails_reported_ = health.torn_tails_dropped;
  const TornTail& tail = *health.torn_tail;
  log_.warning("state_tail_dropped", {{"file", store_.journal_path()},
                                      {"offset", tail.offset},
                                      {"length", tail.length},
                                      {"line", tail.line},
                                      {"reason", tail.reason},
                                      {"kept_as", health.damaged_copy}});
  notices_.store_notices.push_back(
      fmt::format("{}: a damaged tail of {} bytes at offset {} (line {}) was dropped: {}; the "
                  "damaged file is kept as {}",
                  store_.journal_path(), tail.length, tail.offset, tail.line, tail.reason,
                  health.damaged_copy));
}

void Scheduler::replay_intents() {
  auto active = queue_.list_active();
  if (!active.ok()) return halt(std::move(active).error());
  for (const QueueEntry& entry : *active) {
    if (entry.intent.empty()) continue;
    auto effects = decode_intent(entry.intent);
    if (!effects.ok()) {
      // Unreadable: the run is treated as stalled (recover_stalled), the
      // conservative reading of "it was running".
      log_.error("queue_intent_unreadable", {{"job_id", entry.spec.job_id},
                                             {"slot", format_instant(entry.spec.slot)},
                                             {"error", effects.error().describe()}});
      continue;
    }
    const ScheduledJob* job = find_job(entry.spec.job_id);
    log_.info("intent_replayed", {{"job_id", entry.spec.job_id},
                                  {"slot", format_instant(entry.spec.slot)},
                                  {"kind", to_string(entry.spec.kind)},
                                  {"attempt", entry.spec.attempt},
                                  {"op", effects->op}});
    if (job != nullptr && effects->state) {
      // The intent holds the state the transition produced: writing it again
      // is a no-op when it reached the store before the crash.
      if (corrupt_) {
        set_state(job->id, *effects->state);
      } else if (Status s = persist(job->id, *effects->state); !s.ok() && !corrupt_) {
        return;  // halted
      }
    }
    apply_effects(entry, *effects);
    if (halted()) return;
  }
}

void Scheduler::apply_policies() {
  const TimeMs now = clock_.now();
  for (const ScheduledJob& job : jobs_) {
    const JobState before = state_of(job.id);
    Transition t = apply_policy(job.policy, before, now);
    if (t.state == before) continue;
    // Outbox first (durable intent to notify), then the state, then the
    // sends (at the end of boot): a crash in between re-notifies at worst.
    outbox_first(t.notifications);
    if (halted()) return;
    if (Status s = persist(job.id, t.state); !s.ok() && !corrupt_) return;
    for (const RetryRef& r : t.cancelled_retries) {
      auto dropped = queue_.cancel_retries(job.id, r.slot);
      if (!dropped.ok()) return halt(std::move(dropped).error());
      log_.warning("retry_cancelled", {{"job_id", job.id},
                                       {"slot", format_instant(r.slot)},
                                       {"next_retry_at", format_instant(r.at)},
                                       {"reason", "policy_invalid"}});
    }
    for (const Notification& n : t.notifications) log_notification(n);
  }
}

void Scheduler::start_schedules() {
  // A corrupt store gives fresh in-memory states: those schedules start from
  // now, never from the configured origin, which would hand out again slots
  // delivered before the store became unreadable.
  const TimeMs start = corrupt_ ? clock_.now() : options_.start_ms.value_or(clock_.now());
  for (const ScheduledJob& job : jobs_) {
    const JobState before = state_of(job.id);
    auto started = start_schedule(before, job.schedule, start);
    if (!started.ok()) {
      mark_schedule_broken(job.id, started.error());
      continue;
    }
    if (*started == before) continue;
    if (Status s = persist(job.id, *started); !s.ok() && !corrupt_) return;
  }
}

void Scheduler::restore_pending_retries() {
  if (corrupt_) return;
  for (const ScheduledJob& job : jobs_) {
    for (const auto& [slot, record] : state_of(job.id).slots) {
      if (!retry_pending(record)) continue;
      QueueEntrySpec spec;
      spec.job_id = job.id;
      spec.slot = slot;
      spec.kind = RunKind::retry;
      spec.attempt = record.retry_count + 1;
      spec.ready_at = *record.next_retry_at;
      auto added = queue_.add(spec);
      if (!added.ok()) return halt(std::move(added).error());
      if (added->added) {
        log_.warning("retry_restored", {{"job_id", job.id},
                                        {"slot", format_instant(slot)},
                                        {"attempt", spec.attempt},
                                        {"next_retry_at", format_instant(spec.ready_at)}});
      }
    }
  }
}

void Scheduler::recover_stalled() {
  auto active = queue_.list_active();
  if (!active.ok()) return halt(std::move(active).error());
  for (const QueueEntry& entry : *active) {
    if (!entry.intent.empty() && decode_intent(entry.intent).ok()) continue;  // replayed
    const ScheduledJob* job = find_job(entry.spec.job_id);
    if (job == nullptr) {
      auto gone = queue_.finish(entry.id, {});
      if (!gone.ok()) return halt(std::move(gone).error());
      log_.warning("queue_stale_dropped", {{"job_id", entry.spec.job_id},
                                           {"slot", format_instant(entry.spec.slot)},
                                           {"reason", "unknown job"}});
      continue;
    }
    const RunRef ref{entry.spec.slot, entry.spec.kind};
    StallDecision decision = StallDecision::rerun;
    auto compute = [&]() {
      const TimeMs now = clock_.now();
      StallTransition st = on_run_stalled(effective_policy(*job), state_of(job->id), ref, now);
      decision = st.decision;
      Effects fx;
      fx.op = st.decision == StallDecision::rerun ? kOpStallRerun : kOpStallFail;
      fx.state = st.transition.state;
      for (const RetryRef& r : st.transition.cancelled_retries) {
        fx.cancels.push_back(RetryCancel{job->id, r.slot});
      }
      fx.notifications = std::move(st.transition.notifications);
      return fx;
    };
    commit_entry(entry, compute);
    if (halted()) return;
    const auto record = state_of(job->id).slots.find(ref.slot);
    log_.warning("run_stalled", {{"job_id", job->id},
                                 {"slot", format_instant(ref.slot)},
                                 {"kind", to_string(ref.kind)},
                                 {"attempt", entry.spec.attempt},
                                 {"decision", to_string(decision)},
                                 {"stalled_count", record != state_of(job->id).slots.end()
                                                       ? record->second.stalled_count
                                                       : kMaxStalledCount + 1}});
  }
}

// A retry the state records as started (next_action retry, no instant) that
// the queue no longer holds, waiting or active: the records of its end were
// lost with damage to the store (a run's end is written before the queue's
// finish, so nothing else leaves one; recover_stalled has handled the active
// entries). Its outcome is unknown, so it runs again now, the same attempt,
// as a stalled run does (at least once; docs/scheduler.md); not under a
// per-episode budget whose next regular slot is due, which supersedes it.
void Scheduler::restore_orphaned_retries() {
  if (corrupt_) return;
  auto entries = queue_.list();
  if (!entries.ok()) return halt(std::move(entries).error());
  std::set<std::string> held;
  for (const QueueEntry& entry : *entries) held.insert(queue_key(entry.spec));
  const TimeMs now = clock_.now();
  for (const ScheduledJob& job : jobs_) {
    // Under a per-episode budget a regular slot due now starts a new episode
    // that supersedes the old slot's retry: it is not run again.
    const PolicyOrError& policy = effective_policy(job);
    const JobState& state = state_of(job.id);
    const bool per_slot = policy.ok() && policy->budget == BudgetScope::per_slot;
    if (!per_slot && state.next_run_at && *state.next_run_at <= now) continue;
    for (const auto& [slot, record] : state.slots) {
      if (record.next_action != NextAction::retry || record.next_retry_at.has_value()) continue;
      const QueueEntrySpec spec{job.id, slot, RunKind::retry, record.retry_count + 1, now};
      if (held.count(queue_key(spec)) != 0) continue;
      auto added = queue_.add(spec);
      if (!added.ok()) return halt(std::move(added).error());
      log_.warning("retry_restored", {{"job_id", job.id},
                                      {"slot", format_instant(slot)},
                                      {"attempt", spec.attempt},
                                      {"next_retry_at", format_instant(now)},
                                      {"reason", "started, and its end was lost"}});
    }
  }
}

// ---- slots and dispatch -----------------------------------------------------

// The jobs whose next run is due by `now`, in the order of jobs_ (the order
// slots are handed out in), from next_runs_ rather than a scan of every job.
std::vector<std::size_t> Scheduler::due_jobs(TimeMs now) const {
  std::vector<std::size_t> due;
  for (auto it = next_runs_.begin(); it != next_runs_.end() && it->first <= now; ++it) {
    due.push_back(job_index_.at(it->second));
  }
  std::sort(due.begin(), due.end());
  return due;
}

void Scheduler::hand_out_due_slots() {
  const TimeMs now = clock_.now();
  for (const std::size_t index : due_jobs(now)) {
    const ScheduledJob& job = jobs_[index];
    if (schedule_broken_.count(job.id) != 0) continue;
    // Not due (what take_due_slot would find): no copy of the state.
    if (const JobState& s = state_of(job.id); !s.next_run_at || *s.next_run_at > now) continue;
    const JobState before = state_of(job.id);
    auto step = take_due_slot(before, job.schedule, now, options_.misfire_grace_ms);
    if (!step.ok()) {
      mark_schedule_broken(job.id, step.error());
      continue;
    }
    if (!step->handout) continue;
    const SlotHandout& h = *step->handout;
    Transition t = on_slot_due(effective_policy(job), step->state, h.slot, now);
    // Queue first: the add is idempotent on (job, slot, kind, attempt), so a
    // crash before the state write hands the same slot out again harmlessly;
    // the other order could lose the slot.
    QueueEntrySpec spec;
    spec.job_id = job.id;
    spec.slot = h.slot;
    spec.kind = RunKind::regular;
    spec.attempt = 1;
    spec.ready_at = h.slot;
    auto added = queue_.add(spec);
    if (!added.ok()) return halt(std::move(added).error());
    if (Status s = persist(job.id, t.state); !s.ok()) {
      if (!corrupt_) return;  // halted
      // The write found the store corrupt: the slot is handed out all the
      // same (in memory, fail closed), or the loop would hand it out again.
      t = on_slot_due(effective_policy(job), step->state, h.slot, now);
      set_state(job.id, t.state);
    }
    for (const RetryRef& r : t.cancelled_retries) {
      auto dropped = queue_.cancel_retries(job.id, r.slot);
      if (!dropped.ok()) return halt(std::move(dropped).error());
      log_.info("retry_superseded", {{"job_id", job.id},
                                     {"slot", format_instant(r.slot)},
                                     {"next_retry_at", format_instant(r.at)},
                                     {"superseded_by", format_instant(h.slot)}});
    }
    const JobState& after = state_of(job.id);
    log_.info("slot_due",
              {{"job_id", job.id},
               {"slot", format_instant(h.slot)},
               {"queue_id", added->id},
               {"added", added->added},
               {"next_run_at",
                after.next_run_at ? json(format_instant(*after.next_run_at)) : json(nullptr)}});
    if (h.misfire) {
      json coalesced = json::array();
      for (TimeMs c : h.coalesced_slots) coalesced.push_back(format_instant(c));
      log_.warning("slot_misfire", {{"job_id", job.id},
                                    {"slot", format_instant(h.slot)},
                                    {"lateness_ms", h.lateness_ms},
                                    {"coalesced_count", h.coalesced_count},
                                    {"coalesced_slots", std::move(coalesced)},
                                    {"coalesced_truncated", h.coalesced_truncated}});
    }
  }
}

bool Scheduler::entry_is_current(const QueueEntry& entry, std::string& why) const {
  if (find_job(entry.spec.job_id) == nullptr) {
    why = "unknown job";
    return false;
  }
  if (entry.spec.kind == RunKind::regular) return true;  // regular runs are never skipped
  if (corrupt_) {
    why = "state_corrupt: no retries run while the store cannot be trusted";
    return false;
  }
  const auto& states = states_;
  const auto s = states.find(entry.spec.job_id);
  if (s == states.end()) {
    why = "no state";
    return false;
  }
  const auto record = s->second.slots.find(entry.spec.slot);
  if (record == s->second.slots.end() || record->second.next_action != NextAction::retry) {
    why = "no retry pending for this slot (superseded, cancelled or finished)";
    return false;
  }
  if (record->second.retry_count + 1 != entry.spec.attempt) {
    why = fmt::format("attempt {} is not the pending retry's ({})", entry.spec.attempt,
                      record->second.retry_count + 1);
    return false;
  }
  return true;
}

void Scheduler::dispatch() {
  while (static_cast<int>(busy_.size()) < options_.concurrency) {
    auto taken = queue_.take_next(clock_.now(), busy_);
    if (!taken.ok()) return halt(std::move(taken).error());
    if (!*taken) return;
    QueueEntry entry = std::move(**taken);
    std::string why;
    if (!entry_is_current(entry, why)) {
      if (!drop_entry(entry, why)) return;
      continue;
    }
    busy_.insert(entry.spec.job_id);
    std::string job_id = entry.spec.job_id;
    spawn_task(std::move(job_id), execute(std::move(entry)));
  }
}

bool Scheduler::drop_entry(const QueueEntry& entry, const std::string& why) {
  // The state is the truth; a queue entry it no longer backs (a retry a
  // regular slot superseded, whose cancel a crash cut off) is dropped.
  auto gone = queue_.finish(entry.id, {});
  if (!gone.ok()) {
    halt(std::move(gone).error());
    return false;
  }
  LogFields fields{{"job_id", entry.spec.job_id},
                   {"slot", format_instant(entry.spec.slot)},
                   {"kind", to_string(entry.spec.kind)},
                   {"attempt", entry.spec.attempt},
                   {"reason", why}};
  if (!corrupt_ || entry.spec.kind != RunKind::retry || find_job(entry.spec.job_id) == nullptr) {
    log_.warning("queue_stale_dropped", fields);
    return true;
  }
  // A retry the untrusted store cannot back: dropped visibly (trace, status
  // view), and the in-memory state no longer shows it pending.
  const TimeMs now = clock_.now();
  fields.push_back({"queue_id", entry.id});
  log_.warning("retry_dropped", fields);
  notices_.dropped_retries.push_back(
      DroppedRetry{entry.spec.job_id, entry.spec.slot, entry.spec.attempt, now, why});
  Transition t = apply_policy(corrupt_policy_, state_of(entry.spec.job_id), now);
  set_state(entry.spec.job_id, t.state);  // its policy_invalid note: state_corrupt says it all
  return true;
}

bool Scheduler::begin_run(const ScheduledJob& job, const QueueEntry& entry, TimeMs now) {
  const RunRef ref{entry.spec.slot, entry.spec.kind};
  const JobState before = state_of(job.id);
  Transition t = on_run_started(effective_policy(job), before, ref, now);
  if (!(t.state == before)) {
    if (Status s = persist(job.id, t.state); !s.ok()) {
      if (!corrupt_) return false;  // halted
      // Fail closed from here, in memory only. A retry does not start (it
      // is dropped below, its pending record with it).
      if (ref.kind == RunKind::regular) set_state(job.id, t.state);
    }
  }
  for (const RetryRef& r : t.cancelled_retries) {
    auto dropped = queue_.cancel_retries(job.id, r.slot);
    if (!dropped.ok()) {
      halt(std::move(dropped).error());
      return false;
    }
    log_.info("retry_superseded", {{"job_id", job.id},
                                   {"slot", format_instant(r.slot)},
                                   {"next_retry_at", format_instant(r.at)},
                                   {"superseded_by", format_instant(ref.slot)}});
  }
  // Checked again after the write: it may be what found the store corrupt,
  // and a retry never runs against counters that cannot be trusted.
  std::string why;
  if (!entry_is_current(entry, why)) {
    if (drop_entry(entry, why)) {
      busy_.erase(job.id);
      alarm_.notify();
    }
    return false;
  }
  return true;
}

Task<void> Scheduler::execute(QueueEntry entry) {
  const ScheduledJob& job = *find_job(entry.spec.job_id);
  const RunRef ref{entry.spec.slot, entry.spec.kind};
  const TimeMs started_at = clock_.now();
  if (!begin_run(job, entry, started_at)) co_return;
  ++runs_started_;
  // The start delay against the entry's ready time (for a regular run, its
  // slot): how long it queued behind other runs (concurrency) or downtime.
  log_.info("run_started", {{"job_id", job.id},
                            {"slot", format_instant(ref.slot)},
                            {"kind", to_string(ref.kind)},
                            {"attempt", entry.spec.attempt},
                            {"queue_id", entry.id},
                            {"ready_at", format_instant(entry.spec.ready_at)},
                            {"start_delay_ms", started_at - entry.spec.ready_at},
                            {"slot_lateness_ms", started_at - ref.slot}});
  RunContext context;
  context.job_id = job.id;
  context.slot = ref.slot;
  context.attempt = entry.spec.attempt;
  context.is_retry = ref.kind == RunKind::retry;
  RunOutcome outcome = co_await job.runner->run(context);
  if (halted()) co_return;
  const TimeMs finished_at = clock_.now();
  LogFields finished{{"job_id", job.id},
                     {"slot", format_instant(ref.slot)},
                     {"kind", to_string(ref.kind)},
                     {"attempt", entry.spec.attempt},
                     {"outcome", to_string(outcome.kind)},
                     {"duration_ms", finished_at - started_at}};
  if (outcome.failed()) {
    finished.push_back({"failure_class", to_string(outcome.failure_class)});
    finished.push_back({"error", outcome.error});
  }
  log_.write(outcome.failed() ? LogLevel::warning : LogLevel::info, "run_finished", finished);

  auto compute = [&]() {
    const TimeMs now = clock_.now();
    const JobState& before = state_of(job.id);
    const PolicyOrError& policy = effective_policy(job);
    Transition t = outcome.failed() ? on_run_failed(policy, before, ref, outcome.failure_class,
                                                    outcome.error, now, &random_)
                                    : on_run_succeeded(policy, before, ref, now);
    Effects fx;
    fx.op = kOpFinish;
    fx.state = t.state;
    if (t.scheduled_retry) {
      const auto record = t.state.slots.find(t.scheduled_retry->slot);
      REHEARSE_ASSERT(record != t.state.slots.end());
      QueueEntrySpec retry;
      retry.job_id = job.id;
      retry.slot = t.scheduled_retry->slot;
      retry.kind = RunKind::retry;
      retry.attempt = record->second.retry_count + 1;
      retry.ready_at = t.scheduled_retry->at;
      fx.adds.push_back(retry);
    }
    for (const RetryRef& r : t.cancelled_retries) fx.cancels.push_back(RetryCancel{job.id, r.slot});
    fx.notifications = std::move(t.notifications);
    if (corrupt_) {
      for (Notification& n : fx.notifications) {
        if (n.event == NotificationEvent::failed_permanent) {
          n.detail = "state store corrupt: no retries are scheduled (fail closed)";
        }
      }
    }
    return fx;
  };
  std::vector<OutboxMessage> messages = commit_entry(entry, compute);
  if (halted()) co_return;
  // The job is free again once the queue has the outcome; its notifications
  // are sent after, so their latency does not hold the worker.
  busy_.erase(job.id);
  alarm_.notify();
  if (!messages.empty()) co_await send_outbox(std::move(messages));
}

// ---- durable plumbing -------------------------------------------------------

Status Scheduler::persist(const std::string& job_id, const JobState& next) {
  if (corrupt_) {
    set_state(job_id, next);  // in memory only: nothing replaces the corrupt file
    return {};
  }
  Status s = store_.update(job_id, [&next](JobState& stored) { stored = next; });
  report_store_damage();
  if (s.ok()) {
    set_state(job_id, next);
    return s;
  }
  if (s.error().code == ErrorCode::corrupt) {
    enter_corrupt_mode(s.error());
    return s;  // the caller recomputes fail-closed where it matters
  }
  halt(s.error());
  return s;
}

std::vector<OutboxMessage> Scheduler::commit_entry(const QueueEntry& entry,
                                                   const std::function<Effects()>& compute) {
  // Two rounds at most: the store may turn out corrupt at the state write,
  // and then the transition is recomputed fail-closed (no retry).
  for (int round = 0; round < 2; ++round) {
    Effects fx = compute();
    const bool write_state = !corrupt_;
    if (!write_state) {
      set_state(entry.spec.job_id, *fx.state);
      fx.state.reset();
      fx.adds.clear();
    }
    if (Status s = queue_.set_intent(entry.id, encode_intent(fx)); !s.ok()) {
      halt(s.error());
      return {};
    }
    if (write_state) {
      if (Status s = persist(entry.spec.job_id, *fx.state); !s.ok()) {
        if (corrupt_) continue;
        return {};  // halted
      }
    }
    return apply_effects(entry, fx);
  }
  REHEARSE_UNREACHABLE();
}

std::vector<OutboxMessage> Scheduler::apply_effects(const QueueEntry& entry,
                                                    const Effects& effects) {
  if (effects.op == kOpStallRerun) {
    if (Status s = queue_.requeue(entry.id); !s.ok()) halt(s.error());
    return {};
  }
  QueueFinish finish;
  if (!corrupt_) finish.adds = effects.adds;
  finish.cancels = effects.cancels;
  finish.outbox = outbox_messages(effects.notifications);
  std::vector<OutboxMessage> messages = finish.outbox;
  auto ids = queue_.finish(entry.id, std::move(finish));
  if (!ids.ok()) {
    halt(std::move(ids).error());
    return {};
  }
  REHEARSE_ASSERT_EQ(ids->size(), messages.size());  // the port's contract
  for (std::size_t i = 0; i < messages.size(); ++i) messages[i].id = (*ids)[i];
  for (const Notification& n : effects.notifications) log_notification(n);
  return messages;
}

std::vector<OutboxMessage> Scheduler::outbox_messages(
    const std::vector<Notification>& notifications) const {
  std::vector<OutboxMessage> out;
  for (const Notification& n : notifications) {
    std::vector<std::string> targets;
    const ScheduledJob* job = find_job(n.job_id);
    if (job != nullptr && !job->notify_target.empty()) {
      targets.push_back(job->notify_target);
    } else if (!options_.ops_target.empty()) {
      targets.push_back(options_.ops_target);
    } else {
      // Store-wide news with no ops target: every job's target hears it.
      std::set<std::string> all;
      for (const ScheduledJob& j : jobs_) {
        if (!j.notify_target.empty()) all.insert(j.notify_target);
      }
      targets.assign(all.begin(), all.end());
    }
    const std::string payload = to_json(n).dump();
    for (std::string& target : targets) out.push_back(OutboxMessage{0, std::move(target), payload});
  }
  return out;
}

std::vector<OutboxMessage> Scheduler::outbox_first(const std::vector<Notification>& notifications) {
  std::vector<OutboxMessage> messages = outbox_messages(notifications);
  for (OutboxMessage& m : messages) {
    auto id = queue_.outbox_add(m.target, m.payload);
    if (!id.ok()) {
      halt(std::move(id).error());
      return {};
    }
    m.id = *id;
  }
  return messages;
}

Task<void> Scheduler::send_outbox(std::vector<OutboxMessage> messages) {
  for (OutboxMessage& m : messages) {
    if (halted()) co_return;
    json payload = json::parse(m.payload, nullptr, /*allow_exceptions=*/false);
    if (payload.is_discarded()) payload = json::object();
    const std::string event = payload.contains("event") && payload.at("event").is_string()
                                  ? payload.at("event").get<std::string>()
                                  : "";
    const std::string job_id = payload.contains("job_id") && payload.at("job_id").is_string()
                                   ? payload.at("job_id").get<std::string>()
                                   : "";
    Status sent = co_await notifier_.send(m.target, std::move(payload));
    if (!sent.ok()) {
      // Logged, not retried: the state and the log keep the failure visible.
      log_.warning("notification_failed", {{"job_id", job_id},
                                           {"event", event},
                                           {"target", m.target},
                                           {"error", sent.error().describe()}});
    }
    if (halted()) co_return;
    auto removed = queue_.outbox_remove(m.id);
    if (!removed.ok()) {
      halt(std::move(removed).error());
      co_return;
    }
  }
}

void Scheduler::log_notification(const Notification& n) {
  LogFields fields{{"job_id", n.job_id},
                   {"failure_class",
                    n.failure_class ? json(to_string(*n.failure_class)) : json(nullptr)},
                   {"attempt", n.attempt},
                   {"next_action", to_string(n.next_action)},
                   {"at", format_instant(n.at)}};
  if (n.slot) fields.push_back({"slot", format_instant(*n.slot)});
  if (n.next_retry_at) fields.push_back({"next_retry_at", format_instant(*n.next_retry_at)});
  if (!n.detail.empty()) fields.push_back({"detail", n.detail});
  log_.write(level_of(n.event), to_string(n.event), fields);
}

void Scheduler::enter_corrupt_mode(const Error& why) {
  if (corrupt_) return;
  corrupt_ = true;
  if (corrupt_notified_) return;
  corrupt_notified_ = true;  // once per boot
  Notification n;
  n.event = NotificationEvent::state_corrupt;
  n.job_id = "";
  n.attempt = 0;
  n.next_action = NextAction::manual_review;
  n.at = clock_.now();
  n.detail = fmt::format("{}: {}", store_.dir(), why.describe());
  std::vector<OutboxMessage> messages = outbox_first({n});
  if (halted()) return;
  log_notification(n);
  deferred_outbox_.insert(deferred_outbox_.end(), messages.begin(), messages.end());
  alarm_.notify();
}

std::string Scheduler::encode_intent(const Effects& fx) const {
  json j = json::object();
  j["op"] = fx.op;
  j["state"] = fx.state ? encode_job(*fx.state) : json(nullptr);
  json adds = json::array();
  for (const QueueEntrySpec& a : fx.adds) {
    adds.push_back({{"job_id", a.job_id},
                    {"slot", a.slot},
                    {"kind", to_string(a.kind)},
                    {"attempt", a.attempt},
                    {"ready_at", a.ready_at}});
  }
  j["adds"] = std::move(adds);
  json cancels = json::array();
  for (const RetryCancel& c : fx.cancels)
    cancels.push_back({{"job_id", c.job_id}, {"slot", c.slot}});
  j["cancels"] = std::move(cancels);
  json notes = json::array();
  for (const Notification& n : fx.notifications) notes.push_back(to_json(n));
  j["notifications"] = std::move(notes);
  return j.dump();
}

Result<Scheduler::Effects> Scheduler::decode_intent(const std::string& text) const {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return intent_error("not a JSON object");
  Effects fx;
  if (!j.contains("op") || !j.at("op").is_string()) return intent_error("missing op");
  fx.op = j.at("op").get<std::string>();
  if (fx.op != kOpFinish && fx.op != kOpStallRerun && fx.op != kOpStallFail) {
    return intent_error("unknown op " + fx.op);
  }
  if (j.contains("state") && !j.at("state").is_null()) {
    auto state = decode_job(j.at("state"), "/state");
    if (!state.ok()) return std::move(state).error();
    fx.state = std::move(*state);
  }
  auto int_of = [](const json& o, const char* key) -> std::optional<std::int64_t> {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_number_integer()) return std::nullopt;
    return o.at(key).get<std::int64_t>();
  };
  auto str_of = [](const json& o, const char* key) -> std::optional<std::string> {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) return std::nullopt;
    return o.at(key).get<std::string>();
  };
  if (j.contains("adds") && j.at("adds").is_array()) {
    for (const json& a : j.at("adds")) {
      const auto job_id = str_of(a, "job_id");
      const auto kind = str_of(a, "kind");
      const auto slot = int_of(a, "slot");
      const auto attempt = int_of(a, "attempt");
      const auto ready_at = int_of(a, "ready_at");
      if (!job_id || !kind || !slot || !attempt || !ready_at) return intent_error("bad add");
      QueueEntrySpec spec;
      spec.job_id = *job_id;
      spec.kind = *kind == "retry" ? RunKind::retry : RunKind::regular;
      spec.slot = *slot;
      spec.attempt = static_cast<int>(*attempt);
      spec.ready_at = *ready_at;
      fx.adds.push_back(std::move(spec));
    }
  }
  if (j.contains("cancels") && j.at("cancels").is_array()) {
    for (const json& c : j.at("cancels")) {
      const auto job_id = str_of(c, "job_id");
      const auto slot = int_of(c, "slot");
      if (!job_id || !slot) return intent_error("bad cancel");
      fx.cancels.push_back(RetryCancel{*job_id, *slot});
    }
  }
  if (j.contains("notifications") && j.at("notifications").is_array()) {
    for (const json& n : j.at("notifications")) {
      auto note = notification_from_json(n);
      if (!note.ok()) return std::move(note).error();
      fx.notifications.push_back(std::move(*note));
    }
  }
  return fx;
}

}  // namespace rehearse
