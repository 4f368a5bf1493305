// Goal: a crash at ANY suspension point of a reconcile cycle leaves nothing
// the semantics forbid: after the reboot the cycle is run again and the
// pipeline reaches the same end; at every instant the durable pipeline file
// decodes (never corrupt), no item's stage goes backwards and a terminal one
// never changes, an item recorded DESIGN_FAILED is never queried again, and
// config-error attempts stay at most hourly.
// Method: nine reconcile cycles (every 10 minutes) of the real ReconcileJob in
// the simulated world: SimOrchestrator with six issues meeting every kind of
// event (an assignment, a lost issue, statuses going back and forth, a
// migration that deletes an issue and changes the instance, a 503 window, the
// lead agent leaving and coming back), the PipelineStore on a SimDisk bound to
// the simulator with power-loss crashes. A small durable loop outside the
// process (like the durable job queue) re-runs a cycle cut by a crash.
// sweep_crash_points() crashes the worker after every event index of the
// baseline and reboots it a minute later; an event listener reads the durable
// pipeline file after every event and judges it. The number of points (and
// how many fell while a request was in flight) is printed and asserted.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/pipeline_store.hpp"
#include "model/reconcile.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/orchestrator.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {
namespace {

const TimeMs kStart = parse_instant("2026-12-01T09:00:00Z").value();
const std::string kLeadId = "agt-lead-5f2c81d9e0b34a7c9d11";
const std::string kDevId = "agt-dev0-93ab7c1e44d2f0a8b6c5";
const std::string kPipelineFile = "/pipeline/pipeline.json";
constexpr int kCycles = 9;

// Outside the process: which cycles finished (the durable queue's part).
struct Durable {
  std::set<TimeMs> done;
};

// A cycle whose store failed (class unknown: the disk refused, e.g. the
// process is dying) is run again, at most a few times.
Task<void> cycle_loop(Clock& clock, ReconcileJob& job, Durable& durable) {
  for (int i = 0; i < kCycles; ++i) {
    const TimeMs slot = kStart + i * 10 * kMinuteMs;
    for (int tries = 0; tries < 3 && durable.done.count(slot) == 0; ++tries) {
      co_await clock.sleep_until(slot);
      RunContext context{"issue-sync", slot, 1, false};
      const rehearse::RunOutcome outcome = co_await job.run(context);
      if (!outcome.failed() || outcome.failure_class != FailureClass::unknown) {
        durable.done.insert(slot);
      }
    }
  }
}

int order_of(const std::string& stage) {
  if (is_terminal_stage(stage)) return 10;
  return stage_rank(stage).value_or(-1);
}

struct SweepRun {
  CrashSweepRun run;
  std::vector<bool> request_in_flight;  // after each executed event
  std::map<std::string, std::string> final_stages;
  std::uint64_t repeated_after_404 = 0;  // a crash swallowed the 404 answer
  std::uint64_t disk_operations = 0;     // of the whole run
};

// crash_after: crash the worker after that many events (reboot a minute
// later). disk_fail_after: the worker dies at its (n+1)-th disk operation
// (SimDisk fail-stop: between two operations of one synchronous save).
SweepRun run_sync_day(std::optional<std::uint64_t> crash_after,
                      std::optional<std::uint64_t> disk_fail_after = std::nullopt) {
  Simulator sim(SimulatorOptions{.start_ms = kStart, .seed = 4242});
  Trace trace;
  SimServices services(sim, trace);
  SimLog log(sim, trace);
  SimDisk disk(&trace, sim.rng().derive("disk"));
  bind_to_simulator(disk, sim,
                    SimDiskBinding{ProcessCrashEffect::power_loss, DurationMs{kMinuteMs}});
  OrchestratorService service;
  service.instance = "orch-a";
  service.issues = {{"A", "in_progress"}, {"B", "todo"}, {"C", "in_review"},
                    {"D", "todo"},        {"E", "todo"}, {"F", "todo"}};
  service.agents = {{kLeadId, "ceo", true}, {kDevId, "engineer", true}};
  SimOrchestrator orch(sim, trace, service);
  services.add(orch);
  orch.delete_issues({"B"}, std::nullopt);                                  // lost before the run
  orch.schedule_issue_status(kStart + 15 * kMinuteMs, "C", "in_progress");  // goes back
  orch.schedule_issue_status(kStart + 45 * kMinuteMs, "C", "done");
  orch.schedule_delete_issues(kStart + 25 * kMinuteMs, {"D"}, std::string("orch-b"));
  orch.schedule_issue_status(kStart + 32 * kMinuteMs, "E", "in_progress");
  orch.add_fault(OrchestratorFault{"get_issue", kStart + 30 * kMinuteMs, kStart + 50 * kMinuteMs,
                                   1.0, 503, TransportErrorKind::none, "outage"});
  orch.schedule_remove_agent(kStart + 5 * kMinuteMs, kLeadId);
  orch.schedule_issue_status(kStart + 8 * kMinuteMs, "F", "in_review");
  orch.schedule_restore_agent(kStart + 20 * kMinuteMs, kLeadId);

  ReconcileConfig config;
  config.store_dir = "/pipeline";
  for (const char* issue : {"A", "B", "C", "D", "E", "F"}) {
    config.items.push_back(ReconcileSeed{issue, kStageDesigning, {}});
  }
  const Environment env{{"AGENT_LEAD_ID", kLeadId}, {"AGENT_DEV_ID", kDevId}};

  Durable durable;
  const ProcessId worker = sim.add_process("worker", [&](Simulator& s, ProcessId self) {
    ReconcileJob& job =
        s.emplace_memory<ReconcileJob>(self, s.clock(), services, log, disk, env, config);
    s.spawn(self, cycle_loop(s.clock(), job, durable), "cycles");
  });

  SweepRun out;
  std::vector<std::string> problems;
  std::map<std::string, std::string> seen;  // item -> last durable stage
  std::set<std::string> failed;             // durable DESIGN_FAILED items
  int calls_in_flight = 0;
  std::optional<std::string> last_live;
  std::optional<std::string> last_durable;
  trace.add_listener([&](const TraceEvent& e, std::size_t) {
    if (e.type == "service_call") {
      ++calls_in_flight;
      if (!e.item.empty() && failed.count(e.item) != 0) {
        problems.push_back(fmt::format("{} queried ({}) after it was recorded DESIGN_FAILED",
                                       e.item, e.str("operation")));
      }
    } else if (e.type == "service_reply") {
      --calls_in_flight;
    } else if (e.type == "issue_not_found" && !e.flag("first")) {
      ++out.repeated_after_404;
    }
  });
  sim.add_process_listener([&](ProcessId, ProcessChange change, TimeMs) {
    if (change == ProcessChange::crashed) calls_in_flight = 0;  // their replies are lost
  });
  sim.add_event_listener([&](const ExecutedEvent&) {
    out.request_in_flight.push_back(calls_in_flight > 0);
    // Judged only when the bytes changed (decoding after every event is slow).
    const std::optional<std::string> live = disk.live_content(kPipelineFile);
    if (live && live != last_live) {
      if (!decode_pipeline(*live).ok()) problems.push_back("live pipeline file does not decode");
      last_live = live;
    }
    const std::optional<std::string> durable_bytes = disk.durable_content(kPipelineFile);
    if (!durable_bytes || durable_bytes == last_durable) return;
    last_durable = durable_bytes;
    auto items = decode_pipeline(*durable_bytes);
    if (!items.ok()) {
      problems.push_back("durable pipeline file is corrupt: " + items.error().describe());
      return;
    }
    for (const PipelineItem& item : *items) {
      auto it = seen.find(item.issue);
      if (it != seen.end() && it->second != item.stage) {
        if (is_terminal_stage(it->second)) {
          problems.push_back(
              fmt::format("{}: terminal {} changed to {}", item.issue, it->second, item.stage));
        } else if (order_of(item.stage) < order_of(it->second)) {
          problems.push_back(
              fmt::format("{}: stage regressed {} -> {}", item.issue, it->second, item.stage));
        }
      }
      seen[item.issue] = item.stage;
      if (item.stage == kStageDesignFailed) failed.insert(item.issue);
    }
  });

  sim.boot(worker);
  if (crash_after) sim.plan_crash({worker, *crash_after, DurationMs{kMinuteMs}});
  if (disk_fail_after) disk.fail_stop_after(*disk_fail_after, worker);
  const RunResult result = sim.run();
  out.run.events_executed = result.events_executed;
  out.run.crash_fired = crash_after ? sim.crash_plan_fired() : sim.crash_count(worker) > 0;
  out.disk_operations = disk.operations();

  if (!result.ok()) problems.push_back("run: " + result.message);
  if (durable.done.size() != static_cast<std::size_t>(kCycles)) {
    problems.push_back(fmt::format("{} of {} cycles finished", durable.done.size(), kCycles));
  }
  const std::map<std::string, std::string> expected{
      {"A", kStageBuilding},     {"B", kStageDesignFailed}, {"C", kStageDone},
      {"D", kStageDesignFailed}, {"E", kStageBuilding},     {"F", kStageReviewing}};
  out.final_stages = seen;
  for (const auto& [issue, stage] : expected) {
    const auto it = seen.find(issue);
    const std::string got = it == seen.end() ? std::string("(absent)") : it->second;
    if (got != stage)
      problems.push_back(fmt::format("{} ended {} instead of {}", issue, got, stage));
  }
  // Invariant 8: config-error attempts at most hourly, across crashes.
  std::map<std::string, TimeMs> last_deferral;
  for (const TraceEvent& e : trace.events()) {
    if (e.type != "item_deferred") continue;
    auto it = last_deferral.find(e.item);
    if (it != last_deferral.end() && e.t - it->second < kHourMs) {
      problems.push_back(fmt::format("{} deferred twice within an hour", e.item));
    }
    last_deferral[e.item] = e.t;
  }
  // Agent ids only as 8 characters.
  const std::string jsonl = trace.to_jsonl();
  for (const std::string& id : {kLeadId, kDevId}) {
    if (jsonl.find(id) != std::string::npos) problems.push_back("a full agent id in the trace");
  }
  if (!problems.empty()) {
    std::string message = problems.front();
    if (problems.size() > 1) message += fmt::format(" (and {} more)", problems.size() - 1);
    out.run.verdict = make_error(ErrorCode::internal, message);
  }
  if (sim.is_up(worker)) sim.crash(worker);
  return out;
}

TEST(ReconcileCrash, ACrashAtEveryPointNeverRegressesNorRequeriesNorCorrupts) {
  const SweepRun baseline = run_sync_day(std::nullopt);
  ASSERT_TRUE(baseline.run.verdict.ok()) << baseline.run.verdict.error().message;
  EXPECT_EQ(baseline.repeated_after_404, 0u);

  std::uint64_t repeated_runs = 0;
  const auto report = sweep_crash_points([&](std::optional<std::uint64_t> k) {
    SweepRun run = run_sync_day(k);
    if (run.repeated_after_404 > 0) ++repeated_runs;
    return run.run;
  });
  ASSERT_TRUE(report.ok()) << report.error().message;
  std::uint64_t in_flight = 0;
  for (std::uint64_t k = 1; k < report->points; ++k) {
    if (baseline.request_in_flight.at(static_cast<std::size_t>(k - 1))) ++in_flight;
  }
  std::cout << "crash points covered: " << report->points << " (" << in_flight
            << " with an orchestrator request in flight; " << repeated_runs
            << " runs where the crash swallowed a 404 answer and the issue was asked again)"
            << std::endl;
  ::testing::Test::RecordProperty("crash_points", static_cast<int>(report->points));
  ::testing::Test::RecordProperty("crash_points_in_flight", static_cast<int>(in_flight));
  EXPECT_GE(report->points, 60u);
  EXPECT_GE(in_flight, 40u);
  for (const auto& failure : report->failures) {
    ADD_FAILURE() << "crash after " << failure.crash_after_events
                  << " events: " << failure.error.message;
  }
  EXPECT_TRUE(report->held());
}

// The same day, with the worker dying INSIDE a save instead (between two disk
// operations: after the temp write, before its fsync, before the rename...).
// Every 7th operation index is tried: 7 is prime to the operations of one
// save, so every position inside a save is hit.
TEST(ReconcileCrash, DyingBetweenDiskOperationsNeverCorruptsThePipeline) {
  const SweepRun baseline = run_sync_day(std::nullopt);
  ASSERT_TRUE(baseline.run.verdict.ok()) << baseline.run.verdict.error().message;
  ASSERT_GT(baseline.disk_operations, 100u);
  std::uint64_t points = 0;
  for (std::uint64_t n = 0; n < baseline.disk_operations; n += 7) {
    const SweepRun run = run_sync_day(std::nullopt, n);
    ++points;
    EXPECT_TRUE(run.run.crash_fired) << "fail-stop after " << n << " disk operations did not fire";
    EXPECT_TRUE(run.run.verdict.ok())
        << "fail-stop after " << n << ": " << run.run.verdict.error().message;
  }
  std::cout << "disk fail-stop points covered: " << points << " of " << baseline.disk_operations
            << " disk operations" << std::endl;
  ::testing::Test::RecordProperty("disk_fail_stop_points", static_cast<int>(points));
  EXPECT_GE(points, 20u);
}

}  // namespace
}  // namespace rehearse::sim
