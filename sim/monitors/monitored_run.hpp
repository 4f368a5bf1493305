// A run of a scenario watched by the invariant monitors: the world of
// sim/world/world.hpp with a MonitorSet (sim/monitors/monitor_set.hpp) as its
// observer. What every command, check and report runs.
#pragma once

#include "sim/monitors/monitor_set.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

// Runs one scenario once under the monitors of monitor_registry(). Errors
// (exit 2 for a CLI): a job or fault kind this build cannot run. Everything
// that happens inside the run (violations, failures) is in the result.
Result<ScenarioRunResult> run_scenario(const Scenario& scenario, RunOptions options = {});

}  // namespace rehearse::sim
