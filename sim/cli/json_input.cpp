#include "sim/cli/json_input.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "model/assert.hpp"
#include "model/policy_text.hpp"

namespace rehearse::cli {

std::string line_column(const std::string& text, std::size_t byte_offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte_offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  // Each byte before the offset moves one of them on by one.
  const std::size_t read = std::min(byte_offset, text.size());
  REHEARSE_ASSERT_LE(line - 1 + column - 1, read);
  return fmt::format("{}:{}", line, column);
}

Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, fmt::format("cannot read the {}", what), path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<TextInput> read_argument_text(const std::string& arg) {
  // "@FILE"; a decorator such as "@app.task(...)" is the text itself.
  const auto reference = policy_file_reference(arg);
  if (!reference) return TextInput{arg, "POLICY"};
  const std::string& path = *reference;
  auto text = read_text_file(path, "policy file");
  if (!text) return std::move(text).error();
  // "@" alone opens nothing: a file read has a name to put in its errors.
  REHEARSE_ASSERT(!path.empty());
  return TextInput{std::move(text).value(), path};
}

Result<JsonInput> read_json_argument(const std::string& arg,
                                     const std::vector<std::string>& bare_words) {
  JsonInput out;
  for (const auto& w : bare_words) {
    if (arg == w) {
      out.value = w;
      out.origin = "POLICY";
      return out;
    }
  }
  auto input = read_argument_text(arg);
  if (!input) return std::move(input).error();
  const std::string& text = input->text;
  out.origin = input->origin;
  try {
    out.value = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's byte is 1-based past the offending character.
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    return make_error(ErrorCode::parse_error,
                      fmt::format("invalid JSON (expected a policy object or \"auto\")"),
                      fmt::format("{}:{}", out.origin, line_column(text, offset)));
  }
  REHEARSE_ASSERT(!out.origin.empty());  // errors about the value name where it came from
  return out;
}

}  // namespace rehearse::cli
