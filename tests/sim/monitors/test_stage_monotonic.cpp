// Goal: stage_monotonic fires on a stage moving back, a terminal stage
// changing, a stage written before its handoff or not the one its status leads
// to, a handoff ignoring a listed role.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(StageMonotonic, FiresWhenAStageMovesBack) {
  Script s;
  moved(s, "2026-03-02T10:00:00Z", "ISS-1", "in_review", "REVIEWING");
  const auto bad =
      s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-1", {{"stage", "BUILDING"}});
  expect_first(run(s, base_scenario()), "stage_monotonic", bad);
}

TEST(StageMonotonic, FiresWhenATerminalStageChanges) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found in the orchestrator"}});
  const auto bad =
      s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2", {{"stage", "REVIEWING"}});
  expect_first(run(s, base_scenario()), "stage_monotonic", bad);
}

TEST(StageMonotonic, NearMissForwardMovesAndTerminalEnd) {
  Script s;
  moved(s, "2026-03-02T10:00:00Z", "ISS-1", "in_progress", "BUILDING");
  moved(s, "2026-03-02T10:10:00Z", "ISS-1", "in_review", "REVIEWING");
  status_answered(s, "2026-03-02T10:20:00Z", "ISS-1", "done");
  s.item("durable_stage", "2026-03-02T10:20:00Z", "ISS-1", {{"stage", "DONE"}});
  const Outcome o = run(s, base_scenario());
  expect_clean(o);
  EXPECT_EQ(o.tallies["items"]["ISS-1"]["stage"], "DONE");
  EXPECT_EQ(o.tallies["items"]["ISS-2"]["stage"], "BUILDING");  // from the scenario
}

// Handoff before the stage: a stage that needs an agent is written only after
// the orchestrator answered its `assign` (a 2xx since the last stage change).
// An answer to an earlier stage's handoff, or a refused one, does not count.
TEST(StageMonotonic, FiresWhenAStageNeedingAnAgentIsWrittenBeforeItsHandoff) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  status_answered(s, "2026-03-02T10:10:00Z", "ISS-1", "in_progress");
  const auto bad =
      s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-1", {{"stage", "BUILDING"}});
  assign_answered(s, "2026-03-02T10:10:01Z", "ISS-1");  // sent after the write
  expect_first(run(s, base_scenario()), "stage_monotonic", bad);

  Script stale;  // BUILDING's handoff does not cover REVIEWING
  stale.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  moved(stale, "2026-03-02T10:10:00Z", "ISS-1", "in_progress", "BUILDING");
  status_answered(stale, "2026-03-02T10:19:00Z", "ISS-1", "in_review");
  assign_answered(stale, "2026-03-02T10:19:00Z", "ISS-1", 422);  // agent not available
  const auto stale_bad =
      stale.item("durable_stage", "2026-03-02T10:20:00Z", "ISS-1", {{"stage", "REVIEWING"}});
  const Outcome o = run(stale, base_scenario());
  expect_first(o, "stage_monotonic", stale_bad);
  EXPECT_EQ(o.seen.size(), 1u) << describe(o.seen);

  Script near;  // handed over, then written; DONE needs no agent
  near.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  status_answered(near, "2026-03-02T10:09:00Z", "ISS-1", "in_progress");
  assign_answered(near, "2026-03-02T10:09:00Z", "ISS-1");
  near.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-1", {{"stage", "BUILDING"}});
  near.item("durable_stage", "2026-03-02T10:15:00Z", "ISS-1", {{"stage", "BUILDING"}});
  moved(near, "2026-03-02T10:20:00Z", "ISS-1", "in_review", "REVIEWING");
  status_answered(near, "2026-03-02T10:30:00Z", "ISS-1", "done");
  near.item("durable_stage", "2026-03-02T10:30:00Z", "ISS-1", {{"stage", "DONE"}});
  expect_clean(run(near, base_scenario()));
}

// The status mapping (docs/semantics.md §8): a change goes to the later of the
// stored stage and the stage of the status the orchestrator last answered.
TEST(StageMonotonic, FiresWhenAStatusLeadsToAnotherStage) {
  Script s;  // in_review from DESIGNING is REVIEWING, not BUILDING
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  const auto bad = moved(s, "2026-03-02T10:10:00Z", "ISS-1", "in_review", "BUILDING");
  expect_first(run(s, base_scenario()), "stage_monotonic", bad);

  Script unknown;  // a status the table does not know moves nothing
  unknown.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  const auto unknown_bad = moved(unknown, "2026-03-02T10:10:00Z", "ISS-1", "blocked", "BUILDING");
  expect_first(run(unknown, base_scenario()), "stage_monotonic", unknown_bad);

  Script silent;  // no answer since the last stage: nothing called for a change
  silent.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  moved(silent, "2026-03-02T10:10:00Z", "ISS-1", "in_progress", "BUILDING");
  const auto silent_bad =
      silent.item("durable_stage", "2026-03-02T10:20:00Z", "ISS-1", {{"stage", "DONE"}});
  expect_first(run(silent, base_scenario()), "stage_monotonic", silent_bad);

  Script legacy;  // an unknown stored stage (a legacy value) is left as it is
  Scenario legacy_world = base_scenario();
  legacy_world.jobs.back().items.front().stage = "PLANNING";
  status_answered(legacy, "2026-03-02T10:10:00Z", "ISS-1", "done");
  const auto legacy_bad =
      legacy.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-1", {{"stage", "DONE"}});
  expect_first(run(legacy, legacy_world), "stage_monotonic", legacy_bad);
}

TEST(StageMonotonic, NearMissEachStatusToItsStage) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-1", {{"stage", "DESIGNING"}});
  status_answered(s, "2026-03-02T10:05:00Z", "ISS-1", "blocked");       // moves nothing
  moved(s, "2026-03-02T10:10:00Z", "ISS-1", "in_review", "REVIEWING");  // skips BUILDING
  status_answered(s, "2026-03-02T10:20:00Z", "ISS-1", "in_progress");   // never back
  status_answered(s, "2026-03-02T10:30:00Z", "ISS-1", "done");
  s.item("durable_stage", "2026-03-02T10:30:00Z", "ISS-1", {{"stage", "DONE"}});
  s.item("durable_stage", "2026-03-02T10:40:00Z", "ISS-2", {{"stage", "BUILDING"}});
  status_answered(s, "2026-03-02T10:50:00Z", "ISS-2", "todo");  // the later: BUILDING stays
  s.item("durable_stage", "2026-03-02T11:00:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found"}});  // a 404's
  expect_clean(run(s, base_scenario(), at("2026-03-02T11:10:00Z")));
}

// Roles of a handoff (docs/semantics.md §8): the lead listed under a name that
// maps to lead, the receiving agent under one that maps to the stage's role,
// in the agent list the job's cycle got. The lead is listed under a legacy
// name (manager: lead), the developer under a name no role has (qa).
Scenario role_mixup(const char* lead_role, const char* dev_role) {
  Scenario sc = base_scenario();
  sc.env["AGENT_DEV_ID"] = "agent-dev-0b44e1d2";
  sc.services.orchestrator->agents = {{kAgentId, lead_role, true},
                                      {"agent-dev-0b44e1d2", dev_role, true}};
  return sc;
}

std::size_t assigned(Script& s, const char* t, const std::string& item, const char* agent) {
  TraceEvent e;
  e.t = at(t);
  e.type = "issue_assigned";
  e.service = "orchestrator";
  e.job = "reconcile";
  e.item = item;
  e.data = {{"agent", agent}};
  return s.add_event(std::move(e));
}

TEST(StageMonotonic, FiresWhenAHandoffIgnoresAListedRole) {
  const auto handoff = [](const char* status, const char* agent, bool lead_removed_first) {
    Script s;
    if (lead_removed_first)
      s.add("agent_removed", "2026-03-02T09:59:00Z", {}, std::nullopt, {{"agent", "agent-le"}});
    agents_listed(s, "2026-03-02T10:00:00Z");
    status_answered(s, "2026-03-02T10:00:01Z", "ISS-1", status);
    return std::make_pair(s, assigned(s, "2026-03-02T10:00:02Z", "ISS-1", agent));
  };
  {  // the developer is listed as 'qa': no role, so a config error
    auto [s, bad] = handoff("in_progress", "agent-de", false);
    expect_first(run(s, role_mixup("manager", "qa")), "stage_monotonic", bad);
  }
  {  // the lead is listed as a developer: every handoff is a config error
    auto [s, bad] = handoff("in_progress", "agent-de", false);
    expect_first(run(s, role_mixup("developer", "dev")), "stage_monotonic", bad);
  }
  {  // the lead was gone from the list the cycle got
    auto [s, bad] = handoff("in_review", "agent-le", true);
    expect_first(run(s, role_mixup("lead", "dev")), "stage_monotonic", bad);
  }
  {  // a review handed to the developer
    auto [s, bad] = handoff("in_review", "agent-de", false);
    expect_first(run(s, role_mixup("lead", "dev")), "stage_monotonic", bad);
  }
}

TEST(StageMonotonic, NearMissHandoffsToAgentsListedUnderTheirRoles) {
  Script s;
  agents_listed(s, "2026-03-02T10:00:00Z");
  status_answered(s, "2026-03-02T10:00:01Z", "ISS-1", "in_review");
  assigned(s, "2026-03-02T10:00:02Z", "ISS-1", "agent-le");  // manager: a legacy lead
  // Removed after the cycle's list: the list the cycle got still had it.
  s.add("agent_removed", "2026-03-02T10:00:03Z", {}, std::nullopt, {{"agent", "agent-le"}});
  assigned(s, "2026-03-02T10:00:04Z", "ISS-1", "agent-le");
  const Outcome o = run(s, role_mixup("manager", "engineer"), at("2026-03-02T10:05:00Z"));
  EXPECT_FALSE(fired(o, "stage_monotonic", "")) << describe(o.seen);
}

// The witness reads the world's decoding of the durable pipeline file, not the
// core's log: a core whose log says the stage moved forward while the file
// moved back is caught; a log line alone (stage_changed) is no evidence.
TEST(StageMonotonic, JudgesTheDurableFileNotTheCoresLog) {
  Script s;
  s.item("stage_changed", "2026-03-02T10:00:00Z", "ISS-2",
         {{"from", "BUILDING"}, {"to", "DESIGNING"}});  // a log line: not read
  const Outcome quiet = run(s, base_scenario());
  EXPECT_TRUE(quiet.seen.empty()) << describe(quiet.seen);
  s.item("stage_changed", "2026-03-02T10:05:00Z", "ISS-2",
         {{"from", "BUILDING"}, {"to", "REVIEWING"}});  // what the core says
  const auto bad = s.item("durable_stage", "2026-03-02T10:05:00Z", "ISS-2",
                          {{"stage", "DESIGNING"}});  // what the disk holds
  expect_first(run(s, base_scenario()), "stage_monotonic", bad);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
