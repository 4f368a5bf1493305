// Goal: the status view (model/status_view.hpp) shows what docs/semantics.md
// §9 asks: retrying and exhausted jobs listed apart with counts,
// badges such as "rate_limit 2/2 retry_exhausted", each job's policy (max,
// backoff), policy errors, limit overruns and a corrupt store; and, built
// from the two runtime stores, it merges them with the §5 rule so a
// recovered job never shows as failed and a retry in progress is not missed.
// Method: hand-made job states and policies for each rule, checked in both
// renderings (text and JSON); merges of jobs.json / jobs_state.json records
// whose updated_at order is known; a RapidCheck property over generated
// states: every job lands in exactly one group, counts add up, every job id
// and badge appears in the text, and the JSON counts agree with the groups.
#include "model/status_view.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/retry_policy.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

TimeMs at_instant(const char* text) { return *parse_instant(text); }

using nlohmann::json;

TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

PolicyOrError per_job_max2() { return parse_retry_policy(json{{"max", 2}, {"backoff_sec", 300}}); }

JobState state(const std::string& id, RetryStatus status, int count, int limit,
               std::optional<FailureClass> failure_class = FailureClass::rate_limit) {
  JobState s;
  s.job_id = id;
  s.retry_status = status;
  s.retry_count = count;
  s.retry_limit = limit;
  s.failure_class = status == RetryStatus::ok ? std::nullopt : failure_class;
  s.next_run_at = at("2026-03-02T11:00:00Z");
  switch (status) {
    case RetryStatus::ok: s.next_action = NextAction::none; break;
    case RetryStatus::retrying:
      s.next_action = NextAction::retry;
      s.next_retry_at = at("2026-03-02T10:05:30Z");
      break;
    case RetryStatus::retry_exhausted: s.next_action = NextAction::wait_next_run; break;
    case RetryStatus::failed: s.next_action = NextAction::manual_review; break;
  }
  return s;
}

std::vector<std::string> ids(const std::vector<StatusJobView>& views) {
  std::vector<std::string> out;
  for (const StatusJobView& v : views) out.push_back(v.job_id);
  return out;
}

TEST(StatusView, ListsRetryingAndExhaustedApartWithCountsAndBadges) {
  const StatusReport report = build_status({
      {state("digest", RetryStatus::retry_exhausted, 2, 2), per_job_max2()},
      {state("alpha", RetryStatus::retrying, 1, 2), per_job_max2()},
      {state("beta", RetryStatus::retrying, 2, 2, FailureClass::timeout), per_job_max2()},
      {state("login", RetryStatus::failed, 0, 2, FailureClass::auth), per_job_max2()},
      {state("fine", RetryStatus::ok, 0, 2), per_job_max2()},
  });
  EXPECT_EQ(ids(report.retrying), (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(ids(report.exhausted), (std::vector<std::string>{"digest"}));
  EXPECT_EQ(ids(report.failed), (std::vector<std::string>{"login"}));
  EXPECT_EQ(ids(report.ok), (std::vector<std::string>{"fine"}));
  EXPECT_EQ(report.job_count(), 5u);
  EXPECT_EQ(report.exhausted[0].badge, "rate_limit 2/2 retry_exhausted");
  EXPECT_EQ(report.retrying[0].badge, "rate_limit 1/2 retrying");
  EXPECT_EQ(report.failed[0].badge, "auth 0/2 failed");
  EXPECT_EQ(report.ok[0].badge, "ok");
  // The policy: max and backoff, as describe() words it.
  EXPECT_EQ(report.exhausted[0].policy,
            "per_job max=2 backoff=fixed 5m classes=timeout,network,provider_5xx,rate_limit "
            "budget=per_episode");

  const std::string text = render_text(report);
  EXPECT_NE(text.find("jobs: 5 (retrying 2, retry_exhausted 1, failed 1, ok 1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("retrying (2):"), std::string::npos);
  EXPECT_NE(text.find("retry_exhausted (1):\n  digest  rate_limit 2/2 retry_exhausted"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("next_retry_at=2026-03-02T10:05:30Z"), std::string::npos);
  EXPECT_NE(text.find("policy: per_job max=2 backoff=fixed 5m"), std::string::npos);
  EXPECT_EQ(text.find("state_corrupt"), std::string::npos);

  const json j = to_json(report);
  EXPECT_EQ(j.at("counts").at("retrying"), 2);
  EXPECT_EQ(j.at("counts").at("retry_exhausted"), 1);
  EXPECT_EQ(j.at("counts").at("jobs"), 5);
  EXPECT_EQ(j.at("retry_exhausted").at(0).at("badge"), "rate_limit 2/2 retry_exhausted");
  EXPECT_EQ(j.at("retry_exhausted").at(0).at("next_action"), "wait_next_run");
  EXPECT_EQ(j.at("retrying").at(0).at("next_retry_at"), "2026-03-02T10:05:30Z");
  EXPECT_TRUE(j.at("state_corrupt").is_null());
}

TEST(StatusView, PolicyErrorsAreVisible) {
  const PolicyOrError broken = parse_retry_policy(json{{"max", -1}, {"backoff_sec", 300}});
  ASSERT_FALSE(broken.ok());
  const StatusReport report = build_status({{state("legacy", RetryStatus::failed, 0, 0), broken}});
  ASSERT_EQ(report.policy_errors.size(), 1u);
  EXPECT_EQ(report.policy_errors[0].job_id, "legacy");
  EXPECT_EQ(report.policy_errors[0].error, broken.error().describe());
  ASSERT_EQ(report.failed.size(), 1u);
  EXPECT_EQ(report.failed[0].badge, "rate_limit 0/0 failed policy_invalid");
  EXPECT_EQ(report.failed[0].policy, "invalid");
  const std::string text = render_text(report);
  EXPECT_NE(text.find("policy_invalid (1):\n  legacy  "), std::string::npos) << text;
  EXPECT_EQ(to_json(report).at("policy_invalid").at(0).at("job_id"), "legacy");
}

TEST(StatusView, FixedPolicyClearsAStaleRecordedError) {
  JobState s = state("legacy", RetryStatus::ok, 0, 0);
  s.policy_error = "/max: must not be negative";
  const StatusReport report = build_status({{s, per_job_max2()}});
  EXPECT_TRUE(report.policy_errors.empty());
  EXPECT_EQ(report.ok.at(0).badge, "ok");
}

TEST(StatusView, StateCorruptIsVisible) {
  const StatusReport report =
      build_status({{state("digest", RetryStatus::ok, 0, 2), per_job_max2()}},
                   std::string("/srv/state/retry_state.json: not valid JSON at line 1"));
  const std::string text = render_text(report);
  EXPECT_EQ(text.rfind("state_corrupt:", 0), 0u) << "first line: " << text;
  EXPECT_NE(text.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(to_json(report).at("state_corrupt"),
            "/srv/state/retry_state.json: not valid JSON at line 1");
}

// Damage the store survived (a dropped journal tail, with the copy kept) and
// retries dropped because the store could not be trusted are lines of their
// own, right after the store's state, and in the JSON.
TEST(StatusView, StoreDamageAndDroppedRetriesAreVisible) {
  StatusNotices notices;
  notices.store_notices.push_back(
      "/srv/state/retry_state.journal: a damaged tail of 12 bytes at offset 50 (line 2) was "
      "dropped: unterminated record; the damaged file is kept as "
      "/srv/state/retry_state.journal.damaged-0-50");
  notices.dropped_retries.push_back(DroppedRetry{"digest", at_instant("2026-12-07T12:00:00Z"), 2,
                                                 at_instant("2026-12-07T12:05:00Z"),
                                                 "state_corrupt"});
  const StatusReport report =
      build_status({{state("digest", RetryStatus::failed, 1, 2), per_job_max2()}}, std::nullopt,
                   notices);
  const std::string text = render_text(report);
  EXPECT_EQ(text.rfind("state_damage: /srv/state/retry_state.journal: a damaged tail", 0), 0u)
      << text;
  EXPECT_NE(text.find("retries dropped (1):\n  digest  slot 2026-12-07T12:00:00Z  attempt 2  "
                      "dropped at 2026-12-07T12:05:00Z  state_corrupt\n"),
            std::string::npos)
      << text;
  const auto j = to_json(report);
  EXPECT_EQ(j.at("store_notices").size(), 1u);
  EXPECT_EQ(j.at("dropped_retries").at(0).at("slot"), "2026-12-07T12:00:00Z");
  EXPECT_EQ(j.at("dropped_retries").at(0).at("attempt"), 2);
}

// 004: a limit overrun (a count above the policy's max, e.g. after the max
// was lowered mid-episode) is visible, never folded into more retries.
TEST(StatusView, LimitOverrunIsVisible) {
  const StatusReport report =
      build_status({{state("digest", RetryStatus::retry_exhausted, 3, 3), per_job_max2()}});
  EXPECT_EQ(report.limit_overruns, (std::vector<std::string>{"digest"}));
  EXPECT_EQ(report.exhausted.at(0).badge, "rate_limit 3/2 retry_exhausted");
  EXPECT_TRUE(report.exhausted.at(0).limit_overrun);
  EXPECT_NE(render_text(report).find("limit overrun (1): digest"), std::string::npos);
  EXPECT_EQ(to_json(report).at("counts").at("limit_overrun"), 1);
}

// Section 5: the view merges jobs.json and jobs_state.json field by field;
// the newer updated_at wins. Reading one store only would show a recovered
// job as failed, or miss a retry in progress (004).
TEST(StatusView, MergesBothRuntimeStores) {
  const json stale_failure = {{"retry_status", "failed"},
                              {"failure_class", "auth"},
                              {"next_action", "manual_review"},
                              {"last_error", "HTTP 401"},
                              {"updated_at", "2026-03-02T09:00:00Z"}};
  const json recovered = {{"retry_status", "ok"},
                          {"failure_class", nullptr},
                          {"next_action", "none"},
                          {"last_error", ""},
                          {"updated_at", "2026-03-02T10:00:00Z"}};
  const json retry_in_progress = {
      {"retry_status", "retrying"}, {"failure_class", "rate_limit"},
      {"retry_count", 1},           {"next_retry_at", "2026-03-02T10:05:30Z"},
      {"next_action", "retry"},     {"updated_at", "2026-03-02T10:00:30Z"}};
  const json old_ok = {{"retry_status", "ok"},
                       {"retry_count", 0},
                       {"next_action", "none"},
                       {"updated_at", "2026-03-02T08:00:00Z"}};
  const StatusReport report = build_status_from_stores({
      // The recovery is in jobs_state.json, the stale failure inline.
      {"recovered", stale_failure, recovered, per_job_max2()},
      // The retry in progress is inline (newer), jobs_state.json is stale.
      {"busy", retry_in_progress, old_ok, per_job_max2()},
      // Only one store knows the job.
      {"only", nullptr, retry_in_progress, per_job_max2()},
  });
  EXPECT_EQ(ids(report.ok), (std::vector<std::string>{"recovered"}));
  EXPECT_TRUE(report.failed.empty()) << "a recovered job must not show as failed";
  EXPECT_EQ(ids(report.retrying), (std::vector<std::string>{"busy", "only"}));
  const StatusJobView& busy = report.retrying.at(0);
  EXPECT_EQ(busy.badge, "rate_limit 1/2 retrying");
  EXPECT_EQ(busy.state.next_retry_at, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(busy.sources.at("retry_status"), "jobs.json");
  EXPECT_EQ(report.ok.at(0).sources.at("retry_status"), "jobs_state.json");
  const json j = to_json(report);
  EXPECT_EQ(j.at("retrying").at(0).at("sources").at("next_retry_at"), "jobs.json");
}

TEST(StatusView, UnmergeableRecordsAreListedNotDropped) {
  const json bad_time = {{"retry_status", "ok"}, {"updated_at", "yesterday"}};
  const StatusReport report = build_status_from_stores({
      {"broken", bad_time, nullptr, per_job_max2()},
      {"fine", nullptr, json{{"retry_status", "ok"}}, per_job_max2()},
  });
  ASSERT_EQ(report.view_errors.size(), 1u);
  EXPECT_EQ(report.view_errors[0].job_id, "broken");
  EXPECT_EQ(ids(report.ok), (std::vector<std::string>{"fine"}));
  EXPECT_NE(render_text(report).find("view errors (1):\n  broken  "), std::string::npos);
}

// Every job lands in exactly one group, the counts add up in both
// renderings, and the text names every job with its badge.
REHEARSE_PROP(StatusViewProperty, EveryJobShownOnceWithConsistentCounts, ()) {
  const int n = *rc::gen::inRange(0, 12);
  std::vector<StatusJob> jobs;
  for (int i = 0; i < n; ++i) {
    const auto status = static_cast<RetryStatus>(*rc::gen::inRange(0, 4));
    const int count = *rc::gen::inRange(0, 5);
    const int max = *rc::gen::inRange(0, 4);
    StatusJob job;
    job.state = state("job-" + std::to_string(i), status, count, max);
    job.policy = *rc::gen::element(0, 1) == 0
                     ? parse_retry_policy(json{{"max", max}, {"backoff_sec", 60}, {"reason", "x"}})
                     : PolicyOrError(make_error(ErrorCode::invalid_argument, "bad policy"));
    jobs.push_back(std::move(job));
  }
  const StatusReport report = build_status(jobs);
  RC_ASSERT(report.job_count() == jobs.size());
  std::set<std::string> seen;
  for (const auto* group : {&report.retrying, &report.exhausted, &report.failed, &report.ok}) {
    for (const StatusJobView& v : *group) RC_ASSERT(seen.insert(v.job_id).second);
  }
  RC_ASSERT(seen.size() == jobs.size());
  const std::string text = render_text(report);
  for (const auto* group : {&report.retrying, &report.exhausted, &report.failed, &report.ok}) {
    for (const StatusJobView& v : *group) {
      RC_ASSERT(text.find("  " + v.job_id + "  " + v.badge) != std::string::npos);
      RC_ASSERT(v.limit_overrun == (v.state.retry_count > v.state.retry_limit));
    }
  }
  const json j = to_json(report);
  RC_ASSERT(j.at("counts").at("jobs").get<std::size_t>() == jobs.size());
  RC_ASSERT(j.at("retrying").size() == report.retrying.size());
  RC_ASSERT(j.at("retry_exhausted").size() == report.exhausted.size());
  RC_ASSERT(j.at("policy_invalid").size() == report.policy_errors.size());
}

}  // namespace
}  // namespace rehearse
