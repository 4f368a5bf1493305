// Goal: the world runner (sim/world/world.hpp) turns a scenario into one faithful
// simulated world around the real core, and its report (sim/report/report.hpp)
// judges the run: the retry chain of a weekly group job through a quota
// outage, determinism of the trace under one seed (and independence from the
// seed when no fault is random), counters that survive a restart in the
// middle of a retry chain, the event bound, expectation failures named by
// their JSON pointer, expected violations, a runner swapped through the
// factory hook that a named invariant catches, the messenger's calls, and
// invariants left unchecked (reported; failures under strict).
// Method: small scenario JSON documents written here, loaded through the
// real loader, run with run_scenario(); assertions read the monitors'
// tallies, the violations, the trace (events and hash) and the durable
// state read back from the simulated store.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

// A weekly (Friday 17:00, low-frequency) group job under "auto": retries 30,
// 60 and 120 minutes after each failure. The model's quota runs out 30 s
// before the slot for two hours: 17:00, 17:30 and 18:30 fail, the 120-minute
// retry at 20:30 delivers.
json weekly_scenario() {
  return json::parse(R"({
    "format": 1,
    "scenario": "weekly-quota-2h-test",
    "start": "2026-12-04T16:00:00Z",
    "until": "2026-12-05T00:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{
      "id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
      "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]
    }],
    "faults": [{"at": "2026-12-04T16:59:30Z", "for": "2h", "kind": "quota_exhausted"}],
    "expect": {
      "jobs": {"weekly": {"delivered_slots": 1, "failed_slots": 0, "in_flight_slots": 0,
                          "retries": 3, "runs": 4, "calls": 4, "final_status": "ok",
                          "notifications": {"retry_scheduled": 3, "recovered": 1}}},
      "services": {"model-api": {"calls": 4}}
    }
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

ScenarioRunResult run(const Scenario& scenario, RunOptions options = {}) {
  auto result = run_scenario(scenario, std::move(options));
  if (!result.ok()) {
    ADD_FAILURE() << result.error().describe();
    return ScenarioRunResult{};
  }
  return std::move(result).value();
}

std::string violations_text(const ScenarioRunResult& r) {
  std::string text;
  for (const Violation& v : r.violations) text += v.invariant + ": " + v.message + "\n";
  for (const std::string& e : r.errors) text += "error: " + e + "\n";
  return text;
}

std::int64_t job_tally(const ScenarioRunResult& r, const std::string& job, const std::string& key) {
  return r.tallies.at("jobs").at(job).at(key).get<std::int64_t>();
}

// The instants of the trace events of one type for one job.
std::vector<std::string> instants(const ScenarioRunResult& r, const std::string& type,
                                  const std::string& job) {
  std::vector<std::string> out;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == type && e.job == job) out.push_back(format_instant(e.t));
  }
  return out;
}

TEST(World, WeeklyQuotaOutageRecoversOnThe120MinuteRetry) {
  const Scenario scenario = load(weekly_scenario());
  const ScenarioRunResult r = run(scenario);
  EXPECT_EQ(r.outcome, RunOutcome::completed);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_EQ(job_tally(r, "weekly", "delivered_slots"), 1);
  EXPECT_EQ(job_tally(r, "weekly", "retries"), 3);
  // Each run starts when its retry is due: 17:00, +30m, +60m, +120m.
  const auto starts = instants(r, "run_started", "weekly");
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(starts[0], "2026-12-04T17:00:00Z");
  EXPECT_EQ(starts[1].substr(0, 16), "2026-12-04T17:30");
  EXPECT_EQ(starts[2].substr(0, 16), "2026-12-04T18:30");
  EXPECT_EQ(starts[3].substr(0, 16), "2026-12-04T20:30");
  // The durable state says recovered.
  ASSERT_EQ(r.final_states.size(), 1u);
  ASSERT_TRUE(r.final_states[0].state.has_value());
  EXPECT_EQ(r.final_states[0].state->retry_status, RetryStatus::ok);
  EXPECT_EQ(r.final_states[0].state->retry_count, 0);
  // The world's own events frame the run.
  EXPECT_EQ(r.trace.events().front().type, "process_boot");
  EXPECT_EQ(r.trace.events().back().type, "run_end");
  EXPECT_EQ(instants(r, "fault_start", "").size(), 1u);
  EXPECT_EQ(instants(r, "fault_end", "").size(), 1u);
  // Every expectation of the file holds.
  const Verdict verdict = judge_run(scenario, r, std::nullopt);
  EXPECT_TRUE(verdict.held()) << format_findings(r, verdict);
}

// A scenario that declares no messenger still notifies: the world supplies
// the implicit target "ops", which accepts every notice (none is refused as
// a channel nobody declared), and validate says so in a note.
TEST(World, WithoutADeclaredMessengerNoticesGoToTheImplicitTarget) {
  const std::string path = std::string(REHEARSE_SOURCE_DIR) + "/scenarios/token-no-reissue.json";
  const ScenarioCheck check = check_scenario_file(path);
  ASSERT_TRUE(check.valid());
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_NE(check.notes[0].find("no messenger declared"), std::string::npos) << check.notes[0];
  EXPECT_TRUE(check.flags.empty());
  const ScenarioRunResult r = run(*check.scenario);
  int delivered = 0;
  for (const TraceEvent& e : r.trace.events()) {
    EXPECT_NE(e.type, "message_refused") << e.data.dump();
    if (e.type == "message_delivered") {
      EXPECT_EQ(e.str("target"), "ops");
      ++delivered;
    }
  }
  EXPECT_GT(delivered, 0);
}

TEST(World, SameSeedTwiceGivesTheSameTraceHash) {
  json doc = weekly_scenario();
  // A random fault (half of the calls fail) makes the seed matter.
  doc["faults"].push_back(json::parse(
      R"({"at": "2026-12-04T19:00:00Z", "for": "3h", "kind": "http_errors",
          "service": "model-api", "status": 503, "rate": 0.5})"));
  doc.erase("expect");
  const Scenario scenario = load(doc);
  RunOptions options;
  options.seed = 42;
  const ScenarioRunResult a = run(scenario, options);
  const ScenarioRunResult b = run(scenario, options);
  EXPECT_EQ(a.seed, 42u);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.trace.to_jsonl(), b.trace.to_jsonl());
  EXPECT_FALSE(compare_traces(a.trace, b.trace).has_value());
  // The hash is FNV-1a 64 over the JSON Lines bytes, in hex.
  EXPECT_EQ(a.trace_hash, hex64(fnv1a64(a.trace.to_jsonl())));
}

TEST(World, WithoutRandomFaultsTheSeedDoesNotChangeTheTrace) {
  const Scenario scenario = load(weekly_scenario());
  RunOptions one;
  one.seed = 1;
  RunOptions two;
  two.seed = 2;
  const ScenarioRunResult a = run(scenario, one);
  const ScenarioRunResult b = run(scenario, two);
  EXPECT_EQ(a.seed, 1u);
  EXPECT_EQ(b.seed, 2u);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  const auto differ = compare_traces(a.trace, b.trace);
  EXPECT_FALSE(differ.has_value()) << (differ ? differ->message : "");
}

// state_corrupted with exact damage does the same to the same bytes under every
// seed: `flips` XOR each listed byte with 0x01; a `cut` the file cannot take
// (not shorter than it) is refused and reported, never replaced by other
// damage.
TEST(World, ExactStateDamageIsTheSameUnderEverySeed) {
  json doc = weekly_scenario();
  doc.erase("expect");
  doc["faults"].push_back(json::parse(
      R"({"at": "2026-12-04T16:30:00Z", "kind": "state_corrupted", "mode": "flip",
          "flips": [0, 3]})"));
  const Scenario scenario = load(doc);
  RunOptions one;
  one.seed = 1;
  RunOptions two;
  two.seed = 77;
  const ScenarioRunResult a = run(scenario, one);
  const ScenarioRunResult b = run(scenario, two);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  std::vector<std::int64_t> offsets;
  for (const TraceEvent& e : a.trace.events()) {
    if (e.type == "disk_corrupted") {
      EXPECT_EQ(e.str("path"), "/srv/state/retry_state.journal");
      offsets.push_back(e.num("offset"));
    }
  }
  EXPECT_EQ(offsets, (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(a.store_corrupt);  // the header's first byte is flipped

  json too_long = weekly_scenario();
  too_long.erase("expect");
  too_long["faults"].push_back(json::parse(
      R"({"at": "2026-12-04T16:30:00Z", "kind": "state_corrupted", "mode": "truncated",
          "cut": 1000000})"));
  const ScenarioRunResult c = run(load(too_long));
  bool refused = false;
  for (const TraceEvent& e : c.trace.events()) {
    if (e.type != "store_corrupt_injected") continue;
    refused = true;
    EXPECT_FALSE(e.data.at("applied").get<bool>());
    EXPECT_NE(e.str("error").find("not shorter than the file"), std::string::npos)
        << e.str("error");
  }
  EXPECT_TRUE(refused);
  EXPECT_FALSE(c.store_corrupt);
}

TEST(World, RestartInTheMiddleOfARetryChainKeepsTheCounters) {
  json doc = weekly_scenario();
  // Down from 18:00 to 18:10: between the 17:30 retry and the 18:30 one.
  doc["faults"].push_back(
      json::parse(R"({"at": "2026-12-04T18:00:00Z", "kind": "restart", "down_for": "10m"})"));
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_EQ(instants(r, "process_crash", "").size(), 1u);
  EXPECT_EQ(instants(r, "process_boot", "").size(), 2u);
  // The chain goes on where it was: retries 2 and 3 at their instants, the
  // third failure's delay is the 120-minute one (the counter was not reset).
  const auto starts = instants(r, "run_started", "weekly");
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(starts[2].substr(0, 16), "2026-12-04T18:30");
  EXPECT_EQ(starts[3].substr(0, 16), "2026-12-04T20:30");
  std::vector<std::int64_t> attempts;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == "retry_scheduled" && e.job == "weekly") attempts.push_back(e.num("attempt"));
  }
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{1, 2, 3}));
  const Verdict verdict = judge_run(scenario, r, std::nullopt);
  EXPECT_TRUE(verdict.held()) << format_findings(r, verdict);
}

TEST(World, ExpectationFailuresNameTheirPointer) {
  json doc = weekly_scenario();
  doc["expect"]["jobs"]["weekly"]["retries"] = 1;
  doc["expect"]["jobs"]["weekly"]["final_status"] = "retry_exhausted";
  doc["expect"]["jobs"]["weekly"]["max_delay"] = "0s";
  doc["expect"]["notifications"] = {{"retry_exhausted", 2}};
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  const std::vector<ExpectFailure> failures = check_expectations(scenario, r);
  std::vector<std::string> lines;
  for (const ExpectFailure& f : failures) lines.push_back(f.describe());
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "expect /expect/jobs/weekly/retries: expected 1, got 3",
                       "expect /expect/jobs/weekly/final_status: expected retry_exhausted, got ok",
                       "expect /expect/notifications/retry_exhausted: expected 2, got 0",
                   }));
  const Verdict verdict = judge_run(scenario, r, std::nullopt);
  EXPECT_FALSE(verdict.held());
  EXPECT_NE(
      format_findings(r, verdict).find("replay: rehearse run test.json --seed 1 --trace t.jsonl"),
      std::string::npos);
}

TEST(World, TheEventBoundFailsTheRunWithBoundedRun) {
  json doc = weekly_scenario();
  doc["queue"] = {{"max_events", 5}};
  doc.erase("expect");
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  // Whichever sees it first ends the run: the simulator's own bound on
  // executed events, or the monitors counting trace events against it.
  EXPECT_TRUE(r.outcome == RunOutcome::bounded_run || r.outcome == RunOutcome::stopped);
  EXPECT_LT(r.end_ms, scenario.until_ms);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].invariant, "bounded_run");
  EXPECT_FALSE(judge_run(scenario, r, std::nullopt).held());
}

// The deliberately faulty runner of this test: the core's group job, then the
// delivery sent once more to every target, bypassing the per-slot guard.
class DoubleDelivery final : public JobRunner {
 public:
  DoubleDelivery(std::unique_ptr<JobRunner> core, Notifier& notifier,
                 std::vector<std::string> targets)
      : core_(std::move(core)), notifier_(notifier), targets_(std::move(targets)) {}

  Task<rehearse::RunOutcome> run(RunContext context) override {
    rehearse::RunOutcome outcome = co_await core_->run(context);
    if (outcome.kind == RunOutcomeKind::success) {
      for (const std::string& target : targets_) {
        json message{{"kind", "delivery"},
                     {"job_id", context.job_id},
                     {"slot", format_instant(context.slot)},
                     {"attempt", context.attempt},
                     {"items", json::array()}};
        Status sent = co_await notifier_.send(target, std::move(message));
        (void)sent;
      }
    }
    co_return outcome;
  }

 private:
  std::unique_ptr<JobRunner> core_;
  Notifier& notifier_;
  std::vector<std::string> targets_;
};

RunnerFactory double_delivery_factory(int* built) {
  return [built](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
    if (job.kind != JobKind::group) return nullptr;  // the core's runner
    ++*built;
    auto core = make_default_runner(job, ports);
    if (!core.ok()) return nullptr;
    return std::make_unique<DoubleDelivery>(std::move(core).value(), ports.notifier, job.targets);
  };
}

TEST(World, AFaultyRunnerFromTheFactoryMakesItsInvariantFire) {
  json doc = weekly_scenario();
  doc.erase("expect");
  doc["until"] = "2026-12-19T00:00:00Z";  // three weekly slots, a double delivery in each
  const Scenario scenario = load(doc);
  int built = 0;
  RunOptions options;
  options.runner_factory = double_delivery_factory(&built);
  const ScenarioRunResult r = run(scenario, options);
  EXPECT_GE(built, 1);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_EQ(r.violations[0].invariant, "no_duplicate_delivery") << violations_text(r);
  // The run does not stop at the first violation: it goes on to `until` and
  // records every one; the first of each is reported with the event that showed
  // it.
  EXPECT_EQ(r.outcome, RunOutcome::completed);
  EXPECT_EQ(r.end_ms, scenario.until_ms);
  EXPECT_LT(r.violations[0].event_index, r.trace.size());
  EXPECT_GE(r.violation_counts.at("no_duplicate_delivery"), 2u) << violations_text(r);
  EXPECT_EQ(r.all_violations.size(), r.violation_counts.at("no_duplicate_delivery"));
  EXPECT_EQ(r.all_violations.front().event_index, r.violations[0].event_index);
  EXPECT_LT(r.all_violations.front().event_index, r.all_violations.back().event_index);
  EXPECT_EQ(r.violations_dropped, 0u);
  const Verdict verdict = judge_run(scenario, r, std::nullopt);
  EXPECT_FALSE(verdict.held());
  EXPECT_NE(format_findings(r, verdict).find("(first of "), std::string::npos);

  // Bounded: beyond max_violations they are counted, not kept.
  RunOptions bounded = options;
  bounded.max_violations = 1;
  const ScenarioRunResult b = run(scenario, bounded);
  EXPECT_EQ(b.all_violations.size(), 1u);
  EXPECT_EQ(b.violations_dropped + 1, b.violation_counts.at("no_duplicate_delivery"));

  // On request, the first unexpected violation still stops the run.
  RunOptions stopping = options;
  stopping.stop_on_violation = true;
  const ScenarioRunResult s = run(scenario, stopping);
  EXPECT_EQ(s.outcome, RunOutcome::stopped);
  EXPECT_LT(s.end_ms, scenario.until_ms);

  // The same run with the core's runner holds: the alarm is about the bug.
  const ScenarioRunResult clean = run(scenario);
  EXPECT_TRUE(clean.violations.empty()) << violations_text(clean);
}

TEST(World, ExpectedViolationsPassOnlyWhenExactlyThoseFire) {
  json doc = weekly_scenario();
  doc.erase("expect");
  doc["expect"] = {{"violations", {"no_duplicate_delivery"}}};
  const Scenario expecting = load(doc);
  int built = 0;
  RunOptions options;
  options.runner_factory = double_delivery_factory(&built);
  const ScenarioRunResult faulty = run(expecting, options);
  // An expected invariant does not stop the run.
  EXPECT_EQ(faulty.outcome, RunOutcome::completed);
  const Verdict held = judge_run(expecting, faulty, std::nullopt);
  EXPECT_TRUE(held.held()) << format_findings(faulty, held);
  EXPECT_EQ(held.expected_seen.size(), 1u);

  // The core's runner does not fire it: the expectation is then a failure.
  const ScenarioRunResult clean = run(expecting);
  const Verdict missing = judge_run(expecting, clean, std::nullopt);
  EXPECT_FALSE(missing.held());
  EXPECT_EQ(missing.expected_missing, (std::vector<std::string>{"no_duplicate_delivery"}));
}

TEST(World, ADeterminismViolationFailsTheVerdict) {
  const Scenario scenario = load(weekly_scenario());
  const ScenarioRunResult r = run(scenario);
  const Violation differs{"deterministic", 3, scenario.start_ms, "the traces differ at line 4"};
  const Verdict verdict = judge_run(scenario, r, differs);
  EXPECT_FALSE(verdict.held());
  ASSERT_EQ(verdict.violations.size(), 1u);
  EXPECT_EQ(verdict.violations[0].invariant, "deterministic");
}

TEST(World, TraceSinkSeesEveryEventInOrder) {
  const Scenario scenario = load(weekly_scenario());
  std::vector<std::size_t> indices;
  RunOptions options;
  options.trace_sink = [&indices](const TraceEvent&, std::size_t index) {
    indices.push_back(index);
  };
  const ScenarioRunResult r = run(scenario, options);
  ASSERT_EQ(indices.size(), r.trace.size());
  for (std::size_t i = 0; i < indices.size(); ++i) ASSERT_EQ(indices[i], i);
}

TEST(World, AnEmptyScheduleOverrideIsAConfigErrorInTheJobsState) {
  json doc = weekly_scenario();
  doc["env"] = {{"WEEKLY_CRON", ""}};
  doc["jobs"][0]["schedule_env"] = "WEEKLY_CRON";
  doc.erase("expect");
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  // Never a fallback to the default schedule: the job does not run at all.
  EXPECT_TRUE(instants(r, "run_started", "weekly").empty());
  ASSERT_TRUE(r.final_states[0].state.has_value());
  EXPECT_EQ(r.final_states[0].state->retry_status, RetryStatus::failed);
  EXPECT_EQ(r.final_states[0].state->failure_class, FailureClass::config);
  EXPECT_EQ(r.final_states[0].state->next_action, NextAction::manual_review);
}

// An override that is no valid cron (`61` minutes) is a config error: the
// real core never runs the job, and the monitors, reading the override as
// invalid by their own rules, judge that (nothing left unchecked).
TEST(World, AnInvalidScheduleOverrideNeverRunsAndIsJudged) {
  json doc = weekly_scenario();
  doc["env"] = {{"WEEKLY_CRON", "61 * * * *"}};
  doc["jobs"][0]["schedule_env"] = "WEEKLY_CRON";
  doc.erase("expect");
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_TRUE(r.tallies["unchecked"].empty()) << r.tallies["unchecked"].dump();
  EXPECT_TRUE(instants(r, "queue_add", "weekly").empty());
}

// `L`, `dL` and `d#n` (docs/cron.md) on the real core over a quarter: the
// monitors' own matcher judges every hand-out (nothing unchecked, nothing
// fires) and each job ran once a month.
TEST(World, LastDayAndNthWeekdaySchedulesAreJudgedOnTheRealCore) {
  const json doc = json::parse(R"({
    "format": 1, "scenario": "day-forms",
    "start": "2027-01-01T00:00:00Z", "until": "2027-04-01T00:00:00Z",
    "services": {"brokerage": {}},
    "jobs": [
      {"id": "month-end", "kind": "fetch", "schedule": "0 9 L * *"},
      {"id": "last-friday", "kind": "fetch", "schedule": "30 9 * * FRIL"},
      {"id": "first-monday", "kind": "fetch", "schedule": "0 10 * * MON#1"}
    ]
  })");
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_TRUE(r.tallies["unchecked"].empty()) << r.tallies["unchecked"].dump();
  using V = std::vector<std::string>;
  EXPECT_EQ(instants(r, "queue_take", "month-end"),
            (V{"2027-01-31T09:00:00Z", "2027-02-28T09:00:00Z", "2027-03-31T09:00:00Z"}));
  EXPECT_EQ(instants(r, "queue_take", "last-friday"),
            (V{"2027-01-29T09:30:00Z", "2027-02-26T09:30:00Z", "2027-03-26T09:30:00Z"}));
  EXPECT_EQ(instants(r, "queue_take", "first-monday"),
            (V{"2027-01-04T10:00:00Z", "2027-02-01T10:00:00Z", "2027-03-01T10:00:00Z"}));
}

// A publish job (model/publish_job.hpp) through the world: one model call,
// then one delivery per target through the per-(job, slot) ledger. Target
// "b" refuses the 10:00 post; the retry 15 minutes later resumes the post
// from the ledger's outbox (no second model call) and sends it to "b" only.
json publish_scenario() {
  return json::parse(R"({
    "format": 1, "scenario": "publish-test",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T10:50:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["a", "b"]}},
    "jobs": [{"id": "post", "kind": "publish", "schedule": "0 10 * * *",
              "idempotency_key": "{job}:{slot}",
              "retry_policy": {"max": 2, "backoff_sec": 900}, "targets": ["a", "b"]}],
    "faults": [{"at": "2026-12-07T09:59:00Z", "for": "10m", "kind": "messenger_down",
                "targets": ["b"]}]
  })");
}

std::int64_t delivered_to(const ScenarioRunResult& r, const std::string& target) {
  std::int64_t n = 0;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == "message_delivered" && e.str("kind") == "delivery" && e.str("target") == target) {
      ++n;
    }
  }
  return n;
}

TEST(World, APublishJobRetriesOnlyTheTargetThatRefused) {
  const Scenario scenario = load(publish_scenario());
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_EQ(delivered_to(r, "a"), 1);
  EXPECT_EQ(delivered_to(r, "b"), 1);
  EXPECT_EQ(job_tally(r, "post", "delivered_slots"), 1);
  EXPECT_EQ(job_tally(r, "post", "retries"), 1);
  // One model call: the retry resumed the decided post.
  EXPECT_EQ(r.tallies.at("services").at("model-api").at("calls").get<std::int64_t>(), 1);
  ASSERT_TRUE(r.final_states[0].state.has_value());
  EXPECT_EQ(r.final_states[0].state->retry_status, RetryStatus::ok);
}

TEST(World, APublishJobWhoseModelCallFailsSendsNothing) {
  json doc = publish_scenario();
  doc["faults"] =
      json::parse(R"([{"at": "2026-12-07T09:59:00Z", "for": "50m", "kind": "quota_exhausted"}])");
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_EQ(delivered_to(r, "a"), 0);
  EXPECT_EQ(delivered_to(r, "b"), 0);
  // 10:00, 10:15 and 10:30 all fail: the budget of 2 is spent.
  EXPECT_EQ(job_tally(r, "post", "runs"), 3);
  ASSERT_TRUE(r.final_states[0].state.has_value());
  EXPECT_EQ(r.final_states[0].state->retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(r.final_states[0].state->failure_class, FailureClass::rate_limit);
}

// A daily `call` job calling two services of the user's own, "billing-api"
// then "ledger-api", once at 10:00; a fault on one of them covers 10:00-11:00
// and so every run (10:00 and its retries 5 and 10 minutes later).
json call_scenario(const json& fault) {
  json doc = json::parse(R"({
    "format": 1,
    "scenario": "call-test",
    "start": "2026-12-07T09:30:00Z",
    "until": "2026-12-07T11:30:00Z",
    "services": {"billing-api": {}, "ledger-api": {}},
    "jobs": [{
      "id": "sync", "kind": "call", "schedule": "0 10 * * *",
      "retry_policy": {"max": 2, "backoff_sec": 300},
      "calls": [{"service": "billing-api", "method": "GET", "path": "/invoices"},
                {"service": "ledger-api", "method": "POST", "path": "/entries"}]
    }]
  })");
  doc["faults"] = json::array({fault});
  return doc;
}

TEST(World, ACallJobsFailureClassFollowsTheReply) {
  struct Case {
    const char* name;
    const char* fault;  // at 09:59:30 for 1h
    FailureClass failure_class;
    RetryStatus status;
    std::int64_t runs;
    std::int64_t billing_calls;
    std::int64_t ledger_calls;
  };
  const std::vector<Case> cases{
      // 503: provider_5xx, retried until the budget (2) is spent.
      {"503", R"({"kind": "http_errors", "service": "ledger-api", "status": 503})",
       FailureClass::provider_5xx, RetryStatus::retry_exhausted, 3, 3, 3},
      // 404: not_found, not retryable: one run, no retry.
      {"404", R"({"kind": "http_errors", "service": "ledger-api", "status": 404})",
       FailureClass::not_found, RetryStatus::failed, 1, 1, 1},
      // The first failing call ends the run: ledger-api is never called.
      {"first call fails", R"({"kind": "http_errors", "service": "billing-api", "status": 404})",
       FailureClass::not_found, RetryStatus::failed, 1, 1, 0},
      {"quota", R"({"kind": "quota_exhausted", "service": "ledger-api"})", FailureClass::rate_limit,
       RetryStatus::retry_exhausted, 3, 3, 3},
      {"timeouts", R"({"kind": "timeouts", "service": "ledger-api"})", FailureClass::timeout,
       RetryStatus::retry_exhausted, 3, 3, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json fault = json::parse(c.fault);
    fault["at"] = "2026-12-07T09:59:30Z";
    fault["for"] = "1h";
    const Scenario scenario = load(call_scenario(fault));
    const ScenarioRunResult r = run(scenario);
    EXPECT_TRUE(r.violations.empty()) << violations_text(r);
    EXPECT_EQ(job_tally(r, "sync", "runs"), c.runs);
    EXPECT_EQ(job_tally(r, "sync", "failed_slots"), 1);
    ASSERT_EQ(r.final_states.size(), 1u);
    ASSERT_TRUE(r.final_states[0].state.has_value());
    EXPECT_EQ(r.final_states[0].state->failure_class, c.failure_class);
    EXPECT_EQ(r.final_states[0].state->retry_status, c.status);
    const json& services = r.tallies.at("services");
    EXPECT_EQ(services.at("billing-api").at("calls").get<std::int64_t>(), c.billing_calls);
    EXPECT_EQ(services.value("ledger-api", json::object()).value("calls", std::int64_t{0}),
              c.ledger_calls);
  }
}

TEST(World, ACallJobRoutesByServiceNameAndLabelsItsCalls) {
  // Healthy: both calls answer 200, in the order declared, each labelled with
  // its method and path and attributed to the job.
  json doc = call_scenario(json::object());
  doc.erase("faults");
  const ScenarioRunResult r = run(load(doc));
  EXPECT_TRUE(r.violations.empty()) << violations_text(r);
  EXPECT_EQ(job_tally(r, "sync", "delivered_slots"), 1);
  std::vector<std::string> calls;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type != "service_reply" || e.job != "sync") continue;
    calls.push_back(e.service + " " + e.data.at("operation").get<std::string>() + " " +
                    e.data.at("target").get<std::string>() + " " +
                    std::to_string(e.data.at("status").get<int>()));
  }
  EXPECT_EQ(calls, (std::vector<std::string>{"billing-api GET /invoices 200",
                                             "ledger-api POST /entries 200"}));
}

TEST(World, WhatThisBuildCannotRunIsABadInputError) {
  // Every job kind of format 1 runs; an HTTP error window on the messenger is
  // not a fault this world can inject (messenger_down is). The loader refuses
  // it with the fault's pointer (so `validate` does too), and a scenario built
  // in code with it is refused by the run instead of running something else.
  EXPECT_TRUE(world_supports(JobKind::reconcile));
  json doc = weekly_scenario();
  doc["faults"].push_back(json::parse(
      R"({"at": "2026-12-04T18:00:00Z", "for": "1h", "kind": "http_errors",
          "service": "messenger", "status": 503})"));
  auto loaded = load_scenario_json(doc.dump(), "test.json");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().where, "test.json:/faults/1/service");
  EXPECT_NE(loaded.error().message.find("cannot target the messenger"), std::string::npos)
      << loaded.error().message;

  Scenario scenario = load(weekly_scenario());
  FaultSpec fault = scenario.faults.front();
  fault.kind = FaultKind::http_errors;
  fault.service = ServiceKind::messenger;
  fault.http_status = 503;
  fault.pointer = "/faults/1";
  scenario.faults.push_back(fault);
  auto result = run_scenario(scenario);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::unsupported);
  EXPECT_EQ(result.error().where, "test.json:/faults/1/service");
  EXPECT_NE(result.error().message.find("cannot target the messenger"), std::string::npos);
}

TEST(World, SummaryTableIsAlignedAndNamesTheHash) {
  const Scenario scenario = load(weekly_scenario());
  const ScenarioRunResult r = run(scenario);
  const SummaryRow row = summarize(scenario, r, 12.0, true);
  EXPECT_EQ(row.delivered, 1);
  EXPECT_EQ(row.retries, 3);
  EXPECT_EQ(row.span_ms, 8 * kHourMs);
  const std::string table = format_table({row});
  const auto newline = table.find('\n');
  ASSERT_NE(newline, std::string::npos);
  const std::string header = table.substr(0, newline);
  const std::string line = table.substr(newline + 1, table.find('\n', newline + 1) - newline - 1);
  // Columns line up: the trace hash starts where its header does.
  EXPECT_EQ(header.find("trace"), line.find(r.trace_hash));
  EXPECT_EQ(r.trace_hash.size(), 16u);
}

// The messenger records no service_call: its calls are its sends, delivered or
// refused. In weekly_scenario: 17:00, 17:30 and 18:30 fail, each sending a
// failure notice and a retry_scheduled notification to "team"; 20:30 delivers
// and sends `recovered`: 3 * 2 + 2 = 8. Counted as 0 before, so 0 passed.
TEST(World, MessengerCallsAreItsSends) {
  json doc = weekly_scenario();
  doc["expect"]["services"]["messenger"] = {{"calls", 8}};
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  EXPECT_EQ(messenger_calls(r), 8);
  EXPECT_TRUE(check_expectations(scenario, r).empty())
      << format_findings(r, judge_run(scenario, r, std::nullopt));
  doc["expect"]["services"]["messenger"] = {{"calls", 0}};
  const Scenario zero = load(doc);
  const std::vector<ExpectFailure> failures = check_expectations(zero, run(zero));
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_EQ(failures[0].describe(), "expect /expect/services/messenger/calls: expected 0, got 8");
  EXPECT_EQ(failures[0].expected_value, json(0));  // numbers for --json
  EXPECT_EQ(failures[0].got_value, json(8));
}

// A cron the monitors cannot read leaves invariants unchecked: reported in the
// verdict (not a failure), a failure under strict, and the row reads "ok*".
TEST(World, UncheckedInvariantsAreReportedAndFailUnderStrict) {
  json doc = weekly_scenario();
  doc["start"] = "2026-12-25T16:00:00Z";
  doc["until"] = "2026-12-26T00:00:00Z";
  doc["jobs"][0]["schedule"] = "0 17 * * 55L";  // cron-parser: the last Friday
  doc["faults"] = json::array();
  doc["expect"] = {{"jobs", {{"weekly", {{"delivered_slots", 1}}}}}};
  const Scenario scenario = load(doc);
  const ScenarioRunResult r = run(scenario);
  const Verdict lenient = judge_run(scenario, r, std::nullopt);
  EXPECT_TRUE(lenient.held()) << format_findings(r, lenient);
  ASSERT_EQ(lenient.unchecked.size(), 2u);
  SummaryRow row = summarize(scenario, r, 1.0, lenient.held());
  row.notes = verdict_notes(lenient);
  EXPECT_EQ(row.result(), "ok*");
  EXPECT_NE(format_table({row}).find("* weekly-quota-2h-test: invariant schedule_kept not checked"),
            std::string::npos);
  const Verdict strict = judge_run(scenario, r, std::nullopt, /*strict=*/true);
  EXPECT_FALSE(strict.held());
  EXPECT_NE(format_findings(r, strict).find("--strict: invariant schedule_kept not checked"),
            std::string::npos);
}

}  // namespace
}  // namespace rehearse::sim
