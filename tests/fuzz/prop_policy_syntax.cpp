// The syntax readers of pasted retry settings (docs/fuzzing.md, target
// `policy_syntax`). Input: one byte choosing the reader (0 YAML, 1 Python,
// 2 Sidekiq Ruby, 3 `ms` duration), then the text.
//  - a refusal is a parse_error at a "line:column" inside the text
//    (invalid_argument without a place for a duration);
//  - an accepted value can be written as JSON (valid UTF-8), and reads back
//    to itself: YAML from its JSON dump (JSON is YAML, unless a key is
//    longer than the 1024 characters YAML allows an implicit key), Python from the
//    Python this file writes for it, a duration from its decimal milliseconds;
//  - Python values have the documented shapes ("$call" with "args" and
//    "kwargs", "$name"); a Sidekiq retry_in AST evaluates, for the counts
//    Sidekiq uses, to a number or an invalid_argument refusal, never a
//    schema_error (the reader writes only well-formed ASTs).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "model/ms_duration.hpp"
#include "model/python_literal.hpp"
#include "model/ruby_snippet.hpp"
#include "model/yaml_document.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

using nlohmann::json;

bool is_line_column(const std::string& where, std::string_view text) {
  const auto colon = where.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == where.size()) return false;
  for (std::size_t i = 0; i < where.size(); ++i) {
    if (i != colon && (where[i] < '0' || where[i] > '9')) return false;
  }
  if (where.size() > 16) return false;  // keeps std::stoull in range
  const auto line = std::stoull(where.substr(0, colon));
  std::uint64_t lines = 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return line >= 1 && line <= lines && std::stoull(where.substr(colon + 1)) >= 1;
}

void check_refusal(const Error& error, std::string_view text) {
  REHEARSE_FUZZ_CHECK(error.code == ErrorCode::parse_error, error.describe());
  REHEARSE_FUZZ_CHECK(is_line_column(error.where, text), error.describe());
}

std::string dump(const json& value) {
  try {
    return value.dump();
  } catch (const json::exception& e) {
    property_failed("value.dump()", __FILE__, __LINE__, e.what());
  }
}

// YAML limits an implicit (unmarked) key to 1024 characters, so a JSON dump
// with a longer key is not YAML.
std::size_t longest_key(const json& v) {
  std::size_t longest = 0;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      longest = std::max({longest, json(it.key()).dump().size(), longest_key(it.value())});
    }
  } else if (v.is_array()) {
    for (const json& item : v) longest = std::max(longest, longest_key(item));
  }
  return longest;
}

void check_yaml(std::string_view text) {
  const Result<json> value = read_yaml_document(text);
  if (!value.ok()) return check_refusal(value.error(), text);
  const std::string dumped = dump(*value);
  if (longest_key(*value) > 1024) return;
  const Result<json> again = read_yaml_document(dumped);
  REHEARSE_FUZZ_CHECK(again.ok() && *again == *value,
                      dumped + (again.ok() ? " read as " + again->dump()
                                           : " refused: " + again.error().describe()));
}

// Python source for a value the reader returned.
std::string python(const json& v);

std::string python_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string python_arguments(const json& call) {
  std::string out;
  for (const json& a : call["args"]) out += python(a) + ", ";
  for (auto it = call["kwargs"].begin(); it != call["kwargs"].end(); ++it) {
    out += it.key() + "=" + python(it.value()) + ", ";
  }
  return out;
}

std::string python(const json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) return fmt::format("{:.17e}", v.get<double>());
  if (v.is_string()) return python_string(v.get<std::string>());
  if (v.is_array()) {
    std::string out = "[";
    for (const json& item : v) out += python(item) + ", ";
    return out + "]";
  }
  if (v.contains("$name")) return v["$name"].get<std::string>();
  if (v.contains("$call")) return v["$call"].get<std::string>() + "(" + python_arguments(v) + ")";
  std::string out = "{";
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += python_string(it.key()) + ": " + python(it.value()) + ", ";
  }
  return out + "}";
}

// The documented shapes, everywhere in the value.
void check_python_shape(const json& v) {
  if (v.is_array()) {
    for (const json& item : v) check_python_shape(item);
  } else if (v.is_object() && v.contains("$name")) {
    REHEARSE_FUZZ_CHECK(v.size() == 1 && v["$name"].is_string(), v.dump());
  } else if (v.is_object() && v.contains("$call")) {
    REHEARSE_FUZZ_CHECK(v.size() == 3 && v["$call"].is_string() && v["args"].is_array() &&
                            v["kwargs"].is_object(),
                        v.dump());
    check_python_shape(v["args"]);
    for (const json& item : v["kwargs"]) check_python_shape(item);
  } else if (v.is_object()) {
    for (const json& item : v) check_python_shape(item);
  }
}

void check_python(std::string_view text) {
  const Result<json> value = read_python_call(text);
  if (!value.ok()) return check_refusal(value.error(), text);
  (void)dump(*value);
  REHEARSE_FUZZ_CHECK(value->is_object(), value->dump());
  check_python_shape(*value);
  const bool bare = value->contains("$call") && (*value)["$call"] == "";
  const std::string source = bare ? python_arguments(*value) : python(*value);
  const Result<json> again = read_python_call(source);
  REHEARSE_FUZZ_CHECK(again.ok() && *again == *value,
                      source + (again.ok() ? " read as " + again->dump()
                                           : " refused: " + again.error().describe()));
}

void check_ruby(std::string_view text) {
  const Result<json> value = read_sidekiq_snippet(text);
  if (!value.ok()) return check_refusal(value.error(), text);
  (void)dump(*value);
  REHEARSE_FUZZ_CHECK(value->is_object(), value->dump());
  if (!value->contains("retry_in")) return;
  for (std::int64_t count = 0; count <= 25; ++count) {
    const Result<std::int64_t> seconds = eval_count_expression((*value)["retry_in"], count);
    REHEARSE_FUZZ_CHECK(seconds.ok() || seconds.error().code == ErrorCode::invalid_argument,
                        seconds.error().describe());
  }
}

void check_duration(std::string_view text) {
  const Result<std::int64_t> ms = parse_ms_duration(text);
  if (!ms.ok()) {
    REHEARSE_FUZZ_CHECK(ms.error().code == ErrorCode::invalid_argument, ms.error().describe());
    return;
  }
  REHEARSE_FUZZ_CHECK(*ms >= 0, std::to_string(*ms));
  const Result<std::int64_t> again = parse_ms_duration(std::to_string(*ms) + "ms");
  REHEARSE_FUZZ_CHECK(again.ok() && *again == *ms, std::to_string(*ms));
}

}  // namespace

void check_policy_syntax(std::string_view input) {
  Input in(input);
  const std::uint8_t reader = in.byte();
  switch (reader % 4) {
    case 0: return check_yaml(in.rest());
    case 1: return check_python(in.rest());
    case 2: return check_ruby(in.rest());
    default: return check_duration(in.rest());
  }
}

}  // namespace rehearse::fuzz
