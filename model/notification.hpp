// Notifications (docs/semantics.md §9): fixed fields, the same names as the
// state file, logs, traces and the status view.
//
// `attempt` is the retry count the job's budget shows after the event (the x
// of the status view's x/y): retry_scheduled n carries n, retry_exhausted the
// spent count, failed_permanent the count at the time, recovered the count of
// retries the recovery took, policy_invalid and state_corrupt 0.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse {

enum class NotificationEvent : unsigned char {
  retry_scheduled,   // a retryable failure with budget left: retry n at next_retry_at
  retry_exhausted,   // a retryable failure with the budget spent: wait for the next run
  failed_permanent,  // a class the policy does not retry, an invalid policy, a second stall
  recovered,         // a success after the job's row showed a failure
  policy_invalid,    // the job's policy is missing or malformed (fail closed), once
  state_corrupt,     // the state store cannot be trusted (fail closed)
};

const char* to_string(NotificationEvent event) noexcept;
std::optional<NotificationEvent> parse_notification_event(std::string_view name) noexcept;

struct Notification {
  NotificationEvent event = NotificationEvent::retry_scheduled;
  std::string job_id;
  std::optional<FailureClass> failure_class;
  int attempt = 0;
  NextAction next_action = NextAction::none;
  TimeMs at = 0;
  // Optional context: the regular slot concerned, the retry's time, free text.
  std::optional<TimeMs> slot;
  std::optional<TimeMs> next_retry_at;
  std::string detail;

  bool operator==(const Notification&) const = default;
};

// One log line with the fixed fields first, in a fixed order:
// "event=retry_scheduled job_id=threads-timely failure_class=rate_limit attempt=1
//  next_action=retry at=2026-12-04T10:00:00Z slot=... next_retry_at=... detail=\"...\"".
std::string to_string(const Notification& notification);

nlohmann::json to_json(const Notification& notification);
// Strict inverse of to_json (unknown keys and bad values are errors).
Result<Notification> notification_from_json(const nlohmann::json& value);

}  // namespace rehearse
