// Swarm derivation (sim/check/swarm.hpp) and one checked case
// (sim/check/check.hpp): a seed gives one ordinary scenario document, always
// the same for the same seed, different across seeds, loadable by the real
// loader, with its faults inside the span; over many seeds every applicable
// kind is switched on and off. A case that runs differently twice is caught
// by --check-determinism with both hashes and the first diverging event.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "model/state_store.hpp"
#include "model/time.hpp"
#include "sim/check/check.hpp"
#include "sim/check/liveness.hpp"
#include "sim/check/swarm.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/scenario.hpp"
#include "tests/support/bundled.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

using testsupport::bundled_scenarios;
using testsupport::read_json;
using testsupport::source_dir;

// A world that declares every target a fault kind may name: every built-in
// service, a service of the user's own, issues, agents and targets.
json full_world() {
  return json::parse(R"({
    "format": 1, "scenario": "full-world", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T12:00:00Z",
    "services": {
      "model-api": {}, "brokerage": {},
      "billing-api": {"capacity": {"rate": 600, "per": "1m"}},
      "messenger": {"targets": ["team", "ops"]},
      "orchestrator": {"issues": [{"id": "ISS-1", "status": "in_progress"},
                                  {"id": "ISS-2", "status": "todo"}],
                       "agents": [{"id": "agent-lead", "role": "lead"}]}
    },
    "jobs": [
      {"id": "summary", "kind": "group", "schedule": "0 * * * *", "retry_policy": "auto",
       "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]},
      {"id": "quotes", "kind": "fetch", "schedule": "*/30 * * * *",
       "retry_policy": {"max": 2, "backoff_sec": 300}},
      {"id": "sync", "kind": "reconcile", "schedule": "*/10 * * * *", "retry_policy": "auto",
       "items": [{"issue": "ISS-1"}, {"issue": "ISS-2"}]},
      {"id": "bill", "kind": "call", "schedule": "15 * * * *",
       "retry_policy": {"max": 3, "backoff_sec": 60},
       "calls": [{"service": "billing-api"}]}
    ],
    "faults": [{"at": "+1h", "kind": "quota_exhausted", "for": "30m"},
               {"at": "+2h", "kind": "restart", "down_for": "1m"}],
    "expect": {"jobs": {"summary": {"delivered_slots": 12}}}
  })");
}

json derive(const json& base, std::uint64_t seed, SwarmChoice* choice = nullptr) {
  auto d = derive_case(base, seed, SwarmOptions{}, choice, "base.json");
  EXPECT_TRUE(d.ok()) << d.error().describe();
  return d.ok() ? *d : json();
}

TEST(Swarm, SameSeedGivesTheSameDocument) {
  for (const std::string& path : bundled_scenarios()) {
    const json base = read_json(path);
    for (std::uint64_t seed : {0ULL, 1ULL, 77ULL, 18446744073709551615ULL}) {
      EXPECT_EQ(derive(base, seed).dump(), derive(base, seed).dump()) << path << " seed " << seed;
    }
  }
}

TEST(Swarm, DifferentSeedsGiveDifferentFaults) {
  const json base = full_world();
  std::set<std::string> seen;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) seen.insert(derive(base, seed)["faults"].dump());
  EXPECT_GE(seen.size(), 49u);  // at most one pair may coincide by chance
}

TEST(Swarm, EveryDerivedDocumentLoads) {
  std::vector<std::string> paths = bundled_scenarios();
  for (const std::string& path : paths) {
    const json base = read_json(path);
    for (std::uint64_t seed = 1; seed <= 60; ++seed) {
      const json doc = derive(base, seed);
      auto loaded = load_scenario_json(doc.dump(), path);
      ASSERT_TRUE(loaded.ok()) << path << " seed " << seed << ": " << loaded.error().describe()
                               << "\n"
                               << doc["faults"].dump(1);
      EXPECT_EQ(loaded->seed, seed);
    }
  }
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    auto loaded = load_scenario_json(derive(full_world(), seed).dump(), "full-world");
    ASSERT_TRUE(loaded.ok()) << "seed " << seed << ": " << loaded.error().describe();
  }
}

TEST(Swarm, EveryKindIsOnAndOffOverTwoHundredSeeds) {
  std::map<std::string, int> on, off;
  SwarmOptions worlds;  // as generated worlds draw: job files damaged too
  worlds.damage_job_files = true;
  worlds.step_clocks = true;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SwarmChoice c;
    ASSERT_TRUE(derive_case(full_world(), seed, worlds, &c, "base.json").ok());
    for (const auto& k : c.kinds_on) ++on[k];
    for (const auto& k : c.kinds_off) ++off[k];
    // A bundled scenario's swarm never fails a job closed for good.
    SwarmChoice plain;
    derive(full_world(), seed, &plain);
    EXPECT_EQ(std::count(plain.kinds_on.begin(), plain.kinds_on.end(), "job_file_corrupted"), 0);
    EXPECT_EQ(std::count(plain.kinds_on.begin(), plain.kinds_on.end(), "clock_step"), 0);
  }
  // The full world can take every kind of the table.
  for (const FaultKindSpec& kind : fault_kinds()) {
    const std::string name(kind.name);
    EXPECT_GT(on[name], 0) << name << " never on";
    EXPECT_GT(off[name], 0) << name << " never off";
  }
}

TEST(Swarm, OnlyKindsTheWorldDeclaresAreDrawn) {
  // A fetch-only world: brokerage, no orchestrator, no messenger, no model-api.
  const json base = read_json(source_dir() + "/scenarios/token-revoked-early.json");
  std::set<std::string> kinds;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const json doc = derive(base, seed);
    for (const json& f : doc["faults"]) kinds.insert(f["kind"].get<std::string>());
  }
  for (const char* absent : {"issues_deleted", "issue_status", "agent_removed", "agent_restored",
                             "messenger_down", "quota_exhausted"}) {
    EXPECT_EQ(kinds.count(absent), 0u) << absent;
  }
  for (const char* present : {"http_errors", "timeouts", "network_errors", "token_revoked",
                              "restart", "state_corrupted", "torn_write"}) {
    EXPECT_EQ(kinds.count(present), 1u) << present;
  }
}

TEST(Swarm, FaultsLieInsideTheSpan) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    auto s = load_scenario_json(derive(full_world(), seed).dump(), "full-world");
    ASSERT_TRUE(s.ok());
    for (const FaultSpec& f : s->faults) {
      EXPECT_GE(f.at_ms, s->start_ms);
      EXPECT_LE(f.at_ms, s->until_ms);
      EXPECT_LE(f.end_ms(s->until_ms), s->until_ms);
      if (f.kind == FaultKind::restart) {
        EXPECT_LE(f.at_ms + f.down_for_ms, s->until_ms);
      }
    }
  }
}

TEST(Swarm, BaseFaultsAreKeptHalfTheTimeAndExpectIsReplaced) {
  int kept_first = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SwarmChoice c;
    const json doc = derive(full_world(), seed, &c);
    EXPECT_EQ(c.base_faults, 2u);
    EXPECT_EQ(doc["faults"].size(), c.base_faults_kept + c.faults_added);
    if (c.base_faults_kept > 0 && doc["faults"][0] == full_world()["faults"][0]) ++kept_first;
    EXPECT_FALSE(doc.contains("expect")) << "counts do not hold in a varied world";
    EXPECT_EQ(doc["seed"], seed);
    EXPECT_NE(doc["description"].get<std::string>().find(
                  fmt::format("base.json with seed {}", seed)),
              std::string::npos);
  }
  EXPECT_GT(kept_first, 60);
  EXPECT_LT(kept_first, 140);
}

TEST(Swarm, AllowedViolationsAreCarried) {
  json base = full_world();
  base["expect"] = {{"violations", {"retries_bounded"}}};
  EXPECT_EQ(derive(base, 3)["expect"], json({{"violations", {"retries_bounded"}}}));
}

TEST(Swarm, ABaseThatDoesNotLoadIsAnError) {
  json base = full_world();
  base["untill"] = base["until"];
  auto d = derive_case(base, 1, SwarmOptions{}, nullptr, "bad.json");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().describe().find("untill"), std::string::npos);
}

CheckCaseInput input_of(const json& base, std::uint64_t seed) {
  CheckCaseInput in;
  in.scenario = base;
  in.path = "full-world.json";
  in.name = "full-world";
  in.seed = seed;
  return in;
}

TEST(CheckCase, TheBaseWithoutFaultsPasses) {
  json base = full_world();
  base["faults"] = json::array();
  base.erase("expect");
  const CaseRecord r = check_derived(input_of(base, 5), base, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
  EXPECT_EQ(r.replay, "rehearse check full-world.json --seeds 1 --first-seed 5");
  EXPECT_EQ(r.trace_hash.size(), 16u);
  EXPECT_GT(r.events, 0u);
  EXPECT_EQ(case_exit_code(r), 0);
}

TEST(CheckCase, ADocumentTheLoaderRefusesIsAnError) {
  json doc = full_world();
  doc["faults"][0]["for"] = "-5m";
  const CaseRecord r = check_derived(input_of(full_world(), 5), doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::error);
  EXPECT_NE(r.message.find("/faults/0/for"), std::string::npos) << r.message;
  EXPECT_EQ(case_exit_code(r), 2);
}

// The negative proof of --check-determinism: a second run that is not the
// same run (here: another seed for its random fault rates) is caught, with
// both hashes and the first event that differs.
TEST(CheckCase, DeterminismCheckNamesTheFirstDivergingEvent) {
  json base = full_world();
  base["faults"] = json::parse(
      R"([{"at": "+1h", "kind": "http_errors", "service": "billing-api", "status": 503,
           "rate": 0.5, "for": "6h"}])");
  base.erase("expect");
  CheckOptions o;
  o.check_determinism = true;
  const CaseRecord same = check_derived(input_of(base, 9), base, o);
  EXPECT_TRUE(std::find(same.violations.begin(), same.violations.end(), "deterministic") ==
              same.violations.end())
      << same.message;
  o.prepare_run = [](RunOptions& run, int index) {
    if (index == 1) run.seed = *run.seed + 1;
  };
  const CaseRecord r = check_derived(input_of(base, 9), base, o);
  ASSERT_EQ(r.verdict, CaseVerdict::fail);
  ASSERT_FALSE(r.violations.empty());
  EXPECT_EQ(r.violations.front(), "deterministic");
  const std::string& m = r.message;
  EXPECT_NE(m.find("the trace hashes differ (" + r.trace_hash), std::string::npos) << m;
  EXPECT_NE(m.find("first diverging event: index"), std::string::npos) << m;
  EXPECT_NE(m.find("first:  {"), std::string::npos) << m;
  EXPECT_NE(m.find("second: {"), std::string::npos) << m;
  EXPECT_EQ(case_exit_code(r), 1);
}

TEST(CheckCase, ExitCodesFollowRun) {
  CaseRecord r;
  EXPECT_EQ(case_exit_code(r), 0);
  r.verdict = CaseVerdict::fail;
  r.violations = {"nothing_lost"};
  EXPECT_EQ(case_exit_code(r), 1);
  r.violations.push_back(kAssertionViolation);
  EXPECT_EQ(case_exit_code(r), 3);
  CaseRecord e;
  e.verdict = CaseVerdict::error;
  EXPECT_EQ(worst_exit_code({CaseRecord{}, e, r}), 3);
  EXPECT_EQ(worst_exit_code({CaseRecord{}, e}), 2);
  EXPECT_EQ(worst_exit_code({}), 0);
}

// ------------------------------------------------------------- liveness

namespace liveness_test {

// A core whose recovery is never written: when a job leaves `retrying`, the
// store keeps it `retrying` (with its old next_retry_at and next_action). A realistic bug
// (a lost "recovered" write); the world then never settles.
class StuckRetryingStore final : public JobStateStore {
 public:
  explicit StuckRetryingStore(StateStore& inner) : inner_(inner) {}
  Result<JobState> read(const std::string& id) override { return inner_.read(id); }
  Result<std::map<std::string, JobState>> read_all() override { return inner_.read_all(); }
  Status update(const std::string& id, const std::function<void(JobState&)>& mutate) override {
    return inner_.update(id, [&](JobState& s) {
      const bool was_retrying = s.retry_status == RetryStatus::retrying;
      const auto next = s.next_retry_at;
      const auto action = s.next_action;
      mutate(s);
      if (was_retrying && s.retry_status != RetryStatus::retrying) {
        s.retry_status = RetryStatus::retrying;
        s.next_retry_at = next;
        s.next_action = action;
      }
    });
  }
  StoreHealth health() const override { return inner_.health(); }
  const std::string& dir() const noexcept override { return inner_.dir(); }
  std::string journal_path() const override { return inner_.journal_path(); }

 private:
  StateStore& inner_;
};

// One call job, a 503 outage of 20 minutes it retries through, and a span
// that ends `window` after the outage.
json outage_world(DurationMs window) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "settles", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T02:00:00Z",
    "services": {"billing-api": {}},
    "jobs": [{"id": "bill", "kind": "call", "schedule": "*/30 * * * *",
              "retry_policy": {"max": 5, "backoff_sec": 300},
              "calls": [{"service": "billing-api"}]}],
    "faults": [{"at": "2026-12-07T00:55:00Z", "for": "20m", "kind": "http_errors",
                "service": "billing-api", "status": 503}]
  })");
  auto s = load_scenario_json(doc.dump(), "settles");
  EXPECT_TRUE(s.ok());
  doc["until"] = format_instant(last_fault_end_ms(*s) + window);
  return doc;
}

DurationMs bound_of(const json& doc) {
  auto s = load_scenario_json(doc.dump(), "settles");
  EXPECT_TRUE(s.ok());
  return settle_bound_ms(*s, last_fault_end_ms(*s));
}

}  // namespace liveness_test

TEST(Liveness, TheBoundCoversEveryRetryChainPlusAPeriod) {
  const json doc = liveness_test::outage_world(kHourMs);
  // 5 retries 5 min apart (25 min, plus the witness's 1 ms slack each) plus a
  // run allowance per attempt (6 attempts x 2 calls x 30.1 s), and the
  // 30-minute period.
  EXPECT_EQ(liveness_test::bound_of(doc), 25 * kMinuteMs + 5 + 6 * 2 * 30'100 + 30 * kMinuteMs);
}

TEST(Liveness, ARecoveryNeverWrittenIsCaught) {
  using namespace liveness_test;
  const json doc = outage_world(bound_of(outage_world(kHourMs)));
  CheckCaseInput in = input_of(doc, 4);
  const CaseRecord healthy = check_derived(in, doc, CheckOptions{});
  EXPECT_EQ(healthy.verdict, CaseVerdict::pass) << healthy.message;
  CheckOptions stuck;
  stuck.prepare_run = [](RunOptions& run, int) {
    run.store_decorator = [](StateStore& store, Disk&) -> std::unique_ptr<JobStateStore> {
      return std::make_unique<StuckRetryingStore>(store);
    };
  };
  const CaseRecord r = check_derived(in, doc, stuck);
  ASSERT_EQ(r.verdict, CaseVerdict::fail);
  EXPECT_NE(std::find(r.violations.begin(), r.violations.end(), "liveness"), r.violations.end())
      << r.message;
  // The same world with a span that ends before the bound: not judged.
  const json short_doc = outage_world(bound_of(outage_world(kHourMs)) - kMinuteMs);
  const CaseRecord unjudged = check_derived(input_of(short_doc, 4), short_doc, stuck);
  EXPECT_EQ(std::find(unjudged.violations.begin(), unjudged.violations.end(), "liveness"),
            unjudged.violations.end());
}

// The bound reads every policy form through the monitors' own table: a
// Temporal policy of 6 attempts 5 minutes apart (coefficient 1) is the same
// chain as the per-job form's 5 x 300 s, so the bound is the same.
TEST(Liveness, TheBoundReadsAConvertedPolicysChain) {
  using namespace liveness_test;
  json doc = outage_world(kHourMs);
  const DurationMs per_job = bound_of(doc);
  doc["jobs"][0]["retry_policy"] = json::parse(
      R"({"temporal": {"initialInterval": "5m", "backoffCoefficient": 1, "maximumAttempts": 6}})");
  EXPECT_EQ(bound_of(doc), per_job);
}

// A Temporal policy with the default maximumInterval (100 x initialInterval)
// and long delays: 1h, 2h, 4h, ... its chain outlasts any bounded span. The
// correct core still retries at the end; liveness leaves such a job to
// retries_bounded instead of failing it as unsettled.
TEST(Liveness, AChainLongerThanTheSettleCapIsNotJudged) {
  using namespace liveness_test;
  json doc = outage_world(kHourMs);
  doc["jobs"][0]["retry_policy"] = json::parse(
      R"({"temporal": {"initialInterval": "1h", "backoffCoefficient": 2, "maximumAttempts": 10}})");
  doc["faults"][0]["for"] = "5h";
  doc["until"] = "2026-12-09T00:00:00Z";
  auto s = load_scenario_json(doc.dump(), "settles");
  ASSERT_TRUE(s.ok()) << s.error().describe();
  doc["until"] = format_instant(last_fault_end_ms(*s) + bound_of(doc));
  const CaseRecord r = check_derived(input_of(doc, 4), doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
}

TEST(Liveness, DerivedCasesLeaveTheBoundAfterTheLastFault) {
  for (std::uint64_t seed = 1; seed <= 100; ++seed) {
    SwarmChoice c;
    const json doc = derive(full_world(), seed, &c);
    auto s = load_scenario_json(doc.dump(), "full-world");
    ASSERT_TRUE(s.ok());
    const TimeMs last = last_fault_end_ms(*s);
    EXPECT_GE(s->until_ms - last, settle_bound_ms(*s, last)) << "seed " << seed;
    EXPECT_GE(s->until_ms, parse_instant("2026-12-07T12:00:00Z").value());
  }
}

// ------------------------------------------- findings of the swarm search

// A harness bug in the schedule_kept monitor: a torn write of the state right
// after a slot's queue add crashes the worker; at its boot 20 minutes later
// the scheduler hands the same slot out again (the queue's add is idempotent:
// `added` false) and folds the firings due since into its late run
// (coalesced_slots +2). The monitor treated a re-handout as nothing new and
// then reported the folded firings as skipped.
TEST(Findings, AReHandoutAfterATornWriteFoldsTheFiringsDueSince) {
  const json doc = json::parse(R"({
    "format": 1, "scenario": "re-handout-after-torn-write", "start": "2026-12-07T10:00:00Z",
    "until": "2026-12-07T11:40:00Z",
    "services": {"brokerage": {}},
    "jobs": [{"id": "quote-fetch", "kind": "fetch", "schedule": "*/10 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300}}],
    "faults": [{"at": "2026-12-07T10:55:07Z", "kind": "torn_write", "file": "retry_state.json",
                "down_for": "20m45s"}]
  })");
  CheckCaseInput in = input_of(doc, 1);
  const CaseRecord r = check_derived(in, doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
}

// A retry's intent decided before a torn write is replayed at the boot that
// found the store garbage: the store fails closed, no retry is queued, and the
// replayed notice keeps the number it had (retry 2), which the count rebased
// on the damaged store (none) cannot confirm. state_durable took it for a
// counter not reset after a success.
TEST(Findings, AnIntentReplayedWhileTheStoreFailsClosedKeepsItsNumber) {
  const json doc = json::parse(R"({
    "format": 1, "scenario": "replayed-intent-under-corrupt-store", "seed": 5118,
    "start": "2026-12-13T14:00:00Z", "until": "2026-12-13T17:16:43Z",
    "services": {"messenger": {"targets": ["team-1"]}, "model-api": {}},
    "jobs": [{"id": "job-1", "kind": "group", "schedule": "*/30 * * * 0",
              "retry_policy": {"backoff": {"delay": "462s", "max_delay": "462s",
                                           "type": "exponential"}, "max": 3},
              "targets": ["team-1"],
              "tasks": [{"id": "task-1", "model_calls": 1, "produces": "summary"},
                        {"id": "task-2", "model_calls": 1, "produces": "summary"},
                        {"id": "task-3", "model_calls": 3, "produces": "preview"}]}],
    "faults": [
      {"at": "2026-12-13T16:37:48Z", "for": "33m", "kind": "timeouts", "rate": 0.85,
       "service": "model-api"},
      {"at": "2026-12-13T17:09:52Z", "kind": "torn_write", "down_for": "6m"},
      {"at": "2026-12-13T17:15:52Z", "kind": "state_corrupted", "file": "retry_state.json",
       "mode": "garbage"}]
  })");
  const CaseRecord r = check_derived(input_of(doc, 5118), doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
}

// A harness bug in state_durable: a state_corrupted fault damaged
// /srv/state/jobs_state.json (or jobs.json; it created it damaged: no process
// ever writes it), the worker booted after, and state_durable wanted a
// state_corrupt. The worker keeps its runtime fields in retry_state.json and
// its journal only and never reads jobs.json or jobs_state.json (the two
// runtime stores of docs/semantics.md §5 are merged by the views from the
// records they are given: docs/state-file.md, "Runtime views"), so it had
// nothing to report: the monitor over-claimed. Now a damaged file must be
// reported once a process that booted after the damage read it (the disk's
// `disk_read`): the real core passes, and a core that reads the damaged file
// at its boot and ignores the damage still fails.
namespace views_test {

json damaged_views_world() {
  return json::parse(R"({
    "format": 1, "scenario": "damaged-runtime-views", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T02:00:00Z",
    "services": {"billing-api": {}},
    "jobs": [{"id": "bill", "kind": "call", "schedule": "*/30 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "calls": [{"service": "billing-api"}]}],
    "faults": [{"at": "2026-12-07T00:20:00Z", "kind": "state_corrupted", "file": "jobs.json"},
               {"at": "2026-12-07T00:21:00Z", "kind": "state_corrupted",
                "file": "jobs_state.json", "mode": "truncated"},
               {"at": "2026-12-07T00:40:00Z", "kind": "restart", "down_for": "5m"}]
  })");
}

// The core's store, unchanged, opened by a worker that also reads the legacy
// runtime store jobs_state.json beside it at every boot and ignores what it
// finds (a realistic bug: a file relied on and never checked).
class LegacyReadingStore final : public JobStateStore {
 public:
  LegacyReadingStore(StateStore& inner, Disk& disk) : inner_(inner) {
    (void)disk.read_file(inner.dir() + "/jobs_state.json");
  }
  Result<JobState> read(const std::string& id) override { return inner_.read(id); }
  Result<std::map<std::string, JobState>> read_all() override { return inner_.read_all(); }
  Status update(const std::string& id, const std::function<void(JobState&)>& mutate) override {
    return inner_.update(id, mutate);
  }
  StoreHealth health() const override { return inner_.health(); }
  const std::string& dir() const noexcept override { return inner_.dir(); }
  std::string journal_path() const override { return inner_.journal_path(); }

 private:
  StateStore& inner_;
};

}  // namespace views_test

TEST(Findings, DamagedRuntimeViewsTheWorkerNeverReadsNeedNoReport) {
  const json doc = views_test::damaged_views_world();
  const CaseRecord r = check_derived(input_of(doc, 1), doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
}

TEST(Findings, ADamagedFileACoreReadsAtItsBootMustBeReported) {
  const json doc = views_test::damaged_views_world();
  CheckOptions reading;
  reading.prepare_run = [](RunOptions& run, int) {
    run.store_decorator = [](StateStore& store, Disk& disk) -> std::unique_ptr<JobStateStore> {
      return std::make_unique<views_test::LegacyReadingStore>(store, disk);
    };
  };
  const CaseRecord r = check_derived(input_of(doc, 1), doc, reading);
  ASSERT_EQ(r.verdict, CaseVerdict::fail);
  EXPECT_NE(std::find(r.violations.begin(), r.violations.end(), "state_durable"),
            r.violations.end())
      << r.message;
  EXPECT_NE(r.message.find("/srv/state/jobs_state.json"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("no state_corrupt was reported"), std::string::npos) << r.message;
}

// The derived case of a bundled scenario for `seed`, run once (its
// Scenario in `scenario`, left empty when a step failed): what the
// liveness findings below judge.
ScenarioRunResult run_derived_case(const std::string& name, std::uint64_t seed,
                                   std::optional<Scenario>& scenario,
                                   SwarmOptions swarm = SwarmOptions{}) {
  scenario.reset();
  const json base = read_json(source_dir() + "/scenarios/" + name + ".json");
  auto doc = derive_case(base, seed, swarm);
  if (!doc.ok()) return {};
  auto s = load_scenario_json(doc->dump(), name + ".seed-" + std::to_string(seed) + ".json");
  if (!s.ok()) return {};
  RunOptions options;
  options.seed = seed;
  auto run = run_scenario(*s, options);
  if (!run.ok()) return {};
  scenario = std::move(s).value();  // set only when every step worked
  return std::move(run).value();
}

// Seed 132 of messenger-down-on-delivery: the job recovered at 10:20, and a
// state_corrupted flip at 10:25 hit the journal's last record; no process read
// the journal again. The end-of-run read-back drops that record as a torn tail
// (as the next boot would, and report it), which shows the retry taken before
// the recovery. Liveness does not judge the jobs of a journal whose torn tail
// no process has seen yet; the same run without that rule fires.
TEST(Findings, ATornTailNoProcessHasSeenLeavesTheJobsUnjudged) {
  std::optional<Scenario> s;
  ScenarioRunResult run = run_derived_case("messenger-down-on-delivery", 132, s);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(run.unreported_torn_tail);
  const auto held = judge_liveness(*s, run);
  EXPECT_FALSE(held.has_value()) << held->message;
  run.unreported_torn_tail = false;
  const auto judged = judge_liveness(*s, run);
  ASSERT_TRUE(judged.has_value());
  EXPECT_EQ(judged->invariant, "liveness");
  EXPECT_NE(judged->message.find("still has a retry pending"), std::string::npos)
      << judged->message;
}

// Seed 333 of per-episode-hourly (a store failing closed, a retry pending): a
// cut of the journal while the worker ran (12:52) lost the records of a
// finished retry chain; the worker found the store damaged, reported it, and at
// its boot after a restart the delivery ledger showed a slot the retry state
// had lost: state_corrupt again, failing closed. The read-back (which does not
// ask the ledger) shows the retry pending from before. Liveness does not judge
// the jobs of a store failing closed at the end; the same run judged without
// the rule fires.
TEST(Findings, AStoreFailingClosedAtTheEndLeavesTheJobsUnjudged) {
  std::optional<Scenario> s;
  ScenarioRunResult run = run_derived_case("per-episode-hourly", 333, s);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(run.store_failing_closed);
  EXPECT_FALSE(run.unreported_torn_tail);
  const auto held = judge_liveness(*s, run);
  EXPECT_FALSE(held.has_value()) << held->message;
  run.store_failing_closed = false;
  const auto judged = judge_liveness(*s, run);
  ASSERT_TRUE(judged.has_value());
  EXPECT_NE(judged->message.find("still has a retry pending"), std::string::npos)
      << judged->message;
}

// Seed 15 of reconcile-out-of-order with random jobs (a harness bug in the
// liveness judgement): the random schedule "39 */12 * * *" runs the reconcile
// job at 00:39 and 12:39; an orchestrator refusal with an unknown status (463)
// deferred an item by an hour, and the span ended 2h27m after the last fault,
// before the job's next run. Only a regular run queries items, so an item waits
// for its job's next run as a job waits for its next slot: it is judged only
// when the job fires at least an hour after the last fault and a run's
// allowance before the end.
TEST(Findings, AnItemWhoseJobDoesNotRunAgainInTheWindowIsNotJudged) {
  SwarmOptions swarm;
  swarm.random_jobs = true;
  std::optional<Scenario> s;
  ScenarioRunResult run = run_derived_case("reconcile-out-of-order", 15, s, swarm);
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->jobs.size(), 1u);
  EXPECT_EQ(s->jobs[0].schedule, "39 */12 * * *");
  const auto stuck =
      std::find_if(run.final_items.begin(), run.final_items.end(),
                   [](const FinalItemState& i) { return !i.reconcile_error.empty(); });
  ASSERT_NE(stuck, run.final_items.end());
  EXPECT_EQ(stuck->stage, "DESIGNING");
  const auto held = judge_liveness(*s, run);
  EXPECT_FALSE(held.has_value()) << held->message;
  // The same end state judged as if the job ran every hour: it fires.
  s->jobs[0].schedule = "39 * * * *";
  const auto judged = judge_liveness(*s, run);
  ASSERT_TRUE(judged.has_value());
  EXPECT_NE(judged->message.find("is stuck at DESIGNING"), std::string::npos) << judged->message;
}

// The developer is listed under a role name no role has (reconcile-role-mixup):
// the swarm's issue_status fault moves ISS-11 to in_progress, whose handoff
// the role blocks for good, while the fault-free world hands ISS-11 to the
// lead and never meets the role. A standing role mix-up of the world is no
// liveness failure, as an absent agent is not; with the developer listed as
// dev, the same end state is judged and fires.
TEST(Findings, AnItemBlockedByAnAgentsListedRoleIsNotJudged) {
  std::optional<Scenario> s;
  ScenarioRunResult run = run_derived_case("reconcile-role-mixup", 489, s, SwarmOptions{});
  ASSERT_TRUE(s.has_value());
  const auto stuck =
      std::find_if(run.final_items.begin(), run.final_items.end(),
                   [](const FinalItemState& i) { return !i.reconcile_error.empty(); });
  ASSERT_NE(stuck, run.final_items.end());
  const auto held = judge_liveness(*s, run);
  EXPECT_FALSE(held.has_value()) << held->message;
  for (OrchestratorAgent& a : s->services.orchestrator->agents) {
    if (a.role == "frontend") a.role = "dev";
  }
  const auto judged = judge_liveness(*s, run);
  ASSERT_TRUE(judged.has_value());
  EXPECT_NE(judged->message.find("is stuck at DESIGNING"), std::string::npos) << judged->message;
}

// A retry is taken (its row, "retry taken", is written at the take), the state
// file is damaged while it runs, the run delivers, sets the guard and the
// marker and succeeds, and its final row is refused (the store fails closed).
// The run facts took the row written at the take for the run's own and judged
// the run failed from it, so no_duplicate_delivery saw a guard set by a failed
// run and nothing_lost a failure that nothing followed. A run's own row is one
// written after its intent; without one the outcome is what its finish carries
// (here a `recovered` notice: a success).
TEST(Findings, ARowWrittenAtTheTakeIsNotTheRunsOutcome) {
  const json doc = json::parse(R"({
    "format": 1, "scenario": "row-at-take", "seed": 1212, "start": "2026-12-07T09:30:00Z",
    "until": "2026-12-07T10:27:00Z",
    "services": {"messenger": {"targets": ["team"]},
                 "model-api": {"latency": "2m", "timeout": "5m"}},
    "jobs": [{"id": "daily-digest", "kind": "group", "schedule": "0 10 * * *",
              "retry_policy": {"attempts": 3, "backoff": {"delay": "10m", "type": "fixed"}},
              "targets": ["team"], "tasks": [{"id": "digest", "produces": "summary"}]}],
    "faults": [{"at": "2026-12-07T09:52:22Z", "for": "20m", "kind": "quota_exhausted",
                "service": "model-api"},
               {"at": "2026-12-07T10:25:00Z", "kind": "state_corrupted", "mode": "schema"}]
  })");
  const CaseRecord r = check_derived(input_of(doc, 1212), doc, CheckOptions{});
  EXPECT_EQ(r.verdict, CaseVerdict::pass) << r.message;
}

// Cases `rehearse check scenarios --seeds 2000` failed on before their fixes
// (docs/check.md, "Findings"), each a harness bug or a core bug with its own
// test beside it; they stay fixed.
TEST(Findings, TheCasesOfTheSecondSearchStayFixed) {
  const std::vector<std::pair<std::string, std::uint64_t>> cases = {
      {"reconcile-lead-missing", 104},
      {"reconcile-migration-404", 44},
      {"reconcile-migration-404", 1},
      {"reconcile-migration-404", 1476},
      {"journal-cut-at-record-boundary", 5},
      {"messenger-refuses-403", 1325},
      {"messenger-refuses-403", 1442},
      {"messenger-refuses-403", 816},
      {"restart-mid-run", 197},
      {"restart-mid-run", 290},
      {"serial-queue-delay", 492},
      {"short-policy-in-quota-outage", 374},
      {"short-policy-in-quota-outage", 148},
      {"per-episode-hourly", 1362},
      {"per-episode-hourly", 471},
      {"messenger-down-on-notice", 1735},
      {"journal-cut-at-record-boundary", 90},
      {"reconcile-out-of-order", 1553},
      {"journal-cut-at-record-boundary", 1257},
      {"env-override-empty", 354},
  };
  for (const auto& [name, seed] : cases) {
    CheckCaseInput in;
    in.path = source_dir() + "/scenarios/" + name + ".json";
    in.scenario = read_json(in.path);
    in.name = name;
    in.seed = seed;
    const CaseRecord r = check_case(in, CheckOptions{});
    EXPECT_EQ(r.verdict, CaseVerdict::pass) << name << " seed " << seed << ": " << r.message;
  }
}

}  // namespace
}  // namespace rehearse::sim
