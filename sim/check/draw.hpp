// Drawing from lists with the run's seeded generator, shared by the swarm's
// derivation (sim/check/swarm.cpp) and the generated worlds
// (sim/check/generate*.cpp), so both draw the same way from the same stream.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/kernel/rng.hpp"

namespace rehearse::sim {

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& from) {
  REHEARSE_ASSERT(!from.empty());  // every table drawn from is built non-empty
  return from[rng.next_below(from.size())];
}

// A non-empty subset, in declared order: each element with probability 1/2.
inline nlohmann::json pick_subset(Rng& rng, const std::vector<std::string>& from) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& x : from) {
    if (rng.next_bool(0.5)) out.push_back(x);
  }
  if (out.empty()) out.push_back(pick(rng, from));
  // A subset: at most every element once.
  REHEARSE_ASSERT_LE(out.size(), from.size());
  return out;
}

}  // namespace rehearse::sim
