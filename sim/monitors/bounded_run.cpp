#include "sim/monitors/bounded_run.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

BoundedRun::BoundedRun(const Scenario& scenario, MonitorContext& context)
    : context_(context), max_events_(scenario.queue.max_events) {}

Violations BoundedRun::observe(const TraceEvent& e, std::size_t i) {
  if (fired_ || static_cast<std::int64_t>(context_.events_seen) <= max_events_) return {};
  // Fires once, after the bound was passed: at least one event was counted.
  REHEARSE_ASSERT_GE(context_.events_seen, 1u);
  fired_ = true;
  return {{kName, i, e.t,

           fmt::format("the run passed its bound of {} trace events (queue.max_events): a "
                       "scenario meant to run this long needs a larger queue.max_events; a "
                       "short one that loops points at the core",
                       max_events_)}};
}

}  // namespace rehearse::sim
