#include "sim/world/spelling.hpp"

#include <algorithm>
#include <cstddef>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& options) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  const std::string word_lower = lower(word);
  for (const auto& option : options) {
    const std::size_t d = edit_distance(word_lower, lower(option));
    if (d < best_distance) {
      best_distance = d;
      best = option;
    }
  }
  // A suggestion is only ever one within the promised distance.
  REHEARSE_ASSERT(!best || best_distance <= std::max<std::size_t>(2, word.size() / 3));
  return best;
}

}  // namespace rehearse::sim
