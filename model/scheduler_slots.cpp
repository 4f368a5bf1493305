// The scheduler's slots and dispatch: due regular slots handed out to the
// queue at their instant (misfires coalesced), ready entries checked
// against the state and started while fewer than `concurrency` runs are in
// flight, and the start of a run recorded before it runs.
#include "model/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

namespace rehearse {

using nlohmann::json;

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
    note_budget_attempt(entry.spec.job_id);
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

// A retry budget counts every run the worker takes from the queue, as the
// queue itself records it (model/retry_budget.hpp).
void Scheduler::note_budget_attempt(const std::string& job_id) {
  const ScheduledJob* job = find_job(job_id);
  if (job == nullptr) return;
  const std::string budget = budget_name(*job);
  if (!budget.empty()) budgets_.note_attempt(budget, clock_.now());
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

}  // namespace rehearse
