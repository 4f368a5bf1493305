// Shared fixtures of the monitor unit tests (tests/sim/monitors/test_*.cpp):
// the base scenario, the Script that builds a hand-made trace, running every
// monitor over it (and over its fleet twin), and the trace steps more than
// one monitor's tests use. Inline: every test file of the binary includes it.
#pragma once

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
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/monitor_set.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"
#include "sim/world/world_facts.hpp"
#include "tests/sim/world/fleet_twin.hpp"

namespace rehearse::sim::monitor_test {

using nlohmann::json;

inline TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

inline const TimeMs kStart = at("2026-03-02T09:31:00Z");

inline const TimeMs kUntil = at("2026-03-02T18:00:00Z");

inline const std::string kAgentId = "agent-lead-7f3a9c21d4e5";

// hourly: per-job form, per_episode, max 2, 300 s fixed, default classes.
// slotty: BullMQ form, per_slot, 2 retries, fixed 10 min, every class.
// broken: no policy at all (never retried).
// weekly: "auto" on an env-overridden low-frequency schedule (3 retries).
inline Scenario base_scenario() {
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
inline Scenario only(std::vector<std::string> ids) {
  Scenario s = base_scenario();
  std::vector<JobSpec> kept;
  for (const JobSpec& j : s.jobs) {
    if (std::find(ids.begin(), ids.end(), j.id) != ids.end()) kept.push_back(j);
  }
  s.jobs = kept;
  return s;
}

// The base scenario's weekly job alone, with `policy` as its retry policy.
inline Scenario weekly_with(json policy) {
  Scenario s = only({"weekly"});
  s.jobs[0].retry_policy = std::move(policy);
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

inline Outcome observe_all(const Script& script, const Scenario& scenario, TimeMs until,
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
inline std::string conclusions(const Outcome& o) {
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

inline bool fired(const Outcome& o, const std::string& invariant, const std::string& text);

// Every script is judged twice: as written, and with its jobs as a fleet's
// (tests/sim/world/fleet_twin.hpp: finished slots kept compactly, no slot history);
// the conclusions must be the same.
inline Outcome run(const Script& script, const Scenario& scenario, TimeMs until = kUntil,
                   std::vector<std::string> secrets = {}) {
  Outcome o = observe_all(script, scenario, until, secrets);
  const Outcome twin = observe_all(script, twin::fleet_twin(scenario), until, secrets);
  EXPECT_EQ(conclusions(o), conclusions(twin)) << "the fleet twin was judged differently";
  return o;
}

inline std::string describe(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) {
    out += v.invariant + " @" + std::to_string(v.event_index) + ": " + v.message + "\n";
  }
  return out.empty() ? "(none)" : out;
}

inline void expect_first(const Outcome& o, const std::string& invariant, std::size_t index) {
  ASSERT_FALSE(o.seen.empty()) << "expected " << invariant << " at " << index;
  EXPECT_EQ(o.seen.front().invariant, invariant) << describe(o.seen);
  EXPECT_EQ(o.seen.front().event_index, index) << describe(o.seen);
  EXPECT_FALSE(o.seen.front().message.empty());
}

inline void expect_clean(const Outcome& o) {
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(o.end.empty()) << describe(o.end);
}

// A regular run of `job` for `slot` handed out and run at `t`, its outcome.
// A slot handed out as the world records it (the monitors read no slot_due /
// slot_misfire): the queue's add of the regular entry, due at its slot, then
// the job's durable row after the hand-out (`next_run_at`, and
// `coalesced_slots` grown by `coalesced_count` when firings were folded into
// a late run). Returns the queue_add's index (the durable row is the next).
inline std::size_t handout(Script& s, const char* t, const std::string& job, const char* slot,
                           json f) {
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
inline std::size_t run_start(Script& s, const char* t, const std::string& job, const char* slot,
                             json f) {
  const std::uint64_t id = s.start_run(job);
  return s.add("queue_take", t, job, slot,
               {{"id", id},
                {"kind", f.value("kind", "regular")},
                {"attempt", f.value("attempt", 1)},
                {"ready_at", t}});
}

// A reply the world records for a failed request of `job`'s run, of `cls`
// by the monitors' own table (a fetch or call run's class is its replies').
inline void failed_reply(Script& s, const char* t, const std::string& job, const char* slot,
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

inline std::size_t run_end(Script& s, const char* t, const std::string& job, const char* slot,
                           json f) {
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

inline void regular(Script& s, const std::string& job, const char* slot, const char* t,
                    const char* next, const std::string& outcome, const std::string& cls = {}) {
  handout(s, t, job, slot, {{"next_run_at", next}});
  run_start(s, t, job, slot, {{"kind", "regular"}, {"attempt", 1}});
  json f = {{"kind", "regular"}, {"attempt", 1}, {"outcome", outcome}};
  if (!cls.empty()) f["failure_class"] = cls;
  run_end(s, t, job, slot, f);
}

inline std::size_t retry_run(Script& s, const std::string& job, const char* slot, const char* t,
                             int attempt, const std::string& outcome, const std::string& cls = {}) {
  const std::size_t started = run_start(s, t, job, slot, {{"kind", "retry"}, {"attempt", attempt}});
  json f = {{"kind", "retry"}, {"attempt", attempt}, {"outcome", outcome}};
  if (!cls.empty()) f["failure_class"] = cls;
  run_end(s, t, job, slot, f);
  return started;
}

// A notification as the world sees it: the message the queue's outbox
// received (the monitors read notifications there, not in the core's log).
inline std::size_t note(Script& s, const std::string& event, const std::string& job,
                        const char* slot, const char* t, int attempt, const std::string& cls) {
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

inline std::size_t note_state_corrupt(Script& s, const char* t) {
  return note(s, "state_corrupt", {}, nullptr, t, 0, {});
}

// ------------------------------------------------------------ 1 stage_monotonic

inline void assign_answered(Script& s, const char* t, const std::string& item, int status = 200) {
  s.item("service_call", t, item, {{"operation", "assign"}, {"target", item}});
  s.item("service_reply", t, item, {{"operation", "assign"}, {"target", item}, {"status", status}});
}

// The orchestrator's answer to a get_issue: the issue's status (`body_class`).
inline std::size_t status_answered(Script& s, const char* t, const std::string& item,
                                   const char* status) {
  s.item("service_call", t, item, {{"operation", "get_issue"}, {"target", item}});
  return s.item(
      "service_reply", t, item,
      {{"operation", "get_issue"}, {"target", item}, {"status", 200}, {"body_class", status}});
}

// A due visit that moves the item: the status, the handoff, the stage.
inline std::size_t moved(Script& s, const char* t, const std::string& item, const char* status,
                         const char* stage) {
  status_answered(s, t, item, status);
  assign_answered(s, t, item);
  return s.item("durable_stage", t, item, {{"stage", stage}});
}

inline void agents_listed(Script& s, const char* t) {
  TraceEvent e;
  e.t = at(t);
  e.type = "service_reply";
  e.service = "orchestrator";
  e.job = "reconcile";
  e.data = {{"operation", "list_agents"}, {"status", 200}};
  s.add_event(std::move(e));
}

// A reconcile run of the base scenario at 10:00 whose cycle's agent list got
// `list_statuses` (the last decides), its row `retry_status` / provider_5xx.
// A service's reply under `job`'s run of `slot`.
inline TraceEvent run_reply(const char* slot, const char* service, const char* job, json data) {
  TraceEvent reply;
  reply.t = at(slot);
  reply.type = "service_reply";
  reply.service = service;
  reply.job = job;
  reply.slot = at(slot);
  reply.data = std::move(data);
  return reply;
}

inline Script reconcile_run(const std::vector<int>& list_statuses, const std::string& row) {
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
inline Scenario reconcile_retried() {
  Scenario sc = only({"reconcile"});
  sc.jobs.front().schedule = "0 * * * *";
  sc.jobs.front().retry_policy = json{{"max", 2}, {"backoff_sec", 300}};
  return sc;
}

// ------------------------------------------------------------ 5 no_duplicate_delivery

// The delivery ledger of one slot as the world reads it (`durable_delivery`).
inline json ledger(std::vector<std::string> delivered_to, bool guard = false,
                   std::optional<std::string> verdict = std::nullopt) {
  return {{"delivered_to", delivered_to},
          {"guard", guard},
          {"verdict", verdict ? json(*verdict) : json(nullptr)},
          {"outbox", false}};
}

inline TraceEvent delivered(const char* t, const char* slot, const std::string& target,
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

// The hourly job as a group job (deliveries to "team-chat").
inline Scenario group_hourly() {
  Scenario s = only({"hourly"});
  s.jobs.front().kind = JobKind::group;
  s.jobs.front().targets = {"team-chat"};
  return s;
}

inline void boot(Script& s, const char* t, int n) {
  s.add("process_boot", t, {}, std::nullopt, {{"process", "worker"}, {"boots", n}});
}

// ------------------------------------------------- damage the store cannot see past
// docs/monitors.md, "Damage the store cannot see past": a boot while the
// world's damage to the state store's files is still there is blind. Each
// excuse is tested with the violation it must still catch next to it.

inline std::size_t damage_store(Script& s, const char* t, const char* file = "retry_state.json",
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

inline void crash(Script& s, const char* t) {
  s.add("process_crash", t, {}, std::nullopt, {{"process", "worker"}, {"cause", "restart"}});
}

inline bool fired(const Outcome& o, const std::string& invariant, const std::string& text) {
  for (const auto* list : {&o.seen, &o.end}) {
    for (const Violation& v : *list) {
      if (v.invariant == invariant && v.message.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

// --- several worker processes on one state directory (docs/worker.md) ---

// Worker 1 (pid 1) acts and leases the 10:00 run; worker 2 (pid 2) stands by.
// Worker 1 dies; with `takeover` worker 2 is granted the worker lock; with
// `recover` it puts the dead worker's lease back before taking work; then it
// takes the 11:00 run.
inline Script two_workers(bool takeover, bool recover) {
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

}  // namespace rehearse::sim::monitor_test
