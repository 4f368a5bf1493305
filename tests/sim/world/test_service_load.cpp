// Goal: the fleet load per service (sim/world/service_load.hpp, docs/run.md
// "Fleet load") counts what the world did and nothing else: requests and
// their answers per minute, useful (2xx) against refused (any other status)
// and transport errors, the work amplification, the declared capacity per
// minute, the end of the last fault (the trigger), the peak after it, how
// long failures went on (drain), and whether the load was still above
// capacity an hour after the trigger (metastable), judged only when the run
// lasts that long. Events the core logged are never counted.
// Method: hand-made event lists against a hand-made scenario, every number
// derived in the comments; then one real run whose --json document
// (report_json) carries the load.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"
#include "sim/report/timeline.hpp"
#include "sim/world/service_load.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

constexpr TimeMs kStart = 1'796'083'200'000;  // 2026-12-01T00:00:00Z
constexpr TimeMs kMin = kMinuteMs;

// A scenario with one service of the user's own, "provider", limited to
// `rate` requests a minute (none when 0), and "idle", never called.
Scenario scenario_with(std::int64_t rate) {
  Scenario s;
  s.start_ms = kStart;
  s.until_ms = kStart + 2 * kHourMs;
  UserService provider;
  if (rate > 0) {
    ServiceCapacity capacity;
    capacity.rate = rate;
    capacity.per_ms = kMin;
    provider.capacity = capacity;
  }
  s.services.user["provider"] = provider;
  s.services.user["idle"] = UserService{};
  return s;
}

TraceEvent event(TimeMs t, const std::string& type, const std::string& service,
                 json data = json::object()) {
  TraceEvent e;
  e.t = t;
  e.type = type;
  e.service = service;
  e.data = std::move(data);
  return e;
}

TraceEvent call(TimeMs t, const std::string& service = "provider") {
  return event(t, "service_call", service, {{"operation", "GET"}});
}
TraceEvent reply(TimeMs t, int status, const std::string& service = "provider") {
  return event(t, "service_reply", service, {{"operation", "GET"}, {"status", status}});
}
TraceEvent timed_out(TimeMs t) {
  return event(t, "service_reply", "provider",
               {{"operation", "GET"}, {"transport_error", "timeout"}, {"message", "timed out"}});
}
// A lasting fault on the provider: its start (with `until`) and end events.
std::vector<TraceEvent> fault(std::int64_t index, TimeMs from, TimeMs until, bool ended = true) {
  std::vector<TraceEvent> out{
      event(from, "fault_start", "provider",
            {{"fault", index}, {"kind", "http_errors"}, {"until", format_instant(until)}})};
  if (ended) {
    out.push_back(
        event(until, "fault_end", "provider", {{"fault", index}, {"kind", "http_errors"}}));
  }
  return out;
}

// `n` requests at `t`, each answered `status` 100 ms later.
void requests(std::vector<TraceEvent>& events, TimeMs t, int n, int status) {
  for (int i = 0; i < n; ++i) {
    events.push_back(call(t));
    events.push_back(reply(t + 100, status));
  }
}

// A copy: the list is often a temporary.
ServiceLoad find(const std::vector<ServiceLoad>& loads, const std::string& name) {
  for (const ServiceLoad& l : loads) {
    if (l.service == name) return l;
  }
  ADD_FAILURE() << "no load for " << name;
  return {};
}

TEST(ServiceLoad, MinuteBucketsCountCallsUsefulAndFailedReplies) {
  // Minute 0: two calls, a 200 and a 429; minute 1: one call, a 503; minute
  // 2: nothing. 3 calls for 1 useful: amplification 3; goodput 1 over 3 minutes.
  const std::vector<TraceEvent> events{call(kStart),          reply(kStart + 100, 200),
                                       call(kStart + 30'000), reply(kStart + 30'100, 429),
                                       call(kStart + 61'000), reply(kStart + 61'100, 503)};
  const auto loads = service_load(scenario_with(0), events, kStart, kStart + 3 * kMin);
  const ServiceLoad p = find(loads, "provider");
  EXPECT_EQ(p.calls_per_minute, (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(p.useful_per_minute, (std::vector<std::int64_t>{1, 0, 0}));
  EXPECT_EQ(p.failed_per_minute, (std::vector<std::int64_t>{1, 1, 0}));
  EXPECT_EQ(p.calls, 3);
  EXPECT_EQ(p.useful, 1);
  EXPECT_EQ(p.refused, 2);
  EXPECT_EQ(p.transport_errors, 0);
  EXPECT_EQ(p.work_amplification_milli, 3000);
  EXPECT_EQ(p.goodput_per_minute_milli, 333);
  EXPECT_EQ(p.peak_per_minute, 2);
  EXPECT_FALSE(p.capacity_per_minute_milli.has_value());
  EXPECT_FALSE(p.trigger_end.has_value());
  EXPECT_FALSE(p.metastable_judged());
  const json doc = to_json(p);
  EXPECT_EQ(doc["work_amplification"], 3);
  EXPECT_EQ(doc["goodput_per_minute"], 0.333);
  EXPECT_EQ(doc["per_minute"]["calls"], json::array({2, 1, 0}));
  EXPECT_EQ(doc["per_minute"]["from"], "2026-12-01T00:00:00Z");
  EXPECT_FALSE(doc.contains("capacity_per_minute"));
  EXPECT_FALSE(doc.contains("trigger_end"));
}

TEST(ServiceLoad, AnEventAtTheRunsEndCountsInItsLastMinute) {
  const std::vector<TraceEvent> events{call(kStart + 2 * kMin), reply(kStart + 2 * kMin, 200)};
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + 2 * kMin), "provider");
  EXPECT_EQ(p.calls_per_minute, (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(p.useful_per_minute, (std::vector<std::int64_t>{0, 1}));
}

TEST(ServiceLoad, NoUsefulReplyLeavesTheAmplificationOut) {
  const std::vector<TraceEvent> events{call(kStart), reply(kStart + 100, 503)};
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + kMin), "provider");
  EXPECT_FALSE(p.work_amplification_milli.has_value());
  EXPECT_FALSE(to_json(p).contains("work_amplification"));
  EXPECT_EQ(load_summary_line(p).rfind("provider: 1 calls, none useful", 0), 0u)
      << load_summary_line(p);
}

TEST(ServiceLoad, RefusalsAndTransportTimeoutsBothFail) {
  // A 429 is an answer; a timeout is none. Both are failed replies.
  const std::vector<TraceEvent> events{call(kStart),        reply(kStart + 100, 429),
                                       call(kStart + 1000), timed_out(kStart + 31'000),
                                       call(kStart + 2000), reply(kStart + 2100, 201)};
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + kMin), "provider");
  EXPECT_EQ(p.refused, 1);
  EXPECT_EQ(p.transport_errors, 1);
  EXPECT_EQ(p.failed(), 2);
  EXPECT_EQ(p.useful, 1);
  EXPECT_EQ(p.failed_per_minute, (std::vector<std::int64_t>{2}));
  EXPECT_EQ(to_json(p)["transport_errors"], 1);
}

TEST(ServiceLoad, CoreSourcedEventsAreNotFacts) {
  // The core's log saying it called, got an answer, or saw a fault counts for nothing.
  std::vector<TraceEvent> events{call(kStart), reply(kStart + 100, 200)};
  for (TraceEvent e : std::vector<TraceEvent>{call(kStart + 1), reply(kStart + 101, 503),
                                              fault(0, kStart, kStart + kMin)[0]}) {
    e.source = EventSource::core;
    events.push_back(e);
  }
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + 2 * kMin), "provider");
  EXPECT_EQ(p.calls, 1);
  EXPECT_EQ(p.useful, 1);
  EXPECT_EQ(p.failed(), 0);
  EXPECT_TRUE(p.faults.empty());
  EXPECT_FALSE(p.trigger_end.has_value());
}

TEST(ServiceLoad, UserServicesAlwaysBuiltInOnesWhenCalled) {
  // "idle" is declared and never called: reported with zeros. model-api is
  // called: reported. brokerage only had a fault: not reported.
  std::vector<TraceEvent> events{call(kStart, "model-api"), reply(kStart + 100, 200, "model-api")};
  events.push_back(
      event(kStart, "fault_start", "brokerage", {{"fault", 0}, {"kind", "token_revoked"}}));
  const auto loads = service_load(scenario_with(0), events, kStart, kStart + kMin);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_EQ(loads[0].service, "idle");
  EXPECT_EQ(loads[1].service, "model-api");
  EXPECT_EQ(loads[2].service, "provider");
  EXPECT_TRUE(loads[0].user);
  EXPECT_FALSE(loads[1].user);
  EXPECT_EQ(loads[0].calls, 0);
  EXPECT_EQ(loads[1].calls, 1);
}

TEST(ServiceLoad, CapacityPerMinuteFromRateAndConcurrency) {
  ServiceCapacity rate;
  rate.rate = 10;
  rate.per_ms = kSecondMs;
  EXPECT_EQ(service_capacity_per_minute_milli(rate, 100), 600'000);  // 10/s = 600/min
  ServiceCapacity slow = rate;
  slow.rate = 1;
  slow.per_ms = 7 * kSecondMs;
  EXPECT_EQ(service_capacity_per_minute_milli(slow, 100), 8'571);  // 60/7, rounded
  ServiceCapacity served;
  served.concurrency = 4;
  // 4 at once, 200 ms each: 20 a second, 1,200 a minute.
  EXPECT_EQ(service_capacity_per_minute_milli(served, 200), 1'200'000);
  EXPECT_FALSE(service_capacity_per_minute_milli(served, 0).has_value());  // served at once
  ServiceCapacity both = rate;
  both.concurrency = 4;
  EXPECT_EQ(service_capacity_per_minute_milli(both, 200), 600'000);  // the smaller
  EXPECT_EQ(milli_json(600'000), 600);
  EXPECT_EQ(milli_json(8'571), 8.571);
}

// An outage from minute 10 to minute 20, failures going on to 24:30, then
// quiet: the minutes after the trigger start at 20, the last failing one is
// 24, so it drained at 25:00, 5 minutes after the trigger.
TEST(ServiceLoad, DrainEndsWithTheLastMinuteHoldingAFailure) {
  std::vector<TraceEvent> events = fault(0, kStart + 10 * kMin, kStart + 20 * kMin);
  requests(events, kStart + 12 * kMin, 2, 503);
  requests(events, kStart + 20 * kMin, 7, 429);
  requests(events, kStart + 24 * kMin + 30'000, 3, 429);
  requests(events, kStart + 30 * kMin, 1, 200);
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.t < b.t; });
  const ServiceLoad p =
      find(service_load(scenario_with(5), events, kStart, kStart + kHourMs), "provider");
  ASSERT_EQ(p.trigger_end, kStart + 20 * kMin);
  ASSERT_EQ(p.faults.size(), 1u);
  EXPECT_TRUE(p.faults[0].ended);
  EXPECT_EQ(p.peak_per_minute, 7);
  EXPECT_EQ(p.peak_after_trigger_per_minute, 7);
  EXPECT_EQ(p.drain_ms, 5 * kMin);
  EXPECT_EQ(p.work_amplification_milli, 13'000);
  const json doc = to_json(p);
  EXPECT_EQ(doc["drain_ms"], 5 * kMin);
  EXPECT_EQ(doc["trigger_end"], "2026-12-01T00:20:00Z");
  EXPECT_EQ(doc["capacity_per_minute"], 5);
  EXPECT_EQ(doc["faults"][0]["until"], "2026-12-01T00:20:00Z");
  // The run ends 40 minutes after the trigger: not judged.
  EXPECT_FALSE(p.metastable_judged());
  EXPECT_EQ(load_summary_line(p),
            "provider: 13 calls, 13x work amplification, peak 7/min after the outage ended "
            "(capacity 5/min), drained in 5m; metastability not judged (the run ends within "
            "1h1m of the outage's end)");
}

TEST(ServiceLoad, NoFailureAfterTheTriggerDrainsAtOnce) {
  std::vector<TraceEvent> events = fault(0, kStart + 10 * kMin, kStart + 20 * kMin);
  requests(events, kStart + 15 * kMin, 1, 503);
  requests(events, kStart + 25 * kMin, 1, 200);
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + kHourMs), "provider");
  EXPECT_EQ(p.drain_ms, 0);
}

TEST(ServiceLoad, FailuresIntoTheLastMinuteNeverDrained) {
  std::vector<TraceEvent> events = fault(0, kStart + 10 * kMin, kStart + 20 * kMin);
  requests(events, kStart + 59 * kMin, 1, 429);
  const ServiceLoad p =
      find(service_load(scenario_with(0), events, kStart, kStart + kHourMs), "provider");
  EXPECT_FALSE(p.drain_ms.has_value());
  EXPECT_FALSE(to_json(p).contains("drain_ms"));
  EXPECT_NE(load_summary_line(p).find("still failing at the run's end"), std::string::npos);
}

TEST(ServiceLoad, ALastingFaultWithoutItsEndEndsAtItsUntil) {
  // The fault outlasts the run: no fault_end, its `until` is the trigger's end.
  const std::vector<TraceEvent> events =
      fault(3, kStart + 10 * kMin, kStart + 3 * kHourMs, /*ended=*/false);
  const ServiceLoad p =
      find(service_load(scenario_with(5), events, kStart, kStart + kHourMs), "provider");
  EXPECT_EQ(p.trigger_end, kStart + 3 * kHourMs);
  EXPECT_FALSE(p.faults[0].ended);
  EXPECT_FALSE(p.peak_after_trigger_per_minute.has_value());
  EXPECT_FALSE(p.drain_ms.has_value());
  EXPECT_FALSE(p.metastable_judged());
}

// Capacity 10 a minute, outage from minute 0 to 10. The judged minute is
// the one starting at 1:10 (trigger end + 1h), and the run lasts to 1:15.
std::vector<TraceEvent> hour_later(int calls, int status) {
  std::vector<TraceEvent> events = fault(0, kStart, kStart + 10 * kMin);
  requests(events, kStart + 70 * kMin + 5'000, calls, status);
  return events;
}

TEST(ServiceLoad, MetastableWhenAboveCapacityAnHourLater) {
  const ServiceLoad p =
      find(service_load(scenario_with(10), hour_later(11, 200), kStart, kStart + 75 * kMin),
           "provider");
  ASSERT_TRUE(p.metastable_judged());
  EXPECT_EQ(p.minute_start(*p.metastable_minute), kStart + 70 * kMin);
  EXPECT_TRUE(p.metastable);
  EXPECT_EQ(to_json(p)["metastable_minute"], "2026-12-01T01:10:00Z");
  EXPECT_NE(load_summary_line(p).find(
                "; still above capacity 1h after the outage ended: metastable"),
            std::string::npos);
}

TEST(ServiceLoad, MetastableWhenStillRefusedAnHourLater) {
  const ServiceLoad p =
      find(service_load(scenario_with(10), hour_later(3, 429), kStart, kStart + 75 * kMin),
           "provider");
  ASSERT_TRUE(p.metastable_judged());
  EXPECT_TRUE(p.metastable);
}

TEST(ServiceLoad, NotMetastableAtCapacityWithEveryAnswerUseful) {
  // Exactly the capacity is not above it.
  const ServiceLoad p =
      find(service_load(scenario_with(10), hour_later(10, 200), kStart, kStart + 75 * kMin),
           "provider");
  ASSERT_TRUE(p.metastable_judged());
  EXPECT_FALSE(p.metastable);
  EXPECT_EQ(to_json(p)["metastable_judged"], true);
  EXPECT_EQ(to_json(p)["metastable"], false);
}

TEST(ServiceLoad, NotJudgedWhenTheRunEndsBeforeTheJudgedMinuteEnds) {
  // The minute 1:10-1:11 is cut by the run's end at 1:10:30.
  const ServiceLoad p = find(service_load(scenario_with(10), hour_later(11, 200), kStart,
                                          kStart + 70 * kMin + 30'000),
                             "provider");
  EXPECT_FALSE(p.metastable_judged());
  EXPECT_FALSE(p.metastable);
  EXPECT_EQ(to_json(p)["metastable_judged"], false);
  EXPECT_FALSE(to_json(p).contains("metastable_minute"));
}

TEST(ServiceLoad, NotJudgedWithoutACapacity) {
  const ServiceLoad p =
      find(service_load(scenario_with(0), hour_later(11, 429), kStart, kStart + 75 * kMin),
           "provider");
  EXPECT_FALSE(p.metastable_judged());
  EXPECT_FALSE(p.metastable);
}

TEST(ServiceLoad, WantedForACapacityOrAFaultOnAUserService) {
  EXPECT_TRUE(wants_service_load(scenario_with(10)));
  Scenario plain = scenario_with(0);
  EXPECT_FALSE(wants_service_load(plain));
  FaultSpec on_model_api;
  on_model_api.kind = FaultKind::quota_exhausted;
  on_model_api.service = ServiceKind::model_api;
  plain.faults.push_back(on_model_api);
  EXPECT_FALSE(wants_service_load(plain));
  FaultSpec on_provider;
  on_provider.kind = FaultKind::http_errors;
  on_provider.user_service = "provider";
  plain.faults.push_back(on_provider);
  EXPECT_TRUE(wants_service_load(plain));
}

TEST(ServiceLoad, GroupedCounts) {
  EXPECT_EQ(grouped_count(0), "0");
  EXPECT_EQ(grouped_count(999), "999");
  EXPECT_EQ(grouped_count(41'200), "41,200");
  EXPECT_EQ(grouped_count(1'234'567), "1,234,567");
  EXPECT_EQ(milli_count_text(6'149), "6.1");
  EXPECT_EQ(milli_count_text(1'200'000), "1,200");
}

// A real run: an hourly call job against a provider limited to 10 requests a
// minute, with a 503 outage from 01:00 to 01:30. The --json document has the
// load; a scenario without a service of the user's own has none.
TEST(ServiceLoad, ReportJsonCarriesTheLoad) {
  auto scenario = load_scenario_json(R"({
    "format": 1, "scenario": "load-json",
    "start": "2026-12-01T00:00:00Z", "until": "2026-12-01T03:00:00Z",
    "services": {"provider": {"capacity": {"rate": 10, "per": "1m"}},
                 "messenger": {"targets": ["ops"]}},
    "jobs": [{"id": "sync", "kind": "call", "schedule": "*/15 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 60},
              "calls": [{"service": "provider", "method": "GET", "path": "/x"}]}],
    "faults": [{"at": "2026-12-01T01:00:00Z", "for": "30m", "kind": "http_errors",
                "service": "provider", "status": 503}]
  })",
                                     "load-json.json");
  ASSERT_TRUE(scenario.ok()) << scenario.error().describe();
  auto run = run_scenario(*scenario);
  ASSERT_TRUE(run.ok()) << run.error().describe();
  const Verdict verdict = judge_run(*scenario, *run, std::nullopt);
  const json doc =
      report_json(*scenario, *run, verdict, summarize(*scenario, *run, 0.0, verdict.held()));
  ASSERT_TRUE(doc.contains("load")) << doc.dump(2);
  const json& p = doc["load"]["provider"];
  EXPECT_EQ(p["capacity_per_minute"], 10);
  EXPECT_EQ(p["trigger_end"], "2026-12-01T01:30:00Z");
  EXPECT_GT(p["calls"].get<std::int64_t>(), p["useful"].get<std::int64_t>());
  EXPECT_EQ(p["per_minute"]["calls"].size(), 180u);
  EXPECT_EQ(p["metastable_judged"], true);  // 02:30 to 02:31 lies inside the run
  EXPECT_EQ(p["metastable"], false);

  // Streamed (no trace kept): nothing to read the load from, and none claimed.
  RunOptions streamed;
  streamed.keep_trace = false;
  auto lean = run_scenario(*scenario, streamed);
  ASSERT_TRUE(lean.ok());
  EXPECT_FALSE(
      report_json(*scenario, *lean, verdict, summarize(*scenario, *lean, 0.0, verdict.held()))
          .contains("load"));
}

TEST(ServiceLoad, ReportJsonWithoutAUserServiceHasNoLoad) {
  auto scenario = load_scenario_json(R"({
    "format": 1, "scenario": "no-load",
    "start": "2026-12-04T16:00:00Z", "until": "2026-12-04T18:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
              "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-04T16:59:30Z", "for": "30m", "kind": "quota_exhausted"}]
  })",
                                     "no-load.json");
  ASSERT_TRUE(scenario.ok()) << scenario.error().describe();
  auto run = run_scenario(*scenario);
  ASSERT_TRUE(run.ok()) << run.error().describe();
  const Verdict verdict = judge_run(*scenario, *run, std::nullopt);
  EXPECT_FALSE(
      report_json(*scenario, *run, verdict, summarize(*scenario, *run, 0.0, verdict.held()))
          .contains("load"));
}

}  // namespace
}  // namespace rehearse::sim
