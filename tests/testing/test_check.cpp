// rehearse::testing checks and GoogleTest helpers (sim/testing/check.hpp,
// sim/testing/gtest.hpp, docs/library.md): a scenario that holds passes; a
// violating run fails the test naming the invariant, its first message and
// the replay command; so does a failed expectation or a document that does
// not load; and generated scenarios hold on the real core.
#include <gtest/gtest-spi.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/check/check.hpp"
#include "sim/testing/generators.hpp"
#include "sim/testing/gtest.hpp"
#include "sim/world/policy_files.hpp"
#include "tests/support/property.hpp"

namespace rehearse::testing {
namespace {

using nlohmann::json;

std::string scenario_path(const std::string& name) {
  return std::string(REHEARSE_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

// A scenario file's document, its policy files inline (the document is
// loaded under another name, away from the file's directory).
json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return sim::inline_policy_files(json::parse(ss.str()), path);
}

// my-api-outage with an event bound far below what its nine hours need: the
// real core runs into `bounded_run`, a genuine invariant failure.
json bounded_doc() {
  json doc = read_json(scenario_path("my-api-outage"));
  doc["scenario"] = "my-api-outage-bounded";
  doc["queue"] = {{"max_events", 40}};
  doc.erase("expect");
  return doc;
}

std::string write_temp(const std::string& name, const json& doc) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << doc.dump(2);
  return path;
}

TEST(TestingCheck, BundledScenarioHolds) {
  REHEARSE_EXPECT_SCENARIO_HOLDS(scenario_path("my-api-outage"));
  REHEARSE_EXPECT_SCENARIO_HOLDS(scenario_path("restart-mid-run"), 12345);
  const CheckOutcome o = check_scenario_path(scenario_path("my-api-outage"));
  EXPECT_TRUE(o.held()) << describe(o);
  EXPECT_EQ(describe(o), "");
}

TEST(TestingCheck, ViolationNamesInvariantFirstMessageAndReplay) {
  const CheckOutcome o = check_scenario_doc(bounded_doc(), {.seed = 7});
  EXPECT_FALSE(o.held());
  EXPECT_EQ(o.violations, std::vector<std::string>{"bounded_run"});
  EXPECT_NE(o.first_message, "");
  const std::string text = describe(o);
  EXPECT_NE(text.find("invariant(s) violated: bounded_run"), std::string::npos) << text;
  EXPECT_NE(text.find("first: bounded_run: " + o.first_message), std::string::npos) << text;
  EXPECT_NE(text.find("rehearse run my-api-outage-bounded.json --seed 7"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"max_events\": 40"), std::string::npos) << "the document is shown";
  EXPECT_FALSE(holds(bounded_doc()));
  EXPECT_TRUE(holds(read_json(scenario_path("my-api-outage"))));
}

TEST(TestingCheck, GtestMacroFailsWithInvariantAndReplayCommand) {
  const std::string path = write_temp("bounded.json", bounded_doc());
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SCENARIO_HOLDS(path, 7), "bounded_run");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SCENARIO_HOLDS(path, 7),
                          "replay: rehearse run " + path + " --seed 7");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SCENARIO_HOLDS(bounded_doc()), "bounded_run");
  EXPECT_FATAL_FAILURE(REHEARSE_ASSERT_SCENARIO_HOLDS(scenario_path("my-api-outage") + ".missing"),
                       "does not load");
}

TEST(TestingCheck, ExpectationFailureAndLoadErrorFail) {
  json doc = read_json(scenario_path("my-api-outage"));
  doc["expect"]["jobs"]["invoice-sync"]["delivered_slots"] = 8;  // the run delivers 9
  const CheckOutcome o = check_scenario_doc(doc);
  EXPECT_FALSE(o.held());
  EXPECT_TRUE(o.violations.empty());
  ASSERT_EQ(o.problems.size(), 1u) << describe(o);
  EXPECT_NE(o.problems[0].find("delivered_slots"), std::string::npos) << o.problems[0];

  json bad = doc;
  bad.erase("until");
  const CheckOutcome b = check_scenario_doc(bad);
  EXPECT_FALSE(b.held());
  EXPECT_NE(describe(b).find("does not load"), std::string::npos) << describe(b);
}

TEST(TestingCheck, SeedsReportEveryFailingSeed) {
  const std::string path = write_temp("bounded-seeds.json", bounded_doc());
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SEEDS_HOLD(path, (SeedRange{5, 4})),
                          "4 of 4 seeds failed (seeds 5..8)");
  REHEARSE_EXPECT_SEEDS_HOLD(scenario_path("my-api-outage"), (SeedRange{1, 3}));
}

// The swarm: a derived world per seed, as `rehearse check` runs it; a failure
// names the invariant and the check replay command.
TEST(TestingCheck, SwarmReportsEveryFailingSeedWithTheCheckReplay) {
  const std::string path = write_temp("bounded-swarm.json", bounded_doc());
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SWARM_HOLDS(path, (SeedRange{5, 4})),
                          "4 of 4 seeds failed (seeds 5..8)");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SWARM_HOLDS(path, (SeedRange{5, 1})),
                          "invariant(s) violated: bounded_run");
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SWARM_HOLDS(path, (SeedRange{5, 1})),
                          "replay: " + sim::check_replay_command(path, 5));
  EXPECT_NONFATAL_FAILURE(REHEARSE_EXPECT_SWARM_HOLDS(path + ".missing", (SeedRange{1, 1})),
                          "cannot be read");
  // The range holds seeds 2 and 11 (docs/library.md, "What the generators found").
  REHEARSE_EXPECT_SWARM_HOLDS(scenario_path("my-api-outage"), (SeedRange{1, 12}));
}

// The property helper fails a RapidCheck case with describe()'s message.
TEST(TestingCheck, PropertyAssertionFailsTheCaseWithTheMessage) {
  const auto result = rc::detail::checkTestable([] { REHEARSE_RC_ASSERT_HOLDS(bounded_doc()); });
  ASSERT_TRUE(result.template is<rc::detail::FailureResult>());
  const std::string text = result.template get<rc::detail::FailureResult>().description;
  EXPECT_NE(text.find("bounded_run"), std::string::npos) << text;
  EXPECT_NE(text.find("rehearse run my-api-outage-bounded.json"), std::string::npos) << text;
}

// Generated worlds on the real core: every invariant holds, under every
// fault kind the generators know (FaultLimits' empty kind list), the damaging
// ones included: leaving a kind out here would hide the core's answer to it
// (docs/library.md, "What the generators found").
REHEARSE_PROP(TestingCheck, GeneratedScenariosHoldOnTheRealCore, ()) {
  ScenarioLimits limits;
  limits.max_span_hours = 6;
  const json doc = *gen::scenario(limits);
  REHEARSE_RC_ASSERT_HOLDS(doc);
}

REHEARSE_PROP(TestingCheck, BundledScenariosHoldUnderGeneratedFaults, ()) {
  const std::string name = *rc::gen::elementOf(
      std::vector<std::string>{"my-api-outage", "restart-mid-run", "weekly-quota-2h",
                               "token-revoked-early", "reconcile-migration-404"});
  const json doc = *gen::with_faults(read_json(scenario_path(name)), FaultLimits{});
  REHEARSE_RC_ASSERT_HOLDS(doc);
}

}  // namespace
}  // namespace rehearse::testing
