// Text broken at spaces for pictures whose lines have a width in characters
// (the SVG outputs of `rehearse tune`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rehearse::cli {

// `text` broken at spaces into lines of at most `width` characters; a word
// longer than `width` stands on a line of its own.
std::vector<std::string> wrap_words(const std::string& text, std::size_t width);

}  // namespace rehearse::cli
