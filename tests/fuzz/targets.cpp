// The table of targets (the regression replay walks it; each libFuzzer
// binary links only its own check).
#include <array>

#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

constexpr std::array<Target, 9> kTargets{{
    {"cron", check_cron},
    {"time", check_time},
    {"policy", check_policy},
    {"scenario", check_scenario},
    {"state_codec", check_state_codec},
    {"state_store", check_state_store},
    {"ledger", check_ledger},
    {"pipeline", check_pipeline},
    {"policy_syntax", check_policy_syntax},
}};

}  // namespace

std::span<const Target> targets() { return kTargets; }

}  // namespace rehearse::fuzz
