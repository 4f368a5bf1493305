// Goal: `queue.store: disk` runs the worker over the core's DiskJobQueue on
// the simulated disk (docs/worker.md, "Which queue the simulated world uses")
// and changes nothing a user judges: every bundled scenario gives the same slot
// outcomes, runs, retries, notifications and final durable states over
// either queue, and still pass their expectations and every invariant; each
// boot reopens the queue file and the world records what it durably holds;
// a damaged queue file fails the boot closed and is never written over.
// Method: each scenario is loaded and run twice, as written (memory) and with
// its queue store switched to disk; the monitors' per-job tallies (per slot:
// outcome, attempts and their instants, notifications), the final states and
// the verdict are compared. The queue file is damaged through the test's
// port decorator, which reaches the world's own simulated disk.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim {
namespace {

Scenario bundled(const std::string& name) {
  const std::filesystem::path path =
      std::filesystem::path(REHEARSE_SOURCE_DIR) / "scenarios" / (name + ".json");
  auto loaded = load_scenario_file(path.string());
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

std::string findings(const ScenarioRunResult& r) {
  std::string text;
  for (const Violation& v : r.violations) text += v.invariant + ": " + v.message + "\n";
  for (const std::string& e : r.errors) text += "error: " + e + "\n";
  return text;
}

std::vector<const TraceEvent*> of_type(const ScenarioRunResult& r, const std::string& type) {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == type) out.push_back(&e);
  }
  return out;
}

// The bundled scenarios written for the memory queue: restarts in a retry
// chain and mid-run, a standby's takeover, slots missed while down, torn
// writes, damage to the live store, refused notices, reconcile, a fleet: the
// queue's every kind of use, across every crash kind.
std::vector<std::string> memory_scenarios() {
  std::vector<std::string> names;
  const auto dir = std::filesystem::path(REHEARSE_SOURCE_DIR) / "scenarios";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(DiskQueueWorld, BundledScenariosGiveTheMemoryQueuesOutcomes) {
  const std::vector<std::string> names = memory_scenarios();
  ASSERT_GE(names.size(), 30u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Scenario memory = bundled(name);
    if (memory.queue.store == QueueStore::disk) continue;
    Scenario disk = memory;
    disk.queue.store = QueueStore::disk;
    const ScenarioRunResult m = run(memory);
    const ScenarioRunResult d = run(disk);
    EXPECT_TRUE(d.violations.empty() && d.errors.empty()) << findings(d);
    EXPECT_EQ(d.tallies.at("jobs"), m.tallies.at("jobs"));
    EXPECT_EQ(d.tallies.at("notifications"), m.tallies.at("notifications"));
    ASSERT_EQ(d.final_states.size(), m.final_states.size());
    for (std::size_t i = 0; i < m.final_states.size(); ++i) {
      EXPECT_EQ(d.final_states[i].state, m.final_states[i].state) << m.final_states[i].job_id;
    }
    const Verdict verdict = judge_run(disk, d, std::nullopt);
    EXPECT_TRUE(verdict.held()) << format_findings(d, verdict);
    // The same world, but the queue's operations are disk operations now.
    EXPECT_NE(d.trace_hash, m.trace_hash);
    EXPECT_EQ(of_type(m, "queue_reopened").size(), 0u);
    EXPECT_FALSE(of_type(d, "queue_reopened").empty());
  }
}

// Every boot that opens the queue reopens its file and the world reads it:
// after the power loss at 10:15 and the process crash at 10:25:30, the file
// holds the delayed retry the chain goes on with.
TEST(DiskQueueWorld, EachBootReopensTheQueueFileWithThePendingRetry) {
  const Scenario scenario = bundled("disk-queue-restart-mid-retry-chain");
  ASSERT_EQ(scenario.queue.store, QueueStore::disk);
  const ScenarioRunResult r = run(scenario);
  EXPECT_TRUE(r.violations.empty() && r.errors.empty()) << findings(r);
  const auto reopened = of_type(r, "queue_reopened");
  ASSERT_EQ(reopened.size(), 3u);
  EXPECT_EQ(reopened[0]->data.at("entries"), nlohmann::json::array());
  for (const TraceEvent* e : {reopened[1], reopened[2]}) {
    ASSERT_EQ(e->data.at("entries").size(), 1u) << e->data.dump();
    EXPECT_TRUE(e->flag("readable"));
  }
  // The retry each reopen holds is the one the queue acknowledged last.
  std::uint64_t last_retry = 0;
  std::size_t reopen = 1;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == "queue_add" && e.str("kind") == "retry" && e.flag("added")) {
      last_retry = static_cast<std::uint64_t>(e.num("id"));
    }
    if (reopen < reopened.size() && &e == reopened[reopen]) {
      EXPECT_EQ(e.data.at("entries").at(0).get<std::uint64_t>(), last_retry);
      ++reopen;
    }
  }
  EXPECT_FALSE(of_type(r, "disk_fsync_dir").empty());
}

// A queue file the boot cannot read is not reset: the boot fails closed
// (worker_boot_failed naming the file), nothing runs, nothing is written to
// the queue's directory, and the world records no reopen.
TEST(DiskQueueWorld, ADamagedQueueFileFailsTheBootClosed) {
  Scenario scenario = bundled("restart-mid-retry-chain");
  scenario.queue.store = QueueStore::disk;
  scenario.expect = Expectations{};
  RunOptions options;
  options.worker_ports = [](JobQueue&, Notifier&, Disk& disk) {
    auto& sim_disk = dynamic_cast<SimDisk&>(disk);
    if (!sim_disk.live_content("/srv/queue/queue.json")) {
      EXPECT_TRUE(sim_disk.make_dirs("/srv/queue").ok());
      EXPECT_TRUE(sim_disk.put_durable("/srv/queue/queue.json", "{\"format\":1}\n").ok());
    }
    return WorkerPortWrappers{};
  };
  const ScenarioRunResult r = run(scenario, std::move(options));
  const auto failed = of_type(r, "worker_boot_failed");
  ASSERT_FALSE(failed.empty());
  EXPECT_NE(failed.front()->str("error").find("/srv/queue/queue.json"), std::string::npos)
      << failed.front()->str("error");
  EXPECT_TRUE(of_type(r, "queue_reopened").empty());
  EXPECT_TRUE(of_type(r, "queue_take").empty());
  for (const TraceEvent* e : of_type(r, "disk_write")) {
    EXPECT_NE(e->str("path").rfind("/srv/queue/", 0), 0u) << e->str("path");
  }
}

}  // namespace
}  // namespace rehearse::sim
