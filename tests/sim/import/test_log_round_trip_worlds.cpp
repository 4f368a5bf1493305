// Goal: the worker's log tells what happened, in every world `rehearse check`
// generates, not only in the bundled scenarios: imported back
// (docs/import.md, "The worker's log"), it gives expectations that a replay
// meets, slot by slot and in each job's durable state at the end (its state
// directory imported with it), with the faults on the user's own services
// found again from the calls alone.
// Method: generated worlds with the swarm's faults on top (restarts, damaged
// files, stepped clocks, outages), each run with its worker's log kept; the
// world without its own-service faults is the base the log is imported
// into, as `rehearse import --log --into` does (with --clock-steps), and the
// replay must hold every invariant and every expectation the log gave,
// unless the import reported an ambiguity (then it said what it guessed,
// and promises no exact replay; such worlds are counted and bounded).
// Counted so the property cannot pass empty: worlds, slots expected, faults
// removed and found again.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/check/generate.hpp"
#include "sim/import/log_scenario.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"

namespace rehearse::sim {
namespace {

using ojson = nlohmann::ordered_json;

const std::set<std::string> kBuiltIn{"model-api", "orchestrator", "brokerage", "messenger"};
const std::set<std::string> kInferable{"http_errors", "timeouts", "network_errors",
                                       "quota_exhausted"};

// The world as the base of an import: no expect block, no fault the log's
// calls witness (an outage of a service of the user's own that a call job
// calls; an outage nobody called left no evidence).
ojson base_of(const ojson& world, int& removed) {
  ojson base = world;
  base.erase("expect");
  std::set<std::string> called;
  for (const ojson& j : world.value("jobs", ojson::array())) {
    for (const ojson& c : j.value("calls", ojson::array())) called.insert(c.value("service", ""));
  }
  ojson kept = ojson::array();
  for (const ojson& f : world.value("faults", ojson::array())) {
    const std::string service = f.value("service", "model-api");
    if (kInferable.count(f.value("kind", "")) != 0 && kBuiltIn.count(service) == 0 &&
        called.count(service) != 0) {
      ++removed;
    } else {
      kept.push_back(f);
    }
  }
  base["faults"] = kept;
  return base;
}

// The state directory as the worker left it, as `import --state` reads it.
StateEvidence state_of(const ScenarioRunResult& run) {
  StateEvidence out;
  out.dir = "the world's state directory";
  if (run.store_corrupt) out.corrupt = run.store_error;
  for (const FinalJobState& f : run.final_states) {
    if (f.state) out.jobs[f.job_id] = *f.state;
  }
  return out;
}

std::string log_text(const ScenarioRunResult& run) {
  std::string text;
  for (const std::string& line : run.worker_log) text += line + "\n";
  return text;
}

struct Counts {
  int worlds = 0, slots = 0, removed = 0, found = 0, ambiguous = 0;
};

void round_trip(std::uint64_t seed, Counts& counts) {
  SwarmOptions swarm;
  swarm.damage_job_files = true;
  swarm.step_clocks = true;
  // The world is `rehearse check --seeds 1 --first-seed S --emit DIR`'s.
  const std::string what = "generated world, seed " + std::to_string(seed) +
                           " (rehearse check --seeds 1 --first-seed " + std::to_string(seed) +
                           " --emit DIR writes it)";
  auto world = derive_world_case(seed, swarm);
  ASSERT_TRUE(world.ok()) << what << ": " << world.error().message;
  auto scenario = load_scenario_json(world->dump(), what);
  ASSERT_TRUE(scenario.ok()) << what << ": " << scenario.error().message;
  RunOptions options;
  options.keep_worker_log = true;
  auto run = run_scenario(*scenario, options);
  ASSERT_TRUE(run.ok()) << what;
  if (!judge_run(*scenario, *run, std::nullopt).violations.empty()) return;  // a finding of check's
  auto log = read_worker_log(log_text(*run), what + ".log", {true});
  ASSERT_TRUE(log.ok()) << what << ": " << log.error().describe();
  LogImportInput input;
  input.base = base_of(ojson::parse(world->dump()), counts.removed);
  input.base_path = what;
  input.logs = {what + ".log"};
  input.clock_stepped = !log->steps_back.empty();
  input.state = state_of(*run);
  const LogEvidence evidence = read_log_evidence(*log, declared_latencies(*input.base));
  auto imported = import_worker_log(input, evidence);
  ASSERT_TRUE(imported.ok()) << what << ": " << imported.error().describe();
  counts.found += static_cast<int>(imported->faults.size());
  // Random delays are drawn again from the world's own seed, which the base
  // keeps: only the other ambiguities leave the replay unpromised.
  const bool unsettled =
      std::any_of(imported->ambiguities.begin(), imported->ambiguities.end(),
                  [](const Ambiguity& a) { return a.what.find("at random") == std::string::npos; });
  if (unsettled) {
    ++counts.ambiguous;  // reported, with its guess: no exact replay is promised
    return;
  }
  auto replayed = load_scenario_json(imported->scenario.dump(), what + " (imported)");
  ASSERT_TRUE(replayed.ok()) << what << ": " << replayed.error().describe();
  auto again = run_scenario(*replayed);
  ASSERT_TRUE(again.ok()) << what;
  const Verdict verdict = judge_run(*replayed, *again, std::nullopt);
  for (const ExpectFailure& f : verdict.expect_failures)
    ADD_FAILURE() << what << ": " << f.pointer << ": expected " << f.expected << ", got " << f.got;
  EXPECT_TRUE(verdict.violations.empty()) << what << ": the replay broke an invariant";
  ++counts.worlds;
  for (const auto& [id, job] : imported->scenario["expect"]["jobs"].items())
    counts.slots += static_cast<int>(job["slots"].size());
}

TEST(LogRoundTrip, EveryGeneratedWorldReplaysWhatItsLogSaw) {
  Counts counts;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) round_trip(seed, counts);
  EXPECT_GE(counts.worlds, 45);
  EXPECT_LE(counts.ambiguous, 10);
  EXPECT_GT(counts.slots, 300);
  EXPECT_GT(counts.removed, 0) << "no generated world had an outage of a service of its own";
  // An outage no call met left no evidence: found counts those that did.
  EXPECT_GT(counts.found, 0);
  RecordProperty("worlds", counts.worlds);
}

}  // namespace
}  // namespace rehearse::sim
