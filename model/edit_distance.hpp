// Levenshtein distance, for "did you mean" in error messages: the policy
// converters' key hints (model/policy_forms_readers.cpp) and the simulator's
// spelling suggestions (sim/world/spelling.hpp).
#pragma once

#include <cstddef>
#include <string_view>

namespace rehearse {

// Insertions, deletions and substitutions, each of cost 1.
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace rehearse
