// A job kind added from a test alone: one table entry (sim/world/job_kind_table.hpp)
// and its runner, and nothing else of the tree. The kind is read by the
// loader with its key errors at their pointers, runs in a scenario under the
// invariant monitors, has its schema branch, and is drawn by generated worlds.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/job_runner.hpp"
#include "sim/check/generate.hpp"
#include "sim/check/reachability.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/testing/generators.hpp"
#include "sim/world/expect.hpp"
#include "sim/world/job_kind_table.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

// The toy: each run calls one service of the user's own `times` times; the
// first answer that is not 2xx fails the run with its class.
class PingJob final : public JobRunner {
 public:
  PingJob(Services& services, std::string service, int times)
      : services_(services), service_(std::move(service)), times_(times) {}
  Task<rehearse::RunOutcome> run(RunContext context) override;

 private:
  Services& services_;
  std::string service_;
  int times_;
};

Task<rehearse::RunOutcome> PingJob::run(RunContext context) {
  for (int i = 0; i < times_; ++i) {
    ServiceRequest request;
    request.service = service_;
    request.operation = "GET";
    request.target = "/ping";
    stamp_run_headers(request, context, fmt::format("{}/p{}", context.job_id, i));
    const ServiceResult result = co_await services_.call(std::move(request));
    if (!result.is_success()) {
      const FailureInfo info = to_failure_info(result);
      co_return rehearse::RunOutcome::failure(classify(info), info.message);
    }
  }
  co_return rehearse::RunOutcome::success();
}

JobKindDef ping_kind() {
  JobKindDef def;
  def.name = "ping";
  def.keys = {"service", "times"};
  def.schema_properties = {{"service", {{"type", "string"}}},
                           {"times", {{"type", "integer"}, {"minimum", 1}, {"maximum", 5}}}};
  def.schema_required = {"service"};
  def.side_effects = SideEffectKind::none;
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    if (const auto service = keys.read_service("service", true)) {
      if (parse_service_kind(*service)) {
        keys.error("service", "a ping job pings a service of the user's own");
      } else {
        job.params["service"] = *service;
      }
    }
    job.params["times"] = keys.read_int("times", 1, 5, false).value_or(1);
  };
  def.runner_params = [](const JobSpec& job) { return job.params; };
  def.services = [](const JobSpec& job) {
    return std::vector<std::string>{job.params.at("service").get<std::string>()};
  };
  def.calls_per_run = [](const JobSpec& job) { return job.params.at("times").get<std::int64_t>(); };
  def.draw = [](Rng& rng, const JobDrawWorld& w) -> std::optional<json> {
    if (w.user_services.empty()) return std::nullopt;
    const auto pick = rng.next_below(w.user_services.size());
    return json{{"service", w.user_services[pick]}, {"times", rng.next_in(1, 3)}};
  };
  def.runner = [](const JobConfig& job, const PolicyOrError&,
                  JobPorts& ports) -> Result<std::unique_ptr<JobRunner>> {
    return std::unique_ptr<JobRunner>(
        std::make_unique<PingJob>(ports.services, job.params.at("service").get<std::string>(),
                                  job.params.at("times").get<int>()));
  };
  return def;
}

// Added once, before any scenario of this program is loaded.
JobKind ping() {
  static const JobKind kind = add_job_kind(ping_kind());
  return kind;
}

json ping_scenario() {
  return json::parse(R"json({
    "format": 1, "scenario": "ping-outage",
    "start": "2026-11-30T00:30:00Z", "until": "2026-11-30T06:30:00Z",
    "services": { "status-api": {}, "messenger": { "targets": ["ops"] } },
    "jobs": [ { "id": "pinger", "kind": "ping", "schedule": "0 * * * *",
                "retry_policy": { "max": 3, "backoff_sec": 600 },
                "service": "status-api", "times": 2 } ],
    "faults": [ { "at": "2026-11-30T02:55:00Z", "kind": "http_errors",
                  "service": "status-api", "status": 503, "for": "15m" } ],
    "expect": { "jobs": { "pinger": { "delivered_slots": 6, "failed_slots": 0,
                                      "runs": 7, "retries": 1, "calls": 13 } } }
  })json");
}

Result<Scenario> load(const json& doc) { return load_scenario_json(doc.dump(), "<ping>"); }

TEST(AddedJobKind, IsInTheTableWithItsSchemaBranch) {
  const JobKind kind = ping();
  EXPECT_EQ(std::string(to_string(kind)), "ping");
  EXPECT_EQ(find_job_kind_named("ping"), kind);
  EXPECT_EQ(all_job_kinds().back(), kind);
  EXPECT_TRUE(world_supports(kind));
  const json schema = job_kinds_schema();
  const json& names = schema.at("job").at("properties").at("kind").at("enum");
  EXPECT_NE(std::find(names.begin(), names.end(), "ping"), names.end());
  EXPECT_EQ(schema.at("job_ping").at("required"), json::array({"service"}));
}

TEST(AddedJobKind, RunsInAScenarioUnderTheMonitors) {
  ping();
  auto scenario = load(ping_scenario());
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  RunOptions options;
  options.keep_trace = true;
  auto result = run_scenario(*scenario, options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->errors.empty());
  for (const Violation& v : result->violations) ADD_FAILURE() << v.invariant << ": " << v.message;
  int calls = 0;
  for (const TraceEvent& e : result->trace.events()) {
    if (e.type == "service_call" && e.service == "status-api" && e.job == "pinger") ++calls;
  }
  // Six slots of two calls; the 03:00 slot fails on its first (503) and
  // recovers on its one retry at 03:10, when the outage ends.
  EXPECT_EQ(calls, 13);
  for (const ExpectFailure& f : check_expectations(*scenario, *result))
    ADD_FAILURE() << f.describe();
}

// The expectations judge the kind: a wrong count fails the run.
TEST(AddedJobKind, AWrongExpectationFails) {
  ping();
  json doc = ping_scenario();
  doc["expect"]["jobs"]["pinger"]["calls"] = 12;
  auto scenario = load(doc);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  auto result = run_scenario(*scenario);
  ASSERT_TRUE(result.ok());
  const std::vector<ExpectFailure> failures = check_expectations(*scenario, *result);
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].describe().find("/expect/jobs/pinger/calls"), std::string::npos)
      << failures[0].describe();
}

TEST(AddedJobKind, ItsKeysAreReadWithErrorsAtTheirPointers) {
  ping();
  const auto error_of = [](json doc) {
    auto loaded = load(doc);
    return loaded.ok() ? std::string("loaded")
                       : loaded.error().where + " " + loaded.error().message;
  };
  json doc = ping_scenario();
  doc["jobs"][0].erase("service");
  EXPECT_NE(error_of(doc).find("/jobs/0 missing required key 'service'"), std::string::npos)
      << error_of(doc);
  doc = ping_scenario();
  doc["jobs"][0]["service"] = "status-apii";
  EXPECT_NE(error_of(doc).find("/jobs/0/service"), std::string::npos) << error_of(doc);
  doc = ping_scenario();
  doc["jobs"][0]["times"] = 9;
  EXPECT_NE(error_of(doc).find("/jobs/0/times"), std::string::npos) << error_of(doc);
  doc = ping_scenario();
  doc["jobs"][0]["kind"] = "call";
  EXPECT_NE(error_of(doc).find("does not apply to a 'call' job"), std::string::npos)
      << error_of(doc);
}

int pings_in(const json& doc) {
  return static_cast<int>(std::count_if(doc["jobs"].begin(), doc["jobs"].end(),
                                        [](const json& j) { return j["kind"] == "ping"; }));
}

// A generated world loads, runs, and no invariant fires.
void expect_runs_clean(const json& doc, std::uint64_t seed) {
  auto scenario = load(doc);
  ASSERT_TRUE(scenario.ok()) << "seed " << seed << ": " << scenario.error().message;
  auto result = run_scenario(*scenario);
  ASSERT_TRUE(result.ok());
  for (const Violation& v : result->violations) {
    ADD_FAILURE() << "seed " << seed << ": " << v.invariant << ": " << v.message;
  }
}

// Generated worlds draw the added kind, and the worlds it is in run clean.
TEST(AddedJobKind, GeneratedWorldsDrawAndRunIt) {
  ping();
  int drawn = 0;
  for (std::uint64_t seed = 1; seed <= 60 && drawn < 4; ++seed) {
    const json doc = generate_world(seed);
    if (pings_in(doc) == 0) continue;
    ++drawn;
    expect_runs_clean(doc, seed);
  }
  EXPECT_EQ(drawn, 4);
}

// The library's property generator draws it too, into worlds that load and
// run clean.
TEST(AddedJobKind, ThePropertyGeneratorDrawsAndRunsIt) {
  ping();
  testing::ScenarioLimits limits;
  limits.job_kinds = {"ping", "call"};
  limits.max_span_hours = 6;
  int pings = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const json doc = testing::gen::scenario(limits)(rc::Random(seed), 20).value();
    pings += pings_in(doc);
    expect_runs_clean(doc, seed);
  }
  EXPECT_GE(pings, 6);
}

TEST(AddedJobKind, HasAReachabilityPoint) {
  ping();
  const auto points = reachability_points();
  EXPECT_TRUE(std::any_of(points.begin(), points.end(),
                          [](const ReachabilityPoint& p) { return p.name == "job:ping"; }));
}

}  // namespace
}  // namespace rehearse::sim
