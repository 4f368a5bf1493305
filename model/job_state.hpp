// The persisted per-job state (docs/semantics.md §4) and its vocabulary.
//
// These names are shared by the state file, notifications, logs, traces and
// the status view (§9): the same words for the same things everywhere.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/failure.hpp"
#include "model/time.hpp"

namespace rehearse {

enum class RetryStatus : unsigned char { ok, retrying, retry_exhausted, failed };
enum class NextAction : unsigned char { none, retry, wait_next_run, manual_review };

const char* to_string(RetryStatus s) noexcept;
const char* to_string(NextAction a) noexcept;
std::optional<RetryStatus> parse_retry_status(std::string_view name) noexcept;
std::optional<NextAction> parse_next_action(std::string_view name) noexcept;

// Retry bookkeeping of one regular slot (per_slot budgets keep one per slot
// still in flight; per_episode keeps the episode in the job row).
// The most retriers a policy may have (Step Functions allows no more either
// in practice; a state file beyond it is damaged).
inline constexpr std::size_t kRuleCountMax = 32;

struct SlotRecord {
  TimeMs slot = 0;  // the regular slot's scheduled instant
  RetryStatus retry_status = RetryStatus::ok;
  std::optional<FailureClass> failure_class;
  int retry_count = 0;
  std::optional<TimeMs> next_retry_at;
  NextAction next_action = NextAction::none;
  int stalled_count = 0;  // crashes while this slot's run was active
  std::string last_error;
  // A policy of several retriers: each one's retries so far, by the rule's
  // index (retry_count is their sum). Empty otherwise.
  std::vector<int> rule_counts;
  // Decorrelated jitter only: the curve's delay before the pending retry,
  // which the next one is drawn from (0 otherwise).
  DurationMs last_delay_ms = 0;

  bool operator==(const SlotRecord&) const = default;
};

struct JobState {
  std::string job_id;
  RetryStatus retry_status = RetryStatus::ok;
  std::optional<FailureClass> failure_class;
  int retry_count = 0;
  int retry_limit = 0;
  std::optional<TimeMs> next_retry_at;
  NextAction next_action = NextAction::none;
  std::string last_error;
  std::optional<TimeMs> updated_at;

  // Regular schedule: the next slot of the effective cron strictly after the
  // last slot handed to the queue. Never moved by failures, retries, restarts.
  std::optional<TimeMs> next_run_at;
  std::optional<TimeMs> last_slot;  // last regular slot started

  // Non-empty when the job's policy is invalid (fail closed, never retried).
  std::string policy_error;

  // Misfires (slots that came due while the process was down): coalesced
  // into one late run; totals kept for reports.
  int misfire_runs = 0;
  int coalesced_slots = 0;
  DurationMs max_lateness_ms = 0;

  // per_slot: records of slots still in flight, keyed by slot instant.
  std::map<TimeMs, SlotRecord> slots;

  bool operator==(const JobState&) const = default;
};

}  // namespace rehearse
