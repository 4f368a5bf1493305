// The scheduler's boot: the states loaded (and checked against the delivery
// ledger), the intents of runs whose end was cut short replayed, policies
// and schedules applied, pending retries restored and the runs a crash left
// active recovered as stalled, in the order docs/scheduler.md gives.
#include "model/scheduler.hpp"

#include <fmt/format.h>

#include <utility>

#include "model/scheduler_detail.hpp"

namespace rehearse {

using scheduler_detail::fresh_state;
using scheduler_detail::kOpStallFail;
using scheduler_detail::kOpStallRerun;

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

}  // namespace rehearse
