// deterministic (cross): the same scenario and seed give the same trace.
// It reads no single event: compare_traces() compares two runs' JSON Lines.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/kernel/trace.hpp"
#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class Deterministic final : public Monitor {
 public:
  static constexpr const char* kName = "deterministic";
  static constexpr const char* kSummary = "the same seed gives the same trace, byte for byte";
  static std::vector<std::string> reads() { return {}; }

  Deterministic(const Scenario&, MonitorContext&) {}
  Violations observe(const TraceEvent&, std::size_t) override { return {}; }
};

// The first differing line (or the first extra one) of two traces' JSON Lines.
std::optional<Violation> compare_traces(const Trace& a, const Trace& b);

}  // namespace rehearse::sim
