// Goal: the shrinker (sim/check/shrink.hpp) turns a failing scenario into a
// small one that still violates the same invariant, deterministically, within
// its budget, and writes it as a scenario `rehearse run` reproduces.
// Method: (a) a fake probe whose rule is known exactly ("violates iff a
// quota_exhausted fault of at least 10 minutes covers 10:00, a restart exists
// and the job digest is there"; the real loader decides what loads) over a
// document with 12 faults, 3 jobs and unused services: the result must be
// exactly the two needed faults and the one job at their minimal sizes. (b) a real run: the
// test-only store that resets its counters at boot (tests/variants/seed_bugs.hpp, through
// RunOptions::store_decorator) breaks retries_bounded in a scenario with noise
// faults; the shrunk file replays to the same violation with the variant and
// not with the core.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/check/check.hpp"
#include "sim/check/shrink.hpp"
#include "sim/cli/shrink_case.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"
#include "sim/world/orchestrator.hpp"
#include "tests/variants/seed_bugs.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

TimeMs instant(const char* text) { return parse_instant(text).value(); }

// Three group jobs (one of them with three tasks), model-api, messenger with
// two targets, an unused brokerage and orchestrator, and 12 faults of which
// two matter to the fake rule: the quota outage 09:55-10:55 and the restart
// at 12:00 (first in the file, out of time order).
json fake_document() {
  return json::parse(R"({
    "format": 1, "scenario": "noisy-day", "description": "a day with many faults",
    "start": "2026-12-07T08:00:00Z", "until": "2026-12-07T20:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team", "ops"]},
                 "brokerage": {}, "orchestrator": {"issues": [{"id": "ISS-1", "status": "todo"}]}},
    "jobs": [
      {"id": "digest", "kind": "group", "schedule": "0 10 * * *", "retry_policy": "auto",
       "tasks": [{"id": "a", "produces": "summary"}, {"id": "b", "produces": "preview"},
                 {"id": "c", "produces": "skip"}], "targets": ["team", "ops"]},
      {"id": "hourly", "kind": "group", "schedule": "0 * * * *", "retry_policy": "auto",
       "tasks": [{"id": "t", "produces": "summary"}], "targets": ["ops"]},
      {"id": "evening", "kind": "group", "schedule": "0 18 * * *", "retry_policy": "auto",
       "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": [
      {"at": "2026-12-07T12:00:00Z", "kind": "restart", "down_for": "5m"},
      {"at": "+30m", "kind": "messenger_down", "for": "20m"},
      {"at": "2026-12-07T09:00:00Z", "kind": "http_errors", "service": "model-api",
       "status": 503, "rate": 0.5, "for": "15m"},
      {"at": "2026-12-07T09:20:00Z", "kind": "token_revoked"},
      {"at": "2026-12-07T09:55:00Z", "kind": "quota_exhausted", "for": "1h"},
      {"at": "2026-12-07T10:30:00Z", "kind": "timeouts", "service": "model-api", "for": "10m"},
      {"at": "2026-12-07T11:00:00Z", "kind": "network_errors", "service": "brokerage",
       "rate": 0.3, "for": "5m"},
      {"at": "2026-12-07T13:00:00Z", "kind": "quota_exhausted", "for": "5m"},
      {"at": "2026-12-07T14:00:00Z", "kind": "issue_status", "issue": "ISS-1",
       "status": "in_progress"},
      {"at": "2026-12-07T15:00:00Z", "kind": "http_errors", "service": "orchestrator",
       "status": 500, "for": "30m"},
      {"at": "2026-12-07T16:00:00Z", "kind": "messenger_down", "targets": ["ops"]},
      {"at": "2026-12-07T17:00:00Z", "kind": "torn_write", "file": "jobs.json"}],
    "expect": {"jobs": {"digest": {"delivered_slots": 1}}}
  })");
}

// The fake rule on a loaded scenario: a quota outage of at least 10 minutes
// covering 10:00, a restart, and the job "digest" (the one that fails).
bool fake_rule(const Scenario& s) {
  const TimeMs ten = instant("2026-12-07T10:00:00Z");
  bool quota = false;
  bool restart = false;
  for (const FaultSpec& f : s.faults) {
    const TimeMs end = f.end_ms(s.until_ms);
    if (f.kind == FaultKind::quota_exhausted && f.at_ms <= ten && ten < end &&
        end - f.at_ms >= 10 * kMinuteMs) {
      quota = true;
    }
    restart |= f.kind == FaultKind::restart;
  }
  return quota && restart && s.find_job("digest") != nullptr;
}

// The real loader decides what loads; `refuse` may refuse more; the fake
// rule decides what fires. Events: a count that falls with faults and jobs.
ViolationProbe fake_probe(int* calls = nullptr,
                          std::function<bool(const Scenario&)> refuse = nullptr) {
  return [calls, refuse](const json& doc) -> Result<ProbeOutcome> {
    if (calls != nullptr) ++*calls;
    auto s = load_scenario_json(doc.dump(), "candidate.json");
    if (!s) return s.error();
    if (refuse && refuse(*s)) return make_error(ErrorCode::invalid_argument, "refused");
    ProbeOutcome out;
    if (fake_rule(*s)) out.fired = {"retries_bounded"};
    out.events = 100 * s->faults.size() + 10 * s->jobs.size();
    return out;
  };
}

const json* find_kind(const json& doc, const std::string& kind) {
  for (const json& f : doc["faults"]) {
    if (f["kind"] == kind) return &f;
  }
  return nullptr;
}

TEST(Shrink, KeepsExactlyTheNeededFaultsAtTheirMinimalSizes) {
  auto r = shrink_scenario(fake_document(), "retries_bounded", fake_probe());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const json& doc = r->document;
  ASSERT_EQ(doc["faults"].size(), 2u) << doc.dump(2);
  EXPECT_EQ(doc["faults"][0]["kind"], "quota_exhausted") << "faults in time order";
  const json* quota = find_kind(doc, "quota_exhausted");
  const json* restart = find_kind(doc, "restart");
  ASSERT_TRUE(quota != nullptr && restart != nullptr) << doc.dump(2);
  // Shortened to the rule's 10 minutes; it still covers 10:00 (first in time, not moved).
  EXPECT_EQ((*quota)["at"], "2026-12-07T09:55:00Z");
  EXPECT_EQ((*quota)["for"], "10m");
  // Down time lowered to 0, pulled to the quota outage's end.
  EXPECT_EQ((*restart)["down_for"], 0);
  EXPECT_EQ((*restart)["at"], "2026-12-07T10:05:00Z");
  // The span ends with the last fault.
  EXPECT_EQ(doc["until"], "2026-12-07T10:05:00Z");
  ASSERT_EQ(doc["jobs"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["id"], "digest");
  EXPECT_EQ(doc["jobs"][0]["tasks"].size(), 1u);
  EXPECT_EQ(doc["jobs"][0]["targets"].size(), 1u);
  // The services nothing uses any more are gone; those the job needs stay.
  EXPECT_FALSE(doc["services"].contains("brokerage"));
  EXPECT_FALSE(doc["services"].contains("orchestrator"));
  EXPECT_TRUE(doc["services"].contains("model-api"));
  EXPECT_EQ(doc["services"]["messenger"]["targets"].size(), 1u);
  // No expectations: the saved failure fails its replay until it is fixed.
  EXPECT_FALSE(doc.contains("expect"));
  EXPECT_EQ(r->before.faults, 12u);
  EXPECT_EQ(r->before.jobs, 3u);
  EXPECT_EQ(r->after.faults, 2u);
  EXPECT_EQ(r->after.span_ms, 2 * kHourMs + 5 * kMinuteMs);
  EXPECT_LT(r->after.events, r->before.events);
  EXPECT_FALSE(r->budget_exhausted) << r->probes << " runs";
  EXPECT_LE(r->probes, kDefaultShrinkProbes);
  // Candidates the loader refused (model-api or the messenger dropped while
  // the job needs them) were rejected, not taken for passing runs.
  EXPECT_GT(r->rejected, 0u);
}

TEST(Shrink, TheResultIsAScenarioFileThatLoadsAndNamesItsOrigin) {
  ShrinkOptions options;
  options.origin = "scenarios/noisy-day.json, seed 7";
  options.seed = 7;
  options.name = shrunk_scenario_name("noisy-day", 7, "retries_bounded");
  auto r = shrink_scenario(fake_document(), "retries_bounded", fake_probe(), options);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(options.name, "noisy-day-seed7-retries-bounded");
  const std::string text = scenario_file_text(r->document);
  auto loaded = load_scenario_json(text, "shrunk.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe() << "\n" << text;
  EXPECT_EQ(loaded->name, "noisy-day-seed7-retries-bounded");
  EXPECT_EQ(loaded->seed, 7u);
  EXPECT_TRUE(loaded->expect.violations.empty());
  const std::string description = loaded->description;
  EXPECT_NE(description.find("It fires retries_bounded"), std::string::npos) << description;
  EXPECT_NE(description.find("scenarios/noisy-day.json, seed 7"), std::string::npos);
  EXPECT_NE(description.find("retries_bounded"), std::string::npos);
  EXPECT_NE(description.find("12 faults"), std::string::npos) << description;
  EXPECT_NE(description.find("2 faults"), std::string::npos) << description;
  // The file starts like a hand-written one.
  EXPECT_EQ(text.rfind("{\n  \"format\": 1,\n  \"scenario\": ", 0), 0u) << text;
  const std::string shown = describe_shrink(*r);
  EXPECT_NE(shown.find("before: 12 faults, 3 jobs"), std::string::npos) << shown;
  EXPECT_NE(shown.find("after:  2 faults, 1 job,"), std::string::npos) << shown;
  EXPECT_NE(shown.find("2026-12-07T10:05:00Z restart down_for=0"), std::string::npos) << shown;
}

TEST(Shrink, SameInputSameOutput) {
  int calls_a = 0;
  int calls_b = 0;
  auto a = shrink_scenario(fake_document(), "retries_bounded", fake_probe(&calls_a));
  auto b = shrink_scenario(fake_document(), "retries_bounded", fake_probe(&calls_b));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(scenario_file_text(a->document), scenario_file_text(b->document));
  EXPECT_EQ(a->probes, b->probes);
  EXPECT_EQ(calls_a, calls_b);
}

TEST(Shrink, ABudgetTooSmallIsReportedAndTheResultStillViolates) {
  ShrinkOptions options;
  options.max_probes = 6;
  int calls = 0;
  auto r = shrink_scenario(fake_document(), "retries_bounded", fake_probe(&calls), options);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_TRUE(r->budget_exhausted);
  EXPECT_EQ(r->probes, 6u);
  EXPECT_EQ(calls, 7);  // the budget, then the final run of the labelled document
  EXPECT_LT(r->after.faults, r->before.faults);  // the first halves already went
  auto loaded = load_scenario_json(r->document.dump(), "cut.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(fake_rule(*loaded));
  EXPECT_NE(describe_shrink(*r).find("the budget of 6 runs ran out"), std::string::npos);
}

TEST(Shrink, CandidatesTheProbeRefusesAreRejected) {
  // A probe that refuses any restart down for less than 3 minutes: the
  // down time stops there instead of reaching 0.
  auto refuse = [](const Scenario& s) {
    for (const FaultSpec& f : s.faults) {
      if (f.kind == FaultKind::restart && f.down_for_ms < 3 * kMinuteMs) return true;
    }
    return false;
  };
  auto r = shrink_scenario(fake_document(), "retries_bounded", fake_probe(nullptr, refuse));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  const json* restart = find_kind(r->document, "restart");
  ASSERT_NE(restart, nullptr) << r->document.dump(2);
  EXPECT_EQ((*restart)["down_for"], "3m");
  EXPECT_EQ(r->document["faults"].size(), 2u);
}

TEST(Shrink, ADocumentThatDoesNotViolateIsAnError) {
  auto r = shrink_scenario(fake_document(), "state_durable", fake_probe());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("does not violate state_durable (fired: retries_bounded)"),
            std::string::npos)
      << r.error().message;
  json broken = fake_document();
  broken["jobs"][0]["kind"] = "nonsense";
  auto refused = shrink_scenario(broken, "retries_bounded", fake_probe());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().describe().find("candidate.json:/jobs/0/kind"), std::string::npos)
      << refused.error().describe();
}

// ---------------------------------------------------------------- (b) real

// Daily 10:00, 2 retries 10 min apart; the quota outage 09:59:30-10:59:30
// and the restart at 10:15 make the counter-resetting store retry 4 times
// (test_bug_variants.cpp, SeedBug004); the other faults and the hourly job
// are noise for this bug.
json real_document() {
  return json::parse(R"({
    "format": 1, "scenario": "seed-004-noisy", "seed": 3,
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T16:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [
      {"id": "job", "kind": "group", "schedule": "0 10 * * *",
       "retry_policy": {"max": 2, "backoff_sec": 600},
       "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]},
      {"id": "hourly", "kind": "group", "schedule": "30 * * * *", "retry_policy": "auto",
       "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": [
      {"at": "2026-12-07T09:40:00Z", "kind": "messenger_down", "for": "5m"},
      {"at": "2026-12-07T09:59:30Z", "kind": "quota_exhausted", "for": "1h"},
      {"at": "2026-12-07T10:15:00Z", "kind": "restart", "down_for": "2m"},
      {"at": "2026-12-07T12:10:00Z", "kind": "http_errors", "service": "model-api",
       "status": 503, "rate": 0.5, "for": "20m"},
      {"at": "2026-12-07T13:00:00Z", "kind": "timeouts", "service": "model-api",
       "rate": 0.2, "for": "10m"},
      {"at": "2026-12-07T14:00:00Z", "kind": "messenger_down", "for": "10m"},
      {"at": "2026-12-07T15:00:00Z", "kind": "network_errors", "service": "model-api",
       "for": "5m"}]
  })");
}

RunOptions resetting_store() {
  RunOptions options;
  options.store_decorator = [](StateStore& store, Disk& disk) {
    return variants::make_buggy_store(store, disk, variants::StoreBug::reset_counters_at_boot);
  };
  return options;
}

std::set<std::string> fired(const Scenario& scenario, const RunOptions& options) {
  auto run = run_scenario(scenario, options);
  EXPECT_TRUE(run.ok());
  std::set<std::string> names;
  if (run.ok()) {
    for (const Violation& v : run->violations) names.insert(v.invariant);
  }
  return names;
}

TEST(ShrinkRealRun, ACounterResettingStoreShrinksToItsTwoFaults) {
  auto original = load_scenario_json(real_document().dump(), "seed-004-noisy.json");
  ASSERT_TRUE(original.ok()) << original.error().describe();
  ASSERT_EQ(fired(*original, RunOptions{}), std::set<std::string>{}) << "the core must pass";
  ASSERT_EQ(fired(*original, resetting_store()).count("retries_bounded"), 1u);

  ShrinkOptions options;
  options.name = shrunk_scenario_name("seed-004-noisy", 3, "retries_bounded");
  auto r =
      shrink_scenario(real_document(), "retries_bounded", world_probe(resetting_store()), options);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  std::cout << describe_shrink(*r) << scenario_file_text(r->document);
  EXPECT_LE(r->document["faults"].size(), 3u) << describe_shrink(*r);
  EXPECT_NE(find_kind(r->document, "restart"), nullptr) << describe_shrink(*r);
  EXPECT_NE(find_kind(r->document, "quota_exhausted"), nullptr) << describe_shrink(*r);
  EXPECT_EQ(r->after.jobs, 1u) << describe_shrink(*r);
  EXPECT_LT(r->after.events, r->before.events) << describe_shrink(*r);
  EXPECT_LT(r->after.span_ms, r->before.span_ms) << describe_shrink(*r);

  // The file replays as a failure: with the variant the same invariant fires
  // and the verdict fails (exit 1); with the core it holds.
  auto shrunk = load_scenario_json(scenario_file_text(r->document), "shrunk.json");
  ASSERT_TRUE(shrunk.ok()) << shrunk.error().describe();
  auto replay = run_scenario(*shrunk, resetting_store());
  ASSERT_TRUE(replay.ok());
  EXPECT_FALSE(judge_run(*shrunk, *replay, std::nullopt).held()) << describe_shrink(*r);
  auto fixed = run_scenario(*shrunk, RunOptions{});
  ASSERT_TRUE(fixed.ok());
  EXPECT_TRUE(judge_run(*shrunk, *fixed, std::nullopt).held()) << describe_shrink(*r);
  EXPECT_EQ(fired(*shrunk, resetting_store()).count("retries_bounded"), 1u);
  EXPECT_EQ(fired(*shrunk, RunOptions{}).count("retries_bounded"), 0u);
}

// A bundled scenario (000's migration that loses issues) with the test-only
// reconcile client that takes a 404 for a passing error: item_queries_bounded
// fires; the shrunk file keeps one lost item and what it needs, and replays.
TEST(ShrinkRealRun, ALostIssueQueriedAgainShrinksOnTheBundledScenario) {
  std::ifstream in(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/reconcile-migration-404.json");
  const json original = json::parse(in);
  RunOptions variant;
  variant.runner_factory = [](const JobSpec& job,
                              RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
    if (job.kind != JobKind::reconcile) return nullptr;
    return variants::make_transient_404_reconcile_job(ports.clock, ports.services, ports.log,
                                                      ports.disk, ports.scenario.env,
                                                      reconcile_config_from(job));
  };
  auto r = shrink_scenario(original, "item_queries_bounded", world_probe(variant));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  std::cout << describe_shrink(*r) << scenario_file_text(r->document);
  EXPECT_LE(r->document["faults"].size(), 3u);
  EXPECT_LT(r->document["jobs"][0]["items"].size(), original["jobs"][0]["items"].size());
  EXPECT_LT(r->after.events, r->before.events);
  auto shrunk = load_scenario_json(scenario_file_text(r->document), "shrunk.json");
  ASSERT_TRUE(shrunk.ok()) << shrunk.error().describe();
  auto replay = run_scenario(*shrunk, variant);
  ASSERT_TRUE(replay.ok());
  EXPECT_FALSE(judge_run(*shrunk, *replay, std::nullopt).held()) << describe_shrink(*r);
  EXPECT_EQ(fired(*shrunk, RunOptions{}).count("item_queries_bounded"), 0u);
}

// End to end with the swarm (sim/check/check.hpp): the first seed whose
// derived world makes the counter-resetting store break retries_bounded,
// shrunk as `check --shrink-to` does, is at most 3 faults and replays.
TEST(ShrinkFailedCase, TheFirstFailingSwarmSeedShrinksToAtMostThreeFaults) {
  CheckOptions check;
  check.prepare_run = [](RunOptions& options, int) {
    options.store_decorator = resetting_store().store_decorator;
  };
  CheckCaseInput input;
  input.scenario = real_document();
  input.scenario.erase("faults");
  input.name = "seed-004-noisy";
  std::optional<CaseRecord> failed;
  for (input.seed = 1; input.seed <= 200 && !failed; ++input.seed) {
    CaseRecord r = check_case(input, check);
    if (cli::invariant_to_shrink(r) == "retries_bounded") failed = r;
  }
  ASSERT_TRUE(failed.has_value()) << "no seed of 200 broke retries_bounded";
  auto derived = derive_case(input.scenario, failed->seed, check.swarm, nullptr, input.name);
  ASSERT_TRUE(derived.ok());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "rehearse-test-shrink-swarm";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(cli::prepare_shrink_dir(dir.string()).ok());
  cli::ShrinkCaseOptions options;
  options.dir = dir.string();
  options.run_options = resetting_store();
  auto text = cli::shrink_failed_case(*failed, *derived, options);
  ASSERT_TRUE(text.ok()) << text.error().describe();
  std::cout << "seed " << failed->seed << ": " << *text;
  auto shrunk = load_scenario_file(failed->shrunk);
  ASSERT_TRUE(shrunk.ok()) << shrunk.error().describe();
  EXPECT_LE(shrunk->faults.size(), 3u) << *text;
  EXPECT_LT(shrunk->faults.size(), (*derived)["faults"].size()) << *text;
  auto replay = run_scenario(*shrunk, resetting_store());
  ASSERT_TRUE(replay.ok());
  EXPECT_FALSE(judge_run(*shrunk, *replay, std::nullopt).held()) << *text;
  EXPECT_EQ(replay->violations.front().invariant, "retries_bounded") << *text;
  std::filesystem::remove_all(dir);
}

// --shrink-to's step (sim/cli/shrink_case.hpp): the file is written under
// its name, the record points at it, the text says how to replay it.
TEST(ShrinkFailedCase, WritesTheFileAndSetsTheRecord) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "rehearse-test-shrink-case" / "out";
  std::filesystem::remove_all(dir.parent_path());
  ASSERT_TRUE(cli::prepare_shrink_dir(dir.string()).ok());  // created when missing
  CaseRecord record;
  record.scenario = "seed-004-noisy";
  record.seed = 3;
  record.verdict = CaseVerdict::fail;
  record.violations = {"deterministic", "assertion_failed", "retries_bounded", "state_durable"};
  EXPECT_EQ(cli::invariant_to_shrink(record), "retries_bounded");
  cli::ShrinkCaseOptions options;
  options.dir = dir.string();
  options.run_options = resetting_store();
  auto text = cli::shrink_failed_case(record, real_document(), options);
  ASSERT_TRUE(text.ok()) << text.error().describe();
  const std::string file = (dir / "seed-004-noisy-seed3-retries-bounded.json").string();
  EXPECT_EQ(record.shrunk, file);
  EXPECT_NE(text->find("replay: rehearse run " + file), std::string::npos) << *text;
  EXPECT_NE(text->find("before: 7 faults, 2 jobs"), std::string::npos) << *text;
  auto loaded = load_scenario_file(file);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(loaded->expect.violations.empty());
  EXPECT_NE(loaded->description.find("It fires retries_bounded"), std::string::npos);
  EXPECT_EQ(loaded->seed, 3u);
  // A path that is a file, not a directory: refused before anything runs.
  EXPECT_FALSE(cli::prepare_shrink_dir(file).ok());
  // Nothing one run can show: no shrinking, no file.
  CaseRecord only_determinism = record;
  only_determinism.shrunk.clear();
  only_determinism.violations = {"deterministic"};
  EXPECT_FALSE(cli::shrink_failed_case(only_determinism, real_document(), options).ok());
  EXPECT_TRUE(only_determinism.shrunk.empty());
  std::filesystem::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace rehearse::sim
