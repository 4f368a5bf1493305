#include "sim/world/spelling.hpp"

#include <algorithm>
#include <cstddef>

#include "model/assert.hpp"

namespace rehearse::sim {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  // At least the length difference, at most the longer length.
  const std::size_t longer = a.size() > b.size() ? a.size() : b.size();
  const std::size_t shorter = a.size() > b.size() ? b.size() : a.size();
  REHEARSE_ASSERT_LE(row[b.size()], longer);
  REHEARSE_ASSERT_GE(row[b.size()], longer - shorter);
  return row[b.size()];
}

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
