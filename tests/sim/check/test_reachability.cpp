// Goal: the reachability points of `rehearse check --coverage`
// (sim/check/reachability.hpp) are one table that follows the tables of job
// kinds, policy forms, fault kinds and failure classes; each situation is
// read from the world's records (a hand-made trace reaches it, a near one
// does not: a zoned slot off its transition's day, a UTC job's); and every policy form the
// generators draw is one the core and the monitors both accept. Method: the table against the other
// tables; hand-made traces through the observer; 200 draws of each form through the core's parser
// and the monitors' reading; a bundled scenario's run.
#include "sim/check/reachability.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "model/failure.hpp"
#include "model/policy_forms.hpp"
#include "model/policy_text.hpp"
#include "model/retry_policy.hpp"
#include "sim/check/policy_draws.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/monitors/witness_policy.hpp"
#include "sim/monitors/witness_systems.hpp"
#include "sim/world/fault_kinds.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

bool has_point(const std::string& name) {
  const auto& points = reachability_points();
  return std::any_of(points.begin(), points.end(),
                     [&](const ReachabilityPoint& p) { return p.name == name; });
}

TEST(Reachability, TheTableFollowsTheKindsFormsFaultsAndClasses) {
  std::set<std::string> names;
  for (const ReachabilityPoint& p : reachability_points()) {
    EXPECT_TRUE(names.insert(p.name).second) << "twice: " << p.name;
    EXPECT_FALSE(p.meaning.empty()) << p.name;
  }
  for (const char* kind : {"group", "fetch", "reconcile", "publish", "call"}) {
    EXPECT_TRUE(has_point(std::string("job:") + kind)) << kind;
  }
  for (const char* form :
       {"per_job", "bullmq", "auto", "temporal", "stepfunctions", "sidekiq", "celery", "k8s"}) {
    EXPECT_TRUE(has_point(std::string("policy:") + form)) << form;
  }
  for (const FaultKindSpec& kind : fault_kinds()) {
    EXPECT_TRUE(has_point("fault:" + std::string(kind.name))) << kind.name;
  }
  for (std::size_t i = 0; i < kFailureClassCount; ++i) {
    EXPECT_TRUE(has_point(std::string("class:") + to_string(static_cast<FailureClass>(i))));
  }
  // Zoned schedules and the machine's clock (docs/semantics.md §3, §4).
  for (const char* point : {"schedule:zoned", "dst:gap", "dst:fold", "fault:clock_step"}) {
    EXPECT_TRUE(has_point(point)) << point;
  }
}

// A policy dialect is one row in each of three tables that must stay apart:
// the core's reader (model/policy_forms.cpp), the monitors' own reading
// (witness_systems, which never calls the core's) and the generator's draw.
// A row missing from one of them is a dialect that is read but not judged,
// or judged but never drawn.
TEST(Reachability, EveryPolicyDialectHasItsWitnessAndItsDraw) {
  const auto drawn = drawn_policy_forms();
  for (const PolicySystem& system : policy_systems()) {
    const std::string name(system.name);
    EXPECT_NE(find_witness_system(name), nullptr) << name;
    EXPECT_TRUE(std::any_of(drawn.begin(), drawn.end(), [&](const char* f) { return name == f; }))
        << name;
    EXPECT_TRUE(has_point("policy:" + name)) << name;
  }
  EXPECT_EQ(witness_systems().size(), policy_systems().size());
}

Scenario capped_world() {
  auto s = load_scenario_json(R"({
    "format": 1, "scenario": "capped", "start": "2026-12-07T00:00:00Z",
    "until": "2026-12-07T04:00:00Z",
    "services": {"billing-api": {}},
    "jobs": [{"id": "sync", "kind": "call", "schedule": "0 1 * * *",
              "retry_policy": {"attempts": 4, "backoff": {"type": "exponential",
                                                          "delay": "10m", "max_delay": "15m"}},
              "calls": [{"service": "billing-api"}]}]
  })",
                              "capped");
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return *s;
}

TraceEvent retry_added(const char* t, const char* ready_at, std::uint64_t id) {
  TraceEvent e;
  e.t = *parse_instant(t);
  e.type = "queue_add";
  e.job = "sync";
  e.slot = parse_instant("2026-12-07T01:00:00Z").value();
  e.data = {{"id", id}, {"kind", "retry"}, {"added", true}, {"ready_at", ready_at}};
  return e;
}

// Retry 1 waits 10m (below the 15m cap), retry 2 would wait 20m: capped at
// 15m it reaches the point; retry 1 alone does not.
TEST(Reachability, ARetryAtItsCapIsReachedAndOneBelowItIsNot) {
  const Scenario s = capped_world();
  ReachabilityObserver below(s);
  below.observe(retry_added("2026-12-07T01:00:00Z", "2026-12-07T01:10:00Z", 2));
  const auto reached_below = below.reached();
  EXPECT_EQ(std::count(reached_below.begin(), reached_below.end(), "retry:capped"), 0);
  EXPECT_EQ(std::count(reached_below.begin(), reached_below.end(), "policy:bullmq"), 1);
  ReachabilityObserver at_cap(s);
  at_cap.observe(retry_added("2026-12-07T01:00:00Z", "2026-12-07T01:10:00Z", 2));
  at_cap.observe(retry_added("2026-12-07T01:10:00Z", "2026-12-07T01:25:00Z", 3));
  const auto reached = at_cap.reached();
  EXPECT_EQ(std::count(reached.begin(), reached.end(), "retry:capped"), 1);
}

// A takeover: another process takes the worker lock; with a retry queued and
// not yet taken, it is a takeover with a retry pending.
TEST(Reachability, ATakeoverWithARetryPending) {
  const Scenario s = capped_world();
  const auto lock = [](const char* t, int process) {
    TraceEvent e;
    e.t = *parse_instant(t);
    e.type = "disk_lock";
    e.data = {{"path", "/srv/state/worker.lock"}, {"process", process}};
    return e;
  };
  ReachabilityObserver quiet(s);
  quiet.observe(lock("2026-12-07T00:00:00Z", 1));
  quiet.observe(lock("2026-12-07T02:00:00Z", 2));
  auto r = quiet.reached();
  EXPECT_EQ(std::count(r.begin(), r.end(), "worker:takeover"), 1);
  EXPECT_EQ(std::count(r.begin(), r.end(), "worker:takeover_retry_pending"), 0);
  ReachabilityObserver pending(s);
  pending.observe(lock("2026-12-07T00:00:00Z", 1));
  pending.observe(retry_added("2026-12-07T01:00:00Z", "2026-12-07T01:10:00Z", 7));
  pending.observe(lock("2026-12-07T01:05:00Z", 2));
  r = pending.reached();
  EXPECT_EQ(std::count(r.begin(), r.end(), "worker:takeover_retry_pending"), 1);
}

// The core's own log lines reach nothing: the observer reads world records.
TEST(Reachability, TheCoresLogLinesReachNothing) {
  const Scenario s = capped_world();  // the observer keeps a reference
  ReachabilityObserver o(s);
  TraceEvent e = retry_added("2026-12-07T01:00:00Z", "2026-12-07T01:10:00Z", 2);
  e.source = EventSource::core;
  o.observe(e);
  EXPECT_TRUE(o.reached().empty());
}

// A zoned job's regular slot on the local day of a transition of its zone
// inside the span reaches dst:gap (spring forward) or dst:fold (fall back);
// the same slot of a job in UTC, or a day without a transition, does not.
Scenario zoned_world(const char* zone, const char* start, const char* until) {
  json doc = {{"format", 1},
              {"scenario", "zoned"},
              {"start", start},
              {"until", until},
              {"services", {{"billing-api", json::object()}}},
              {"jobs",
               {{{"id", "zoned"},
                 {"kind", "call"},
                 {"schedule", "30 * * * *"},
                 {"tz", zone},
                 {"calls", {{{"service", "billing-api"}}}}},
                {{"id", "utc"},
                 {"kind", "call"},
                 {"schedule", "30 * * * *"},
                 {"calls", {{{"service", "billing-api"}}}}}}}};
  auto s = load_scenario_json(doc.dump(), "zoned");
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return *s;
}

TraceEvent regular_slot(const char* job, const char* slot) {
  TraceEvent e;
  e.t = *parse_instant(slot);
  e.type = "queue_add";
  e.job = job;
  e.slot = e.t;
  e.data = {{"id", 1}, {"kind", "regular"}, {"added", true}};
  return e;
}

TEST(Reachability, AZonedSlotOnTheDayOfAGapOrAFold) {
  const auto count = [](const ReachabilityObserver& o, const char* point) {
    const auto r = o.reached();
    return std::count(r.begin(), r.end(), point);
  };
  // Berlin springs forward on 2027-03-28 at 01:00Z (02:00 -> 03:00 local).
  const Scenario spring =
      zoned_world("Europe/Berlin", "2027-03-27T23:00:00Z", "2027-03-28T06:00:00Z");
  ReachabilityObserver gap(spring);
  gap.observe(regular_slot("utc", "2027-03-28T00:30:00Z"));
  EXPECT_EQ(count(gap, "dst:gap"), 0);
  gap.observe(regular_slot("zoned", "2027-03-28T01:30:00Z"));
  EXPECT_EQ(count(gap, "dst:gap"), 1);
  EXPECT_EQ(count(gap, "dst:fold"), 0);
  // New York falls back on 2026-11-01 at 06:00Z (02:00 -> 01:00 local); the
  // slot after the local midnight that ends that day is not on it.
  const Scenario autumn =
      zoned_world("America/New_York", "2026-11-01T04:00:00Z", "2026-11-02T07:00:00Z");
  ReachabilityObserver late(autumn);
  late.observe(regular_slot("zoned", "2026-11-02T05:30:00Z"));
  EXPECT_EQ(count(late, "dst:fold"), 0);
  ReachabilityObserver fold(autumn);
  fold.observe(regular_slot("zoned", "2026-11-01T06:30:00Z"));
  EXPECT_EQ(count(fold, "dst:fold"), 1);
  // A span without the transition: the same slot reaches nothing.
  // The observer keeps a reference: the scenario outlives it.
  const Scenario quiet =
      zoned_world("America/New_York", "2026-10-31T00:00:00Z", "2026-10-31T12:00:00Z");
  ReachabilityObserver before(quiet);
  before.observe(regular_slot("zoned", "2026-10-31T06:30:00Z"));
  EXPECT_TRUE(before.reached().empty());
}

// A run of a zoned job to its end is schedule:zoned; a UTC job's is not.
TEST(Reachability, ARunOfAZonedJob) {
  const Scenario s = zoned_world("Asia/Kolkata", "2027-01-04T00:00:00Z", "2027-01-04T06:00:00Z");
  const auto done = [](const char* job) {
    TraceEvent e;
    e.t = *parse_instant("2027-01-04T01:00:05Z");
    e.type = "queue_done";
    e.job = job;
    e.data = {{"id", 1}, {"kind", "regular"}};
    return e;
  };
  ReachabilityObserver utc(s);
  utc.observe(done("utc"));
  auto r = utc.reached();
  EXPECT_EQ(std::count(r.begin(), r.end(), "schedule:zoned"), 0);
  EXPECT_EQ(std::count(r.begin(), r.end(), "job:call"), 1);
  ReachabilityObserver zoned(s);
  zoned.observe(done("zoned"));
  r = zoned.reached();
  EXPECT_EQ(std::count(r.begin(), r.end(), "schedule:zoned"), 1);
}

TEST(Reachability, EveryDrawnPolicyFormIsAcceptedByTheCoreAndTheMonitors) {
  for (const char* form : drawn_policy_forms()) {
    Rng rng = Rng(17).derive(form);
    for (int i = 0; i < 200; ++i) {
      const json drawn = draw_policy_in_form(form, rng);
      // Text forms are read once, as the scenario loader reads them.
      auto texts = read_policy_texts(drawn);
      ASSERT_TRUE(texts.ok()) << form << ": " << drawn.dump() << ": " << texts.error().describe();
      const json policy = *texts;
      auto core = parse_retry_policy(policy);
      EXPECT_TRUE(core.ok()) << form << ": " << policy.dump() << ": "
                             << (core.ok() ? "" : core.error().describe());
      bool judged = false;
      const WitnessPolicy witness = read_policy(policy, false, &judged);
      EXPECT_TRUE(witness.valid && judged)
          << form << ": " << policy.dump() << ": " << witness.why_invalid;
      if (core.ok() && witness.valid) {
        EXPECT_EQ(core->max_retries, witness.retries_max) << form;
      }
    }
  }
}

TEST(Reachability, TheBundledPolicyFormsScenarioReachesEverySystemsForm) {
  auto s =
      load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/policy-forms-outage.json");
  ASSERT_TRUE(s.ok()) << s.error().describe();
  ReachabilityObserver o(*s);
  RunOptions options;
  options.trace_sink = [&o](const TraceEvent& e, std::size_t) { o.observe(e); };
  auto run = run_scenario(*s, options);
  ASSERT_TRUE(run.ok());
  const auto r = o.reached();
  for (const char* point :
       {"policy:temporal", "policy:stepfunctions", "policy:sidekiq", "policy:celery", "policy:k8s",
        "policy:bullmq", "retry:capped", "retry:jittered", "retry:exhausted", "retry:recovered",
        "job:call", "class:provider_5xx", "fault:http_errors"}) {
    EXPECT_EQ(std::count(r.begin(), r.end(), point), 1) << point;
  }
}

}  // namespace
}  // namespace rehearse::sim
