// "Did you mean" for names a user typed: a scenario's keys and ids, a
// subcommand. The nearest candidate within a small edit distance, compared
// without regard to case ("done" suggests "DONE").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/edit_distance.hpp"

namespace rehearse::sim {

// Levenshtein distance (insertions, deletions, substitutions).
using rehearse::edit_distance;

// The candidate nearest `word` when it is within max(2, |word| / 3) edits.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& options);

}  // namespace rehearse::sim
