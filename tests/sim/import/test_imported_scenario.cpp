// Goal: inferred windows become faults a scenario can hold: clipped to its
// span, on declared services only, each labelled inferred with its bounding
// calls; the file's notes say what was observed and guessed; the result
// loads with the scenario loader.
// Method: a small base scenario and hand-made windows.
#include <gtest/gtest.h>

#include <string>

#include "sim/import/imported_scenario.hpp"
#include "sim/world/scenario.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::sim;
using ojson = nlohmann::ordered_json;

const TimeMs kStart = *parse_instant("2026-11-30T00:00:00Z");
const TimeMs kUntil = *parse_instant("2026-11-30T12:00:00Z");
constexpr TimeMs kMin = 60'000;

ImportInput base() {
  ImportInput in;
  in.base = ojson::parse(R"({
    "format": 1, "scenario": "base", "start": "2026-11-30T00:00:00Z",
    "until": "2026-11-30T12:00:00Z", "notes": ["written by hand"],
    "services": {"ledger-api": {"latency": "100ms"}},
    "jobs": [{"id": "sync", "kind": "call", "schedule": "0 * * * *",
              "retry_policy": {"max": 2, "backoff_sec": 600},
              "calls": [{"service": "ledger-api", "method": "GET", "path": "/"}]}]})");
  in.base_path = "base.json";
  in.sources = {"traces.json"};
  return in;
}

InferredWindow window(const std::string& service, TimeMs from, std::optional<TimeMs> until,
                      CallOutcome outcome = CallOutcome::http_error) {
  InferredWindow w;
  w.service = service;
  w.failure.service = service;
  w.failure.outcome = outcome;
  w.failure.status = outcome == CallOutcome::http_error ? 503 : 0;
  w.failure.error = outcome == CallOutcome::network_error ? "dns" : "";
  w.from_ms = from;
  w.until_ms = until;
  w.evidence.failures = 2;
  w.evidence.first_failure_ms = from;
  w.evidence.last_failure_ms = from + kMin;
  w.evidence.start_after_ms = from - 10 * kMin;
  w.evidence.end_by_ms = until;
  w.evidence.end_by = "ok";
  w.evidence.first_where = "traces.json:/resourceSpans/0/scopeSpans/0/spans/3";
  w.evidence.last_where = "traces.json:/resourceSpans/0/scopeSpans/0/spans/4";
  w.evidence.end_by_where = "traces.json:/resourceSpans/0/scopeSpans/0/spans/5";
  return w;
}

TEST(ImportedScenario, AWindowBecomesAnInferredFault) {
  InferredWindows inferred;
  inferred.calls = 6;
  inferred.windows = {window("ledger-api", kStart + 330 * kMin, kStart + 375 * kMin)};
  auto got = import_windows(base(), inferred);
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->faults.size(), 1u);
  const ojson& f = got->faults[0];
  EXPECT_EQ(f["at"], "2026-11-30T05:30:00Z");
  EXPECT_EQ(f["for"], "45m");
  EXPECT_EQ(f["kind"], "http_errors");
  EXPECT_EQ(f["status"], 503);
  const std::string note = f["note"].get<std::string>();
  EXPECT_EQ(note.rfind("inferred from 2 failed calls (503)", 0), 0u) << note;
  EXPECT_NE(note.find("began after 2026-11-30T05:20:00Z and at or before 2026-11-30T05:30:00Z"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("at or before 2026-11-30T06:15:00Z, when a call answered ok"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("spans/5"), std::string::npos) << note;
  const ojson& notes = got->scenario["notes"];
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "written by hand");
  EXPECT_NE(notes[1].get<std::string>().find("observed: 6 calls in traces.json"),
            std::string::npos);
  EXPECT_TRUE(got->ambiguities.empty());
  const ScenarioCheck check = check_scenario_json(got->scenario.dump(), "imported.json");
  ASSERT_TRUE(check.valid());
  EXPECT_EQ(check.scenario->faults.size(), 1u);
  EXPECT_EQ(check.scenario->notes.size(), 2u);
}

TEST(ImportedScenario, ClipsToTheSpanAndRefusesUndeclaredServices) {
  InferredWindows inferred;
  inferred.windows = {window("ledger-api", kStart - 5 * kMin, kStart + 5 * kMin),
                      window("ledger-api", kUntil - kMin, std::nullopt, CallOutcome::network_error),
                      window("ledger-api", kUntil + kMin, kUntil + 2 * kMin),
                      window("telemetry.internal", kStart + kMin, kStart + 2 * kMin)};
  auto got = import_windows(base(), inferred);
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->faults.size(), 2u);
  EXPECT_EQ(got->faults[0]["at"], "2026-11-30T00:00:00Z");
  EXPECT_EQ(got->faults[0]["for"], "5m");
  EXPECT_EQ(got->faults[1]["kind"], "network_errors");
  EXPECT_EQ(got->faults[1]["error"], "dns");
  EXPECT_FALSE(got->faults[1].contains("for"));  // to the end of the run
  ASSERT_EQ(got->ambiguities.size(), 3u);
  EXPECT_NE(got->ambiguities[0].what.find("reaches past"), std::string::npos);
  EXPECT_NE(got->ambiguities[1].what.find("outside the scenario's span"), std::string::npos);
  EXPECT_NE(got->ambiguities[2].what.find("declares no such service"), std::string::npos);
  // Every ambiguity is in the file's notes too.
  EXPECT_EQ(got->scenario["notes"].size(), 2u + 3u);
}

TEST(ImportedScenario, TimeoutsAndANewName) {
  ImportInput in = base();
  in.name = "sync-incident-2026-11-30";
  InferredWindows inferred;
  inferred.windows = {window("ledger-api", kStart + kMin, kStart + 2 * kMin, CallOutcome::timeout)};
  auto got = import_windows(in, inferred);
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(got->scenario["scenario"], "sync-incident-2026-11-30");
  EXPECT_EQ(got->faults[0]["kind"], "timeouts");
  EXPECT_FALSE(got->faults[0].contains("status"));
}

}  // namespace
