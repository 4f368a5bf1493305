#include "sim/cli/json_input.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

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
  return fmt::format("{}:{}", line, column);
}

Result<TextInput> read_argument_text(const std::string& arg) {
  if (arg.empty() || arg.front() != '@') return TextInput{arg, "POLICY"};
  const std::string path = arg.substr(1);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(ErrorCode::not_found, "cannot read the policy file", path);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return TextInput{ss.str(), path};
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
  return out;
}

}  // namespace rehearse::cli
