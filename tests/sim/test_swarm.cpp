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
#include <set>
#include <sstream>
#include <string>

#include "model/time.hpp"
#include "sim/check/check.hpp"
#include "sim/check/swarm.hpp"
#include "sim/fault_kinds.hpp"
#include "sim/scenario.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

std::vector<std::string> bundled_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/scenarios")) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A world that declares every target a fault kind may name: every built-in
// service, a service of the user's own, issues, agents and targets.
json full_world() {
  return json::parse(R"({
    "format": 1, "scenario": "full-world", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T12:00:00Z",
    "services": {
      "model-api": {}, "brokerage": {}, "billing-api": {},
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
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SwarmChoice c;
    derive(full_world(), seed, &c);
    for (const auto& k : c.kinds_on) ++on[k];
    for (const auto& k : c.kinds_off) ++off[k];
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

}  // namespace
}  // namespace rehearse::sim
