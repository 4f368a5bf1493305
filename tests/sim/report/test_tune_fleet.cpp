// Goal: the fleet sweep (sim/report/tune_fleet.hpp, docs/tune.md "Fleets")
// reads its grid as documented and measures a fleet's runs as the world
// recorded them: recovery of the hit slots, calls, amplification, the peak
// after the outage, drain and metastability, the same for any thread count.
// Method: the grid's specs and errors by table; a two-job fleet whose whole
// run is derived by hand (below); a sweep run on 1 and 2 threads.
#include "sim/report/tune_fleet.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

TEST(TuneFleet, GridSpecs) {
  const FleetGrid d;
  EXPECT_EQ(d.attempts.size() * d.delays.size() * d.kinds.size() * d.jitters.size(), 16u);
  auto g = parse_fleet_grid("attempts=3;delay=1m,2m;jitter=full,decorrelated;budget=none,20%");
  ASSERT_TRUE(g.ok()) << g.error().describe();
  EXPECT_EQ(g->attempts, (std::vector<int>{3}));
  EXPECT_EQ(g->delays, (std::vector<DurationMs>{kMinuteMs, 2 * kMinuteMs}));
  EXPECT_EQ(g->kinds, (std::vector<BackoffKind>{BackoffKind::exponential}));
  EXPECT_EQ(g->jitters, (std::vector<JitterShape>{JitterShape::full, JitterShape::decorrelated}));
  EXPECT_EQ(g->budgets, (std::vector<int>{0, 20}));
  const std::pair<const char*, const char*> bad[] = {
      {"jitter=half", "--grid jitter"},
      {"budget=0", "--grid budget"},
      {"budget=101", "--grid budget"},
      {"backoff=fixed;jitter=none,decorrelated", "--grid jitter"},
      {"attempts=0", "--grid attempts"},
      {"retries=3", "--grid"},
      {"jitter=full;jitter=none", "--grid"},
      {"jitter", "--grid"}};
  for (const auto& [spec, where] : bad) {
    auto e = parse_fleet_grid(spec);
    ASSERT_FALSE(e.ok()) << spec;
    EXPECT_EQ(e.error().where, where) << spec << ": " << e.error().describe();
  }
  EXPECT_TRUE(parse_fleet_grid("backoff=fixed;jitter=none,full").ok());
}

// Two jobs at :10 call a provider with room for both. The outage (00:10 for
// 5 minutes) fails both regular runs; 3 attempts, fixed 4 minutes: the
// retries at 00:14 fail, those at 00:18 succeed, and the 01:10 slot runs
// clean (the span reaches 00:15 + 1 h 2 min = 01:17).
constexpr const char* kTwoJobs = R"({
  "format": 1, "scenario": "two-jobs", "start": "2026-12-07T00:00:00Z",
  "until": "2026-12-07T00:30:00Z", "seed": 3,
  "services": {
    "provider": {"latency": "100ms", "capacity": {"rate": 60, "per": "1m", "burst": 10}},
    "messenger": {"targets": ["ops"]}
  },
  "jobs": [
    {"id": "a", "kind": "call", "schedule": "10 * * * *", "retry_policy": {"attempts": 1},
     "calls": [{"service": "provider", "method": "POST", "path": "/a"}]},
    {"id": "b", "kind": "call", "schedule": "10 * * * *", "retry_policy": {"attempts": 1},
     "calls": [{"service": "provider", "method": "POST", "path": "/b"}]}
  ],
  "faults": []
})";

FleetTuneOptions two_job_options(int threads) {
  FleetTuneOptions o;
  auto g = parse_fleet_grid("attempts=3;delay=4m;backoff=fixed;jitter=none");
  EXPECT_TRUE(g.ok()) << g.error().describe();
  o.grid = *g;
  auto d = parse_outages("5m");
  EXPECT_TRUE(d.ok()) << d.error().describe();
  o.outages = *d;
  o.runs = 2;
  o.threads = threads;
  return o;
}

TEST(TuneFleet, ATwoJobFleetByHand) {
  auto s = load_scenario_json(kTwoJobs, "two-jobs.json");
  ASSERT_TRUE(s.ok()) << s.error().describe();
  auto r = run_fleet_tune(*s, two_job_options(1));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->service, "provider");
  EXPECT_EQ(r->jobs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(format_instant(r->outage_at_ms), "2026-12-07T00:10:00Z");
  ASSERT_EQ(r->rows.size(), 1u);
  const FleetRow& row = r->rows.front();
  EXPECT_EQ(row.hit_slots, 4) << "two slots a run, two runs";
  EXPECT_EQ(row.recovered_slots, 4);
  EXPECT_DOUBLE_EQ(row.calls, 8.0) << "2 regular, 2 x 2 retries, 2 at 01:10";
  ASSERT_TRUE(row.amplification.has_value());
  EXPECT_DOUBLE_EQ(*row.amplification, 2.0) << "8 calls, 4 useful";
  EXPECT_DOUBLE_EQ(row.peak_after, 2.0);
  EXPECT_EQ(row.drain_p95_ms, DurationMs{0}) << "nothing failed after the outage";
  EXPECT_EQ(row.drained_runs, 2);
  EXPECT_DOUBLE_EQ(row.metastable, 0.0);
  EXPECT_TRUE(row.pareto);
  ASSERT_GE(row.calls_per_minute.size(), 77u);
  EXPECT_DOUBLE_EQ(row.calls_per_minute[10], 2.0);
  EXPECT_DOUBLE_EQ(row.calls_per_minute[14], 2.0);
  EXPECT_DOUBLE_EQ(row.calls_per_minute[18], 2.0);
  EXPECT_DOUBLE_EQ(row.calls_per_minute[70], 2.0);
}

TEST(TuneFleet, ThreadsGiveTheSameRows) {
  auto s = load_scenario_json(kTwoJobs, "two-jobs.json");
  ASSERT_TRUE(s.ok()) << s.error().describe();
  FleetTuneOptions o = two_job_options(1);
  auto g = parse_fleet_grid("attempts=3,4;delay=1m;jitter=none,full,decorrelated");
  ASSERT_TRUE(g.ok());
  o.grid = *g;
  auto one = run_fleet_tune(*s, o);
  o.threads = 2;
  auto two = run_fleet_tune(*s, o);
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->rows.size(), 6u);
  for (std::size_t i = 0; i < one->rows.size(); ++i) {
    EXPECT_EQ(one->rows[i].calls, two->rows[i].calls) << i;
    EXPECT_EQ(one->rows[i].calls_per_minute, two->rows[i].calls_per_minute) << i;
    EXPECT_EQ(one->rows[i].recovered_slots, two->rows[i].recovered_slots) << i;
  }
}

TEST(TuneFleet, AScenarioWithoutACapacityIsRefused) {
  auto s = load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/weekly-quota-6h.json");
  ASSERT_TRUE(s.ok()) << s.error().describe();
  auto r = run_fleet_tune(*s, two_job_options(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "--fleet");
}

}  // namespace
}  // namespace rehearse::sim
