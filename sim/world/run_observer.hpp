// What watches a run from outside the world: the world hands an observer
// every trace event and every log line as they are recorded, the secrets and
// locked directories it learns, and the end of the run; the observer answers
// with the violations it saw and its tallies.
//
// The world layer declares the interface and never knows who implements it:
// the invariant monitors (sim/monitors/monitor_set.hpp) sit a layer above and
// plug in through run_world()'s factory, so the world cannot read their
// opinions back into the run, and they cannot reach into the world.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

struct Scenario;

struct Violation {
  std::string invariant;    // one of invariant_names() (sim/world/scenario.hpp)
  std::size_t event_index;  // the event that showed it (end checks: trace size)
  TimeMs t;                 // virtual time of that event
  std::string message;      // what was seen, in words a user can act on (job/slot/item named)
};
using Violations = std::vector<Violation>;

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // A token value as issued: a secret from the moment it exists.
  virtual void add_secret(std::string value) = 0;
  // A directory the world keeps a locked store in: its files change only
  // under a lock taken in it.
  virtual void add_locked_store(std::string dir) = 0;
  // Every recorded event, in order; the first violation it shows.
  virtual std::optional<Violation> observe(const TraceEvent& event, std::size_t index) = 0;
  // Text that is not a trace event (log lines, reports).
  virtual std::optional<Violation> observe_text(std::string_view text, std::size_t index,
                                                TimeMs t) = 0;
  // The end checks of a run that reached `until`.
  virtual std::vector<Violation> finish(TimeMs until_ms) = 0;
  // What the observer counted, for the run's result.
  virtual nlohmann::json tallies() const = 0;
  // Every violation seen so far, in order; only ever appended to.
  virtual const std::vector<Violation>& violations() const noexcept = 0;
};

// Builds the observer of one run from its scenario.
using RunObserverFactory = std::function<std::unique_ptr<RunObserver>(const Scenario&)>;

}  // namespace rehearse::sim
