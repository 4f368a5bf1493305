#include "sim/monitors/nothing_lost.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {

bool failure_notification(const std::string& event) {
  return event == "retry_scheduled" || event == "retry_exhausted" || event == "failed_permanent";
}

}  // namespace

NothingLost::NothingLost(const Scenario& scenario, MonitorContext& context)
    : context_(context),
      sends_(kName, context.process, scenario.services.messenger.has_value()),
      sequential_(scenario),
      notifications_seen_(scenario.services.messenger.has_value()) {
  for (const auto& [id, config] : context.jobs.all()) {
    jobs_[id] = JobWatch{};
    // A job with no usable schedule never runs, so its policy never applies:
    // its config error is the schedule's (schedule_kept judges that it never runs).
    const bool runs = !config.never_runs && config.cron.has_value();
    if (runs && config.policy_judged && !config.policy.valid) invalid_policies_[id] = PolicyShown{};
  }
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) item_stages_[item.issue] = item.stage;
    if (!spec.targets.empty()) targets_[spec.id] = spec.targets;
  }
  // One watch per job of the table; invalid policies are among them.
  REHEARSE_ASSERT_EQ(jobs_.size(), context.jobs.all().size());
  REHEARSE_ASSERT_LE(invalid_policies_.size(), jobs_.size());
}

Violations NothingLost::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (e.type == "job_file_damaged") {
    if (e.flag("applied")) ledger_damaged_.insert(e.job);
    return out;
  }
  if (is_crash_event(e.type)) orphan_leases_of(e);
  track_leases(e, i, out);
  sends_.observe(e, i, out);
  if (context_.process.went_down_at(i)) {
    for (auto& [id, j] : jobs_) {
      j.success_unannounced.reset();
      j.group_run.reset();  // a run cut by the crash is not judged
    }
    sequential_.forget();
    return out;
  }
  sequential_.observe(e, i, kName, out);
  if (e.type == "message_delivered" && e.str("kind") == "delivery" && e.slot) {
    delivered_.insert({e.job, *e.slot});
    delivered_to_.insert({e.job, *e.slot, e.str("target")});
  }
  check_policy_noticed_once(e, i, out);
  note_policy_visibility(e);
  check_request_failure_swallowed(e, i, out);
  check_per_slot_retry_kept(e, i, out);
  check_retry_announced(e, i, out);
  check_success_delivered(e, i, out);
  check_budget_spent(e, i, out);
  check_group_verdict(e, i, out);
  track_recovery(e, i);
  check_item_failed_visibly(e, i, out);
  return out;
}

// A fetch or call run fails when one of its requests' last answer failed
// (docs/scenario-format.md: a call job stops at its first failed call): a run
// whose row says ok after such an answer swallowed the failure (001).
void NothingLost::check_request_failure_swallowed(const TraceEvent& e, std::size_t i,
                                                  Violations& out) const {
  if (e.type != "run_finished" || e.str("outcome") != "success") return;
  const std::string failed = e.str("request_failed");
  if (failed.empty()) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {} slot {}: the run reported success although one of its "
                             "requests failed ({}): a swallowed failure",
                             e.job, e.slot ? format_instant(*e.slot) : std::string("-"), failed)});
}

// Under a per_slot budget each slot keeps its own retries (docs/semantics.md
// §2): the next slot never supersedes them. A queue_cancel of a retry of such
// a job drops a retry the slot was owed.
void NothingLost::check_per_slot_retry_kept(const TraceEvent& e, std::size_t i,
                                            Violations& out) const {
  if (e.type != "queue_cancel" || e.str("kind") != "retry") return;
  // A store that fails closed drops every pending retry (no retry runs while
  // it cannot be trusted, docs/semantics.md §5): state_durable judges that.
  if (context_.process.store_refused()) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || !job->policy.valid || !job->policy.per_slot) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {} slot {}: its pending retry was cancelled, but under a "
                             "per_slot budget only the slot's own runs end its retries",
                             e.job, e.slot ? format_instant(*e.slot) : std::string("-"))});
}

// A run's finish is one queue operation: its queue_done (with how many
// entries it adds and messages it commits), then those adds, then those
// messages. A retry it queues must come with its retry_scheduled message in
// the same operation: a retry nobody is told of is the hidden retry of
// docs/semantics.md §9 (004). A retry restored at a boot is no finish's.
void NothingLost::check_retry_announced(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type == "queue_done") {
    finish_ = FinishWatch{e.num("adds"), e.num("outbox"), {}, {}, i, e.t};
  } else if (e.type == "queue_add" && finish_ && finish_->adds_left > 0) {
    --finish_->adds_left;
    REHEARSE_ASSERT_GE(finish_->adds_left, 0);
    if (e.str("kind") == "retry" && e.flag("added")) finish_->retried.insert(e.job);
  } else if (e.type == "outbox_add" && finish_ && finish_->adds_left == 0 &&
             finish_->outbox_left > 0) {
    --finish_->outbox_left;
    REHEARSE_ASSERT_GE(finish_->outbox_left, 0);
    if (e.str("event") == "retry_scheduled") finish_->announced.insert(e.job);
  } else {
    return;
  }
  if (!finish_ || finish_->adds_left > 0 || finish_->outbox_left > 0) return;
  // The finish being closed began at its queue_done, this event or before.
  REHEARSE_ASSERT_LE(finish_->index, i);
  for (const std::string& job : finish_->retried) {
    if (finish_->announced.count(job) != 0) continue;
    out.push_back({kName, i, e.t,
                   fmt::format("job {} queued a retry at {} without a retry_scheduled message in "
                               "the same finish: a retry nobody is told of",
                               job, format_instant(finish_->t))});
  }
  finish_.reset();
}

// A regular entry is never dropped (docs/semantics.md §4: no regular slot is
// skipped): the queue finishes it only after the run's intent recorded how
// it ended. A regular entry finished with no intent is a slot lost without
// a word (a retry may be dropped so, when the state no longer backs it).
void NothingLost::check_regular_outcome(const TraceEvent& e, std::size_t i, std::int64_t id,
                                        Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_done");
  const bool had_intent = intents_.erase(id) != 0;
  if (had_intent || e.str("kind") != "regular") return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {}'s regular slot {} left the queue (entry {}) with no intent: "
                             "a regular slot dropped, not run",
                             e.job, e.slot ? format_instant(*e.slot) : std::string("-"), id)});
}

// A run a crash cut (its lease orphaned) runs again once without consuming an
// attempt; a second stall of the same run fails it (docs/semantics.md §4,
// BullMQ's maxStalledCount 1): the queue puts an entry back for a re-run at
// most once.
void NothingLost::check_stall_rerun(const TraceEvent& e, std::size_t i, std::int64_t id,
                                    Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_requeue");
  if (orphans_.count(id) == 0) return;
  int& stalls = ++stalls_[id];
  REHEARSE_ASSERT_GE(stalls, 1);
  // The stall count lives in the state store: a boot that found the store
  // damaged (or a store failing closed) cannot know an earlier stall, and
  // counts this one as the first.
  const ProcessTracker& process = context_.process;
  if (process.boot_blind() || process.store_refused()) stalls = 1;
  if (stalls <= 1) return;
  out.push_back(
      {kName, i, e.t,
       fmt::format("job {} slot {}: entry {} stalled {} times and was put back to run "
                   "again; a run stalled twice fails",
                   e.job, e.slot ? format_instant(*e.slot) : std::string("-"), id, stalls)});
}

// A crash: the leases its process held (every one at the machine's power
// loss) are left for the next acting worker to recover.
void NothingLost::orphan_leases_of(const TraceEvent& e) {
  REHEARSE_ASSERT(is_crash_event(e.type));
  const bool machine = e.type == "disk_crash";
  const std::int64_t pid = pid_of(e);
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (machine || it->second.process == pid) {
      it->second.died_at = e.t;
      // An entry is leased or orphaned, never both.
      const bool fresh = orphans_.insert(*it).second;
      REHEARSE_ASSERT(fresh);
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
}

// Takes lease entries; a finish or a requeue ends a lease (or recovers an
// orphan); a take while an orphan is left fires, once per orphan.
void NothingLost::track_leases(const TraceEvent& e, std::size_t i, Violations& out) {
  const auto id = e.num("id", -1);
  if (e.type == "queue_intent") intents_.insert(id);
  if (e.type == "queue_done") check_regular_outcome(e, i, id, out);
  if (e.type == "queue_requeue") check_stall_rerun(e, i, id, out);
  if (e.type == "queue_done" || e.type == "queue_requeue") {
    leases_.erase(id);
    orphans_.erase(id);
    return;
  }
  if (e.type != "queue_take") return;
  for (const auto& [orphan, lease] : orphans_) {
    out.push_back({kName, i, e.t,
                   fmt::format("queue entry {} ({}) was leased by process {}, which died at {}; "
                               "process {} took entry {} without recovering it (neither re-run "
                               "nor finished)",
                               orphan, lease.what, lease.process, format_instant(lease.died_at),
                               e.num("process"), id)});
  }
  orphans_.clear();
  // Taken entries are leased; an orphan was a lease its process lost.
  REHEARSE_ASSERT(orphans_.empty());
  leases_[id] =
      Lease{e.num("process"),
            fmt::format("{} {} attempt {}", e.job,
                        e.slot ? format_instant(*e.slot) : std::string("-"), e.num("attempt")),
            0};
}

// An item the durable pipeline file shows entering DESIGN_FAILED must carry
// the reconcile error that says why (docs/semantics.md §8: "with a reconcile
// error saying why"); without one it failed silently.
void NothingLost::check_item_failed_visibly(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "durable_stage" || e.item.empty()) return;
  const std::string to = e.str("stage");
  std::string& held = item_stages_[e.item];
  if (to == "DESIGN_FAILED" && held != to && e.str("error").empty()) {
    out.push_back({kName, i, e.t,
                   fmt::format("item {} of job {} entered DESIGN_FAILED (from {}) with no "
                               "reconcile error: a failed item must say why",
                               e.item, e.job, held.empty() ? "nothing" : held)});
  }
  held = to;
}

// Seen as it happens: a group or publish run that reports success although
// nothing of the slot was ever delivered (and the slot was not marked
// skipped) has lost the slot behind a success (001's bug).
void NothingLost::check_success_delivered(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type == "durable_delivery" && e.slot) note_ledger_targets(e);
  if (e.type != "run_finished" || e.str("outcome") != "success" || !e.slot) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  const SlotWatch* slot = context_.slots.find(e.job, *e.slot);
  const bool skipped = (slot != nullptr && slot->state == SlotState::marked_skipped) ||
                       ledger_skipped_.count({e.job, *e.slot}) != 0;
  if (job == nullptr || !job->delivers || skipped) return;
  if (delivered_.count({e.job, *e.slot}) == 0) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: the run reported success but nothing of the "
                               "slot was delivered and it was not marked skipped",
                               e.job, slot_text(e.slot))});
    return;
  }
  // Delivered: to every target (docs/semantics.md §6; a retry sends only to
  // the targets still missing, so each may have got it in an earlier run).
  const auto targets = targets_.find(e.job);
  if (targets == targets_.end()) return;
  for (const std::string& target : targets->second) {
    if (delivered_to_.count({e.job, *e.slot, target}) != 0) continue;
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: the run reported success but target {} never "
                               "got the slot's delivery",
                               e.job, slot_text(e.slot), target)});
    return;
  }
}

// The ledger's durable record of the targets a slot reached (a delivery sent
// before a crash counts once the ledger holds it).
void NothingLost::note_ledger_targets(const TraceEvent& e) {
  // check_success_delivered reads only a ledger record naming a slot.
  REHEARSE_ASSERT(e.slot.has_value());
  if (e.str("verdict") == "skipped") ledger_skipped_.insert({e.job, *e.slot});
  const auto it = e.data.find("delivered_to");
  if (it == e.data.end() || !it->is_array()) return;
  for (const auto& target : *it) {
    if (target.is_string()) delivered_to_.insert({e.job, *e.slot, target.get<std::string>()});
  }
}

// retry_exhausted and failed_permanent only once the budget allows them.
namespace {
std::string retry_limit_text(int limit) {
  return limit == kWitnessUnlimited ? std::string("unlimited") : std::to_string(limit);
}
}  // namespace

// Several retriers: the failure's retrier must have spent its own count
// (or the deadline be near, the hint counted) before the chain ends; a class
// no retrier takes fails at once. A full retry budget is judged by the caller.
void NothingLost::check_rule_spent(const TraceEvent& e, std::size_t i, const WitnessPolicy& p,
                                   const std::string& cls, bool stalled, Violations& out) {
  const WitnessRule* rule = p.rule_of(cls);
  if (rule == nullptr || stalled) return;
  const auto index = static_cast<std::size_t>(rule - p.rules.data());
  const int spent = context_.retry_count.scheduled_by_rule(e.job, *e.slot, index);
  WitnessPolicy one = p;
  one.delays = rule->delays;
  const DurationMs hint = p.honors_retry_after ? context_.retry_after.last(e.job) : 0;
  if (spent >= rule->retries_max ||
      p.past_deadline(*e.slot, context_.wall_clock.wall(e.t) +
                                   std::max(one.max_delay_ms(spent + 1), hint))) {
    return;
  }
  out.push_back(
      {kName, i, e.t,
       fmt::format("job {} slot {}: {} on {} after {} of the {} retries its retrier {} "
                   "allows",
                   e.job, slot_text(e.slot), e.type, cls, spent, rule->retries_max, index)});
}

void NothingLost::check_budget_spent(const TraceEvent& e, std::size_t i, Violations& out) {
  if ((e.type != "retry_exhausted" && e.type != "failed_permanent") || !e.slot) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || !job->policy.valid || context_.process.store_refused()) return;
  const WitnessPolicy& p = job->policy;
  const SlotWatch* slot = context_.slots.find(e.job, *e.slot);
  const bool stalled = slot != nullptr && slot->stalled;
  const int spent = context_.retry_count.scheduled(e.job, *e.slot, p.per_slot);
  // A valid policy's budget is a count of retries (witness_policy).
  REHEARSE_ASSERT_GE(p.retries_max, 0);
  // The class the world saw fail the slot's last run (run_facts.hpp: the
  // monitors' own reading of the replies), not the one the notification
  // carries: a core that misclassified a 429 as auth would write `auth` there.
  const std::string cls = slot != nullptr && slot->last_failure_class ? *slot->last_failure_class
                                                                      : e.str("failure_class");
  // A deadline may end the chain before its count: legitimately only when
  // some draw of the next delay would come due after it.
  const DurationMs hint = p.honors_retry_after ? context_.retry_after.last(e.job) : 0;
  const bool deadline_may_end =
      p.past_deadline(*e.slot,
                      context_.wall_clock.wall(e.t) + std::max(p.max_delay_ms(spent + 1), hint));
  // A retry budget may end the chain before its count, only when its window
  // (the process deciding, as the queue shows it) had no room for one more.
  const std::optional<BudgetRoom> room = context_.budgets.room(e.job, e.t);
  const bool budget_may_end = !p.budget.name.empty() && (!room || !room->has_room());
  if (!p.rules.empty()) {
    if (!budget_may_end) check_rule_spent(e, i, p, cls, stalled, out);
    return;
  }
  if (e.type == "retry_exhausted" && spent < p.retries_max && !deadline_may_end &&
      !budget_may_end) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: declared retry_exhausted after {} of {} retries{}",
                               e.job, slot_text(e.slot), spent, retry_limit_text(p.retries_max),
                               p.deadline_ms > 0 ? fmt::format(", with the next retry due "
                                                               "before the deadline {} after the "
                                                               "slot",
                                                               format_duration(p.deadline_ms))
                                                 : std::string())});
  } else if (e.type == "failed_permanent" && !stalled && p.retries_class(cls) &&
             spent < p.retries_max && !deadline_may_end) {
    out.push_back(
        {kName, i, e.t,
         fmt::format("job {} slot {}: failed permanently on {}, a class its policy "
                     "retries, with {} of {} retries left",
                     e.job, slot_text(e.slot), cls,
                     p.retries_max == kWitnessUnlimited ? std::string("unlimited")
                                                        : std::to_string(p.retries_max - spent),
                     retry_limit_text(p.retries_max))});
  }
}

// The group verdict (docs/semantics.md §6) from world facts: a group run
// begins when the queue hands its slot out (`queue_take`); judged when the
// next run of the job is taken (a retry is queued, and notices sent, after
// the run returns) or at the end.
void NothingLost::check_group_verdict(const TraceEvent& e, std::size_t i, Violations& out) {
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || job->tasks.empty() || !e.slot) return;
  // Every job of the table has its watch from the constructor.
  const auto found = jobs_.find(e.job);
  REHEARSE_ASSERT(found != jobs_.end());
  JobWatch& j = found->second;
  if (e.type == "queue_take") {
    judge_group_run(e.job, i, e.t, out);
    // A run after the world damaged the job's ledger fails closed before any
    // task runs: there is no verdict to judge (state_durable judges the closing).
    if (ledger_damaged_.count(e.job) != 0) return;
    j.group_run = GroupRun{*e.slot, {}, false, false, {}};
    return;
  }
  if (!j.group_run || j.group_run->slot != *e.slot) return;
  GroupRun& run = *j.group_run;
  if (e.type == "service_reply" && e.service == "model-api") {
    const std::string cls = e.str("body_class");
    const bool ok = e.num("status") == 200 && !cls.empty();
    run.results[e.str("target")] = !ok ? "failed" : (cls == "skip" ? "skip" : "deliverable");
  } else if (e.type == "message_delivered" || e.type == "message_refused") {
    const std::string kind = e.str("kind");
    if (kind == "failure_notice" ||
        (kind == "notification" && failure_notification(e.str("event")))) {
      run.failure_seen = true;
    }
    if (kind == "failure_notice") run.noticed.insert(e.str("target"));
    if (kind == "delivery") run.delivery_seen = true;
  } else if (e.type == "queue_add" && e.str("kind") == "retry") {
    run.failure_seen = true;
  } else if (e.type == "queue_intent") {
    check_failure_noticed(e.job, run, i, e.t, out);
    check_every_task_ran(e.job, run, i, e.t, out);
  }
}

// A task's error becomes a notice item and the other tasks still run
// (docs/semantics.md §6): a run that returned (its intent written) after one
// task failed has a model-api answer for every task that calls the model.
void NothingLost::check_every_task_ran(const std::string& id, const GroupRun& run, std::size_t i,
                                       TimeMs t, Violations& out) const {
  const MonitoredJob* job = context_.jobs.find(id);
  const auto failed = std::find_if(run.results.begin(), run.results.end(),
                                   [](const auto& r) { return r.second == "failed"; });
  if (job == nullptr || failed == run.results.end()) return;
  // A group run is opened only for a job with tasks (check_group_verdict).
  REHEARSE_ASSERT(!job->tasks.empty());
  for (const MonitoredJob::Task& task : job->tasks) {
    if (task.model_calls == 0 || run.results.count(task.id) != 0) continue;
    out.push_back({kName, i, t,
                   fmt::format("job {} slot {}: task {} failed and the run returned without "
                               "running task {} (a task's error is a notice item; the other "
                               "tasks still run)",
                               id, format_instant(run.slot), failed->first, task.id)});
    return;
  }
}

std::optional<NothingLost::GroupVerdict> NothingLost::verdict_of(const std::string& id,
                                                                 const GroupRun& run) const {
  const MonitoredJob* job = context_.jobs.find(id);
  if (job == nullptr) return std::nullopt;
  // A group run is opened only for a job with tasks (check_group_verdict).
  REHEARSE_ASSERT(!job->tasks.empty());
  GroupVerdict v;
  for (const MonitoredJob::Task& task : job->tasks) {
    std::string result;
    if (task.model_calls == 0) {
      result = task.produces == "skip" ? "skip" : "deliverable";
    } else if (const auto it = run.results.find(task.id); it != run.results.end()) {
      result = it->second;
    } else {
      return std::nullopt;  // not every task answered (a crash, a resumed delivery)
    }
    v.deliverable = v.deliverable || result == "deliverable";
    v.failed = v.failed || result == "failed";
  }
  return v;
}

// A failed verdict sends the failure notice to every target directly; a
// target that refuses is logged and the others are still tried
// (docs/semantics.md §6). The run has returned when its intent is written, so by
// then each target must have had one attempt (delivered or refused). A run a
// crash cut before its intent is not judged (the group run is forgotten).
void NothingLost::check_failure_noticed(const std::string& id, const GroupRun& run, std::size_t i,
                                        TimeMs t, Violations& out) const {
  const std::optional<GroupVerdict> v = verdict_of(id, run);
  const auto targets = targets_.find(id);
  if (!v || v->deliverable || !v->failed || targets == targets_.end()) return;
  for (const std::string& target : targets->second) {
    if (run.noticed.count(target) != 0) continue;
    out.push_back({kName, i, t,
                   fmt::format("job {} slot {}: the group run failed (no deliverable, a task "
                               "failed) and ended without sending its failure notice to target {} "
                               "(every target is tried, whatever the others answer)",
                               id, format_instant(run.slot), target)});
  }
}

void NothingLost::judge_group_run(const std::string& id, std::size_t i, TimeMs t, Violations& out) {
  // Asked for a job of the table (a group's take, or every watch at the end).
  const auto found = jobs_.find(id);
  REHEARSE_ASSERT(found != jobs_.end());
  JobWatch& j = found->second;
  if (!j.group_run) return;
  const GroupRun run = *j.group_run;
  j.group_run.reset();
  const std::optional<GroupVerdict> v = verdict_of(id, run);
  if (!v) return;  // not judged
  const bool deliverable = v->deliverable, failed = v->failed;
  if (!deliverable && !failed && run.failure_seen) {
    out.push_back({kName, i, t,
                   fmt::format("job {} slot {}: every task skipped (nothing failed, nothing to "
                               "deliver), yet the run was treated as failed (failure notice or "
                               "retry)",
                               id, format_instant(run.slot))});
  } else if (!deliverable && failed && run.delivery_seen) {
    out.push_back({kName, i, t,
                   fmt::format("job {} slot {}: no task produced a deliverable and one failed, "
                               "yet a delivery was sent",
                               id, format_instant(run.slot))});
  }
}

// The recovery notice (docs/semantics.md §4): after a failure notification
// reached the messenger (delivered or refused), a success owes a `recovered`
// notification. Judged at the end; a crash forgives it, and so does a blind
// boot between the failure shown and the success.
void NothingLost::track_recovery(const TraceEvent& e, std::size_t i) {
  if (!notifications_seen_) return;
  const auto it = jobs_.find(e.job);
  if (it == jobs_.end()) return;
  JobWatch& j = it->second;
  if (failure_notification(e.type)) {  // the commit (a fact from the outbox)
    j.failure_committed_boot = context_.process.boots();
    j.failure_committed_refused = context_.process.store_refused();
    return;
  }
  if ((e.type == "message_delivered" || e.type == "message_refused") &&
      e.str("kind") == "notification") {
    const std::string event = e.str("event");
    if (failure_notification(event)) {
      j.showed_failure = true;
      j.showed_failure_boot = context_.process.boots();
      j.showed_failure_refused = context_.process.store_refused();
      if (j.failure_committed_boot < j.showed_failure_boot) {
        // The outbox replaying a notice an earlier process committed: it is
        // judged as shown when and as it was committed (e.g. a failed_permanent
        // committed while the store refused writes, the crash before its send,
        // the send after the reboot).
        j.showed_failure_boot = j.failure_committed_boot;
        j.showed_failure_refused = j.failure_committed_refused;
      }
      // Boots only grow: a failure is shown in this boot or an earlier one.
      REHEARSE_ASSERT_LE(j.showed_failure_boot, context_.process.boots());
    } else if (event == "recovered") {
      j.showed_failure = false;
      j.success_unannounced.reset();
    }
    return;
  }
  if (e.type != "run_finished" || e.str("outcome") != "success") return;
  const bool rebooted = j.showed_failure_boot < context_.process.boots();
  if (j.showed_failure && rebooted && (context_.process.boot_blind() || j.showed_failure_refused)) {
    // The failure was shown before a boot that found the state store
    // damaged, or while the store refused writes (so it was never recorded)
    // and before a boot since: what the job showed was recorded only in the
    // damaged store or in the memory of a process gone (docs/monitors.md,
    // "Damage the store cannot see past"), so no `recovered` is owed.
    j.showed_failure = false;
    return;
  }
  if (j.showed_failure && !j.success_unannounced) {
    j.success_unannounced = i;
    j.success_unannounced_t = e.t;
  }
}

// A job whose policy is invalid (by the monitors' own reading) fails closed
// visibly (docs/semantics.md §2, §9; 004: reveal the omission): once its
// state is durable, the row records the policy error and the outbox received
// a policy_invalid notice for it.
void NothingLost::note_policy_visibility(const TraceEvent& e) {
  if (e.type == "durable_job_state" && invalid_policies_.count(e.job) != 0) {
    PolicyShown& shown = invalid_policies_[e.job];
    shown.row_seen = true;
    shown.in_state = shown.in_state || e.flag("policy_invalid");
    shown.recorded = e.flag("policy_invalid");
    shown.recorded_boot = context_.process.boots();
    // A row that records the error is one of the rows that ever did.
    REHEARSE_ASSERT(!shown.recorded || shown.in_state);
  } else if (e.type == "outbox_add" && e.str("event") == "policy_invalid" &&
             invalid_policies_.count(e.job) != 0) {
    invalid_policies_[e.job].noticed = true;
  }
}

// policy_invalid is sent once per change of the recorded error
// (docs/semantics.md §9). A job's policy is the scenario's, the same at every boot,
// so its error never changes: a notice at a later boot while the durable row
// the world last read already records it repeats one. Excused when the store cannot show
// the core that record: damaged by the world (a blind boot since the row, or
// damage still there) or refusing writes (the core then starts from fresh
// states, docs/scheduler.md).
void NothingLost::check_policy_noticed_once(const TraceEvent& e, std::size_t i,
                                            Violations& out) const {
  if (e.type != "policy_invalid") return;  // the notification (once over its targets)
  const auto it = invalid_policies_.find(e.job);
  if (it == invalid_policies_.end() || !it->second.recorded) return;
  // Only a durable row sets `recorded` (note_policy_visibility).
  REHEARSE_ASSERT(it->second.row_seen && it->second.in_state);
  const ProcessTracker& p = context_.process;
  // A boot notifies before it writes the row, so only a row read in an
  // earlier boot was there for the core to read.
  if (it->second.recorded_boot >= p.boots()) return;
  if (p.last_blind_boot() > it->second.recorded_boot || p.store_damaged() || p.store_refused()) {
    return;
  }
  out.push_back({kName, i, e.t,
                 fmt::format("job {}: policy_invalid sent again although its durable row already "
                             "records the policy error and the policy did not change: the notice "
                             "is sent once per change of the error",
                             e.job)});
}

void NothingLost::judge_invalid_policies_shown(Violations& out) const {
  for (const auto& [job, shown] : invalid_policies_) {
    // The error is recorded only in a row seen.
    REHEARSE_ASSERT(shown.row_seen || !shown.in_state);
    if (!shown.row_seen || (shown.in_state && shown.noticed)) continue;
    out.push_back({kName, context_.events_seen, 0,
                   fmt::format("job {} has an invalid retry policy, but {}: a policy that fails "
                               "closed must say so",
                               job,
                               !shown.in_state ? "its durable row never recorded the policy error"
                                               : "no policy_invalid notice was committed")});
  }
}

namespace {

// Whether the slot's `event` notification was committed.
bool announced(const SlotWatch& slot, const char* event) {
  const auto it = slot.notifications.find(event);
  return it != slot.notifications.end() && it->second > 0;
}

}  // namespace

Violations NothingLost::finish(TimeMs until_ms) {
  Violations out;
  const bool up = context_.process.up();
  for (const auto& [key, s] : context_.slots.watched()) {
    // The tracker keys each slot by its own (job, slot).
    REHEARSE_ASSERT_EQ(s.slot, key.second);
    // A slot whose end was announced already (a boot that lost its store,
    // under a clock set back, may run it again; the outbox keeps one notice
    // per slot and event) owes no second notice.
    if (s.state == SlotState::failed && up && !announced(s, "failed_permanent") &&
        !announced(s, "retry_exhausted")) {
      out.push_back({kName, s.state_index, s.state_t,
                     fmt::format("job {} slot {}: the run failed and nothing followed: no retry, "
                                 "no retry_exhausted or failed_permanent notice (swallowed)",
                                 s.job, format_instant(s.slot))});
    }
  }
  for (auto& [id, j] : jobs_) judge_group_run(id, context_.events_seen, until_ms, out);
  judge_invalid_policies_shown(out);
  sends_.finish(until_ms, out);
  for (const auto& [id, j] : jobs_) {
    if (j.success_unannounced && up) {
      out.push_back({kName, *j.success_unannounced, j.success_unannounced_t,
                     fmt::format("job {}: succeeded after a failed episode it had announced, but "
                                 "no `recovered` notification followed",
                                 id)});
    }
  }
  return out;
}

}  // namespace rehearse::sim
