// Reads a JSON argument given inline or as @FILE, with errors that name the
// file and line:column.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

struct JsonInput {
  nlohmann::json value;
  std::string origin;  // "FILE" or "POLICY" (inline)
};

struct TextInput {
  std::string text;
  std::string origin;  // "FILE" or "POLICY" (inline)
};
// A whole file's bytes; a file that cannot be opened is not_found,
// "cannot read the WHAT", where the path.
Result<std::string> read_text_file(const std::string& path, std::string_view what);

// The text of an argument given inline or as @FILE.
Result<TextInput> read_argument_text(const std::string& arg);

// `bare_words` are accepted unquoted as JSON strings (e.g. auto).
Result<JsonInput> read_json_argument(const std::string& arg,
                                     const std::vector<std::string>& bare_words);

// "line:column" (1-based) of a byte offset in text.
std::string line_column(const std::string& text, std::size_t byte_offset);

}  // namespace rehearse::cli
