// Shared fixtures of the scenario loader tests (tests/sim/world/
// test_scenario_*.cpp): the fully featured valid scenario each case mutates,
// the check that loads it as "s.json", and the assertion that an error sits at
// an exact pointer. Inline: every test file of the binary includes it.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "sim/world/scenario.hpp"

namespace rehearse::sim::loader_test {

using nlohmann::json;

inline const char* const kPath = "s.json";

// A valid scenario that uses every service, job kind, fault kind and
// expectation, so that each rule can be broken by one mutation.
inline json base_scenario() {
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

inline ScenarioCheck check(const json& doc) { return check_scenario_json(doc.dump(2), kPath); }

inline std::string all_errors(const ScenarioCheck& c) {
  std::string out;
  for (const auto& e : c.errors) out += "  " + e.describe() + "\n";
  return out;
}

// Asserts that `c` has an error at exactly `pointer` whose message contains
// `fragment`.
inline ::testing::AssertionResult has_error(const ScenarioCheck& c, const std::string& pointer,
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
inline void set(json& doc, const char* pointer, json value) {
  doc[json::json_pointer(pointer)] = value;
}
inline void erase(json& doc, const std::string& pointer) {
  const json::json_pointer p(pointer);
  json& parent = doc[p.parent_pointer()];
  if (parent.is_array()) {
    parent.erase(std::stoul(p.back()));
  } else {
    parent.erase(p.back());
  }
}

}  // namespace rehearse::sim::loader_test
