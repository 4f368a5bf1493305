// Goal: the crash sweep over a whole scenario run (sim/check/crash_sweep.hpp,
// docs/crash-sweep.md) covers every point it says it covers, holds on the
// real core, and finds bugs that only a crash shows.
// Method: a small scenario (one group job, a quota outage, a retry chain of
// two, no restart) swept with the real world; the counts are compared with
// the baseline's events and disk operations. Two faulty stores plugged in
// through RunOptions::store_decorator, both harmless without a crash: one
// keeps the retry counters only in memory (they read as 0 at every boot: the
// seed 004 bug), found by single crashes; one whose boot "repairs" a pending
// retry chain by writing the counters as 0 and then back (two durable
// writes), harmful only when a second crash falls between the two writes,
// i.e. during the recovery from a first crash: found by pairs only.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "model/state_store.hpp"
#include "sim/check/crash_sweep.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "tests/variants/seed_bugs.hpp"

namespace rehearse::sim {
namespace {

// One group job at 10:00 with two retries 2 min apart; the model API is out
// of quota from 09:59:30 to 10:03:30, so 10:00 and the first retry (10:02)
// fail and the second (10:04) succeeds. No restart: only the sweep crashes.
Scenario chain_scenario() {
  const std::string text = R"({
    "format": 1, "scenario": "crash-sweep-chain",
    "start": "2026-12-07T09:59:00Z", "until": "2026-12-07T10:08:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "job", "kind": "group", "schedule": "0 10 * * *",
              "retry_policy": {"max": 2, "backoff_sec": 120},
              "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T09:59:30Z", "for": "4m", "kind": "quota_exhausted"}]})";
  auto loaded = load_scenario_json(text, "crash-sweep-chain.json");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return loaded.ok() ? std::move(loaded).value() : Scenario{};
}

std::string describe(const ScenarioCrashReport& r) {
  std::string text = fmt::format(
      "events {}/{} (down {}), disk power loss {}/{}, disk process crash {}/{}, pairs {}/{}, "
      "failing {}, cut '{}'\n",
      r.events.run, r.events.planned, r.events_down, r.disk_power_loss.run,
      r.disk_power_loss.planned, r.disk_process_crash.run, r.disk_process_crash.planned,
      r.pairs.run, r.pairs.planned, r.failing_points, r.cut);
  for (const ScenarioCrashFailure& f : r.failures) {
    text += fmt::format("  {} {}: {}\n", to_string(f.point), f.what, f.message);
  }
  return text;
}

std::set<std::string> failed_invariants(const ScenarioCrashReport& r) {
  std::set<std::string> names;
  for (const ScenarioCrashFailure& f : r.failures) names.insert(f.what);
  return names;
}

ScenarioCrashReport sweep(const Scenario& scenario, ScenarioCrashOptions options) {
  auto report = sweep_scenario_crashes(scenario, options);
  EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.error().describe());
  return report.ok() ? std::move(report).value() : ScenarioCrashReport{};
}

// --- the store that "repairs" a pending chain at boot (pair-only bug) ---------

// A boot that finds a job with retries pending rewrites its counters as 0 and
// then writes the state it read back: two durable journal records. Without a
// crash between them nothing changes.
std::unique_ptr<JobStateStore> make_rewriting_store(StateStore& store) {
  auto all = store.read_all();
  if (all.ok()) {
    for (const auto& [id, state] : *all) {
      if (state.retry_count == 0) continue;
      const Status zeroed = store.update(id, [](JobState& s) {
        s.retry_count = 0;
        for (auto& [slot, record] : s.slots) record.retry_count = 0;
      });
      if (!zeroed.ok()) break;
      if (!store.update(id, [&state = state](JobState& s) { s = state; }).ok()) break;
    }
  }
  return nullptr;  // the core's store, unwrapped
}

TEST(CrashSweepScenario, PointsAreTheBaselinesEventsAndDiskOperations) {
  ScenarioCrashOptions options;
  options.pairs = false;
  const ScenarioCrashReport r = sweep(chain_scenario(), options);
  EXPECT_TRUE(r.held()) << describe(r);
  EXPECT_TRUE(r.cut.empty()) << describe(r);
  EXPECT_GT(r.baseline_events, 20u);
  EXPECT_GT(r.baseline_disk_operations, 10u);
  // Every event point 0..E is either run or skipped because the worker is down.
  EXPECT_EQ(r.events.planned + r.events_down, r.baseline_events + 1) << describe(r);
  EXPECT_EQ(r.events.run, r.events.planned);
  EXPECT_EQ(r.disk_power_loss.planned, r.baseline_disk_operations);
  EXPECT_EQ(r.disk_process_crash.planned, r.baseline_disk_operations);
  EXPECT_EQ(r.disk_power_loss.run, r.baseline_disk_operations);
  EXPECT_EQ(r.disk_process_crash.run, r.baseline_disk_operations);
  EXPECT_EQ(r.pairs.planned, 0u);
  EXPECT_EQ(r.points_run(), r.events.run + 2 * r.baseline_disk_operations);
}

// Pairs over recoveries of at most 2 events (the boot's disk operations
// included), to keep the debug suite quick; the CLI's default is 100.
ScenarioCrashOptions short_recoveries() {
  ScenarioCrashOptions options;
  options.recovery_events_max = 2;
  return options;
}

TEST(CrashSweepScenario, RealCoreHoldsWithPairs) {
  const ScenarioCrashReport r = sweep(chain_scenario(), short_recoveries());
  EXPECT_TRUE(r.held()) << describe(r);
  EXPECT_TRUE(r.cut.empty()) << describe(r);
  EXPECT_GT(r.pairs.planned, r.events.planned) << describe(r);
  EXPECT_EQ(r.pairs.run, r.pairs.planned);
}

TEST(CrashSweepScenario, TheSweepIsCutVisiblyByPointsMax) {
  ScenarioCrashOptions options;
  options.points_max = 10;
  const ScenarioCrashReport r = sweep(chain_scenario(), options);
  EXPECT_EQ(r.points_run(), 10u);
  EXPECT_NE(r.cut.find("cut by --points-max 10: 10 of"), std::string::npos) << r.cut;
  EXPECT_EQ(r.pairs.run, 0u);
}

// Seed 004 (a): the counters live in memory only. No crash, no harm; the
// sweep's single crashes inside the chain reset the budget.
TEST(CrashSweepScenario, CountersOnlyInMemoryAreFoundBySingleCrashes) {
  RunOptions plain;
  plain.store_decorator = [](StateStore& store, Disk& disk) {
    return variants::make_buggy_store(store, disk, variants::StoreBug::reset_counters_at_boot);
  };
  auto once = run_scenario(chain_scenario(), plain);
  ASSERT_TRUE(once.ok());
  EXPECT_TRUE(once->violations.empty()) << "the variant must pass a run without a crash";

  ScenarioCrashOptions options;
  options.pairs = false;
  options.base = plain;
  const ScenarioCrashReport r = sweep(chain_scenario(), options);
  EXPECT_FALSE(r.held()) << describe(r);
  EXPECT_GT(r.failing_points, 0u);
  EXPECT_EQ(failed_invariants(r).count("diverged"), 0u) << describe(r);
  EXPECT_EQ(failed_invariants(r).count("retries_bounded"), 1u) << describe(r);
  // The replay of a failing point fails the same way.
  ASSERT_FALSE(r.failures.empty());
  auto replay = replay_scenario_crash_point(chain_scenario(), r.failures.front().point, options);
  ASSERT_TRUE(replay.ok());
  ASSERT_FALSE(replay->empty());
  EXPECT_EQ(replay->front().what, r.failures.front().what);
}

// A bug only a crash during the recovery shows: singles hold, pairs fail.
TEST(CrashSweepScenario, ARecoveryThatIsNotAtomicIsFoundByPairsOnly) {
  ScenarioCrashOptions options = short_recoveries();
  options.base.store_decorator = [](StateStore& store, Disk&) {
    return make_rewriting_store(store);
  };
  // One sweep, singles and pairs, every failure kept: each must be a pair.
  options.failures_kept = std::numeric_limits<std::size_t>::max();
  const ScenarioCrashReport pairs = sweep(chain_scenario(), options);
  EXPECT_FALSE(pairs.held()) << describe(pairs);
  ASSERT_FALSE(pairs.failures.empty());
  for (const ScenarioCrashFailure& f : pairs.failures) {
    EXPECT_TRUE(f.point.second.has_value()) << to_string(f.point) << ": " << f.message;
    EXPECT_NE(f.what, "diverged") << to_string(f.point) << ": " << f.message;
  }
  EXPECT_EQ(failed_invariants(pairs).count("retries_bounded"), 1u) << describe(pairs);
}

TEST(CrashSweepScenario, APointTheRunNeverReachesIsReportedAsDiverged) {
  auto point = parse_crash_point("disk:999999:power_loss");
  ASSERT_TRUE(point.ok());
  auto failures = replay_scenario_crash_point(chain_scenario(), *point, ScenarioCrashOptions{});
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_EQ(failures->front().what, "diverged");
  EXPECT_NE(failures->front().message.find("did not fire"), std::string::npos)
      << failures->front().message;
}

// The bundled scenario whose worker keeps its queue in a file on its disk
// (queue.store disk, docs/worker.md): every single point holds, the disk
// points inside the queue's own operations included (the same world over
// the memory queue has fewer disk operations: the queue's are the rest).
TEST(CrashSweepScenario, TheDiskQueueScenarioHoldsAtEverySinglePoint) {
  auto loaded = load_scenario_file(std::string(REHEARSE_SOURCE_DIR) +
                                   "/scenarios/disk-queue-restart-mid-retry-chain.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  Scenario memory = *loaded;
  memory.queue.store = QueueStore::memory;
  ScenarioCrashOptions baseline_only;
  baseline_only.points_max = 1;
  const ScenarioCrashReport in_memory = sweep(memory, baseline_only);
  ScenarioCrashOptions options;
  options.pairs = false;
  const ScenarioCrashReport r = sweep(*loaded, options);
  EXPECT_TRUE(r.held()) << describe(r);
  EXPECT_TRUE(r.cut.empty()) << describe(r);
  EXPECT_GT(r.baseline_disk_operations, in_memory.baseline_disk_operations + 50) << describe(r);
  EXPECT_EQ(r.disk_process_crash.run, r.baseline_disk_operations);
}

TEST(CrashSweepScenario, ThreadsGiveTheSameReport) {
  ScenarioCrashOptions options;
  options.pairs = false;
  const ScenarioCrashReport one = sweep(chain_scenario(), options);
  options.threads = 2;
  const ScenarioCrashReport two = sweep(chain_scenario(), options);
  EXPECT_EQ(describe(one), describe(two));
}

TEST(ScenarioCrashPoint, TextRoundTripsAndBadTextIsNamed) {
  for (const char* text : {"event:0:process_crash", "disk:17:power_loss",
                           "event:12:process_crash+disk:40:process_crash"}) {
    auto point = parse_crash_point(text);
    ASSERT_TRUE(point.ok()) << text;
    EXPECT_EQ(to_string(*point), text);
    EXPECT_EQ(*parse_crash_point(to_string(*point)), *point);  // compares every field
  }
  ScenarioCrashPoint pair{{CrashAt::event, 12, CrashEffect::process_only},
                          WorkerCrashPoint{CrashAt::disk_operation, 40, CrashEffect::process_only}};
  ScenarioCrashPoint other = pair;
  other.second->effect = CrashEffect::power_loss;
  EXPECT_NE(pair, other);
  for (const char* text : {"", "event:1", "evnt:1:power_loss", "disk:x:power_loss", "disk:1:power",
                           "disk:-1:power_loss"}) {
    auto point = parse_crash_point(text);
    ASSERT_FALSE(point.ok()) << text;
    EXPECT_NE(point.error().message.find("KIND:INDEX:EFFECT"), std::string::npos)
        << point.error().message;
  }
}

}  // namespace
}  // namespace rehearse::sim
