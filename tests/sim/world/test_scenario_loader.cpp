// Goal: the scenario loader accepts exactly the documented format, and every
// refusal names the file, the JSON pointer (or line:column) and what was
// expected; the JSON Schema shipped in docs/ cannot drift from the loader.
// Method: one fully featured valid scenario is mutated, one rule per case, and
// each case asserts the exact pointer and a message fragment; committed good
// and bad files are checked against tables that must cover every file; the
// schema's property names and enums are compared with the loader's own key
// lists; properties insert unknown keys and wrong types at every location,
// move faults across the time span, and break the syntax on random lines.
#include "sim/world/fleet.hpp"
#include "sim/world/scenario.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

const char* const kPath = "s.json";

std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  // ctest sets it (rehearse_add_test); running the binary by hand needs it too.
  if (dir == nullptr) ADD_FAILURE() << "REHEARSE_SOURCE_DIR is not set";
  return dir == nullptr ? std::string(".") : std::string(dir);
}

std::vector<std::string> json_files_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A valid scenario that uses every service, job kind, fault kind and
// expectation, so that each rule can be broken by one mutation.
json base_scenario() {
  return json::parse(R"({
    "format": 1,
    "scenario": "all-features",
    "description": "Every part of the format in one file.",
    "start": "2026-12-04T00:00:00Z",
    "until": "2026-12-05T00:00:00Z",
    "seed": 7,
    "env": { "WEEKLY_SUMMARY_CRON": "0 17 * * 5", "AGENT_LEAD_ID": "agent-lead-1" },
    "queue": { "store": "disk", "concurrency": 1, "max_events": 50000 },
    "services": {
      "model-api": { "latency": "20s", "timeout": "2m" },
      "orchestrator": {
        "instance": "paperclip-a",
        "issues": [ { "id": "ISS-1", "status": "todo" }, { "id": "ISS-2", "status": "in_progress" } ],
        "agents": [ { "id": "agent-lead-1", "role": "ceo" }, { "id": "agent-dev-1", "role": "dev", "present": false } ]
      },
      "brokerage": { "token_lifetime": "24h", "latency": 150 },
      "messenger": { "targets": ["team", "ops"] },
      "billing-api": { "latency": "50ms" }
    },
    "jobs": [
      { "id": "weekly-summary", "kind": "group", "schedule": "0 9 * * 1",
        "schedule_env": "WEEKLY_SUMMARY_CRON", "retry_policy": "auto",
        "tasks": [ { "id": "summary", "produces": "summary", "model_calls": 2 },
                   { "id": "holiday", "produces": "skip" } ],
        "targets": ["team"] },
      { "id": "quotes", "kind": "fetch", "schedule": "0 * * * *",
        "retry_policy": { "attempts": 3, "backoff": { "type": "fixed", "delay": 60000 } },
        "service": "brokerage", "requests": 2, "parallel": true },
      { "id": "issues", "kind": "reconcile", "schedule": "*/10 * * * *",
        "retry_policy": { "max": 2, "backoff_sec": 300, "reason": "reads only" },
        "items": [ { "issue": "ISS-1" }, { "issue": "ISS-2", "stage": "BUILDING" },
                   { "issue": "ISS-9", "lost": true } ],
        "batch_size": 5 },
      { "id": "post", "kind": "publish", "schedule": "30 * * * *",
        "retry_policy": { "attempts": 2, "backoff": { "type": "exponential", "delay": "1m" } },
        "idempotency_key": "{job}:{slot}", "targets": ["team", "ops"], "note": "live posts" },
      { "id": "invoices", "kind": "call", "schedule": "15 * * * *",
        "retry_policy": { "max": 2, "backoff_sec": 300 },
        "calls": [ { "service": "billing-api", "method": "POST", "path": "/invoices/sync" },
                   { "service": "billing-api" } ] }
    ],
    "faults": [
      { "at": "2026-12-04T16:30:00Z", "for": "2h", "kind": "quota_exhausted" },
      { "at": "+1h", "for": "30m", "kind": "http_errors", "service": "brokerage", "status": 503, "rate": 0.5 },
      { "at": "+2h", "for": "10m", "kind": "timeouts", "service": "model-api" },
      { "at": "+3h", "kind": "network_errors", "service": "orchestrator", "rate": 0.25, "error": "dns" },
      { "at": "+4h", "kind": "token_revoked", "service": "brokerage" },
      { "at": "+5h", "kind": "issues_deleted", "issues": ["ISS-1"], "new_instance": "paperclip-b" },
      { "at": "+6h", "kind": "issue_status", "issue": "ISS-2", "status": "in_review" },
      { "at": "+7h", "kind": "agent_removed", "agent": "agent-lead-1" },
      { "at": "+8h", "kind": "agent_restored", "agent": "agent-dev-1" },
      { "at": "+9h", "kind": "restart", "down_for": "5m" },
      { "at": "+10h", "kind": "state_corrupted", "file": "jobs_state.json", "mode": "truncated" },
      { "at": "+11h", "kind": "torn_write", "file": "retry_state.json", "down_for": "1m" },
      { "at": "+12h", "for": "20m", "kind": "messenger_down", "targets": ["ops"], "note": "outage" }
    ],
    "expect": {
      "jobs": {
        "weekly-summary": { "delivered_slots": 1, "skipped_slots": 0, "failed_slots": 0,
                            "in_flight_slots": 0, "final_status": "ok", "retries": 2, "runs": 3,
                            "calls": 6, "notifications": { "retry_scheduled": 2 },
                            "max_delay": "1h",
                            "state": { "retry_status": "ok", "next_action": "none",
                                       "next_run_at": "2026-12-11T17:00:00Z", "next_retry_at": null,
                                       "retry_count": 0, "failure_class": null },
                            "policy": { "max_retries": 3, "backoff": "exponential", "delay": "30m",
                                        "budget": "per_slot" },
                            "slots": [ { "slot": "2026-12-04T17:00:00Z", "outcome": "delivered",
                                         "attempts": 3,
                                         "attempt_at": ["2026-12-04T17:00:00Z", "+30m", "2026-12-04T18:30:00Z"],
                                         "tolerance": "2s",
                                         "notifications": { "retry_scheduled": 2, "recovered": 1 } } ],
                            "messages": { "team": { "delivery": 1, "failure_notice": 2,
                                                    "notification": 3, "refused": 0 } },
                            "lateness": { "at_least": "0s", "at_most": "1s" } }
      },
      "items": { "ISS-1": { "stage": "DESIGN_FAILED", "reason_contains": "not found", "queries": 1,
                            "not_found": 1 } },
      "services": { "brokerage": { "calls": 48, "token_issues": 2 }, "model-api": { "calls": 6 },
                    "billing-api": { "calls": 24 } },
      "notifications": { "retry_exhausted": 0 },
      "violations": ["nothing_lost"],
      "damaged_files": { "jobs_state.json": "kept" }
    }
  })");
}

ScenarioCheck check(const json& doc) { return check_scenario_json(doc.dump(2), kPath); }

std::string all_errors(const ScenarioCheck& c) {
  std::string out;
  for (const auto& e : c.errors) out += "  " + e.describe() + "\n";
  return out;
}

// Asserts that `c` has an error at exactly `pointer` whose message contains
// `fragment`.
::testing::AssertionResult has_error(const ScenarioCheck& c, const std::string& pointer,
                                     const std::string& fragment) {
  const std::string where = pointer.empty() ? kPath : std::string(kPath) + ":" + pointer;
  for (const auto& e : c.errors) {
    if (e.where == where && e.message.find(fragment) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no error at '" << where << "' containing '" << fragment << "'; errors:\n"
         << all_errors(c);
}

TEST(ScenarioLoader, BaseScenarioIsValidWithoutFlags) {
  const auto c = check(base_scenario());
  ASSERT_TRUE(c.valid()) << all_errors(c);
  EXPECT_TRUE(c.flags.empty()) << c.flags.front().where << " " << c.flags.front().message;
  ASSERT_TRUE(c.scenario.has_value());
  EXPECT_EQ(c.scenario->faults.size(), 13u);  // one per kind: none silently dropped
  EXPECT_EQ(c.scenario->jobs.size(), 5u);
}

TEST(ScenarioLoader, CallJobCallsUserNamedServicesInOrder) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const Scenario& s = *loaded;
  ASSERT_EQ(s.services.user.count("billing-api"), 1u);
  EXPECT_EQ(s.services.user.at("billing-api").timing.latency_ms, 50);
  EXPECT_EQ(s.services.user.at("billing-api").timing.timeout_ms, kDefaultServiceTimeoutMs);
  const JobSpec* job = s.find_job("invoices");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->kind, JobKind::call);
  EXPECT_EQ(job->side_effects, SideEffectKind::none);
  ASSERT_EQ(job->calls.size(), 2u);
  EXPECT_EQ(job->calls[0].service, "billing-api");
  EXPECT_EQ(job->calls[0].method, "POST");
  EXPECT_EQ(job->calls[0].path, "/invoices/sync");
  EXPECT_EQ(job->calls[1].method, "GET");  // defaults
  EXPECT_EQ(job->calls[1].path, "/");
  EXPECT_EQ(s.expect.user_services.at("billing-api").calls, 24);

  // Every service fault kind but token_revoked takes a user service.
  json doc = base_scenario();
  doc["faults"].push_back(json::parse(
      R"({"at": "+1h", "for": "1h", "kind": "quota_exhausted", "service": "billing-api"})"));
  doc["faults"].push_back(json::parse(
      R"({"at": "+2h", "kind": "http_errors", "service": "billing-api", "status": 503})"));
  doc["faults"].push_back(
      json::parse(R"({"at": "+3h", "kind": "timeouts", "service": "billing-api"})"));
  doc["faults"].push_back(
      json::parse(R"({"at": "+4h", "kind": "network_errors", "service": "billing-api"})"));
  const auto c = check(doc);
  ASSERT_TRUE(c.valid()) << all_errors(c);
  for (std::size_t i = 13; i < 17; ++i) {
    EXPECT_EQ(c.scenario->faults[i].user_service, "billing-api");
    EXPECT_FALSE(c.scenario->faults[i].service.has_value());
  }
}

TEST(ScenarioLoader, FillsTypedValuesAndDefaults) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const Scenario& s = *loaded;
  EXPECT_EQ(s.path, kPath);
  EXPECT_EQ(s.name, "all-features");
  EXPECT_EQ(s.start_ms, *parse_instant("2026-12-04T00:00:00Z"));
  EXPECT_EQ(s.until_ms, *parse_instant("2026-12-05T00:00:00Z"));
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.env.at("WEEKLY_SUMMARY_CRON"), "0 17 * * 5");
  EXPECT_EQ(s.queue.store, QueueStore::disk);
  EXPECT_EQ(s.queue.concurrency, 1);
  EXPECT_EQ(s.queue.max_events, 50000);

  ASSERT_TRUE(s.services.model_api.has_value());
  EXPECT_EQ(s.services.model_api->timing.latency_ms, 20 * kSecondMs);
  EXPECT_EQ(s.services.model_api->timing.timeout_ms, 2 * kMinuteMs);
  ASSERT_TRUE(s.services.brokerage.has_value());
  EXPECT_EQ(s.services.brokerage->timing.latency_ms, 150);  // an integer is milliseconds
  EXPECT_EQ(s.services.brokerage->timing.timeout_ms, kDefaultServiceTimeoutMs);
  EXPECT_EQ(s.services.brokerage->token_lifetime_ms, 24 * kHourMs);
  ASSERT_TRUE(s.services.orchestrator.has_value());
  EXPECT_EQ(s.services.orchestrator->instance, "paperclip-a");
  ASSERT_EQ(s.services.orchestrator->agents.size(), 2u);
  EXPECT_TRUE(s.services.orchestrator->agents[0].present);
  EXPECT_FALSE(s.services.orchestrator->agents[1].present);
  EXPECT_EQ(s.services.orchestrator->issues[1].status, "in_progress");
  EXPECT_TRUE(s.services.has(ServiceKind::messenger));

  const JobSpec* group = s.find_job("weekly-summary");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->kind, JobKind::group);
  EXPECT_EQ(group->schedule_env, "WEEKLY_SUMMARY_CRON");
  EXPECT_EQ(*group->retry_policy, json("auto"));
  EXPECT_EQ(group->side_effects, SideEffectKind::draft);  // default for group
  ASSERT_EQ(group->tasks.size(), 2u);
  EXPECT_EQ(group->tasks[0].model_calls, 2);
  EXPECT_EQ(group->tasks[1].produces, TaskOutput::skip);
  EXPECT_EQ(group->tasks[1].model_calls, 0);  // a skip asks no model by default
  EXPECT_EQ(group->targets, std::vector<std::string>{"team"});
  EXPECT_EQ(group->pointer, "/jobs/0");

  const JobSpec* fetch = s.find_job("quotes");
  ASSERT_NE(fetch, nullptr);
  EXPECT_EQ(fetch->requests, 2);
  EXPECT_TRUE(fetch->parallel);
  EXPECT_EQ(fetch->side_effects, SideEffectKind::none);
  EXPECT_EQ((*fetch->retry_policy)["attempts"], 3);  // kept raw for the core's parser

  const JobSpec* reconcile = s.find_job("issues");
  ASSERT_NE(reconcile, nullptr);
  ASSERT_EQ(reconcile->items.size(), 3u);
  EXPECT_EQ(reconcile->items[0].stage, "DESIGNING");
  EXPECT_EQ(reconcile->items[1].stage, "BUILDING");
  EXPECT_TRUE(reconcile->items[2].lost);
  EXPECT_EQ(reconcile->batch_size, 5);

  const JobSpec* publish = s.find_job("post");
  ASSERT_NE(publish, nullptr);
  EXPECT_EQ(publish->side_effects, SideEffectKind::publish);
  EXPECT_EQ(publish->idempotency_key, "{job}:{slot}");
  EXPECT_EQ(publish->note, "live posts");
  EXPECT_EQ(s.find_job("nope"), nullptr);

  ASSERT_EQ(s.faults.size(), 13u);
  const FaultSpec& quota = s.faults[0];
  EXPECT_EQ(quota.kind, FaultKind::quota_exhausted);
  EXPECT_EQ(quota.service, ServiceKind::model_api);  // the only service it can hit
  EXPECT_EQ(quota.at_ms, *parse_instant("2026-12-04T16:30:00Z"));
  EXPECT_EQ(quota.for_ms, 2 * kHourMs);
  EXPECT_EQ(quota.end_ms(s.until_ms), *parse_instant("2026-12-04T18:30:00Z"));
  const FaultSpec& http = s.faults[1];
  EXPECT_EQ(http.at_ms, s.start_ms + kHourMs);  // "+1h" resolved against start
  EXPECT_EQ(http.http_status, 503);
  EXPECT_DOUBLE_EQ(http.rate, 0.5);
  EXPECT_DOUBLE_EQ(s.faults[2].rate, 1.0);  // default: every call
  EXPECT_EQ(s.faults[3].transport, TransportErrorKind::dns);
  EXPECT_FALSE(s.faults[3].for_ms.has_value());
  EXPECT_EQ(s.faults[3].end_ms(s.until_ms), s.until_ms);  // no `for`: until the end
  EXPECT_EQ(s.faults[4].service, ServiceKind::brokerage);
  EXPECT_EQ(s.faults[5].issues, std::vector<std::string>{"ISS-1"});
  EXPECT_EQ(s.faults[5].new_instance, "paperclip-b");
  EXPECT_EQ(s.faults[6].status, "in_review");
  EXPECT_EQ(s.faults[7].agent, "agent-lead-1");
  EXPECT_EQ(s.faults[9].down_for_ms, 5 * kMinuteMs);
  EXPECT_EQ(s.faults[10].file, StateFile::jobs_state);
  EXPECT_EQ(s.faults[10].mode, CorruptionMode::truncated);
  EXPECT_EQ(s.faults[11].file, StateFile::retry_state);
  EXPECT_EQ(s.faults[12].targets, std::vector<std::string>{"ops"});
  EXPECT_EQ(s.faults[12].pointer, "/faults/12");

  const JobExpectation& je = s.expect.jobs.at("weekly-summary");
  EXPECT_EQ(je.delivered_slots, 1);
  EXPECT_EQ(je.final_status, RetryStatus::ok);
  EXPECT_EQ(je.retries, 2);
  EXPECT_EQ(je.runs, 3);
  EXPECT_EQ(je.calls, 6);
  EXPECT_EQ(je.max_delay_ms, kHourMs);
  EXPECT_EQ(je.notifications.at(NotificationEvent::retry_scheduled), 2);
  EXPECT_EQ(s.expect.items.at("ISS-1").stage, "DESIGN_FAILED");
  EXPECT_EQ(s.expect.items.at("ISS-1").queries, 1);
  EXPECT_EQ(s.expect.services.at(ServiceKind::brokerage).token_issues, 2);
  EXPECT_EQ(s.expect.notifications.at(NotificationEvent::retry_exhausted), 0);
  EXPECT_EQ(s.expect.violations, std::vector<std::string>{"nothing_lost"});
}

TEST(ScenarioLoader, MinimalScenarioGetsDocumentedDefaults) {
  auto loaded = load_scenario_json(R"({"format": 1, "scenario": "tiny",
      "start": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z",
      "services": {"brokerage": {}},
      "jobs": [{"id": "f", "kind": "fetch", "schedule": "@hourly", "retry_policy": "auto"}]})",
                                   kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_EQ(loaded->seed, 1u);
  EXPECT_EQ(loaded->queue.concurrency, 1);
  EXPECT_EQ(loaded->queue.max_events, 1'000'000);
  EXPECT_EQ(loaded->queue.store, QueueStore::memory);
  EXPECT_EQ(loaded->description, "");
  EXPECT_TRUE(loaded->env.empty());
  EXPECT_EQ(loaded->services.brokerage->token_lifetime_ms, 24 * kHourMs);
  EXPECT_EQ(loaded->services.brokerage->timing.latency_ms, kDefaultServiceLatencyMs);
  EXPECT_EQ(loaded->jobs[0].requests, 1);
  EXPECT_FALSE(loaded->jobs[0].parallel);
  EXPECT_TRUE(loaded->faults.empty());
  EXPECT_TRUE(loaded->expect.violations.empty());
  EXPECT_TRUE(loaded->flags.empty());
}

// ------------------------------------------------------- one rule per case

struct Mutation {
  const char* name;
  std::function<void(json&)> apply;
  const char* pointer;   // expected error location (empty: the whole file)
  const char* fragment;  // expected message fragment
};

void set(json& doc, const char* pointer, json value) { doc[json::json_pointer(pointer)] = value; }
void erase(json& doc, const std::string& pointer) {
  const json::json_pointer p(pointer);
  json& parent = doc[p.parent_pointer()];
  if (parent.is_array()) {
    parent.erase(std::stoul(p.back()));
  } else {
    parent.erase(p.back());
  }
}

// The example without the model API and the faults that name it.
void drop_model_api(json& d) {
  erase(d, "/services/model-api");
  erase(d, "/expect/services/model-api");
  d["faults"].erase(2);  // the timeouts fault on model-api
  d["faults"].erase(0);  // the quota fault
}

const std::vector<Mutation>& mutations() {
  static const std::vector<Mutation> kCases{
      // top level
      {"unknown top-level key", [](json& d) { set(d, "/untill", "2026-12-05T00:00:00Z"); },
       "/untill", "unknown key 'untill' (did you mean 'until'?)"},
      {"unknown key far from any", [](json& d) { set(d, "/zzzzzzzz", 1); }, "/zzzzzzzz",
       "unknown key 'zzzzzzzz' (expected one of: 'format'"},
      {"missing format", [](json& d) { erase(d, "/format"); }, "", "missing required key 'format'"},
      {"format 2", [](json& d) { set(d, "/format", 2); }, "/format", "unsupported format 2"},
      {"format as string", [](json& d) { set(d, "/format", "1"); }, "/format",
       "expected the integer 1, got string \"1\""},
      {"format as float", [](json& d) { set(d, "/format", 1.0); }, "/format",
       "expected the integer 1"},
      {"name not kebab", [](json& d) { set(d, "/scenario", "Weekly Outage"); }, "/scenario",
       "expected kebab-case"},
      {"description not string", [](json& d) { set(d, "/description", 3); }, "/description",
       "expected a string, got number 3"},
      {"missing start", [](json& d) { erase(d, "/start"); }, "", "missing required key 'start'"},
      {"start without time", [](json& d) { set(d, "/start", "2026-12-04"); }, "/start",
       "invalid instant"},
      {"start with offset", [](json& d) { set(d, "/start", "2026-12-04T00:00:00+09:00"); },
       "/start", "invalid instant"},
      {"until before start", [](json& d) { set(d, "/until", "2026-12-03T00:00:00Z"); }, "/until",
       "until 2026-12-03T00:00:00Z must be after start 2026-12-04T00:00:00Z"},
      {"until equals start", [](json& d) { set(d, "/until", "2026-12-04T00:00:00Z"); }, "/until",
       "must be after start"},
      {"negative seed", [](json& d) { set(d, "/seed", -1); }, "/seed",
       "expected an unsigned 64-bit integer, got number -1"},
      {"fractional seed", [](json& d) { set(d, "/seed", 1.5); }, "/seed",
       "expected an unsigned 64-bit integer"},
      {"env value not string", [](json& d) { set(d, "/env/RETRIES", 3); }, "/env/RETRIES",
       "expected a string value, got number 3"},
      {"env bad name", [](json& d) { set(d, "/env/1BAD", "x"); }, "/env/1BAD",
       "invalid environment variable name '1BAD'"},
      {"env not object", [](json& d) { set(d, "/env", json::array()); }, "/env",
       "expected environment variables (an object), got an array"},
      {"queue concurrency 0", [](json& d) { set(d, "/queue/concurrency", 0); },
       "/queue/concurrency", "expected an integer from 1 to 64, got 0"},
      {"queue concurrency string", [](json& d) { set(d, "/queue/concurrency", "1"); },
       "/queue/concurrency", "expected an integer from 1 to 64, got string \"1\""},
      {"queue unknown key", [](json& d) { set(d, "/queue/threads", 2); }, "/queue/threads",
       "unknown key 'threads'"},
      {"queue workers beyond 4", [](json& d) { set(d, "/queue/workers", 5); }, "/queue/workers",
       "expected an integer from 1 to 4"},
      {"restart names a worker not started",
       [](json& d) {
         d["faults"] =
             json::array({{{"kind", "restart"}, {"at", "+1h"}, {"down_for", "5m"}, {"worker", 2}}});
       },
       "/faults/0/worker", "expected a worker number (queue.workers) from 1 to 1"},
      {"queue max_events 0", [](json& d) { set(d, "/queue/max_events", 0); }, "/queue/max_events",
       "expected an integer from 1 to 100000000"},
      {"queue store unknown", [](json& d) { set(d, "/queue/store", "redis"); }, "/queue/store",
       "unknown queue store \"redis\" (expected one of: memory, disk)"},
      {"queue store near a name", [](json& d) { set(d, "/queue/store", "disc"); }, "/queue/store",
       "did you mean 'disk'?"},
      // services
      {"service near a built-in name",
       [](json& d) { set(d, "/services/brokrage", json::object()); }, "/services/brokrage",
       "unknown key 'brokrage' (did you mean 'brokerage'?"},
      {"user service not object", [](json& d) { set(d, "/services/slack", true); },
       "/services/slack", "expected the 'slack' service settings (an object), got true"},
      {"user service unknown key", [](json& d) { set(d, "/services/billing-api/quota", 5); },
       "/services/billing-api/quota", "unknown key 'quota' (expected one of: 'latency'"},
      {"user service bad latency", [](json& d) { set(d, "/services/billing-api/latency", "x"); },
       "/services/billing-api/latency", "invalid duration \"x\""},
      {"user service bad name", [](json& d) { set(d, "/services/billing api", json::object()); },
       "/services/billing api", "invalid service name \"billing api\""},
      {"call job without calls", [](json& d) { erase(d, "/jobs/4/calls"); }, "/jobs/4",
       "missing required key 'calls'"},
      {"call job empty calls", [](json& d) { set(d, "/jobs/4/calls", json::array()); },
       "/jobs/4/calls", "expected a list of calls"},
      {"call unknown key", [](json& d) { set(d, "/jobs/4/calls/0/verb", "POST"); },
       "/jobs/4/calls/0/verb", "unknown key 'verb'"},
      {"call without service", [](json& d) { erase(d, "/jobs/4/calls/0/service"); },
       "/jobs/4/calls/0", "missing required key 'service'"},
      {"call undeclared service", [](json& d) { set(d, "/jobs/4/calls/1/service", "ledger-api"); },
       "/jobs/4/calls/1/service", "calls the 'ledger-api' service, which is not declared"},
      {"call built-in service", [](json& d) { set(d, "/jobs/4/calls/0/service", "brokerage"); },
       "/jobs/4/calls/0/service", "'brokerage' is a built-in service with its own job kind"},
      {"call bad method", [](json& d) { set(d, "/jobs/4/calls/0/method", "FETCH"); },
       "/jobs/4/calls/0/method", "unknown HTTP method \"FETCH\""},
      {"call relative path", [](json& d) { set(d, "/jobs/4/calls/0/path", "sync"); },
       "/jobs/4/calls/0/path", "expected a path starting with '/'"},
      {"requests on a call job", [](json& d) { set(d, "/jobs/4/requests", 2); }, "/jobs/4/requests",
       "key 'requests' does not apply to a 'call' job"},
      {"calls on a fetch job", [](json& d) { set(d, "/jobs/1/calls", json::array()); },
       "/jobs/1/calls", "key 'calls' does not apply to a 'fetch' job"},
      {"token_revoked on a user service",
       [](json& d) { set(d, "/faults/4/service", "billing-api"); }, "/faults/4/service",
       "unknown service for 'token_revoked' \"billing-api\""},
      {"fault on an undeclared user service",
       [](json& d) { set(d, "/faults/1/service", "ledger-api"); }, "/faults/1/service",
       "unknown service for 'http_errors' \"ledger-api\""},
      {"expectation for an undeclared user service",
       [](json& d) { set(d, "/expect/services/ledger-api/calls", 1); },
       "/expect/services/ledger-api", "unknown key 'ledger-api'"},
      {"token_issues on a user service",
       [](json& d) { set(d, "/expect/services/billing-api/token_issues", 1); },
       "/expect/services/billing-api/token_issues", "applies to the 'brokerage' service only"},
      {"service typo", [](json& d) { set(d, "/services/model_api", json::object()); },
       "/services/model_api", "did you mean 'model-api'?"},
      {"service not object", [](json& d) { set(d, "/services/model-api", true); },
       "/services/model-api", "expected the 'model-api' service settings (an object), got true"},
      {"bad latency", [](json& d) { set(d, "/services/model-api/latency", "fast"); },
       "/services/model-api/latency", "invalid duration \"fast\""},
      {"fractional latency", [](json& d) { set(d, "/services/model-api/latency", "1.5s"); },
       "/services/model-api/latency", "invalid duration \"1.5s\""},
      {"negative latency", [](json& d) { set(d, "/services/model-api/latency", -5); },
       "/services/model-api/latency", "expected a duration >= 0, got -5"},
      {"float latency", [](json& d) { set(d, "/services/model-api/latency", 2.5); },
       "/services/model-api/latency", "expected a duration such as"},
      {"zero timeout", [](json& d) { set(d, "/services/model-api/timeout", "0s"); },
       "/services/model-api/timeout", "expected a positive duration"},
      {"model-api unknown key", [](json& d) { set(d, "/services/model-api/quota", 5); },
       "/services/model-api/quota", "unknown key 'quota'"},
      {"issue status typo",
       [](json& d) { set(d, "/services/orchestrator/issues/0/status", "in-progress"); },
       "/services/orchestrator/issues/0/status",
       "unknown issue status \"in-progress\" (expected one of: backlog, todo, in_progress"},
      {"issue status suggestion",
       [](json& d) { set(d, "/services/orchestrator/issues/0/status", "in-progress"); },
       "/services/orchestrator/issues/0/status", "did you mean 'in_progress'?"},
      {"issue missing status", [](json& d) { erase(d, "/services/orchestrator/issues/0/status"); },
       "/services/orchestrator/issues/0", "missing required key 'status'"},
      {"duplicate issue id", [](json& d) { set(d, "/services/orchestrator/issues/1/id", "ISS-1"); },
       "/services/orchestrator/issues/1/id", "duplicate issue id 'ISS-1'"},
      {"issue id with space",
       [](json& d) { set(d, "/services/orchestrator/issues/1/id", "ISS 2"); },
       "/services/orchestrator/issues/1/id", "invalid issue id \"ISS 2\""},
      {"agent role upper case",
       [](json& d) { set(d, "/services/orchestrator/agents/0/role", "Lead"); },
       "/services/orchestrator/agents/0/role", "invalid role name \"Lead\""},
      {"agent present not bool",
       [](json& d) { set(d, "/services/orchestrator/agents/0/present", "yes"); },
       "/services/orchestrator/agents/0/present", "expected true or false, got string \"yes\""},
      {"token lifetime zero", [](json& d) { set(d, "/services/brokerage/token_lifetime", 0); },
       "/services/brokerage/token_lifetime", "expected a positive duration, got 0"},
      {"messenger without targets", [](json& d) { erase(d, "/services/messenger/targets"); },
       "/services/messenger", "missing required key 'targets'"},
      {"messenger empty targets",
       [](json& d) { set(d, "/services/messenger/targets", json::array()); },
       "/services/messenger/targets", "at least one entry, got an empty array"},
      {"messenger duplicate target",
       [](json& d) {
         set(d, "/services/messenger/targets", json::array({"ops", "ops"}));
       },
       "/services/messenger/targets/1", "duplicate target 'ops'"},
      // jobs
      {"missing jobs", [](json& d) { erase(d, "/jobs"); }, "", "missing required key 'jobs'"},
      {"empty jobs", [](json& d) { set(d, "/jobs", json::array()); }, "/jobs",
       "at least one entry, got an empty array"},
      {"job not object", [](json& d) { set(d, "/jobs/0", "weekly"); }, "/jobs/0",
       "expected a job (an object), got string \"weekly\""},
      {"job kind unknown", [](json& d) { set(d, "/jobs/0/kind", "batch"); }, "/jobs/0/kind",
       "unknown job kind \"batch\" (expected one of: group, fetch, reconcile, publish, call)"},
      {"job missing id", [](json& d) { erase(d, "/jobs/1/id"); }, "/jobs/1",
       "missing required key 'id'"},
      {"duplicate job id", [](json& d) { set(d, "/jobs/1/id", "weekly-summary"); }, "/jobs/1/id",
       "duplicate job id 'weekly-summary'"},
      {"cron never fires", [](json& d) { set(d, "/jobs/0/schedule", "0 0 30 2 *"); },
       "/jobs/0/schedule", "invalid cron \"0 0 30 2 *\": "},
      {"cron never fires, said so", [](json& d) { set(d, "/jobs/0/schedule", "0 0 31 4 *"); },
       "/jobs/0/schedule", "never fires"},
      {"cron bad minute", [](json& d) { set(d, "/jobs/0/schedule", "61 * * * *"); },
       "/jobs/0/schedule", "invalid cron \"61 * * * *\": "},
      {"cron too few fields", [](json& d) { set(d, "/jobs/0/schedule", "* * *"); },
       "/jobs/0/schedule", "invalid cron \"* * *\": "},
      {"cron empty", [](json& d) { set(d, "/jobs/0/schedule", ""); }, "/jobs/0/schedule",
       "invalid cron \"\": "},
      {"cron not string", [](json& d) { set(d, "/jobs/0/schedule", 5); }, "/jobs/0/schedule",
       "expected a cron expression, got number 5"},
      {"missing schedule", [](json& d) { erase(d, "/jobs/3/schedule"); }, "/jobs/3",
       "missing required key 'schedule'"},
      {"schedule_env bad name", [](json& d) { set(d, "/jobs/0/schedule_env", "weekly-cron"); },
       "/jobs/0/schedule_env", "invalid environment variable name \"weekly-cron\""},
      {"side_effects typo", [](json& d) { set(d, "/jobs/3/side_effects", "publsh"); },
       "/jobs/3/side_effects", "did you mean 'publish'?"},
      {"idempotency_key empty", [](json& d) { set(d, "/jobs/3/idempotency_key", ""); },
       "/jobs/3/idempotency_key", "expected a non-empty string"},
      {"key of another job kind", [](json& d) { set(d, "/jobs/0/items", json::array()); },
       "/jobs/0/items", "key 'items' does not apply to a 'group' job"},
      {"fetch key on publish job", [](json& d) { set(d, "/jobs/3/requests", 2); },
       "/jobs/3/requests", "key 'requests' does not apply to a 'publish' job"},
      {"job key typo", [](json& d) { set(d, "/jobs/0/tsks", json::array()); }, "/jobs/0/tsks",
       "unknown key 'tsks' (did you mean 'tasks'?)"},
      {"group without tasks", [](json& d) { erase(d, "/jobs/0/tasks"); }, "/jobs/0",
       "missing required key 'tasks'"},
      {"group empty tasks", [](json& d) { set(d, "/jobs/0/tasks", json::array()); },
       "/jobs/0/tasks", "at least one entry"},
      {"task produces unknown", [](json& d) { set(d, "/jobs/0/tasks/0/produces", "report"); },
       "/jobs/0/tasks/0/produces", "unknown task output \"report\""},
      {"task duplicate id", [](json& d) { set(d, "/jobs/0/tasks/1/id", "summary"); },
       "/jobs/0/tasks/1/id", "duplicate task id 'summary'"},
      {"task model_calls negative", [](json& d) { set(d, "/jobs/0/tasks/0/model_calls", -1); },
       "/jobs/0/tasks/0/model_calls", "expected an integer from 0 to 100, got -1"},
      {"group unknown target", [](json& d) { set(d, "/jobs/0/targets/0", "teem"); },
       "/jobs/0/targets/0",
       "unknown target 'teem' (not declared in /services/messenger/targets); did you mean 'team'?"},
      {"group without targets", [](json& d) { erase(d, "/jobs/0/targets"); }, "/jobs/0",
       "missing required key 'targets'"},
      {"group without model-api", [](json& d) { drop_model_api(d); }, "/jobs/0/tasks",
       "group job 'weekly-summary' uses the 'model-api' service, which is not declared"},
      {"targets without messenger", [](json& d) { erase(d, "/services/messenger"); },
       "/jobs/0/targets", "no 'messenger' service is declared"},
      {"fetch service other", [](json& d) { set(d, "/jobs/1/service", "orchestrator"); },
       "/jobs/1/service", "unknown fetch service \"orchestrator\" (expected one of: brokerage)"},
      {"fetch requests 0", [](json& d) { set(d, "/jobs/1/requests", 0); }, "/jobs/1/requests",
       "expected an integer from 1 to 1000, got 0"},
      {"fetch without brokerage",
       [](json& d) {
         erase(d, "/services/brokerage");
         erase(d, "/expect/services/brokerage");
         d["faults"].erase(4);
         d["faults"].erase(1);
       },
       "/jobs/1/service", "job 'quotes' uses the 'brokerage' service, which is not declared"},
      {"reconcile unknown issue", [](json& d) { set(d, "/jobs/2/items/0/issue", "ISS-77"); },
       "/jobs/2/items/0/issue", "unknown issue 'ISS-77' (not in /services/orchestrator/issues"},
      {"reconcile lost but present", [](json& d) { set(d, "/jobs/2/items/0/lost", true); },
       "/jobs/2/items/0/issue", "item 'ISS-1' is declared lost, but the orchestrator has"},
      {"reconcile stage case", [](json& d) { set(d, "/jobs/2/items/1/stage", "building"); },
       "/jobs/2/items/1/stage", "did you mean 'BUILDING'?"},
      {"reconcile duplicate item", [](json& d) { set(d, "/jobs/2/items/1/issue", "ISS-1"); },
       "/jobs/2/items/1/issue", "duplicate item 'ISS-1' in this job"},
      {"reconcile batch 0", [](json& d) { set(d, "/jobs/2/batch_size", 0); }, "/jobs/2/batch_size",
       "expected an integer from 1 to 10000, got 0"},
      {"reconcile without orchestrator",
       [](json& d) {
         erase(d, "/services/orchestrator");
         d["faults"].erase(8);
         d["faults"].erase(7);
         d["faults"].erase(6);
         d["faults"].erase(5);
         d["faults"].erase(3);
       },
       "/jobs/2", "reconcile job 'issues' uses the 'orchestrator' service, which is not declared"},
      {"publish without model-api",
       [](json& d) {
         drop_model_api(d);
         d["jobs"].erase(0);  // the group job, which also calls the model
       },
       "/jobs/2", "publish job 'post' uses the 'model-api' service, which is not declared"},
      {"publish unknown target", [](json& d) { set(d, "/jobs/3/targets/1", "alerts"); },
       "/jobs/3/targets/1", "unknown target 'alerts'"},
      // faults
      {"fault before start", [](json& d) { set(d, "/faults/0/at", "2026-12-03T23:59:59Z"); },
       "/faults/0/at",
       "fault at 2026-12-03T23:59:59Z is outside the scenario's time span "
       "[2026-12-04T00:00:00Z, 2026-12-05T00:00:00Z]"},
      {"fault offset after until", [](json& d) { set(d, "/faults/4/at", "+1d1s"); }, "/faults/4/at",
       "is outside the scenario's time span"},
      {"fault offset without plus", [](json& d) { set(d, "/faults/4/at", "16h"); }, "/faults/4/at",
       "(or an offset from start such as \"+16h\")"},
      {"fault bad offset", [](json& d) { set(d, "/faults/4/at", "+soon"); }, "/faults/4/at",
       "invalid offset \"+soon\""},
      {"fault at number", [](json& d) { set(d, "/faults/4/at", 3600000); }, "/faults/4/at",
       "expected an ISO-8601 UTC instant"},
      {"fault missing at", [](json& d) { erase(d, "/faults/4/at"); }, "/faults/4",
       "missing required key 'at'"},
      {"fault negative for", [](json& d) { set(d, "/faults/0/for", -5); }, "/faults/0/for",
       "expected a positive duration, got -5"},
      {"fault zero for", [](json& d) { set(d, "/faults/0/for", "0m"); }, "/faults/0/for",
       "expected a positive duration"},
      {"fault lasting past until", [](json& d) { set(d, "/faults/0/for", "8h"); }, "/faults/0/for",
       "the fault would end at 2026-12-05T00:30:00Z, after until 2026-12-05T00:00:00Z"},
      {"for on an instant fault", [](json& d) { set(d, "/faults/4/for", "1h"); }, "/faults/4/for",
       "key 'for' does not apply to 'token_revoked': it happens at one instant"},
      {"fault key of another kind", [](json& d) { set(d, "/faults/9/status", 500); },
       "/faults/9/status", "key 'status' does not apply to a 'restart' fault"},
      {"fault unknown kind", [](json& d) { set(d, "/faults/0/kind", "quota"); }, "/faults/0/kind",
       "unknown fault kind \"quota\""},
      {"fault kind typo", [](json& d) { set(d, "/faults/4/kind", "token_revoke"); },
       "/faults/4/kind", "did you mean 'token_revoked'?"},
      {"fault missing kind", [](json& d) { erase(d, "/faults/4/kind"); }, "/faults/4",
       "missing required key 'kind'"},
      {"quota on other service", [](json& d) { set(d, "/faults/0/service", "brokerage"); },
       "/faults/0/service", "(expected one of: model-api)"},
      {"http status 200", [](json& d) { set(d, "/faults/1/status", 200); }, "/faults/1/status",
       "expected an HTTP status from 400 to 599, got 200"},
      {"http missing status", [](json& d) { erase(d, "/faults/1/status"); }, "/faults/1",
       "missing required key 'status'"},
      {"http missing service", [](json& d) { erase(d, "/faults/1/service"); }, "/faults/1",
       "missing required key 'service'"},
      {"http unknown service", [](json& d) { set(d, "/faults/1/service", "slack"); },
       "/faults/1/service", "unknown service for 'http_errors' \"slack\""},
      {"rate above one", [](json& d) { set(d, "/faults/1/rate", 1.5); }, "/faults/1/rate",
       "expected a rate from 0 to 1, got 1.5"},
      {"rate negative", [](json& d) { set(d, "/faults/3/rate", -0.1); }, "/faults/3/rate",
       "expected a rate from 0 to 1"},
      {"rate as string", [](json& d) { set(d, "/faults/3/rate", "50%"); }, "/faults/3/rate",
       "expected a rate from 0 to 1, got string \"50%\""},
      {"network error unknown", [](json& d) { set(d, "/faults/3/error", "reset"); },
       "/faults/3/error", "unknown network error \"reset\""},
      {"service fault on the messenger", [](json& d) { set(d, "/faults/1/service", "messenger"); },
       "/faults/1/service",
       "fault kind 'http_errors' cannot target the messenger (use messenger_down for the "
       "messenger)"},
      {"deleted unknown issue", [](json& d) { set(d, "/faults/5/issues/0", "ISS-3"); },
       "/faults/5/issues/0",
       "unknown issue 'ISS-3' (not declared in /services/orchestrator/issues)"},
      {"deleted empty list", [](json& d) { set(d, "/faults/5/issues", json::array()); },
       "/faults/5/issues", "at least one entry"},
      {"new instance unchanged", [](json& d) { set(d, "/faults/5/new_instance", "paperclip-a"); },
       "/faults/5/new_instance", "new_instance 'paperclip-a' is the instance the orchestrator"},
      {"status change unknown issue", [](json& d) { set(d, "/faults/6/issue", "ISS-3"); },
       "/faults/6/issue", "unknown issue 'ISS-3'"},
      {"status change bad status", [](json& d) { set(d, "/faults/6/status", "review"); },
       "/faults/6/status", "unknown issue status \"review\""},
      {"agent unknown", [](json& d) { set(d, "/faults/7/agent", "agent-lead-2"); },
       "/faults/7/agent",
       "unknown agent 'agent-lead-2' (not declared in "
       "/services/orchestrator/agents); did you mean 'agent-lead-1'?"},
      {"agent missing", [](json& d) { erase(d, "/faults/8/agent"); }, "/faults/8",
       "missing required key 'agent'"},
      {"restart without down_for", [](json& d) { erase(d, "/faults/9/down_for"); }, "/faults/9",
       "missing required key 'down_for'"},
      {"restart down past until", [](json& d) { set(d, "/faults/9/down_for", "16h"); },
       "/faults/9/down_for", "the process would be down until 2026-12-05T01:00:00Z"},
      {"corrupt unknown file", [](json& d) { set(d, "/faults/10/file", "state.json"); },
       "/faults/10/file", "unknown state file \"state.json\""},
      {"corrupt unknown mode", [](json& d) { set(d, "/faults/10/mode", "zeroed"); },
       "/faults/10/mode", "unknown corruption mode \"zeroed\""},
      {"messenger_down unknown target", [](json& d) { set(d, "/faults/12/targets/0", "opz"); },
       "/faults/12/targets/0", "unknown target 'opz'"},
      {"faults not array", [](json& d) { set(d, "/faults", json::object()); }, "/faults",
       "expected a list of faults (an array), got an object"},
      // expect
      {"expect unknown key", [](json& d) { set(d, "/expect/job", json::object()); }, "/expect/job",
       "unknown key 'job' (did you mean 'jobs'?)"},
      {"expect unknown job", [](json& d) { set(d, "/expect/jobs/weekly-sumary", json::object()); },
       "/expect/jobs/weekly-sumary",
       "unknown job 'weekly-sumary' (not declared in /jobs); did you mean 'weekly-summary'?"},
      {"expect bad final status",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/final_status", "exhausted"); },
       "/expect/jobs/weekly-summary/final_status", "unknown final status \"exhausted\""},
      {"expect negative count",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/delivered_slots", -1); },
       "/expect/jobs/weekly-summary/delivered_slots", "expected a count from 0 to"},
      {"expect fractional count",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/retries", 1.5); },
       "/expect/jobs/weekly-summary/retries", "expected a count from 0 to"},
      {"expect job key typo", [](json& d) { set(d, "/expect/jobs/weekly-summary/retires", 1); },
       "/expect/jobs/weekly-summary/retires", "did you mean 'retries'?"},
      {"expect unknown event",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/notifications/retry_schedule", 1); },
       "/expect/jobs/weekly-summary/notifications/retry_schedule",
       "unknown notification event 'retry_schedule'"},
      {"expect bad max_delay",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/max_delay", "soon"); },
       "/expect/jobs/weekly-summary/max_delay", "invalid duration \"soon\""},
      {"expect unknown item", [](json& d) { set(d, "/expect/items/ISS-5", json::object()); },
       "/expect/items/ISS-5", "unknown item 'ISS-5'"},
      {"expect item bad stage", [](json& d) { set(d, "/expect/items/ISS-1/stage", "FAILED"); },
       "/expect/items/ISS-1/stage", "unknown stage \"FAILED\""},
      {"expect token issues elsewhere",
       [](json& d) { set(d, "/expect/services/model-api/token_issues", 1); },
       "/expect/services/model-api/token_issues",
       "key 'token_issues' applies to the 'brokerage' service only"},
      {"expect undeclared service",
       [](json& d) {
         erase(d, "/services/messenger");
         erase(d, "/jobs/3");
         erase(d, "/jobs/0");
         d["faults"].erase(12);
         set(d, "/expect/services/messenger", json::object());
         erase(d, "/expect/jobs/weekly-summary");
       },
       "/expect/services/messenger", "uses the 'messenger' service, which is not declared"},
      {"expect unknown invariant", [](json& d) { set(d, "/expect/violations/0", "no_dupes"); },
       "/expect/violations/0", "unknown invariant \"no_dupes\""},
      {"expect duplicate invariant",
       [](json& d) { d["expect"]["violations"].push_back("nothing_lost"); }, "/expect/violations/1",
       "duplicate invariant 'nothing_lost'"},
      {"expect unknown total event", [](json& d) { set(d, "/expect/notifications/sent", 1); },
       "/expect/notifications/sent", "unknown notification event 'sent'"},
      // expect: the keys added to format 1 later (each refused with its pointer)
      {"expect state bad status",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/retry_status", "exhausted"); },
       "/expect/jobs/weekly-summary/state/retry_status", "unknown retry status \"exhausted\""},
      {"expect state bad action",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/next_action", "wait"); },
       "/expect/jobs/weekly-summary/state/next_action", "unknown next action \"wait\""},
      {"expect state bad instant",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/next_run_at", "friday"); },
       "/expect/jobs/weekly-summary/state/next_run_at", "friday"},
      {"expect state retry_at not an instant",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/next_retry_at", 5); },
       "/expect/jobs/weekly-summary/state/next_retry_at", "expected an ISO-8601 UTC instant"},
      {"expect state negative count",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/retry_count", -1); },
       "/expect/jobs/weekly-summary/state/retry_count", "expected a count from 0 to"},
      {"expect state bad class",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/failure_class", "quota"); },
       "/expect/jobs/weekly-summary/state/failure_class",
       "unknown failure class (or null) \"quota\""},
      {"expect state bad word",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state", "corrupt"); },
       "/expect/jobs/weekly-summary/state",
       "expected the job's final state (or \"unreadable\") (an object), got string"},
      {"expect state key typo",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/state/retry_counts", 1); },
       "/expect/jobs/weekly-summary/state/retry_counts", "did you mean 'retry_count'?"},
      {"expect policy bad backoff",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/policy/backoff", "exp"); },
       "/expect/jobs/weekly-summary/policy/backoff", "unknown backoff \"exp\""},
      {"expect policy too many retries",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/policy/max_retries", 1001); },
       "/expect/jobs/weekly-summary/policy/max_retries", "expected a retry count from 0 to 1000"},
      {"expect policy bad delay",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/policy/delay", "1.5h"); },
       "/expect/jobs/weekly-summary/policy/delay", "invalid duration \"1.5h\""},
      {"expect policy bad budget",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/policy/budget", "per_run"); },
       "/expect/jobs/weekly-summary/policy/budget", "unknown budget scope \"per_run\""},
      {"expect slots not a list",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots", json::object()); },
       "/expect/jobs/weekly-summary/slots", "expected a list of slots (an array)"},
      {"expect slot without instant",
       [](json& d) { erase(d, "/expect/jobs/weekly-summary/slots/0/slot"); },
       "/expect/jobs/weekly-summary/slots/0", "missing required key 'slot'"},
      {"expect slots out of order",
       [](json& d) {
         d["expect"]["jobs"]["weekly-summary"]["slots"].push_back(
             {{"slot", "2026-12-04T16:00:00Z"}});
       },
       "/expect/jobs/weekly-summary/slots/1/slot", "is not after the previous one"},
      {"expect slot bad outcome",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/outcome", "lost"); },
       "/expect/jobs/weekly-summary/slots/0/outcome", "unknown slot outcome \"lost\""},
      {"expect slot negative attempts",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/attempts", -2); },
       "/expect/jobs/weekly-summary/slots/0/attempts", "expected a count from 0 to"},
      {"expect slot attempt count disagrees",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/attempts", 4); },
       "/expect/jobs/weekly-summary/slots/0/attempt_at", "3 attempt instants for 4 attempts"},
      {"expect slot bad offset",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/attempt_at/1", "+soon"); },
       "/expect/jobs/weekly-summary/slots/0/attempt_at/1", "invalid offset \"+soon\""},
      {"expect slot bad tolerance",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/tolerance", "-1s"); },
       "/expect/jobs/weekly-summary/slots/0/tolerance", "invalid duration"},
      {"expect slot unknown event",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/notifications/retried", 1); },
       "/expect/jobs/weekly-summary/slots/0/notifications/retried",
       "unknown notification event 'retried'"},
      {"expect slot key typo",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/slots/0/attempt", 1); },
       "/expect/jobs/weekly-summary/slots/0/attempt", "did you mean 'attempts'?"},
      {"expect messages unknown target",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/messages/tem", json::object()); },
       "/expect/jobs/weekly-summary/messages/tem", "unknown target 'tem'"},
      {"expect messages unknown kind",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/messages/team/deliveries", 1); },
       "/expect/jobs/weekly-summary/messages/team/deliveries", "did you mean 'delivery'?"},
      {"expect lateness bounds crossed",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/lateness/at_least", "2s"); },
       "/expect/jobs/weekly-summary/lateness", "at_least (2s) is above at_most (1s)"},
      {"expect lateness key typo",
       [](json& d) { set(d, "/expect/jobs/weekly-summary/lateness/at_mots", "1s"); },
       "/expect/jobs/weekly-summary/lateness/at_mots", "did you mean 'at_most'?"},
      {"expect item not_found negative",
       [](json& d) { set(d, "/expect/items/ISS-1/not_found", -1); },
       "/expect/items/ISS-1/not_found", "expected a count from 0 to"},
      {"expect damaged unknown file",
       [](json& d) { set(d, "/expect/damaged_files/state.json", "kept"); },
       "/expect/damaged_files/state.json", "unknown state file 'state.json'"},
      {"expect damaged file never damaged",
       [](json& d) { set(d, "/expect/damaged_files/retry_state.json", "kept"); },
       "/expect/damaged_files/retry_state.json",
       "no state_corrupted fault damages 'retry_state.json'"},
      {"expect damaged bad outcome",
       [](json& d) { set(d, "/expect/damaged_files/jobs_state.json", "same"); },
       "/expect/damaged_files/jobs_state.json", "unknown damaged file outcome \"same\""},
      // structure
      {"top level array", [](json& d) { d = json::array({d}); }, "",
       "expected a scenario (a JSON object) at the top level, got an array"},
      {"pointer escaping", [](json& d) { d["env"]["A~B/C"] = "x"; }, "/env/A~0B~1C",
       "invalid environment variable name 'A~B/C'"},
  };
  return kCases;
}

// The keys added to format 1 later: typed, and absent keys stay unchecked.
TEST(ScenarioLoader, LaterExpectKeysAreTyped) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const JobExpectation& w = loaded->expect.jobs.at("weekly-summary");
  ASSERT_TRUE(w.state.has_value());
  EXPECT_EQ(w.state->retry_status, RetryStatus::ok);
  EXPECT_EQ(w.state->next_action, NextAction::none);
  EXPECT_EQ(w.state->next_run_at, std::optional<TimeMs>(*parse_instant("2026-12-11T17:00:00Z")));
  ASSERT_TRUE(w.state->next_retry_at.has_value());
  EXPECT_FALSE(w.state->next_retry_at->has_value());  // null: expected absent
  ASSERT_TRUE(w.state->failure_class.has_value());
  EXPECT_FALSE(w.state->failure_class->has_value());
  EXPECT_EQ(w.state->retry_count, 0);
  ASSERT_TRUE(w.policy.has_value());
  EXPECT_EQ(w.policy->max_retries, 3);
  EXPECT_EQ(w.policy->backoff, BackoffKind::exponential);
  EXPECT_EQ(w.policy->delay_ms, 30 * kMinuteMs);
  EXPECT_EQ(w.policy->budget, BudgetScope::per_slot);
  ASSERT_TRUE(w.slots.has_value());
  ASSERT_EQ(w.slots->size(), 1u);
  const SlotExpectation& slot = w.slots->front();
  const TimeMs at = *parse_instant("2026-12-04T17:00:00Z");
  EXPECT_EQ(slot.slot, at);
  EXPECT_EQ(slot.outcome, SlotOutcome::delivered);
  EXPECT_EQ(slot.attempts, 3);
  // "+30m" is an offset from the slot.
  EXPECT_EQ(slot.attempt_at, (std::vector<TimeMs>{at, at + 30 * kMinuteMs, at + 90 * kMinuteMs}));
  EXPECT_EQ(slot.tolerance_ms, 2 * kSecondMs);
  EXPECT_EQ(slot.notifications.at(NotificationEvent::recovered), 1);
  EXPECT_EQ(slot.pointer, "/expect/jobs/weekly-summary/slots/0");
  EXPECT_EQ(w.messages.at("team").failure_notice, 2);
  EXPECT_EQ(w.messages.at("team").refused, 0);
  ASSERT_TRUE(w.lateness.has_value());
  EXPECT_EQ(w.lateness->at_most_ms, kSecondMs);
  EXPECT_EQ(loaded->expect.items.at("ISS-1").not_found, 1);
  EXPECT_EQ(loaded->expect.damaged_files.at(StateFile::jobs_state), DamagedFileOutcome::kept);
  // A slot without a tolerance gets 1 s.
  json doc = base_scenario();
  erase(doc, "/expect/jobs/weekly-summary/slots/0/tolerance");
  auto plain = load_scenario_json(doc.dump(), kPath);
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(plain->expect.jobs.at("weekly-summary").slots->front().tolerance_ms, kSecondMs);
  // A format-1 file written before these keys loads as it did: none of them
  // is set, so none is checked.
  json old = base_scenario();
  for (const char* key : {"state", "policy", "slots", "messages", "lateness"}) {
    old["expect"]["jobs"]["weekly-summary"].erase(key);
  }
  old["expect"]["items"]["ISS-1"].erase("not_found");
  old["expect"].erase("damaged_files");
  auto before = load_scenario_json(old.dump(), kPath);
  ASSERT_TRUE(before.ok()) << before.error().describe();
  const JobExpectation& b = before->expect.jobs.at("weekly-summary");
  EXPECT_FALSE(b.state || b.policy || b.slots || b.lateness);
  EXPECT_TRUE(b.messages.empty());
  EXPECT_FALSE(before->expect.items.at("ISS-1").not_found.has_value());
  EXPECT_TRUE(before->expect.damaged_files.empty());
  EXPECT_EQ(b.retries, 2);  // the format-1 keys keep their values
}

TEST(ScenarioLoader, EachRuleNamesPointerAndExpectation) {
  for (const auto& m : mutations()) {
    SCOPED_TRACE(m.name);
    json doc = base_scenario();
    m.apply(doc);
    const auto c = check(doc);
    EXPECT_FALSE(c.valid()) << "accepted";
    EXPECT_FALSE(c.scenario.has_value());
    EXPECT_TRUE(has_error(c, m.pointer, m.fragment));
    for (const auto& e : c.errors) {
      // Every location starts with the file; no error lacks a message.
      EXPECT_EQ(e.where.rfind(kPath, 0), 0u) << e.where;
      EXPECT_FALSE(e.message.empty());
    }
  }
}

// state_corrupted takes exact damage, so a scenario replays the same under
// every seed: `cut` for mode truncated, `flips` for mode flip; each key belongs
// to its mode only.
TEST(ScenarioLoader, StateCorruptedTakesAnExactCutOrExactFlips) {
  {
    json doc = base_scenario();
    set(doc, "/faults/10/cut", 62);
    const auto c = check(doc);
    ASSERT_TRUE(c.valid()) << all_errors(c);
    EXPECT_EQ(c.scenario->faults[10].cut, std::optional<std::uint64_t>(62));
  }
  {
    json doc = base_scenario();
    set(doc, "/faults/10/mode", "flip");
    set(doc, "/faults/10/flips", json::array({7, 1}));
    const auto c = check(doc);
    ASSERT_TRUE(c.valid()) << all_errors(c);
    EXPECT_EQ(c.scenario->faults[10].mode, CorruptionMode::flip);
    EXPECT_EQ(c.scenario->faults[10].flips, (std::vector<std::uint64_t>{7, 1}));
  }
  json wrong_mode = base_scenario();
  set(wrong_mode, "/faults/10/flips", json::array({1}));
  EXPECT_TRUE(has_error(check(wrong_mode), "/faults/10/flips", "applies to mode 'flip' only"));
  json cut_with_flip = base_scenario();
  set(cut_with_flip, "/faults/10/mode", "flip");
  set(cut_with_flip, "/faults/10/cut", 3);
  EXPECT_TRUE(has_error(check(cut_with_flip), "/faults/10/cut", "applies to mode 'truncated'"));
  json twice = base_scenario();
  set(twice, "/faults/10/mode", "flip");
  set(twice, "/faults/10/flips", json::array({3, 3}));
  EXPECT_TRUE(has_error(check(twice), "/faults/10/flips/1", "listed twice"));
  json empty = base_scenario();
  set(empty, "/faults/10/mode", "flip");
  set(empty, "/faults/10/flips", json::array());
  EXPECT_TRUE(has_error(check(empty), "/faults/10/flips", "non-empty array of byte offsets"));
  json negative = base_scenario();
  set(negative, "/faults/10/cut", -1);
  EXPECT_TRUE(has_error(check(negative), "/faults/10/cut", "a byte count"));
}

TEST(ScenarioLoader, ErrorCodesSayWhatKindOfProblem) {
  json doc = base_scenario();
  set(doc, "/jobs/0/schedule", "0 0 30 2 *");
  set(doc, "/jobs/3/targets/0", "nobody");
  set(doc, "/untill", 1);
  set(doc, "/seed", "x");
  set(doc, "/faults/0/for", "1x");
  const auto c = check(doc);
  std::map<std::string, ErrorCode> codes;
  for (const auto& e : c.errors) codes[e.where] = e.code;
  EXPECT_EQ(codes.at("s.json:/jobs/0/schedule"), ErrorCode::never_fires);
  EXPECT_EQ(codes.at("s.json:/jobs/3/targets/0"), ErrorCode::not_found);
  EXPECT_EQ(codes.at("s.json:/untill"), ErrorCode::schema_error);
  EXPECT_EQ(codes.at("s.json:/seed"), ErrorCode::schema_error);
  EXPECT_EQ(codes.at("s.json:/faults/0/for"), ErrorCode::invalid_argument);
}

TEST(ScenarioLoader, CollectsEveryErrorInOnePass) {
  json doc = base_scenario();
  set(doc, "/untill", 1);
  set(doc, "/jobs/0/schedule", "0 0 30 2 *");
  set(doc, "/faults/3/rate", 2);
  set(doc, "/expect/violations/0", "nope");
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 4u) << all_errors(c);
  // In reading order: top-level keys, then jobs, faults, expectations.
  EXPECT_EQ(c.errors[0].where, "s.json:/untill");
  EXPECT_EQ(c.errors[1].where, "s.json:/jobs/0/schedule");
  EXPECT_EQ(c.errors[2].where, "s.json:/faults/3/rate");
  EXPECT_EQ(c.errors[3].where, "s.json:/expect/violations/0");

  // load_* returns the first, saying how many more there are.
  auto loaded = load_scenario_json(doc.dump(), kPath);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().where, "s.json:/untill");
  EXPECT_NE(loaded.error().message.find("(and 3 more errors"), std::string::npos)
      << loaded.error().message;
}

TEST(ScenarioLoader, KeepsAtMostTheErrorLimitAndCountsTheRest) {
  json doc = base_scenario();
  for (int i = 0; i < 150; ++i) doc["extra_" + std::to_string(1000 + i)] = i;
  const auto c = check(doc);
  EXPECT_EQ(c.errors.size(), kScenarioErrorLimit);
  EXPECT_EQ(c.errors_omitted, 150 - kScenarioErrorLimit);
}

TEST(ScenarioLoader, ReferenceErrorsDoNotCascadeFromABrokenDeclaration) {
  // A messenger with a bad latency is still declared: its targets stay
  // usable, so the only error is the latency itself.
  json doc = base_scenario();
  set(doc, "/services/messenger/latency", "slow");
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 1u) << all_errors(c);
  EXPECT_TRUE(has_error(c, "/services/messenger/latency", "invalid duration"));
}

// ----------------------------------------------------------------- syntax

TEST(ScenarioLoader, SyntaxErrorsGiveLineAndColumn) {
  const auto c = check_scenario_json("{\n  \"format\": 1,\n  x\n}", kPath);
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0].where, "s.json:3:3");
  EXPECT_EQ(c.errors[0].code, ErrorCode::parse_error);
  EXPECT_NE(c.errors[0].message.find("syntax error while parsing object key"), std::string::npos)
      << c.errors[0].message;
  EXPECT_NE(c.errors[0].message.find("expected string literal"), std::string::npos);
  // The location is not repeated in the message.
  EXPECT_EQ(c.errors[0].message.find("line 3"), std::string::npos);

  const auto empty = check_scenario_json("", kPath);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0].where, "s.json:1:1");
  EXPECT_NE(empty.errors[0].message.find("unexpected end of input"), std::string::npos);

  const auto trailing = check_scenario_json("{\"a\": 1}\n\n]", kPath);
  ASSERT_EQ(trailing.errors.size(), 1u);
  EXPECT_EQ(trailing.errors[0].where, "s.json:3:1");
  EXPECT_NE(trailing.errors[0].message.find("expected end of input"), std::string::npos);

  const auto overflow = check_scenario_json("{\"seed\": 1e999}", kPath);
  ASSERT_EQ(overflow.errors.size(), 1u);
  EXPECT_NE(overflow.errors[0].message.find("number overflow"), std::string::npos);
}

TEST(ScenarioLoader, DuplicateKeysAreErrors) {
  // nlohmann keeps the last of two equal keys silently; a scenario must not
  // quietly lose one of two schedules.
  std::string text = base_scenario().dump(2);
  const std::string needle = "\"schedule\": \"0 9 * * 1\",";
  const auto pos = text.find(needle);
  ASSERT_NE(pos, std::string::npos);
  text.insert(pos, "\"schedule\": \"0 10 * * 1\", ");
  text.insert(1, "\"format\": 1, ");
  const auto c = check_scenario_json(text, kPath);
  EXPECT_TRUE(has_error(c, "/format", "duplicate key 'format'"));
  EXPECT_TRUE(has_error(c, "/jobs/0/schedule", "duplicate key 'schedule'"));
  EXPECT_EQ(c.errors.size(), 2u) << all_errors(c);
}

TEST(ScenarioLoader, RefusesAbsurdNestingAndSize) {
  // Bounded before anything walks the document recursively.
  json doc = base_scenario();
  json deep = json::array();
  for (int i = 0; i < 100; ++i) deep = json::array({deep});
  set(doc, "/jobs/1/retry_policy", deep);
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 1u) << all_errors(c);
  EXPECT_EQ(c.errors[0].code, ErrorCode::schema_error);
  EXPECT_EQ(c.errors[0].where.rfind("s.json:/jobs/1/retry_policy/0/0/", 0), 0u)
      << c.errors[0].where;
  EXPECT_NE(c.errors[0].message.find("nested more than 64 levels"), std::string::npos);

  // A million brackets stop at the bound instead of exhausting the stack.
  const auto brackets = check_scenario_json(std::string(1'000'000, '['), kPath);
  ASSERT_EQ(brackets.errors.size(), 1u);
  EXPECT_NE(brackets.errors[0].message.find("nested more than"), std::string::npos);

  const auto huge = check_scenario_json(std::string((64u << 20) + 1, ' '), kPath);
  ASSERT_EQ(huge.errors.size(), 1u);
  EXPECT_NE(huge.errors[0].message.find("scenarios are limited to"), std::string::npos);
}

// ------------------------------------------------------------------ flags

std::vector<ScenarioFlag> flags_of(const json& doc) {
  const auto c = check(doc);
  EXPECT_TRUE(c.valid()) << all_errors(c);
  return c.flags;
}

TEST(ScenarioFlags, MissingPolicyIsAFlagNotAnError) {
  json doc = base_scenario();
  erase(doc, "/jobs/1/retry_policy");
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/1");
  EXPECT_NE(flags[0].message.find("job 'quotes': no retry_policy"), std::string::npos)
      << flags[0].message;
  EXPECT_NE(flags[0].message.find("never retried"), std::string::npos);
}

TEST(ScenarioFlags, InvalidPolicyIsFlaggedWithItsInnerPointer) {
  json doc = base_scenario();
  set(doc, "/jobs/2/retry_policy/backoff_sec", -5);
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/2/retry_policy/backoff_sec");

  doc = base_scenario();
  set(doc, "/jobs/2/retry_policy", "sometimes");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/2/retry_policy");

  // The scenario still loads: the run replays the omission.
  auto loaded = load_scenario_json(doc.dump(), kPath);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->flags.size(), 1u);
  EXPECT_EQ(*loaded->find_job("issues")->retry_policy, json("sometimes"));
}

TEST(ScenarioFlags, RetryingPublishJobNeedsKeyOrReason) {
  json doc = base_scenario();
  erase(doc, "/jobs/3/idempotency_key");
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::side_effects);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/3");
  EXPECT_NE(flags[0].message.find("job 'post'"), std::string::npos);

  // A reason in the policy says why a re-run is safe.
  set(doc, "/jobs/3/retry_policy/reason", "posts are keyed by slot on the server");
  EXPECT_TRUE(flags_of(doc).empty());

  // A publish job that never retries needs neither.
  doc = base_scenario();
  erase(doc, "/jobs/3/idempotency_key");
  set(doc, "/jobs/3/retry_policy",
      json{{"max", 0},
           {"retryable_classes", json::array()},
           {"reason", "live posts are never retried"}});
  EXPECT_TRUE(flags_of(doc).empty());

  // side_effects decides, not the kind: a group job declared "publish" too.
  doc = base_scenario();
  set(doc, "/jobs/0/side_effects", "publish");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/0");
}

TEST(ScenarioFlags, UnusableScheduleOverrideIsFlagged) {
  json doc = base_scenario();
  set(doc, "/env/WEEKLY_SUMMARY_CRON", "");
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);  // "auto" cannot be judged without a schedule: no second flag
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_config);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/0/schedule_env");
  EXPECT_NE(flags[0].message.find("WEEKLY_SUMMARY_CRON=\"\""), std::string::npos)
      << flags[0].message;

  set(doc, "/env/WEEKLY_SUMMARY_CRON", "every friday");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_config);

  // A usable override: nothing to flag.
  set(doc, "/env/WEEKLY_SUMMARY_CRON", "0 18 * * 5");
  EXPECT_TRUE(flags_of(doc).empty());
}

TEST(ScenarioFlags, JobThatNeverRunsInTheSpanIsFlagged) {
  json doc = base_scenario();
  set(doc, "/jobs/1/schedule", "0 0 1 1 *");  // New Year only; the span is in December
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_idle);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/1/schedule");

  // A slot exactly at start or until counts as inside the span.
  set(doc, "/jobs/1/schedule", "0 0 4 12 *");
  EXPECT_TRUE(flags_of(doc).empty());
  set(doc, "/jobs/1/schedule", "0 0 5 12 *");
  EXPECT_TRUE(flags_of(doc).empty());
}

TEST(ScenarioFlags, SlotAtTheEpochCountsAsInsideTheSpan) {
  auto loaded = load_scenario_json(R"({"format": 1, "scenario": "epoch",
      "start": "1970-01-01T00:00:00Z", "until": "1970-01-01T00:30:00Z",
      "services": {"brokerage": {}},
      "jobs": [{"id": "f", "kind": "fetch", "schedule": "0 0 * * *", "retry_policy": "auto"}]})",
                                   kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(loaded->flags.empty()) << loaded->flags.front().message;
}

TEST(ScenarioFlags, FlagsFollowTheEffectiveSchedule) {
  // The env override is what the job runs on: a default that never fires in
  // the span is fine when the override does.
  json doc = base_scenario();
  set(doc, "/jobs/0/schedule", "0 0 1 1 *");
  EXPECT_TRUE(flags_of(doc).empty());
  erase(doc, "/env/WEEKLY_SUMMARY_CRON");
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_idle);
}

// ---------------------------------------------------------- committed files

TEST(ScenarioFiles, GoodFilesLoad) {
  const std::string dir = source_dir() + "/tests/data/scenarios-good";
  const auto files = json_files_in(dir);
  // An empty or missing directory must not pass quietly.
  ASSERT_GE(files.size(), 3u);
  std::map<std::string, std::size_t> flagged;
  for (const auto& name : files) {
    SCOPED_TRACE(name);
    const auto c = check_scenario_file(dir + "/" + name);
    EXPECT_TRUE(c.valid()) << all_errors(c);
    ASSERT_TRUE(c.scenario.has_value());
    // The file name is the scenario name: one place to look for each.
    EXPECT_EQ(c.scenario->name + ".json", name);
    if (!c.flags.empty()) flagged[name] = c.flags.size();
  }
  // Exactly one committed file is flagged on purpose (it replays omissions).
  EXPECT_EQ(flagged, (std::map<std::string, std::size_t>{{"policy-omission.json", 2}}));
}

TEST(ScenarioFiles, FlaggedFileNamesEachOmission) {
  const auto c =
      check_scenario_file(source_dir() + "/tests/data/scenarios-good/policy-omission.json");
  ASSERT_TRUE(c.valid()) << all_errors(c);
  ASSERT_EQ(c.flags.size(), 2u);
  EXPECT_EQ(c.flags[0].kind, FlagKind::policy_error);
  EXPECT_NE(c.flags[0].where.find("policy-omission.json:/jobs/0/retry_policy"), std::string::npos);
  EXPECT_EQ(c.flags[1].kind, FlagKind::side_effects);
  EXPECT_NE(c.flags[1].where.find("policy-omission.json:/jobs/1"), std::string::npos);
}

TEST(ScenarioFiles, BadFilesFailWithTheExpectedError) {
  const std::string dir = source_dir() + "/tests/data/scenarios-bad";
  // Every bad file and the first error it must produce; the table and the
  // directory must match exactly so no file goes untested.
  const std::map<std::string, std::pair<std::string, std::string>> expected{
      {"bad-duration.json", {":/services/messenger/latency", "invalid duration \"1.5s\""}},
      {"bad-instant.json", {":/start", "invalid instant"}},
      {"duplicate-key.json", {":/jobs/0/schedule", "duplicate key 'schedule'"}},
      {"expect-slot-outcome.json",
       {":/expect/jobs/weekly/slots/0/outcome", "unknown slot outcome \"lost\""}},
      {"fault-outside-span.json", {":/faults/0/at", "outside the scenario's time span"}},
      {"never-fires.json", {":/jobs/0/schedule", "invalid cron \"0 0 30 2 *\": "}},
      {"messenger-service-fault.json",
       {":/faults/0/service",
        "fault kind 'http_errors' cannot target the messenger (use "
        "messenger_down for the messenger)"}},
      {"syntax-error.json", {":7:1", "syntax error while parsing object key"}},
      {"unknown-job-reference.json",
       {":/expect/jobs/posts",
        "unknown job 'posts' (not declared in /jobs); did you mean 'post'?"}},
      {"unknown-key.json", {":/untill", "unknown key 'untill' (did you mean 'until'?)"}},
      {"unknown-target.json",
       {":/jobs/0/targets/0",
        "unknown target 'team-weekley' (not declared in "
        "/services/messenger/targets); did you mean 'team-weekly'?"}},
      {"wrong-type.json",
       {":/queue/concurrency", "expected an integer from 1 to 64, got string \"1\""}},
  };
  const auto files = json_files_in(dir);
  std::vector<std::string> table_names;
  for (const auto& [name, unused] : expected) table_names.push_back(name);
  EXPECT_EQ(files, table_names);
  for (const auto& [name, error] : expected) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/" + name;
    const auto c = check_scenario_file(path);
    ASSERT_FALSE(c.valid());
    EXPECT_EQ(c.errors.size(), 1u) << all_errors(c);
    EXPECT_EQ(c.errors[0].where, path + error.first);
    EXPECT_NE(c.errors[0].message.find(error.second), std::string::npos) << c.errors[0].message;
  }
}

TEST(ScenarioFiles, MissingFileIsAnIoError) {
  const auto c = check_scenario_file("/nonexistent/dir/x.json");
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0].code, ErrorCode::io_error);
  EXPECT_EQ(c.errors[0].where, "/nonexistent/dir/x.json");
  auto loaded = load_scenario_file("/nonexistent/dir/x.json");
  EXPECT_FALSE(loaded.ok());
}

// ------------------------------------------------------- schema agreement

json load_schema() {
  std::ifstream in(source_dir() + "/docs/schema/scenario.schema.json");
  EXPECT_TRUE(in.good()) << "docs/schema/scenario.schema.json is missing";
  return json::parse(in);
}

std::vector<std::string> property_names(const json& node) {
  std::vector<std::string> names;
  for (const auto& [key, unused] : node.at("properties").items()) names.push_back(key);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ScenarioSchema, PropertyNamesEqualTheLoadersKeysAtEveryLevel) {
  const json schema = load_schema();
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  // The fleet block's levels are sim/world/fleet.hpp's (fleet_known_keys).
  auto known = scenario_known_keys();
  for (const auto& [level, keys] : fleet_known_keys()) known[level] = keys;
  for (const auto& [level, keys] : known) {
    SCOPED_TRACE(level);
    const json& node = level == "scenario" ? schema : schema.at("$defs").at(level);
    EXPECT_EQ(property_names(node), sorted(keys));
  }
  // And the other way round: every object the schema describes is known to
  // the loader (a level added to the schema alone would be unchecked).
  for (const auto& [name, node] : schema.at("$defs").items()) {
    if (node.contains("properties")) {
      EXPECT_EQ(known.count(name), 1u) << name;
    }
  }
}

TEST(ScenarioSchema, ObjectsAreClosedEverywhere) {
  // additionalProperties false on plain objects; the kind-dependent ones
  // (job, fault) close with unevaluatedProperties so their if/then branches
  // add the kind's keys.
  const json schema = load_schema();
  EXPECT_EQ(schema.at("additionalProperties"), false);
  for (const auto& [name, node] : schema.at("$defs").items()) {
    if (!node.contains("properties")) continue;
    SCOPED_TRACE(name);
    const bool branch = name.rfind("job_", 0) == 0 && name != "job_expectation";
    const bool fault_branch = name.rfind("fault_", 0) == 0;
    if (branch || fault_branch) {
      EXPECT_FALSE(node.contains("additionalProperties"));  // would break the merge
    } else if (name == "job" || name == "fault") {
      EXPECT_EQ(node.at("unevaluatedProperties"), false);
    } else if (name == "services" || name == "expect_services") {
      // Any other key names a service of the user's own, described exactly.
      EXPECT_EQ(node.at("additionalProperties").at("$ref"),
                name == "services" ? "#/$defs/user_service" : "#/$defs/service_expectation");
    } else {
      EXPECT_EQ(node.at("additionalProperties"), false);
    }
  }
}

TEST(ScenarioSchema, KindBranchesCoverEveryKind) {
  const json schema = load_schema();
  const json& defs = schema.at("$defs");
  const auto branch_kinds = [&](const char* object) {
    std::vector<std::string> kinds;
    for (const auto& branch : defs.at(object).at("allOf")) {
      const std::string kind = branch.at("if").at("properties").at("kind").at("const");
      EXPECT_EQ(branch.at("then").at("$ref"), std::string("#/$defs/") + object + "_" + kind);
      kinds.push_back(kind);
    }
    return sorted(kinds);
  };
  std::vector<std::string> fault_kinds;
  for (int i = 0; i <= static_cast<int>(FaultKind::job_file_corrupted); ++i) {
    fault_kinds.push_back(to_string(static_cast<FaultKind>(i)));
  }
  EXPECT_EQ(branch_kinds("fault"), sorted(fault_kinds));
  EXPECT_EQ(sorted(defs.at("fault").at("properties").at("kind").at("enum")), sorted(fault_kinds));
  std::vector<std::string> job_kinds;
  for (const JobKind kind : all_job_kinds()) job_kinds.push_back(to_string(kind));
  EXPECT_EQ(branch_kinds("job"), sorted(job_kinds));
}

TEST(ScenarioSchema, EnumsEqualTheLoadersVocabulary) {
  const json schema = load_schema();
  const json& defs = schema.at("$defs");
  EXPECT_EQ(defs.at("issue_status").at("enum").get<std::vector<std::string>>(),
            issue_status_names());
  EXPECT_EQ(defs.at("stage").at("enum").get<std::vector<std::string>>(), stage_names());
  EXPECT_EQ(
      defs.at("notification_counts").at("propertyNames").at("enum").get<std::vector<std::string>>(),
      notification_event_names());
  EXPECT_EQ(defs.at("expect")
                .at("properties")
                .at("violations")
                .at("items")
                .at("enum")
                .get<std::vector<std::string>>(),
            invariant_names());
  EXPECT_EQ(
      defs.at("queue").at("properties").at("store").at("enum").get<std::vector<std::string>>(),
      queue_store_names());
  std::vector<std::string> files;
  for (int i = 0; i <= static_cast<int>(StateFile::jobs_state); ++i) {
    files.push_back(to_string(static_cast<StateFile>(i)));
  }
  EXPECT_EQ(defs.at("state_file").at("enum").get<std::vector<std::string>>(), files);
  EXPECT_EQ(defs.at("slot_expectation")
                .at("properties")
                .at("outcome")
                .at("enum")
                .get<std::vector<std::string>>(),
            slot_outcome_names());
  std::vector<json> classes;
  for (const FailureClass c : all_failure_classes()) classes.emplace_back(to_string(c));
  classes.emplace_back(nullptr);
  EXPECT_EQ(defs.at("state_expectation")
                .at("properties")
                .at("failure_class")
                .at("enum")
                .get<std::vector<json>>(),
            classes);
  std::vector<std::string> modes;
  for (int i = 0; i <= static_cast<int>(CorruptionMode::flip); ++i) {
    modes.push_back(to_string(static_cast<CorruptionMode>(i)));
  }
  EXPECT_EQ(defs.at("fault_state_corrupted")
                .at("properties")
                .at("mode")
                .at("enum")
                .get<std::vector<std::string>>(),
            modes);
}

TEST(ScenarioVocabulary, EventNamesAreTheCoresNotificationEvents) {
  for (const auto& name : notification_event_names()) {
    const auto event = parse_notification_event(name);
    ASSERT_TRUE(event.has_value()) << name;
    EXPECT_EQ(to_string(*event), name);
  }
  for (int i = 0; i <= static_cast<int>(FaultKind::messenger_down); ++i) {
    const auto kind = static_cast<FaultKind>(i);
    EXPECT_EQ(parse_fault_kind(to_string(kind)), kind);
  }
  for (int i = 0; i <= static_cast<int>(ServiceKind::messenger); ++i) {
    const auto kind = static_cast<ServiceKind>(i);
    EXPECT_EQ(parse_service_kind(to_string(kind)), kind);
  }
  EXPECT_FALSE(parse_service_kind("model_api").has_value());
  EXPECT_EQ(default_side_effects(JobKind::publish), SideEffectKind::publish);
  EXPECT_EQ(default_side_effects(JobKind::fetch), SideEffectKind::none);
  EXPECT_EQ(default_side_effects(JobKind::call), SideEffectKind::none);
  EXPECT_TRUE(fault_has_duration(FaultKind::messenger_down));
  EXPECT_FALSE(fault_has_duration(FaultKind::restart));
}

// ------------------------------------------------------------- properties

// Pointers of every object in the base scenario whose keys are fixed by the
// format (free-form maps and retry policies, which the core judges, excluded).
std::vector<std::string> fixed_key_objects() {
  std::vector<std::string> out;
  const std::function<void(const json&, const std::string&)> walk = [&](const json& node,
                                                                        const std::string& at) {
    if (at.find("/retry_policy") != std::string::npos) return;
    if (node.is_object()) {
      const bool notifications =
          at.size() >= 14 && at.compare(at.size() - 14, 14, "/notifications") == 0;
      // /services: any key not near a built-in name declares a user service.
      // expect: maps keyed by declared names (messages by target, damaged
      // files by state file) refuse an unknown name as a reference.
      const bool messages = at.size() >= 9 && at.compare(at.size() - 9, 9, "/messages") == 0;
      const bool free_form = at == "/env" || at == "/services" || at == "/expect/jobs" ||
                             at == "/expect/items" || at == "/expect/damaged_files" ||
                             notifications || messages;
      if (!free_form) out.push_back(at);
      for (const auto& [key, value] : node.items()) walk(value, at + "/" + key);
    } else if (node.is_array()) {
      for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], at + "/" + std::to_string(i));
    }
  };
  walk(base_scenario(), "");
  return out;
}

REHEARSE_PROP(ScenarioProperties, UnknownKeyIsReportedWhereItIs, ()) {
  static const std::vector<std::string> objects = fixed_key_objects();
  RC_ASSERT(objects.size() > 35u);  // the walk really found the nested objects
  const std::string at = *rc::gen::elementOf(objects);
  // "x_" + lower-case letters: never a known key (none starts with x).
  const std::string key =
      "x_" + *rc::gen::container<std::string>(rc::gen::inRange('a', static_cast<char>('z' + 1)));
  json doc = base_scenario();
  doc[json::json_pointer(at)][key] = *rc::gen::arbitrary<int>();
  const auto c = check(doc);
  RC_ASSERT(c.errors.size() == 1u);
  RC_ASSERT(c.errors[0].where == std::string(kPath) + ":" + at + "/" + key);
  RC_ASSERT(c.errors[0].message.find("key '" + key + "'") != std::string::npos);
}

REHEARSE_PROP(ScenarioProperties, WrongTypeIsReportedAtItsPointer, ()) {
  // Every scalar in the file (outside retry policies) replaced by a value of
  // a type no scalar slot accepts yields an error at exactly that pointer.
  static const std::vector<std::string> leaves = [] {
    std::vector<std::string> out;
    const json flat = base_scenario().flatten();  // items() must not outlive it
    for (const auto& [pointer, unused] : flat.items()) {
      if (pointer.find("/retry_policy") == std::string::npos) out.push_back(pointer);
    }
    return out;
  }();
  RC_ASSERT(leaves.size() > 100u);
  const std::string at = *rc::gen::elementOf(leaves);
  json replacement =
      *rc::gen::elementOf(std::vector<json>{json(nullptr), json::array(), json::object(),
                                            json::array({1}), json{{"a", 1}}});
  // expect.jobs.<id>.state: an instant or a class may be null ("none expected").
  const bool nullable = at.find("/state/next_") != std::string::npos ||
                        at.find("/state/failure_class") != std::string::npos;
  if (nullable && replacement.is_null()) replacement = json::array();
  json doc = base_scenario();
  doc[json::json_pointer(at)] = replacement;
  const auto c = check(doc);
  RC_ASSERT(!c.valid());
  const std::string where = std::string(kPath) + ":" + at;
  RC_ASSERT(std::any_of(c.errors.begin(), c.errors.end(),
                        [&](const Error& e) { return e.where == where; }));
}

REHEARSE_PROP(ScenarioProperties, FaultsAreAcceptedExactlyInsideTheSpan, ()) {
  json doc = base_scenario();
  const TimeMs start = *parse_instant("2026-12-04T00:00:00Z");
  const DurationMs span = kDayMs;
  const DurationMs offset = *rc::gen::inRange<DurationMs>(0, 2 * span);
  const bool as_offset = *rc::gen::arbitrary<bool>();
  const std::string at =
      as_offset ? "+" + std::to_string(offset) + "ms" : format_instant(start + offset);
  set(doc, "/faults/9/at", at);
  set(doc, "/faults/9/down_for", 0);
  const auto c = check(doc);
  if (offset <= span) {
    RC_ASSERT(c.valid());
    RC_ASSERT(c.scenario->faults[9].at_ms == start + offset);
  } else {
    RC_ASSERT(c.errors.size() == 1u);
    RC_ASSERT(c.errors[0].where == std::string(kPath) + ":/faults/9/at");
  }
}

REHEARSE_PROP(ScenarioProperties, LastingFaultsEndByUntil, ()) {
  json doc = base_scenario();
  const DurationMs offset = *rc::gen::inRange<DurationMs>(0, kDayMs + 1);
  const DurationMs length = *rc::gen::inRange<DurationMs>(1, 2 * kDayMs);
  set(doc, "/faults/0/at", "+" + std::to_string(offset) + "ms");
  set(doc, "/faults/0/for", length);
  const auto c = check(doc);
  if (offset + length <= kDayMs) {
    RC_ASSERT(c.valid());
    RC_ASSERT(c.scenario->faults[0].end_ms(c.scenario->until_ms) ==
              c.scenario->start_ms + offset + length);
  } else {
    RC_ASSERT(c.errors.size() == 1u);
    RC_ASSERT(c.errors[0].where == std::string(kPath) + ":/faults/0/for");
  }
}

REHEARSE_PROP(ScenarioProperties, SyntaxErrorLocationIsTheBrokenLine, ()) {
  // A stray character at the start of any line of a pretty-printed file is
  // reported at that line, column 1 (no string spans lines, so it is always
  // outside a string).
  const std::string text = base_scenario().dump(2);
  std::vector<std::size_t> line_starts{0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts.push_back(i + 1);
  }
  const std::size_t line = *rc::gen::inRange<std::size_t>(0, line_starts.size());
  std::string broken = text;
  broken.insert(line_starts[line], "@");
  const auto c = check_scenario_json(broken, kPath);
  RC_ASSERT(c.errors.size() == 1u);
  RC_ASSERT(c.errors[0].where == std::string(kPath) + ":" + std::to_string(line + 1) + ":1");
}

}  // namespace
}  // namespace rehearse::sim
