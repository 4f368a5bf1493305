// view_merge: one job's runtime fields, merged from the two runtime stores
// (docs/semantics.md §5, ext).
//
// A job may keep its runtime fields (retry_status, retry_count, next_retry_at,
// updated_at...) inline in `jobs.json` or in `jobs_state.json`, and stale
// copies linger in the other. Reading only one store shows a recovered job as
// failed, or misses a retry in progress (004). Every view (status view,
// notifications, reports) therefore merges both, field by field, with one
// rule:
//   - the record with the newer `updated_at` wins every field it holds;
//   - a record without `updated_at` (absent or null) loses to one with it;
//   - equal instants, or neither record having one: `jobs_state.json` wins;
//   - a field only the losing record holds is taken from it (an absent key
//     means "this store does not know"; a null value is a value, "none", and
//     wins like any other: a recovered job's `next_retry_at: null` must hide
//     the stale retry instant of the other store).
// Pure functions: no disk, no clock.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "model/job_state.hpp"
#include "model/result.hpp"

namespace rehearse {

enum class RuntimeStoreKind : unsigned char { jobs_json, jobs_state_json };
// "jobs.json" / "jobs_state.json".
const char* to_string(RuntimeStoreKind k) noexcept;

struct RuntimeMerge {
  nlohmann::json fields = nlohmann::json::object();            // the merged runtime fields
  std::map<std::string, RuntimeStoreKind> source;              // which store each field came from
  RuntimeStoreKind newer = RuntimeStoreKind::jobs_state_json;  // the record that won
};

// Merges one job's runtime fields. Each argument is a JSON object of runtime
// fields, or null when that store has no record of the job. An argument that
// is neither, or an `updated_at` that is neither null nor an ISO-8601 UTC
// instant, is a schema_error (where = "jobs.json#/updated_at"...): a view must
// not guess which record is newer.
Result<RuntimeMerge> merge_runtime_fields(const nlohmann::json& jobs_json_record,
                                          const nlohmann::json& jobs_state_record);

// The merged fields as a JobState: fields present are decoded as strictly as
// in the state file (same names, types and enums), absent ones keep their
// fresh defaults; a key that is no JobState field, or a "job_id" other than
// job_id, is a schema_error with its JSON pointer.
Result<JobState> decode_runtime_fields(const std::string& job_id, const nlohmann::json& fields);

// Convenience: merge, then decode.
Result<JobState> merge_job_view(const std::string& job_id, const nlohmann::json& jobs_json_record,
                                const nlohmann::json& jobs_state_record);

}  // namespace rehearse
