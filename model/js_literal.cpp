#include "model/js_literal.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "model/assert.hpp"
#include "model/state_codec.hpp"  // is_valid_utf8

namespace rehearse {

namespace {

constexpr int kMaxDepth = 64;

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<nlohmann::json> document() {
    auto value = this->value(0);
    if (!value.ok()) return value;
    if (auto s = skip_space(); !s.ok()) return std::move(s).error();
    if (pos_ < text_.size()) return fail("expected the end of the input after the value");
    REHEARSE_ASSERT_EQ(pos_, text_.size());
    return value;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;

  std::string where(std::size_t at) const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return fmt::format("{}:{}", line, column);
  }
  std::string got() const {
    if (pos_ >= text_.size()) return "the end of the input";
    const char c = text_[pos_];
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
    }
    return fmt::format("'{}'", c);
  }
  Error fail(std::string message, std::size_t at) const {
    return make_error(ErrorCode::parse_error, std::move(message), where(at));
  }
  Error fail(std::string message) const { return fail(std::move(message), pos_); }
  Error expected(std::string_view what) const {
    return fail(fmt::format("expected {}, got {}", what, got()));
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  // Whitespace and comments.
  Status skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (text_.substr(pos_, 2) == "//") {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (text_.substr(pos_, 2) == "/*") {
        const std::size_t start = pos_;
        const std::size_t end = text_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) return fail("unterminated /* comment", start);
        pos_ = end + 2;
      } else {
        break;
      }
    }
    return {};
  }

  Result<nlohmann::json> value(int depth) {
    if (auto s = skip_space(); !s.ok()) return std::move(s).error();
    if (depth > kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    const char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '\'' || c == '"') {
      auto s = string();
      if (!s.ok()) return std::move(s).error();
      return nlohmann::json(*s);
    }
    if (c == '-' || is_digit(c)) return number();
    if (is_ident_start(c)) return word();
    return expected("a value (object, array, string, number, true, false or null)");
  }

  Result<nlohmann::json> word() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    const std::string_view w = text_.substr(start, pos_ - start);
    if (w == "true") return nlohmann::json(true);
    if (w == "false") return nlohmann::json(false);
    if (w == "null") return nlohmann::json(nullptr);
    return fail(fmt::format("expected a value, got '{}' (only true, false and null are "
                            "accepted unquoted; quote strings)",
                            w),
                start);
  }

  Result<std::string> string() {
    const char quote = text_[pos_];
    const std::size_t start = pos_++;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return fail("unterminated string", start);
      const char c = text_[pos_];
      if (c == quote) {
        ++pos_;
        // A value that is not UTF-8 cannot be written back as JSON (dump throws).
        if (!is_valid_utf8(out)) return fail("a string that is not valid UTF-8", start);
        return out;
      }
      if (c == '\n' || c == '\r') return fail("line break inside a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (auto s = escape(out); !s.ok()) return std::move(s).error();
    }
  }

  Status escape(std::string& out) {
    const std::size_t at = pos_++;
    const char e = peek();
    ++pos_;
    switch (e) {
      case '\\': out += '\\'; return {};
      case '\'': out += '\''; return {};
      case '"': out += '"'; return {};
      case '/': out += '/'; return {};
      case 'n': out += '\n'; return {};
      case 'r': out += '\r'; return {};
      case 't': out += '\t'; return {};
      case 'b': out += '\b'; return {};
      case 'f': out += '\f'; return {};
      case 'v': out += '\v'; return {};
      case '0':
        if (is_digit(peek())) return fail("octal escapes are not accepted", at);
        out += '\0';
        return {};
      case 'u': return unicode_escape(out, at);
      default: return fail("unknown escape in a string", at);
    }
  }

  Status unicode_escape(std::string& out, std::size_t at) {
    if (pos_ + 4 > text_.size()) return fail("expected four hex digits after \\u", at);
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (is_digit(h))
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        return fail("expected four hex digits after \\u", at);
    }
    if (code >= 0xD800 && code <= 0xDFFF) return fail("surrogate \\u escapes are not accepted", at);
    // UTF-8.
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return {};
  }

  // Digits with separators: a '_' only between two digits.
  Status digits(std::string& out, std::string_view what) {
    if (!is_digit(peek())) return expected(what);
    while (true) {
      while (is_digit(peek())) out += text_[pos_++];
      if (peek() != '_') return {};
      ++pos_;
      if (!is_digit(peek())) return fail("a digit separator '_' must stand between two digits");
    }
  }

  Result<nlohmann::json> number() {
    const std::size_t start = pos_;
    std::string clean;
    if (peek() == '-') clean += text_[pos_++];
    if (peek() == '0' && pos_ + 1 < text_.size() &&
        (is_digit(text_[pos_ + 1]) || text_[pos_ + 1] == '_' || is_ident_start(text_[pos_ + 1]))) {
      return fail("hex, octal, binary and zero-led numbers are not accepted", start);
    }
    if (auto s = digits(clean, "a digit"); !s.ok()) return std::move(s).error();
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      clean += text_[pos_++];
      if (auto s = digits(clean, "a digit after '.'"); !s.ok()) return std::move(s).error();
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      clean += text_[pos_++];
      if (peek() == '+' || peek() == '-') clean += text_[pos_++];
      if (auto s = digits(clean, "a digit in the exponent"); !s.ok()) return std::move(s).error();
    }
    if (is_ident_char(peek())) return expected("a delimiter after the number");
    if (integral) {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(clean.c_str(), &end, 10);
      if (errno == 0) return nlohmann::json(static_cast<std::int64_t>(v));
    }
    const double d = std::strtod(clean.c_str(), nullptr);
    if (!std::isfinite(d)) return fail("number out of range", start);
    return nlohmann::json(d);
  }

  Result<std::string> key() {
    if (auto s = skip_space(); !s.ok()) return std::move(s).error();
    const char c = peek();
    if (c == '\'' || c == '"') return string();
    if (!is_ident_start(c)) return expected("a key (a name or a quoted string) or '}'");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  Result<nlohmann::json> object(int depth) {
    ++pos_;  // '{'
    nlohmann::json out = nlohmann::json::object();
    while (true) {
      if (auto s = skip_space(); !s.ok()) return std::move(s).error();
      if (peek() == '}') {
        ++pos_;
        return out;
      }
      const std::size_t key_at = pos_;
      auto k = key();
      if (!k.ok()) return std::move(k).error();
      if (out.contains(*k)) return fail(fmt::format("key \"{}\" given twice", *k), key_at);
      if (auto s = skip_space(); !s.ok()) return std::move(s).error();
      if (peek() != ':') return expected(fmt::format("':' after the key \"{}\"", *k));
      ++pos_;
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      REHEARSE_ASSERT_LE(pos_, text_.size());
      out[*k] = std::move(*v);
      if (auto s = skip_space(); !s.ok()) return std::move(s).error();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        return expected("',' or '}'");
      }
    }
  }

  Result<nlohmann::json> array(int depth) {
    ++pos_;  // '['
    nlohmann::json out = nlohmann::json::array();
    while (true) {
      if (auto s = skip_space(); !s.ok()) return std::move(s).error();
      if (peek() == ']') {
        ++pos_;
        return out;
      }
      if (peek() == ',') return expected("a value (holes in arrays are not accepted)");
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      out.push_back(std::move(*v));
      if (auto s = skip_space(); !s.ok()) return std::move(s).error();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ']') {
        return expected("',' or ']'");
      }
    }
  }
};

}  // namespace

Result<nlohmann::json> parse_js_literal(std::string_view text) { return Reader(text).document(); }

}  // namespace rehearse
