// Goal: the reconcile job in its world moves pipeline stages as incident
// 000's cases require (docs/semantics.md §8, §11): a 404 ends the item and it
// is never queried again; out-of-order statuses never regress a stage; a
// configuration error defers the item exactly one hour (and such attempts are
// never more often than hourly); network errors and 5xx back an item off
// exponentially (1 min doubling, capped at 1 h); after a migration every
// stored id is validated in the first cycle; agent ids appear in logs and
// traces only as 8 characters.
// Method: the Reconciler and ReconcileJob on the simulated world (Simulator,
// SimServices with the SimOrchestrator, SimLog into a Trace, the
// PipelineStore over the SimDisk bound to the simulator): no mocks. Faults are
// injected only in the orchestrator (status changes, migrations, agent
// removal, error windows); checks read cycle reports, the durable store, the
// orchestrator's per-issue counters and the trace.
#include "model/reconcile.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "model/agent_roles.hpp"
#include "model/pipeline_store.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/orchestrator.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/model/reconcile_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::reconcile_test {
namespace {

using sim::OrchestratorAgent;
using sim::OrchestratorIssue;
using sim::OrchestratorService;
using sim::SimOrchestrator;
using sim::TraceEvent;

OrchestratorService orchestrator(std::vector<OrchestratorIssue> issues,
                                 DurationMs latency_ms = 100) {
  OrchestratorService service;
  service.instance = "orch-a";
  service.issues = std::move(issues);
  service.agents = {OrchestratorAgent{kLeadId, "lead", true},
                    OrchestratorAgent{kDevId, "dev", true}, OrchestratorAgent{kOpsId, "ops", true},
                    OrchestratorAgent{kPlanId, "planning", true}};
  service.timing.latency_ms = latency_ms;
  return service;
}

ReconcileConfig config_for(const std::vector<std::string>& issues) {
  ReconcileConfig config;
  config.store_dir = "/pipeline";
  for (const std::string& issue : issues)
    config.items.push_back(ReconcileSeed{issue, kStageDesigning, {}});
  return config;
}

Task<void> cycle_loop(Clock& clock, ReconcileJob& job, TimeMs first_ms, DurationMs period_ms,
                      int count, std::vector<CycleReport>& out) {
  for (int i = 0; i < count; ++i) {
    const TimeMs slot = first_ms + i * period_ms;
    co_await clock.sleep_until(slot);
    RunContext context{"reconcile", slot, 1, false};
    const RunOutcome outcome = co_await job.run(context);
    REHEARSE_ASSERT(outcome.kind == job.last_report().outcome.kind);
    out.push_back(job.last_report());
  }
}

// The simulated world of one reconcile job.
struct World {
  World(const OrchestratorService& service, ReconcileConfig config, Environment env = default_env(),
        std::uint64_t seed = 7)
      : sim({.start_ms = kStart, .seed = seed}),
        services(sim, trace),
        log(sim, trace),
        disk(&trace, sim.rng().derive("disk")),
        orch(sim, trace, service),
        job(sim.clock(), services, log, disk, std::move(env), std::move(config)) {
    sim::bind_to_simulator(disk, sim);
    services.add(orch);
    worker = sim.add_process("worker", [](sim::Simulator&, sim::ProcessId) {});
    sim.boot(worker);
  }

  // Runs `count` cycles, one every `period_ms` from `first_ms`, to the end.
  std::vector<CycleReport> run_cycles(DurationMs period_ms, int count,
                                      std::optional<TimeMs> first_ms = std::nullopt) {
    std::vector<CycleReport> reports;
    sim.spawn(worker,
              cycle_loop(sim.clock(), job, first_ms.value_or(sim.now()), period_ms, count, reports),
              "cycles");
    const sim::RunResult result = sim.run();
    REHEARSE_ASSERT(result.ok());
    return reports;
  }

  PipelineItem item(const std::string& issue) {
    auto found = job.store().find(issue);
    REHEARSE_ASSERT(found.ok());
    REHEARSE_ASSERT(found->has_value());
    return **found;
  }

  std::vector<TraceEvent> events(const std::string& type, const std::string& issue = {}) const {
    std::vector<TraceEvent> out;
    for (const TraceEvent& e : trace.events()) {
      if (e.type == type && (issue.empty() || e.item == issue)) out.push_back(e);
    }
    return out;
  }

  // Instants at which get_issue was sent for `issue`.
  std::vector<TimeMs> query_times(const std::string& issue) const {
    std::vector<TimeMs> out;
    for (const TraceEvent& e : trace.events()) {
      if (e.type == "service_call" && e.item == issue && e.str("operation") == "get_issue") {
        out.push_back(e.t);
      }
    }
    return out;
  }

  sim::Simulator sim;
  sim::Trace trace;
  sim::SimServices services;
  sim::SimLog log;
  sim::SimDisk disk;
  SimOrchestrator orch;
  ReconcileJob job;
  sim::ProcessId worker = 0;
};

// ============================================================ simulated world

// 000: a 404 ends the item, with an explicit reason, and it is never queried again.
TEST(ReconcileWorld, NotFoundEndsTheItemAndItIsNeverQueriedAgain) {
  World w(orchestrator({{"ISS-1", "in_progress"}}), config_for({"ISS-1", "ISS-LOST"}));
  const auto reports = w.run_cycles(5 * kMinuteMs, 12);
  ASSERT_EQ(reports.size(), 12u);
  for (const CycleReport& r : reports) EXPECT_EQ(r.outcome.kind, RunOutcomeKind::success);
  const PipelineItem lost = w.item("ISS-LOST");
  EXPECT_EQ(lost.stage, kStageDesignFailed);
  EXPECT_NE(lost.reconcile_error.find("not found"), std::string::npos) << lost.reconcile_error;
  EXPECT_NE(lost.reconcile_error.find("HTTP 404"), std::string::npos) << lost.reconcile_error;
  EXPECT_NE(lost.reconcile_error.find("will not be queried again"), std::string::npos);
  EXPECT_EQ(w.orch.queries("ISS-LOST"), 1u);
  EXPECT_EQ(w.orch.queries_after_not_found("ISS-LOST"), 0u);
  EXPECT_EQ(w.query_times("ISS-LOST").size(), 1u);
  ASSERT_EQ(w.events("item_failed", "ISS-LOST").size(), 1u);
  EXPECT_EQ(w.events("item_failed", "ISS-LOST")[0].str("failure_class"), "not_found");
  const auto changed = w.events("stage_changed", "ISS-LOST");
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].str("from"), "DESIGNING");
  EXPECT_EQ(changed[0].str("to"), "DESIGN_FAILED");
  // Requests are attributed to the job, slot and item.
  const auto calls = w.events("service_call", "ISS-LOST");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].job, "reconcile");
  EXPECT_EQ(calls[0].slot, kStart);
  EXPECT_EQ(calls[0].str("request_id"),
            "reconcile/" + format_instant(kStart) + "/a1/get_issue/ISS-LOST");
  // The healthy item went on: queried every cycle, advanced once.
  EXPECT_EQ(w.item("ISS-1").stage, kStageBuilding);
  EXPECT_EQ(w.orch.queries("ISS-1"), 12u + 1u);  // 12 get_issue + 1 assign
  EXPECT_EQ(w.orch.assignments("ISS-1"), 1u);
}

// An issue that disappears between get_issue and assign ends the same way.
TEST(ReconcileWorld, NotFoundOnAssignEndsTheItemToo) {
  World w(orchestrator({{"ISS-1", "in_progress"}}), config_for({"ISS-1"}));
  // list_agents 0-100 ms, get_issue 100-200 ms, assign sent at 200 ms.
  w.orch.schedule_delete_issues(kStart + 150, {"ISS-1"}, std::nullopt);
  w.run_cycles(5 * kMinuteMs, 4);
  const PipelineItem item = w.item("ISS-1");
  EXPECT_EQ(item.stage, kStageDesignFailed);
  EXPECT_NE(item.reconcile_error.find("assign answered HTTP 404"), std::string::npos)
      << item.reconcile_error;
  EXPECT_EQ(w.orch.queries("ISS-1"), 2u);  // one get_issue, one assign, nothing after
  EXPECT_EQ(w.orch.queries_after_not_found("ISS-1"), 0u);
  EXPECT_EQ(w.orch.assignments("ISS-1"), 0u);
}

// 000: out-of-order external statuses never regress a stage, and the final
// stage is the furthest any observed status pointed to.
REHEARSE_PROP(ReconcileWorld, OutOfOrderStatusesNeverRegress, ()) {
  const std::string start = *rc::gen::elementOf(all_stages());
  const auto statuses =
      *rc::gen::container<std::vector<std::string>>(*rc::gen::inRange(1, 10),
                                                    rc::gen::elementOf(all_statuses()));
  ReconcileConfig config = config_for({});
  config.items.push_back(ReconcileSeed{"ISS-1", start, {}});
  World w(orchestrator({{"ISS-1", "todo"}}), config, default_env(),
          *rc::gen::inRange<std::uint64_t>(1, 1000));
  // Status i is set between cycle i and cycle i+1.
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    w.orch.schedule_issue_status(kStart + static_cast<TimeMs>(i) * 10 * kMinuteMs + 5 * kMinuteMs,
                                 "ISS-1", statuses[i]);
  }
  const auto reports = w.run_cycles(10 * kMinuteMs, static_cast<int>(statuses.size()) + 1);
  RC_ASSERT(reports.size() == statuses.size() + 1);

  std::string expected = next_stage(start, "todo");
  for (const std::string& status : statuses) expected = next_stage(expected, status);
  RC_ASSERT(w.item("ISS-1").stage == expected);
  std::string stage = start;
  for (const TraceEvent& e : w.events("stage_changed", "ISS-1")) {
    RC_ASSERT(e.str("from") == stage);
    RC_ASSERT(!is_terminal_stage(stage));
    RC_ASSERT(order_of(e.str("to")) > order_of(stage));
    stage = e.str("to");
  }
  RC_ASSERT(stage == expected);
  // A terminal item is not queried after it became terminal.
  if (is_terminal_stage(start)) RC_ASSERT(w.orch.queries("ISS-1") == 0u);
}

// 000: a configuration error (lead agent missing) defers the item exactly one
// hour, every hour, and the cycle itself succeeds.
TEST(ReconcileWorld, ConfigErrorDefersExactlyOneHour) {
  OrchestratorService service = orchestrator({{"ISS-1", "in_progress"}}, /*latency_ms=*/0);
  service.agents[0].present = false;  // the lead agent is missing from the list
  World w(service, config_for({"ISS-1"}));
  const auto reports = w.run_cycles(kMinuteMs, 3 * 60 + 1);  // 3 h of one-minute cycles
  for (const CycleReport& r : reports) EXPECT_EQ(r.outcome.kind, RunOutcomeKind::success);

  const auto deferred = w.events("item_deferred", "ISS-1");
  ASSERT_EQ(deferred.size(), 4u);  // at 0, 1 h, 2 h and 3 h
  for (std::size_t i = 0; i < deferred.size(); ++i) {
    EXPECT_EQ(deferred[i].t, kStart + static_cast<TimeMs>(i) * kHourMs);
    EXPECT_EQ(deferred[i].str("until"), format_instant(deferred[i].t + kHourMs));
    EXPECT_EQ(deferred[i].str("failure_class"), "config");
    EXPECT_NE(deferred[i].str("reason").find("lead agent agt-lead (AGENT_LEAD_ID) is missing"),
              std::string::npos)
        << deferred[i].str("reason");
  }
  // Queried once an hour, never in between.
  const auto times = w.query_times("ISS-1");
  ASSERT_EQ(times.size(), 4u);
  for (std::size_t i = 1; i < times.size(); ++i) EXPECT_EQ(times[i] - times[i - 1], kHourMs);
  const PipelineItem item = w.item("ISS-1");
  EXPECT_EQ(item.stage, kStageDesigning);
  EXPECT_EQ(item.next_attempt_at, kStart + 4 * kHourMs);
  EXPECT_EQ(item.last_config_error_at, kStart + 3 * kHourMs);
  EXPECT_NE(item.reconcile_error.find("lead agent"), std::string::npos);
  EXPECT_EQ(w.orch.calls("assign"), 0u);  // nothing is handed over without a lead
}

// A refusal on an item's very first query leaves it without a validated
// instance; the next cycles must not "validate" it inside its deferral (found
// by the swarm: a 400 at cycle 0, then a query every cycle after it).
TEST(ReconcileWorld, RefusalOnTheFirstQueryIsNotRevalidatedInsideTheHour) {
  World w(orchestrator({{"ISS-1", "in_progress"}}), config_for({"ISS-1"}));
  w.orch.add_fault(sim::OrchestratorFault{"get_issue", kStart, kStart + 10 * kMinuteMs, 1.0, 400,
                                          TransportErrorKind::none, "bad request"});
  w.run_cycles(5 * kMinuteMs, 2 * 12 + 1);  // 2 h of five-minute cycles
  const auto times = w.query_times("ISS-1");
  ASSERT_GE(times.size(), 2u);
  EXPECT_EQ(times[0], kStart + 100);  // after list_agents (100 ms)
  const auto replies = w.events("item_deferred", "ISS-1");
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_GE(times[1], replies[0].t + kHourMs) << format_instant(times[1]);
  EXPECT_EQ(w.item("ISS-1").stage, kStageBuilding);  // then it recovers and moves on
}

// After a migration, a due attempt the new instance refuses (a 403) is that
// instance's answer about the item: it is not queried again for validation
// inside its hour (not even by a validation-only query one cycle after the
// refusal).
TEST(ReconcileWorld, ARefusalFromTheNewInstanceIsNotValidatedAgainInsideTheHour) {
  World w(orchestrator({{"ISS-1", "in_progress"}}), config_for({"ISS-1"}));
  w.orch.schedule_delete_issues(kStart + 7 * kMinuteMs, {}, std::string("orch-b"));
  w.orch.add_fault(sim::OrchestratorFault{"get_issue", kStart + 8 * kMinuteMs,
                                          kStart + 12 * kMinuteMs, 1.0, 403,
                                          TransportErrorKind::none, "forbidden"});
  w.run_cycles(5 * kMinuteMs, 2 * 12 + 1);  // 2 h of five-minute cycles
  const auto deferred = w.events("item_deferred", "ISS-1");
  ASSERT_EQ(deferred.size(), 1u);
  for (const TimeMs t : w.query_times("ISS-1")) {
    EXPECT_FALSE(t > deferred[0].t && t < deferred[0].t + kHourMs) << format_instant(t);
  }
  EXPECT_EQ(w.item("ISS-1").validated_instance, "orch-b");
}

// With a batch of one after a migration, the item left out of the batch is
// validated only, and the new instance refuses it; that refusal counts for
// the hour like a due attempt's (the item is not asked in full at the next
// cycle, 30 minutes after the refusal).
TEST(ReconcileWorld, AValidationOnlyRefusalHoldsTheNextAttemptForAnHour) {
  ReconcileConfig config = config_for({"A", "B"});
  config.batch_size = 1;
  World w(orchestrator({{"A", "in_progress"}, {"B", "in_progress"}}), config);
  w.orch.schedule_delete_issues(kStart + 7 * kMinuteMs, {}, std::string("orch-b"));
  w.orch.add_fault(sim::OrchestratorFault{"get_issue", kStart + 8 * kMinuteMs,
                                          kStart + 12 * kMinuteMs, 1.0, 403,
                                          TransportErrorKind::none, "forbidden"});
  w.run_cycles(5 * kMinuteMs, 2 * 12 + 1);  // 2 h of five-minute cycles
  for (const char* issue : {"A", "B"}) {
    std::vector<TimeMs> refused;
    for (const TraceEvent& e : w.events("service_reply", issue)) {
      if (e.num("status") == 403) refused.push_back(e.t);
    }
    ASSERT_EQ(refused.size(), 1u) << issue;  // both asked in the 10-minute cycle
    for (const TimeMs t : w.query_times(issue)) {
      EXPECT_FALSE(t > refused[0] && t < refused[0] + kHourMs) << issue << " " << format_instant(t);
    }
    EXPECT_EQ(w.item(issue).validated_instance, "orch-b") << issue;
  }
}

// Invariant 8 from the trace: config-error attempts at most hourly, whatever
// the cycle period and whatever else happens to the item (random periods,
// a 503 window and a migration in the middle).
REHEARSE_PROP(ReconcileWorld, ConfigErrorAttemptsNeverMoreOftenThanHourly, ()) {
  const DurationMs period_ms = *rc::gen::inRange<DurationMs>(3, 40) * kMinuteMs;
  const TimeMs outage_ms = *rc::gen::inRange<DurationMs>(0, 180) * kMinuteMs;
  OrchestratorService service = orchestrator({{"ISS-1", "in_progress"}, {"ISS-2", "in_review"}});
  service.agents[1].present = false;  // dev missing: BUILDING handoffs fail; REVIEWING works
  World w(service, config_for({"ISS-1", "ISS-2"}), default_env(),
          *rc::gen::inRange<std::uint64_t>(1, 1000));
  w.orch.add_fault(sim::OrchestratorFault{"get_issue", kStart + outage_ms,
                                          kStart + outage_ms + 20 * kMinuteMs, 1.0, 503,
                                          TransportErrorKind::none, "outage"});
  w.orch.schedule_delete_issues(kStart + *rc::gen::inRange<DurationMs>(0, 200) * kMinuteMs, {},
                                std::string("orch-b"));
  const int cycles = static_cast<int>(4 * kHourMs / period_ms);
  w.run_cycles(period_ms, cycles);
  const auto deferred = w.events("item_deferred", "ISS-1");
  RC_ASSERT(!deferred.empty());
  for (std::size_t i = 1; i < deferred.size(); ++i) {
    RC_ASSERT(deferred[i].t - deferred[i - 1].t >= kHourMs);
  }
  RC_ASSERT(w.item("ISS-2").stage == std::string(kStageReviewing));
}

// Lead agent removed, restored 90 minutes later: hourly deferrals, then the
// next cycle after the deferral ends recovers (and hands the work over once).
TEST(ReconcileWorld, LeadRemovedThenRestoredRecoversOnTheNextCycle) {
  World w(orchestrator({{"ISS-1", "in_progress"}}, 0), config_for({"ISS-1"}));
  w.orch.remove_agent(kLeadId);
  w.orch.schedule_restore_agent(kStart + 90 * kMinuteMs, kLeadId);
  w.run_cycles(5 * kMinuteMs, 37);  // 3 h
  const auto deferred = w.events("item_deferred", "ISS-1");
  ASSERT_EQ(deferred.size(), 2u);
  EXPECT_EQ(deferred[0].t, kStart);
  EXPECT_EQ(deferred[1].t, kStart + kHourMs);
  const auto changed = w.events("stage_changed", "ISS-1");
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].t, kStart + 2 * kHourMs);  // the first cycle at or after the deferral
  EXPECT_EQ(changed[0].str("to"), "BUILDING");
  EXPECT_EQ(w.orch.assignments("ISS-1"), 1u);
  EXPECT_EQ(w.events("agent_restored").size(), 1u);
  EXPECT_EQ(w.events("agent_restored")[0].str("agent"), "agt-lead");
  const PipelineItem item = w.item("ISS-1");
  EXPECT_EQ(item.stage, kStageBuilding);
  EXPECT_TRUE(item.reconcile_error.empty());
}

// Network errors and 5xx: per-item backoff 1, 2, 4, ... minutes, capped at
// 1 h; the item is queried exactly when due and recovers after the window.
TEST(ReconcileWorld, ServerErrorsBackOffDoublingCappedAtOneHour) {
  // get_issue answers 503 for 4 h (list_agents keeps working).
  const sim::OrchestratorFault fault{
      "get_issue", kStart, kStart + 4 * kHourMs, 1.0, 503, TransportErrorKind::none, "503"};
  World w(orchestrator({{"ISS-1", "in_progress"}}, 0), config_for({"ISS-1"}));
  w.orch.add_fault(fault);
  w.run_cycles(kMinuteMs, 6 * 60);
  const auto backoffs = w.events("item_backoff", "ISS-1");
  // Failures at 0, 1, 3, 7, 15, 31, 63, 123 and 183 min.
  const std::vector<DurationMs> delays = {1, 2, 4, 8, 16, 32, 60, 60, 60};
  ASSERT_EQ(backoffs.size(), delays.size());
  TimeMs previous = -1;
  for (std::size_t i = 0; i < delays.size(); ++i) {
    EXPECT_EQ(backoffs[i].num("failures"), static_cast<std::int64_t>(i) + 1);
    EXPECT_EQ(backoffs[i].str("failure_class"), "provider_5xx");
    EXPECT_EQ(parse_instant(backoffs[i].str("until")).value() - backoffs[i].t,
              delays[i] * kMinuteMs);
    if (previous >= 0) {
      EXPECT_EQ(backoffs[i].t - previous, delays[i - 1] * kMinuteMs);
    }
    previous = backoffs[i].t;
  }
  // The 10th attempt, at 183 + 60 = 243 min, is after the window: it succeeds.
  const auto times = w.query_times("ISS-1");
  ASSERT_GT(times.size(), delays.size());
  EXPECT_EQ(times[delays.size()], kStart + 243 * kMinuteMs);
  const PipelineItem item = w.item("ISS-1");
  EXPECT_EQ(item.stage, kStageBuilding);
  EXPECT_EQ(item.failures, 0);
  EXPECT_TRUE(item.reconcile_error.empty());
}

TEST(ReconcileWorld, NetworkErrorsBackOffPerItem) {
  for (const TransportErrorKind kind :
       {TransportErrorKind::connection_reset, TransportErrorKind::timeout}) {
    World w(orchestrator({{"ISS-1", "in_progress"}}, 0), config_for({"ISS-1"}));
    w.orch.add_fault(
        sim::OrchestratorFault{"get_issue", kStart, kStart + 10 * kMinuteMs, 1.0, 0, kind, "net"});
    const auto reports = w.run_cycles(kMinuteMs, 30);
    for (const CycleReport& r : reports) EXPECT_EQ(r.outcome.kind, RunOutcomeKind::success);
    const auto backoffs = w.events("item_backoff", "ISS-1");
    ASSERT_GE(backoffs.size(), 3u) << to_string(kind);
    EXPECT_EQ(backoffs[0].str("failure_class"),
              kind == TransportErrorKind::timeout ? "timeout" : "network");
    for (std::size_t i = 0; i < backoffs.size(); ++i) {
      EXPECT_EQ(backoffs[i].num("failures"), static_cast<std::int64_t>(i) + 1);
    }
    EXPECT_EQ(w.item("ISS-1").stage, kStageBuilding);
    EXPECT_EQ(w.item("ISS-1").failures, 0);
  }
}

// 000's lesson: after a migration, the first cycle validates EVERY stored id
// (including an item deferred by a config error, without attempting its
// handoff early); lost ones end DESIGN_FAILED after exactly one 404.
TEST(ReconcileWorld, MigrationValidatesEveryStoredIdInTheFirstCycle) {
  OrchestratorService service = orchestrator({{"A", "todo"},
                                              {"B", "in_progress"},
                                              {"C", "todo"},
                                              {"D", "in_review"},
                                              {"E", "in_progress"}},
                                             0);
  ReconcileConfig config = config_for({"A", "B", "C", "D", "E"});
  config.stage_roles["BUILDING"] = "ops";  // B and E need the ops agent...
  service.agents[2].present = false;       // ...which is missing: deferred an hour
  World w(service, config);
  w.orch.schedule_delete_issues(kStart + 12 * kMinuteMs, {"C", "E"}, std::string("orch-b"));
  const auto reports = w.run_cycles(10 * kMinuteMs, 4);  // 0, 10, 20, 30 min
  ASSERT_EQ(reports.size(), 4u);
  // Cycle 0 validates everything on orch-a; cycle 2 (20 min) on orch-b.
  const auto validated = w.events("ids_validated");
  ASSERT_EQ(validated.size(), 2u);
  EXPECT_EQ(validated[0].t, kStart);
  EXPECT_EQ(validated[0].str("instance"), "orch-a");
  EXPECT_EQ(validated[0].num("validated"), 5);
  EXPECT_EQ(validated[1].str("instance"), "orch-b");
  EXPECT_EQ(validated[1].t, kStart + 20 * kMinuteMs);
  EXPECT_EQ(validated[1].num("validated"), 3);
  EXPECT_EQ(validated[1].num("lost"), 2);
  EXPECT_EQ(reports[2].instance, "orch-b");
  // Every non-terminal id was queried in that cycle, deferred B and E too.
  for (const std::string issue : {"A", "B", "C", "D", "E"}) {
    const auto times = w.query_times(issue);
    EXPECT_NE(std::find(times.begin(), times.end(), kStart + 20 * kMinuteMs), times.end()) << issue;
  }
  for (const std::string lost : {"C", "E"}) {
    EXPECT_EQ(w.item(lost).stage, kStageDesignFailed) << lost;
    EXPECT_EQ(w.orch.not_found_answers(lost), 1u) << lost;
    EXPECT_EQ(w.orch.queries_after_not_found(lost), 0u) << lost;
    EXPECT_NE(w.item(lost).reconcile_error.find("orch-b"), std::string::npos);
  }
  for (const std::string kept : {"A", "B", "D"})
    EXPECT_EQ(w.item(kept).validated_instance, "orch-b");
  // B's deferral still holds: no second config-error attempt inside the hour.
  EXPECT_EQ(w.events("item_deferred", "B").size(), 1u);
  EXPECT_EQ(w.item("B").next_attempt_at, kStart + kHourMs);
  EXPECT_EQ(w.item("B").stage, kStageDesigning);
  EXPECT_EQ(w.item("D").stage, kStageReviewing);  // lead present: handed over
}

// Agent ids appear in logs and traces only as their first 8 characters.
TEST(ReconcileWorld, LogsAndTracesCarryOnlyShortAgentIds) {
  OrchestratorService service = orchestrator({{"ISS-1", "in_progress"}, {"ISS-2", "in_review"}});
  service.agents[0].role = "ceo";  // legacy names in the list
  service.agents[1].role = "developer";
  World w(service, config_for({"ISS-1", "ISS-2"}));
  w.orch.schedule_remove_agent(kStart + kMinuteMs, kDevId);
  w.orch.schedule_issue_status(kStart + 2 * kMinuteMs, "ISS-1", "in_progress");
  w.run_cycles(30 * kMinuteMs, 3);
  EXPECT_EQ(w.item("ISS-1").stage, kStageBuilding);
  EXPECT_EQ(w.item("ISS-2").stage, kStageReviewing);
  const auto assigned = w.events("agent_assigned");
  ASSERT_EQ(assigned.size(), 2u);
  for (const TraceEvent& e : assigned) EXPECT_EQ(e.str("agent").size(), 8u);
  const std::string jsonl = w.trace.to_jsonl();
  std::string logs;
  for (const std::string& line : w.log.lines()) logs += line + "\n";
  auto stored = w.disk.live_content("/pipeline/pipeline.json");
  ASSERT_TRUE(stored.has_value());
  for (const std::string& id : {kLeadId, kDevId, kOpsId, kPlanId}) {
    EXPECT_EQ(jsonl.find(id), std::string::npos) << id;
    EXPECT_EQ(logs.find(id), std::string::npos) << id;
    EXPECT_EQ(stored->find(id), std::string::npos) << id;
  }
  EXPECT_NE(jsonl.find(short_id(kDevId)), std::string::npos);
}

TEST(ReconcileWorld, UnknownRoleNameIsAConfigErrorThatDefers) {
  ReconcileConfig config = config_for({"ISS-1"});
  config.stage_roles["BUILDING"] = "janitor";
  World w(orchestrator({{"ISS-1", "in_progress"}}, 0), config);
  const auto reports = w.run_cycles(30 * kMinuteMs, 3);
  for (const CycleReport& r : reports) EXPECT_EQ(r.outcome.kind, RunOutcomeKind::success);
  const auto deferred = w.events("item_deferred", "ISS-1");
  ASSERT_EQ(deferred.size(), 2u);  // 0 and 60 min
  EXPECT_NE(deferred[0].str("reason").find("unknown agent role 'janitor'"), std::string::npos);
  EXPECT_EQ(deferred[1].t - deferred[0].t, kHourMs);
}

TEST(ReconcileWorld, UnreachableAgentListFailsTheRunButItemsStillMove) {
  World w(orchestrator({{"ISS-1", "in_progress"}, {"ISS-2", "done"}}, 0),
          config_for({"ISS-1", "ISS-2", "ISS-GONE"}));
  w.orch.add_fault(sim::OrchestratorFault{"list_agents", kStart, kStart + 5 * kMinuteMs, 1.0, 502,
                                          TransportErrorKind::none, "gateway"});
  const auto reports = w.run_cycles(10 * kMinuteMs, 2);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].outcome.kind, RunOutcomeKind::failure);
  EXPECT_EQ(reports[0].outcome.failure_class, FailureClass::provider_5xx);
  EXPECT_EQ(reports[1].outcome.kind, RunOutcomeKind::success);
  EXPECT_EQ(w.events("orchestrator_unreachable").size(), 1u);
  // Cycle 0: handoff impossible -> backoff (not a config deferral); no agent needed for DONE.
  EXPECT_TRUE(w.events("item_deferred").empty());
  ASSERT_EQ(w.events("item_backoff", "ISS-1").size(), 1u);
  EXPECT_EQ(w.item("ISS-1").stage, kStageBuilding);
  EXPECT_EQ(w.item("ISS-2").stage, kStageDone);
  EXPECT_EQ(w.item("ISS-GONE").stage, kStageDesignFailed);
}

TEST(ReconcileWorld, CorruptPipelineFailsClosed) {
  World w(orchestrator({{"ISS-1", "in_progress"}}), config_for({"ISS-1"}));
  ASSERT_TRUE(w.disk.make_dirs("/pipeline").ok());
  const std::string garbage = "{\"format\": 1, \"items\": [{\"id\": ";
  ASSERT_TRUE(w.disk.put_durable("/pipeline/pipeline.json", garbage).ok());
  const auto reports = w.run_cycles(10 * kMinuteMs, 3);
  for (const CycleReport& r : reports) {
    EXPECT_EQ(r.outcome.kind, RunOutcomeKind::failure);
    EXPECT_EQ(r.outcome.failure_class, FailureClass::unknown);
    EXPECT_NE(r.outcome.error.find("corrupt"), std::string::npos) << r.outcome.error;
  }
  EXPECT_EQ(w.orch.calls("get_issue"), 0u);
  EXPECT_EQ(w.disk.live_content("/pipeline/pipeline.json"), garbage);
  EXPECT_EQ(w.events("pipeline_unavailable").size(), 3u);
}

TEST(ReconcileWorld, BatchSizeLimitsDueItemsPerCycle) {
  ReconcileConfig config = config_for({"A", "B", "C"});
  config.batch_size = 2;
  World w(orchestrator({{"A", "todo"}, {"B", "todo"}, {"C", "todo"}}, 0), config);
  const auto reports = w.run_cycles(10 * kMinuteMs, 3);
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].queried, 3);  // the first cycle validates every id regardless
  EXPECT_EQ(reports[1].queried, 2);
  EXPECT_EQ(reports[2].queried, 2);
}

// A visit that succeeds makes its item due again at once, so taking the due
// items in store order would give every batch to the first ones: with a batch
// of one, B would never be asked after the first cycle's validation (an item
// stuck for hours behind one always due). The longest waiting go first: A and
// B take turns, C (in a backoff) waits.
TEST(ReconcileWorld, BatchSizeTakesTheLongestWaitingDueItemsFirst) {
  ReconcileConfig config = config_for({"A", "B"});
  config.batch_size = 1;
  World w(orchestrator({{"A", "todo"}, {"B", "todo"}}, 0), config);
  const auto reports = w.run_cycles(10 * kMinuteMs, 5);
  ASSERT_EQ(reports.size(), 5u);
  EXPECT_EQ(reports[0].queried, 2);  // the first cycle validates both
  for (std::size_t i = 1; i < reports.size(); ++i) EXPECT_EQ(reports[i].queried, 1) << i;
  // Cycles 2..5: A, B, A, B after the first cycle's two.
  EXPECT_EQ(w.orch.queries("A"), 3u);
  EXPECT_EQ(w.orch.queries("B"), 3u);
}

// The integration path of the world runner: scenario JobSpec and services.
TEST(ReconcileWorld, BuildsFromScenarioInputs) {
  sim::JobSpec spec;
  spec.id = "issue-sync";
  spec.kind = sim::JobKind::reconcile;
  spec.items = {sim::ReconcileItem{"ISS-1", "DESIGNING", false},
                sim::ReconcileItem{"ISS-2", "BUILDING", false},
                sim::ReconcileItem{"ISS-9", "DESIGNING", true}};
  spec.batch_size = 5;
  const ReconcileConfig config = sim::reconcile_config_from(spec);
  ASSERT_EQ(config.items.size(), 3u);
  EXPECT_EQ(config.items[1].stage, "BUILDING");
  EXPECT_EQ(config.batch_size, 5);
  EXPECT_EQ(config.store_dir, "pipeline-issue-sync");

  OrchestratorService service =
      orchestrator({{"ISS-1", "todo"}, {"ISS-2", "in_progress"}, {"ISS-9", "todo"}});
  World w(service, config);
  w.orch.apply_job_items(spec.items);
  EXPECT_FALSE(w.orch.has_issue("ISS-9"));
  std::vector<sim::FaultSpec> faults(4);
  faults[0].kind = sim::FaultKind::issue_status;
  faults[0].at_ms = kStart + 15 * kMinuteMs;
  faults[0].issue = "ISS-2";
  faults[0].status = "in_review";
  faults[1].kind = sim::FaultKind::http_errors;
  faults[1].at_ms = kStart + 25 * kMinuteMs;
  faults[1].for_ms = 10 * kMinuteMs;
  faults[1].service = sim::ServiceKind::orchestrator;
  faults[1].http_status = 500;
  faults[2].kind = sim::FaultKind::issues_deleted;
  faults[2].at_ms = kStart + 45 * kMinuteMs;
  faults[2].issues = {"ISS-1"};
  faults[2].new_instance = "orch-b";
  faults[3].kind = sim::FaultKind::restart;
  // Each fault as the world applies it: its kind's hook (sim/world/fault_kinds.hpp),
  // here with the orchestrator as the whole world.
  sim::FaultWorld world;
  world.orchestrator = &w.orch;
  world.until_ms = kStart + kDayMs;
  for (std::size_t i = 0; i < 3; ++i) {
    const sim::FaultKindSpec& kind = sim::fault_kind_spec(faults[i].kind);
    ASSERT_TRUE(
        kind.schedule(faults[i], i, faults[i].at_ms, faults[i].end_ms(world.until_ms), world).ok());
  }
  // A restart is the worker process's business, not the orchestrator's.
  EXPECT_EQ(sim::fault_kind_spec(faults[3].kind).applies_to, sim::FaultTarget::process);
  EXPECT_FALSE(sim::fault_kind_spec(faults[3].kind).schedule);
  const auto reports = w.run_cycles(10 * kMinuteMs, 7);
  ASSERT_EQ(reports.size(), 7u);
  EXPECT_EQ(reports[3].outcome.kind, RunOutcomeKind::failure);  // 30 min: list_agents got a 500
  EXPECT_EQ(reports[3].outcome.failure_class, FailureClass::provider_5xx);
  EXPECT_EQ(w.item("ISS-9").stage, kStageDesignFailed);
  EXPECT_EQ(w.item("ISS-2").stage, kStageReviewing);
  EXPECT_EQ(w.item("ISS-1").stage, kStageDesignFailed);
  EXPECT_EQ(w.orch.instance(), "orch-b");
  EXPECT_EQ(w.events("issue_status_set", "ISS-2").size(), 1u);
  EXPECT_EQ(w.events("issue_deleted", "ISS-1").size(), 1u);
  EXPECT_EQ(w.events("instance_changed").size(), 1u);
  for (const std::string issue : {"ISS-1", "ISS-9"}) {
    EXPECT_EQ(w.orch.queries_after_not_found(issue), 0u) << issue;
  }
}

}  // namespace
}  // namespace rehearse::reconcile_test
