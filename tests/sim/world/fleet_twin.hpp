// A scenario's fleet twin: the same world with every job marked as generated
// by a fleet block and no per-slot expectation, so the monitors' slot tracker
// keeps no slot-by-slot history and holds finished slots compactly
// (sim/monitors/slot_tracker.hpp). judgement() is what must not change
// between the two runs (tests/sim/world/test_slot_compaction.cpp, test_bug_variants).
#pragma once

#include <string>

#include <fmt/format.h>

#include "sim/world/scenario.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim::twin {

inline Scenario fleet_twin(Scenario scenario) {
  for (JobSpec& job : scenario.jobs) job.from_fleet = true;
  for (auto& [id, expected] : scenario.expect.jobs) expected.slots.reset();
  return scenario;
}

// Tallies without the per-slot lists (the one part a fleet twin omits).
inline nlohmann::json without_slot_lists(nlohmann::json tallies) {
  if (tallies.contains("jobs")) {
    for (auto& [id, job] : tallies["jobs"].items()) job.erase("slots");
  }
  return tallies;
}

// Every violation (invariant, event, message), the counts, the trace hash
// and the tallies without the per-slot lists, as text (gtest prints a diff).
inline std::string judgement(const ScenarioRunResult& run) {
  std::string out = fmt::format("trace {} events {}\n", run.trace_hash, run.events_executed);
  for (const Violation& v : run.all_violations)
    out += fmt::format("{} @{}: {}\n", v.invariant, v.event_index, v.message);
  for (const auto& [name, n] : run.violation_counts) out += fmt::format("{} x{}\n", name, n);
  return out + without_slot_lists(run.tallies).dump(1);
}

}  // namespace rehearse::sim::twin
