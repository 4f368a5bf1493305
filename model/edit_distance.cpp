#include "model/edit_distance.hpp"

#include <algorithm>
#include <vector>

#include "model/assert.hpp"

namespace rehearse {

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

}  // namespace rehearse
