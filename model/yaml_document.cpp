#include "model/yaml_document.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "model/state_codec.hpp"  // is_valid_utf8

namespace rehearse {

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;
// Aliases share nodes: `&a [*b, *b, ...]` chains expand exponentially.
constexpr std::size_t kMaxValues = 100'000;
constexpr std::string_view kCoreTag = "tag:yaml.org,2002:";

std::string where(const YAML::Mark& mark) {
  if (mark.is_null()) return "1:1";
  return fmt::format("{}:{}", mark.line + 1, mark.column + 1);
}

Error fail(const YAML::Mark& mark, std::string message) {
  return make_error(ErrorCode::parse_error, std::move(message), where(mark));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

std::string_view unsigned_part(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  return s;
}

bool is_core_int(std::string_view s) { return all_digits(unsigned_part(s)); }

// [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool is_core_float(std::string_view s) {
  s = unsigned_part(s);
  const std::size_t e = s.find_first_of("eE");
  std::string_view mantissa = s.substr(0, e);
  if (e != std::string_view::npos && !is_core_int(s.substr(e + 1))) return false;
  const std::size_t dot = mantissa.find('.');
  if (dot == std::string_view::npos) return all_digits(mantissa);
  const std::string_view before = mantissa.substr(0, dot), after = mantissa.substr(dot + 1);
  if (before.empty()) return all_digits(after);
  return all_digits(before) && (after.empty() || all_digits(after));
}

// Plain words that YAML 1.1 (go-yaml v2) reads as booleans and 1.2 as strings.
bool is_yaml11_bool(std::string_view s) {
  static constexpr std::array<std::string_view, 16> kWords{"y",  "Y",   "yes", "Yes", "YES", "n",
                                                           "N",  "no",  "No",  "NO",  "on",  "On",
                                                           "ON", "off", "Off", "OFF"};
  for (std::string_view w : kWords) {
    if (s == w) return true;
  }
  return false;
}

// Numbers the two YAML versions read differently, or JSON cannot hold.
Status refuse_ambiguous_number(std::string_view s, const YAML::Mark& mark) {
  const std::string_view u = unsigned_part(s);
  const auto quoted = [&](std::string_view why) {
    return fail(mark, fmt::format("the plain scalar '{}' is {}; quote it to keep a string, or "
                                  "write the number in decimal",
                                  s, why));
  };
  if (u.size() > 1 && u[0] == '0' && is_digit(u[1]) && is_core_int(s)) {
    return quoted("zero-led (YAML 1.1 reads it as octal, YAML 1.2 as decimal)");
  }
  if (u.size() > 2 && u[0] == '0' &&
      std::string_view("xXoObB").find(u[1]) != std::string_view::npos) {
    return quoted("a hex, octal or binary number (YAML 1.1 and 1.2 disagree on these)");
  }
  if (!u.empty() && is_digit(u[0]) && u.find('_') != std::string_view::npos &&
      u.find_first_not_of("0123456789_.") == std::string_view::npos) {
    return quoted("a number with '_' (YAML 1.1 reads it as a number, YAML 1.2 as a string)");
  }
  if (u == ".inf" || u == ".Inf" || u == ".INF" || s == ".nan" || s == ".NaN" || s == ".NAN") {
    return fail(mark, fmt::format("'{}' is not a number JSON can hold", s));
  }
  return {};
}

json integer_or_double(const std::string& s) {
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == 0) return json(static_cast<std::int64_t>(v));
  return json(std::strtod(s.c_str(), nullptr));
}

Result<json> resolve_plain(const std::string& s, const YAML::Mark& mark) {
  if (s == "null" || s == "Null" || s == "NULL" || s == "~") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  if (is_yaml11_bool(s)) {
    return fail(mark, fmt::format("the plain scalar '{}' is a boolean in YAML 1.1 (Kubernetes "
                                  "tooling) and a string in YAML 1.2; write true or false, or "
                                  "quote it to mean the string",
                                  s));
  }
  if (auto refused = refuse_ambiguous_number(s, mark); !refused.ok()) {
    return std::move(refused).error();
  }
  if (is_core_int(s)) return integer_or_double(s);
  if (is_core_float(s)) {
    const double d = std::strtod(s.c_str(), nullptr);
    if (!std::isfinite(d)) return fail(mark, fmt::format("the number '{}' is out of range", s));
    return json(d);
  }
  return json(s);
}

// A scalar with an explicit core tag (!!int "5") must read as that type.
Result<json> resolve_tagged(const std::string& s, std::string_view type, const YAML::Mark& mark) {
  if (type == "str") return json(s);
  auto value = resolve_plain(s, mark);
  if (!value.ok()) return value;
  const bool fits = (type == "int" && value->is_number_integer()) ||
                    (type == "float" && value->is_number()) ||
                    (type == "bool" && value->is_boolean()) || (type == "null" && value->is_null());
  if (!fits) return fail(mark, fmt::format("'{}' is not a valid !!{}", s, type));
  if (type == "float") return json(value->get<double>());
  return value;
}

Result<json> scalar(const YAML::Node& node) {
  const std::string& s = node.Scalar();
  const std::string& tag = node.Tag();
  if (!is_valid_utf8(s)) return fail(node.Mark(), "a string that is not valid UTF-8");
  if (tag == "!") return json(s);  // quoted, literal or folded: a string
  if (tag == "?") return resolve_plain(s, node.Mark());
  if (tag.rfind(kCoreTag, 0) == 0) {
    const std::string_view type = std::string_view(tag).substr(kCoreTag.size());
    if (type == "str" || type == "int" || type == "float" || type == "bool" || type == "null") {
      return resolve_tagged(s, type, node.Mark());
    }
  }
  return fail(node.Mark(), fmt::format("the tag '{}' is not supported (only the core schema's "
                                       "!!str, !!int, !!float, !!bool and !!null)",
                                       tag));
}

bool is_collection_tag(const std::string& tag, std::string_view type) {
  return tag.empty() || tag == "?" || tag == "!" ||
         tag == std::string(kCoreTag) + std::string(type);
}

class Converter {
 public:
  Result<json> value(const YAML::Node& node, int depth) {
    if (depth > kMaxDepth)
      return fail(node.Mark(), fmt::format("nested deeper than {} levels", kMaxDepth));
    if (++count_ > kMaxValues) {
      return fail(node.Mark(), fmt::format("more than {} values (aliases expand)", kMaxValues));
    }
    switch (node.Type()) {
      case YAML::NodeType::Null: return json(nullptr);
      case YAML::NodeType::Scalar: return scalar(node);
      case YAML::NodeType::Sequence: return sequence(node, depth);
      case YAML::NodeType::Map: return map(node, depth);
      case YAML::NodeType::Undefined: break;
    }
    return fail(node.Mark(), "an undefined node");
  }

 private:
  std::size_t count_ = 0;

  Result<json> sequence(const YAML::Node& node, int depth) {
    if (!is_collection_tag(node.Tag(), "seq")) {
      return fail(node.Mark(), fmt::format("the tag '{}' is not supported on a list", node.Tag()));
    }
    json out = json::array();
    for (const YAML::Node& item : node) {
      auto v = value(item, depth + 1);
      if (!v.ok()) return v;
      out.push_back(std::move(*v));
    }
    return out;
  }

  static Result<std::string> key(const YAML::Node& k) {
    switch (k.Type()) {
      case YAML::NodeType::Scalar: break;
      case YAML::NodeType::Sequence: return fail(k.Mark(), "a map key that is a list");
      case YAML::NodeType::Map: return fail(k.Mark(), "a map key that is a map");
      default: return fail(k.Mark(), "a map key that is null or empty");
    }
    if (k.Tag() == "?" && k.Scalar() == "<<") {
      return fail(k.Mark(), "merge keys (<<) are not supported; write the keys out");
    }
    if (!is_valid_utf8(k.Scalar())) return fail(k.Mark(), "a key that is not valid UTF-8");
    return k.Scalar();
  }

  Result<json> map(const YAML::Node& node, int depth) {
    if (!is_collection_tag(node.Tag(), "map")) {
      return fail(node.Mark(), fmt::format("the tag '{}' is not supported on a map", node.Tag()));
    }
    json out = json::object();
    for (auto it = node.begin(); it != node.end(); ++it) {
      auto k = key(it->first);
      if (!k.ok()) return std::move(k).error();
      if (out.contains(*k))
        return fail(it->first.Mark(), fmt::format("key \"{}\" given twice", *k));
      auto v = value(it->second, depth + 1);
      if (!v.ok()) return v;
      out[*k] = std::move(*v);
    }
    return out;
  }
};

// YAML allows no control characters but tab and line breaks, and yaml-cpp
// loops forever on some (a NUL); it also guesses UTF-16 from byte patterns.
// Both are refused before it sees the text.
Status refuse_unreadable_bytes(std::string_view text) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    const std::size_t length = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
    const auto here = [&line, &column] { return fmt::format("{}:{}", line, column); };
    if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
      return make_error(
          ErrorCode::parse_error,
          fmt::format("a control character (byte 0x{:02x}) is not allowed in YAML", b), here());
    }
    if (length > 1 && !is_valid_utf8(text.substr(i, length))) {
      return make_error(ErrorCode::parse_error, "bytes that are not valid UTF-8", here());
    }
    if (b == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += length;
  }
  return {};
}

// Counts the documents and where each starts, without building them.
class DocumentCounter final : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The start of every document. yaml-cpp (0.7) returns an empty document
// forever, without moving on, at a token it cannot start one with (a ','
// at the top): a document that starts where the last one did is refused.
Result<std::vector<YAML::Mark>> document_starts(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentCounter counter;
  try {
    while (parser.HandleNextDocument(counter)) {
      const auto& starts = counter.starts;
      if (starts.size() >= 2 && starts[starts.size() - 1].pos <= starts[starts.size() - 2].pos) {
        return fail(starts.back(), "a token that cannot start a YAML document here");
      }
    }
  } catch (const YAML::Exception& e) {
    return fail(e.mark, e.msg);
  }
  return std::move(counter.starts);
}

Result<YAML::Node> load(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return fail(e.mark, e.msg);
  }
}

}  // namespace

Result<json> read_yaml_document(std::string_view text) {
  if (auto s = refuse_unreadable_bytes(text); !s.ok()) return std::move(s).error();
  const std::string owned(text);
  auto starts = document_starts(owned);
  if (!starts.ok()) return std::move(starts).error();
  if (starts->empty()) return fail(YAML::Mark(), "no YAML document (the text is empty)");
  if (starts->size() > 1) {
    return fail((*starts)[1], fmt::format("{} YAML documents (separated by '---'); a Job manifest "
                                          "is one document: paste only the one with the retry "
                                          "settings",
                                          starts->size()));
  }
  auto document = load(owned);
  if (!document.ok()) return std::move(document).error();
  const YAML::Node& root = *document;
  if (root.IsNull()) return fail(root.Mark(), "the YAML document is empty (or null)");
  try {
    return Converter().value(root, 0);
  } catch (const YAML::Exception& e) {
    return fail(e.mark, e.msg);
  }
}

}  // namespace rehearse
