// The registry of invariant monitors: one monitor for each name of the
// scenario format's invariant_names() (sim/world/scenario.hpp, the layer
// below: the loader's `expect.violations` check and the JSON Schema's enum
// read it), in that order, which the registry asserts when it is built.
// Each entry is taken from its monitor class (name, reads, constructor);
// invariant_specs() is derived from it.
#pragma once

#include <string>
#include <vector>

#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

const std::vector<MonitorFactory>& monitor_registry();

// Name and reads of each registered monitor, in registry order.
struct InvariantSpec {
  std::string name;
  std::vector<std::string> reads;
};
const std::vector<InvariantSpec>& invariant_specs();

// The one-line meaning of an invariant (empty for an unknown name).
const std::string& invariant_summary(const std::string& name);

// What the shared trackers read (process up/down, runs, notifications, the
// slot tracker, tallies; sim/monitors/context.hpp).
const std::vector<std::string>& shared_reads();

}  // namespace rehearse::sim
