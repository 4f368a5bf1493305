#include "model/view_merge.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/state_codec.hpp"
#include "model/time.hpp"

namespace rehearse {

using nlohmann::json;

namespace {

struct Side {
  const json* record = nullptr;  // nullptr: the store has no record
  std::optional<TimeMs> updated_at;
};

Result<Side> read_side(const json& record, RuntimeStoreKind kind) {
  Side side;
  if (record.is_null()) return side;
  if (!record.is_object()) {
    return make_error(ErrorCode::schema_error,
                      fmt::format("expected the job's runtime fields (an object) or null, got {}",
                                  record.type_name()),
                      to_string(kind));
  }
  side.record = &record;
  const auto it = record.find("updated_at");
  if (it == record.end() || it->is_null()) return side;
  const std::string where = std::string(to_string(kind)) + "#/updated_at";
  if (!it->is_string()) {
    return make_error(
        ErrorCode::schema_error,
        fmt::format("expected an ISO-8601 UTC instant or null, got {}", it->type_name()), where);
  }
  auto t = parse_instant(it->get_ref<const std::string&>());
  if (!t.ok()) {
    return make_error(ErrorCode::schema_error,
                      "expected an ISO-8601 UTC instant or null: " + t.error().message, where);
  }
  side.updated_at = *t;
  return side;
}

}  // namespace

const char* to_string(RuntimeStoreKind k) noexcept {
  switch (k) {
    case RuntimeStoreKind::jobs_json: return "jobs.json";
    case RuntimeStoreKind::jobs_state_json: return "jobs_state.json";
  }
  return "?";
}

Result<RuntimeMerge> merge_runtime_fields(const json& jobs_json_record,
                                          const json& jobs_state_record) {
  auto inline_side = read_side(jobs_json_record, RuntimeStoreKind::jobs_json);
  if (!inline_side.ok()) return std::move(inline_side).error();
  auto state_side = read_side(jobs_state_record, RuntimeStoreKind::jobs_state_json);
  if (!state_side.ok()) return std::move(state_side).error();

  // jobs.json wins only with a strictly newer updated_at (or the only one).
  const bool inline_newer =
      inline_side->updated_at &&
      (!state_side->updated_at || *inline_side->updated_at > *state_side->updated_at);
  RuntimeMerge merge;
  merge.newer = inline_newer ? RuntimeStoreKind::jobs_json : RuntimeStoreKind::jobs_state_json;
  const Side& winner = inline_newer ? *inline_side : *state_side;
  const Side& loser = inline_newer ? *state_side : *inline_side;
  const RuntimeStoreKind loser_kind =
      inline_newer ? RuntimeStoreKind::jobs_state_json : RuntimeStoreKind::jobs_json;

  if (loser.record) {
    for (const auto& [key, value] : loser.record->items()) {
      merge.fields[key] = value;
      merge.source[key] = loser_kind;
    }
  }
  if (winner.record) {
    for (const auto& [key, value] : winner.record->items()) {
      merge.fields[key] = value;
      merge.source[key] = merge.newer;
    }
  }
  return merge;
}

Result<JobState> decode_runtime_fields(const std::string& job_id, const json& fields) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  if (!fields.is_object()) {
    return make_error(ErrorCode::schema_error,
                      fmt::format("expected an object of runtime fields, got {}",
                                  fields.type_name()));
  }
  // Overlay the fields on a fresh record and decode it with the state
  // file's own strict decoder: one set of names, types and enums.
  JobState fresh;
  fresh.job_id = job_id;
  json full = encode_job(fresh);
  REHEARSE_ASSERT(full.is_object());
  const auto& names = job_field_names();
  for (const auto& [key, value] : fields.items()) {
    if (!std::binary_search(names.begin(), names.end(), key)) {
      return make_error(ErrorCode::schema_error,
                        fmt::format("unknown runtime field \"{}\"; expected only: {}", key,
                                    fmt::join(names, ", ")),
                        "/" + json_pointer_token(key));
    }
    full[key] = value;
  }
  auto state = decode_job(full, "");
  if (!state.ok()) return state;
  if (state->job_id != job_id) {
    return make_error(ErrorCode::schema_error,
                      fmt::format("expected job id \"{}\", got \"{}\"", job_id, state->job_id),
                      "/job_id");
  }
  return state;
}

Result<JobState> merge_job_view(const std::string& job_id, const json& jobs_json_record,
                                const json& jobs_state_record) {
  auto merged = merge_runtime_fields(jobs_json_record, jobs_state_record);
  if (!merged.ok()) return std::move(merged).error();
  return decode_runtime_fields(job_id, merged->fields);
}

}  // namespace rehearse
