// The sweep engine of `rehearse tune` (sim/report/tune.hpp). Expected values are
// derived by hand from the setup (docs/tune.md): the weekly job of
// scenarios/weekly-quota-6h.json makes one model-api call per run (its
// second task produces a skip and calls nothing), so every retry is one
// extra call; an outage of length L is in progress when the slot fires, so
// what remains of it after the first failure is below L.
#include "sim/report/tune.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

Scenario weekly() {
  auto s = load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/weekly-quota-6h.json");
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return *s;
}

TuneOptions options(const char* grid, const char* outages, int runs, int threads = 1) {
  TuneOptions o;
  o.job_id = "weekly-summary";
  auto g = parse_tune_grid(grid);
  EXPECT_TRUE(g.ok()) << g.error().describe();
  o.grid = *g;
  auto d = parse_outages(outages);
  EXPECT_TRUE(d.ok()) << d.error().describe();
  o.outages = *d;
  o.runs = runs;
  o.threads = threads;
  return o;
}

TEST(Tune, WilsonIntervalByHand) {
  double lo = 0, hi = 0;
  wilson_interval(5, 10, lo, hi);  // centre 0.5, half 1.96 * sqrt(0.034604) / 1.38416
  EXPECT_NEAR(lo, 0.23659, 1e-5);
  EXPECT_NEAR(hi, 0.76341, 1e-5);
  wilson_interval(0, 10, lo, hi);  // centre = half = 0.19208 / 1.38416
  EXPECT_EQ(lo, 0.0);
  EXPECT_NEAR(hi, 0.27754, 1e-5);
  wilson_interval(10, 10, lo, hi);
  EXPECT_NEAR(lo, 0.72246, 1e-5);
  EXPECT_EQ(hi, 1.0);
}

TEST(Tune, GridAndOutageSpecs) {
  const TuneGrid d;
  EXPECT_EQ(d.attempts.size() * d.delays.size() * d.kinds.size(), 90u);
  auto g = parse_tune_grid("attempts=2-4,6;delay=30m,1h;backoff=fixed;cap=none,2h;jitter=0,0.5");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->attempts, (std::vector<int>{2, 3, 4, 6}));
  EXPECT_EQ(g->caps, (std::vector<DurationMs>{0, 2 * kHourMs}));
  for (const char* bad : {"attempts=0", "attempts=4-2", "delay=soon", "backoff=quadratic", "foo=1",
                          "jitter=2", "attempts", "delay=0s"}) {
    EXPECT_FALSE(parse_tune_grid(bad).ok()) << bad;
  }
  auto list = parse_outages("30m, 2h,6h");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->values, (std::vector<DurationMs>{30 * kMinuteMs, 2 * kHourMs, 6 * kHourMs}));
  auto u = parse_outages("lognormal:30m-12h");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->shape, OutageShape::lognormal);
  for (const char* bad : {"normal:1h-2h", "uniform:2h-1h", "uniform:2h", "30m,,1h", "0s"}) {
    EXPECT_FALSE(parse_outages(bad).ok()) << bad;
  }
  auto e = empirical_outages("# outages of 2025\n2h\n\n30m  # short\n", "o.txt");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->values, (std::vector<DurationMs>{2 * kHourMs, 30 * kMinuteMs}));
  auto eb = empirical_outages("2h\nsoon\n", "o.txt");
  ASSERT_FALSE(eb.ok());
  EXPECT_EQ(eb.error().where, "o.txt:2");
}

// Outages of exactly 1 h: less than 1 h remains after the first failure.
// attempts 1 never retries; a fixed 1 h delay always recovers at the first
// retry (one extra call); 30 m recovers only when under 30 m remain.
TEST(Tune, HandDerivedOutcomes) {
  auto r = run_tune(weekly(), options("attempts=1,2;delay=30m,1h;backoff=fixed", "1h", 12));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->rows.size(), 4u + 1u);  // the job's own "auto" (4 x 30m exponential) is not in it
  const auto& never = r->rows[0];      // 1 x 30m fixed
  EXPECT_EQ(never.policy.label, "1 x 30m fixed");
  EXPECT_EQ(never.recovered, 0);
  EXPECT_EQ(never.extra_calls, 0.0);
  EXPECT_FALSE(never.ttr_p50_ms.has_value());
  const auto& hour = r->rows[3];  // 2 x 1h fixed
  EXPECT_EQ(hour.policy.label, "2 x 1h fixed");
  EXPECT_EQ(hour.recovered, 12);
  EXPECT_EQ(hour.extra_calls, 1.0);
  ASSERT_TRUE(hour.ttr_p50_ms.has_value());
  EXPECT_GE(*hour.ttr_p50_ms, kHourMs);
  EXPECT_LT(*hour.ttr_p95_ms, kHourMs + kMinuteMs);
  EXPECT_EQ(hour.next_slot_overrun, 0.0);
  const auto& half = r->rows[2];  // 2 x 30m fixed
  EXPECT_GT(half.recovered, 0);
  EXPECT_LT(half.recovered, 12);
  // The job's own policy: retries at +30m, +1h30m, +3h30m: always recovers.
  const auto& own = r->rows[4];
  EXPECT_TRUE(own.policy.current);
  EXPECT_FALSE(own.policy.in_grid);
  EXPECT_EQ(own.recovered, 12);
  // Front (recovery; extra calls; p95 time to recovery): 1 x (never
  // recovers, no calls), 2 x 30m (recovers less, but within 30m), 2 x 1h
  // (always, one call, within 1h). The own policy recovers as often as
  // 2 x 1h, but calls again when 30m was too early and then recovers at
  // +1h30m: dominated by 2 x 1h.
  EXPECT_TRUE(never.pareto);
  EXPECT_TRUE(hour.pareto);
  EXPECT_TRUE(half.pareto);
  EXPECT_LT(*half.ttr_p95_ms, *hour.ttr_p50_ms);
  EXPECT_GT(own.extra_calls, 1.0);
  EXPECT_FALSE(own.pareto);
  ASSERT_EQ(r->dominating.size(), 1u);
  EXPECT_EQ(r->dominating[0], 3u);
}

// A retry 8 days after a weekly slot runs into the next slot, every time.
TEST(Tune, NextSlotOverrun) {
  auto r = run_tune(weekly(), options("attempts=2;delay=8d;backoff=fixed", "1h", 4));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->rows[0].next_slot_overrun, 1.0);
  EXPECT_EQ(r->rows[0].recovered, 4);
}

TEST(Tune, TheJobsOwnPolicyIsMarkedInTheGrid) {
  auto r = run_tune(weekly(), options("attempts=3-4;delay=30m;backoff=exponential", "2h", 2));
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->current, 1u);
  EXPECT_TRUE(r->rows[1].policy.current);
  EXPECT_TRUE(r->rows[1].policy.in_grid);
}

TEST(Tune, SameResultForAnyThreadCount) {
  const char* grid = "attempts=2-4;delay=15m,1h;backoff=exponential,linear;jitter=0,0.5";
  auto one = run_tune(weekly(), options(grid, "lognormal:30m-12h", 6, 1));
  auto three = run_tune(weekly(), options(grid, "lognormal:30m-12h", 6, 3));
  ASSERT_TRUE(one.ok() && three.ok());
  ASSERT_EQ(one->rows.size(), three->rows.size());
  for (std::size_t i = 0; i < one->rows.size(); ++i) {
    EXPECT_EQ(one->rows[i].recovered, three->rows[i].recovered) << i;
    EXPECT_EQ(one->rows[i].extra_calls, three->rows[i].extra_calls) << i;
    EXPECT_EQ(one->rows[i].ttr_p95_ms, three->rows[i].ttr_p95_ms) << i;
    EXPECT_EQ(one->rows[i].pareto, three->rows[i].pareto) << i;
  }
}

// BullMQ without a backoff retries at once (docs/policies.md): both retries
// land inside any outage of a minute or more, each one extra call.
TEST(Tune, RetriesAtOnceNeverOutlastAnOutage) {
  Scenario sc = weekly();
  sc.jobs[0].retry_policy = nlohmann::json::parse(R"({"attempts": 3})");
  auto r = run_tune(sc, options("attempts=2;delay=1h;backoff=fixed", "10m", 5));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->rows.size(), 2u);
  const auto& own = r->rows[1];
  EXPECT_TRUE(own.policy.current);
  EXPECT_EQ(own.policy.label, "3 x 0ms fixed (own)");
  EXPECT_EQ(own.recovered, 0);
  EXPECT_EQ(own.extra_calls, 2.0);
  EXPECT_EQ(r->rows[0].recovered, 5);  // 1h after the failure, a 10m outage is over
}

Scenario my_api_outage() {
  auto s = load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/my-api-outage.json");
  EXPECT_TRUE(s.ok()) << s.error().describe();
  return *s;
}

// A call job's outage is of a service it calls: without retries (attempts 1)
// no slot recovers; each retry of a 2-retry, 1h policy is one more call to the
// broken service, and a 30m outage is over 1h after the failure. Breaking a
// service the job never calls (the model API, which my-api-outage does not
// even declare) would recover every slot at once.
TEST(Tune, ACallJobsOutageBreaksAServiceItCalls) {
  auto o = options("attempts=1,2;delay=1h;backoff=fixed", "30m", 6);
  o.job_id = "invoice-sync";
  for (const char* service : {"", "billing-api", "ledger-api"}) {
    o.service = service;
    auto r = run_tune(my_api_outage(), o);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->provider, *service != '\0' ? service : "billing-api");
    EXPECT_EQ(r->fault, "http_errors");
    EXPECT_EQ(r->services, (std::vector<std::string>{"billing-api", "ledger-api"}));
    EXPECT_EQ(r->rows[0].recovered, 0) << service;  // 1 x 1h: never retried
    EXPECT_EQ(r->rows[0].extra_calls, 0.0) << service;
    EXPECT_EQ(r->rows[1].recovered, 6) << service;  // 2 x 1h: the retry recovers
    EXPECT_EQ(r->rows[1].extra_calls, 1.0) << service;
  }
}

TEST(Tune, AServiceTheJobDoesNotCallIsRefused) {
  auto o = options("attempts=2", "1h", 1);
  o.job_id = "invoice-sync";
  o.service = "model-api";
  auto r = run_tune(my_api_outage(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().where, "--service");
  EXPECT_NE(r.error().message.find("it calls: billing-api, ledger-api"), std::string::npos)
      << r.error().message;
}

// A group job whose tasks all produce a skip calls nothing an outage breaks.
TEST(Tune, AJobThatCallsNothingBreakableIsRefused) {
  Scenario sc = weekly();
  for (GroupTask& t : sc.jobs[0].tasks) t.model_calls = 0;
  auto r = run_tune(sc, options("attempts=2", "1h", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("calls no service an outage can break"), std::string::npos)
      << r.error().message;
}

// The closed form (docs/tune.md, "Checked against a closed form"): with a
// fixed delay d and A attempts the last retry comes W = (A - 1) d after the
// first failure, and the slot recovers when what remains of the outage then
// is below W. What remains is uniform on (0, L) for an outage of length L (the
// phase), so P(recover | L) = min(1, W / L); for L uniform on [lo, hi]:
//   W >= hi:       1
//   W <= lo:       W ln(hi / lo) / (hi - lo)
//   otherwise:     ((W - lo) + W ln(hi / W)) / (hi - lo)
// The runs' own call latency (a fraction of a second per attempt) is far
// below the grid's resolution.
double closed_form_recovery(double window, double lo, double hi) {
  if (window >= hi) return 1.0;
  if (window <= lo) return window * std::log(hi / lo) / (hi - lo);
  return ((window - lo) + window * std::log(hi / window)) / (hi - lo);
}

TEST(Tune, FixedBackoffAgainstUniformOutagesMatchesTheClosedForm) {
  const char* grid = "attempts=2,3,4;delay=20m,1h,2h;backoff=fixed";
  auto r = run_tune(weekly(), options(grid, "uniform:30m-6h", 300, 2));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  int compared = 0;
  for (const TuneRow& row : r->rows) {
    if (!row.policy.in_grid) continue;
    const double window =
        static_cast<double>((row.policy.attempts - 1) * row.policy.backoff.delay_ms);
    const double expected =
        closed_form_recovery(window, static_cast<double>(30 * kMinuteMs), 6.0 * kHourMs);
    EXPECT_GE(expected, row.recovery_low) << row.policy.label << ": " << row.recovery;
    EXPECT_LE(expected, row.recovery_high) << row.policy.label << ": " << row.recovery;
    ++compared;
  }
  EXPECT_EQ(compared, 9);
}

TEST(Tune, BadJobsAreErrors) {
  auto o = options("attempts=2", "1h", 1);
  o.job_id = "nope";
  auto r = run_tune(weekly(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("jobs: weekly-summary"), std::string::npos);
}

}  // namespace
}  // namespace rehearse::sim
