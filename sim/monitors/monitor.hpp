// The interface every invariant monitor implements, and the registry that
// lists them (docs/monitors.md "Where each monitor lives").
//
// One class per invariant (docs/semantics.md §10, plus bounded_run), each in
// its own file under sim/monitors/. A monitor declares the trace event types
// it reads (`reads`); MonitorSet hands it no event outside them: raw world
// events of those types, and the facts the shared trackers derive from them
// (fact_source() names the event type a derived fact is read from: a run's
// start from its `queue_take`, a notification from its `outbox_add`, ...).
// It judges with its own tables and the shared trackers (MonitorContext),
// returns what it saw as violations, checks what is left at the end
// (`finish`) and adds its part of the tallies (`tally`).
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/run_observer.hpp"

namespace rehearse::sim {

class Monitor {
 public:
  virtual ~Monitor() = default;
  // One event (raw, or a fact derived from an event type the monitor reads),
  // in trace order; what it shows.
  virtual Violations observe(const TraceEvent& event, std::size_t index) = 0;
  // End checks after the run stopped at `until` (in-flight work is no violation).
  virtual Violations finish(TimeMs /*until*/) { return {}; }
  // Adds this monitor's counts to the summary (docs/monitors.md "Tallies").
  virtual void tally(nlohmann::json& /*tallies*/) const {}
};

struct MonitorContext;  // the shared trackers (sim/monitors/context.hpp)
struct Scenario;

// One invariant: its name, what its monitor reads ("*": every event's JSON
// line, as no_secret_leak and bounded_run do; none: deterministic compares
// whole traces) and how to build it from the scenario (read in the
// constructor; no reference to it is kept) over the shared trackers. Each entry is
// taken from the monitor class itself (its kName, kSummary, reads()).
struct MonitorFactory {
  std::string name;
  std::string summary;  // one line a report shows beside the name
  std::vector<std::string> reads;
  std::function<std::unique_ptr<Monitor>(const Scenario&, MonitorContext&)> make;
};

}  // namespace rehearse::sim
