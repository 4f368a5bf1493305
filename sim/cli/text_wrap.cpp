#include "sim/cli/text_wrap.hpp"

#include "model/assert.hpp"

namespace rehearse::cli {

std::vector<std::string> wrap_words(const std::string& text, std::size_t width) {
  std::vector<std::string> lines{""};
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width) lines.push_back("");
    lines.back() += (lines.back().empty() ? "" : " ") + word;
    start = end + 1;
  }
  // A line is longer than `width` only when it is one word that is.
  for (const std::string& line : lines) {
    if (line.size() > width) REHEARSE_ASSERT_EQ(line.find(' '), std::string::npos);
  }
  return lines;
}

}  // namespace rehearse::cli
