// Goal: every view merges a job's runtime fields from jobs.json and
// jobs_state.json with one rule (newer updated_at wins per field; a record
// without updated_at loses; ties go to jobs_state.json), and reading only one
// store is shown to be wrong in both directions the 004 report names.
// Method: hand-built records for each rule and for the two incidents, then a
// RapidCheck property comparing merge_runtime_fields with a small oracle that
// decides each field on its own.
#include "model/view_merge.hpp"

#include <gtest/gtest.h>

#include <set>

#include "model/state_codec.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

// 004: the job failed on rate limits at 10:00 (jobs.json still says so),
// then recovered at 14:00 (recorded in jobs_state.json).
const json kStaleFailureInline = {{"retry_status", "retry_exhausted"},
                                  {"failure_class", "rate_limit"},
                                  {"retry_count", 2},
                                  {"retry_limit", 2},
                                  {"next_retry_at", "2026-12-04T10:30:00Z"},
                                  {"next_action", "wait_next_run"},
                                  {"last_error", "HTTP 429 quota exhausted"},
                                  {"updated_at", "2026-12-04T10:00:00Z"},
                                  {"next_run_at", "2026-12-04T15:00:00Z"}};
const json kRecoveredState = {{"retry_status", "ok"},
                              {"failure_class", nullptr},
                              {"retry_count", 0},
                              {"next_retry_at", nullptr},
                              {"next_action", "none"},
                              {"last_error", ""},
                              {"updated_at", "2026-12-04T14:00:00Z"}};

TEST(ViewMerge, RecoveredJobIsNotShownAsFailed) {
  auto view = merge_job_view("weekly-summary", kStaleFailureInline, kRecoveredState);
  ASSERT_TRUE(view.ok()) << view.error().describe();
  EXPECT_EQ(view->retry_status, RetryStatus::ok);
  EXPECT_EQ(view->failure_class, std::nullopt);
  EXPECT_EQ(view->retry_count, 0);
  EXPECT_EQ(view->next_retry_at, std::nullopt);  // null wins: the stale retry is hidden
  EXPECT_EQ(view->updated_at, *parse_instant("2026-12-04T14:00:00Z"));
  // Fields only jobs.json knows still show.
  EXPECT_EQ(view->retry_limit, 2);
  EXPECT_EQ(view->next_run_at, *parse_instant("2026-12-04T15:00:00Z"));

  // Reading only jobs.json shows the recovered job as failed.
  auto inline_only = merge_job_view("weekly-summary", kStaleFailureInline, nullptr);
  ASSERT_TRUE(inline_only.ok());
  EXPECT_EQ(inline_only->retry_status, RetryStatus::retry_exhausted);
}

TEST(ViewMerge, RetryInProgressIsNotMissed) {
  // jobs_state.json holds an old success; the job's current retry was
  // written inline in jobs.json.
  const json old_success = {
      {"retry_status", "ok"}, {"retry_count", 0}, {"updated_at", "2026-12-04T09:00:00Z"}};
  const json retrying = {{"retry_status", "retrying"}, {"failure_class", "provider_5xx"},
                         {"retry_count", 1},           {"next_retry_at", "2026-12-04T10:01:00Z"},
                         {"next_action", "retry"},     {"updated_at", "2026-12-04T10:00:00Z"}};
  auto view = merge_job_view("fetch", retrying, old_success);
  ASSERT_TRUE(view.ok()) << view.error().describe();
  EXPECT_EQ(view->retry_status, RetryStatus::retrying);
  EXPECT_EQ(view->retry_count, 1);
  EXPECT_EQ(view->next_retry_at, *parse_instant("2026-12-04T10:01:00Z"));

  // Reading only jobs_state.json misses the retry in progress.
  auto state_only = merge_job_view("fetch", nullptr, old_success);
  ASSERT_TRUE(state_only.ok());
  EXPECT_EQ(state_only->retry_status, RetryStatus::ok);
  EXPECT_EQ(state_only->next_retry_at, std::nullopt);
}

TEST(ViewMerge, TiesGoToJobsState) {
  const json a = {{"retry_count", 1}, {"updated_at", "2026-12-04T10:00:00Z"}};
  const json b = {{"retry_count", 2}, {"updated_at", "2026-12-04T10:00:00Z"}};
  auto m = merge_runtime_fields(a, b);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fields["retry_count"], 2);
  EXPECT_EQ(m->newer, RuntimeStoreKind::jobs_state_json);
  EXPECT_EQ(m->source.at("retry_count"), RuntimeStoreKind::jobs_state_json);
}

TEST(ViewMerge, RecordWithoutUpdatedAtLoses) {
  const json dated = {{"retry_count", 1}, {"updated_at", "1970-01-01T00:00:00Z"}};
  for (const json& undated :
       {json{{"retry_count", 5}}, json{{"retry_count", 5}, {"updated_at", nullptr}}}) {
    auto m1 = merge_runtime_fields(dated, undated);  // jobs.json dated
    ASSERT_TRUE(m1.ok());
    EXPECT_EQ(m1->fields["retry_count"], 1);
    EXPECT_EQ(m1->newer, RuntimeStoreKind::jobs_json);
    auto m2 = merge_runtime_fields(undated, dated);  // jobs_state.json dated
    ASSERT_TRUE(m2.ok());
    EXPECT_EQ(m2->fields["retry_count"], 1);
    EXPECT_EQ(m2->newer, RuntimeStoreKind::jobs_state_json);
  }
  // Neither dated: a tie, jobs_state.json wins.
  auto m = merge_runtime_fields(json{{"retry_count", 1}}, json{{"retry_count", 2}});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fields["retry_count"], 2);
}

TEST(ViewMerge, MissingRecordsAndFieldsFallBackToTheOtherStore) {
  auto none = merge_runtime_fields(nullptr, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->fields.empty());
  auto fresh = merge_job_view("a", nullptr, nullptr);
  ASSERT_TRUE(fresh.ok());
  JobState expected;
  expected.job_id = "a";
  EXPECT_EQ(*fresh, expected);

  const json older = {{"last_error", "timeout"}, {"updated_at", "2026-01-01T00:00:00Z"}};
  const json newer = {{"retry_count", 0}, {"updated_at", "2026-01-02T00:00:00Z"}};
  auto m = merge_runtime_fields(newer, older);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->fields["last_error"], "timeout");
  EXPECT_EQ(m->source.at("last_error"), RuntimeStoreKind::jobs_state_json);
  EXPECT_EQ(m->source.at("retry_count"), RuntimeStoreKind::jobs_json);
  EXPECT_EQ(m->fields["updated_at"], "2026-01-02T00:00:00Z");
}

TEST(ViewMerge, MalformedInputIsAnErrorNotAGuess) {
  auto bad_time = merge_runtime_fields(json{{"updated_at", "yesterday"}}, nullptr);
  ASSERT_FALSE(bad_time.ok());
  EXPECT_EQ(bad_time.error().code, ErrorCode::schema_error);
  EXPECT_EQ(bad_time.error().where, "jobs.json#/updated_at");
  auto number_time = merge_runtime_fields(nullptr, json{{"updated_at", 12}});
  ASSERT_FALSE(number_time.ok());
  EXPECT_EQ(number_time.error().where, "jobs_state.json#/updated_at");
  auto not_object = merge_runtime_fields(json::array(), nullptr);
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().where, "jobs.json");

  auto unknown = decode_runtime_fields("a", json{{"retries", 1}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().where, "/retries");
  auto bad_enum = decode_runtime_fields("a", json{{"retry_status", "exhausted"}});
  ASSERT_FALSE(bad_enum.ok());
  EXPECT_EQ(bad_enum.error().code, ErrorCode::schema_error);
  EXPECT_EQ(bad_enum.error().where, "/retry_status");
  auto other_id = decode_runtime_fields("a", json{{"job_id", "b"}});
  ASSERT_FALSE(other_id.ok());
  EXPECT_EQ(other_id.error().where, "/job_id");
}

// --- Property: the merge equals a field-by-field oracle ---------------------

rc::Gen<json> gen_updated_at() {
  return rc::gen::oneOf(rc::gen::just(json()),  // marker for "absent"
                        rc::gen::just(json(nullptr)),
                        rc::gen::map(rc::gen::inRange<TimeMs>(0, 5), [](TimeMs minutes) {
                          return json(format_instant(1'700'000'000'000 + minutes * kMinuteMs));
                        }));
}

rc::Gen<json> gen_record() {
  return rc::gen::exec([] {
    if (*rc::gen::inRange(0, 5) == 0) return json(nullptr);  // the store has no record
    json record = json::object();
    for (const char* key : {"retry_count", "retry_status", "next_retry_at", "last_error"}) {
      const auto choice = *rc::gen::inRange(0, 3);
      if (choice == 1) record[key] = *rc::gen::inRange(0, 3);
      if (choice == 2) record[key] = nullptr;
    }
    const json t = *gen_updated_at();
    if (t.is_string() || (t.is_null() && *rc::gen::arbitrary<bool>())) record["updated_at"] = t;
    return record;
  });
}

std::optional<TimeMs> oracle_time(const json& record) {
  if (!record.is_object() || !record.contains("updated_at")) return std::nullopt;
  const json& t = record["updated_at"];
  if (t.is_null()) return std::nullopt;
  return *parse_instant(t.get<std::string>());
}

REHEARSE_PROP(ViewMergeProps, EachFieldComesFromTheNewerRecordThatHasIt, ()) {
  const json inline_record = *gen_record();
  const json state_record = *gen_record();
  auto merged = merge_runtime_fields(inline_record, state_record);
  RC_ASSERT(merged.ok());
  const auto ti = oracle_time(inline_record);
  const auto ts = oracle_time(state_record);
  // jobs.json wins only when strictly newer, or the only one dated.
  const bool inline_wins = ti.has_value() && (!ts.has_value() || *ti > *ts);
  std::set<std::string> keys;
  for (const json* r : {&inline_record, &state_record}) {
    if (r->is_object()) {
      for (const auto& [k, v] : r->items()) keys.insert(k);
    }
  }
  RC_ASSERT(merged->fields.size() == keys.size());
  for (const auto& key : keys) {
    const json& first = inline_wins ? inline_record : state_record;
    const json& second = inline_wins ? state_record : inline_record;
    const bool from_first = first.is_object() && first.contains(key);
    const json& expected = from_first ? first[key] : second[key];
    RC_ASSERT(merged->fields[key] == expected);
    const RuntimeStoreKind source = (from_first == inline_wins) ? RuntimeStoreKind::jobs_json
                                                                : RuntimeStoreKind::jobs_state_json;
    RC_ASSERT(merged->source.at(key) == source);
  }
  // Merging a record with itself changes nothing.
  auto self = merge_runtime_fields(state_record, state_record);
  RC_ASSERT(self.ok());
  RC_ASSERT(self->fields == (state_record.is_null() ? json::object() : state_record));
}

}  // namespace
}  // namespace rehearse
