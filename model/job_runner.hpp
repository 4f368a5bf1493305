// JobRunner: what the scheduler loop calls to run one job instance.
//
// Each job kind (group, fetch, reconcile, publish) is a coroutine over the
// ports that returns a RunOutcome; the scheduler feeds the outcome into the
// retry state machine (model/retry_machine.hpp). A run may be cut by a crash
// at any co_await: the runner must keep its durable effects (guards, markers,
// stages) consistent at every suspension point.
#pragma once

#include <optional>
#include <string>

#include "model/failure.hpp"
#include "model/ports.hpp"
#include "model/task.hpp"
#include "model/time.hpp"
#include "model/token_client.hpp"

namespace rehearse {

enum class RunOutcomeKind : unsigned char {
  success,           // delivered (or the reconcile cycle completed)
  skipped,           // nothing to deliver, nothing failed: the slot counts as complete
  already_complete,  // the guard was consumed or the slot marked: exit quietly
  failure,           // the run failed; the queue retries per policy
};

inline const char* to_string(RunOutcomeKind kind) noexcept {
  switch (kind) {
    case RunOutcomeKind::success: return "success";
    case RunOutcomeKind::skipped: return "skipped";
    case RunOutcomeKind::already_complete: return "already_complete";
    case RunOutcomeKind::failure: return "failure";
  }
  return "failure";
}

struct RunOutcome {
  RunOutcomeKind kind = RunOutcomeKind::success;
  FailureClass failure_class = FailureClass::unknown;  // failure only
  std::string error;                                   // failure only: the original text
  DurationMs retry_after_ms = 0;  // failure only: the refusal's Retry-After (0: none)

  static RunOutcome success() { return {RunOutcomeKind::success, FailureClass::unknown, {}, 0}; }
  static RunOutcome skipped() { return {RunOutcomeKind::skipped, FailureClass::unknown, {}, 0}; }
  static RunOutcome already_complete() {
    return {RunOutcomeKind::already_complete, FailureClass::unknown, {}, 0};
  }
  static RunOutcome failure(FailureClass c, std::string message) {
    return {RunOutcomeKind::failure, c, std::move(message), 0};
  }
  bool failed() const noexcept { return kind == RunOutcomeKind::failure; }
};

// The instance being run: job, regular slot, and the 1-based attempt of that
// slot (or episode) this run is (attempt 1 = the regular run).
struct RunContext {
  std::string job_id;
  TimeMs slot = 0;
  int attempt = 1;
  bool is_retry = false;
};

// The fields every log line of a run carries: job_id, slot, attempt.
inline LogFields run_log_fields(const RunContext& context) {
  return LogFields{{"job_id", context.job_id},
                   {"slot", format_instant(context.slot)},
                   {"attempt", context.attempt}};
}

// What a failed request's log line says of the failure: the status or the
// transport error, then the message as it came (docs/semantics.md §1).
inline void append_failure_fields(LogFields& fields, const FailureInfo& info) {
  if (info.http_status) {
    fields.push_back({"status", *info.http_status});
  } else {
    fields.push_back({"transport_error", to_string(info.transport)});
  }
  fields.push_back({"message", info.message});
  if (info.retry_after_ms > 0) fields.push_back({"retry_after_ms", info.retry_after_ms});
}

// Attributes a request to its run: the job, slot and attempt headers, and
// the request's own id (kRequestHeader* in model/token_client.hpp).
inline void stamp_run_headers(ServiceRequest& request, const RunContext& context,
                              std::string request_id) {
  request.headers[kRequestHeaderJob] = context.job_id;
  request.headers[kRequestHeaderSlot] = format_instant(context.slot);
  request.headers[kRequestHeaderAttempt] = std::to_string(context.attempt);
  request.headers[kRequestHeaderId] = std::move(request_id);
}

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  virtual Task<RunOutcome> run(RunContext context) = 0;
};

}  // namespace rehearse
