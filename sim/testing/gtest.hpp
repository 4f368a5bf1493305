// GoogleTest helpers (docs/library.md): run a scenario on the real core in
// the simulated world and fail the test with the violated invariant(s), the
// first message and the replay command.
//
//   REHEARSE_EXPECT_SCENARIO_HOLDS("scenarios/my-api-outage.json");
//   REHEARSE_EXPECT_SCENARIO_HOLDS("scenarios/my-api-outage.json", 7);  // seed 7
//   REHEARSE_ASSERT_SCENARIO_HOLDS(doc);         // a JSON document
//   REHEARSE_EXPECT_SWARM_HOLDS("scenarios/x.json", (rehearse::testing::SeedRange{1, 50}));
//   REHEARSE_EXPECT_SEEDS_HOLD("scenarios/x.json", (rehearse::testing::SeedRange{1, 50}));
//
// The macros stream like EXPECT_*: `REHEARSE_EXPECT_SCENARIO_HOLDS(p) << "context";`.
// The functions return a ::testing::AssertionResult for EXPECT_TRUE and
// friends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/testing/check.hpp"

namespace rehearse::testing {

// success, or failure carrying describe(outcome).
::testing::AssertionResult to_assertion(const CheckOutcome& outcome);

::testing::AssertionResult scenario_holds(const std::string& path,
                                          std::optional<std::uint64_t> seed = std::nullopt,
                                          const CheckOptions& options = {});
::testing::AssertionResult scenario_holds(const char* path,
                                          std::optional<std::uint64_t> seed = std::nullopt,
                                          const CheckOptions& options = {});
::testing::AssertionResult scenario_holds(const nlohmann::json& doc,
                                          std::optional<std::uint64_t> seed = std::nullopt,
                                          const CheckOptions& options = {});

// The swarm search (check_swarm: a derived world per seed, as `rehearse
// check` runs it): every failing seed (the first few in full), or success.
::testing::AssertionResult swarm_holds(const std::string& path, SeedRange seeds);
// The scenario itself once per seed of the range (check_seeds), likewise.
::testing::AssertionResult seeds_hold(const std::string& path, SeedRange seeds,
                                      const CheckOptions& options = {});

}  // namespace rehearse::testing

// (The switch keeps a caller's `if (x) MACRO(...); else ...` unambiguous, as in gtest.)
#define REHEARSE_TESTING_CHECK_(call, on_failure)                           \
  switch (0)                                                                \
  case 0:                                                                   \
  default:                                                                  \
    if (const ::testing::AssertionResult rehearse_testing_result_ = call) { \
    } else                                                                  \
      on_failure() << rehearse_testing_result_.message()

#define REHEARSE_EXPECT_SCENARIO_HOLDS(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::scenario_holds(__VA_ARGS__), ADD_FAILURE)
#define REHEARSE_ASSERT_SCENARIO_HOLDS(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::scenario_holds(__VA_ARGS__), FAIL)
#define REHEARSE_EXPECT_SWARM_HOLDS(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::swarm_holds(__VA_ARGS__), ADD_FAILURE)
#define REHEARSE_ASSERT_SWARM_HOLDS(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::swarm_holds(__VA_ARGS__), FAIL)
#define REHEARSE_EXPECT_SEEDS_HOLD(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::seeds_hold(__VA_ARGS__), ADD_FAILURE)
#define REHEARSE_ASSERT_SEEDS_HOLD(...) \
  REHEARSE_TESTING_CHECK_(::rehearse::testing::seeds_hold(__VA_ARGS__), FAIL)
