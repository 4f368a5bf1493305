// Goal: retries_bounded fires on a retry beyond the budget, of a non-retryable
// class, before its backoff or outside its exact window (store damage
// included), and stays quiet on the retries the policy allows.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(RetriesBounded, FiresOnAThirdRetryOfAPerEpisodeBudgetOfTwo) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 1,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "failure",
            "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 3, "failure",
            "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 2,
       "rate_limit");
  const auto bad = retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:15:00Z", 4,
                             "failure", "rate_limit");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// Supersede (per_episode): the 11:00 regular run drops the 10:00 slot's
// pending retry; the retry started after it is one the budget no longer
// grants. Started before the regular run, it is the episode's own.
std::pair<Script, std::size_t> retry_around_next_slot(bool retry_first) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  std::size_t retry = 0;
  regular(s, "hourly", slot, "2026-03-02T10:50:00Z", "2026-03-02T11:00:00Z", "failure",
          "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:50:00Z", 1, "rate_limit");
  if (retry_first) retry = retry_run(s, "hourly", slot, "2026-03-02T10:55:00Z", 2, "success");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  if (!retry_first) retry = retry_run(s, "hourly", slot, "2026-03-02T11:05:00Z", 2, "success");
  return {s, retry};
}

TEST(RetriesBounded, FiresWhenASupersededPerEpisodeRetryRuns) {
  const auto [bad, retry] = retry_around_next_slot(false);
  const Outcome o = run(bad, only({"hourly"}));
  expect_first(o, "retries_bounded", retry);
  EXPECT_NE(o.seen.front().message.find("supersedes"), std::string::npos) << describe(o.seen);
  const Outcome near = run(retry_around_next_slot(true).first, only({"hourly"}));
  EXPECT_TRUE(std::none_of(near.seen.begin(), near.seen.end(), [](const Violation& v) {
    return v.invariant == "retries_bounded";
  })) << describe(near.seen);
}

// The 10:00 slot's retry (entry 7) is still pending when 11:00 comes due:
// under per_episode the hand-out supersedes it, and the queue must never run
// it, even before the 11:00 run. Cancelled at the hand-out, or under a
// per_slot budget, or with a crash between (the boot decides again), it is
// no violation.
Script retry_pending_at_hand_out(const std::string& job, bool cancelled, bool crash) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  s.add("queue_add", "2026-03-02T10:58:00Z", job, slot,
        {{"id", 7},
         {"kind", "retry"},
         {"attempt", 2},
         {"ready_at", "2026-03-02T11:03:00Z"},
         {"added", true}});
  handout(s, "2026-03-02T11:00:00Z", job, "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}});
  if (cancelled) {
    s.add("queue_cancel", "2026-03-02T11:00:00Z", job, slot,
          {{"id", 7}, {"kind", "retry"}, {"attempt", 2}});
  }
  if (crash) {
    s.add("process_crash", "2026-03-02T11:01:00Z", {}, std::nullopt,
          {{"process", "worker"}, {"cause", "restart"}});
  }
  s.add("queue_take", "2026-03-02T11:03:00Z", job, slot,
        {{"id", 7}, {"kind", "retry"}, {"attempt", 2}, {"ready_at", "2026-03-02T11:03:00Z"}});
  return s;
}

TEST(RetriesBounded, FiresWhenARetryPendingAtALaterHandOutIsTaken) {
  const std::string text = "was pending when a later slot came due";
  const Outcome o = run(retry_pending_at_hand_out("hourly", false, false), only({"hourly"}));
  EXPECT_TRUE(fired(o, "retries_bounded", text)) << describe(o.seen);
  for (const auto& [job, cancelled, crash] :
       {std::tuple{"hourly", true, false}, std::tuple{"weekly", false, false},
        std::tuple{"hourly", false, true}}) {
    const Outcome near = run(retry_pending_at_hand_out(job, cancelled, crash), base_scenario());
    EXPECT_FALSE(fired(near, "retries_bounded", text)) << job << describe(near.seen);
  }
}

TEST(RetriesBounded, NearMissTwoRetriesThenExhaustedThenRegularRuns) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 1,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "failure",
            "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 3, "failure",
            "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 2,
       "rate_limit");
  // per_episode: 11:00 fails, budget spent, no retry; 12:00 succeeds.
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", 2,
       "rate_limit");
  regular(s, "hourly", "2026-03-02T12:00:00Z", "2026-03-02T12:00:00Z", "2026-03-02T13:00:00Z",
          "success");
  const Outcome o = run(s, base_scenario(), at("2026-03-02T12:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["retries"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["runs"], 5);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["failed_slots"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["final_status"], "ok");
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["notifications"]["retry_exhausted"], 2);
}

TEST(RetriesBounded, FiresWhenANonRetryableClassIsRetried) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "auth");
  const auto bad =
      retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// The end of `job`'s regular run of `slot`: its intent, a row that says it
// failed with class network (whatever the world saw), the queue's finish.
void end_as_network_failure(Script& s, const char* slot, const std::string& job) {
  const json entry = {{"id", s.run_of(job)}, {"kind", "regular"}, {"attempt", 1}};
  s.add("queue_intent", slot, job, slot, entry);
  s.add("durable_job_state", slot, job, std::nullopt,
        {{"retry_status", "retrying"}, {"failure_class", "network"}, {"slots", json::object()}});
  s.add("queue_done", slot, job, slot, entry);
}

// A fetch or call run's class is the monitors' own reading of the replies
// the world recorded during the run (sim/monitors/reply_class.hpp), not the
// class the durable row holds: a 403 written as network and retried fires;
// a 503 written as network is a retryable failure all the same, and so is a
// request answered 401, then (after a reissue, same request id) 503.
TEST(RetriesBounded, JudgesTheClassOfTheRepliesNotTheRowsClass) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto scripted = [&](const std::vector<int>& statuses) {
    Script s;
    handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
    run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
    for (int status : statuses) {
      s.add("service_reply", slot, "hourly", slot, {{"request_id", "r0"}, {"status", status}});
    }
    end_as_network_failure(s, slot, "hourly");
    return s;
  };
  Script lied = scripted({403});
  const auto bad = retry_run(lied, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(lied, base_scenario()), "retries_bounded", bad);
  for (const std::vector<int>& statuses : {std::vector<int>{503}, std::vector<int>{401, 503}}) {
    Script fine = scripted(statuses);
    retry_run(fine, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
    const Outcome o = run(fine, base_scenario());
    EXPECT_TRUE(o.seen.empty()) << statuses.size() << ": " << describe(o.seen);
  }
}

// A reconcile run's class is the world's (docs/reconcile.md): its cycle's
// agent list answer when that got no 200, else unknown, since item failures
// never fail a run and a failing store is class unknown. A run whose list was
// answered, written as provider_5xx and retried fires; one whose list got a
// 503 is a retryable failure, whatever the row says.
TEST(RetriesBounded, JudgesAReconcileRunByItsAgentList) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script lied = reconcile_run({200}, "retrying");
  const auto bad = retry_run(lied, "reconcile", slot, "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(lied, reconcile_retried()), "retries_bounded", bad);
  for (const std::vector<int>& statuses : {std::vector<int>{503}, std::vector<int>{200, 503}}) {
    Script fine = reconcile_run(statuses, "retrying");
    retry_run(fine, "reconcile", slot, "2026-03-02T10:05:00Z", 2, "success");
    const Outcome o = run(fine, reconcile_retried());
    EXPECT_TRUE(o.seen.empty()) << statuses.size() << ": " << describe(o.seen);
  }
}

// The base scenario's hourly job as a publish job posting to team-chat.
Scenario publish_hourly() {
  Scenario sc = only({"hourly"});
  sc.jobs.front().kind = JobKind::publish;
  sc.jobs.front().targets = {"team-chat"};
  return sc;
}

// A failed publish run at 10:00 (row: network) whose model-api request got
// `status` (0: none sent, the post was in hand) and whose delivery the
// messenger refused with `refusal` ("" none), then a retry at 10:05.
Script publish_failed(int status, const std::string& refusal) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  if (status != 0) {
    s.add_event(
        run_reply(slot, "model-api", "hourly",
                  {{"operation", "generate"}, {"request_id", "hourly/p"}, {"status", status}}));
  }
  if (!refusal.empty()) {
    s.add("message_refused", slot, "hourly", slot,
          {{"kind", "delivery"}, {"target", "team-chat"}, {"reason", refusal}});
  }
  end_as_network_failure(s, slot, "hourly");
  return s;
}

// A publish run's class is the world's: its model-api reply's when that
// failed, else the messenger's refusal of the post (its text), else unknown
// (the ledger). Each written as network and retried: the retry of a 403, of a
// refusal saying "invalid token" and of a run the world saw nothing fail in
// fires; a 503 and a refusal saying "HTTP 503" are retryable all the same.
TEST(RetriesBounded, JudgesAPublishRunByItsReplies) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto retried = [&](int status, const std::string& refusal) {
    Script s = publish_failed(status, refusal);
    return std::make_pair(s, retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success"));
  };
  for (const auto& [status, refusal] : std::vector<std::pair<int, std::string>>{
           {403, ""}, {0, "invalid token for team-chat"}, {0, ""}}) {
    auto [s, bad] = retried(status, refusal);
    const Outcome o = run(s, publish_hourly());
    EXPECT_TRUE(fired(o, "retries_bounded", "a class its policy does not retry"))
        << status << " " << refusal << ": " << describe(o.seen);
  }
  for (const auto& [status, refusal] :
       std::vector<std::pair<int, std::string>>{{503, ""}, {0, "team-chat: HTTP 503"}}) {
    auto [s, bad] = retried(status, refusal);
    const Outcome o = run(s, publish_hourly());
    EXPECT_FALSE(fired(o, "retries_bounded", "")) << status << ": " << describe(o.seen);
  }
}

TEST(RetriesBounded, FiresWhenAJobWithoutAPolicyRetries) {
  Script s;
  regular(s, "broken", "2026-03-02T10:15:00Z", "2026-03-02T10:15:00Z", "2026-03-02T11:15:00Z",
          "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "broken", "2026-03-02T10:15:00Z",
                        "2026-03-02T10:15:00Z", 1, "timeout");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

TEST(RetriesBounded, FiresWhenARetryRunsBeforeItsBackoff) {
  Script s;
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "provider_5xx");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "provider_5xx");
  const auto bad =
      retry_run(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:31:00Z", 2, "success");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// The exact window: the queue's record of a retry, at the instant
// of the failure, is due within [floor(d * (1 - jitter)), d] of it, d the
// n-th delay of the policy; a later due time (an exponent off by one) fires.
TEST(RetriesBounded, FiresWhenARetryIsQueuedOutsideItsExactWindow) {
  Script s;
  const char* slot = "2026-03-02T17:00:00Z";
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  // "auto", low frequency: exponential 30 min; retry 1 is due 30 min after.
  const auto bad =
      s.add("queue_add", slot, "weekly", slot,
            {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:00:00Z"}});
  expect_first(run(s, only({"weekly"}), at("2026-03-02T17:01:00Z")), "retries_bounded", bad);
}

// The weekly job with a linear backoff capped at 45 min: retry n waits
// min(30 min * n, 45 min). Retry 2 queued at 60 min (the uncapped linear
// delay) is outside the window; at 45 min it is exact.
Scenario weekly_linear_capped() {
  Scenario s = only({"weekly"});
  s.jobs[0].retry_policy =
      json{{"attempts", 4},
           {"backoff", {{"type", "linear"}, {"delay", "30m"}, {"max_delay", "45m"}}}};
  return s;
}

Script weekly_linear_first_retry(const char* slot) {
  Script s;
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  s.add("queue_add", slot, "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, slot, 1, "timeout");
  retry_run(s, "weekly", slot, "2026-03-02T17:30:00Z", 2, "failure", "timeout");
  return s;
}

TEST(RetriesBounded, FiresWhenALinearRetryIgnoresItsCap) {
  const char* slot = "2026-03-02T17:00:00Z";
  Script s = weekly_linear_first_retry(slot);
  const auto bad =
      s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
            {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  expect_first(run(s, weekly_linear_capped(), at("2026-03-02T17:40:00Z")), "retries_bounded", bad);
}

TEST(RetriesBounded, NearMissALinearRetryAtItsCap) {
  const char* slot = "2026-03-02T17:00:00Z";
  Script s = weekly_linear_first_retry(slot);
  s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:15:00Z"}});
  const Outcome o = run(s, weekly_linear_capped(), at("2026-03-02T17:40:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetriesBounded, NearMissRetriesQueuedAtTheirExactDelays) {
  Script s;
  const char* slot = "2026-03-02T17:00:00Z";
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  s.add("queue_add", slot, "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, slot, 1, "timeout");
  retry_run(s, "weekly", slot, "2026-03-02T17:30:00Z", 2, "failure", "timeout");
  s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, "2026-03-02T17:30:00Z", 2, "timeout");
  // A retry restored at a boot keeps its old due time: not a fresh decision.
  s.add("queue_add", "2026-03-02T17:40:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  const Outcome o = run(s, only({"weekly"}), at("2026-03-02T17:45:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetriesBounded, AutoOnALowFrequencyOverrideAllowsThreeRetries) {
  Script s;
  // WEEKLY_CRON = "0 17 * * MON": 2026-03-02 is a Monday.
  regular(s, "weekly", "2026-03-02T17:00:00Z", "2026-03-02T17:00:00Z", "2026-03-09T17:00:00Z",
          "failure", "rate_limit");
  // Retries 30, 60 and 120 minutes after each failure are legal.
  const char* slot = "2026-03-02T17:00:00Z";
  const char* failed_at[] = {"2026-03-02T17:00:00Z", "2026-03-02T17:30:00Z", "2026-03-02T18:30:00Z",
                             "2026-03-02T20:30:00Z"};
  for (int n = 1; n <= 3; ++n) {
    note(s, "retry_scheduled", "weekly", slot, failed_at[n - 1], n, "rate_limit");
    retry_run(s, "weekly", slot, failed_at[n], n + 1, "failure", "rate_limit");
  }
  const Outcome legal = run(s, base_scenario(), at("2026-03-09T00:00:00Z"));
  EXPECT_TRUE(legal.seen.empty()) << describe(legal.seen);
  EXPECT_EQ(legal.tallies["jobs"]["weekly"]["retries"], 3);
  // A fourth is not.
  const auto bad = note(s, "retry_scheduled", "weekly", slot, failed_at[3], 4, "rate_limit");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// Two retries of 10:00 (the per_episode budget of 2 spent, the episode not
// over), the process down 10:06-10:08; at the boot the world reads the job's
// row as `ok` with `retry_count` 0 (with `damaged`: the records of both
// retries lost with the damage), and the core, seeing a new episode, retries
// 11:00's failure `retries` times. With `reboot`, the damaged journal's tail
// goes at 10:30 and the process restarts at 10:40 (a boot that is not blind,
// reading what the blind one wrote), before 11:00.
Script retries_again_after_restart(bool damaged, int retries, bool reboot = false) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:05:00Z", 2, "rate_limit");
  crash(s, "2026-03-02T10:06:00Z");
  if (damaged) damage_store(s, "2026-03-02T10:07:00Z");
  boot(s, "2026-03-02T10:08:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:08:00Z", "hourly", std::nullopt,
        {{"retry_status", "ok"},
         {"retry_count", 0},
         {"coalesced_slots", 0},
         {"next_run_at", "2026-03-02T11:00:00Z"},
         {"slots", json::object()}});
  if (reboot) {
    s.add("journal_tail_gone", "2026-03-02T10:30:00Z", {}, std::nullopt,
          {{"path", "/srv/state/retry_state.journal"}, {"torn", true}});
    crash(s, "2026-03-02T10:40:00Z");
    boot(s, "2026-03-02T10:40:00Z", 3);
  }
  const char* next = "2026-03-02T11:00:00Z";
  regular(s, "hourly", next, next, "2026-03-02T12:00:00Z", "failure", "rate_limit");
  const char* times[] = {"2026-03-02T11:05:00Z", "2026-03-02T11:10:00Z", "2026-03-02T11:15:00Z"};
  const char* prev = next;
  for (int n = 1; n <= retries; ++n) {
    note(s, "retry_scheduled", "hourly", next, prev, n, "rate_limit");
    retry_run(s, "hourly", next, times[n - 1], n + 1, "failure", "rate_limit");
    prev = times[n - 1];
  }
  return s;
}

TEST(RetriesBoundedStoreDamage, NearMissTheCountRebasedOnWhatTheDamagedStoreHolds) {
  const Outcome o =
      run(retries_again_after_restart(true, 2), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
  EXPECT_FALSE(fired(o, "state_durable", "retry counter")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresBeyondTheBudgetAfterTheRebase) {
  const Outcome o =
      run(retries_again_after_restart(true, 3), only({"hourly"}), at("2026-03-02T11:20:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

// The first retry after a blind boot comes in a later boot that is not blind:
// it is not counted on top of the attempts the damage had lost.
TEST(RetriesBoundedStoreDamage, NearMissTheRebaseHoldsInALaterBootThatIsNotBlind) {
  const Outcome o =
      run(retries_again_after_restart(true, 2, true), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresBeyondTheBudgetInALaterBootThatIsNotBlind) {
  const Outcome o =
      run(retries_again_after_restart(true, 3, true), only({"hourly"}), at("2026-03-02T11:20:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "retry 3 exceeds")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresWhenAPlainRestartLosesTheCount) {
  const Outcome o =
      run(retries_again_after_restart(false, 2), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

// 10:00 failed, retry 1 (attempt 2) failed at 10:05 and retry 2
// (attempt 3) was queued for 10:15; the process went down at 10:06 and a
// damage to the store lost the records after retry 1 was scheduled. At the
// blind boot (10:20) the row the world reads has retry_count 1 with that
// retry still pending (next_action retry): the boot runs retry 1 again, and
// when it fails the queue still holds retry 2 from before (the core's add is
// idempotent), which starts at once. Neither is a retry beyond the budget
// nor one before its backoff: the pending retry is the one the count already
// holds, and retry 2 answers the failure that queued it. `tail` adds what
// must still fire: a third retry, or a retry 2 queued after the boot that
// runs 0 ms after the failure.
enum class AfterLostRetry : unsigned char { nothing, third_retry, early_new_entry };

Script pending_retry_lost_with_the_damage(bool damaged, AfterLostRetry tail) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  const auto queue_retry = [&](const char* t, int attempt, const char* ready, bool added) {
    s.add("queue_add", t, "hourly", slot,
          {{"kind", "retry"}, {"added", added}, {"attempt", attempt}, {"ready_at", ready}});
  };
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  queue_retry(slot, 2, "2026-03-02T10:05:00Z", true);
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:05:00Z", 2, "rate_limit");
  queue_retry("2026-03-02T10:05:00Z", 3, "2026-03-02T10:15:00Z", true);
  crash(s, "2026-03-02T10:06:00Z");
  if (damaged) damage_store(s, "2026-03-02T10:07:00Z");
  boot(s, "2026-03-02T10:20:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:20:00Z", "hourly", std::nullopt,
        {{"retry_status", "retrying"},
         {"retry_count", 1},
         {"next_action", "retry"},
         {"next_retry_at", "2026-03-02T10:05:00Z"},
         {"next_run_at", "2026-03-02T11:00:00Z"},
         {"slots", json::object()}});
  retry_run(s, "hourly", slot, "2026-03-02T10:20:00Z", 2, "failure", "rate_limit");
  const bool early = tail == AfterLostRetry::early_new_entry;
  if (early) {
    s.add("queue_cancel", "2026-03-02T10:20:00Z", "hourly", slot,
          {{"kind", "retry"}, {"attempt", 3}});
  }
  queue_retry("2026-03-02T10:20:00Z", 3, early ? "2026-03-02T10:20:00Z" : "2026-03-02T10:15:00Z",
              early);
  retry_run(s, "hourly", slot, "2026-03-02T10:20:00Z", 3, "failure", "rate_limit");
  if (tail == AfterLostRetry::third_retry) {
    retry_run(s, "hourly", slot, "2026-03-02T10:40:00Z", 4, "failure", "rate_limit");
  }
  return s;
}

// A blind boot whose surviving row holds a spent budget, then a success
// (the episode ends), then a new episode with `retries` retries: the budget
// of the new episode is whole (the count is not rebased at the first retry
// hours after the boot, on the old episode's row).
Script new_episode_after_a_blind_boot(int retries) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  crash(s, "2026-03-02T09:40:00Z");
  damage_store(s, "2026-03-02T09:41:00Z");
  boot(s, "2026-03-02T09:50:00Z", 2);
  s.add("durable_job_state", "2026-03-02T09:50:00Z", "hourly", std::nullopt,
        {{"retry_status", "retry_exhausted"},
         {"retry_count", 2},
         {"next_action", "wait_next_run"},
         {"next_run_at", "2026-03-02T10:00:00Z"},
         {"slots", json::object()}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  const char* slot = "2026-03-02T11:00:00Z";
  regular(s, "hourly", slot, slot, "2026-03-02T12:00:00Z", "failure", "rate_limit");
  const char* times[] = {"2026-03-02T11:05:00Z", "2026-03-02T11:15:00Z", "2026-03-02T11:35:00Z"};
  const char* prev = slot;
  for (int n = 1; n <= retries; ++n) {
    note(s, "retry_scheduled", "hourly", slot, prev, n, "rate_limit");
    retry_run(s, "hourly", slot, times[n - 1], n + 1, "failure", "rate_limit");
    prev = times[n - 1];
  }
  return s;
}

TEST(RetriesBoundedStoreDamage, ANewEpisodeAfterABlindBootHasItsWholeBudget) {
  const Outcome whole =
      run(new_episode_after_a_blind_boot(2), only({"hourly"}), at("2026-03-02T11:40:00Z"));
  EXPECT_FALSE(fired(whole, "retries_bounded", "")) << describe(whole.seen);
  const Outcome beyond =
      run(new_episode_after_a_blind_boot(3), only({"hourly"}), at("2026-03-02T11:40:00Z"));
  EXPECT_TRUE(fired(beyond, "retries_bounded", "retry 3 exceeds")) << describe(beyond.seen);
}

TEST(RetriesBoundedStoreDamage, NearMissAPendingRetryLostWithTheDamageRunsAgain) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::nothing),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnAThirdRetryAfterAPendingOneRanAgain) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::third_retry),
                        only({"hourly"}), at("2026-03-02T10:50:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "retry 3 exceeds")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnARetryQueuedAfterTheBlindBootBeforeItsBackoff) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::early_new_entry),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "before its backoff")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnTheOldEntryRightAfterAFailureWithoutDamage) {
  const Outcome o = run(pending_retry_lost_with_the_damage(false, AfterLostRetry::nothing),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "before its backoff")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
