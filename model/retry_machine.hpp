// The retry state machine and the regular schedule (docs/semantics.md §4).
//
// Every function here is pure: it takes the policy (or the error that made it
// invalid), the job's persisted state, the event and `now` (plus, where a
// jittered backoff needs one, the run's RandomSource) and returns the new
// state together with what the driver must do: notifications to emit, a retry
// to enqueue, retries to drop from the queue. Nothing here reads a clock,
// touches a queue or writes a file; a scheduler loop (the simulator's, or a
// production coroutine driver) feeds the events in and carries the effects out:
//
//   state = apply_policy(policy, state, now)                 at start / after a restart
//   state = start_schedule(state, schedule, start)           once
//   loop:
//     step = take_due_slot(state, schedule, now)             a regular slot is due
//     t    = on_slot_due(policy, step.state, slot, now)      per_episode supersede
//     t    = on_run_started(policy, state, run, now)         a run (regular or retry) starts
//     t    = on_run_succeeded / on_run_failed(..., random)   the run ends
//     s    = on_run_stalled(policy, state, run, now)         after a restart, for the run
//                                                            that was active at the crash
//
// Per-slot records. JobState::slots keeps one SlotRecord per regular slot still
// in flight: a slot whose retry is pending or running, or whose run stalled.
// Under per_slot (BullMQ) the record is that slot's own budget; under
// per_episode (004) the budget is the episode's, carried in the job row across
// slots until a success, and the record only says which slot the pending retry
// belongs to. The job row mirrors the record touched last (the latest event),
// so the status view shows the latest; the map shows every slot in flight.
// See docs/retry.md for the decisions where the semantics are silent.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "model/notification.hpp"
#include "model/random.hpp"
#include "model/result.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"

namespace rehearse {

// A job's policy as the machine sees it: valid, or the error that made it
// invalid (fail closed: the job still runs on schedule, never retried).
using PolicyOrError = Result<RetryPolicy>;

enum class RunKind : unsigned char { regular, retry };
const char* to_string(RunKind kind) noexcept;

// A run of a job: the regular slot it belongs to and whether it is the slot's
// regular run or an accelerated retry of it.
struct RunRef {
  TimeMs slot = 0;
  RunKind kind = RunKind::regular;

  bool operator==(const RunRef&) const = default;
};

// A retry in the durable queue: the slot it retries and when it is due.
struct RetryRef {
  TimeMs slot = 0;
  TimeMs at = 0;

  bool operator==(const RetryRef&) const = default;
};

struct Transition {
  JobState state;
  std::vector<Notification> notifications;
  std::optional<RetryRef> scheduled_retry;  // enqueue this retry
  std::vector<RetryRef> cancelled_retries;  // drop these pending retries from the queue
};

// ---- Decisions (the rules, without bookkeeping) ----

enum class FailureDecisionKind : unsigned char {
  retry,      // retryable, budget left: retry n after delay_ms
  exhausted,  // retryable, budget spent: wait for the next regular run
  permanent,  // class not retried, or the policy is invalid: manual review
};
const char* to_string(FailureDecisionKind kind) noexcept;

struct FailureDecision {
  FailureDecisionKind kind = FailureDecisionKind::permanent;
  int retry_count = 0;      // the budget's count after this failure (n for a retry)
  DurationMs delay_ms = 0;  // retry only
  // A policy of several retriers: the one that took the failure and its own
  // count after it (its n for a retry).
  std::optional<std::size_t> rule;
  int rule_count = 0;
  // exhausted because the shared retry budget had no room (the count had).
  bool budget_spent = false;
  // retry only: the curve's own delay before a Retry-After lengthened it
  // (what decorrelated jitter draws its next delay from).
  DurationMs drawn_delay_ms = 0;
};

// When the failure happened and the regular slot its run belongs to: a
// policy's deadline counts from the slot.
struct FailureAt {
  TimeMs slot = 0;
  TimeMs now = 0;
  // Each retrier's retries so far in this slot (SlotRecord::rule_counts), for
  // a policy of several; null or short reads as 0.
  const std::vector<int>* rule_counts = nullptr;
  // The refusal's Retry-After (FailureInfo::retry_after_ms); 0: none. Read
  // only by a policy that honours it.
  DurationMs retry_after_ms = 0;
  // The policy's retry budget has no room for one more retry now
  // (model/retry_budget.hpp, judged by the driver that keeps the counts).
  bool budget_spent = false;
  // The curve's delay before the previous retry of this slot's chain
  // (SlotRecord::last_delay_ms; 0: none). Read only by decorrelated jitter.
  DurationMs previous_delay_ms = 0;
};

// `retry_count` is the budget's count before this failure. Draws one number
// from `random` only for a retry whose backoff has jitter. A retry that would
// come due after the policy's deadline (slot + deadline_ms) is not made: the
// chain is exhausted, as by its count. A policy that honours Retry-After
// waits at least at.retry_after_ms (at most kBackoffDelayMaxMs), jitter drawn first.
// A retry the count and the deadline allow is not made when at.budget_spent:
// exhausted, with budget_spent set.
FailureDecision decide_failure(const PolicyOrError& policy, int retry_count,
                               FailureClass failure_class, RandomSource* random,
                               const FailureAt& at);

// BullMQ's maxStalledCount is 1: the first stall of a run re-runs the same
// attempt without consuming a retry; the next stall of that run fails it.
inline constexpr int kMaxStalledCount = 1;
enum class StallDecision : unsigned char { rerun, fail };
const char* to_string(StallDecision decision) noexcept;
StallDecision decide_stall(int stalled_count_before) noexcept;

// BullMQ's text for a run failed by stalling, kept as last_error.
inline constexpr std::string_view kStalledError = "job stalled more than allowable limit";

// ---- Transitions ----

// Records the policy's verdict: retry_limit, and for an invalid policy the
// error in policy_error, a `policy_invalid` notification (once: only when the
// recorded error changes) and every pending retry dropped (fail closed).
Transition apply_policy(const PolicyOrError& policy, const JobState& state, TimeMs now);

// A regular slot came due (handed out by take_due_slot). Under per_episode a
// pending retry (scheduled, not started) is superseded: dropped, and the row
// says wait_next_run with its count kept.
Transition on_slot_due(const PolicyOrError& policy, const JobState& state, TimeMs slot, TimeMs now);

// A run starts. A retry: its next_retry_at is cleared (nothing is scheduled
// any more; it is running). A regular run under per_episode supersedes a
// retry still pending (a slot queued behind a busy worker).
Transition on_run_started(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                          TimeMs now);

// Success: ok, count 0, no next_retry_at, next_action none; `recovered` when
// the job's row showed a failure.
Transition on_run_succeeded(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                            TimeMs now);

// Failure of class `failure_class` with the original error text (kept
// verbatim as last_error).
// What the driver knows of a failure beyond its class: the refusal's
// Retry-After (0: none) and whether the policy's retry budget is spent.
struct FailureContext {
  DurationMs retry_after_ms = 0;
  bool budget_spent = false;
};
Transition on_run_failed(const PolicyOrError& policy, const JobState& state, const RunRef& run,
                         FailureClass failure_class, std::string_view error, TimeMs now,
                         RandomSource* random, const FailureContext& context = {});

// The run was active when the process died. `decision` says whether the
// driver re-runs it (same attempt, no retry consumed) or it has failed
// (permanently: class unknown, last_error kStalledError).
struct StallTransition {
  Transition transition;
  StallDecision decision = StallDecision::rerun;
};
StallTransition on_run_stalled(const PolicyOrError& policy, const JobState& state,
                               const RunRef& run, TimeMs now);

// ---- Regular schedule ----
//
// next_run_at belongs to the regular schedule only: it is the first slot of
// the effective schedule strictly after the last slot handed out, and only
// take_due_slot moves it. No failure, retry or restart does.

// "First slot strictly after t" of the job's effective schedule.
using NextSlotFn = std::function<Result<TimeMs>(TimeMs)>;
inline NextSlotFn next_slot_fn(const CronSchedule& schedule) {
  return [&schedule](TimeMs t) { return schedule.next_after(t); };
}

// Sets next_run_at when the state has none: the slot after last_slot if one
// was handed out before, else the first slot at or after `start`.
Result<JobState> start_schedule(const JobState& state, const NextSlotFn& next_slot, TimeMs start);
inline Result<JobState> start_schedule(const JobState& state, const CronSchedule& schedule,
                                       TimeMs start) {
  return start_schedule(state, next_slot_fn(schedule), start);
}

// Bounds on coalescing (a per-second schedule down for a year must not hang).
inline constexpr std::int64_t kCoalesceScanMax = 1'000'000;
inline constexpr std::size_t kCoalescedListMax = 100;

struct SlotHandout {
  TimeMs slot = 0;                      // the slot that runs (the earliest due)
  std::vector<TimeMs> coalesced_slots;  // later due slots folded into it (first kCoalescedListMax)
  std::int64_t coalesced_count = 0;     // how many were folded (all of them)
  bool coalesced_truncated = false;     // the scan hit kCoalesceScanMax
  DurationMs lateness_ms = 0;           // now - slot
  bool misfire = false;                 // late beyond the grace, or several slots folded
};

struct ScheduleStep {
  JobState state;
  std::optional<SlotHandout> handout;  // empty: nothing due at `now`
};

// Hands out the regular slot due at `now`, if any. Slots that came due while
// the process was down coalesce into ONE late run (the earliest, as the durable
// queue holds it; BullMQ's repeatable jobs behave so) and next_run_at moves to
// the first slot after `now`; the misfire totals (misfire_runs,
// coalesced_slots, max_lateness_ms) are recorded in the state.
Result<ScheduleStep> take_due_slot(const JobState& state, const NextSlotFn& next_slot, TimeMs now,
                                   DurationMs misfire_grace_ms = 0);
inline Result<ScheduleStep> take_due_slot(const JobState& state, const CronSchedule& schedule,
                                          TimeMs now, DurationMs misfire_grace_ms = 0) {
  return take_due_slot(state, next_slot_fn(schedule), now, misfire_grace_ms);
}

// ---- Views ----

// The status-view badge: "ok", "rate_limit 1/2 retrying",
// "rate_limit 2/2 retry_exhausted", "auth 0/2 failed"; " policy_invalid" is
// appended while the policy is invalid.
std::string badge(const JobState& state);

// Whether a record has a retry scheduled and not yet started.
inline bool retry_pending(const SlotRecord& record) {
  return record.next_action == NextAction::retry && record.next_retry_at.has_value();
}

}  // namespace rehearse
