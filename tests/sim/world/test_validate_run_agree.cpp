// Goal: `rehearse validate` and `rehearse run` accept exactly the same files: a
// file the loader accepts is one the world can run (its preparation never
// refuses it), and a file the world would refuse is refused by the loader
// already, with the place and the reason.
// Method: every bundled scenario and every test data file (good and bad) is
// checked as `validate` checks it (check_scenario_file) and loaded as `run`
// loads it (load_scenario_file); the verdicts must agree, and every loaded
// file is run (run_scenario), which must not refuse it. The bad file
// messenger-service-fault.json (a service fault aimed at the messenger) was
// accepted by validate and refused by run before the loader learnt to refuse
// it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/monitors/monitored_run.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {
namespace {

std::vector<std::string> json_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ValidateAndRun, AcceptExactlyTheSameFiles) {
  const std::string root = REHEARSE_SOURCE_DIR;
  int accepted = 0;
  int refused = 0;
  for (const char* dir :
       {"/scenarios", "/tests/data/scenarios-good", "/tests/data/scenarios-bad"}) {
    for (const std::string& path : json_files(root + dir)) {
      SCOPED_TRACE(path);
      const ScenarioCheck check = check_scenario_file(path);
      auto loaded = load_scenario_file(path);
      ASSERT_EQ(check.valid(), loaded.ok());
      if (!loaded.ok()) {
        ++refused;
        continue;
      }
      RunOptions options;
      options.stop_on_violation = true;
      auto run = run_scenario(*loaded, options);
      EXPECT_TRUE(run.ok()) << "validate accepts it, run refuses it: " << run.error().describe();
      ++accepted;
    }
  }
  EXPECT_GT(accepted, 25);
  EXPECT_GT(refused, 10);
}

}  // namespace
}  // namespace rehearse::sim
