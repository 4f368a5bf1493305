// The status view (docs/semantics.md §9): what an operator sees of every
// job's retry state.
//
// A pure function from job states (and their policies) to a report, with a
// text and a JSON rendering. Retrying, exhausted and failed jobs are listed
// apart with counts; each job shows its badge ("rate_limit 2/2
// retry_exhausted", model/retry_machine.hpp badge()), its regular and retry
// times, and its policy (describe() in model/retry_policy.hpp). Policy
// errors, limit overruns (a count above the limit) and a corrupt state store
// are shown on their own lines, never hidden.
//
// Two runtime stores may hold a job's runtime fields (`jobs.json` inline and
// `jobs_state.json`, docs/semantics.md §5): build_status_from_stores()
// merges them field by field with model/view_merge.hpp before building the
// report, so a recovered job never shows as failed and a retry in progress is
// never missed. A job whose records cannot be merged is listed under view
// errors (named, with the reason), not dropped.
//
// The same names as the state file, notifications, logs and traces.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_state.hpp"
#include "model/retry_machine.hpp"
#include "model/time.hpp"

namespace rehearse {

// One job as the view gets it: its state and its policy (or the error that
// made the policy invalid).
struct StatusJob {
  JobState state;
  PolicyOrError policy = make_error(ErrorCode::invalid_argument, "no retry policy");
};

// One job as the two runtime stores hold it (either record may be null).
struct StatusSource {
  std::string job_id;
  nlohmann::json jobs_json_record;   // runtime fields inline in jobs.json, or null
  nlohmann::json jobs_state_record;  // the record in jobs_state.json, or null
  PolicyOrError policy = make_error(ErrorCode::invalid_argument, "no retry policy");
};

struct StatusJobView {
  std::string job_id;
  JobState state;
  std::string badge;
  std::string policy;          // describe(policy), or "invalid" when it is not valid
  std::string policy_error;    // the policy's error (or the one the state recorded)
  bool limit_overrun = false;  // retry_count > retry_limit
  // Which store each runtime field came from (merged views only).
  std::map<std::string, std::string> sources;
};

struct StatusViewError {
  std::string job_id;
  std::string error;
};

// A queued retry the scheduler dropped instead of running (the store could
// not be trusted when it came due).
struct DroppedRetry {
  std::string job_id;
  TimeMs slot = 0;
  int attempt = 0;
  TimeMs at = 0;
  std::string reason;
  bool operator==(const DroppedRetry&) const = default;
};

// What the view shows besides the job states (Scheduler::notices()).
struct StatusNotices {
  std::vector<DroppedRetry> dropped_retries;
  // The store's damage reports: a dropped journal tail and the copy kept.
  std::vector<std::string> store_notices;
};

struct StatusReport {
  std::optional<std::string> state_corrupt;  // why the state store cannot be trusted
  std::vector<std::string> store_notices;    // damage reported and survived
  std::vector<DroppedRetry> dropped_retries;
  std::vector<StatusJobView> retrying;   // retry_status retrying
  std::vector<StatusJobView> exhausted;  // retry_exhausted
  std::vector<StatusJobView> failed;     // failed (manual review)
  std::vector<StatusJobView> ok;
  std::vector<StatusViewError> policy_errors;
  std::vector<std::string> limit_overruns;   // job ids
  std::vector<StatusViewError> view_errors;  // runtime records that could not be merged

  std::size_t job_count() const noexcept {
    return retrying.size() + exhausted.size() + failed.size() + ok.size();
  }
};

// `state_corrupt`: the store's health error when it is corrupt (the view then
// shows what is known, flagged, and never an empty "all ok").
StatusReport build_status(const std::vector<StatusJob>& jobs,
                          std::optional<std::string> state_corrupt = std::nullopt,
                          const StatusNotices& notices = {});

// Merges each job's two runtime records (view_merge's rule), then builds.
StatusReport build_status_from_stores(const std::vector<StatusSource>& sources,
                                      std::optional<std::string> state_corrupt = std::nullopt);

// Fixed-width text, one line per job, groups in the order: state store,
// store notices, dropped retries, counts, retrying, retry_exhausted, failed, ok, policy errors,
// limit overruns, view errors.
std::string render_text(const StatusReport& report);
nlohmann::json to_json(const StatusReport& report);

}  // namespace rehearse
