// GoogleTest helpers (sim/testing/gtest.hpp).
#include "sim/testing/gtest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "model/assert.hpp"

namespace rehearse::testing {

namespace {

CheckOptions with_seed(CheckOptions options, std::optional<std::uint64_t> seed) {
  if (seed) options.seed = seed;
  return options;
}

// Failing seeds shown in full; the rest are listed by seed only.
constexpr std::size_t kSeedsInFull = 3;

}  // namespace

::testing::AssertionResult to_assertion(const CheckOutcome& outcome) {
  if (outcome.held()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(outcome);
}

::testing::AssertionResult scenario_holds(const std::string& path,
                                          std::optional<std::uint64_t> seed,
                                          const CheckOptions& options) {
  return to_assertion(check_scenario_path(path, with_seed(options, seed)));
}

::testing::AssertionResult scenario_holds(const char* path, std::optional<std::uint64_t> seed,
                                          const CheckOptions& options) {
  return scenario_holds(std::string(path), seed, options);
}

::testing::AssertionResult scenario_holds(const nlohmann::json& doc,
                                          std::optional<std::uint64_t> seed,
                                          const CheckOptions& options) {
  return to_assertion(check_scenario_doc(doc, with_seed(options, seed)));
}

namespace {

// "PATH: F of N seeds failed (seeds A..B)", then each failed one: the first
// few in full, the rest by seed and replay command.
template <typename Outcome>
::testing::AssertionResult seed_failures(const std::string& path, SeedRange seeds,
                                         const std::vector<Outcome>& failed) {
  if (failed.empty()) return ::testing::AssertionSuccess();
  // One outcome per failed seed, or the one of a file that could not be read.
  const std::uint64_t outcomes_max = std::max<std::uint64_t>(seeds.count, 1);
  REHEARSE_ASSERT_LE(failed.size(), outcomes_max);
  std::string message =
      fmt::format("{}: {} of {} seeds failed (seeds {}..{})\n", path, failed.size(), seeds.count,
                  seeds.first, seeds.first + seeds.count - 1);
  for (std::size_t i = 0; i < failed.size(); ++i) {
    if (i < kSeedsInFull) {
      message += describe(failed[i]);
    } else {
      message += fmt::format("seed {}: {}\n", failed[i].seed, failed[i].replay);
    }
  }
  return ::testing::AssertionFailure() << message;
}

}  // namespace

::testing::AssertionResult swarm_holds(const std::string& path, SeedRange seeds) {
  return seed_failures(path, seeds, check_swarm(path, seeds));
}

::testing::AssertionResult seeds_hold(const std::string& path, SeedRange seeds,
                                      const CheckOptions& options) {
  return seed_failures(path, seeds, check_seeds(path, seeds, options));
}

}  // namespace rehearse::testing
