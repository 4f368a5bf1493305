#include "model/retry_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/assert.hpp"

namespace rehearse {

const char* to_string(RunKind kind) noexcept {
  return kind == RunKind::regular ? "regular" : "retry";
}

const char* to_string(FailureDecisionKind kind) noexcept {
  switch (kind) {
    case FailureDecisionKind::retry: return "retry";
    case FailureDecisionKind::exhausted: return "exhausted";
    case FailureDecisionKind::permanent: return "permanent";
  }
  return "permanent";
}

const char* to_string(StallDecision decision) noexcept {
  return decision == StallDecision::rerun ? "rerun" : "fail";
}

namespace {
// The deadline check: the retry's due instant against slot + deadline
// (saturating: a far deadline never wraps).
bool past_deadline(const RetryPolicy& policy, const FailureAt& at, DurationMs delay_ms) {
  if (policy.deadline_ms <= 0) return false;
  TimeMs due = 0, latest = 0;
  if (__builtin_add_overflow(at.now, delay_ms, &due)) return true;
  if (__builtin_add_overflow(at.slot, policy.deadline_ms, &latest)) return false;
  return due > latest;
}

// The delay the curve gave, lengthened to the refusal's Retry-After when the
// policy honours it (a server's hint is a floor, never a way to retry sooner).
DurationMs honoured_delay(const RetryPolicy& policy, const FailureAt& at, DurationMs delay_ms) {
  if (!policy.honor_retry_after || at.retry_after_ms <= delay_ms) return delay_ms;
  return std::min(at.retry_after_ms, kBackoffDelayMaxMs);
}
}  // namespace

namespace {
// Several retriers: the first whose classes hold the failure's decides, by
// its own count and curve (Step Functions: a retrier that spent its
// MaxAttempts fails the state even when another would still retry).
FailureDecision decide_by_rule(const RetryPolicy& policy, int retry_count,
                               FailureClass failure_class, RandomSource* random,
                               const FailureAt& at) {
  FailureDecision out;
  out.retry_count = retry_count;
  out.rule = rule_for(policy, failure_class);
  if (!out.rule) return out;  // permanent: no retrier takes this class
  const RetryRule& rule = policy.rules[*out.rule];
  const std::vector<int>* counts = at.rule_counts;
  const int before = counts != nullptr && *out.rule < counts->size() ? (*counts)[*out.rule] : 0;
  out.rule_count = before;
  if (before >= rule.max_retries) {
    out.kind = FailureDecisionKind::exhausted;
    return out;
  }
  const DurationMs drawn = backoff_delay_ms(rule.backoff, before + 1, random, at.previous_delay_ms);
  const DurationMs delay = honoured_delay(policy, at, drawn);
  if (past_deadline(policy, at, delay) || at.budget_spent) {
    out.kind = FailureDecisionKind::exhausted;
    out.budget_spent = at.budget_spent && !past_deadline(policy, at, delay);
    return out;
  }
  out.kind = FailureDecisionKind::retry;
  out.retry_count = retry_count + 1;
  out.rule_count = before + 1;
  out.delay_ms = delay;
  out.drawn_delay_ms = drawn;
  REHEARSE_ASSERT_LE(out.rule_count, rule.max_retries);
  return out;
}
}  // namespace

FailureDecision decide_failure(const PolicyOrError& policy, int retry_count,
                               FailureClass failure_class, RandomSource* random,
                               const FailureAt& at) {
  REHEARSE_ASSERT(retry_count >= 0);
  if (policy.ok() && !policy->rules.empty()) {
    return decide_by_rule(*policy, retry_count, failure_class, random, at);
  }
  FailureDecision out;
  out.retry_count = retry_count;
  if (!policy.ok() || !contains(policy->retryable_classes, failure_class)) {
    out.kind = FailureDecisionKind::permanent;
    return out;
  }
  // `>=`, not `==`: a count above the limit (the policy's max was lowered
  // while a job was mid-episode, or a state file says so) is an overrun that
  // must stay visible as exhausted, never wrap into more retries.
  if (retry_count >= policy->max_retries) {
    out.kind = FailureDecisionKind::exhausted;
    return out;
  }
  const DurationMs drawn =
      backoff_delay_ms(policy->backoff, retry_count + 1, random, at.previous_delay_ms);
  const DurationMs delay = honoured_delay(*policy, at, drawn);
  if (past_deadline(*policy, at, delay)) {
    out.kind = FailureDecisionKind::exhausted;
    return out;
  }
  // The shared budget is asked last: a retry the count or the deadline would
  // refuse anyway never counts as one the budget cut.
  if (at.budget_spent) {
    out.kind = FailureDecisionKind::exhausted;
    out.budget_spent = true;
    return out;
  }
  out.kind = FailureDecisionKind::retry;
  out.retry_count = retry_count + 1;
  out.delay_ms = delay;
  out.drawn_delay_ms = drawn;
  // Budget arithmetic: a retry spends exactly one unit and never the last+1.
  REHEARSE_ASSERT_GE(out.retry_count, 1);
  REHEARSE_ASSERT_LE(out.retry_count, policy->max_retries);
  REHEARSE_ASSERT_GE(out.delay_ms, 0);
  return out;
}

StallDecision decide_stall(int stalled_count_before) noexcept {
  return stalled_count_before < kMaxStalledCount ? StallDecision::rerun : StallDecision::fail;
}

namespace {

bool is_per_slot(const PolicyOrError& policy) {
  return policy.ok() && policy->budget == BudgetScope::per_slot;
}

int limit_of(const PolicyOrError& policy) { return policy.ok() ? policy->max_retries : 0; }

TimeMs saturating_add(TimeMs t, DurationMs d) {
  REHEARSE_ASSERT_GE(d, 0);
  TimeMs sum = 0;
  if (__builtin_add_overflow(t, d, &sum)) return std::numeric_limits<TimeMs>::max();
  const TimeMs out = std::min(sum, std::max(kMaxInstantMs, t));
  REHEARSE_ASSERT_GE(out, t);
  return out;
}

void mirror_row(JobState& state, const SlotRecord& record) {
  state.retry_status = record.retry_status;
  state.failure_class = record.failure_class;
  state.retry_count = record.retry_count;
  state.next_retry_at = record.next_retry_at;
  state.next_action = record.next_action;
  state.last_error = record.last_error;
}

SlotRecord record_for(const JobState& state, TimeMs slot) {
  const auto it = state.slots.find(slot);
  if (it != state.slots.end()) return it->second;
  SlotRecord fresh;
  fresh.slot = slot;
  return fresh;
}

Notification note(NotificationEvent event, const JobState& state,
                  std::optional<FailureClass> failure_class, int attempt, NextAction action,
                  TimeMs now, std::optional<TimeMs> slot) {
  Notification n;
  n.event = event;
  n.job_id = state.job_id;
  n.failure_class = failure_class;
  n.attempt = attempt;
  n.next_action = action;
  n.at = now;
  n.slot = slot;
  return n;
}

// Drops every retry that is scheduled and not started (records keyed by
// slot). The row, if it showed one of them as pending, now waits for
// `row_action` (wait_next_run when a regular run supersedes, manual_review
// when an invalid policy forbids retrying).
std::vector<RetryRef> drop_pending_retries(JobState& state, NextAction row_action) {
  std::vector<RetryRef> dropped;
  for (auto it = state.slots.begin(); it != state.slots.end();) {
    if (retry_pending(it->second)) {
      dropped.push_back(RetryRef{it->first, *it->second.next_retry_at});
      it = state.slots.erase(it);
    } else {
      ++it;
    }
  }
  if (state.next_action == NextAction::retry && state.next_retry_at.has_value()) {
    const TimeMs at = *state.next_retry_at;
    const bool row_dropped =
        std::any_of(dropped.begin(), dropped.end(), [at](const RetryRef& r) { return r.at == at; });
    if (row_dropped) {
      state.next_retry_at.reset();
      state.next_action = row_action;
    }
  }
  for (const auto& [slot, record] : state.slots) REHEARSE_ASSERT(!retry_pending(record));
  return dropped;
}

// A retry of another slot than `running` still recorded as started
// (next_action retry, no instant) while a run of the job begins or ends is
// not running (one run per job at a time): its end was lost with damage to
// the store (docs/state-file.md). Under per_episode it belongs to the episode
// the run supersedes or ends, so it goes with the pending ones; kept, a later
// boot would restore it as a retry of an episode long over (e.g. three hours
// after the success that ended it, counted as its retry 2). Nothing of it is
// queued (a restore queues it only at a boot, before any run), so there is
// nothing to cancel.
void drop_orphaned_retries(JobState& state, TimeMs running) {
  std::erase_if(state.slots, [running](const auto& entry) {
    const SlotRecord& record = entry.second;
    return entry.first != running && record.next_action == NextAction::retry &&
           !record.next_retry_at.has_value();
  });
}

// Stamps updated_at when anything but updated_at changed.
Transition finish(const JobState& before, Transition t, TimeMs now) {
  JobState a = before;
  JobState b = t.state;
  a.updated_at.reset();
  b.updated_at.reset();
  if (!(a == b)) t.state.updated_at = now;
  return t;
}

}  // namespace

Transition apply_policy(const PolicyOrError& policy, const JobState& state, TimeMs now) {
  Transition t{state, {}, std::nullopt, {}};
  JobState& s = t.state;
  s.retry_limit = limit_of(policy);
  if (policy.ok()) {
    s.policy_error.clear();
    return finish(state, std::move(t), now);
  }
  // Fail closed: never auto-retried, so nothing stays scheduled.
  t.cancelled_retries = drop_pending_retries(s, NextAction::manual_review);
  const std::string error = policy.error().describe();
  if (s.policy_error != error) {
    s.policy_error = error;
    Notification n = note(NotificationEvent::policy_invalid, s, FailureClass::config, 0,
                          NextAction::manual_review, now, std::nullopt);
    n.detail = error;
    t.notifications.push_back(std::move(n));
  }
  return finish(state, std::move(t), now);
}

Transition on_slot_due(const PolicyOrError& policy, const JobState& state, TimeMs slot,
                       TimeMs now) {
  (void)slot;
  Transition t{state, {}, std::nullopt, {}};
  t.state.retry_limit = limit_of(policy);
  if (policy.ok() && policy->budget == BudgetScope::per_episode) {
    t.cancelled_retries = drop_pending_retries(t.state, NextAction::wait_next_run);
  }
  return finish(state, std::move(t), now);
}

Transition on_run_started(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                          TimeMs now) {
  Transition t{state, {}, std::nullopt, {}};
  JobState& s = t.state;
  s.retry_limit = limit_of(policy);
  if (run.kind == RunKind::retry) {
    const auto it = s.slots.find(run.slot);
    if (it != s.slots.end() && it->second.next_action == NextAction::retry) {
      it->second.next_retry_at.reset();
      mirror_row(s, it->second);
    }
  } else if (policy.ok() && policy->budget == BudgetScope::per_episode) {
    t.cancelled_retries = drop_pending_retries(s, NextAction::wait_next_run);
    drop_orphaned_retries(s, run.slot);
  }
  return finish(state, std::move(t), now);
}

Transition on_run_succeeded(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                            TimeMs now) {
  Transition t{state, {}, std::nullopt, {}};
  JobState& s = t.state;
  const bool was_failing = s.retry_status != RetryStatus::ok;
  const std::optional<FailureClass> previous_class = s.failure_class;
  const int retries_taken =
      is_per_slot(policy) ? record_for(s, run.slot).retry_count : s.retry_count;
  s.slots.erase(run.slot);
  if (!is_per_slot(policy)) {
    // A success ends the episode; no older retry may outlive it.
    t.cancelled_retries = drop_pending_retries(s, NextAction::none);
    drop_orphaned_retries(s, run.slot);
  }
  SlotRecord ok_record;
  ok_record.slot = run.slot;
  mirror_row(s, ok_record);
  s.retry_limit = limit_of(policy);
  REHEARSE_ASSERT_EQ(s.retry_status, RetryStatus::ok);
  REHEARSE_ASSERT_EQ(s.slots.count(run.slot), 0U);
  if (was_failing) {
    t.notifications.push_back(note(NotificationEvent::recovered, s, previous_class, retries_taken,
                                   NextAction::none, now, run.slot));
  }
  return finish(state, std::move(t), now);
}

namespace {

// Only decorrelated jitter remembers the chain's last delay: other curves
// leave the record (and the state file) as they were.
bool decorrelated(const PolicyOrError& policy, const FailureDecision& decision) {
  if (!policy.ok()) return false;
  if (decision.rule) return policy->rules[*decision.rule].backoff.decorrelated;
  return policy->backoff.decorrelated;
}

// The failure path shared by a failed run and a run failed by stalling.
Transition record_failure(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                          FailureClass failure_class, std::string_view error,
                          const FailureDecision& decision, TimeMs now, std::string detail) {
  Transition t{state, {}, std::nullopt, {}};
  JobState& s = t.state;
  if (!is_per_slot(policy)) {
    // per_episode keeps at most one retry pending per job: this failure's.
    t.cancelled_retries = drop_pending_retries(s, NextAction::wait_next_run);
  }
  SlotRecord record = record_for(s, run.slot);
  record.failure_class = failure_class;
  record.last_error = std::string(error);
  record.stalled_count = 0;
  record.retry_count = decision.retry_count;
  if (decision.rule && decision.kind == FailureDecisionKind::retry) {
    if (record.rule_counts.size() <= *decision.rule) record.rule_counts.resize(*decision.rule + 1);
    record.rule_counts[*decision.rule] = decision.rule_count;
  }
  Notification n;
  switch (decision.kind) {
    case FailureDecisionKind::retry: {
      const TimeMs at = saturating_add(now, decision.delay_ms);
      REHEARSE_ASSERT_GE(at, now);
      record.retry_status = RetryStatus::retrying;
      record.next_retry_at = at;
      record.last_delay_ms = decorrelated(policy, decision) ? decision.drawn_delay_ms : 0;
      record.next_action = NextAction::retry;
      s.slots[run.slot] = record;
      t.scheduled_retry = RetryRef{run.slot, at};
      n = note(NotificationEvent::retry_scheduled, s, failure_class, decision.retry_count,
               NextAction::retry, now, run.slot);
      n.next_retry_at = at;
      break;
    }
    case FailureDecisionKind::exhausted:
      record.retry_status = RetryStatus::retry_exhausted;
      record.next_retry_at.reset();
      record.next_action = NextAction::wait_next_run;
      s.slots.erase(run.slot);
      n = note(NotificationEvent::retry_exhausted, s, failure_class, decision.retry_count,
               NextAction::wait_next_run, now, run.slot);
      break;
    case FailureDecisionKind::permanent:
      record.retry_status = RetryStatus::failed;
      record.next_retry_at.reset();
      record.next_action = NextAction::manual_review;
      s.slots.erase(run.slot);
      n = note(NotificationEvent::failed_permanent, s, failure_class, decision.retry_count,
               NextAction::manual_review, now, run.slot);
      break;
  }
  n.detail = std::move(detail);
  mirror_row(s, record);
  s.retry_limit = limit_of(policy);
  t.notifications.push_back(std::move(n));
  // Transition postconditions: a retry is pending exactly when one was
  // scheduled, and the row shows this failure's decision.
  REHEARSE_ASSERT_EQ(t.scheduled_retry.has_value(), decision.kind == FailureDecisionKind::retry);
  REHEARSE_ASSERT_EQ(s.slots.count(run.slot) == 1, t.scheduled_retry.has_value());
  REHEARSE_ASSERT_NE(s.retry_status, RetryStatus::ok);
  REHEARSE_ASSERT_EQ(s.retry_count, decision.retry_count);
  return finish(state, std::move(t), now);
}

// The budget's count before a failure of `run`: the slot's own under
// per_slot, the episode's (the row's; 0 after a success) otherwise.
int count_before(const PolicyOrError& policy, const JobState& state, const RunRef& run) {
  return is_per_slot(policy) ? record_for(state, run.slot).retry_count : state.retry_count;
}

}  // namespace

Transition on_run_failed(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                         FailureClass failure_class, std::string_view error, TimeMs now,
                         RandomSource* random, const FailureContext& context) {
  const SlotRecord before = record_for(state, run.slot);
  const FailureDecision decision =
      decide_failure(policy, count_before(policy, state, run), failure_class, random,
                     FailureAt{run.slot, now, &before.rule_counts, context.retry_after_ms,
                               context.budget_spent, before.last_delay_ms});
  std::string detail;
  if (!policy.ok()) detail = "retry policy invalid: " + policy.error().describe();
  if (decision.budget_spent) {
    const RetryBudget& b = policy->retry_budget;
    detail = fmt::format("retry budget {} spent: at most {}% of the attempts over {} (at least {})",
                         b.name, b.percent, format_duration(b.window_ms), b.min_retries);
  }
  return record_failure(policy, state, run, failure_class, error, decision, now, std::move(detail));
}

StallTransition on_run_stalled(const PolicyOrError& policy, const JobState& state,
                               const RunRef& run, TimeMs now) {
  SlotRecord record = record_for(state, run.slot);
  const StallDecision decision = decide_stall(record.stalled_count);
  if (decision == StallDecision::rerun) {
    Transition t{state, {}, std::nullopt, {}};
    record.stalled_count += 1;
    REHEARSE_ASSERT_LE(record.stalled_count, kMaxStalledCount);
    t.state.slots[run.slot] = record;
    t.state.retry_limit = limit_of(policy);
    return StallTransition{finish(state, std::move(t), now), decision};
  }
  // BullMQ moves a job that stalled more than maxStalledCount straight to
  // failed, whatever attempts it had left: a permanent failure.
  FailureDecision failed;
  failed.kind = FailureDecisionKind::permanent;
  failed.retry_count = count_before(policy, state, run);
  Transition t = record_failure(
      policy, state, run, FailureClass::unknown, kStalledError, failed, now,
      fmt::format("{} run stalled {} times (a crash while it ran); BullMQ maxStalledCount is {}",
                  to_string(run.kind), record.stalled_count + 1, kMaxStalledCount));
  return StallTransition{std::move(t), decision};
}

Result<JobState> start_schedule(const JobState& state, const NextSlotFn& next_slot, TimeMs start) {
  JobState out = state;
  if (out.next_run_at) return out;
  Result<TimeMs> next = out.last_slot ? next_slot(*out.last_slot)
                                      : next_slot(start > kMinInstantMs ? start - 1 : start);
  if (!next.ok()) return std::move(next).error();
  if (out.last_slot) REHEARSE_ASSERT_GT(*next, *out.last_slot);
  out.next_run_at = *next;
  return out;
}

Result<ScheduleStep> take_due_slot(const JobState& state, const NextSlotFn& next_slot, TimeMs now,
                                   DurationMs misfire_grace_ms) {
  ScheduleStep step{state, std::nullopt};
  if (!state.next_run_at || *state.next_run_at > now) return step;
  SlotHandout handout;
  handout.slot = *state.next_run_at;
  handout.lateness_ms = now - handout.slot;
  TimeMs cursor = handout.slot;
  TimeMs next = 0;
  while (true) {
    if (handout.coalesced_count >= kCoalesceScanMax) {
      // Stop enumerating; the next slot is still exact.
      handout.coalesced_truncated = true;
      Result<TimeMs> after_now = next_slot(now);
      if (!after_now.ok()) return std::move(after_now).error();
      next = *after_now;
      break;
    }
    Result<TimeMs> candidate = next_slot(cursor);
    if (!candidate.ok()) return std::move(candidate).error();
    REHEARSE_ASSERT_GT(*candidate, cursor);
    if (*candidate > now) {
      next = *candidate;
      break;
    }
    handout.coalesced_count += 1;
    if (handout.coalesced_slots.size() < kCoalescedListMax) {
      handout.coalesced_slots.push_back(*candidate);
    }
    cursor = *candidate;
  }
  // The handed-out slot is due, and the next one is in the future.
  REHEARSE_ASSERT_GE(handout.lateness_ms, 0);
  REHEARSE_ASSERT_GT(next, now);
  REHEARSE_ASSERT_GT(next, handout.slot);
  handout.misfire = handout.lateness_ms > misfire_grace_ms || handout.coalesced_count > 0;
  JobState& s = step.state;
  s.next_run_at = next;
  s.last_slot = handout.slot;
  if (handout.misfire) {
    s.misfire_runs += 1;
    const std::int64_t total = std::int64_t{s.coalesced_slots} + handout.coalesced_count;
    s.coalesced_slots =
        static_cast<int>(std::min<std::int64_t>(total, std::numeric_limits<int>::max()));
    s.max_lateness_ms = std::max(s.max_lateness_ms, handout.lateness_ms);
  }
  step.handout = std::move(handout);
  return step;
}

std::string badge(const JobState& state) {
  std::string text;
  if (state.retry_status == RetryStatus::ok) {
    text = "ok";
  } else {
    text = fmt::format("{} {}/{} {}",
                       state.failure_class ? to_string(*state.failure_class) : "unknown",
                       state.retry_count, format_retry_limit(state.retry_limit),
                       to_string(state.retry_status));
  }
  if (!state.policy_error.empty()) text += " policy_invalid";
  return text;
}

}  // namespace rehearse
