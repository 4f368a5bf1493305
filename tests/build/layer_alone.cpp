// Each layer links with only the layers below it: this program is linked
// from the object files of sim/world and sim/kernel alone (every object, not
// archive members pulled on demand), so a symbol of a layer above that the
// world uses, even one declared in a world header, fails the link.
// It loads the scenario file it is given, as the world's loader would.
#include <cstdio>

#include "sim/world/scenario.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto scenario = rehearse::sim::load_scenario_file(argv[1]);
  if (!scenario.ok()) {
    std::fprintf(stderr, "%s\n", scenario.error().describe().c_str());
    return 1;
  }
  std::printf("layer alone: loaded %s\n", scenario->name.c_str());
  return 0;
}
