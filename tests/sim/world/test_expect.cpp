// Goal: every expectation key added to format 1 after its release (a job's
// durable `state`, its `policy`, the per-slot list `slots` with outcomes,
// attempts, attempt instants and per-slot notifications, `messages` per
// target and kind, `lateness` bounds, an item's `not_found` answers, and
// `damaged_files`) holds on a run when it states what happened, and fails,
// naming its JSON pointer, when it states anything else.
// Method: small scenarios whose outcome is derived by hand in the comments
// (docs/semantics.md §2-§5, §8), run through run_scenario(); each test first
// checks that the hand-derived expectation holds, then changes one value and
// asserts the exact failure line of check_expectations().
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"
#include "sim/world/expect.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

// Friday 17:00 slot of a weekly group job under "auto" (low-frequency:
// attempts 4, exponential 30 min, per_slot). Quota out 16:59:30-18:59:30:
// 17:00 fails, retries at ~17:30 and ~18:30 fail, the 120-minute retry at
// ~20:30 delivers. Each failed run sends a failure notice to `team`; the
// three retry_scheduled notices and the recovered one go to `team` too (the
// job's target). The next slot is the next Friday.
json weekly() {
  return json::parse(R"({
    "format": 1,
    "scenario": "expect-weekly",
    "start": "2026-12-04T16:00:00Z",
    "until": "2026-12-05T00:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{
      "id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
      "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]
    }],
    "faults": [{"at": "2026-12-04T16:59:30Z", "for": "2h", "kind": "quota_exhausted"}],
    "expect": {"jobs": {"weekly": {
      "state": {"retry_status": "ok", "next_action": "none",
                "next_run_at": "2026-12-11T17:00:00Z", "next_retry_at": null,
                "retry_count": 0},
      "policy": {"max_retries": 3, "backoff": "exponential", "delay": "30m",
                 "budget": "per_slot"},
      "slots": [{"slot": "2026-12-04T17:00:00Z", "outcome": "delivered", "attempts": 4,
                 "attempt_at": ["+0s", "+30m", "+1h30m", "+3h30m"],
                 "notifications": {"retry_scheduled": 3, "recovered": 1}}],
      "messages": {"team": {"delivery": 1, "failure_notice": 3, "notification": 4,
                            "refused": 0}},
      "lateness": {"at_least": "0s", "at_most": "1s"}
    }}}
  })");
}

Scenario load(const json& doc) {
  auto loaded = load_scenario_json(doc.dump(), "test.json");
  if (!loaded.ok()) {
    ADD_FAILURE() << loaded.error().describe();
    return Scenario{};
  }
  return std::move(loaded).value();
}

// The failure lines of one run of `doc`.
std::vector<std::string> failures(const json& doc) {
  const Scenario scenario = load(doc);
  auto run = run_scenario(scenario);
  if (!run.ok()) {
    ADD_FAILURE() << run.error().describe();
    return {};
  }
  std::vector<std::string> lines;
  for (const ExpectFailure& f : check_expectations(scenario, *run)) lines.push_back(f.describe());
  return lines;
}

using Lines = std::vector<std::string>;

TEST(Expect, TheHandDerivedWeeklyExpectationHolds) { EXPECT_EQ(failures(weekly()), Lines{}); }

TEST(Expect, StateFailsOnEachField) {
  json doc = weekly();
  json& state = doc["expect"]["jobs"]["weekly"]["state"];
  state = {{"retry_status", "retrying"},
           {"next_action", "retry"},
           {"next_run_at", "2026-12-04T17:00:00Z"},
           {"next_retry_at", "2026-12-04T20:30:00Z"},
           {"retry_count", 3},
           {"failure_class", "rate_limit"}};
  EXPECT_EQ(
      failures(doc),
      (Lines{"expect /expect/jobs/weekly/state/retry_status: expected retrying, got ok",
             "expect /expect/jobs/weekly/state/next_action: expected retry, got none",
             "expect /expect/jobs/weekly/state/next_run_at: expected 2026-12-04T17:00:00Z, "
             "got 2026-12-11T17:00:00Z",
             "expect /expect/jobs/weekly/state/next_retry_at: expected "
             "2026-12-04T20:30:00Z, got null",
             "expect /expect/jobs/weekly/state/retry_count: expected 3, got 0",
             "expect /expect/jobs/weekly/state/failure_class: expected rate_limit, got null"}));
}

TEST(Expect, PolicyFailsWhenAutoChoseOtherwise) {
  json doc = weekly();
  // What "auto" gives a schedule that is not low-frequency: 1 retry, 60 s.
  doc["expect"]["jobs"]["weekly"]["policy"] = {
      {"max_retries", 1}, {"backoff", "fixed"}, {"delay", "60s"}, {"budget", "per_episode"}};
  EXPECT_EQ(
      failures(doc),
      (Lines{"expect /expect/jobs/weekly/policy/max_retries: expected 1, got 3",
             "expect /expect/jobs/weekly/policy/backoff: expected fixed, got exponential",
             "expect /expect/jobs/weekly/policy/delay: expected 1m, got 30m",
             "expect /expect/jobs/weekly/policy/budget: expected per_episode, got per_slot"}));
}

// Every backoff curve is an expectation, Sidekiq's polynomial one included
// (its name is not one a per-job policy may give, so the core's parser of
// those names must not be what reads it).
TEST(Expect, PolicyBackoffJudgesThePolynomialCurve) {
  json doc = weekly();
  doc["jobs"][0]["retry_policy"] = {{"sidekiq", {{"retry", 3}}}};
  doc["expect"]["jobs"]["weekly"] = {{"policy", {{"max_retries", 3}, {"backoff", "polynomial"}}}};
  EXPECT_EQ(failures(doc), Lines{});
  doc["expect"]["jobs"]["weekly"]["policy"]["backoff"] = "exponential";
  EXPECT_EQ(failures(doc),
            Lines{"expect /expect/jobs/weekly/policy/backoff: expected exponential, got "
                  "polynomial"});
}

TEST(Expect, SlotOutcomeAttemptsAndNotificationsFail) {
  json doc = weekly();
  json& slot = doc["expect"]["jobs"]["weekly"]["slots"][0];
  slot["outcome"] = "exhausted";
  slot.erase("attempt_at");
  slot["attempts"] = 3;
  slot["notifications"] = {{"retry_exhausted", 1}};
  EXPECT_EQ(failures(doc),
            (Lines{"expect /expect/jobs/weekly/slots/0/outcome: expected exhausted, got delivered",
                   "expect /expect/jobs/weekly/slots/0/attempts: expected 3, got 4",
                   "expect /expect/jobs/weekly/slots/0/notifications/retry_exhausted: expected "
                   "1, got 0"}));
}

TEST(Expect, AttemptInstantsFailOutsideTheirTolerance) {
  json doc = weekly();
  json& slot = doc["expect"]["jobs"]["weekly"]["slots"][0];
  // An exponent off by one: 30, 30, 60 min instead of 30, 60, 120.
  slot["attempt_at"] = {"+0s", "+30m", "+1h", "+2h"};
  const Lines lines = failures(doc);
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0].rfind("expect /expect/jobs/weekly/slots/0/attempt_at/2: expected "
                           "2026-12-04T18:00:00Z (within 1s), got \"2026-12-04T18:30:00.",
                           0),
            0u)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("expect /expect/jobs/weekly/slots/0/attempt_at/3: expected "
                           "2026-12-04T19:00:00Z (within 1s), got \"2026-12-04T20:30:00.",
                           0),
            0u)
      << lines[1];
  // The run's attempts start a fraction of a second after the nominal
  // instants (the failed run's call and notice take 200 ms): a zero tolerance
  // refuses them, the default second accepts them.
  slot["attempt_at"] = {"+0s", "+30m", "+1h30m", "+3h30m"};
  slot["tolerance"] = "0s";
  EXPECT_EQ(failures(doc).size(), 3u);
  slot["attempt_at"] = {"+0s", "+30m"};
  slot.erase("attempts");
  slot.erase("tolerance");
  const Lines count = failures(doc);
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].rfind("expect /expect/jobs/weekly/slots/0/attempt_at: expected 2 attempts, "
                           "got 4 attempts",
                           0),
            0u)
      << count[0];
}

TEST(Expect, TheSlotListMustNameEverySlotAndNoOther) {
  json doc = weekly();
  json& slots = doc["expect"]["jobs"]["weekly"]["slots"];
  // A slot the run never had.
  slots.push_back({{"slot", "2026-12-04T18:00:00Z"}, {"outcome", "delivered"}});
  EXPECT_EQ(failures(doc), (Lines{"expect /expect/jobs/weekly/slots/1/slot: expected a slot at "
                                  "2026-12-04T18:00:00Z, got no such slot"}));
  // A slot the run had that the list leaves out.
  slots = json::array();
  EXPECT_EQ(failures(doc),
            (Lines{"expect /expect/jobs/weekly/slots: expected no slot at 2026-12-04T17:00:00Z, "
                   "got a slot at 2026-12-04T17:00:00Z (delivered)"}));
}

TEST(Expect, MessagesFailPerTargetAndKind) {
  json doc = weekly();
  doc["expect"]["jobs"]["weekly"]["messages"]["team"] = {
      {"delivery", 2}, {"failure_notice", 0}, {"notification", 3}, {"refused", 1}};
  EXPECT_EQ(failures(doc),
            (Lines{"expect /expect/jobs/weekly/messages/team/delivery: expected 2, got 1",
                   "expect /expect/jobs/weekly/messages/team/failure_notice: expected 0, got 3",
                   "expect /expect/jobs/weekly/messages/team/notification: expected 3, got 4",
                   "expect /expect/jobs/weekly/messages/team/refused: expected 1, got 0"}));
}

TEST(Expect, LatenessFailsBelowItsLowerAndAboveItsUpperBound) {
  json doc = weekly();
  doc["expect"]["jobs"]["weekly"]["lateness"] = {{"at_least", "1m"}};
  EXPECT_EQ(failures(doc),
            (Lines{"expect /expect/jobs/weekly/lateness/at_least: expected at least 1m, got 0s"}));
  // A serial queue: `slow` holds the worker 10:00-10:10 (one 10-minute
  // model call), so `fast`'s 10:05 slot starts ~10:10, 5 min late.
  json serial = json::parse(R"({
    "format": 1, "scenario": "expect-serial",
    "start": "2026-12-07T09:59:00Z", "until": "2026-12-07T10:30:00Z",
    "services": {"model-api": {"latency": "10m"}, "messenger": {"targets": ["team"]},
                 "brokerage": {}},
    "jobs": [
      {"id": "slow", "kind": "group", "schedule": "0 10 * * *",
       "retry_policy": {"max": 1, "backoff_sec": 60},
       "tasks": [{"id": "s", "produces": "summary"}], "targets": ["team"]},
      {"id": "fast", "kind": "fetch", "schedule": "5 10 * * *",
       "retry_policy": {"max": 1, "backoff_sec": 60}}
    ],
    "expect": {"jobs": {"fast": {"lateness": {"at_least": "5m", "at_most": "5m1s"}}}}
  })");
  EXPECT_EQ(failures(serial), Lines{});
  serial["expect"]["jobs"]["fast"]["lateness"] = {{"at_most", "1m"}};
  const Lines lines = failures(serial);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("expect /expect/jobs/fast/lateness/at_most: expected at most 1m, got 5m",
                           0),
            0u)
      << lines[0];
}

// ISS-9 is gone at start: its one query (01:00) is answered 404, it ends
// DESIGN_FAILED and is never queried again. ISS-1 is always found.
TEST(Expect, NotFoundCountsTheOrchestratorsAnswers) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "expect-404",
    "start": "2026-11-02T00:30:00Z", "until": "2026-11-02T02:30:00Z",
    "env": {"AGENT_LEAD_ID": "agent-lead-1", "AGENT_DEV_ID": "agent-dev-1"},
    "services": {"orchestrator": {
      "issues": [{"id": "ISS-1", "status": "todo"}],
      "agents": [{"id": "agent-lead-1", "role": "lead"}, {"id": "agent-dev-1", "role": "dev"}]}},
    "jobs": [{"id": "sync", "kind": "reconcile", "schedule": "0 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "items": [{"issue": "ISS-1"}, {"issue": "ISS-9", "lost": true}]}],
    "expect": {"items": {"ISS-9": {"not_found": 1, "queries": 1},
                         "ISS-1": {"not_found": 0, "queries": 2}}}
  })");
  EXPECT_EQ(failures(doc), Lines{});
  doc["expect"]["items"]["ISS-9"]["not_found"] = 2;
  doc["expect"]["items"]["ISS-1"]["not_found"] = 1;
  EXPECT_EQ(failures(doc), (Lines{"expect /expect/items/ISS-1/not_found: expected 1, got 0",
                                  "expect /expect/items/ISS-9/not_found: expected 2, got 1"}));
}

// Garbage replaces the state file at 10:30 and the worker restarts at
// 10:31: the boot finds the store corrupt and keeps the file as it is (a
// corrupt store is never written over), so at the end the bytes are exactly
// those the damage left. The 11:00 slot still runs (regular runs go on).
TEST(Expect, DamagedFilesFailWhenTheBytesAreNotWhatTheyShouldBe) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "expect-damaged",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T11:30:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "hourly", "kind": "group", "schedule": "0 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "tasks": [{"id": "r", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T10:30:00Z", "kind": "state_corrupted", "mode": "garbage"},
               {"at": "2026-12-07T10:30:30Z", "kind": "restart", "down_for": "30s"}],
    "expect": {"damaged_files": {"retry_state.json": "kept"}}
  })");
  EXPECT_EQ(failures(doc), Lines{});
  doc["expect"]["damaged_files"]["retry_state.json"] = "changed";
  const Lines lines = failures(doc);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "expect /expect/damaged_files/retry_state.json: expected changed, got kept");
}

// The same damage: the store cannot be read back at the end, which `state`
// can say ("unreadable"); a state that says anything else fails, and so
// does "unreadable" for a store that reads back fine.
TEST(Expect, StateCanBeExpectedUnreadable) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "expect-unreadable",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T11:30:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "hourly", "kind": "group", "schedule": "0 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "tasks": [{"id": "r", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T10:30:00Z", "kind": "state_corrupted", "mode": "garbage"}],
    "expect": {"jobs": {"hourly": {"state": "unreadable"}}}
  })");
  EXPECT_EQ(failures(doc), Lines{});
  doc["expect"]["jobs"]["hourly"]["state"] = {{"retry_status", "ok"}};
  const Lines lines = failures(doc);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("expect /expect/jobs/hourly/state: expected the job's durable state, "
                           "got store unreadable: ",
                           0),
            0u)
      << lines[0];
  json fine = weekly();
  fine["expect"]["jobs"]["weekly"]["state"] = "unreadable";
  EXPECT_EQ(failures(fine), (Lines{"expect /expect/jobs/weekly/state: expected unreadable, got "
                                   "readable (retry_status ok)"}));
}

// A fault whose exact damage the file cannot take is not applied
// (store_corrupt_injected says applied: false): the file was never damaged,
// so it can be expected neither kept nor changed. A file that does not exist
// yet is put in place already damaged, and nothing rewrites it.
TEST(Expect, ADamagedFileTheWorldNeverDamagedFails) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "expect-undamaged",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T10:30:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "hourly", "kind": "group", "schedule": "0 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "tasks": [{"id": "r", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T09:45:00Z", "kind": "state_corrupted",
                "file": "retry_state.json", "mode": "truncated", "cut": 1000000},
               {"at": "2026-12-07T09:45:00Z", "kind": "state_corrupted", "file": "jobs.json",
                "mode": "garbage"}],
    "expect": {"damaged_files": {"retry_state.json": "kept", "jobs.json": "kept"}}
  })");
  EXPECT_EQ(failures(doc), (Lines{"expect /expect/damaged_files/retry_state.json: expected kept, "
                                  "got never damaged (the fault applied nothing)"}));
}

}  // namespace
}  // namespace rehearse::sim
