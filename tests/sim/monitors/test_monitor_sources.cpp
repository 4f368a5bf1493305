// Goal: the monitors are witnesses of the world, not of the core's words. The
// trace records each event's source (EventSource: the world -- services, queue,
// disk, messenger, brokerage, the world runner -- or the core through SimLog),
// and the monitors declare what they read (each monitor class's reads(),
// collected by the registry into invariant_specs(); shared_reads(); MonitorSet
// routes each event only to the monitors that read it,
// tests/sim/monitors/test_monitor_registry.cpp checks the routing).
// Method: run every bundled scenario, learn each event type's source from the
// trace, and check the declared subscriptions against it: a type is recorded
// by one source only; every declared type is known; and the core's event types
// still read are exactly the list below, which may only shrink (each entry is
// a witness not yet rebuilt on world facts; docs/monitors.md names them).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/monitors/monitor_set.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

// The core's log events the monitors still read: none (the last one,
// state_tail_dropped, gave way to the world's journal_tail_* records). Never
// add to this list.
const std::set<std::string> kCoreStillRead{};

// Monitors that read world facts only: none of their subscriptions may be a
// core event.
const std::set<std::string> kWorldOnly{"token_reissue_bounded", "no_secret_leak", "deterministic",
                                       "queue_discipline", "bounded_run"};

std::map<std::string, std::set<EventSource>> sources_in_bundled_scenarios() {
  std::map<std::string, std::set<EventSource>> sources;
  const std::filesystem::path dir = std::filesystem::path(REHEARSE_SOURCE_DIR) / "scenarios";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    auto scenario = load_scenario_file(entry.path().string());
    EXPECT_TRUE(scenario.ok()) << entry.path();
    if (!scenario.ok()) continue;
    auto run = run_scenario(*scenario);
    EXPECT_TRUE(run.ok()) << entry.path();
    if (!run.ok()) continue;
    for (const TraceEvent& e : run->trace.events()) sources[e.type].insert(e.source);
  }
  return sources;
}

std::set<std::string> declared_reads(const std::string& only_invariant = {}) {
  std::set<std::string> reads;
  if (only_invariant.empty()) reads.insert(shared_reads().begin(), shared_reads().end());
  for (const InvariantSpec& spec : invariant_specs()) {
    if (!only_invariant.empty() && spec.name != only_invariant) continue;
    for (const std::string& t : spec.reads) {
      if (t != "*") reads.insert(t);
    }
  }
  return reads;
}

TEST(MonitorSources, TheInvariantNamesComeFromTheMonitorsTable) {
  std::vector<std::string> names;
  for (const InvariantSpec& spec : invariant_specs()) names.push_back(spec.name);
  EXPECT_EQ(names, invariant_names());
}

TEST(MonitorSources, NoMonitorReadsACoreEventBeyondTheShrinkingList) {
  const auto sources = sources_in_bundled_scenarios();
  ASSERT_FALSE(sources.empty());
  // One source per type, so a type's source is a fact about the type.
  for (const auto& [type, from] : sources) EXPECT_EQ(from.size(), 1u) << type;
  const auto is_core = [&](const std::string& type) {
    const auto it = sources.find(type);
    if (it != sources.end()) return it->second.count(EventSource::core) != 0;
    // Not seen in a bundled scenario: a core event unless the world's own
    // vocabulary (services, queue, disk, messenger, brokerage, world runner).
    static const std::set<std::string> kWorldUnseen{
        "disk_corrupted", "disk_crash",         "disk_process_crashed", "store_corrupt_injected",
        "auth_rejected",  "token_issue_failed", "message_refused",      "disk_remove",
        "queue_cancel",   "disk_fail_stop"};
    return kWorldUnseen.count(type) == 0;
  };
  std::set<std::string> core_read;
  for (const std::string& type : declared_reads()) {
    if (is_core(type)) core_read.insert(type);
  }
  EXPECT_EQ(core_read, kCoreStillRead);
  for (const std::string& invariant : kWorldOnly) {
    for (const std::string& type : declared_reads(invariant)) {
      EXPECT_FALSE(is_core(type)) << invariant << " reads the core's " << type;
    }
  }
}

// The subscription is enforced: an event type no monitor declares never
// reaches a check (here the core's own `task_result`, which would otherwise
// be the easy way to judge a group's verdict by the core's words).
TEST(MonitorSources, AnUndeclaredEventReachesNoCheck) {
  for (const std::string& type : declared_reads()) EXPECT_NE(type, "task_result");
  Scenario sc;
  sc.start_ms = 0;
  sc.until_ms = 1000;
  MonitorSet set(sc);
  TraceEvent e;
  e.type = "task_result";
  e.source = EventSource::core;
  EXPECT_FALSE(set.observe(e, 0).has_value());
  EXPECT_EQ(set.tallies()["jobs"].size(), 0u);
}

}  // namespace
}  // namespace rehearse::sim
