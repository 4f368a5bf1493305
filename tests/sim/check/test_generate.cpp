// Random jobs (`rehearse check --random-jobs`) and generated worlds (`rehearse
// check` without a scenario), sim/check/generate.hpp: the same seed gives the
// same document, different seeds different ones; every document loads with
// the real loader and no drawn policy is one the core refuses (nor a retried
// publish without a key); the jobs'
// schedules reach the low-frequency class and the policies every form and
// budget; the job keys of the loader's table all have a drawer; the random
// jobs use a stream of their own (the swarm's faults are unchanged); one
// world in four reads its schedules in time zones, some starting just before
// a transition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/retry_policy.hpp"
#include "model/time_zone.hpp"
#include "sim/check/check.hpp"
#include "sim/check/generate.hpp"
#include "sim/check/swarm.hpp"
#include "sim/world/job_kind_table.hpp"
#include "sim/world/scenario.hpp"
#include "tests/support/bundled.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

using testsupport::bundled_scenarios;
using testsupport::read_json;
using testsupport::source_dir;

json derive_random(const json& base, std::uint64_t seed, bool random_jobs = true) {
  SwarmOptions o;
  o.random_jobs = random_jobs;
  auto d = derive_case(base, seed, o, nullptr, "base.json");
  EXPECT_TRUE(d.ok()) << d.error().describe();
  return d.ok() ? *d : json();
}

json world(std::uint64_t seed) {
  auto d = derive_world_case(seed, SwarmOptions{});
  EXPECT_TRUE(d.ok()) << "seed " << seed << ": " << d.error().describe();
  return d.ok() ? *d : json();
}

// The loaded scenario; fails the test when it does not load or when a job's
// drawn policy is one the core refuses (a policy_error flag).
std::optional<Scenario> load_clean(const json& doc, const std::string& what) {
  const ScenarioCheck check = check_scenario_json(doc.dump(), what);
  EXPECT_TRUE(check.valid()) << what << ": " << check.errors.front().describe() << "\n"
                             << doc.dump(1);
  // A policy_error flag is a drawn omission (one job in 25, policy_draws.hpp);
  // a publish job that retries always says why that is safe.
  for (const ScenarioFlag& flag : check.flags) {
    EXPECT_NE(flag.kind, FlagKind::side_effects) << what << ": " << flag.message;
  }
  return check.scenario;
}

TEST(RandomJobs, EveryJobKeyOfTheLoadersTableHasADrawer) {
  int kinds = 0;
  for (int i = 0;; ++i) {
    const std::string level = std::string("job_") + to_string(static_cast<JobKind>(i));
    const auto it = scenario_known_keys().find(level);
    if (it == scenario_known_keys().end()) break;
    ++kinds;
    if (job_kind_def(static_cast<JobKind>(i)).draw) continue;  // the kind draws its own keys
    for (const std::string& key : it->second) {
      EXPECT_TRUE(job_key_drawable(key)) << level << "." << key;
    }
  }
  EXPECT_GE(kinds, 5);
  // What generators iterate is the whole table: a kind added last is drawn too.
  EXPECT_EQ(static_cast<std::size_t>(kinds), all_job_kinds().size());
}

// The listed jobs are randomized; a fleet block keeps its distributions (the
// case's seed already redraws which job gets which bucket).
TEST(RandomJobs, SameSeedSameDocumentOtherSeedsOtherJobs) {
  int fleets = 0;
  for (const std::string& path : bundled_scenarios()) {
    const json base = read_json(path);
    std::set<std::string> jobs;
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const json doc = derive_random(base, seed);
      EXPECT_EQ(doc.dump(), derive_random(base, seed).dump()) << path << " seed " << seed;
      jobs.insert(doc.value("jobs", json::array()).dump());
      if (base.contains("fleet")) {
        EXPECT_EQ(doc["fleet"], base["fleet"]) << path;
      }
    }
    if (base.contains("fleet")) ++fleets;
    if (base.contains("jobs")) {
      EXPECT_GE(jobs.size(), 5u) << path;
    }
  }
  EXPECT_GE(fleets, 1);
}

TEST(RandomJobs, EveryBundledScenarioStaysValidAndKeepsItsJobs) {
  for (const std::string& path : bundled_scenarios()) {
    const json base = read_json(path);
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      const json doc = derive_random(base, seed);
      const std::string what = path + " seed " + std::to_string(seed);
      auto loaded = load_clean(doc, what);
      ASSERT_TRUE(loaded) << what;
      const json listed = base.value("jobs", json::array());
      ASSERT_EQ(doc.value("jobs", json::array()).size(), listed.size()) << what;
      for (std::size_t i = 0; i < listed.size(); ++i) {
        EXPECT_EQ(doc["jobs"][i]["id"], base["jobs"][i]["id"]) << what;
        EXPECT_EQ(doc["jobs"][i]["kind"], base["jobs"][i]["kind"]) << what;
      }
      EXPECT_NE(doc["description"].get<std::string>().find("Jobs randomized"), std::string::npos);
    }
  }
}

// The random jobs draw from their own stream: the swarm's faults are the
// same with and without them (the base's span is the same).
TEST(RandomJobs, TheSwarmsFaultsDoNotChange) {
  const json base = read_json(source_dir() + "/scenarios/weekly-quota-6h.json");
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    EXPECT_EQ(derive_random(base, seed)["faults"].dump(),
              derive_random(base, seed, false)["faults"].dump())
        << "seed " << seed;
  }
}

TEST(RandomJobs, SchedulesAndPoliciesCoverTheirClasses) {
  const json base = read_json(source_dir() + "/scenarios/weekly-quota-6h.json");
  std::set<std::string> forms, budgets, backoffs;
  int low = 0, frequent = 0, every_few_minutes = 0, omissions = 0;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const json job = derive_random(base, seed)["jobs"][0];
    auto cron = CronSchedule::parse(job["schedule"].get<std::string>());
    ASSERT_TRUE(cron.ok()) << job["schedule"];
    (cron->is_low_frequency() ? low : frequent) += 1;
    if (job["schedule"].get<std::string>().rfind("*/", 0) == 0) ++every_few_minutes;
    auto policy = parse_retry_policy(job["retry_policy"], schedule_facts(*cron));
    if (!policy.ok()) {  // a drawn omission (sim/check/policy_draws.hpp): it fails closed
      ++omissions;
      continue;
    }
    forms.insert(to_string(policy->form));
    budgets.insert(to_string(policy->budget));
    backoffs.insert(to_string(policy->backoff.kind));
  }
  EXPECT_GE(low, 30);
  EXPECT_GE(frequent, 60);
  EXPECT_GE(every_few_minutes, 30);
  // Every form a scenario can hold: the core's own and the six systems'
  // (sim/check/policy_draws.hpp), so the monitors' reading of each is searched.
  EXPECT_EQ(forms, (std::set<std::string>{"auto", "bullmq", "per_job", "temporal", "stepfunctions",
                                          "sidekiq", "celery", "k8s"}));
  EXPECT_EQ(budgets.size(), 2u);
  EXPECT_GE(omissions, 2);  // one job in 25 gets a policy the core refuses
  EXPECT_LE(omissions, 20);
  EXPECT_GE(backoffs.size(), 3u);
}

TEST(RandomJobs, ABaseThatDoesNotLoadIsAnError) {
  json base = read_json(source_dir() + "/scenarios/weekly-quota-6h.json");
  base["untill"] = base["until"];
  EXPECT_FALSE(randomize_jobs(base, 1).ok());
}

// The property: every generated world loads (before and after the swarm),
// over many seeds.
TEST(GeneratedWorlds, EveryWorldLoadsOverThreeHundredSeeds) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const std::string what = "world seed " + std::to_string(seed);
    ASSERT_TRUE(load_clean(generate_world(seed), what + " (before the swarm)")) << what;
    auto loaded = load_clean(world(seed), what);
    ASSERT_TRUE(loaded) << what;
    EXPECT_EQ(loaded->seed, seed);
    EXPECT_FALSE(loaded->jobs.empty()) << what;
    for (const JobSpec& job : loaded->jobs) {  // a publish job writes with the model API
      if (job.kind == JobKind::publish) {
        EXPECT_TRUE(loaded->services.model_api) << what;
      }
    }
  }
}

TEST(GeneratedWorlds, SameSeedSameWorldOtherSeedsOtherWorlds) {
  std::set<std::string> worlds;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const json doc = world(seed);
    EXPECT_EQ(doc.dump(), world(seed).dump()) << "seed " << seed;
    json jobs_and_services{doc["jobs"], doc["services"], doc["start"]};
    worlds.insert(jobs_and_services.dump());
  }
  EXPECT_EQ(worlds.size(), 50u);
}

// What generated worlds must reach appears over 300 seeds: a group job and a
// reconcile job some of the time, and each placed fault.
TEST(GeneratedWorlds, ReachGroupAndReconcileJobsAndThePlacedFaults) {
  std::map<std::string, int> seen;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const json doc = generate_world(seed);
    std::set<std::string> here;
    for (const json& job : doc["jobs"]) here.insert(job["kind"].get<std::string>());
    for (const json& fault : doc["faults"]) here.insert(fault["note"].get<std::string>());
    if (doc["services"].contains("brokerage") &&
        doc["services"]["brokerage"].contains("token_lifetime")) {
      here.insert("token lifetime");
    }
    for (const std::string& k : here) ++seen[k];
  }
  EXPECT_GE(seen["group"], 100);
  EXPECT_GE(seen["reconcile"], 30);
  EXPECT_LE(seen["reconcile"], 200);
  EXPECT_GE(seen["generated: an outage that recovers and comes back"], 50);
  EXPECT_GE(seen["token lifetime"], 10);
  EXPECT_GE(seen["generated: revoked between the reissue and the retry"], 3);
  EXPECT_GE(seen["generated: the messenger refuses a delivery"], 50);
}

// Whether a change of `zone`'s offset falls inside the world's span.
bool span_holds_transition(const json& doc, const std::string& zone) {
  const auto tz = TimeZone::locate(zone);
  EXPECT_TRUE(tz.ok()) << zone;
  if (!tz.ok()) return false;
  const TimeMs start = *parse_instant(doc["start"].get<std::string>());
  const TimeMs until = *parse_instant(doc["until"].get<std::string>());
  return tz->next_transition(start, until).has_value();
}

// One world in four reads its jobs' schedules in zones of a fixed list (both
// hemispheres, a 30-minute shift, a half-hour offset, UTC); some zoned worlds
// start shortly before a spring-forward or a fall-back of a job's zone; the
// zone draw has a stream of its own, so an unzoned world keeps its week.
TEST(GeneratedWorlds, DrawZonesAndStartSomeWorldsBeforeATransition) {
  std::map<std::string, int> zones;
  int zoned = 0;
  int gaps = 0;
  int folds = 0;
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    const json doc = generate_world(seed);
    const std::string start = doc["start"].get<std::string>();
    std::set<std::string> here;
    for (const json& job : doc["jobs"]) {
      if (job.contains("tz")) here.insert(job["tz"].get<std::string>());
    }
    if (here.empty()) {
      EXPECT_EQ(start.rfind("2026-12-", 0), 0u) << "seed " << seed << ": " << start;
      continue;
    }
    ++zoned;
    for (const std::string& zone : here) ++zones[zone];
    for (const std::string& zone : here) {
      if (!span_holds_transition(doc, zone)) continue;
      // Worlds start in December: the north springs forward next, the south falls back.
      const bool north = zone == "Europe/Berlin" || zone == "America/New_York";
      ++(north ? gaps : folds);
    }
  }
  EXPECT_GE(zoned, 40);
  EXPECT_LE(zoned, 120);
  for (const char* zone : {"Europe/Berlin", "America/New_York", "America/Santiago",
                           "Australia/Lord_Howe", "Asia/Kolkata", "UTC"}) {
    EXPECT_GE(zones[zone], 3) << zone;
  }
  EXPECT_GE(gaps, 5);
  EXPECT_GE(folds, 5);
}

TEST(GeneratedWorlds, OneCaseRunsAndNamesItsReplay) {
  CheckCaseInput input;
  input.name = kGeneratedWorldName;
  input.seed = 3;
  CheckOptions options;
  const CaseRecord r = check_case(input, options);
  EXPECT_NE(r.verdict, CaseVerdict::error) << r.message;
  EXPECT_EQ(r.replay, "rehearse check --seeds 1 --first-seed 3");
  EXPECT_GT(r.events, 0);
  options.swarm.random_jobs = true;
  EXPECT_EQ(check_replay_command("a.json", 4, options.swarm),
            "rehearse check a.json --seeds 1 --first-seed 4 --random-jobs");
}

}  // namespace
}  // namespace rehearse::sim
