// Goal: the invariant monitors are one class per invariant behind one
// registry (docs/monitors.md "Where each monitor lives"):
// - the registry's names are invariant_names(), in order, and its reads are
//   invariant_specs()' (the loader and the schema take them from there);
// - MonitorSet hands each monitor only the event types it declares (a derived
//   fact counts as the world record it is read from, fact_source()): every
//   registered monitor is wrapped in a recording decorator and the bundled
//   scenarios' traces are replayed through it; the wrapped set also finds
//   exactly what the plain set finds;
// - the shared slot tracker's typed states move as its header documents.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/monitors/job_table.hpp"
#include "sim/monitors/monitor_set.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/monitors/run_facts.hpp"
#include "sim/monitors/slot_tracker.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

TEST(MonitorRegistry, NamesAndReadsComeFromTheMonitorClasses) {
  std::vector<std::string> names;
  for (const MonitorFactory& f : monitor_registry()) names.push_back(f.name);
  EXPECT_EQ(names, invariant_names());
  ASSERT_EQ(invariant_specs().size(), monitor_registry().size());
  for (std::size_t k = 0; k < monitor_registry().size(); ++k) {
    EXPECT_EQ(invariant_specs()[k].name, monitor_registry()[k].name);
    EXPECT_EQ(invariant_specs()[k].reads, monitor_registry()[k].reads);
  }
  EXPECT_EQ(names.front(), "stage_monotonic");
  EXPECT_EQ(names.back(), "bounded_run");
}

TEST(MonitorRegistry, DerivedFactsAreReadAsTheWorldRecordsTheyComeFrom) {
  EXPECT_EQ(fact_source("run_started"), "queue_take");
  EXPECT_EQ(fact_source("run_finished"), "queue_done");
  EXPECT_EQ(fact_source("retry_dropped"), "queue_done");
  EXPECT_EQ(fact_source("retry_superseded"), "queue_cancel");
  EXPECT_EQ(fact_source("retry_scheduled"), "outbox_add");
  EXPECT_EQ(fact_source("state_corrupt"), "outbox_add");
  EXPECT_EQ(fact_source("disk_write"), "disk_write");
}

// What a wrapped monitor was handed: each event type (a derived fact under
// its own name: run_started, retry_scheduled, ...).
struct Handed {
  std::map<std::string, std::set<std::string>> types;  // monitor -> types read
};

class Recording final : public Monitor {
 public:
  Recording(std::string name, std::unique_ptr<Monitor> inner, Handed& handed)
      : name_(std::move(name)), inner_(std::move(inner)), handed_(handed) {}
  Violations observe(const TraceEvent& e, std::size_t i) override {
    handed_.types[name_].insert(e.type);
    return inner_->observe(e, i);
  }
  Violations finish(TimeMs until) override { return inner_->finish(until); }
  void tally(json& t) const override { inner_->tally(t); }

 private:
  std::string name_;
  std::unique_ptr<Monitor> inner_;
  Handed& handed_;
};

std::vector<MonitorFactory> recording_registry(Handed& handed) {
  std::vector<MonitorFactory> out;
  for (const MonitorFactory& f : monitor_registry()) {
    out.push_back({f.name, f.summary, f.reads, [f, &handed](const Scenario& s, MonitorContext& c) {
                     return std::unique_ptr<Monitor>(
                         std::make_unique<Recording>(f.name, f.make(s, c), handed));
                   }});
  }
  return out;
}

std::string describe(const std::vector<Violation>& vs) {
  std::string out;
  for (const Violation& v : vs) {
    out += v.invariant + "@" + std::to_string(v.event_index) + ": " + v.message + "\n";
  }
  return out;
}

TEST(MonitorRegistry, EachMonitorReceivesOnlyWhatItDeclares) {
  Handed handed;
  std::set<std::string> seen_types;
  const std::filesystem::path dir = std::filesystem::path(REHEARSE_SOURCE_DIR) / "scenarios";
  int scenarios = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    auto scenario = load_scenario_file(entry.path().string());
    ASSERT_TRUE(scenario.ok()) << entry.path();
    auto run = run_scenario(*scenario);
    ASSERT_TRUE(run.ok()) << entry.path();
    ++scenarios;
    MonitorSet plain(*scenario);
    MonitorSet wrapped(*scenario, recording_registry(handed));
    const auto& events = run->trace.events();
    for (std::size_t i = 0; i < events.size(); ++i) {
      seen_types.insert(events[i].type);
      const auto a = plain.observe(events[i], i);
      const auto b = wrapped.observe(events[i], i);
      ASSERT_EQ(a.has_value(), b.has_value()) << entry.path() << " event " << i;
    }
    plain.finish(scenario->until_ms);
    wrapped.finish(scenario->until_ms);
    EXPECT_EQ(describe(plain.violations()), describe(wrapped.violations())) << entry.path();
    EXPECT_EQ(plain.tallies().dump(), wrapped.tallies().dump()) << entry.path();
  }
  ASSERT_GT(scenarios, 10);
  for (const MonitorFactory& f : monitor_registry()) {
    const std::set<std::string> reads(f.reads.begin(), f.reads.end());
    if (reads.count("*") != 0) {
      // Every raw event (the core's lines included: their text may leak a
      // secret), and nothing derived.
      EXPECT_EQ(handed.types[f.name], seen_types) << f.name;
      continue;
    }
    for (const std::string& type : handed.types[f.name]) {
      EXPECT_EQ(reads.count(std::string(fact_source(type))), 1u)
          << f.name << " was handed " << type << " (read as " << fact_source(type) << ")";
    }
    if (!reads.empty()) {
      EXPECT_FALSE(handed.types[f.name].empty()) << f.name << " got nothing";
    }
  }
  EXPECT_TRUE(handed.types["deterministic"].empty());
}

// ------------------------------------------------------------ slot tracker

const TimeMs kSlot = 1'000'000'000'000;

Scenario one_job() {
  Scenario s;
  s.start_ms = kSlot - 1000;
  s.until_ms = kSlot + 24 * 3600 * 1000;
  JobSpec job;
  job.id = "digest";
  job.kind = JobKind::group;
  job.schedule = "0 * * * *";
  job.retry_policy = json{{"attempts", 3}, {"backoff", {{"type", "fixed"}, {"delay", "10m"}}}};
  s.jobs = {job};
  return s;
}

TraceEvent fact(const std::string& type, TimeMs slot, json data = json::object()) {
  TraceEvent e;
  e.t = slot;
  e.type = type;
  e.job = "digest";
  e.slot = slot;
  e.data = std::move(data);
  return e;
}

SlotState state_of(const SlotTracker& tracker, TimeMs slot) {
  const SlotWatch* w = tracker.find("digest", slot);
  EXPECT_NE(w, nullptr);
  return w == nullptr ? SlotState::handed : w->state;
}

TEST(SlotTracker, AFailedSlotRetriedThenDelivered) {
  const Scenario sc = one_job();
  const JobTable jobs(sc);
  SlotTracker tracker(jobs);
  std::size_t i = 0;
  tracker.observe(fact("queue_add", kSlot, {{"kind", "regular"}}), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::handed);
  tracker.observe(fact("run_started", kSlot, {{"kind", "regular"}}), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::running);
  tracker.observe(
      fact("run_finished", kSlot, {{"outcome", "failure"}, {"failure_class", "network"}}), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::failed);
  EXPECT_EQ(tracker.find("digest", kSlot)->last_failure_class, "network");
  tracker.observe(fact("retry_scheduled", kSlot), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::retry_pending);
  tracker.observe(fact("run_started", kSlot, {{"kind", "retry"}}), ++i);
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "success"}}), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::delivered);
  EXPECT_EQ(tracker.find("digest", kSlot)->runs, 2);
  EXPECT_EQ(tracker.job("digest")->final_status, "ok");
  // A superseded retry only replaces a pending retry or a failure.
  tracker.observe(fact("retry_superseded", kSlot), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::delivered);
}

TEST(SlotTracker, AMarkerSurvivesTheRunAndMakesTheSuccessASkip) {
  const Scenario sc = one_job();
  const JobTable jobs(sc);
  SlotTracker tracker(jobs);
  tracker.observe(fact("queue_add", kSlot, {{"kind", "regular"}}), 1);
  tracker.observe(fact("durable_delivery", kSlot, {{"verdict", "skipped"}}), 2);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::marked_skipped);
  tracker.observe(fact("run_started", kSlot, {{"kind", "regular"}}), 3);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::marked_skipped);
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "success"}}), 4);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::skipped);
}

TEST(SlotTracker, EndsOfAFailedSlotAndCoalescedFirings) {
  const Scenario sc = one_job();
  const JobTable jobs(sc);
  SlotTracker tracker(jobs);
  const TimeMs next = kSlot + 3600 * 1000;
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "failure"}}), 1);
  tracker.observe(fact("retry_scheduled", kSlot), 2);
  tracker.observe(fact("retry_superseded", kSlot), 3);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::superseded);
  tracker.observe(fact("retry_exhausted", next), 4);
  EXPECT_EQ(state_of(tracker, next), SlotState::exhausted);
  EXPECT_EQ(tracker.job("digest")->final_status, "retry_exhausted");
  tracker.observe(fact("failed_permanent", next), 5);
  EXPECT_EQ(state_of(tracker, next), SlotState::failed_permanent);
  tracker.observe(fact("retry_dropped", next), 6);
  EXPECT_EQ(state_of(tracker, next), SlotState::retry_dropped);
  // Firings folded into a late run: unknown ones become coalesced, a known
  // slot keeps its fate.
  const TimeMs later = next + 3600 * 1000;
  tracker.mark_coalesced("digest", kSlot, {next, later}, 7);
  EXPECT_EQ(state_of(tracker, next), SlotState::retry_dropped);
  EXPECT_EQ(state_of(tracker, later), SlotState::coalesced);
  EXPECT_EQ(tracker.find("digest", later)->carried_by, kSlot);
  // An unknown job's events make no slot.
  TraceEvent stranger = fact("queue_add", kSlot, {{"kind", "regular"}});
  stranger.job = "nobody";
  tracker.observe(stranger, 8);
  EXPECT_FALSE(tracker.known("nobody", kSlot));
  EXPECT_STREQ(to_string(SlotState::retry_pending), "retry_pending");
}

// A fleet job (no slot history): a finished slot leaves the SlotWatch table
// for a compact record that keeps what the monitors read, and comes back
// whole when an event touches it again.
TEST(SlotTracker, AFleetJobsFinishedSlotsAreKeptCompactly) {
  Scenario sc = one_job();
  sc.jobs[0].from_fleet = true;
  const JobTable jobs(sc);
  SlotTracker tracker(jobs);
  const TimeMs next = kSlot + 3600 * 1000;
  std::size_t i = 0;
  tracker.observe(fact("queue_add", kSlot, {{"kind", "regular"}}), ++i);
  tracker.observe(fact("run_started", kSlot, {{"kind", "regular"}}), ++i);
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "failure"}, {"failure_class", "quota"}}),
                  ++i);
  EXPECT_EQ(tracker.finished_compact(), 0u);  // failed: something must still follow
  tracker.observe(fact("retry_scheduled", kSlot), ++i);
  tracker.observe(fact("run_started", kSlot, {{"kind", "retry"}}), ++i);
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "success"}}), ++i);
  tracker.observe(fact("queue_add", next, {{"kind", "regular"}}), ++i);
  tracker.observe(fact("retry_exhausted", next), ++i);
  EXPECT_EQ(tracker.finished_compact(), 2u);
  EXPECT_TRUE(tracker.watched().empty());
  const SlotWatch* w = tracker.find("digest", kSlot);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->state, SlotState::delivered);
  EXPECT_EQ(w->runs, 2);
  EXPECT_EQ(w->last_failure_class, "quota");
  EXPECT_EQ(w->last_failure_t, kSlot);
  EXPECT_FALSE(w->stalled);
  EXPECT_TRUE(w->attempt_at.empty());  // no slot history
  // The durable record's stall reaches the compact slot.
  TraceEvent durable = fact("durable_job_state", kSlot);
  durable.data = {{"slots", {{format_instant(kSlot), {{"stalled_count", 1}}}}}};
  tracker.observe(durable, ++i);
  EXPECT_TRUE(tracker.find("digest", kSlot)->stalled);
  EXPECT_EQ(tracker.finished_compact(), 2u);
  // at() brings it back whole; the next observed event settles it again.
  EXPECT_EQ(tracker.at("digest", kSlot).runs, 2);
  EXPECT_EQ(tracker.finished_compact(), 1u);
  tracker.observe(fact("run_started", kSlot, {{"kind", "regular"}}), ++i);
  EXPECT_EQ(state_of(tracker, kSlot), SlotState::running);
  EXPECT_EQ(tracker.find("digest", kSlot)->runs, 3);
  EXPECT_TRUE(tracker.find("digest", kSlot)->stalled);
  tracker.observe(fact("run_finished", kSlot, {{"outcome", "success"}}), ++i);
  EXPECT_EQ(tracker.finished_compact(), 2u);
  // Records and tallies count both kinds; no per-slot list without history.
  const std::vector<SlotRecord> records = tracker.records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].slot, kSlot);
  EXPECT_EQ(records[1].state, SlotState::exhausted);
  json tallies;
  tracker.tally(tallies);
  EXPECT_EQ(tallies["jobs"]["digest"]["delivered_slots"], 1);
  EXPECT_EQ(tallies["jobs"]["digest"]["exhausted_slots"], 1);
  EXPECT_FALSE(tallies["jobs"]["digest"].contains("slots"));
}

// A listed job, and a fleet job whose expect names its slots, keep every
// slot whole with its history.
TEST(SlotTracker, JobsWithSlotHistoryKeepEverySlotWhole) {
  for (const bool named_in_expect : {false, true}) {
    Scenario sc = one_job();
    sc.jobs[0].from_fleet = named_in_expect;
    if (named_in_expect) sc.expect.jobs["digest"].slots = std::vector<SlotExpectation>{};
    const JobTable jobs(sc);
    SlotTracker tracker(jobs);
    tracker.observe(fact("run_started", kSlot, {{"kind", "regular"}}), 1);
    tracker.observe(fact("run_finished", kSlot, {{"outcome", "success"}}), 2);
    EXPECT_EQ(tracker.finished_compact(), 0u);
    EXPECT_EQ(tracker.watched().size(), 1u);
    json tallies;
    tracker.tally(tallies);
    EXPECT_EQ(tallies["jobs"]["digest"]["slots"][0]["attempt_at"].size(), 1u);
  }
}

}  // namespace
}  // namespace rehearse::sim
