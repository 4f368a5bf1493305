// Goal: every monitor together: random legal traces from a tiny generator never
// fire and its planted faults do; the trace of a real run (the scheduler with a
// group job over the simulated model-api and messenger, a quota outage and a
// restart) passes every monitor, so their event vocabulary is the core's; a
// core given a bigger retry budget than the scenario's fails with
// retries_bounded.
// Method: a RapidCheck property over a tiny trace generator, and real runs.
#include "tests/sim/monitors/group_world.hpp"
#include "tests/sim/monitors/monitor_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim::monitor_test {
namespace {

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
  // The state store as the world reads it (sim/world/world_facts.hpp), as the
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

}  // namespace
}  // namespace rehearse::sim::monitor_test
