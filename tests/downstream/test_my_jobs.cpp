// A user's own tests with rehearse::testing (docs/library.md), exactly as a
// project that did find_package(rehearse REQUIRED COMPONENTS testing) writes
// them: a property over generated worlds on the real core, generated faults
// on top of one of the user's scenarios, a scripted scenario and a seed
// sweep, and what a failure says.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/testing/generators.hpp"
#include "sim/testing/gtest.hpp"
#include "sim/testing/property.hpp"

namespace {

using nlohmann::json;
namespace gen = rehearse::testing::gen;

const std::string kOutage = std::string(MY_SCENARIOS) + "/my-api-outage.json";

json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// Our services see outages, errors and restarts.
rehearse::testing::FaultLimits our_faults() {
  rehearse::testing::FaultLimits limits;
  limits.kinds = {"quota_exhausted", "http_errors", "timeouts", "network_errors", "restart"};
  return limits;
}

// Any world of up to two jobs over six hours: every invariant holds.
REHEARSE_PROP(MyJobs, GeneratedWorldsHold, ()) {
  rehearse::testing::ScenarioLimits limits;
  limits.max_jobs = 2;
  limits.max_span_hours = 6;
  limits.faults = our_faults();
  const json doc = *gen::scenario(limits);
  REHEARSE_RC_ASSERT_HOLDS(doc);
}

// Our own scenario, with up to three more faults drawn on top.
REHEARSE_PROP(MyJobs, OurScenarioHoldsUnderMoreFaults, ()) {
  rehearse::testing::FaultLimits limits = our_faults();
  limits.max_faults = 3;
  const json doc = *gen::with_faults(read_json(kOutage), limits);
  REHEARSE_RC_ASSERT_HOLDS(doc);
}

TEST(MyJobs, ScriptedOutageHolds) {
  REHEARSE_EXPECT_SCENARIO_HOLDS(kOutage);
  // The swarm of `rehearse check` over our scenario, seeds 1..8.
  REHEARSE_EXPECT_SWARM_HOLDS(kOutage, (rehearse::testing::SeedRange{1, 8}));
  REHEARSE_EXPECT_SEEDS_HOLD(kOutage, (rehearse::testing::SeedRange{1, 4}));
}

// A failure names the invariant and the command that replays it.
TEST(MyJobs, FailureNamesTheInvariantAndTheReplay) {
  json doc = read_json(kOutage);
  doc["scenario"] = "too-few-events";
  doc["queue"] = {{"max_events", 40}};  // far fewer than nine hours need: bounded_run
  doc.erase("expect");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SCENARIO_HOLDS(doc, 3),
                          "invariant(s) violated: bounded_run");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SCENARIO_HOLDS(doc, 3),
                          "rehearse run too-few-events.json --seed 3");
}

}  // namespace
