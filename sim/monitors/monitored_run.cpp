#include "sim/monitors/monitored_run.hpp"

#include <memory>
#include <utility>

namespace rehearse::sim {

Result<ScenarioRunResult> run_scenario(const Scenario& scenario, RunOptions options) {
  return run_world(scenario, std::move(options), [](const Scenario& watched) {
    return std::unique_ptr<RunObserver>(std::make_unique<MonitorSet>(watched));
  });
}

}  // namespace rehearse::sim
