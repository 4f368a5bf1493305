// Goal: the world publishes a run to whatever observer it is given
// (sim/world/run_observer.hpp) and knows nothing of the monitors: every
// trace event reaches the observer once, in order, as it is recorded; the
// world's locked stores are announced before the first event; the end
// checks run once, at `until`, for a run that completed; the observer's
// violations and tallies are the run's.
// Method: run_world() with a recording observer over a small scenario with
// a quota outage, compared with the result's own trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/world/world.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

struct Record {
  std::vector<std::string> locked;
  std::vector<std::size_t> indices;
  std::vector<std::string> types;
  std::size_t events_before_first_lock = 0;
  std::vector<TimeMs> finished_at;
  std::size_t texts = 0;
};

// Records what it is handed and answers with one violation of its own, at the
// first `fault_start`.
class RecordingObserver final : public RunObserver {
 public:
  explicit RecordingObserver(Record& record) : record_(record) {}
  void add_secret(std::string) override {}
  void add_locked_store(std::string dir) override {
    if (record_.locked.empty()) record_.events_before_first_lock = record_.indices.size();
    record_.locked.push_back(std::move(dir));
  }
  std::optional<Violation> observe(const TraceEvent& event, std::size_t index) override {
    record_.indices.push_back(index);
    record_.types.push_back(event.type);
    if (event.type != "fault_start" || !found_.empty()) return std::nullopt;
    found_.push_back(Violation{"stage_monotonic", index, event.t, "seen by the recorder"});
    return found_.back();
  }
  std::optional<Violation> observe_text(std::string_view, std::size_t, TimeMs) override {
    ++record_.texts;
    return std::nullopt;
  }
  std::vector<Violation> finish(TimeMs until_ms) override {
    record_.finished_at.push_back(until_ms);
    return {};
  }
  json tallies() const override { return json{{"recorded", record_.indices.size()}}; }
  const std::vector<Violation>& violations() const noexcept override { return found_; }

 private:
  Record& record_;
  std::vector<Violation> found_;
};

Scenario outage_scenario() {
  auto loaded = load_scenario_json(R"({
    "format": 1, "scenario": "observer-test",
    "start": "2026-12-04T16:00:00Z", "until": "2026-12-04T20:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "hourly", "kind": "group", "schedule": "0 * * * *", "retry_policy": "auto",
              "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-04T16:59:30Z", "for": "1h", "kind": "quota_exhausted"}]
  })",
                                   "observer-test.json");
  EXPECT_TRUE(loaded.ok()) << loaded.error().describe();
  return *loaded;
}

TEST(RunObserver, SeesEveryEventOnceInOrderAndTheRunEndsWithItsVerdict) {
  const Scenario scenario = outage_scenario();
  Record record;
  int built = 0;
  auto run = run_world(scenario, RunOptions{}, [&](const Scenario& s) {
    ++built;
    EXPECT_EQ(s.name, "observer-test");
    return std::unique_ptr<RunObserver>(std::make_unique<RecordingObserver>(record));
  });
  ASSERT_TRUE(run.ok()) << run.error().describe();
  EXPECT_EQ(built, 1);
  ASSERT_GT(run->trace.size(), 10u);
  ASSERT_EQ(record.indices.size(), run->trace.size());
  for (std::size_t i = 0; i < record.indices.size(); ++i) {
    ASSERT_EQ(record.indices[i], i);
    ASSERT_EQ(record.types[i], run->trace.events()[i].type) << "event " << i;
  }
  EXPECT_EQ(record.events_before_first_lock, 0u);
  EXPECT_NE(std::find(record.locked.begin(), record.locked.end(), "/srv/state"),
            record.locked.end());
  EXPECT_GT(record.texts, 0u);  // the worker's log lines
  EXPECT_EQ(record.finished_at, std::vector<TimeMs>{scenario.until_ms});
  EXPECT_EQ(run->tallies, (json{{"recorded", run->trace.size()}}));
  ASSERT_EQ(run->violations.size(), 1u);
  EXPECT_EQ(run->violations[0].invariant, "stage_monotonic");
  EXPECT_EQ(run->violations[0].message, "seen by the recorder");
  EXPECT_EQ(run->trace.events()[run->violations[0].event_index].type, "fault_start");
}

}  // namespace
}  // namespace rehearse::sim
