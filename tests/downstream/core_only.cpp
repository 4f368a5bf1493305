// The core alone (tests/downstream, DOWNSTREAM_CORE_ONLY): a program that
// links rehearse::sim without the testing component, loads a scenario and
// runs it. Exit 0: every invariant held; 1: one did not; 2: it did not load.
#include <cstdio>

#include "sim/monitors/monitored_run.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto scenario = rehearse::sim::load_scenario_file(argv[1]);
  if (!scenario) {
    std::fprintf(stderr, "%s\n", scenario.error().describe().c_str());
    return 2;
  }
  auto run = rehearse::sim::run_scenario(*scenario);
  return run && run->violations.empty() && run->errors.empty() ? 0 : 1;
}
