// Goal: each invariant monitor (docs/semantics.md §10, sim/monitors.hpp) is a
// witness with teeth: it fires, under its own name and at the event that shows
// the fault, on a trace that breaks its invariant, and stays quiet on the
// near misses the semantics allow (a duplicate delivery after a crash inside
// the at-least-once window, repeated failure notices, slots still in flight
// at the end, slots coalesced after downtime).
// Method: hand-made traces, one fault each, plus a near miss per invariant; a
// RapidCheck property over random legal traces from a tiny generator (per-slot
// retry chains within budget, deliveries with crashes in the window, monotone
// stages, token requests with at most one reissue) that must never fire; and
// the trace of a real run (the scheduler with a group job over the simulated
// model-api and messenger, a quota outage and a restart) that must pass every
// monitor, so the monitors' event vocabulary is the one the core emits; and
// the same world with a test-only faulty variant (the core given a bigger
// retry budget than the scenario's) that must fail with retries_bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/retry_policy.hpp"
#include "model/scheduler.hpp"
#include "model/state_store.hpp"
#include "sim/messenger.hpp"
#include "sim/model_api.hpp"
#include "sim/monitors.hpp"
#include "sim/sim_disk.hpp"
#include "sim/sim_log.hpp"
#include "sim/sim_queue.hpp"
#include "sim/sim_services.hpp"
#include "sim/simulator.hpp"
#include "sim/trace.hpp"
#include "sim/world_facts.hpp"
#include "tests/sim/fleet_twin.hpp"
#include "tests/sim/monitors_group_world.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

const TimeMs kStart = at("2026-03-02T09:31:00Z");
const TimeMs kUntil = at("2026-03-02T18:00:00Z");
const std::string kAgentId = "agent-lead-7f3a9c21d4e5";

// hourly: per-job form, per_episode, max 2, 300 s fixed, default classes.
// slotty: BullMQ form, per_slot, 2 retries, fixed 10 min, every class.
// broken: no policy at all (never retried).
// weekly: "auto" on an env-overridden low-frequency schedule (3 retries).
Scenario base_scenario() {
  Scenario s;
  s.name = "monitor-unit";
  s.start_ms = kStart;
  s.until_ms = kUntil;
  s.env["WEEKLY_CRON"] = "0 17 * * MON";
  s.env["AGENT_LEAD_ID"] = kAgentId;
  JobSpec hourly;
  hourly.id = "hourly";
  hourly.schedule = "0 * * * *";
  hourly.retry_policy = json{{"max", 2}, {"backoff_sec", 300}};
  JobSpec slotty;
  slotty.id = "slotty";
  slotty.schedule = "30 * * * *";
  slotty.retry_policy = json{{"attempts", 3}, {"backoff", {{"type", "fixed"}, {"delay", "10m"}}}};
  JobSpec broken;
  broken.id = "broken";
  broken.schedule = "15 * * * *";
  JobSpec weekly;
  weekly.id = "weekly";
  weekly.schedule = "0 9 * * *";
  weekly.schedule_env = "WEEKLY_CRON";
  weekly.retry_policy = json("auto");
  JobSpec rec;
  rec.id = "reconcile";
  rec.kind = JobKind::reconcile;
  rec.schedule = "*/10 * * * *";
  rec.retry_policy = json{{"max", 0}, {"retryable_classes", json::array()}, {"reason", "cycle"}};
  rec.items.push_back({"ISS-1", "DESIGNING", false});
  rec.items.push_back({"ISS-2", "BUILDING", false});
  // Fetch jobs: the schedule and retry traces below carry no deliveries; the
  // delivery checks of group jobs have their own scenario (group_hourly()).
  for (JobSpec* j : {&hourly, &slotty, &broken, &weekly}) j->kind = JobKind::fetch;
  s.jobs = {hourly, slotty, broken, weekly, rec};
  OrchestratorService orch;
  orch.agents.push_back({kAgentId, "lead", true});
  s.services.orchestrator = orch;
  return s;
}

// The base scenario with only the named jobs (end checks then concern them only).
Scenario only(std::vector<std::string> ids) {
  Scenario s = base_scenario();
  std::vector<JobSpec> kept;
  for (const JobSpec& j : s.jobs) {
    if (std::find(ids.begin(), ids.end(), j.id) != ids.end()) kept.push_back(j);
  }
  s.jobs = kept;
  return s;
}

// A hand-made trace: events with their index.
class Script {
 public:
  std::size_t add(const std::string& type, const char* t, const std::string& job = {},
                  std::optional<const char*> slot = std::nullopt, json data = json::object()) {
    TraceEvent e;
    e.t = at(t);
    e.seq = events_.size();
    e.type = type;
    e.job = job;
    if (slot) e.slot = at(*slot);
    e.data = std::move(data);
    events_.push_back(std::move(e));
    return events_.size() - 1;
  }
  // The queue entry id of a job's run (a new one at each start).
  std::uint64_t start_run(const std::string& job) { return runs_[job] = next_run_++; }
  std::uint64_t run_of(const std::string& job) const {
    const auto it = runs_.find(job);
    return it == runs_.end() ? 0 : it->second;
  }
  std::size_t add_event(TraceEvent e) {
    e.seq = events_.size();
    events_.push_back(std::move(e));
    return events_.size() - 1;
  }
  std::size_t item(const std::string& type, const char* t, const std::string& item, json data) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.item = item;
    e.data = std::move(data);
    if (type == "service_call" || type == "service_reply") e.service = "orchestrator";
    return add_event(std::move(e));
  }
  // service_call / service_reply / token events of a brokerage request.
  std::size_t broker(const std::string& type, const char* t, const std::string& rid, json data) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.service = "brokerage";
    e.job = "fetch";
    data["request_id"] = rid;
    e.data = std::move(data);
    return add_event(std::move(e));
  }
  const std::vector<TraceEvent>& events() const { return events_; }

 private:
  std::vector<TraceEvent> events_;
  std::map<std::string, std::uint64_t> runs_;
  std::uint64_t next_run_ = 1;

 public:
  std::map<std::string, std::int64_t> coalesced;  // per job: the durable coalesced_slots
};

struct Outcome {
  std::vector<Violation> seen;  // from observe, in order
  std::vector<Violation> end;   // from finish
  json tallies;
  std::vector<SlotRecord> slots;  // the slot tracker's records at the end
};

Outcome observe_all(const Script& script, const Scenario& scenario, TimeMs until,
                    const std::vector<std::string>& secrets) {
  MonitorSet set(scenario);
  for (const std::string& s : secrets) set.add_secret(s);
  Outcome o;
  for (std::size_t i = 0; i < script.events().size(); ++i) {
    if (auto v = set.observe(script.events()[i], i)) o.seen.push_back(*v);
  }
  o.end = set.finish(until);
  o.tallies = set.tallies();
  o.slots = set.slot_records();
  return o;
}

// What the monitors concluded, as text: every violation and slot record, and
// the tallies without the per-slot lists.
std::string conclusions(const Outcome& o) {
  std::string out;
  for (const auto* list : {&o.seen, &o.end}) {
    for (const Violation& v : *list)
      out += v.invariant + " @" + std::to_string(v.event_index) + ": " + v.message + "\n";
  }
  for (const SlotRecord& r : o.slots) {
    out += r.job + " " + std::to_string(r.slot) + " " + to_string(r.state) + " " +
           std::to_string(r.attempts) + " " + r.failure_class.value_or("-") + "\n";
  }
  return out + twin::without_slot_lists(o.tallies).dump();
}

bool fired(const Outcome& o, const std::string& invariant, const std::string& text);

// Every script is judged twice: as written, and with its jobs as a fleet's
// (tests/sim/fleet_twin.hpp: finished slots kept compactly, no slot history);
// the conclusions must be the same.
Outcome run(const Script& script, const Scenario& scenario, TimeMs until = kUntil,
            std::vector<std::string> secrets = {}) {
  Outcome o = observe_all(script, scenario, until, secrets);
  const Outcome twin = observe_all(script, twin::fleet_twin(scenario), until, secrets);
  EXPECT_EQ(conclusions(o), conclusions(twin)) << "the fleet twin was judged differently";
  return o;
}

std::string describe(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) {
    out += v.invariant + " @" + std::to_string(v.event_index) + ": " + v.message + "\n";
  }
  return out.empty() ? "(none)" : out;
}

void expect_first(const Outcome& o, const std::string& invariant, std::size_t index) {
  ASSERT_FALSE(o.seen.empty()) << "expected " << invariant << " at " << index;
  EXPECT_EQ(o.seen.front().invariant, invariant) << describe(o.seen);
  EXPECT_EQ(o.seen.front().event_index, index) << describe(o.seen);
  EXPECT_FALSE(o.seen.front().message.empty());
}

void expect_clean(const Outcome& o) {
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(o.end.empty()) << describe(o.end);
}

// A regular run of `job` for `slot` handed out and run at `t`, its outcome.
// A slot handed out as the world records it (the monitors read no slot_due /
// slot_misfire): the queue's add of the regular entry, due at its slot, then
// the job's durable row after the hand-out (`next_run_at`, and
// `coalesced_slots` grown by `coalesced_count` when firings were folded into
// a late run). Returns the queue_add's index (the durable row is the next).
std::size_t handout(Script& s, const char* t, const std::string& job, const char* slot, json f) {
  const std::size_t added =
      s.add("queue_add", t, job, slot,
            {{"id", 0}, {"kind", "regular"}, {"attempt", 1}, {"ready_at", slot}, {"added", true}});
  std::int64_t& coalesced = s.coalesced[job];
  coalesced += f.value("coalesced_count", 0);
  s.add("durable_job_state", t, job, std::nullopt,
        {{"next_run_at", f.value("next_run_at", json())},
         {"coalesced_slots", coalesced},
         {"slots", json::object()}});
  return added;
}

// A run as the world records it (the monitors read no run_started /
// run_finished): the queue's take of the entry; at its end the intent, the
// job's durable row as the run left it (ok, or retrying with the failure's
// class) and the queue's finish. `f` holds kind, attempt, outcome,
// failure_class as a run_started / run_finished would.
std::size_t run_start(Script& s, const char* t, const std::string& job, const char* slot, json f) {
  const std::uint64_t id = s.start_run(job);
  return s.add("queue_take", t, job, slot,
               {{"id", id},
                {"kind", f.value("kind", "regular")},
                {"attempt", f.value("attempt", 1)},
                {"ready_at", t}});
}

// A reply the world records for a failed request of `job`'s run, of `cls`
// by the monitors' own table (a fetch or call run's class is its replies').
void failed_reply(Script& s, const char* t, const std::string& job, const char* slot,
                  const std::string& cls) {
  static const std::map<std::string, json> kReplies{
      {"timeout", {{"status", 408}}},      {"network", {{"transport_error", "connection_reset"}}},
      {"provider_5xx", {{"status", 503}}}, {"rate_limit", {{"status", 429}}},
      {"auth", {{"status", 403}}},         {"validation", {{"status", 400}}},
      {"not_found", {{"status", 404}}},    {"config", {{"message", "configuration error"}}}};
  const auto it = kReplies.find(cls);
  json data = it == kReplies.end() ? json{{"status", 418}} : it->second;
  data["request_id"] = job + "/r0";
  data["operation"] = "GET";
  s.add("service_reply", t, job, slot, std::move(data));
}

std::size_t run_end(Script& s, const char* t, const std::string& job, const char* slot, json f) {
  const std::uint64_t id = s.run_of(job);
  const json entry = {
      {"id", id}, {"kind", f.value("kind", "regular")}, {"attempt", f.value("attempt", 1)}};
  const bool failed = f.value("outcome", "") == "failure";
  if (failed) failed_reply(s, t, job, slot, f.value("failure_class", "unknown"));
  s.add("queue_intent", t, job, slot, entry);
  s.add("durable_job_state", t, job, std::nullopt,
        {{"retry_status", failed ? "retrying" : "ok"},
         {"failure_class", failed ? json(f.value("failure_class", "unknown")) : json(nullptr)},
         {"slots", json::object()}});
  return s.add("queue_done", t, job, slot, entry);
}

void regular(Script& s, const std::string& job, const char* slot, const char* t, const char* next,
             const std::string& outcome, const std::string& cls = {}) {
  handout(s, t, job, slot, {{"next_run_at", next}});
  run_start(s, t, job, slot, {{"kind", "regular"}, {"attempt", 1}});
  json f = {{"kind", "regular"}, {"attempt", 1}, {"outcome", outcome}};
  if (!cls.empty()) f["failure_class"] = cls;
  run_end(s, t, job, slot, f);
}

std::size_t retry_run(Script& s, const std::string& job, const char* slot, const char* t,
                      int attempt, const std::string& outcome, const std::string& cls = {}) {
  const std::size_t started = run_start(s, t, job, slot, {{"kind", "retry"}, {"attempt", attempt}});
  json f = {{"kind", "retry"}, {"attempt", attempt}, {"outcome", outcome}};
  if (!cls.empty()) f["failure_class"] = cls;
  run_end(s, t, job, slot, f);
  return started;
}

// A notification as the world sees it: the message the queue's outbox
// received (the monitors read notifications there, not in the core's log).
std::size_t note(Script& s, const std::string& event, const std::string& job, const char* slot,
                 const char* t, int attempt, const std::string& cls) {
  TraceEvent e;
  e.t = at(t);
  e.type = "outbox_add";
  e.service = "queue";
  e.job = job;
  if (slot != nullptr) e.slot = at(slot);
  e.data = {
      {"event", event}, {"target", "ops"}, {"attempt", attempt}, {"failure_class", cls}, {"at", t}};
  return s.add_event(std::move(e));
}

std::size_t note_state_corrupt(Script& s, const char* t) {
  return note(s, "state_corrupt", {}, nullptr, t, 0, {});
}

// ------------------------------------------------------------ 1 stage_monotonic

void assign_answered(Script& s, const char* t, const std::string& item, int status = 200) {
  s.item("service_call", t, item, {{"operation", "assign"}, {"target", item}});
  s.item("service_reply", t, item, {{"operation", "assign"}, {"target", item}, {"status", status}});
}

// The orchestrator's answer to a get_issue: the issue's status (`body_class`).
std::size_t status_answered(Script& s, const char* t, const std::string& item, const char* status) {
  s.item("service_call", t, item, {{"operation", "get_issue"}, {"target", item}});
  return s.item(
      "service_reply", t, item,
      {{"operation", "get_issue"}, {"target", item}, {"status", 200}, {"body_class", status}});
}

// A due visit that moves the item: the status, the handoff, the stage.
std::size_t moved(Script& s, const char* t, const std::string& item, const char* status,
                  const char* stage) {
  status_answered(s, t, item, status);
  assign_answered(s, t, item);
  return s.item("durable_stage", t, item, {{"stage", stage}});
}

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

// An item entering DESIGN_FAILED must say why (docs/semantics.md §8): the
// durable pipeline file's reconcile error. Without one it failed silently.
TEST(NothingLost, FiresWhenAnItemEntersDesignFailedWithoutAReason) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-2", {{"stage", "BUILDING"}, {"error", ""}});
  const auto bad = s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
                          {{"stage", "DESIGN_FAILED"}, {"error", ""}});
  expect_first(run(s, base_scenario()), "nothing_lost", bad);
}

TEST(NothingLost, NearMissAnItemEntersDesignFailedWithItsReason) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-2", {{"stage", "BUILDING"}, {"error", ""}});
  s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found in the orchestrator"}});
  // Written again later (another item's change rewrites the file): still its reason.
  s.item("durable_stage", "2026-03-02T10:20:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found in the orchestrator"}});
  expect_clean(run(s, base_scenario(), at("2026-03-02T10:30:00Z")));
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

void agents_listed(Script& s, const char* t) {
  TraceEvent e;
  e.t = at(t);
  e.type = "service_reply";
  e.service = "orchestrator";
  e.job = "reconcile";
  e.data = {{"operation", "list_agents"}, {"status", 200}};
  s.add_event(std::move(e));
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

// ------------------------------------------------------------ 2 retries_bounded

TEST(RetriesBounded, FiresOnAThirdRetryOfAPerEpisodeBudgetOfTwo) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 1,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "failure",
            "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 3, "failure",
            "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 2,
       "rate_limit");
  const auto bad = retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:15:00Z", 4,
                             "failure", "rate_limit");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// Supersede (per_episode): the 11:00 regular run drops the 10:00 slot's
// pending retry; the retry started after it is one the budget no longer
// grants. Started before the regular run, it is the episode's own.
std::pair<Script, std::size_t> retry_around_next_slot(bool retry_first) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  std::size_t retry = 0;
  regular(s, "hourly", slot, "2026-03-02T10:50:00Z", "2026-03-02T11:00:00Z", "failure",
          "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:50:00Z", 1, "rate_limit");
  if (retry_first) retry = retry_run(s, "hourly", slot, "2026-03-02T10:55:00Z", 2, "success");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  if (!retry_first) retry = retry_run(s, "hourly", slot, "2026-03-02T11:05:00Z", 2, "success");
  return {s, retry};
}

TEST(RetriesBounded, FiresWhenASupersededPerEpisodeRetryRuns) {
  const auto [bad, retry] = retry_around_next_slot(false);
  const Outcome o = run(bad, only({"hourly"}));
  expect_first(o, "retries_bounded", retry);
  EXPECT_NE(o.seen.front().message.find("supersedes"), std::string::npos) << describe(o.seen);
  const Outcome near = run(retry_around_next_slot(true).first, only({"hourly"}));
  EXPECT_TRUE(std::none_of(near.seen.begin(), near.seen.end(), [](const Violation& v) {
    return v.invariant == "retries_bounded";
  })) << describe(near.seen);
}

// The 10:00 slot's retry (entry 7) is still pending when 11:00 comes due:
// under per_episode the hand-out supersedes it, and the queue must never run
// it, even before the 11:00 run. Cancelled at the hand-out, or under a
// per_slot budget, or with a crash between (the boot decides again), it is
// no violation.
Script retry_pending_at_hand_out(const std::string& job, bool cancelled, bool crash) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  s.add("queue_add", "2026-03-02T10:58:00Z", job, slot,
        {{"id", 7},
         {"kind", "retry"},
         {"attempt", 2},
         {"ready_at", "2026-03-02T11:03:00Z"},
         {"added", true}});
  handout(s, "2026-03-02T11:00:00Z", job, "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}});
  if (cancelled) {
    s.add("queue_cancel", "2026-03-02T11:00:00Z", job, slot,
          {{"id", 7}, {"kind", "retry"}, {"attempt", 2}});
  }
  if (crash) {
    s.add("process_crash", "2026-03-02T11:01:00Z", {}, std::nullopt,
          {{"process", "worker"}, {"cause", "restart"}});
  }
  s.add("queue_take", "2026-03-02T11:03:00Z", job, slot,
        {{"id", 7}, {"kind", "retry"}, {"attempt", 2}, {"ready_at", "2026-03-02T11:03:00Z"}});
  return s;
}

TEST(RetriesBounded, FiresWhenARetryPendingAtALaterHandOutIsTaken) {
  const std::string text = "was pending when a later slot came due";
  const Outcome o = run(retry_pending_at_hand_out("hourly", false, false), only({"hourly"}));
  EXPECT_TRUE(fired(o, "retries_bounded", text)) << describe(o.seen);
  for (const auto& [job, cancelled, crash] :
       {std::tuple{"hourly", true, false}, std::tuple{"weekly", false, false},
        std::tuple{"hourly", false, true}}) {
    const Outcome near = run(retry_pending_at_hand_out(job, cancelled, crash), base_scenario());
    EXPECT_FALSE(fired(near, "retries_bounded", text)) << job << describe(near.seen);
  }
}

TEST(RetriesBounded, NearMissTwoRetriesThenExhaustedThenRegularRuns) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 1,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "failure",
            "rate_limit");
  note(s, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2,
       "rate_limit");
  retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 3, "failure",
            "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:10:00Z", 2,
       "rate_limit");
  // per_episode: 11:00 fails, budget spent, no retry; 12:00 succeeds.
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "failure", "rate_limit");
  note(s, "retry_exhausted", "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", 2,
       "rate_limit");
  regular(s, "hourly", "2026-03-02T12:00:00Z", "2026-03-02T12:00:00Z", "2026-03-02T13:00:00Z",
          "success");
  const Outcome o = run(s, base_scenario(), at("2026-03-02T12:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["retries"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["runs"], 5);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["failed_slots"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["final_status"], "ok");
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["notifications"]["retry_exhausted"], 2);
}

TEST(RetriesBounded, FiresWhenANonRetryableClassIsRetried) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "auth");
  const auto bad =
      retry_run(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// The end of `job`'s regular run of `slot`: its intent, a row that says it
// failed with class network (whatever the world saw), the queue's finish.
void end_as_network_failure(Script& s, const char* slot, const std::string& job) {
  const json entry = {{"id", s.run_of(job)}, {"kind", "regular"}, {"attempt", 1}};
  s.add("queue_intent", slot, job, slot, entry);
  s.add("durable_job_state", slot, job, std::nullopt,
        {{"retry_status", "retrying"}, {"failure_class", "network"}, {"slots", json::object()}});
  s.add("queue_done", slot, job, slot, entry);
}

// A fetch or call run's class is the monitors' own reading of the replies
// the world recorded during the run (sim/monitors/reply_class.hpp), not the
// class the durable row holds: a 403 written as network and retried fires;
// a 503 written as network is a retryable failure all the same, and so is a
// request answered 401, then (after a reissue, same request id) 503.
TEST(RetriesBounded, JudgesTheClassOfTheRepliesNotTheRowsClass) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto scripted = [&](const std::vector<int>& statuses) {
    Script s;
    handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
    run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
    for (int status : statuses) {
      s.add("service_reply", slot, "hourly", slot, {{"request_id", "r0"}, {"status", status}});
    }
    end_as_network_failure(s, slot, "hourly");
    return s;
  };
  Script lied = scripted({403});
  const auto bad = retry_run(lied, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(lied, base_scenario()), "retries_bounded", bad);
  for (const std::vector<int>& statuses : {std::vector<int>{503}, std::vector<int>{401, 503}}) {
    Script fine = scripted(statuses);
    retry_run(fine, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
    const Outcome o = run(fine, base_scenario());
    EXPECT_TRUE(o.seen.empty()) << statuses.size() << ": " << describe(o.seen);
  }
}

// A reconcile run of the base scenario at 10:00 whose cycle's agent list got
// `list_statuses` (the last decides), its row `retry_status` / provider_5xx.
// A service's reply under `job`'s run of `slot`.
TraceEvent run_reply(const char* slot, const char* service, const char* job, json data) {
  TraceEvent reply;
  reply.t = at(slot);
  reply.type = "service_reply";
  reply.service = service;
  reply.job = job;
  reply.slot = at(slot);
  reply.data = std::move(data);
  return reply;
}

Script reconcile_run(const std::vector<int>& list_statuses, const std::string& row) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  handout(s, slot, "reconcile", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "reconcile", slot, {{"kind", "regular"}});
  for (int status : list_statuses) {
    s.add_event(run_reply(slot, "orchestrator", "reconcile",
                          {{"operation", "list_agents"}, {"status", status}}));
  }
  const json entry = {{"id", s.run_of("reconcile")}, {"kind", "regular"}, {"attempt", 1}};
  s.add("queue_intent", slot, "reconcile", slot, entry);
  const bool ok = row == "ok";
  s.add("durable_job_state", slot, "reconcile", std::nullopt,
        {{"retry_status", row},
         {"failure_class", ok ? json(nullptr) : json("provider_5xx")},
         {"slots", json::object()}});
  s.add("queue_done", slot, "reconcile", slot, entry);
  return s;
}

// The base scenario's reconcile job alone, hourly, retried twice 5 min apart.
Scenario reconcile_retried() {
  Scenario sc = only({"reconcile"});
  sc.jobs.front().schedule = "0 * * * *";
  sc.jobs.front().retry_policy = json{{"max", 2}, {"backoff_sec", 300}};
  return sc;
}

// A reconcile run's class is the world's (docs/reconcile.md): its cycle's
// agent list answer when that got no 200, else unknown, since item failures
// never fail a run and a failing store is class unknown. A run whose list was
// answered, written as provider_5xx and retried fires; one whose list got a
// 503 is a retryable failure, whatever the row says.
TEST(RetriesBounded, JudgesAReconcileRunByItsAgentList) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script lied = reconcile_run({200}, "retrying");
  const auto bad = retry_run(lied, "reconcile", slot, "2026-03-02T10:05:00Z", 2, "success");
  expect_first(run(lied, reconcile_retried()), "retries_bounded", bad);
  for (const std::vector<int>& statuses : {std::vector<int>{503}, std::vector<int>{200, 503}}) {
    Script fine = reconcile_run(statuses, "retrying");
    retry_run(fine, "reconcile", slot, "2026-03-02T10:05:00Z", 2, "success");
    const Outcome o = run(fine, reconcile_retried());
    EXPECT_TRUE(o.seen.empty()) << statuses.size() << ": " << describe(o.seen);
  }
}

// The base scenario's hourly job as a publish job posting to team-chat.
Scenario publish_hourly() {
  Scenario sc = only({"hourly"});
  sc.jobs.front().kind = JobKind::publish;
  sc.jobs.front().targets = {"team-chat"};
  return sc;
}

// A failed publish run at 10:00 (row: network) whose model-api request got
// `status` (0: none sent, the post was in hand) and whose delivery the
// messenger refused with `refusal` ("" none), then a retry at 10:05.
Script publish_failed(int status, const std::string& refusal) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  if (status != 0) {
    s.add_event(
        run_reply(slot, "model-api", "hourly",
                  {{"operation", "generate"}, {"request_id", "hourly/p"}, {"status", status}}));
  }
  if (!refusal.empty()) {
    s.add("message_refused", slot, "hourly", slot,
          {{"kind", "delivery"}, {"target", "team-chat"}, {"reason", refusal}});
  }
  end_as_network_failure(s, slot, "hourly");
  return s;
}

// A publish run's class is the world's: its model-api reply's when that
// failed, else the messenger's refusal of the post (its text), else unknown
// (the ledger). Each written as network and retried: the retry of a 403, of a
// refusal saying "invalid token" and of a run the world saw nothing fail in
// fires; a 503 and a refusal saying "HTTP 503" are retryable all the same.
TEST(RetriesBounded, JudgesAPublishRunByItsReplies) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto retried = [&](int status, const std::string& refusal) {
    Script s = publish_failed(status, refusal);
    return std::make_pair(s, retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success"));
  };
  for (const auto& [status, refusal] : std::vector<std::pair<int, std::string>>{
           {403, ""}, {0, "invalid token for team-chat"}, {0, ""}}) {
    auto [s, bad] = retried(status, refusal);
    const Outcome o = run(s, publish_hourly());
    EXPECT_TRUE(fired(o, "retries_bounded", "a class its policy does not retry"))
        << status << " " << refusal << ": " << describe(o.seen);
  }
  for (const auto& [status, refusal] :
       std::vector<std::pair<int, std::string>>{{503, ""}, {0, "team-chat: HTTP 503"}}) {
    auto [s, bad] = retried(status, refusal);
    const Outcome o = run(s, publish_hourly());
    EXPECT_FALSE(fired(o, "retries_bounded", "")) << status << ": " << describe(o.seen);
  }
}

// An unreachable agent list fails the run after the items were visited: a
// row saying ok swallowed it. A list answered 200 at last (a second cycle's
// answer) is no failure.
TEST(NothingLost, FiresWhenAReconcileRunSwallowsAnUnreachableAgentList) {
  const Outcome o = run(reconcile_run({503}, "ok"), reconcile_retried());
  EXPECT_TRUE(fired(o, "nothing_lost", "a swallowed failure")) << describe(o.seen);
  for (const std::vector<int>& statuses : {std::vector<int>{200}, std::vector<int>{503, 200}}) {
    const Outcome near = run(reconcile_run(statuses, "ok"), reconcile_retried());
    EXPECT_FALSE(fired(near, "nothing_lost", "a swallowed failure")) << describe(near.seen);
  }
}

TEST(RetriesBounded, FiresWhenAJobWithoutAPolicyRetries) {
  Script s;
  regular(s, "broken", "2026-03-02T10:15:00Z", "2026-03-02T10:15:00Z", "2026-03-02T11:15:00Z",
          "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "broken", "2026-03-02T10:15:00Z",
                        "2026-03-02T10:15:00Z", 1, "timeout");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

TEST(RetriesBounded, FiresWhenARetryRunsBeforeItsBackoff) {
  Script s;
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "provider_5xx");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "provider_5xx");
  const auto bad =
      retry_run(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:31:00Z", 2, "success");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// The exact window: the queue's record of a retry, at the instant
// of the failure, is due within [floor(d * (1 - jitter)), d] of it, d the
// n-th delay of the policy; a later due time (an exponent off by one) fires.
TEST(RetriesBounded, FiresWhenARetryIsQueuedOutsideItsExactWindow) {
  Script s;
  const char* slot = "2026-03-02T17:00:00Z";
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  // "auto", low frequency: exponential 30 min; retry 1 is due 30 min after.
  const auto bad =
      s.add("queue_add", slot, "weekly", slot,
            {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:00:00Z"}});
  expect_first(run(s, only({"weekly"}), at("2026-03-02T17:01:00Z")), "retries_bounded", bad);
}

// The weekly job with a linear backoff capped at 45 min: retry n waits
// min(30 min * n, 45 min). Retry 2 queued at 60 min (the uncapped linear
// delay) is outside the window; at 45 min it is exact.
Scenario weekly_linear_capped() {
  Scenario s = only({"weekly"});
  s.jobs[0].retry_policy =
      json{{"attempts", 4},
           {"backoff", {{"type", "linear"}, {"delay", "30m"}, {"max_delay", "45m"}}}};
  return s;
}

Script weekly_linear_first_retry(const char* slot) {
  Script s;
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  s.add("queue_add", slot, "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, slot, 1, "timeout");
  retry_run(s, "weekly", slot, "2026-03-02T17:30:00Z", 2, "failure", "timeout");
  return s;
}

TEST(RetriesBounded, FiresWhenALinearRetryIgnoresItsCap) {
  const char* slot = "2026-03-02T17:00:00Z";
  Script s = weekly_linear_first_retry(slot);
  const auto bad =
      s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
            {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  expect_first(run(s, weekly_linear_capped(), at("2026-03-02T17:40:00Z")), "retries_bounded", bad);
}

TEST(RetriesBounded, NearMissALinearRetryAtItsCap) {
  const char* slot = "2026-03-02T17:00:00Z";
  Script s = weekly_linear_first_retry(slot);
  s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:15:00Z"}});
  const Outcome o = run(s, weekly_linear_capped(), at("2026-03-02T17:40:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetriesBounded, NearMissRetriesQueuedAtTheirExactDelays) {
  Script s;
  const char* slot = "2026-03-02T17:00:00Z";
  regular(s, "weekly", slot, slot, "2026-03-09T17:00:00Z", "failure", "timeout");
  s.add("queue_add", slot, "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T17:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, slot, 1, "timeout");
  retry_run(s, "weekly", slot, "2026-03-02T17:30:00Z", 2, "failure", "timeout");
  s.add("queue_add", "2026-03-02T17:30:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  note(s, "retry_scheduled", "weekly", slot, "2026-03-02T17:30:00Z", 2, "timeout");
  // A retry restored at a boot keeps its old due time: not a fresh decision.
  s.add("queue_add", "2026-03-02T17:40:00Z", "weekly", slot,
        {{"added", true}, {"kind", "retry"}, {"ready_at", "2026-03-02T18:30:00Z"}});
  const Outcome o = run(s, only({"weekly"}), at("2026-03-02T17:45:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(RetriesBounded, AutoOnALowFrequencyOverrideAllowsThreeRetries) {
  Script s;
  // WEEKLY_CRON = "0 17 * * MON": 2026-03-02 is a Monday.
  regular(s, "weekly", "2026-03-02T17:00:00Z", "2026-03-02T17:00:00Z", "2026-03-09T17:00:00Z",
          "failure", "rate_limit");
  // Retries 30, 60 and 120 minutes after each failure are legal.
  const char* slot = "2026-03-02T17:00:00Z";
  const char* failed_at[] = {"2026-03-02T17:00:00Z", "2026-03-02T17:30:00Z", "2026-03-02T18:30:00Z",
                             "2026-03-02T20:30:00Z"};
  for (int n = 1; n <= 3; ++n) {
    note(s, "retry_scheduled", "weekly", slot, failed_at[n - 1], n, "rate_limit");
    retry_run(s, "weekly", slot, failed_at[n], n + 1, "failure", "rate_limit");
  }
  const Outcome legal = run(s, base_scenario(), at("2026-03-09T00:00:00Z"));
  EXPECT_TRUE(legal.seen.empty()) << describe(legal.seen);
  EXPECT_EQ(legal.tallies["jobs"]["weekly"]["retries"], 3);
  // A fourth is not.
  const auto bad = note(s, "retry_scheduled", "weekly", slot, failed_at[3], 4, "rate_limit");
  expect_first(run(s, base_scenario()), "retries_bounded", bad);
}

// ------------------------------------------------------------ 3 schedule_kept

TEST(ScheduleKept, FiresWhenARegularSlotIsSkipped) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  const auto bad = handout(s, "2026-03-02T12:00:00Z", "hourly", "2026-03-02T12:00:00Z",
                           {{"next_run_at", "2026-03-02T13:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

TEST(ScheduleKept, FiresWhenNextRunAtIsMovedByAFailure) {
  Script s;
  const auto added = handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
                             {{"next_run_at", "2026-03-02T10:05:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", added + 1);  // the durable row
}

TEST(ScheduleKept, FiresWhenAnOffGridSlotIsHandedOut) {
  Script s;
  const auto bad = handout(s, "2026-03-02T10:07:00Z", "hourly", "2026-03-02T10:07:00Z",
                           {{"next_run_at", "2026-03-02T11:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

TEST(ScheduleKept, FiresWhenCoalescedSlotsAreNotRecorded) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  // Down 10:30-13:10: 11:00 runs late at 13:10 and 12:00, 13:00 fold into
  // it, but the durable row after the hand-out counts none of them.
  const auto late = handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
                            {{"next_run_at", "2026-03-02T14:00:00Z"}});
  handout(s, "2026-03-02T14:00:00Z", "hourly", "2026-03-02T14:00:00Z",
          {{"next_run_at", "2026-03-02T15:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", late + 1);
}

TEST(ScheduleKept, NearMissSlotsMissedWhileDownAreCoalescedAndRecorded) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  s.add("process_crash", "2026-03-02T10:30:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
  s.add("process_boot", "2026-03-02T13:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", 2}});
  run_start(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  run_end(s, "2026-03-02T13:10:30Z", "hourly", "2026-03-02T11:00:00Z",
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T14:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["coalesced_slots"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["max_delay_ms"], 130 * kMinuteMs);
}

TEST(ScheduleKept, FiresWhenARestartHandsAnOlderSlotOutAgain) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  s.add("process_crash", "2026-03-02T11:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T11:11:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  const auto bad = handout(s, "2026-03-02T11:11:00Z", "hourly", "2026-03-02T10:00:00Z",
                           {{"next_run_at", "2026-03-02T12:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

TEST(ScheduleKept, NearMissSameSlotAgainAfterACrashOrUnderACorruptStore) {
  // A crash between the queue add and the state write hands the same slot
  // out again (the add is idempotent).
  Script s;
  handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  handout(s, "2026-03-02T10:01:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  EXPECT_TRUE(run(s, base_scenario()).seen.empty());
  // A corrupt store fails closed and cannot know its schedule: an older slot
  // handed out again is expected (the ledger makes the run exit quietly).
  Script c;
  regular(c, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  regular(c, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  c.add("disk_corrupted", "2026-03-02T11:30:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
  c.add("process_boot", "2026-03-02T11:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note_state_corrupt(c, "2026-03-02T11:31:00Z");
  handout(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}, {"coalesced_count", 1}});
  run_start(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  run_end(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "already_complete"}});
  const Outcome o = run(c, only({"hourly"}), at("2026-03-02T11:45:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 2);  // 11:00 keeps its own fate
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["runs"], 3);
}

TEST(ScheduleKept, FiresAtTheEndWhenSlotsStopBeingHandedOutWhileUp) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  MonitorSet set(base_scenario());
  // Only the hourly job matters here: hand the others nothing and read the
  // violation about hourly.
  for (std::size_t i = 0; i < s.events().size(); ++i) EXPECT_FALSE(set.observe(s.events()[i], i));
  const auto end = set.finish(at("2026-03-02T11:30:00Z"));
  const auto it = std::find_if(end.begin(), end.end(), [](const Violation& v) {
    return v.invariant == "schedule_kept" && v.message.find("hourly") != std::string::npos;
  });
  ASSERT_NE(it, end.end()) << describe(end);
  EXPECT_NE(it->message.find("2026-03-02T11:00:00Z"), std::string::npos);
  EXPECT_EQ(it->event_index, s.events().size());
}

TEST(ScheduleKept, SixFieldAndNamedSchedulesAreUnderstood) {
  std::string why;
  auto c = WitnessCron::parse("0 0 17 * * fri", &why);
  ASSERT_TRUE(c) << why;
  EXPECT_TRUE(c->low_frequency());
  const auto fridays = c->between(at("2026-12-01T00:00:00Z"), at("2026-12-31T00:00:00Z"), 10);
  ASSERT_EQ(fridays.size(), 4u);
  EXPECT_EQ(format_instant(fridays[0]), "2026-12-04T17:00:00Z");
  // Both day fields restricted: either matches (odd days or Mondays).
  auto either = WitnessCron::parse("0 0 */2 * 1", &why);
  ASSERT_TRUE(either);
  EXPECT_EQ(either->between(at("2026-03-01T00:00:00Z"), at("2026-03-04T23:59:00Z"), 10).size(), 2u);
  // A range covering the whole field is unrestricted: Mondays only (and, by
  // the literal rule, low-frequency: the weekday is one fixed value).
  auto mondays = WitnessCron::parse("0 0 1-31 * 1", &why);
  ASSERT_TRUE(mondays);
  EXPECT_TRUE(mondays->low_frequency());
  EXPECT_FALSE(WitnessCron::parse("10 17 * * 1-5", &why)->low_frequency());
  EXPECT_EQ(mondays->between(at("2026-03-01T00:00:00Z"), at("2026-03-31T23:59:00Z"), 10).size(),
            5u);
  EXPECT_FALSE(WitnessCron::parse("*/3 * * * *", &why)->low_frequency());
  EXPECT_TRUE(WitnessCron::parse("@weekly", &why)->low_frequency());
}

TEST(ScheduleKept, UnknownSyntaxIsSkippedLoudlyNotPassedSilently) {
  std::string why;
  // cron-parser's odd readings the core reproduces: `LL` is `L`, `55L` the
  // last Friday, `5#1e0` the first Friday (docs/cron.md).
  EXPECT_FALSE(WitnessCron::parse("0 0 LL * *", &why));
  EXPECT_NE(why.find("LL"), std::string::npos);
  EXPECT_FALSE(WitnessCron::parse("0 0 * * 55L", &why));
  EXPECT_FALSE(WitnessCron::parse("0 0 * * 5#1e0", &why));
  Scenario sc = base_scenario();
  sc.jobs[0].schedule = "0 0 LL * *";
  sc.env["EMPTY"] = "";
  sc.jobs[1].schedule_env = "EMPTY";
  MonitorSet set(sc);
  const json unchecked = set.tallies()["unchecked"];
  // The empty override is no longer skipped: it is asserted never to run.
  ASSERT_EQ(unchecked.size(), 1u) << unchecked.dump();
  EXPECT_EQ(unchecked[0]["invariant"], "schedule_kept");
  EXPECT_EQ(unchecked[0]["subject"], "hourly");
}

// `L` in day-of-month, `dL` and `d#n` in day-of-week (docs/cron.md): the
// matcher's own reading, by hand from a calendar.
TEST(ScheduleKept, LastDaysAndNthWeekdaysAreUnderstood) {
  std::string why;
  const auto firings = [&](const char* expr, const char* from, const char* to) {
    std::vector<std::string> out;
    const auto c = WitnessCron::parse(expr, &why);
    EXPECT_TRUE(c) << expr << ": " << why;
    if (!c) return out;
    EXPECT_TRUE(c->low_frequency()) << expr;
    for (const TimeMs t : c->between(at(from), at(to), 10)) out.push_back(format_instant(t));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(firings("0 9 L * *", "2028-01-15T00:00:00Z", "2028-04-15T00:00:00Z"),
            (V{"2028-01-31T09:00:00Z", "2028-02-29T09:00:00Z", "2028-03-31T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * FRIL", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-27T09:00:00Z", "2026-04-24T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * 7L", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-29T09:00:00Z", "2026-04-26T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * mon#1", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-02T09:00:00Z", "2026-04-06T09:00:00Z"}));
  // Both day fields restricted: either matches; a `#n` then limits every
  // matching day to the n-th week (the 10th and second Fridays).
  EXPECT_EQ(firings("0 9 10 * 5#2", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-10T09:00:00Z", "2026-03-13T09:00:00Z", "2026-04-10T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 15,L * 5L", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-04-15T09:00:00Z", "2026-04-24T09:00:00Z", "2026-04-30T09:00:00Z"}));
  EXPECT_FALSE(WitnessCron::parse("0 9 * * 1,5L", &why)->low_frequency());
}

// A last-day-of-month job (`0 9 L * *`): April's last day skipped between the
// hand-outs of March's and May's fires, and so does a slot on another day;
// every last day handed out in turn is the near miss.
TEST(ScheduleKept, FiresWhenALastDayOfMonthFiringIsSkippedOrMissed) {
  Scenario sc = base_scenario();
  sc.jobs[0].schedule = "0 9 L * *";
  sc.jobs[3].schedule_env.reset();
  sc.jobs[3].schedule = "0 9 * * MON#1";
  const auto last_day = [](Script& s, const char* slot, const char* next) {
    return handout(s, slot, "hourly", slot, {{"next_run_at", next}});
  };
  Script kept;
  last_day(kept, "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z");
  handout(kept, "2026-04-06T09:00:00Z", "weekly", "2026-04-06T09:00:00Z",
          {{"next_run_at", "2026-05-04T09:00:00Z"}});
  last_day(kept, "2026-04-30T09:00:00Z", "2026-05-31T09:00:00Z");
  last_day(kept, "2026-05-31T09:00:00Z", "2026-06-30T09:00:00Z");
  const Outcome clean = run(kept, sc, at("2026-06-01T00:00:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  EXPECT_TRUE(clean.tallies["unchecked"].empty()) << clean.tallies["unchecked"].dump();
  Script skipped;
  last_day(skipped, "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z");
  const auto late = last_day(skipped, "2026-05-31T09:00:00Z", "2026-06-30T09:00:00Z");
  expect_first(run(skipped, sc, at("2026-06-01T00:00:00Z")), "schedule_kept", late);
  Script off;
  const auto bad = last_day(off, "2026-04-29T09:00:00Z", "2026-04-30T09:00:00Z");
  expect_first(run(off, sc, at("2026-05-01T00:00:00Z")), "schedule_kept", bad);
  Script second_monday;
  const auto monday = handout(second_monday, "2026-04-13T09:00:00Z", "weekly",
                              "2026-04-13T09:00:00Z", {{"next_run_at", "2026-05-04T09:00:00Z"}});
  expect_first(run(second_monday, sc, at("2026-04-14T00:00:00Z")), "schedule_kept", monday);
}

// An override that is no valid cron by the documented grammar (the
// monitors' own rules, cron_grammar.hpp) is a config error: the job never
// runs. One the matcher merely cannot read (`1*`: cron-parser reads
// 10-59) stays unchecked, never asserted.
TEST(ScheduleKept, TellsAnInvalidCronFromSyntaxTheMatcherLacks) {
  using R = WitnessCron::Refusal;
  const auto refusal = [](const char* expr) {
    std::string why;
    R r = R::unknown_syntax;
    EXPECT_FALSE(WitnessCron::parse(expr, &why, &r)) << expr;
    return r;
  };
  for (const char* bad :
       {"61 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 * 13 *", "0 0 * * 8", "60 0 0 * * *",
        "0 0 * *", "0 0 * * * * 2027", "@reboot", "@DAILY", " @daily", "   ", "0 0 30 2 *",
        "0 0 30 2 1", "0 0 30,L FEB *", "0 0 31 4,6 *"}) {
    EXPECT_EQ(refusal(bad), R::invalid) << bad;
  }
  // The last: four fields to the matcher, five to the core (U+00A0 is a
  // JavaScript space), so no field count is asserted.
  for (const char* lacks :
       {"1* * * * *", "0 0 15W * *", "0 0 * * 5#1e0", "0 0 LL * *", "0 0 * * 9L",
        "0\xc2\xa0"
        "0 * * *"}) {
    EXPECT_EQ(refusal(lacks), R::unknown_syntax) << lacks;
  }
  EXPECT_TRUE(WitnessCron::parse("0 0 31 4,6 1", nullptr)) << "fires on Mondays";
  EXPECT_TRUE(WitnessCron::parse("0 0 31,L 4,6 *", nullptr)) << "fires on the last days";
}

TEST(ScheduleKept, FiresWhenAJobWithAnInvalidOverrideIsQueued) {
  Scenario sc = base_scenario();
  sc.env["BAD_CRON"] = "61 * * * *";
  sc.env["ODD_CRON"] = "1* * * * *";  // valid: cron-parser reads 10-59
  sc.jobs[1].schedule_env = "BAD_CRON";
  sc.jobs[2].schedule_env = "ODD_CRON";
  Script s;
  s.add("queue_add", "2026-03-02T10:10:00Z", "broken", "2026-03-02T10:10:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:10:00Z"}});
  const Outcome lacks = run(s, sc, at("2026-03-02T10:11:00Z"));
  EXPECT_TRUE(lacks.seen.empty()) << describe(lacks.seen);
  ASSERT_EQ(lacks.tallies["unchecked"].size(), 1u) << lacks.tallies["unchecked"].dump();
  EXPECT_EQ(lacks.tallies["unchecked"][0]["subject"], "broken");
  const auto bad =
      s.add("queue_add", "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:30:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T10:31:00Z"));
  expect_first(o, "schedule_kept", bad);
  EXPECT_TRUE(fired(o, "schedule_kept", "BAD_CRON='61 * * * *' is not a valid cron"))
      << describe(o.seen);
}

// A job whose override is set but empty has no schedule: the queue receiving
// any entry for it fires schedule_kept (it used to be listed as
// unchecked, so a core falling back to the default schedule passed).
TEST(ScheduleKept, FiresWhenAJobWithAnEmptyOverrideIsQueued) {
  Scenario sc = base_scenario();
  sc.env["EMPTY"] = "";
  sc.jobs[1].schedule_env = "EMPTY";
  Script s;
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:00:00Z"}});
  const auto bad =
      s.add("queue_add", "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:30:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T10:31:00Z"));
  ASSERT_FALSE(o.seen.empty());
  EXPECT_EQ(o.seen.front().invariant, "schedule_kept");
  EXPECT_EQ(o.seen.front().event_index, bad) << describe(o.seen);
}

// From the queue's own record: a regular entry whose slot is
// no firing of the schedule, or which is due at another instant than its
// slot, fires schedule_kept whatever the core logged; one at its firing does
// not.
TEST(ScheduleKept, FiresWhenTheQueueReceivesARegularEntryOffItsFiring) {
  Scenario sc = base_scenario();
  Script s;
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:00:00Z"}});
  const auto late =
      s.add("queue_add", "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T11:05:00Z"}});
  const auto off =
      s.add("queue_add", "2026-03-02T11:10:00Z", "hourly", "2026-03-02T11:10:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T11:10:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T11:11:00Z"));
  std::vector<std::size_t> fired_at;
  for (const Violation& v : o.seen) {
    if (v.invariant == "schedule_kept") fired_at.push_back(v.event_index);
  }
  EXPECT_EQ(fired_at, (std::vector<std::size_t>{late, off})) << describe(o.seen);
}

// ------------------------------------------------------------ 4 nothing_lost

// A run's finish is one queue operation: its queue_done says how many
// entries it adds and messages it commits, then come those adds and those
// messages. A retry queued without its retry_scheduled message in the same
// finish is a retry nobody is told of (004's hidden retry).
Script finish_with(int outbox, const std::vector<std::string>& events) {
  Script s;
  s.add("queue_intent", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 1}, {"kind", "regular"}, {"attempt", 1}});
  s.add("queue_done", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 1}, {"kind", "regular"}, {"attempt", 1}, {"adds", 1}, {"outbox", outbox}});
  s.add("queue_add", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 2},
         {"kind", "retry"},
         {"attempt", 2},
         {"added", true},
         {"ready_at", "2026-03-02T10:20:00Z"}});
  for (const std::string& event : events) {
    note(s, event, "slotty", "2026-03-02T10:15:00Z", "2026-03-02T10:15:00Z", 1, "provider_5xx");
  }
  return s;
}

TEST(NothingLost, FiresWhenAFinishQueuesARetryWithoutItsNotice) {
  const Script other = finish_with(1, {"recovered"});
  EXPECT_TRUE(fired(run(other, base_scenario()), "nothing_lost", "without a retry_scheduled"));
  const Script none = finish_with(0, {});
  EXPECT_TRUE(fired(run(none, base_scenario()), "nothing_lost", "without a retry_scheduled"));
}

TEST(NothingLost, NearMissARetryAnnouncedToTwoTargetsInItsFinish) {
  const Outcome o = run(finish_with(2, {"retry_scheduled", "retry_scheduled"}), base_scenario());
  EXPECT_FALSE(fired(o, "nothing_lost", "")) << describe(o.seen);
}

// A regular entry leaves the queue only after its run's intent: one finished
// with none was dropped, not run. A retry may be dropped so (the state no
// longer backs it).
TEST(NothingLost, FiresWhenARegularEntryLeavesTheQueueWithNoIntent) {
  Script s;
  handout(s, "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
          {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(s, "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z", {{"kind", "regular"}});
  s.add("queue_done", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", s.run_of("slotty")}, {"kind", "regular"}, {"attempt", 1}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(fired(o, "nothing_lost", "with no intent")) << describe(o.seen);
  Script retry;
  run_start(retry, "2026-03-02T10:20:00Z", "slotty", "2026-03-02T10:15:00Z",
            {{"kind", "retry"}, {"attempt", 2}});
  retry.add("queue_done", "2026-03-02T10:20:00Z", "slotty", "2026-03-02T10:15:00Z",
            {{"id", retry.run_of("slotty")}, {"kind", "retry"}, {"attempt", 2}});
  EXPECT_FALSE(fired(run(retry, base_scenario()), "nothing_lost", "with no intent"));
}

// A job whose policy is invalid fails closed visibly: once its state is
// durable the row records the policy error and the outbox received
// policy_invalid (004: reveal the omission). "broken" has no policy.
Script broken_row(bool in_state, bool noticed) {
  Script s;
  s.add("durable_job_state", "2026-03-02T09:30:00Z", "broken", std::nullopt,
        {{"retry_status", "ok"}, {"policy_invalid", in_state}, {"slots", json::object()}});
  if (noticed) {
    note(s, "policy_invalid", "broken", nullptr, "2026-03-02T09:30:00Z", 0, "config");
  }
  return s;
}

TEST(NothingLost, FiresAtTheEndWhenAnInvalidPolicyIsNotShown) {
  EXPECT_TRUE(fired(run(broken_row(false, true), base_scenario()), "nothing_lost",
                    "never recorded the policy error"));
  EXPECT_TRUE(fired(run(broken_row(true, false), base_scenario()), "nothing_lost",
                    "no policy_invalid notice"));
  EXPECT_FALSE(fired(run(broken_row(true, true), base_scenario()), "nothing_lost", ""));
}

// A fetch or call run whose own request's last answer failed has failed: its
// row saying ok swallows the failure. A 401 answered again with 200 (the
// reissue's resend) is no failure.
TEST(NothingLost, FiresWhenAFetchRunWithAFailedRequestReportsSuccess) {
  const char* slot = "2026-03-02T10:15:00Z";
  Script s;
  handout(s, slot, "slotty", slot, {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(s, slot, "slotty", slot, {{"kind", "regular"}});
  failed_reply(s, slot, "slotty", slot, "provider_5xx");
  run_end(s, slot, "slotty", slot, {{"kind", "regular"}, {"outcome", "success"}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(fired(o, "nothing_lost", "a swallowed failure")) << describe(o.seen);
  Script resent;
  handout(resent, slot, "slotty", slot, {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(resent, slot, "slotty", slot, {{"kind", "regular"}});
  resent.add("service_reply", slot, "slotty", slot,
             {{"request_id", "slotty/r0"}, {"operation", "GET"}, {"status", 401}});
  resent.add("service_reply", slot, "slotty", slot,
             {{"request_id", "slotty/r0"}, {"operation", "GET"}, {"status", 200}});
  run_end(resent, slot, "slotty", slot, {{"kind", "regular"}, {"outcome", "success"}});
  EXPECT_FALSE(fired(run(resent, base_scenario()), "nothing_lost", "a swallowed failure"));
}

// A sequential fetch run stops at its first failed request (docs/token-client.md
// "FetchJob"): request r1 of slotty's run goes out after r0 was refused with a
// 403. The closest legal runs: r0 recovers from a 401 (the issuance led by r0
// answered, r0 sent again and answered 200) before r1 goes out; and the same
// 403 in a parallel fetch job, whose requests do not wait for each other.
Script sequential_run(bool recovered) {
  const char* slot = "2026-03-02T10:30:00Z";
  const std::string prefix = "slotty/2026-03-02T10:30:00Z/a1/";
  Script s;
  const auto request = [&](const char* type, const char* t, const std::string& rid, json data) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.job = "slotty";
    e.slot = at(slot);
    e.service = "brokerage";
    data["request_id"] = prefix + rid;
    e.data = std::move(data);
    return s.add_event(std::move(e));
  };
  run_start(s, slot, "slotty", slot, {{"kind", "regular"}});
  request("service_call", "2026-03-02T10:30:00Z", "r0", {{"operation", "quote"}});
  request("service_reply", "2026-03-02T10:30:00.100Z", "r0",
          {{"operation", "quote"}, {"status", recovered ? 401 : 403}});
  if (recovered) {
    request("service_call", "2026-03-02T10:30:00.100Z", "r0", {{"operation", "issue_token"}});
    request("service_reply", "2026-03-02T10:30:00.200Z", "r0",
            {{"operation", "issue_token"}, {"status", 200}});
    request("service_call", "2026-03-02T10:30:00.200Z", "r0", {{"operation", "quote"}});
    request("service_reply", "2026-03-02T10:30:00.300Z", "r0",
            {{"operation", "quote"}, {"status", 200}});
  }
  request("service_call", "2026-03-02T10:30:00.300Z", "r1", {{"operation", "positions"}});
  return s;
}

TEST(NothingLost, FiresWhenASequentialFetchRunGoesOnAfterAFailedRequest) {
  const Script s = sequential_run(false);
  const Outcome o = run(s, base_scenario());
  expect_first(o, "nothing_lost", s.events().size() - 1);
  EXPECT_TRUE(fired(o, "nothing_lost", "a sequential run stops at its first failed request"))
      << describe(o.seen);
  EXPECT_TRUE(fired(o, "nothing_lost", "status 403")) << describe(o.seen);
  // A call job stops at its first failed call the same way.
  Scenario calls = base_scenario();
  for (JobSpec& j : calls.jobs) j.kind = j.id == "slotty" ? JobKind::call : j.kind;
  const Outcome call = run(s, calls);
  expect_first(call, "nothing_lost", s.events().size() - 1);
  EXPECT_TRUE(fired(call, "nothing_lost", "call job slotty")) << describe(call.seen);
}

TEST(NothingLost, NearMissASequentialFetchRunGoesOnAfterARecovered401) {
  const std::string text = "a sequential run stops";
  const Outcome recovered = run(sequential_run(true), base_scenario());
  EXPECT_FALSE(fired(recovered, "nothing_lost", text)) << describe(recovered.seen);
  Scenario parallel = base_scenario();
  for (JobSpec& j : parallel.jobs) j.parallel = j.parallel || j.id == "slotty";
  const Outcome fan_out = run(sequential_run(false), parallel);
  EXPECT_FALSE(fired(fan_out, "nothing_lost", text)) << describe(fan_out.seen);
}

// Under per_slot each slot keeps its retries: a cancel drops one it was owed.
// "weekly" runs "auto" (per_slot); "hourly" is per_episode (the per-job form),
// where the next regular slot supersedes a pending retry.
TEST(NothingLost, FiresWhenAPerSlotRetryIsCancelled) {
  const auto cancel = [](Script& s, const std::string& job) {
    s.add("queue_cancel", "2026-03-02T18:00:00Z", job, "2026-03-02T17:00:00Z",
          {{"id", 9}, {"kind", "retry"}, {"attempt", 2}, {"ready_at", "2026-03-02T18:30:00Z"}});
  };
  Script per_slot;
  cancel(per_slot, "weekly");
  EXPECT_TRUE(fired(run(per_slot, base_scenario()), "nothing_lost", "per_slot budget"));
  Script per_episode;
  cancel(per_episode, "hourly");
  EXPECT_FALSE(fired(run(per_episode, base_scenario()), "nothing_lost", "per_slot budget"));
}

// A run a crash cut runs again once; a second stall of the same run fails it
// (BullMQ's maxStalledCount 1): the queue puts the entry back at most once.
TEST(NothingLost, FiresWhenARunStalledTwiceIsPutBackAgain) {
  const auto stall = [](Script& s, const char* t, int pid) {
    s.add("queue_take", t, "slotty", "2026-03-02T10:30:00Z",
          {{"id", 5}, {"kind", "regular"}, {"attempt", 1}, {"process", pid}, {"ready_at", t}});
    s.add("process_crash", t, {}, std::nullopt,
          {{"process", "worker"}, {"pid", pid}, {"cause", "restart"}});
    s.add("queue_requeue", t, "slotty", "2026-03-02T10:30:00Z",
          {{"id", 5}, {"kind", "regular"}, {"attempt", 1}});
  };
  Script once;
  stall(once, "2026-03-02T10:30:00Z", 1);
  EXPECT_FALSE(fired(run(once, base_scenario()), "nothing_lost", "stalled"));
  Script twice;
  stall(twice, "2026-03-02T10:30:00Z", 1);
  stall(twice, "2026-03-02T10:35:00Z", 2);
  EXPECT_TRUE(fired(run(twice, base_scenario()), "nothing_lost", "a run stalled twice fails"));
  // The stall count is the state store's: a boot that found the store damaged
  // cannot know the first stall, so the second counts as a first.
  Script blind;
  stall(blind, "2026-03-02T10:30:00Z", 1);
  blind.add("store_corrupt_injected", "2026-03-02T10:34:00Z", {}, std::nullopt,
            {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}});
  blind.add("process_boot", "2026-03-02T10:34:30Z", {}, std::nullopt,
            {{"process", "worker"}, {"pid", 2}, {"boots", 2}});
  stall(blind, "2026-03-02T10:35:00Z", 2);
  EXPECT_FALSE(fired(run(blind, base_scenario()), "nothing_lost", "stalled"));
}

TEST(NothingLost, FiresAtTheEndOnASwallowedFailure) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  handout(s, "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
          {{"next_run_at", "2026-03-02T11:30:00Z"}});
  run_start(s, "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  const auto failed = run_end(s, "2026-03-02T10:31:00Z", "slotty", "2026-03-02T10:30:00Z",
                              {{"kind", "regular"},
                               {"attempt", 1},
                               {"outcome", "failure"},
                               {"failure_class", "rate_limit"}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  ASSERT_FALSE(o.end.empty());
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "nothing_lost"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_EQ(it->event_index, failed);
  EXPECT_NE(it->message.find("slotty"), std::string::npos);
}

TEST(NothingLost, FiresWhenExhaustedBeforeTheBudgetIsSpent) {
  Script s;
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "rate_limit");
  retry_run(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:40:00Z", 2, "failure",
            "rate_limit");
  const auto bad = note(s, "retry_exhausted", "slotty", "2026-03-02T10:30:00Z",
                        "2026-03-02T10:40:00Z", 1, "rate_limit");
  expect_first(run(s, base_scenario()), "nothing_lost", bad);
}

// The class judged is the one the world saw fail the run, not the one the
// notification carries: a core that classed a 429 as auth (not retried)
// writes `auth` into its notice, and the world's 429 says rate_limit.
TEST(NothingLost, FiresWhenARetryableFailureIsDeclaredPermanent) {
  for (const char* notice_class : {"rate_limit", "auth"}) {
    Script s;
    regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
            "failure", "rate_limit");
    const auto bad = note(s, "failed_permanent", "hourly", "2026-03-02T10:00:00Z",
                          "2026-03-02T10:00:00Z", 0, notice_class);
    SCOPED_TRACE(notice_class);
    expect_first(run(s, base_scenario()), "nothing_lost", bad);
  }
}

// A failed episode that was announced and ends in success owes a
// `recovered` notification (docs/semantics.md §4), read from the messenger.
Script announced_failure_then_success(bool recovered) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "timeout");
  s.add(
      "message_delivered", slot, "hourly", slot,
      {{"kind", "notification"}, {"event", "retry_scheduled"}, {"attempt", 1}, {"target", "ops"}});
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  if (recovered) {
    s.add("message_delivered", "2026-03-02T10:05:00Z", "hourly", slot,
          {{"kind", "notification"}, {"event", "recovered"}, {"target", "ops"}});
  }
  return s;
}

Scenario hourly_with_messenger() {
  Scenario sc = only({"hourly"});
  sc.services.messenger = MessengerService{};
  return sc;
}

TEST(NothingLost, FiresAtTheEndWhenARecoveryIsNeverAnnounced) {
  const Outcome o = run(announced_failure_then_success(false), hourly_with_messenger(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  ASSERT_FALSE(o.end.empty());
  EXPECT_EQ(o.end.front().invariant, "nothing_lost") << describe(o.end);
  EXPECT_NE(o.end.front().message.find("recovered"), std::string::npos);
}

TEST(NothingLost, NearMissARecoveryAnnounced) {
  const Outcome o = run(announced_failure_then_success(true), hourly_with_messenger(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(o.end.empty()) << describe(o.end);
}

TEST(NothingLost, NearMissRetryPendingAtTheEndIsInFlight) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "rate_limit");
  const Outcome o = run(s, only({"slotty"}), at("2026-03-02T10:35:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["slotty"]["in_flight_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["slotty"]["failed_slots"], 0);
}

TEST(NothingLost, NearMissAuthFailureIsPermanentAndVisible) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "auth");
  note(s, "failed_permanent", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 0, "auth");
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["failed_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["final_status"], "failed");
}

// ------------------------------------------------------------ 5 no_duplicate_delivery

// The delivery ledger of one slot as the world reads it (`durable_delivery`).
json ledger(std::vector<std::string> delivered_to, bool guard = false,
            std::optional<std::string> verdict = std::nullopt) {
  return {{"delivered_to", delivered_to},
          {"guard", guard},
          {"verdict", verdict ? json(*verdict) : json(nullptr)},
          {"outbox", false}};
}

TraceEvent delivered(const char* t, const char* slot, const std::string& target,
                     const std::string& kind = "delivery") {
  TraceEvent e;
  e.t = at(t);
  e.type = "message_delivered";
  e.service = "messenger";
  e.job = "hourly";
  e.slot = at(slot);
  e.data = {{"target", target}, {"kind", kind}, {"attempt", 1}};
  return e;
}

TEST(NoDuplicateDelivery, FiresOnASecondDeliveryWithoutACrash) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add_event(delivered("2026-03-02T10:01:00Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:01:00Z", "hourly", slot, ledger({"team-chat"}));
  const auto bad = s.add_event(delivered("2026-03-02T10:06:00Z", slot, "team-chat"));
  expect_first(run(s, base_scenario()), "no_duplicate_delivery", bad);
}

TEST(NoDuplicateDelivery, NearMissCrashInsideTheWindowAllowsOneAndReportsIt) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  s.add_event(delivered("2026-03-02T10:01:00Z", slot, "team-chat"));
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add_event(delivered("2026-03-02T10:02:00Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:02:00Z", "hourly", slot, ledger({"team-chat"}));
  // Failure notices may repeat on every retry, by design.
  s.add_event(
      delivered("2026-03-02T10:00:30Z", "2026-03-02T11:00:00Z", "team-chat", "failure_notice"));
  s.add_event(
      delivered("2026-03-02T10:05:30Z", "2026-03-02T11:00:00Z", "team-chat", "failure_notice"));
  const Outcome o = run(s, only({}), at("2026-03-02T10:03:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["duplicate_deliveries_in_window"], 1);
  EXPECT_EQ(o.tallies["failure_notices"], 2);
  // The window allows one more delivery per crash, not two.
  Script more = s;
  const auto bad = more.add_event(delivered("2026-03-02T10:03:00Z", slot, "team-chat"));
  expect_first(run(more, base_scenario()), "no_duplicate_delivery", bad);
}

// A slot the ledger marks complete is never re-entered, and a retry of a slot
// whose decided delivery the ledger holds resends it: neither asks the model
// API for the slot again (docs/group-jobs.md).
Scenario group_hourly();

Script model_call_after(const json& ledger_facts, const char* call_slot) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger_facts);
  TraceEvent call;
  call.t = at("2026-03-02T10:05:00Z");
  call.type = "service_call";
  call.service = "model-api";
  call.job = "hourly";
  call.slot = at(call_slot);
  call.data = {{"operation", "generate"}, {"request_id", "hourly/x"}};
  s.add_event(std::move(call));
  return s;
}

TEST(NoDuplicateDelivery, FiresWhenACompletedOrHeldSlotAsksTheModelAgain) {
  const char* slot = "2026-03-02T10:00:00Z";
  const Script marked = model_call_after(ledger({"team-chat"}, true, "delivered"), slot);
  EXPECT_TRUE(fired(run(marked, group_hourly()), "no_duplicate_delivery", "marks it complete"));
  json held_facts = ledger({}, false);
  held_facts["outbox"] = true;
  const Script held = model_call_after(held_facts, slot);
  EXPECT_TRUE(fired(run(held, group_hourly()), "no_duplicate_delivery", "stored outbox"));
  // Another slot's call, and a slot whose ledger holds neither: quiet.
  const Script other =
      model_call_after(ledger({"team-chat"}, true, "delivered"), "2026-03-02T11:00:00Z");
  EXPECT_FALSE(fired(run(other, group_hourly()), "no_duplicate_delivery", ""));
  const Script open = model_call_after(ledger({}, false), slot);
  EXPECT_FALSE(fired(run(open, group_hourly()), "no_duplicate_delivery", ""));
}

TEST(NoDuplicateDelivery, FiresWhenAFailedRunSetTheGuard) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  run_start(s, "2026-03-02T10:00:00Z", "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger({}, true));
  const auto bad = run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
                           {{"kind", "regular"},
                            {"attempt", 1},
                            {"outcome", "failure"},
                            {"failure_class", "rate_limit"}});
  expect_first(run(s, base_scenario()), "no_duplicate_delivery", bad);
}

// The hourly job as a group job (deliveries to "team-chat").
Scenario group_hourly() {
  Scenario s = only({"hourly"});
  s.jobs.front().kind = JobKind::group;
  s.jobs.front().targets = {"team-chat"};
  return s;
}

TEST(NothingLost, FiresWhenAGroupRunReportsSuccessWithoutDelivering) {
  // 001's bug: every task failed, the run set guard and marker and said success.
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger({}, true));
  const auto bad = run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
                           {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  expect_first(run(s, group_hourly(), at("2026-03-02T10:30:00Z")), "nothing_lost", bad);
}

// A delivered slot reached every target (a retry sends only to the missing
// ones, so each may have got it in an earlier run, or the ledger holds it).
TEST(NothingLost, FiresWhenASuccessfulRunLeftATargetWithoutTheDelivery) {
  Scenario two = group_hourly();
  two.jobs.front().targets = {"team-chat", "ops-chat"};
  const char* slot = "2026-03-02T10:00:00Z";
  const auto one_target = [&](bool ledger_holds_the_other) {
    Script s;
    handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
    run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
    s.add_event(delivered("2026-03-02T10:00:04Z", slot, "team-chat"));
    const std::vector<std::string> held = ledger_holds_the_other
                                              ? std::vector<std::string>{"team-chat", "ops-chat"}
                                              : std::vector<std::string>{"team-chat"};
    s.add("durable_delivery", "2026-03-02T10:00:04Z", "hourly", slot,
          ledger(held, true, "delivered"));
    run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
            {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
    return s;
  };
  EXPECT_TRUE(fired(run(one_target(false), two, at("2026-03-02T10:30:00Z")), "nothing_lost",
                    "target ops-chat never got"));
  EXPECT_FALSE(
      fired(run(one_target(true), two, at("2026-03-02T10:30:00Z")), "nothing_lost", "never got"));
}

TEST(NothingLost, NearMissGroupRunThatDeliveredOrMarkedTheSlotSkipped) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add_event(delivered("2026-03-02T10:00:04Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:00:04Z", "hourly", slot, ledger({"team-chat"}));
  run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  const char* skipped = "2026-03-02T11:00:00Z";
  handout(s, skipped, "hourly", skipped, {{"next_run_at", "2026-03-02T12:00:00Z"}});
  run_start(s, skipped, "hourly", skipped, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T11:00:05Z", "hourly", skipped, ledger({}, true, "skipped"));
  run_end(s, "2026-03-02T11:00:06Z", "hourly", skipped,
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "skipped"}});
  const Outcome o = run(s, group_hourly(), at("2026-03-02T11:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["skipped_slots"], 1);
  // The per-slot records behind the counts: typed state, attempts.
  ASSERT_EQ(o.slots.size(), 2u);
  EXPECT_EQ(o.slots[0].slot, at(slot));
  EXPECT_EQ(o.slots[0].state, SlotState::delivered);
  EXPECT_EQ(o.slots[0].attempts, 1);
  EXPECT_EQ(o.slots[1].state, SlotState::skipped);
  EXPECT_STREQ(to_string(o.slots[1].state), "skipped");
}

// The event index of the first violation of `invariant` whose message holds `text`.
std::optional<std::size_t> fired_at(const Outcome& o, const std::string& invariant,
                                    const std::string& text) {
  for (const auto* list : {&o.seen, &o.end}) {
    for (const Violation& v : *list) {
      if (v.invariant == invariant && v.message.find(text) != std::string::npos) {
        return v.event_index;
      }
    }
  }
  return std::nullopt;
}

// A failed group verdict sends the failure notice to every target directly
// (docs/semantics.md §6): one target refusing it is logged and the others are
// still tried. By the run's intent each target had one attempt.
Scenario group_two_targets() {
  Scenario s = group_hourly();
  s.jobs.front().targets = {"team-chat", "ops-chat"};
  s.jobs.front().tasks = {GroupTask{"digest", TaskOutput::summary, 1}};
  return s;
}

Script failed_group_run(const std::vector<std::pair<std::string, std::string>>& notices) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  TraceEvent reply;
  reply.t = at("2026-03-02T10:00:02Z");
  reply.type = "service_reply";
  reply.service = "model-api";
  reply.job = "hourly";
  reply.slot = at(slot);
  reply.data = {{"target", "digest"}, {"status", 429}, {"request_id", "hourly/r0"}};
  s.add_event(std::move(reply));
  for (const auto& [type, target] : notices) {
    s.add(type, "2026-03-02T10:00:03Z", "hourly", slot,
          {{"kind", "failure_notice"}, {"target", target}, {"attempt", 1}});
  }
  run_end(s, "2026-03-02T10:00:04Z", "hourly", slot,
          {{"kind", "regular"},
           {"attempt", 1},
           {"outcome", "failure"},
           {"failure_class", "rate_limit"}});
  return s;
}

TEST(NothingLost, FiresWhenAFailedGroupRunLeavesATargetWithoutItsFailureNotice) {
  const Script s = failed_group_run({{"message_refused", "team-chat"}});
  const Outcome o = run(s, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "without sending its failure notice to target ops-chat"))
      << describe(o.seen);
}

TEST(NothingLost, NearMissAFailedGroupRunWhoseNoticeOneTargetRefused) {
  const Script s =
      failed_group_run({{"message_refused", "team-chat"}, {"message_delivered", "ops-chat"}});
  const Outcome o = run(s, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "failure notice")) << describe(o.seen);
}

// A task's error is a notice item; the other tasks still run (§6). Two tasks,
// the first refused by the model API: a run that returns without the second
// task's call fires; one that ran it (its answer failed too) does not.
TEST(NothingLost, FiresWhenAGroupRunStopsAtItsFirstFailedTask) {
  Scenario two_tasks = group_two_targets();
  two_tasks.jobs.front().tasks = {GroupTask{"digest", TaskOutput::summary, 1},
                                  GroupTask{"preview", TaskOutput::preview, 1}};
  const Script stopped =
      failed_group_run({{"message_refused", "team-chat"}, {"message_delivered", "ops-chat"}});
  const Outcome o = run(stopped, two_tasks, at("2026-03-02T10:01:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "without running task preview")) << describe(o.seen);
  const Outcome one_task = run(stopped, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(one_task, "nothing_lost", "without running task")) << describe(one_task.seen);
  TraceEvent reply;  // the second task asked too, before the run returned
  reply.t = at("2026-03-02T10:00:02Z");
  reply.type = "service_reply";
  reply.service = "model-api";
  reply.job = "hourly";
  reply.slot = at("2026-03-02T10:00:00Z");
  reply.data = {{"target", "preview"}, {"status", 500}, {"request_id", "hourly/r1"}};
  Script ran;
  for (const TraceEvent& e : stopped.events()) {
    if (e.type == "queue_intent") ran.add_event(reply);
    ran.add_event(e);
  }
  const Outcome near = run(ran, two_tasks, at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(near, "nothing_lost", "without running task")) << describe(near.seen);
}

// A notification as the messenger records it (`message_delivered` or
// `message_refused`), with the fields the outbox message carries.
std::size_t notice_sent(Script& s, const std::string& type, const char* t, const char* slot) {
  return s.add(
      type, t, "hourly", slot,
      {{"kind", "notification"}, {"event", "retry_scheduled"}, {"attempt", 1}, {"target", "ops"}});
}

// The outbox's message `id` of a retry_scheduled for hourly's slot.
std::size_t outbox_message(Script& s, const char* t, const char* slot, int id) {
  TraceEvent e;
  e.t = at(t);
  e.type = "outbox_add";
  e.service = "queue";
  e.job = "hourly";
  e.slot = at(slot);
  e.data = {{"id", id},     {"event", "retry_scheduled"}, {"target", "ops"},
            {"attempt", 1}, {"failure_class", "timeout"}, {"at", t}};
  return s.add_event(std::move(e));
}

void boot(Script& s, const char* t, int n) {
  s.add("process_boot", t, {}, std::nullopt, {{"process", "worker"}, {"boots", n}});
}

// A refused notification is logged, not retried (docs/semantics.md §9): the
// outbox sends a message once; only a crash before its removal makes the
// next boot send it again.
TEST(NothingLost, FiresWhenARefusedNotificationIsSentAgain) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  notice_sent(s, "message_refused", "2026-03-02T10:00:00Z", slot);
  const auto bad = notice_sent(s, "message_refused", "2026-03-02T10:00:01Z", slot);
  s.add("outbox_remove", "2026-03-02T10:00:01Z", {}, std::nullopt,
        {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:01:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "after the messenger refused it"), bad) << describe(o.seen);
}

TEST(NothingLost, NearMissARefusedNotificationSentAgainAfterACrash) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  notice_sent(s, "message_refused", "2026-03-02T10:00:00Z", slot);
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  boot(s, "2026-03-02T10:00:30Z", 2);
  notice_sent(s, "message_refused", "2026-03-02T10:00:30Z", slot);
  s.add("outbox_remove", "2026-03-02T10:00:30Z", {}, std::nullopt,
        {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  // A second message with the same fields, committed anew, is sent once too.
  outbox_message(s, "2026-03-02T10:05:00Z", slot, 8);
  notice_sent(s, "message_refused", "2026-03-02T10:05:00Z", slot);
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "notification")) << describe(o.seen) << describe(o.end);
}

// Notifications are sent at least once across crashes (docs/semantics.md §9):
// a message leaves the outbox only after it reached the messenger, and one
// still unsent is owed once the worker has been up for the settle bound.
TEST(NothingLost, FiresWhenANotificationLeavesTheOutboxUnsent) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  const auto bad = s.add("outbox_remove", "2026-03-02T10:00:01Z", {}, std::nullopt,
                         {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:01:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "without reaching the messenger"), bad) << describe(o.seen);
}

TEST(NothingLost, FiresAtTheEndWhenACommittedNotificationIsNeverSent) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  const auto committed = outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  // Up for the settle bound after the commit: owed.
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:05:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "never reached the messenger"), committed)
      << describe(o.end);
}

TEST(NothingLost, NearMissANotificationNotYetSentAtTheEndOrLostToACrash) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto owed = [](const Script& s, const char* until) {
    const Outcome o = run(s, hourly_with_messenger(), at(until));
    return fired(o, "nothing_lost", "reached the messenger");
  };
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  // Committed less than the settle bound before the end: still in flight.
  EXPECT_FALSE(owed(s, "2026-03-02T10:04:59Z"));
  // The worker down at the end, or back up for less than the bound: not owed.
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  EXPECT_FALSE(owed(s, "2026-03-02T11:00:00Z"));
  boot(s, "2026-03-02T10:58:00Z", 2);
  EXPECT_FALSE(owed(s, "2026-03-02T11:00:00Z"));
  // Sent by the next boot: kept.
  notice_sent(s, "message_delivered", "2026-03-02T10:58:00Z", slot);
  EXPECT_FALSE(owed(s, "2026-03-02T12:00:00Z"));
}

// policy_invalid once per change of the recorded error (docs/semantics.md
// §9): the scenario fixes the policy, so a second notice at a later boot
// while the durable row records the error repeats one. "broken" has no
// policy. A boot notifies first, then writes the row.
Script policy_noticed_then_rebooted() {
  Script s;
  boot(s, "2026-03-02T09:30:00Z", 1);
  note(s, "policy_invalid", "broken", nullptr, "2026-03-02T09:30:00Z", 0, "config");
  s.add("durable_job_state", "2026-03-02T09:30:00Z", "broken", std::nullopt,
        {{"retry_status", "ok"}, {"policy_invalid", true}, {"slots", json::object()}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  boot(s, "2026-03-02T10:30:00Z", 2);
  return s;
}

TEST(NothingLost, FiresWhenPolicyInvalidIsSentAgainForTheSameError) {
  Script s = policy_noticed_then_rebooted();
  const auto bad =
      note(s, "policy_invalid", "broken", nullptr, "2026-03-02T10:30:00Z", 0, "config");
  const Outcome o = run(s, base_scenario());
  EXPECT_EQ(fired_at(o, "nothing_lost", "policy_invalid sent again"), bad) << describe(o.seen);
}

TEST(NothingLost, NearMissPolicyInvalidAgainAfterTheStoreLostItsRecord) {
  // The first boot: its notice, then its row.
  const Outcome first = run(policy_noticed_then_rebooted(), base_scenario());
  EXPECT_FALSE(fired(first, "nothing_lost", "")) << describe(first.seen) << describe(first.end);
  // The store refusing writes at the next boot (its state_corrupt committed):
  // the core starts from fresh states and says so again.
  Script refused = policy_noticed_then_rebooted();
  note_state_corrupt(refused, "2026-03-02T10:30:00Z");
  note(refused, "policy_invalid", "broken", nullptr, "2026-03-02T10:30:00Z", 0, "config");
  EXPECT_FALSE(fired(run(refused, base_scenario()), "nothing_lost", "policy_invalid sent again"));
}

// ------------------------------------------------------------ 6 state_durable

TEST(StateDurable, FiresWhenARetryCounterResetsAcrossARestart) {
  Script s;
  const char* slot = "2026-03-02T10:30:00Z";
  regular(s, "slotty", slot, slot, "2026-03-02T11:30:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, slot, 1, "timeout");
  s.add("process_crash", "2026-03-02T10:35:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:36:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  retry_run(s, "slotty", slot, "2026-03-02T10:40:00Z", 2, "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:40:00Z", 1, "timeout");
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// A counter not reset after a success (004's family) announces a higher
// attempt than the witness counted: the witness never adopts it.
TEST(StateDurable, FiresWhenARetryAnnouncesAHigherAttemptThanCounted) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "timeout");
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  const char* next = "2026-03-02T11:00:00Z";
  regular(s, "hourly", next, next, "2026-03-02T12:00:00Z", "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "hourly", next, next, 2, "timeout");
  expect_first(run(s, only({"hourly"}), at("2026-03-02T11:01:00Z")), "state_durable", bad);
}

TEST(StateDurable, NearMissAReplayedIntentRepeatsTheSameNotice) {
  Script s;
  const char* slot = "2026-03-02T10:30:00Z";
  regular(s, "slotty", slot, slot, "2026-03-02T11:30:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, slot, 1, "timeout");
  s.add("process_crash", "2026-03-02T10:30:01Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:31:00Z", 1, "timeout");
  retry_run(s, "slotty", slot, "2026-03-02T10:40:00Z", 2, "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:40:00Z", 2, "timeout");
  expect_clean(run(s, only({"slotty"}), at("2026-03-02T10:45:00Z")));
}

TEST(StateDurable, FiresWhenTheCorruptStoreIsReplaced) {
  Script s;
  s.add(
      "store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
      {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}, {"mode", "garbage"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note_state_corrupt(s, "2026-03-02T10:01:00Z");
  const auto bad =
      s.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
            {{"from", "/srv/state/retry_state.json.tmp"}, {"to", "/srv/state/retry_state.json"}});
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// Missing means fresh: a store that reports itself corrupt when the world
// damaged nothing (a missing file taken for a broken one) fails closed for
// good. Any damage record before the report makes it a fair one.
TEST(StateDurable, FiresWhenCorruptionIsReportedWithNoDamageInTheWorld) {
  Script s;
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  const auto bad = note_state_corrupt(s, "2026-03-02T10:01:00Z");
  expect_first(run(s, base_scenario()), "state_durable", bad);
  for (const char* damage : {"disk_corrupted", "disk_torn_write"}) {
    Script near;
    near.add(damage, "2026-03-02T10:00:00Z", {}, std::nullopt,
             {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
    near.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
             {{"process", "worker"}, {"boots", 2}});
    note_state_corrupt(near, "2026-03-02T10:01:00Z");
    const Outcome o = run(near, base_scenario());
    EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(),
                             [](const Violation& v) { return v.invariant == "state_durable"; }))
        << damage << ": " << describe(o.seen);
  }
  Script refused;  // a fault the disk could not apply damaged nothing
  refused.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
              {{"file", "retry_state.json"}, {"applied", false}});
  const auto unfounded = note_state_corrupt(refused, "2026-03-02T10:01:00Z");
  expect_first(run(refused, base_scenario()), "state_durable", unfounded);
}

// In journal-cut-at-record-boundary.json the swarm's other faults change the
// journal, so the scenario's cut lands on a record boundary that loses no
// slot the ledger knows. The journal left is valid (`records_whole`), no
// reader can see the loss (docs/state-file.md, "What stays undetectable"),
// so appending to it is no corrupt file replaced; once the core reports a
// damage (it found the loss another way), the file must be kept.
Script journal_cut_whole_then_appended(bool reported) {
  Script s;
  const char* journal = "/srv/state/retry_state.journal";
  s.add("disk_corrupted", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"kind", "truncate"}, {"offset", 1097}});
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"},
         {"path", journal},
         {"mode", "truncated"},
         {"applied", true},
         {"records_whole", true}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add("disk_read", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", journal}, {"offset", 0}, {"bytes", 1097}, {"process", 1}});
  if (reported) note_state_corrupt(s, "2026-03-02T10:01:00Z");
  s.add("disk_append", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"path", journal}, {"bytes", 300}, {"process", 1}});
  return s;
}

TEST(StateDurable, AJournalCutAtARecordBoundaryIsCorruptOnlyOnceTheCoreFoundTheLoss) {
  const Outcome unseen =
      run(journal_cut_whole_then_appended(false), base_scenario(), at("2026-03-02T10:03:00Z"));
  const auto state_durable = [](const Violation& v) { return v.invariant == "state_durable"; };
  EXPECT_TRUE(std::none_of(unseen.seen.begin(), unseen.seen.end(), state_durable))
      << describe(unseen.seen);
  EXPECT_TRUE(std::none_of(unseen.end.begin(), unseen.end.end(), state_durable))
      << describe(unseen.end);
  const Script found = journal_cut_whole_then_appended(true);
  expect_first(run(found, base_scenario()), "state_durable", found.events().size() - 1);
  // A later boot's full load cannot see the cut (the store keeps no record
  // across processes that it found one): appending after it is no
  // replacement of a corrupt file.
  Script rebooted = found;
  rebooted.add("process_crash", "2026-03-02T10:05:00Z", {}, std::nullopt,
               {{"process", "worker"}, {"cause", "restart"}});
  rebooted.add("process_boot", "2026-03-02T10:06:00Z", {}, std::nullopt,
               {{"process", "worker"}, {"boots", 3}});
  rebooted.add("disk_append", "2026-03-02T10:07:00Z", {}, std::nullopt,
               {{"path", "/srv/state/retry_state.journal"}, {"bytes", 300}, {"process", 1}});
  const Outcome after_boot = run(rebooted, base_scenario(), at("2026-03-02T10:08:00Z"));
  ASSERT_FALSE(after_boot.seen.empty());
  EXPECT_EQ(after_boot.seen.back().event_index, found.events().size() - 1)
      << describe(after_boot.seen);
}

// A cut at a record boundary that the delivery ledger proves lost records
// (the world's `ledger_ahead`): the next process that boots on the state
// directory as the cut left it must report the damage.
Script journal_cut_the_ledger_proves(const char* before_boot) {
  Script s;
  const char* journal = "/srv/state/retry_state.journal";
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"},
         {"path", journal},
         {"mode", "truncated"},
         {"applied", true},
         {"records_whole", true},
         {"ledger_ahead", json::array({{{"job", "hourly"},
                                        {"ledger_slot", "2026-03-02T10:00:00Z"},
                                        {"state_last_slot", "2026-03-02T09:00:00Z"}}})}});
  if (std::string(before_boot) == "append") {
    s.add("disk_append", "2026-03-02T10:00:30Z", {}, std::nullopt,
          {{"path", journal}, {"bytes", 300}, {"process", 1}});
  } else if (std::string(before_boot) == "lock") {
    s.add("disk_write", "2026-03-02T10:00:30Z", {}, std::nullopt,
          {{"path", "/srv/state/worker.lock"}, {"bytes", 10}, {"process", 1}});
  }
  s.add("process_crash", "2026-03-02T10:00:40Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  return s;
}

TEST(StateDurable, FiresWhenABootOnRecordsTheLedgerProvesLostReportsNothing) {
  for (const char* before : {"nothing", "lock"}) {
    const Outcome o =
        run(journal_cut_the_ledger_proves(before), base_scenario(), at("2026-03-02T11:00:00Z"));
    const auto found = std::find_if(o.end.begin(), o.end.end(), [](const Violation& v) {
      return v.invariant == "state_durable" &&
             v.message.find("delivery ledger has slot 2026-03-02T10:00:00Z of job hourly") !=
                 std::string::npos;
    });
    EXPECT_NE(found, o.end.end()) << before << ": " << describe(o.end);
  }
}

// The booted process trusted the store and wrote to it: the report is still owed.
TEST(StateDurable, FiresWhenABootOnRecordsTheLedgerProvesLostWritesInsteadOfReporting) {
  Script s = journal_cut_the_ledger_proves("nothing");
  s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"bytes", 300}, {"process", 1}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(std::any_of(o.end.begin(), o.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable" && v.message.find("never reported") != std::string::npos;
  })) << describe(o.end);
}

TEST(StateDurable, NearMissABootThatReportsOrAStoreWrittenSinceTheCut) {
  Script reported = journal_cut_the_ledger_proves("nothing");
  note_state_corrupt(reported, "2026-03-02T10:01:00Z");
  reported.add("outbox_add", "2026-03-02T10:01:00Z", {}, std::nullopt,
               {{"event", "state_corrupt"}, {"target", "team"}});
  const auto state_durable = [](const Violation& v) { return v.invariant == "state_durable"; };
  for (const Script& s : {reported, journal_cut_the_ledger_proves("append")}) {
    const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
    EXPECT_TRUE(std::none_of(o.end.begin(), o.end.end(), state_durable)) << describe(o.end);
  }
}

// A journal cut mid-record is dropped as a torn tail at the next
// load. Reported (state_tail_dropped) with a copy of the damaged file kept
// (kept_as), the store may then replace the journal; without the copy, it may
// not, and the report alone counts as the core seeing the damage.
// A torn tail, judged from the world's own records of the journal and the
// files beside it (the core's state_tail_dropped is not read): a state file
// a fault cut may be replaced once the world saw a durable copy of the
// damaged journal (journal_tail_kept); a tail gone with no copy kept fires,
// and so does a corrupt journal (no torn tail: a bad record before it)
// replaced even with a copy.
TEST(StateDurable, ATornTailMayBeDroppedOnlyWithACopyOfTheDamagedJournalKept) {
  const std::string journal = "/srv/state/retry_state.journal";
  const json tail = {
      {"path", journal}, {"offset", 50}, {"length", 12}, {"torn", true}, {"digest", "52c3c793"}};
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"}, {"path", journal}, {"mode", "truncated"}});
  s.add("journal_tail_found", "2026-03-02T10:00:00Z", {}, std::nullopt, tail);
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  Script kept = s;
  json copy = tail;
  copy["copy"] = journal + ".damaged-0-50";
  kept.add("journal_tail_kept", "2026-03-02T10:01:00Z", {}, std::nullopt, copy);
  // The core's report without a copy is no evidence: it is not read.
  kept.add("state_tail_dropped", "2026-03-02T10:01:00Z", {}, std::nullopt,
           {{"file", journal}, {"kept_as", ""}});
  kept.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
           {{"from", journal + ".tmp"}, {"to", journal}});
  json gone = tail;
  gone["kept_as"] = json::array({journal + ".damaged-0-50"});
  kept.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, gone);
  const Outcome o = run(kept, base_scenario(), at("2026-03-02T10:03:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(std::none_of(o.end.begin(), o.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.end);
  // The core says it kept a copy; the world saw none: the rename over the
  // cut journal fires, and so does the tail gone with nothing kept.
  Script lost = s;
  lost.add("state_tail_dropped", "2026-03-02T10:01:00Z", {}, std::nullopt,
           {{"file", journal}, {"kept_as", journal + ".damaged-0-50"}});
  const auto bad = lost.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
                            {{"from", journal + ".tmp"}, {"to", journal}});
  json none = tail;
  none["kept_as"] = json::array();
  const auto dropped =
      lost.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, none);
  const Outcome l = run(lost, base_scenario());
  expect_first(l, "state_durable", bad);
  EXPECT_TRUE(std::any_of(l.seen.begin(), l.seen.end(), [&](const Violation& v) {
    return v.invariant == "state_durable" && v.event_index == dropped;
  })) << describe(l.seen);
  // A tail that no crash explains (torn false) may not be dropped at all.
  Script corrupt;
  json bad_record = tail;
  bad_record["torn"] = false;
  bad_record["kept_as"] = json::array({journal + ".damaged-0-50"});
  const auto replaced =
      corrupt.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, bad_record);
  expect_first(run(corrupt, base_scenario()), "state_durable", replaced);
}

// A store's files change only under its lock, read from the disk's own
// records (disk_lock / disk_unlock with the holding process): a write after
// the lock was released, or by a process that does not hold it, fires; one
// under the lock does not. A store whose writer never locks at all is caught
// too, since the world names its store directories (add_locked_store).
TEST(StateDurable, FiresWhenAStoreIsWrittenWithoutItsLock) {
  const std::string lock = "/srv/state/retry_state.lock";
  const std::string journal = "/srv/state/retry_state.journal";
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"process", 1}});
  s.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"process", 1}});
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         {{"path", journal}, {"process", 1}});
  expect_first(run(s, base_scenario()), "state_durable", bad);

  Script never;
  const auto unlocked = never.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt,
                                  {{"path", "/srv/ledger/job.ledger.json.tmp"}, {"process", 1}});
  MonitorSet set(base_scenario());
  set.add_locked_store("/srv/ledger/");
  const auto v = set.observe(never.events()[unlocked], unlocked);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->invariant, "state_durable");
}

// An update is acknowledged only once it is durable (docs/semantics.md §5),
// from the disk's own records: a store's lock released while a file appended
// or written in its directory under it has not been fsynced fires at the
// unlock; fsynced (directly, or as a temp file before its rename) it does not,
// and a crash forgets what was pending.
TEST(StateDurable, FiresWhenAStoreReleasesItsLockBeforeAnFsync) {
  const std::string lock = "/srv/state/retry_state.lock";
  const std::string journal = "/srv/state/retry_state.journal";
  const json p1 = {{"process", 1}};
  auto with = [&](const std::string& path) { return json{{"path", path}, {"process", 1}}; };
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  s.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  const auto bad = s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  expect_first(run(s, base_scenario()), "state_durable", bad);

  // Near misses: a temp file fsynced and renamed, an fsynced append, and an
  // unsynced append a crash cut before the unlock.
  Script ok;
  const std::string temp = "/srv/state/retry_state.json.tmp";
  ok.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  ok.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  ok.add("disk_rename", "2026-03-02T10:00:00Z", {}, std::nullopt,
         {{"from", temp}, {"to", "/srv/state/retry_state.json"}, {"process", 1}});
  ok.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_lock", "2026-03-02T10:01:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_crash", "2026-03-02T10:01:00Z", {}, std::nullopt, p1);
  ok.add("disk_lock", "2026-03-02T10:02:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_unlock", "2026-03-02T10:02:00Z", {}, std::nullopt, with(lock));
  const Outcome o = run(ok, base_scenario());
  EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.seen);

  // A renamed temp file that was never fsynced is still pending under its new name.
  Script renamed;
  renamed.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  renamed.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  renamed.add("disk_rename", "2026-03-02T10:00:00Z", {}, std::nullopt,
              {{"from", temp}, {"to", "/srv/state/retry_state.json"}, {"process", 1}});
  const auto late =
      renamed.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  expect_first(run(renamed, base_scenario()), "state_durable", late);
}

// A success resets the count (docs/semantics.md §4), read from the durable
// row the world reads: `ok` with retry_count 2 fires; `ok` with 0 and
// `retrying` with 2 do not.
TEST(StateDurable, FiresWhenAnOkRowKeepsItsRetryCount) {
  const char* t = "2026-03-02T10:00:00Z";
  Script s;
  s.add("durable_job_state", t, "hourly", std::nullopt,
        {{"retry_status", "retrying"}, {"retry_count", 2}, {"slots", json::object()}});
  s.add("durable_job_state", t, "hourly", std::nullopt,
        {{"retry_status", "ok"}, {"retry_count", 0}, {"slots", json::object()}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.seen);
  const auto bad = s.add("durable_job_state", t, "hourly", std::nullopt,
                         {{"retry_status", "ok"}, {"retry_count", 2}, {"slots", json::object()}});
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// The queue's durable promise (a world with the core's DiskJobQueue on its
// disk): an entry the queue acknowledged (added) and did not finish or drop,
// and a message its outbox acknowledged and did not remove, are in the file
// a boot reopens, as the world's own reader found it (`queue_reopened`). A
// deduplicated add acknowledges nothing new; a cancelled entry and a removed
// message are owed no more.
TEST(StateDurable, FiresWhenTheReopenedQueueLacksAnAcknowledgedEntry) {
  const char* t = "2026-03-02T10:00:00Z";
  const auto entry = [](std::uint64_t id, bool added) {
    return json{{"id", id},
                {"kind", "retry"},
                {"attempt", 2},
                {"ready_at", "2026-03-02T10:40:00Z"},
                {"added", added}};
  };
  const auto message = [](std::uint64_t id) {
    return json{{"id", id}, {"target", "ops"}, {"event", "retry_scheduled"}};
  };
  Script s;
  s.add("queue_add", t, "slotty", "2026-03-02T09:30:00Z", entry(1, true));
  s.add("queue_add", t, "slotty", "2026-03-02T09:30:00Z", entry(1, false));
  s.add("queue_add", t, "slotty", "2026-03-02T08:30:00Z", entry(2, true));
  s.add("queue_cancel", t, "slotty", "2026-03-02T08:30:00Z", entry(2, true));
  s.add("outbox_add", t, "slotty", "2026-03-02T09:30:00Z", message(1));
  s.add("outbox_add", t, "slotty", "2026-03-02T09:30:00Z", message(2));
  s.add("outbox_remove", t, {}, std::nullopt, message(2));
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"boots", 2}});
  const auto reopened = [](Script& script, json entries, json outbox, bool readable = true) {
    return script.add("queue_reopened", "2026-03-02T10:02:00Z", {}, std::nullopt,
                      {{"path", "/srv/queue/queue.json"},
                       {"process", 1},
                       {"entries", std::move(entries)},
                       {"outbox", std::move(outbox)},
                       {"readable", readable}});
  };
  const auto durable_findings = [](const Outcome& o) {
    std::vector<Violation> out;
    for (const Violation& v : o.seen) {
      if (v.invariant == "state_durable") out.push_back(v);
    }
    return out;
  };
  // Near miss: everything owed is there.
  Script held = s;
  reopened(held, json::array({1}), json::array({1}));
  EXPECT_TRUE(durable_findings(run(held, base_scenario())).empty())
      << describe(durable_findings(run(held, base_scenario())));
  // The entry a crash took back, the message, and bytes the world cannot read.
  for (const auto& [entries, outbox, readable, what] :
       std::vector<std::tuple<json, json, bool, std::string>>{
           {json::array(), json::array({1}), true, "queue entry 1 (job slotty"},
           {json::array({1}), json::array(), true, "outbox message 1 (retry_scheduled to ops)"},
           {json::array(), json::array(), false, "cannot be read by the world"}}) {
    Script lost = s;
    const std::size_t bad = reopened(lost, entries, outbox, readable);
    const std::vector<Violation> found = durable_findings(run(lost, base_scenario()));
    ASSERT_FALSE(found.empty()) << what;
    EXPECT_EQ(found.front().event_index, bad);
    EXPECT_NE(found.front().message.find(what), std::string::npos) << found.front().message;
    // Once: the next reopen judges from what is left.
    reopened(lost, entries, outbox, readable);
    EXPECT_EQ(durable_findings(run(lost, base_scenario())).size(), found.size()) << what;
  }
}

// Damage must be reported by a process that relies on the file: one that
// booted after the damage and read it (the disk's own `disk_read`).
TEST(StateDurable, FiresAtTheEndWhenCorruptionIsNeverReported) {
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add("disk_read", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.json"}, {"offset", 0}, {"bytes", 9}, {"process", 1}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:02:00Z"));
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "state_durable"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_EQ(it->event_index, s.events().size());
  // Near miss: reported, kept, and no retry scheduled while corrupt.
  Script ok = s;
  note_state_corrupt(ok, "2026-03-02T10:01:00Z");
  const Outcome o2 = run(ok, base_scenario(), at("2026-03-02T10:02:00Z"));
  EXPECT_TRUE(std::none_of(o2.end.begin(), o2.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o2.end);
  // ...and a retry scheduled while corrupt (the queue's add of it) fires;
  // the notice alone (a replayed intent's, no retry queued) does not.
  regular(ok, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:03:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(ok, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:03:00Z", 1,
       "rate_limit");
  const Outcome notice_only = run(ok, base_scenario(), at("2026-03-02T10:04:00Z"));
  EXPECT_TRUE(std::none_of(notice_only.seen.begin(), notice_only.seen.end(),
                           [](const Violation& v) {
                             return v.message.find("scheduled while") != std::string::npos;
                           }))
      << describe(notice_only.seen);
  const auto bad = ok.add(
      "queue_add", "2026-03-02T10:03:00Z", "hourly", "2026-03-02T10:00:00Z",
      {{"kind", "retry"}, {"added", true}, {"attempt", 2}, {"ready_at", "2026-03-02T10:08:00Z"}});
  expect_first(run(ok, base_scenario()), "state_durable", bad);
}

// A damaged file no process read after a boot has no reader to report it
// (jobs_state.json: the worker does not use it, docs/state-file.md, "Runtime
// views"); read before the boot only, by the process that ran on, neither.
// Read by the booted process, it fires like the store's own files, unless that
// process went down before it could report.
TEST(StateDurable, ADamagedFileMustBeReportedOnlyOnceABootedProcessReadIt) {
  const std::string file = "/srv/state/jobs_state.json";
  const auto ends_quiet = [](const Script& script) {
    const Outcome o = run(script, base_scenario(), at("2026-03-02T10:30:00Z"));
    return std::none_of(o.end.begin(), o.end.end(),
                        [](const Violation& v) { return v.invariant == "state_durable"; });
  };
  const auto read_at = [&](Script& script, const char* t) {
    script.add("disk_read", t, {}, std::nullopt,
               {{"path", file}, {"offset", 0}, {"bytes", 10}, {"process", 1}});
  };
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "jobs_state.json"}, {"path", file}, {"existed", false}, {"applied", true}});
  Script running = s;
  read_at(running, "2026-03-02T10:05:00Z");
  s.add("process_crash", "2026-03-02T10:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
  s.add("process_boot", "2026-03-02T10:20:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  EXPECT_TRUE(ends_quiet(s)) << "booted, never read";
  EXPECT_TRUE(ends_quiet(running)) << "read by the process that ran on, no boot since";
  Script read = s;
  read_at(read, "2026-03-02T10:20:00Z");
  const Outcome o = run(read, base_scenario(), at("2026-03-02T10:30:00Z"));
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "state_durable"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_NE(it->message.find(file), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("no state_corrupt was reported"), std::string::npos);
  Script reported = read;
  note_state_corrupt(reported, "2026-03-02T10:20:00Z");
  EXPECT_TRUE(ends_quiet(reported));
  // The reader went down before it could report (a torn write of its copy of
  // the damage, say): the debt passes to the next process that reads.
  Script died = read;
  died.add("process_crash", "2026-03-02T10:21:00Z", {}, std::nullopt,
           {{"process", "worker"}, {"cause", "torn_write"}, {"crashes", 2}});
  EXPECT_TRUE(ends_quiet(died)) << "read, then down before reporting";
  died.add("process_boot", "2026-03-02T10:25:00Z", {}, std::nullopt,
           {{"process", "worker"}, {"boots", 3}});
  read_at(died, "2026-03-02T10:25:00Z");
  EXPECT_FALSE(ends_quiet(died)) << "the next boot read it and did not report";
}

// The violation "a retry ran while the state store is corrupt" is judged at the
// retry's start (the queue's take), not when its run fact settles at its end:
// a retry already running when the damage is found cannot be held back
// (docs/semantics.md §5: a retry queued before the damage was found does not
// run). One taken after the core reported the store corrupt still fires.
TEST(StateDurable, ARetryFiresOnlyWhenItStartedWhileTheStoreWasCorrupt) {
  const char* slot = "2026-03-02T10:00:00Z";
  const json end = {
      {"kind", "retry"}, {"attempt", 2}, {"outcome", "failure"}, {"failure_class", "rate_limit"}};
  Script s;
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  s.add("disk_corrupted", "2026-03-02T10:03:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
  // Near miss: taken at 10:05, the damage reported at 10:06, ended at 10:10.
  Script before = s;
  run_start(before, "2026-03-02T10:05:00Z", "hourly", slot, {{"kind", "retry"}, {"attempt", 2}});
  note_state_corrupt(before, "2026-03-02T10:06:00Z");
  run_end(before, "2026-03-02T10:10:00Z", "hourly", slot, end);
  const Outcome near = run(before, base_scenario());
  EXPECT_TRUE(std::none_of(near.seen.begin(), near.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(near.seen);
  // Taken after the damage was reported: fires at the take.
  Script after = s;
  note_state_corrupt(after, "2026-03-02T10:04:00Z");
  const auto bad =
      run_start(after, "2026-03-02T10:05:00Z", "hourly", slot, {{"kind", "retry"}, {"attempt", 2}});
  run_end(after, "2026-03-02T10:10:00Z", "hourly", slot, end);
  expect_first(run(after, base_scenario()), "state_durable", bad);
}

// ------------------------------------------------------------ 7 token_reissue_bounded

TEST(TokenReissueBounded, FiresOnASecondReissueForOneRequest) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  const auto bad = s.broker("token_issued", "2026-03-02T10:00:03Z", "r1",
                            {{"reason", "after_401"}, {"generation", 3}});
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

// A request sent with token fp-A after a 401 for fp-A reached the client: the
// rejected token was kept (001's bug). A request sent before that 401 arrived
// (in parallel) may still be refused with fp-A: that is no violation. In the
// world's order: the brokerage judges a call when it is sent, so its
// `auth_rejected` (stamped with the send) comes before the `service_call`.
Script token_reuse(const char* second_sent_at, bool second_before_the_401) {
  Script s;
  const auto second = [&s, second_sent_at] {
    s.broker("auth_rejected", second_sent_at, "r2",
             {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
    s.broker("service_call", second_sent_at, "r2", {{"operation", "quote"}});
  };
  s.broker("auth_rejected", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
  s.broker("service_call", "2026-03-02T10:00:00Z", "r1", {{"operation", "quote"}});
  if (second_before_the_401) second();
  s.broker("service_reply", "2026-03-02T10:00:00.200Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  if (!second_before_the_401) second();
  return s;
}

TEST(TokenReissueBounded, FiresWhenATokenRefusedWithA401IsUsedAgain) {
  const Script s = token_reuse("2026-03-02T10:00:00.250Z", false);
  expect_first(run(s, base_scenario(), at("2026-03-02T10:30:00Z")), "token_reissue_bounded",
               s.events().size() - 2);
}

TEST(TokenReissueBounded, NearMissParallelRequestSentBeforeThe401Arrived) {
  const Outcome o = run(token_reuse("2026-03-02T10:00:00.150Z", true), base_scenario(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_EQ(
      std::count_if(o.seen.begin(), o.seen.end(),
                    [](const Violation& v) { return v.invariant == "token_reissue_bounded"; }),
      0)
      << describe(o.seen);
}

// The same request id sent again with the refused token after its own 401
// (a client that retries without dropping the token): the second send fires,
// the first rejection does not.
TEST(TokenReissueBounded, FiresWhenTheSameRequestIsResentWithItsRefusedToken) {
  Script s;
  for (const char* sent : {"2026-03-02T10:00:00Z", "2026-03-02T10:00:01Z"}) {
    s.broker("auth_rejected", sent, "r1",
             {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
    s.broker("service_call", sent, "r1", {{"operation", "quote"}});
    s.broker("service_reply", sent, "r1", {{"operation", "quote"}, {"status", 401}});
  }
  expect_first(run(s, base_scenario(), at("2026-03-02T10:30:00Z")), "token_reissue_bounded", 3);
}

// A request's second 401 (its reissued token refused too) is returned as is
// and drops nothing (docs/token-client.md rule 2): the next request may
// present that token once more, and its first 401 then drops it.
TEST(TokenReissueBounded, NearMissTokenRefusedOnlyOnARequestsSecond401IsSentAgain) {
  Script s;
  const json rejected{
      {"operation", "quote"}, {"fingerprint", "fp-bbbb0002"}, {"reason", "revoked"}};
  s.broker("auth_rejected", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
  s.broker("service_call", "2026-03-02T10:00:00Z", "r1", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T10:00:00.100Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:00.100Z", "r1", {{"reason", "after_401"}});
  s.broker("auth_rejected", "2026-03-02T10:00:00.200Z", "r1", rejected);
  s.broker("service_call", "2026-03-02T10:00:00.200Z", "r1", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T10:00:00.300Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("auth_rejected", "2026-03-02T11:00:00Z", "r2", rejected);
  s.broker("service_call", "2026-03-02T11:00:00Z", "r2", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T11:00:00.100Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  const Outcome clean = run(s, base_scenario(), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  // That first 401 of r2 drops it: a third request with it fires.
  s.broker("auth_rejected", "2026-03-02T12:00:00Z", "r3", rejected);
  expect_first(run(s, base_scenario(), at("2026-03-02T12:30:00Z")), "token_reissue_bounded",
               s.events().size() - 1);
}

// The reuse rule (docs/semantics.md §7), from the brokerage's record of the
// token each accepted request presented: reused only until 60 s before its
// expiry. 61 s before is fine; 59 s before fires.
TEST(TokenReissueBounded, FiresWhenATokenIsReusedWithin60sOfItsExpiry) {
  Script s;
  const json token = {
      {"generation", 1}, {"operation", "list"}, {"expires_at", "2026-03-02T11:00:00Z"}};
  s.broker("token_presented", "2026-03-02T10:58:59Z", "r-1", token);
  const auto bad = s.broker("token_presented", "2026-03-02T10:59:01Z", "r-2", token);
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

TEST(TokenReissueBounded, FiresOnAReissueAfter403) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 403}});
  const auto bad = s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
                            {{"reason", "initial"}, {"generation", 2}});
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

// A failed issuance ends its request: the request fails with the issuance's
// class; neither a second issuance nor the request sent again (§7).
TEST(TokenReissueBounded, FiresWhenARequestGoesOnAfterItsIssuanceFailed) {
  Script again;
  again.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
               {{"reason", "initial"}, {"status", 503}});
  const auto bad = again.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
                                {{"reason", "initial"}, {"generation", 1}});
  expect_first(run(again, base_scenario()), "token_reissue_bounded", bad);
  Script resent;
  resent.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
                {{"reason", "initial"}, {"status", 503}});
  const auto sent =
      resent.broker("service_call", "2026-03-02T10:00:01Z", "r1", {{"operation", "quote"}});
  expect_first(run(resent, base_scenario()), "token_reissue_bounded", sent);
  // Another request of the next run may ask for a token again.
  Script next;
  next.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
              {{"reason", "initial"}, {"status", 503}});
  next.broker("token_issued", "2026-03-02T10:05:00Z", "r2",
              {{"reason", "initial"}, {"generation", 1}});
  EXPECT_TRUE(run(next, base_scenario()).seen.empty());
}

// Single flight (docs/token-client.md rule 5): r1 and r2 meet a 401 together.
// A client that shares one issuance sends another only after r1's was
// answered (or a crash lost it with its process); one that lets r2 start its
// own while r1's is in flight sends two `issue_token` calls at once.
enum class Second { in_flight, after_reply, after_crash };

Script two_issuances(Second when) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("service_reply", "2026-03-02T10:00:00.010Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:00.020Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_call", "2026-03-02T10:00:00.020Z", "r1", {{"operation", "issue_token"}});
  const auto second = [&s](const char* t, const char* rid, const char* reason) {
    s.broker("token_issued", t, rid, {{"reason", reason}, {"generation", 3}});
    s.broker("service_call", t, rid, {{"operation", "issue_token"}});
  };
  switch (when) {
    case Second::in_flight: second("2026-03-02T10:00:00.050Z", "r2", "after_401"); break;
    case Second::after_reply:
      s.broker("service_reply", "2026-03-02T10:00:00.120Z", "r1",
               {{"operation", "issue_token"}, {"status", 200}});
      second("2026-03-02T10:00:00.120Z", "r2", "after_401");
      break;
    case Second::after_crash:
      s.add("process_crash", "2026-03-02T10:00:00.030Z", {}, std::nullopt,
            {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
      s.add("process_boot", "2026-03-02T10:00:00.040Z", {}, std::nullopt,
            {{"process", "worker"}, {"boots", 2}});
      second("2026-03-02T10:00:00.050Z", "r3", "initial");  // the new process's cold start
      break;
  }
  return s;
}

TEST(TokenReissueBounded, FiresOnTwoIssuancesInFlightAtOnce) {
  const Outcome o =
      run(two_issuances(Second::in_flight), base_scenario(), at("2026-03-02T10:30:00Z"));
  expect_first(o, "token_reissue_bounded", 5);
  ASSERT_FALSE(o.seen.empty());
  EXPECT_NE(o.seen.front().message.find("single flight"), std::string::npos)
      << o.seen.front().message;
}

// Closest legal cases: the second issuance is sent at the instant the first
// one's reply arrived (after it, in the world's order), or after a crash lost
// the first one with its process.
TEST(TokenReissueBounded, NearMissAnIssuanceRightAfterTheOneInFlightEnded) {
  for (const Second when : {Second::after_reply, Second::after_crash}) {
    const Outcome o = run(two_issuances(when), base_scenario(), at("2026-03-02T10:30:00Z"));
    EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
      return v.invariant == "token_reissue_bounded";
    })) << describe(o.seen);
  }
}

TEST(TokenReissueBounded, NearMissOneReissueThenSuccessAndARefresh) {
  Script s;
  s.broker("token_issued", "2026-03-02T09:59:59Z", "r0",
           {{"reason", "initial"}, {"generation", 1}});
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r1",
           {{"operation", "quote"}, {"status", 200}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r2",
           {{"operation", "quote"}, {"status", 200}});
  s.broker("token_issued", "2026-03-02T16:00:00Z", "r9",
           {{"reason", "refresh"}, {"generation", 3}});
  const Outcome o = run(s, base_scenario());
  expect_clean(o);
  EXPECT_EQ(o.tallies["services"]["brokerage"]["token_issues"], 3);
  EXPECT_EQ(o.tallies["services"]["brokerage"]["reissues"], 1);
}

// ------------------------------------------------------------ 8 item_queries_bounded

// The orchestrator's move to a new instance at `t`, as the world records it.
void migrate(Script& s, const char* t) {
  TraceEvent moved;
  moved.t = at(t);
  moved.type = "instance_changed";
  moved.service = "orchestrator";
  s.add_event(moved);
}

// A cycle's list_agents at `t`, answered 200 (the core sees the agent list
// and the instance) or lost to a network error.
void agent_list(Script& s, const char* t, bool answered = true) {
  s.item("service_call", t, "", {{"operation", "list_agents"}});
  if (answered) {
    s.item("service_reply", t, "", {{"operation", "list_agents"}, {"status", 200}});
  } else {
    s.item("service_reply", t, "",
           {{"operation", "list_agents"}, {"transport_error", "broken_pipe"}});
  }
}

TEST(ItemQueriesBounded, FiresOnAQueryAfterA404) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 404}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

// A request the orchestrator refused (a config error, deferred an hour): the
// item's next query within the hour fires, whatever the core logged.
// 410 is gone too (docs/semantics.md §1: not_found): no call for the item after it.
TEST(ItemQueriesBounded, FiresOnAQueryAfterA410) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 410}});
  const auto bad =
      s.item("service_call", "2026-03-02T11:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  expect_first(o, "item_queries_bounded", bad);
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 410"));
}

// The per-item backoff after transient failures: 1 min, then 2 min after the
// second in a row (docs/semantics.md §8). Asked again before it ends fires.
Script transient_twice_then_asked(const char* again) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 503}});
  s.item("service_call", "2026-03-02T10:01:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:01:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"transport_error", "connection_reset"}});
  s.item("service_call", again, "ISS-1", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenATransientFailureIsAskedBeforeItsBackoff) {
  const Script early = transient_twice_then_asked("2026-03-02T10:02:30Z");
  expect_first(run(early, base_scenario()), "item_queries_bounded", early.events().size() - 1);
  EXPECT_TRUE(fired(run(early, base_scenario()), "item_queries_bounded", "its backoff is 2m"));
}

TEST(ItemQueriesBounded, NearMissATransientFailureAskedWhenItsBackoffEnds) {
  const Outcome o = run(transient_twice_then_asked("2026-03-02T10:03:00Z"), base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ItemQueriesBounded, FiresOnConfigAttemptsCloserThanHourly) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:30:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, FiresOnAnyOrchestratorCallAfterA404OnAssign) {
  Script s;
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-2",
         {{"operation", "assign"}, {"status", 404}});
  s.item("durable_stage", "2026-03-02T10:00:01Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 is gone (404)"}});
  const auto bad =
      s.item("service_call", "2026-03-02T11:00:00Z", "ISS-2", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  expect_first(o, "item_queries_bounded", bad);
  EXPECT_EQ(o.tallies["items"]["ISS-2"]["reason"], "issue ISS-2 is gone (404)");
}

// Config attempts judged from the orchestrator's own answers and request
// times, not from item_deferred (a config failure logged as a backoff would
// hide there): the lead agent is gone, ISS-2 (BUILDING) is reported in_review,
// so its handoff cannot be made: querying it again within the hour fires.
Script lead_missing_then_queried(const char* again, bool list_answered = true) {
  Script s;
  TraceEvent removed;
  removed.t = at("2026-03-02T10:00:00Z");
  removed.type = "agent_removed";
  removed.service = "orchestrator";
  removed.data = {{"agent", kAgentId.substr(0, 8)}, {"role", "lead"}};
  s.add_event(removed);
  // The cycle's agent list: answered, the core sees the lead missing.
  agent_list(s, "2026-03-02T10:10:00Z", list_answered);
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  // The store's first cycle validates every item; this one was due and its
  // attempt was deferred: the durable record carries the reconcile error.
  s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
         {{"stage", "BUILDING"}, {"error", "cannot hand REVIEWING work to an agent"}});
  s.item("service_call", again, "ISS-2", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenAConfigErrorShownByTheOrchestratorIsRetriedWithinTheHour) {
  const Script s = lead_missing_then_queried("2026-03-02T10:20:00Z");
  expect_first(run(s, base_scenario()), "item_queries_bounded", s.events().size() - 1);
  const Outcome later = run(lead_missing_then_queried("2026-03-02T11:10:00Z"), base_scenario());
  EXPECT_TRUE(later.seen.empty()) << describe(later.seen);
}

// The cycle's list_agents was lost to a network error, so the core could not know
// the lead was missing and backed off as for a network error; the item's
// query ten minutes later is no config attempt within the hour.
// A reconcile job with batch_size 1 and two items, the lead agent missing
// from the start: the store's first cycle validates both ids but tries only
// ISS-1 (its deferral is durable); ISS-2's lookup sees a handoff the missing
// lead blocks, yet nothing was attempted (its record is unchanged), so its
// first attempt at the next cycle, 30 minutes later, is no config attempt
// within the hour. That attempt's own answer then binds: asking again inside
// the hour after it fires.
Script first_cycle_lookup_then_attempt(const char* attempt_at) {
  Script s;
  TraceEvent removed;
  removed.t = at("2026-03-02T10:00:00Z");
  removed.type = "agent_removed";
  removed.service = "orchestrator";
  removed.data = {{"agent", kAgentId.substr(0, 8)}, {"role", "lead"}};
  s.add_event(removed);
  agent_list(s, "2026-03-02T10:10:00Z");
  // ISS-2 is outside the batch: looked up, its handoff blocked, not tried.
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  agent_list(s, attempt_at);
  s.item("service_call", attempt_at, "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", attempt_at, "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  s.item("durable_stage", attempt_at, "ISS-2",
         {{"stage", "BUILDING"}, {"error", "cannot hand REVIEWING work to an agent"}});
  return s;
}

TEST(ItemQueriesBounded, NearMissAFirstCycleLookupOutsideTheBatchIsNoAttempt) {
  const Outcome o = run(first_cycle_lookup_then_attempt("2026-03-02T10:40:00Z"), base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ItemQueriesBounded, FiresWithinTheHourOfTheAttemptThatFollowedALookup) {
  Script s = first_cycle_lookup_then_attempt("2026-03-02T10:40:00Z");
  agent_list(s, "2026-03-02T11:10:00Z");
  const auto bad =
      s.item("service_call", "2026-03-02T11:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

// An item refused before any answer in a cycle that knew the instance (its
// agent list lost) holds no validated id: the core does not validate it while
// its deferral runs, so a query inside the hour fires even after a migration.
TEST(ItemQueriesBounded, AnItemRefusedBeforeItWasEverValidatedIsNotValidatedInItsHour) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z", /*answered=*/false);
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  migrate(s, "2026-03-02T10:30:00Z");
  agent_list(s, "2026-03-02T10:40:00Z");
  const auto bad =
      s.item("service_call", "2026-03-02T10:40:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, NearMissAnAgentListLostToTheNetworkHidesTheMissingLead) {
  const Outcome o = run(lead_missing_then_queried("2026-03-02T10:20:00Z", /*list_answered=*/false),
                        base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// A config error at 10:00, a migration at 10:30: the item's first query after
// it (10:40) is the validation the hour allows, and its answer is no config
// attempt, so the hour still ends at 11:00. A second query inside the hour fires.
// (`validation_status`: what the validation is answered, a refusal by default.)
Script config_error_then_migration(const char* again, int validation_status = 403) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z");  // the item's id is validated on the old instance
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  migrate(s, "2026-03-02T10:30:00Z");
  // The cycle's agent list, answered: the core knows the new instance.
  agent_list(s, "2026-03-02T10:40:00Z");
  s.item("service_call", "2026-03-02T10:40:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:40:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", validation_status}});
  s.item("service_call", again, "ISS-1", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, AValidationAfterAMigrationLeavesTheHourWhereItWas) {
  const Outcome after_the_hour =
      run(config_error_then_migration("2026-03-02T11:00:01Z"), base_scenario());
  EXPECT_TRUE(after_the_hour.seen.empty()) << describe(after_the_hour.seen);
  const Script twice = config_error_then_migration("2026-03-02T10:50:00Z");
  expect_first(run(twice, base_scenario()), "item_queries_bounded", twice.events().size() - 1);
}

// A migration long before the config error: the item's first query after it
// is a full attempt, not a validation the next hour would allow.
TEST(ItemQueriesBounded, AMigrationAllowsOnlyTheFirstQueryAfterIt) {
  Script s;
  migrate(s, "2026-03-02T09:00:00Z");
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, NearMissLeadPresentItemDueEveryCycle) {
  Script s;
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  s.item("service_call", "2026-03-02T10:20:00Z", "ISS-2", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// The script's last event is item_queries_bounded's first violation, which says `text`.
void expect_last_fires(const Script& s, const Scenario& scenario, const char* text) {
  const Outcome o = run(s, scenario);
  expect_first(o, "item_queries_bounded", s.events().size() - 1);
  EXPECT_TRUE(fired(o, "item_queries_bounded", text)) << describe(o.seen);
}

// A config error, a migration, and the validation the migration calls for
// failing transiently: the item now backs off, and an item backing off is
// not validated again, so its next query inside the hour is an attempt.
TEST(ItemQueriesBounded, FiresWhenAValidationThatFailedIsFollowedByAnAttemptInsideTheHour) {
  expect_last_fires(config_error_then_migration("2026-03-02T10:50:00Z", 503), base_scenario(),
                    "after a config error");
}

TEST(ItemQueriesBounded, NearMissAValidationThatFailedLeavesTheAttemptAtTheHour) {
  expect_clean(run(config_error_then_migration("2026-03-02T11:00:01Z", 503), base_scenario()));
}

// Events of the reconcile job's own cycle (the job the world attributes them to).
void reconcile_event(Script& s, const char* type, const char* t, const std::string& item,
                     json data) {
  TraceEvent e;
  e.t = at(t);
  e.type = type;
  e.job = "reconcile";
  e.item = item;
  e.data = std::move(data);
  if (std::string(type).starts_with("service_")) e.service = "orchestrator";
  s.add_event(std::move(e));
}

// The cap: an item's durable next attempt, `next` after a 503 about it at 10:00.
Script backoff_written(const char* next) {
  Script s;
  reconcile_event(s, "service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:00:00Z", "ISS-1",
                  {{"operation", "get_issue"}, {"status", 503}});
  reconcile_event(s, "durable_schedule", "2026-03-02T10:00:00Z", "ISS-1",
                  {{"next_attempt_at", next}, {"updated_at", "2026-03-02T10:00:00Z"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenADurableNextAttemptIsMoreThanAnHourAfterTheLastAnswer) {
  expect_last_fires(backoff_written("2026-03-02T11:04:00Z"), base_scenario(), "waits at most 1h");
}

TEST(ItemQueriesBounded, NearMissADurableNextAttemptAtTheCap) {
  expect_clean(run(backoff_written("2026-03-02T11:00:00Z"), base_scenario()));
}

// A cycle at 10:10 with both items due (ISS-1 last visited at 09:00, ISS-2
// at 09:30) that asks only `asked`, then reaches its intent.
Script cycle_asking(const std::string& asked) {
  Script s;
  reconcile_event(s, "durable_schedule", "2026-03-02T09:00:00Z", "ISS-1",
                  {{"next_attempt_at", "2026-03-02T09:00:00Z"},
                   {"updated_at", "2026-03-02T09:00:00Z"}});
  reconcile_event(s, "durable_schedule", "2026-03-02T09:30:00Z", "ISS-2",
                  {{"next_attempt_at", "2026-03-02T09:30:00Z"},
                   {"updated_at", "2026-03-02T09:30:00Z"}});
  reconcile_event(s, "service_call", "2026-03-02T10:10:00Z", "", {{"operation", "list_agents"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:10:00Z", "",
                  {{"operation", "list_agents"}, {"status", 200}});
  reconcile_event(s, "service_call", "2026-03-02T10:10:00Z", asked, {{"operation", "get_issue"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:10:00Z", asked,
                  {{"operation", "get_issue"}, {"status", 200}, {"body_class", "todo"}});
  reconcile_event(s, "queue_intent", "2026-03-02T10:10:00Z", "", json::object());
  return s;
}

Scenario batch_of_one() {
  Scenario sc = base_scenario();
  for (JobSpec& j : sc.jobs) {
    if (j.kind == JobKind::reconcile) j.batch_size = 1;
  }
  return sc;
}

TEST(ItemQueriesBounded, FiresWhenABatchTakesAMoreRecentlyVisitedItemFirst) {
  expect_last_fires(cycle_asking("ISS-2"), batch_of_one(), "issue ISS-1 was due");
}

TEST(ItemQueriesBounded, FiresWhenACycleWithoutABatchSizeLeavesADueItem) {
  expect_last_fires(cycle_asking("ISS-1"), base_scenario(), "no batch_size");
}

TEST(ItemQueriesBounded, NearMissABatchTakesTheLeastRecentlyVisitedItem) {
  expect_clean(run(cycle_asking("ISS-1"), batch_of_one()));
}

TEST(ItemQueriesBounded, NearMissHourlyConfigAttemptsAndOtherItems) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z");
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 403}});
  // A validation query after a migration is not an attempt.
  migrate(s, "2026-03-02T10:04:00Z");
  agent_list(s, "2026-03-02T10:05:00Z");
  s.item("service_call", "2026-03-02T10:05:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:01Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 503}});
  s.item("service_call", "2026-03-02T10:11:02Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_call", "2026-03-02T11:00:01Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T11:00:02Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 403}});
  const Outcome o = run(s, base_scenario());
  expect_clean(o);
  EXPECT_EQ(o.tallies["items"]["ISS-1"]["queries"], 3);
  EXPECT_EQ(o.tallies["items"]["ISS-2"]["queries"], 2);
}

// ------------------------------------------------------------ queue_discipline

// The queue's leases as the world records them: a take names the taking
// process; a finish ends the lease.
std::size_t take(Script& s, const char* t, const std::string& job, int id, int process) {
  return s.add(
      "queue_take", t, job, "2026-03-02T10:00:00Z",
      {{"id", id}, {"kind", "regular"}, {"attempt", 1}, {"process", process}, {"ready_at", t}});
}

void done(Script& s, const char* t, const std::string& job, int id) {
  s.add("queue_done", t, job, "2026-03-02T10:00:00Z",
        {{"id", id}, {"kind", "regular"}, {"attempt", 1}});
}

TEST(QueueDiscipline, FiresWhenARunStartsBesideAnotherAtConcurrencyOne) {
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  const auto bad = take(s, "2026-03-02T10:00:01Z", "broken", 2, 1);
  expect_first(run(s, base_scenario()), "queue_discipline", bad);
}

TEST(QueueDiscipline, FiresWhenAJobIsTakenTwiceAtOnce) {
  Scenario sc = base_scenario();
  sc.queue.concurrency = 3;
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  const auto bad = take(s, "2026-03-02T10:00:01Z", "slotty", 2, 1);
  const Outcome o = run(s, sc);
  expect_first(o, "queue_discipline", bad);
  EXPECT_TRUE(fired(o, "queue_discipline", "a job runs once at a time"));
}

// A finished run frees its place; a dead process's leases end with it.
TEST(QueueDiscipline, NearMissRunsOneAfterAnotherAndAfterACrash) {
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  done(s, "2026-03-02T10:00:01Z", "slotty", 1);
  take(s, "2026-03-02T10:00:02Z", "broken", 2, 1);
  s.add("process_crash", "2026-03-02T10:00:03Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  take(s, "2026-03-02T10:05:00Z", "slotty", 3, 2);
  const Outcome o = run(s, base_scenario());
  EXPECT_FALSE(fired(o, "queue_discipline", "")) << describe(o.seen);
}

// ------------------------------------------------------------ 9 no_secret_leak

TEST(NoSecretLeak, FiresOnATokenValueOrAFullAgentId) {
  const std::string token = "tok_00112233445566778899aabbccddeeff";
  Script s;
  s.broker("token_issued", "2026-03-02T10:00:00Z", "r1", {{"fingerprint", "fp-1234abcd"}});
  s.add("reconcile_started", "2026-03-02T10:00:00Z", "reconcile", std::nullopt,
        {{"lead", kAgentId.substr(0, 8)}});  // the allowed 8-character prefix
  const auto bad = s.add("debug_dump", "2026-03-02T10:00:01Z", "fetch", std::nullopt,
                         {{"header", "Bearer " + token}});
  const Outcome o = run(s, base_scenario(), kUntil, {token});
  expect_first(o, "no_secret_leak", bad);
  EXPECT_EQ(o.seen.front().message.find(token), std::string::npos);  // never repeated

  Script agent;
  const auto leak = agent.add("handoff", "2026-03-02T10:00:00Z", "reconcile", std::nullopt,
                              {{"agent", kAgentId}});
  expect_first(run(agent, base_scenario()), "no_secret_leak", leak);

  MonitorSet set(base_scenario());
  set.add_secret(token);
  EXPECT_FALSE(set.observe_text("info token_obtained fingerprint=fp-1234abcd", 3, kStart));
  const auto text = set.observe_text("warning token_rejected token=" + token, 4, kStart);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->invariant, "no_secret_leak");
  EXPECT_EQ(text->event_index, 4u);
}

// ------------------------------------------------------------ 10 deterministic

TEST(Deterministic, ComparesTracesLineByLine) {
  Trace a, b;
  for (Trace* tr : {&a, &b}) {
    TraceEvent e;
    e.t = kStart;
    e.type = "scheduler_boot";
    tr->record(e);
    e.type = "slot_due";
    e.job = "hourly";
    tr->record(e);
  }
  EXPECT_FALSE(compare_traces(a, b));
  TraceEvent x;
  x.t = kStart + 1;
  x.type = "run_started";
  a.record(x);
  x.data["attempt"] = 2;
  b.record(x);
  const auto v = compare_traces(a, b);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->invariant, "deterministic");
  EXPECT_EQ(v->event_index, 2u);
  // One trace longer than the other: the first extra line.
  Trace c = a;
  TraceEvent y;
  y.type = "run_finished";
  c.record(y);
  const auto w = compare_traces(a, c);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->event_index, 3u);
}

// ------------------------------------------------------------ bounded_run

TEST(BoundedRun, FiresOnceWhenTheEventBoundIsPassed) {
  Scenario sc = base_scenario();
  sc.queue.max_events = 3;
  Script s;
  for (int i = 0; i < 5; ++i) s.add("noise", "2026-03-02T10:00:00Z");
  const Outcome o = run(s, sc);
  ASSERT_EQ(o.seen.size(), 1u) << describe(o.seen);
  EXPECT_EQ(o.seen.front().invariant, "bounded_run");
  EXPECT_EQ(o.seen.front().event_index, 3u);
  sc.queue.max_events = 5;
  expect_clean(run(s, sc));
}

// ------------------------------------------------------------ property: legal traces

// A tiny generator of legal traces: the per_slot job over a few hours (each
// slot fails 0..3 times, retried within budget after its backoff, exhausted
// at 3), deliveries with crashes in the at-least-once window, monotone stage
// moves, and token requests with at most one reissue each.
Script legal_trace(const std::vector<int>& failures, const std::vector<bool>& crash_in_window,
                   const std::vector<int>& stage_steps, const std::vector<int>& token_kinds) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  TimeMs slot = at("2026-03-02T10:30:00Z");
  const std::size_t hours = std::min<std::size_t>(failures.size(), 6);
  auto iso = [](TimeMs t) { return format_instant(t); };
  std::deque<std::string> keep;  // owns the strings the Script's const char* point into
  auto c = [&](TimeMs t) -> const char* {
    keep.push_back(iso(t));
    return keep.back().c_str();
  };
  for (std::size_t h = 0; h < hours; ++h, slot += kHourMs) {
    const char* sl = c(slot);
    handout(s, sl, "slotty", sl, {{"next_run_at", iso(slot + kHourMs)}});
    const int fails = failures[h];
    TimeMs t = slot;
    for (int attempt = 1; attempt <= std::min(fails + 1, 3); ++attempt) {
      const bool fail = attempt <= fails;
      run_start(s, c(t), "slotty", sl,
                {{"kind", attempt == 1 ? "regular" : "retry"}, {"attempt", attempt}});
      json f = {{"kind", attempt == 1 ? "regular" : "retry"},
                {"attempt", attempt},
                {"outcome", fail ? "failure" : "success"}};
      if (fail) f["failure_class"] = "provider_5xx";
      run_end(s, c(t + kSecondMs), "slotty", sl, f);
      if (fail && attempt < 3) {
        note(s, "retry_scheduled", "slotty", sl, c(t + kSecondMs), attempt, "provider_5xx");
        t += kSecondMs + 10 * kMinuteMs;
      } else if (fail) {
        note(s, "retry_exhausted", "slotty", sl, c(t + kSecondMs), 2, "provider_5xx");
      } else {
        TraceEvent d;
        d.t = t + 2 * kSecondMs;
        d.type = "message_delivered";
        d.service = "messenger";
        d.job = "slotty";
        d.slot = slot;
        d.data = {{"target", "team-chat"}, {"kind", "delivery"}};
        s.add_event(d);
        if (h < crash_in_window.size() && crash_in_window[h]) {
          s.add("process_crash", c(t + 2 * kSecondMs), {}, std::nullopt,
                {{"process", "worker"}, {"cause", "gen"}});
          s.add("process_boot", c(t + 3 * kSecondMs), {}, std::nullopt,
                {{"process", "worker"}, {"boots", 2}});
          d.t = t + 4 * kSecondMs;
          s.add_event(d);
        }
        s.add("durable_delivery", c(t + 4 * kSecondMs), "slotty", sl, ledger({"team-chat"}));
      }
    }
  }
  std::string stage = "DESIGNING";
  const std::vector<std::string> order = {"DESIGNING", "BUILDING", "REVIEWING", "DONE"};
  std::size_t rank = 0;
  for (int step : stage_steps) {
    // A step forward or an out-of-order observation that must not move it.
    if (step > 0 && rank + 1 < order.size()) {
      static const std::map<std::string, const char*> kStatusOf{
          {"BUILDING", "in_progress"}, {"REVIEWING", "in_review"}, {"DONE", "done"}};
      status_answered(s, "2026-03-02T16:00:00Z", "ISS-1", kStatusOf.at(order[rank + 1]));
      if (order[rank + 1] != "DONE") assign_answered(s, "2026-03-02T16:00:00Z", "ISS-1");
      s.item("durable_stage", "2026-03-02T16:00:00Z", "ISS-1", {{"stage", order[rank + 1]}});
      ++rank;
    }
  }
  int rid = 0;
  for (int kind : token_kinds) {
    const std::string r = "req-" + std::to_string(rid++);
    const int first = kind == 0 ? 200 : kind == 1 ? 401 : kind == 2 ? 403 : 503;
    s.broker("service_reply", "2026-03-02T16:30:00Z", r,
             {{"operation", "quote"}, {"status", first}});
    if (first == 401) {
      s.broker("token_issued", "2026-03-02T16:30:01Z", r, {{"reason", "after_401"}});
      s.broker("service_reply", "2026-03-02T16:30:02Z", r,
               {{"operation", "quote"}, {"status", 401}});
    }
  }
  return s;
}

REHEARSE_PROP(MonitorProperty, LegalTracesNeverFire, ()) {
  const auto failures = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 4));
  const auto crashes = *rc::gen::container<std::vector<bool>>(rc::gen::arbitrary<bool>());
  const auto steps = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 2));
  const auto tokens = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 4));
  const Script s = legal_trace(failures, crashes, steps, tokens);
  Scenario sc = base_scenario();
  const Outcome o = run(s, sc, at("2026-03-02T17:00:00Z"));
  RC_ASSERT(o.seen.empty());
  // The only end finding a legal trace may give: slotty slots beyond the
  // generated hours were never handed out (the generator stops early).
  for (const Violation& v : o.end) {
    RC_ASSERT(v.invariant == "schedule_kept");
  }
  std::int64_t window = 0;
  for (std::size_t h = 0; h < std::min<std::size_t>(failures.size(), 6); ++h) {
    if (failures[h] < 3 && h < crashes.size() && crashes[h]) ++window;
  }
  RC_ASSERT(o.tallies["duplicate_deliveries_in_window"].get<std::int64_t>() == window);
}

// The same generator with one fault planted must fire (the property's teeth).
TEST(MonitorProperty, ThePlantedFaultsOfTheGeneratorFire) {
  Script s = legal_trace({1, 0}, {false, false}, {1, 1}, {1});
  const auto extra = s.add_event([] {
    TraceEvent d;
    d.t = at("2026-03-02T17:00:00Z");
    d.type = "message_delivered";
    d.service = "messenger";
    d.job = "slotty";
    d.slot = at("2026-03-02T11:30:00Z");
    d.data = {{"target", "team-chat"}, {"kind", "delivery"}};
    return d;
  }());
  expect_first(run(s, base_scenario()), "no_duplicate_delivery", extra);
}

// ------------------------------------------------------------ a real run

// The scheduler with a group job (model-api + messenger, ledger on the
// simulated disk), a quota outage on the model API, and a restart that spans
// a slot: its trace must pass every monitor.
struct RealRun {
  std::vector<Violation> seen;
  std::vector<Violation> end;
  json tallies;
  std::size_t duplicate_deliveries = 0;
};

// `core_policy` is what the scheduler is given; the scenario (what the
// monitors judge by) always says {max 2, 300 s}. Giving the core another
// policy is the test-only faulty variant.
RealRun run_real_world(const json& core_policy, TimeMs outage_until) {
  const TimeMs start = at("2026-03-02T09:58:00Z");
  const TimeMs until = at("2026-03-02T13:30:00Z");
  const std::vector<std::string> targets = {"team-chat"};
  const std::string ops = "ops-channel";

  Scenario sc;
  sc.name = "monitors-real-run";
  sc.start_ms = start;
  sc.until_ms = until;
  JobSpec digest;
  digest.id = "digest";
  digest.schedule = "0 * * * *";
  digest.retry_policy = json{{"max", 2}, {"backoff_sec", 300}};
  sc.jobs = {digest};

  Trace trace;
  Simulator sim({.start_ms = start, .seed = 17});
  SimDisk disk(&trace, sim.rng().derive("disk"));
  REHEARSE_ASSERT(disk.make_dirs("/srv").ok());
  bind_to_simulator(disk, sim,
                    {.crash_effect = ProcessCrashEffect::power_loss,
                     .reboot_after_ms = 2 * kMinuteMs});
  SimQueue queue(&trace);
  bind_to_simulator(queue, sim, SimQueueBinding{2 * kMinuteMs, &disk});
  SimServices services(sim, trace);
  SimLog log(sim, trace);
  ModelApi model(sim.rng(), {.latency_ms = 200, .timeout_ms = 30 * kSecondMs});
  model.set_output("summary", ModelOutput::summary);
  model.set_output("preview", ModelOutput::preview);
  // 10:00 fails, its first retry (10:05) fails, the second (10:10) succeeds.
  model.add_quota_outage(at("2026-03-02T10:00:00Z"), outage_until);
  services.add(model);
  Messenger messenger(sim, trace, {{"team-chat", ops}, 100});

  MonitorSet monitors(sc);
  std::vector<Violation> seen;
  // The state store as the world reads it (sim/world_facts.hpp), as the
  // world runner records it.
  DurableStateReader state_reader("/srv/state");
  trace.add_listener([&](const TraceEvent& e, std::size_t i) {
    if (auto v = monitors.observe(e, i)) seen.push_back(*v);
    if (e.type != "disk_fsync" && e.type != "disk_fsync_dir") return;
    const std::string type = e.type;
    const std::string path = e.str("path");
    for (TraceEvent& fact : state_reader.events_after(disk, type, path, sim.now())) {
      trace.record(std::move(fact));
    }
  });
  std::int64_t boots = 0;
  sim.add_process_listener([&](ProcessId, ProcessChange change, TimeMs now) {
    // What the world runner records (docs/trace-events.md).
    TraceEvent e;
    e.t = now;
    if (change == ProcessChange::booted) {
      e.type = "process_boot";
      e.data = {{"process", "worker"}, {"boots", ++boots}};
    } else {
      e.type = "process_crash";
      e.data = {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}};
    }
    trace.record(std::move(e));
  });

  ProcessId p = sim.add_process("scheduler", [&](Simulator& s, ProcessId self) {
    auto store = StateStore::open(disk, "/srv/state");
    if (!store.ok()) return;
    StateStore& st = s.emplace_memory<StateStore>(self, std::move(*store));
    auto handle =
        testing::make_group_runner(s.clock(), services, messenger, log, disk, "/srv/ledger",
                                   "digest", targets, {"summary", "preview"});
    if (!handle) return;
    auto& owned =
        s.emplace_memory<std::unique_ptr<testing::GroupRunnerHandle>>(self, std::move(handle));
    ScheduledJob job;
    job.id = "digest";
    auto cron = CronSchedule::parse("0 * * * *");
    REHEARSE_ASSERT(cron.ok());
    job.schedule = *cron;
    job.policy = parse_retry_policy(core_policy, schedule_facts(job.schedule));
    REHEARSE_ASSERT(job.policy.ok());
    job.runner = &owned->runner();
    job.notify_target = ops;
    SchedulerOptions options;
    options.start_ms = start;
    Scheduler& scheduler =
        s.emplace_memory<Scheduler>(self,
                                    SchedulerPorts{s.clock(), queue, st, messenger, log, s.rng()},
                                    std::vector<ScheduledJob>{std::move(job)}, options);
    s.spawn(self, scheduler.run(), "scheduler");
  });
  sim.boot(p);
  // Down 10:50-11:20: the 11:00 slot runs late, once, after the restart.
  sim.schedule_crash(p, at("2026-03-02T10:50:00Z"), 30 * kMinuteMs);
  const RunResult r = sim.run_until(until);
  EXPECT_TRUE(r.ok()) << r.message;
  RealRun out;
  out.seen = std::move(seen);
  for (const std::string& line : log.lines()) {
    if (auto v = monitors.observe_text(line, trace.size(), until)) out.seen.push_back(*v);
  }
  out.end = monitors.finish(until);
  out.tallies = monitors.tallies();
  out.duplicate_deliveries = messenger.duplicate_deliveries().size();
  return out;
}

TEST(MonitorsOnARealRun, TheCoresTracePassesEveryMonitor) {
  const RealRun run =
      run_real_world(json{{"max", 2}, {"backoff_sec", 300}}, at("2026-03-02T10:07:00Z"));
  EXPECT_TRUE(run.seen.empty()) << describe(run.seen);
  EXPECT_TRUE(run.end.empty()) << describe(run.end);
  const json& t = run.tallies;
  SCOPED_TRACE(t.dump(2));
  EXPECT_TRUE(t["unchecked"].empty());
  const json& d = t["jobs"]["digest"];
  // 10:00 (after two retries), 11:00 late, 12:00, 13:00: all delivered.
  EXPECT_EQ(d["delivered_slots"], 4);
  EXPECT_EQ(d["retries"], 2);
  EXPECT_EQ(d["failed_slots"], 0);
  EXPECT_EQ(d["in_flight_slots"], 0);
  EXPECT_EQ(d["notifications"]["retry_scheduled"], 2);
  EXPECT_EQ(d["notifications"]["recovered"], 1);
  EXPECT_GE(d["max_delay_ms"].get<std::int64_t>(), 20 * kMinuteMs);  // the late 11:00 run
  EXPECT_EQ(t["boots"], 2);
  EXPECT_GE(t["failure_notices"].get<std::int64_t>(), 2);  // one per failed attempt
  EXPECT_GT(t["services"]["model-api"]["calls"].get<std::int64_t>(), 0);
  EXPECT_EQ(run.duplicate_deliveries, 0u);
}

// The faulty variant: the core retries five times where the scenario's policy
// allows two. The monitors, reading only the trace, must name retries_bounded.
TEST(MonitorsOnARealRun, ACoreThatOverRetriesIsCaught) {
  const RealRun run =
      run_real_world(json{{"max", 5}, {"backoff_sec", 300}}, at("2026-03-02T10:22:00Z"));
  ASSERT_FALSE(run.seen.empty());
  EXPECT_EQ(run.seen.front().invariant, "retries_bounded") << describe(run.seen);
  EXPECT_NE(run.seen.front().message.find("digest"), std::string::npos);
}

// ------------------------------------------------- damage the store cannot see past
// docs/monitors.md, "Damage the store cannot see past": a boot while the
// world's damage to the state store's files is still there is blind. Each
// excuse is tested with the violation it must still catch next to it.

std::size_t damage_store(Script& s, const char* t, const char* file = "retry_state.json",
                         bool applied = true) {
  const std::string path = std::string("/srv/state/") +
                           (std::string(file) == "retry_state.json" ? "retry_state.journal" : file);
  return s.add("store_corrupt_injected", t, {}, std::nullopt,
               {{"file", file},
                {"path", path},
                {"mode", "garbage"},
                {"existed", true},
                {"applied", applied}});
}

void crash(Script& s, const char* t) {
  s.add("process_crash", t, {}, std::nullopt, {{"process", "worker"}, {"cause", "restart"}});
}

bool fired(const Outcome& o, const std::string& invariant, const std::string& text) {
  for (const auto* list : {&o.seen, &o.end}) {
    for (const Violation& v : *list) {
      if (v.invariant == invariant && v.message.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

// Up until 10:30 (10:00 handed out), damaged at `damage_at`, down from
// `down_at` to a boot at 13:10 that reports the corruption, then 14:00
// handed out: nothing of 11:00-13:00 was handed out nor coalesced.
Script boot_after_damage(const char* down_at, const char* file, bool applied) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  damage_store(s, "2026-03-02T10:20:00Z", file, applied);
  crash(s, down_at);
  boot(s, "2026-03-02T13:10:00Z", 2);
  note_state_corrupt(s, "2026-03-02T13:10:00Z");
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissSlotsMissedWhileDownBeforeABlindBoot) {
  const Outcome o = run(boot_after_damage("2026-03-02T10:30:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, NearMissAFiringAtTheCrashInstantFellWhileDown) {
  // The crash at 11:00 came before any hand-out of 11:00.
  const Outcome o = run(boot_after_damage("2026-03-02T11:00:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// Up from 09:31; 10:00 handed out (the queue's add) and the process dead at
// once, before the hand-out's state write.
Script handout_then_crash() {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"id", 0},
         {"kind", "regular"},
         {"attempt", 1},
         {"ready_at", "2026-03-02T10:00:00Z"},
         {"added", true}});
  crash(s, "2026-03-02T10:00:00Z");
  return s;
}

// 10:00 handed out and the process dead before the state write; with
// `damaged` the journal is damaged while down; the boot's first row of the
// job is a fresh one (next_run_at none), then it hands out 10:00 again late
// with 11:00-13:00 folded into it (counted from the fresh state: 3).
Script handout_lost_then_boot(bool damaged) {
  Script s = handout_then_crash();
  if (damaged) damage_store(s, "2026-03-02T10:20:00Z");
  boot(s, "2026-03-02T13:10:00Z", 2);
  if (damaged) {
    s.add("journal_tail_gone", "2026-03-02T13:10:00Z", {}, std::nullopt,
          {{"path", "/srv/state/retry_state.journal"},
           {"torn", true},
           {"kept_as", json::array({"/srv/state/retry_state.journal.damaged-0-10"})}});
  }
  s.add("durable_job_state", "2026-03-02T13:10:00Z", "hourly", std::nullopt,
        {{"next_run_at", nullptr}, {"coalesced_slots", 0}, {"slots", json::object()}});
  handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", 3}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissRowsOwedBeforeABlindBootAreNotJudged) {
  const Outcome o = run(handout_lost_then_boot(true), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnARowOwedBeforeAPlainRestart) {
  const Outcome o =
      run(handout_lost_then_boot(false), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "next_run_at is none after handing out"))
      << describe(o.seen);
}

// 10:00 handed out and the process dead before the state write (a torn
// journal record); the next boot first replays an intent, whose row still
// shows 10:00 as next (the state from before the hand-out), then hands 10:00
// out again and records 11:00. A row of the later boot showing anything else
// (here 12:00) still fires.
Script handout_cut_then_intent_row(const char* row_next) {
  Script s = handout_then_crash();
  boot(s, "2026-03-02T10:00:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:00:00Z", "hourly", std::nullopt,
        {{"next_run_at", row_next}, {"coalesced_slots", 0}, {"slots", json::object()}});
  handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissARowOfTheNextBootShowingTheStateBeforeACutHandout) {
  const Outcome o = run(handout_cut_then_intent_row("2026-03-02T10:00:00Z"), only({"hourly"}),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  const Outcome moved = run(handout_cut_then_intent_row("2026-03-02T12:00:00Z"), only({"hourly"}),
                            at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(
      fired(moved, "schedule_kept", "next_run_at is 2026-03-02T12:00:00Z after handing out"))
      << describe(moved.seen);
}

// Down 10:20-12:10, a boot at 12:10 that dies at the instant it booted (its
// store's first write torn: `dies_at`), the store damaged at 12:20, a blind
// boot at 13:10: 11:00 and 12:00 were owed by a boot that never ran its
// scheduler, so the blind boot's window reaches back to 10:20. A boot that lived (dies
// at 12:15) owed them itself: 11:00 skipped still fires.
Script boot_that_dies_then_blind_boot(const char* dies_at) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  crash(s, "2026-03-02T10:20:00Z");
  boot(s, "2026-03-02T12:10:00Z", 2);
  crash(s, dies_at);
  damage_store(s, "2026-03-02T12:20:00Z");
  boot(s, "2026-03-02T13:10:00Z", 3);
  note_state_corrupt(s, "2026-03-02T13:10:00Z");
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissABootThatDiedAtOnceOwedNothing) {
  const Outcome o = run(boot_that_dies_then_blind_boot("2026-03-02T12:10:00Z"), only({"hourly"}),
                        at("2026-03-02T14:30:00Z"));
  EXPECT_FALSE(fired(o, "schedule_kept", "")) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotABootThatLivedOwed) {
  const Outcome o = run(boot_that_dies_then_blind_boot("2026-03-02T12:15:00Z"), only({"hourly"}),
                        at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
      << describe(o.seen);
}

// The world damaged the store's snapshot behind the running store (which
// follows its journal), so the world reads no durable row of the runs after
// it. A run's outcome is then what its finish carries (its failure notice),
// so the retries are still counted (not every run taken for a success and the
// exhaustion for one after 0 of 2 retries). `retries` failed retries before
// retry_exhausted: 2 spends the budget; 1 does not, and fires.
Script retries_with_rows_unreadable(int retries) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  damage_store(s, "2026-03-02T09:40:00Z", "retry_state.json");
  const char* times[] = {slot, "2026-03-02T10:05:00Z", "2026-03-02T10:15:00Z"};
  for (int n = 0; n <= retries; ++n) {
    const std::uint64_t id = s.start_run("hourly");
    const json entry = {{"id", id}, {"kind", n == 0 ? "regular" : "retry"}, {"attempt", n + 1}};
    s.add("queue_take", times[n], "hourly", slot, entry);
    failed_reply(s, times[n], "hourly", slot, "rate_limit");
    s.add("queue_intent", times[n], "hourly", slot, entry);
    s.add("queue_done", times[n], "hourly", slot, entry);
    note(s, n == retries ? "retry_exhausted" : "retry_scheduled", "hourly", slot, times[n],
         n == retries ? n : n + 1, "rate_limit");
  }
  return s;
}

TEST(NothingLostStoreDamage, RetriesAreCountedWhenTheWorldCannotReadTheRows) {
  const Outcome spent =
      run(retries_with_rows_unreadable(2), only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(spent, "nothing_lost", "")) << describe(spent.seen);
  const Outcome early =
      run(retries_with_rows_unreadable(1), only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(early, "nothing_lost", "declared retry_exhausted after 1 of 2"))
      << describe(early.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotSkippedWhileUpBeforeTheBlindBoot) {
  // 11:00 fell while the process was up (down only from 11:30): not excused.
  const Outcome o = run(boot_after_damage("2026-03-02T11:30:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
      << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresWhenTheBootFoundTheStoreWhole) {
  // Damage the world could not apply, or to a runtime view the store does
  // not read its schedule from, leaves the boot able to read its last slot.
  for (const auto& [file, applied] : std::vector<std::pair<const char*, bool>>{
           {"retry_state.json", false}, {"jobs.json", true}}) {
    const Outcome o = run(boot_after_damage("2026-03-02T10:30:00Z", file, applied),
                          only({"hourly"}), at("2026-03-02T14:30:00Z"));
    EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
        << file << describe(o.seen);
  }
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotSkippedAfterTheBlindBoot) {
  Script s = boot_after_damage("2026-03-02T10:30:00Z", "retry_state.json", true);
  const auto bad = handout(s, "2026-03-02T16:00:00Z", "hourly", "2026-03-02T16:00:00Z",
                           {{"next_run_at", "2026-03-02T17:00:00Z"}});
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T16:30:00Z"));
  expect_first(o, "schedule_kept", bad);
  EXPECT_NE(o.seen.front().message.find("15:00:00Z was skipped"), std::string::npos);
}

TEST(ScheduleKeptStoreDamage, NearMissNoDurableRowJudgedWhileTheStoreIsDamaged) {
  // Damaged at 10:20: the row read after the 11:00 hand-out is not the
  // store's write (it writes nothing); once the world saw the damaged tail
  // go, the rows are judged again.
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  damage_store(s, "2026-03-02T10:20:00Z");
  handout(s, "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  s.add("journal_tail_gone", "2026-03-02T11:30:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"},
         {"torn", true},
         {"kept_as", json::array({"/srv/state/retry_state.journal.damaged-0-10"})}});
  const auto stale = handout(s, "2026-03-02T12:00:00Z", "hourly", "2026-03-02T12:00:00Z",
                             {{"next_run_at", "2026-03-02T12:00:00Z"}});
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T12:30:00Z"));
  expect_first(o, "schedule_kept", stale + 1);
  EXPECT_EQ(o.seen.size(), 1u) << describe(o.seen);
}

// 10:00 handed out; down 10:30-13:10; at 13:10 11:00 is handed out late
// (12:00 and 13:00 folded into it) and the process dies before the state
// write; the next boot hands 11:00 out again and writes `counted` misfires.
Script late_run_handed_out_twice(int counted) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  crash(s, "2026-03-02T10:30:00Z");
  boot(s, "2026-03-02T13:10:00Z", 2);
  s.add("queue_add", "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
        {{"id", 0},
         {"kind", "regular"},
         {"attempt", 1},
         {"ready_at", "2026-03-02T11:00:00Z"},
         {"added", true}});
  crash(s, "2026-03-02T13:10:00Z");
  boot(s, "2026-03-02T13:10:30Z", 3);
  handout(s, "2026-03-02T13:10:30Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", counted}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissMisfireRecordOwedAcrossTheSameSlotHandedOutAgain) {
  const Outcome o = run(late_run_handed_out_twice(2), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresWhenTheLateRunHandedOutAgainRecordsNoMisfire) {
  const Outcome o = run(late_run_handed_out_twice(0), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "records 0 coalesced slots")) << describe(o.seen);
}

// A failure announced at 10:00, the process down 10:03-10:04, then a
// success at 11:00 with no `recovered`; `damaged`: the store was damaged
// before that boot.
Script failure_shown_then_restart(bool damaged) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  s.add("message_delivered", slot, "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  if (damaged) damage_store(s, "2026-03-02T10:02:00Z");
  crash(s, "2026-03-02T10:03:00Z");
  boot(s, "2026-03-02T10:04:00Z", 2);
  if (damaged) note_state_corrupt(s, "2026-03-02T10:04:00Z");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  return s;
}

TEST(NothingLostStoreDamage, NearMissNoRecoveredOwedForAFailureShownBeforeABlindBoot) {
  const Outcome o =
      run(failure_shown_then_restart(true), hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

// The failure shown while the store refused writes (it reported itself
// corrupt at 09:50, so the failure was never recorded), then a boot that
// finds no damage to see: the new process cannot know what was shown, so
// no `recovered` is owed (e.g. the store failed closed on lost records the ledger showed).
TEST(NothingLostStoreDamage, NearMissNoRecoveredOwedForAFailureShownWhileTheStoreRefused) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  note_state_corrupt(s, "2026-03-02T09:50:00Z");
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  s.add("message_delivered", slot, "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  crash(s, "2026-03-02T10:03:00Z");
  boot(s, "2026-03-02T10:04:00Z", 2);
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

// The same failure notice committed to the outbox before the crash and sent
// only after the reboot (the outbox replays it): it is judged as shown when
// and as it was committed. Committed while the store refused writes, no
// `recovered` is owed; committed under a sound store, a plain restart still
// owes one.
Script failure_committed_then_sent_after_restart(bool refused) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  if (refused) note_state_corrupt(s, "2026-03-02T09:50:00Z");
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  crash(s, "2026-03-02T10:00:01Z");
  boot(s, "2026-03-02T10:01:00Z", 2);
  s.add("message_delivered", "2026-03-02T10:01:00Z", "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  return s;
}

TEST(NothingLostStoreDamage, NearMissAReplayedNoticeCommittedWhileTheStoreRefusedOwesNothing) {
  const Outcome o = run(failure_committed_then_sent_after_restart(true), hourly_with_messenger(),
                        at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

TEST(NothingLostStoreDamage, FiresWhenAReplayedNoticeOfASoundStoreGetsNoRecovered) {
  const Outcome o = run(failure_committed_then_sent_after_restart(false), hourly_with_messenger(),
                        at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

TEST(NothingLostStoreDamage, FiresWhenRecoveredIsMissingAfterAPlainRestart) {
  const Outcome o =
      run(failure_shown_then_restart(false), hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

// Two retries of 10:00 (the per_episode budget of 2 spent, the episode not
// over), the process down 10:06-10:08; at the boot the world reads the job's
// row as `ok` with `retry_count` 0 (with `damaged`: the records of both
// retries lost with the damage), and the core, seeing a new episode, retries
// 11:00's failure `retries` times. With `reboot`, the damaged journal's tail
// goes at 10:30 and the process restarts at 10:40 (a boot that is not blind,
// reading what the blind one wrote), before 11:00.
Script retries_again_after_restart(bool damaged, int retries, bool reboot = false) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:05:00Z", 2, "rate_limit");
  crash(s, "2026-03-02T10:06:00Z");
  if (damaged) damage_store(s, "2026-03-02T10:07:00Z");
  boot(s, "2026-03-02T10:08:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:08:00Z", "hourly", std::nullopt,
        {{"retry_status", "ok"},
         {"retry_count", 0},
         {"coalesced_slots", 0},
         {"next_run_at", "2026-03-02T11:00:00Z"},
         {"slots", json::object()}});
  if (reboot) {
    s.add("journal_tail_gone", "2026-03-02T10:30:00Z", {}, std::nullopt,
          {{"path", "/srv/state/retry_state.journal"}, {"torn", true}});
    crash(s, "2026-03-02T10:40:00Z");
    boot(s, "2026-03-02T10:40:00Z", 3);
  }
  const char* next = "2026-03-02T11:00:00Z";
  regular(s, "hourly", next, next, "2026-03-02T12:00:00Z", "failure", "rate_limit");
  const char* times[] = {"2026-03-02T11:05:00Z", "2026-03-02T11:10:00Z", "2026-03-02T11:15:00Z"};
  const char* prev = next;
  for (int n = 1; n <= retries; ++n) {
    note(s, "retry_scheduled", "hourly", next, prev, n, "rate_limit");
    retry_run(s, "hourly", next, times[n - 1], n + 1, "failure", "rate_limit");
    prev = times[n - 1];
  }
  return s;
}

TEST(RetriesBoundedStoreDamage, NearMissTheCountRebasedOnWhatTheDamagedStoreHolds) {
  const Outcome o =
      run(retries_again_after_restart(true, 2), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
  EXPECT_FALSE(fired(o, "state_durable", "retry counter")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresBeyondTheBudgetAfterTheRebase) {
  const Outcome o =
      run(retries_again_after_restart(true, 3), only({"hourly"}), at("2026-03-02T11:20:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

// The first retry after a blind boot comes in a later boot that is not blind:
// it is not counted on top of the attempts the damage had lost.
TEST(RetriesBoundedStoreDamage, NearMissTheRebaseHoldsInALaterBootThatIsNotBlind) {
  const Outcome o =
      run(retries_again_after_restart(true, 2, true), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresBeyondTheBudgetInALaterBootThatIsNotBlind) {
  const Outcome o =
      run(retries_again_after_restart(true, 3, true), only({"hourly"}), at("2026-03-02T11:20:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "retry 3 exceeds")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresWhenAPlainRestartLosesTheCount) {
  const Outcome o =
      run(retries_again_after_restart(false, 2), only({"hourly"}), at("2026-03-02T11:12:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

// 10:00 failed, retry 1 (attempt 2) failed at 10:05 and retry 2
// (attempt 3) was queued for 10:15; the process went down at 10:06 and a
// damage to the store lost the records after retry 1 was scheduled. At the
// blind boot (10:20) the row the world reads has retry_count 1 with that
// retry still pending (next_action retry): the boot runs retry 1 again, and
// when it fails the queue still holds retry 2 from before (the core's add is
// idempotent), which starts at once. Neither is a retry beyond the budget
// nor one before its backoff: the pending retry is the one the count already
// holds, and retry 2 answers the failure that queued it. `tail` adds what
// must still fire: a third retry, or a retry 2 queued after the boot that
// runs 0 ms after the failure.
enum class AfterLostRetry : unsigned char { nothing, third_retry, early_new_entry };

Script pending_retry_lost_with_the_damage(bool damaged, AfterLostRetry tail) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  const auto queue_retry = [&](const char* t, int attempt, const char* ready, bool added) {
    s.add("queue_add", t, "hourly", slot,
          {{"kind", "retry"}, {"added", added}, {"attempt", attempt}, {"ready_at", ready}});
  };
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  queue_retry(slot, 2, "2026-03-02T10:05:00Z", true);
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, "2026-03-02T10:05:00Z", 2, "rate_limit");
  queue_retry("2026-03-02T10:05:00Z", 3, "2026-03-02T10:15:00Z", true);
  crash(s, "2026-03-02T10:06:00Z");
  if (damaged) damage_store(s, "2026-03-02T10:07:00Z");
  boot(s, "2026-03-02T10:20:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:20:00Z", "hourly", std::nullopt,
        {{"retry_status", "retrying"},
         {"retry_count", 1},
         {"next_action", "retry"},
         {"next_retry_at", "2026-03-02T10:05:00Z"},
         {"next_run_at", "2026-03-02T11:00:00Z"},
         {"slots", json::object()}});
  retry_run(s, "hourly", slot, "2026-03-02T10:20:00Z", 2, "failure", "rate_limit");
  const bool early = tail == AfterLostRetry::early_new_entry;
  if (early) {
    s.add("queue_cancel", "2026-03-02T10:20:00Z", "hourly", slot,
          {{"kind", "retry"}, {"attempt", 3}});
  }
  queue_retry("2026-03-02T10:20:00Z", 3, early ? "2026-03-02T10:20:00Z" : "2026-03-02T10:15:00Z",
              early);
  retry_run(s, "hourly", slot, "2026-03-02T10:20:00Z", 3, "failure", "rate_limit");
  if (tail == AfterLostRetry::third_retry) {
    retry_run(s, "hourly", slot, "2026-03-02T10:40:00Z", 4, "failure", "rate_limit");
  }
  return s;
}

// A blind boot whose surviving row holds a spent budget, then a success
// (the episode ends), then a new episode with `retries` retries: the budget
// of the new episode is whole (the count is not rebased at the first retry
// hours after the boot, on the old episode's row).
Script new_episode_after_a_blind_boot(int retries) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  crash(s, "2026-03-02T09:40:00Z");
  damage_store(s, "2026-03-02T09:41:00Z");
  boot(s, "2026-03-02T09:50:00Z", 2);
  s.add("durable_job_state", "2026-03-02T09:50:00Z", "hourly", std::nullopt,
        {{"retry_status", "retry_exhausted"},
         {"retry_count", 2},
         {"next_action", "wait_next_run"},
         {"next_run_at", "2026-03-02T10:00:00Z"},
         {"slots", json::object()}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  const char* slot = "2026-03-02T11:00:00Z";
  regular(s, "hourly", slot, slot, "2026-03-02T12:00:00Z", "failure", "rate_limit");
  const char* times[] = {"2026-03-02T11:05:00Z", "2026-03-02T11:15:00Z", "2026-03-02T11:35:00Z"};
  const char* prev = slot;
  for (int n = 1; n <= retries; ++n) {
    note(s, "retry_scheduled", "hourly", slot, prev, n, "rate_limit");
    retry_run(s, "hourly", slot, times[n - 1], n + 1, "failure", "rate_limit");
    prev = times[n - 1];
  }
  return s;
}

TEST(RetriesBoundedStoreDamage, ANewEpisodeAfterABlindBootHasItsWholeBudget) {
  const Outcome whole =
      run(new_episode_after_a_blind_boot(2), only({"hourly"}), at("2026-03-02T11:40:00Z"));
  EXPECT_FALSE(fired(whole, "retries_bounded", "")) << describe(whole.seen);
  const Outcome beyond =
      run(new_episode_after_a_blind_boot(3), only({"hourly"}), at("2026-03-02T11:40:00Z"));
  EXPECT_TRUE(fired(beyond, "retries_bounded", "retry 3 exceeds")) << describe(beyond.seen);
}

TEST(RetriesBoundedStoreDamage, NearMissAPendingRetryLostWithTheDamageRunsAgain) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::nothing),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(o, "retries_bounded", "")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnAThirdRetryAfterAPendingOneRanAgain) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::third_retry),
                        only({"hourly"}), at("2026-03-02T10:50:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "retry 3 exceeds")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnARetryQueuedAfterTheBlindBootBeforeItsBackoff) {
  const Outcome o = run(pending_retry_lost_with_the_damage(true, AfterLostRetry::early_new_entry),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "before its backoff")) << describe(o.seen);
}

TEST(RetriesBoundedStoreDamage, FiresOnTheOldEntryRightAfterAFailureWithoutDamage) {
  const Outcome o = run(pending_retry_lost_with_the_damage(false, AfterLostRetry::nothing),
                        only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(o, "retries_bounded", "before its backoff")) << describe(o.seen);
}

// --- several worker processes on one state directory (docs/worker.md) ---

// Worker 1 (pid 1) acts and leases the 10:00 run; worker 2 (pid 2) stands by.
// Worker 1 dies; with `takeover` worker 2 is granted the worker lock; with
// `recover` it puts the dead worker's lease back before taking work; then it
// takes the 11:00 run.
Script two_workers(bool takeover, bool recover) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"boots", 1}});
  s.add("disk_lock", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"path", "/srv/state/worker.lock"}, {"process", 1}});
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker-2"}, {"pid", 2}, {"boots", 1}});
  const json entry = {{"kind", "regular"}, {"attempt", 1}, {"ready_at", "2026-03-02T10:00:00Z"}};
  json take1 = entry;
  take1["id"] = 1;
  take1["process"] = 1;
  s.add("queue_take", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z", take1);
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  s.add("disk_process_crashed", "2026-03-02T10:01:00Z", {}, std::nullopt, {{"process", 1}});
  if (takeover) {
    s.add("disk_lock", "2026-03-02T10:01:30Z", {}, std::nullopt,
          {{"path", "/srv/state/worker.lock"}, {"process", 2}});
  }
  if (recover) {
    json requeue = entry;
    requeue["id"] = 1;
    s.add("queue_requeue", "2026-03-02T10:01:30Z", "hourly", "2026-03-02T10:00:00Z", requeue);
  }
  json take2 = entry;
  take2["id"] = 2;
  take2["process"] = 2;
  take2["ready_at"] = "2026-03-02T11:00:00Z";
  s.add("queue_take", "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z", take2);
  return s;
}

TEST(ProcessTracker, AStandbyActsOnlyOnceGrantedTheWorkerLock) {
  const Script s = two_workers(true, true);
  ProcessTracker p;
  std::vector<std::pair<bool, bool>> seen;  // (came up, went down) per event
  for (std::size_t i = 0; i < s.events().size(); ++i) {
    p.observe(s.events()[i], i);
    seen.emplace_back(p.came_up_at(i), p.went_down_at(i));
  }
  // boot of 1: up; its lock: nothing; boot of the standby: nothing; the
  // crash of 1: down; the grant to 2: up.
  EXPECT_EQ(seen[0], std::make_pair(true, false));
  EXPECT_EQ(seen[1], std::make_pair(false, false));
  EXPECT_EQ(seen[2], std::make_pair(false, false));
  EXPECT_EQ(seen[4], std::make_pair(false, true));
  EXPECT_EQ(seen[6], std::make_pair(true, false));
  EXPECT_EQ(p.boots(), 2);
  EXPECT_TRUE(p.up());
}

TEST(ProcessTracker, WithoutAWorkerLockASurvivorActsAtOnce) {
  Script s;  // two workers, no worker lock ever granted (a core that skips it)
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt, {{"pid", 1}, {"boots", 1}});
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt, {{"pid", 2}, {"boots", 1}});
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt, {{"pid", 1}});
  ProcessTracker p;
  for (std::size_t i = 0; i < s.events().size(); ++i) p.observe(s.events()[i], i);
  EXPECT_TRUE(p.went_down_at(2));
  EXPECT_TRUE(p.came_up_at(2));  // worker 2 acts from the crash on
  EXPECT_TRUE(p.up());
  EXPECT_EQ(p.boots(), 2);
}

TEST(NothingLost, FiresWhenWorkIsTakenBeforeADeadWorkersLeaseIsRecovered) {
  const Outcome o = run(two_workers(true, false), only({"hourly"}), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost",
                    "queue entry 1 (hourly 2026-03-02T10:00:00Z attempt 1) was "
                    "leased by process 1"))
      << describe(o.seen);
}

TEST(NothingLost, NearMissADeadWorkersLeaseIsPutBackBeforeTheNextTake) {
  const Outcome o = run(two_workers(true, true), only({"hourly"}), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "was leased by process")) << describe(o.seen);
}

// The store refusing writes is known from the raw commit of `state_corrupt`
// too: a reboot at the same instant commits the same notice again, which
// the notification facts read once.
TEST(ProcessTracker, AStateCorruptCommittedAgainAtTheSameInstantStillRefuses) {
  TraceEvent commit;
  commit.type = "outbox_add";
  commit.data = {{"event", "state_corrupt"}};
  TraceEvent boot;
  boot.type = "process_boot";
  boot.data = {{"pid", 1}};
  TraceEvent crash;
  crash.type = "process_crash";
  crash.data = {{"pid", 1}};
  ProcessTracker p;
  p.observe(boot, 0);
  p.observe(commit, 1);
  EXPECT_TRUE(p.store_refused());
  p.observe(crash, 2);
  p.observe(boot, 3);
  EXPECT_FALSE(p.store_refused());
  p.observe(commit, 4);
  EXPECT_TRUE(p.store_refused());
}

// Down 09:45-10:10; the boot at 10:10 finds the store corrupt and runs from
// memory (it hands out 11:00); the store is damaged again while down
// (11:40) and the blind boot at 12:10 hands out 10:00, older than 11:00
// but never handed out: what the surviving records lead to, not a schedule
// moved back. The same hand-out
// after a boot that found the store whole fires.
Script older_slot_after_blind_boot(bool blind) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  crash(s, "2026-03-02T09:45:00Z");
  boot(s, "2026-03-02T10:10:00Z", 2);
  note_state_corrupt(s, "2026-03-02T10:10:00Z");
  handout(s, "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}});
  crash(s, "2026-03-02T11:30:00Z");
  if (blind) damage_store(s, "2026-03-02T11:40:00Z");
  boot(s, "2026-03-02T12:10:00Z", 3);
  handout(s, "2026-03-02T12:10:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T13:00:00Z"}, {"coalesced_count", 2}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissAnOlderSlotNeverHandedOutAfterABlindBoot) {
  const Outcome o =
      run(older_slot_after_blind_boot(true), only({"hourly"}), at("2026-03-02T12:30:00Z"));
  EXPECT_FALSE(fired(o, "schedule_kept", "handed out after the later slot")) << describe(o.seen);
  const Outcome whole =
      run(older_slot_after_blind_boot(false), only({"hourly"}), at("2026-03-02T12:30:00Z"));
  EXPECT_TRUE(fired(whole, "schedule_kept", "handed out after the later slot"))
      << describe(whole.seen);
}

// A disk record of process 1 on `path`.
json by_process_1(const char* path) { return json{{"path", path}, {"process", 1}}; }

// The worker lock (held for the process's life) is no store lock: a store
// file appended under it alone fires (kill matrix: store_update_without_lock
// survived while the worker lock counted).
TEST(StateDurable, FiresOnAStoreChangeUnderTheWorkerLockAlone) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         by_process_1("/srv/state/retry_state.journal"));
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// The worker lock's directory is a locked store from the lock's grant on: a
// core whose updates never take the store's lock fires at its first update,
// even where nothing else ever took that lock and the world did not name the
// directory (a hand-made trace, a user's own world).
TEST(StateDurable, FiresOnAnUpdateInTheWorkerLocksDirectoryWhenNoStoreLockWasEverTaken) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         by_process_1("/srv/state/retry_state.journal"));
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

TEST(StateDurable, NearMissAnUpdateUnderTheStoreLockBesideTheWorkerLock) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  s.add("disk_lock", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.journal"));
  s.add("disk_fsync", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.journal"));
  s.add("disk_unlock", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  const Outcome o = run(s, base_scenario());
  EXPECT_FALSE(fired(o, "state_durable", "")) << describe(o.seen);
}

// The at-least-once window of item_queries_bounded: an orchestrator answer
// binds once the item's durable record was written after it. A crash
// between the two (the crash sweep's disk points inside the pipeline store's
// write) lets the next process ask once more; a crash after it does not, and
// the answer the second query gets binds again.
Script reply_then_crash(int status, bool recorded, bool ask_twice) {
  Script s;
  boot(s, "2026-03-02T09:59:00Z", 1);
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", status}});
  if (recorded) {
    s.item("durable_stage", "2026-03-02T10:00:01Z", "ISS-1",
           {{"stage", "DESIGNING"}, {"error", "the answer, recorded"}});
  }
  crash(s, "2026-03-02T10:00:01Z");
  boot(s, "2026-03-02T10:01:00Z", 2);
  s.item("service_call", "2026-03-02T10:01:01Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:01:02Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", status}});
  if (ask_twice) {
    s.item("service_call", "2026-03-02T10:02:00Z", "ISS-1", {{"operation", "get_issue"}});
  }
  return s;
}

TEST(ItemQueriesBounded, NearMissA404LostWithACrashBeforeItsRecordIsAskedOnceMore) {
  const Outcome o = run(reply_then_crash(404, false, false), base_scenario());
  EXPECT_FALSE(fired(o, "item_queries_bounded", "")) << describe(o.seen);
  const Outcome refused = run(reply_then_crash(422, false, false), base_scenario());
  EXPECT_FALSE(fired(refused, "item_queries_bounded", "")) << describe(refused.seen);
}

TEST(ItemQueriesBounded, FiresOnAQueryAfterA404RecordedBeforeTheCrash) {
  const Outcome o = run(reply_then_crash(404, true, false), base_scenario());
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 404")) << describe(o.seen);
  const Outcome refused = run(reply_then_crash(422, true, false), base_scenario());
  EXPECT_TRUE(fired(refused, "item_queries_bounded", "after a config error"))
      << describe(refused.seen);
}

TEST(ItemQueriesBounded, FiresOnTheThirdQueryAfterTheSecond404) {
  const Outcome o = run(reply_then_crash(404, false, true), base_scenario());
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 404")) << describe(o.seen);
}

// The takeover (docs/worker.md): the holder of the worker lock dies at 10:00;
// the standby, asking every 30 s (queue.standby_poll), holds the lock by
// 10:00:30. Granted at 10:00:45 it fires; a standby that died too, or a grant
// within the poll, does not.
Script holder_dies_then_granted(const char* granted, bool standby_dies) {
  Script s;
  const char* lock = "/srv/state/worker.lock";
  s.add("process_boot", "2026-03-02T09:30:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"boots", 1}});
  s.add("process_boot", "2026-03-02T09:30:00Z", {}, std::nullopt,
        {{"process", "worker-2"}, {"pid", 2}, {"boots", 1}});
  s.add("disk_lock", "2026-03-02T09:30:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_process_crashed", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", 1}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  if (standby_dies) {
    s.add("process_crash", "2026-03-02T10:00:10Z", {}, std::nullopt,
          {{"process", "worker-2"}, {"pid", 2}, {"cause", "restart"}});
  }
  if (granted != nullptr) {
    s.add("disk_lock", granted, {}, std::nullopt, {{"path", lock}, {"process", 2}});
  }
  return s;
}

TEST(QueueDiscipline, FiresWhenAStandbyTakesOverLaterThanOnePoll) {
  const Script late = holder_dies_then_granted("2026-03-02T10:00:45Z", false);
  const Outcome o = run(late, only({"hourly"}), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(o, "queue_discipline", "standby process 2 was up")) << describe(o.seen);
  // Never granted: judged at the end, once the poll interval is over.
  const Script never = holder_dies_then_granted(nullptr, false);
  EXPECT_FALSE(fired(run(never, only({"hourly"}), at("2026-03-02T10:00:20Z")), "queue_discipline",
                     "standby"));
  const Outcome end = run(never, only({"hourly"}), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(end, "queue_discipline", "standby process 2 was up")) << describe(end.end);
  for (const auto& [granted, dies] :
       {std::pair{"2026-03-02T10:00:30Z", false}, std::pair{"2026-03-02T10:00:45Z", true}}) {
    const Outcome near =
        run(holder_dies_then_granted(granted, dies), only({"hourly"}), at("2026-03-02T10:05:00Z"));
    EXPECT_FALSE(fired(near, "queue_discipline", "standby")) << granted << describe(near.seen);
  }
}

// After a migration, stored ids first (docs/semantics.md §8): the first cycle
// that learns the new instance asks every item whose record holds an earlier
// answer, unless the item is terminal or backing off.
std::size_t job_asked(Script& s, const char* t, const std::string& item, int status) {
  for (const char* type : {"service_call", "service_reply"}) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.service = "orchestrator";
    e.job = "reconcile";
    e.item = item;
    e.data = {{"operation", "get_issue"}, {"target", item}};
    if (std::string(type) == "service_reply") {
      e.data["status"] = status;
      e.data["body_class"] = "todo";
    }
    s.add_event(std::move(e));
  }
  return 0;
}

std::size_t cycle_end(Script& s, const char* t) {
  return s.add("queue_intent", t, "reconcile", "2026-03-02T10:00:00Z",
               {{"id", 90}, {"kind", "regular"}, {"attempt", 1}});
}

// A cycle at 09:40 answered about both items (ISS-1 with `first_status`), a
// migration at 09:45, and the 10:00 cycle on the new instance asking `asked`.
Script migration(int first_status, const std::vector<std::string>& asked, bool crash_first) {
  Script s;
  boot(s, "2026-03-02T09:39:00Z", 1);
  agents_listed(s, "2026-03-02T09:40:00Z");
  job_asked(s, "2026-03-02T09:40:01Z", "ISS-1", first_status);
  job_asked(s, "2026-03-02T09:40:01Z", "ISS-2", 200);
  if (crash_first) {
    crash(s, "2026-03-02T09:40:02Z");
    boot(s, "2026-03-02T09:40:02Z", 2);
  }
  cycle_end(s, "2026-03-02T09:40:03Z");
  s.add("instance_changed", "2026-03-02T09:45:00Z", {}, std::nullopt,
        {{"from", "orchestrator-1"}, {"to", "orchestrator-2"}});
  agents_listed(s, "2026-03-02T10:00:00Z");
  for (const std::string& item : asked) job_asked(s, "2026-03-02T10:00:01Z", item, 200);
  cycle_end(s, "2026-03-02T10:00:02Z");
  return s;
}

// The index of the 10:00 cycle's end in migration()'s script.
std::size_t migration_end(const Script& s) { return s.events().size() - 1; }

TEST(ItemQueriesBounded, FiresWhenAStoredIdIsNotCheckedInTheFirstCycleAfterAMigration) {
  Script s = migration(200, {"ISS-2"}, false);
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:05:00Z"));
  expect_first(o, "item_queries_bounded", migration_end(s));
  EXPECT_TRUE(fired(o, "item_queries_bounded", "issue ISS-1 of job reconcile was not asked"))
      << describe(o.seen);
  // A refusal is an answer the record keeps too.
  const Outcome refused =
      run(migration(403, {"ISS-2"}, false), base_scenario(), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(refused, "item_queries_bounded", "ISS-1 of job reconcile was not asked"));
}

TEST(ItemQueriesBounded, NearMissItemsTheFirstCycleAfterAMigrationMayLeave) {
  const auto quiet = [](const Script& s) {
    const Outcome o = run(s, base_scenario(), at("2026-03-02T10:05:00Z"));
    EXPECT_FALSE(fired(o, "item_queries_bounded", "first cycle after")) << describe(o.seen);
  };
  quiet(migration(200, {"ISS-1", "ISS-2"}, false));   // both checked
  quiet(migration(503, {"ISS-2"}, false));            // ISS-1 backing off
  quiet(migration(200, {"ISS-2"}, true));             // ISS-1's answer maybe lost in the crash
  Script no_list = migration(200, {"ISS-2"}, false);  // ISS-1 answered again without a list:
  Script unlisted;                                    // its handoff may have backed off
  for (std::size_t k = 0; k < no_list.events().size(); ++k) {
    const TraceEvent& e = no_list.events()[k];
    if (e.type == "instance_changed") {
      TraceEvent lost = e;
      lost.type = "service_reply";
      lost.service = "orchestrator";
      lost.job = "reconcile";
      lost.data = {{"operation", "list_agents"}, {"status", 504}};
      lost.t = at("2026-03-02T09:44:00Z");
      unlisted.add_event(std::move(lost));
      job_asked(unlisted, "2026-03-02T09:44:01Z", "ISS-1", 200);
      cycle_end(unlisted, "2026-03-02T09:44:02Z");
    }
    unlisted.add_event(e);
  }
  quiet(unlisted);
  Script closed;  // ISS-1 terminal before the migration
  agents_listed(closed, "2026-03-02T09:40:00Z");
  job_asked(closed, "2026-03-02T09:40:01Z", "ISS-1", 200);
  cycle_end(closed, "2026-03-02T09:40:03Z");
  TraceEvent stage;
  stage.t = at("2026-03-02T09:40:04Z");
  stage.type = "durable_stage";
  stage.job = "reconcile";
  stage.item = "ISS-1";
  stage.data = {{"stage", "DONE"}, {"error", ""}};
  closed.add_event(std::move(stage));
  closed.add("instance_changed", "2026-03-02T09:45:00Z", {}, std::nullopt,
             {{"from", "orchestrator-1"}, {"to", "orchestrator-2"}});
  agents_listed(closed, "2026-03-02T10:00:00Z");
  cycle_end(closed, "2026-03-02T10:00:02Z");
  const Outcome o = run(closed, base_scenario(), at("2026-03-02T10:05:00Z"));
  EXPECT_FALSE(fired(o, "item_queries_bounded", "first cycle after")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim
