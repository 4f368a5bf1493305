// Cron text as JavaScript reads it. cron-parser converts every token with
// JavaScript's Number() and splits the expression on JavaScript's whitespace,
// so the parser (model/cron_parse.cpp) reads tokens through the same rules
// here; also the list splitting and the quoting of a token in a message.
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "model/cron_detail.hpp"

namespace rehearse {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

namespace cron_detail {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char to_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

// A token for an error message: quoted, with control and non-ASCII bytes
// escaped so that a hostile expression cannot garble a terminal or a log.
std::string in_quotes(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || ch == '"' || ch == '\\') {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += ch;
    }
  }
  out += '"';
  return out;
}

// JavaScript's Number(string) for the strings cron-parser converts (`+x`).
// Tokens never contain whitespace here (the expression was split on it).
// Grammar: "" -> 0; [+-]Infinity; 0x / 0o / 0b integers without sign; decimal
// literals with optional sign, fraction and exponent; anything else NaN.
double js_to_number(std::string_view s) {
  if (s.empty()) return 0.0;
  if (s == "Infinity" || s == "+Infinity") return kInf;
  if (s == "-Infinity") return -kInf;
  if (s.size() > 2 && s[0] == '0') {
    const char p = to_lower(s[1]);
    const int radix = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (radix != 0) {
      double value = 0.0;
      for (std::size_t i = 2; i < s.size(); ++i) {
        const char c = to_lower(s[i]);
        int digit = -1;
        if (is_digit(c)) digit = c - '0';
        if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
        if (digit < 0 || digit >= radix) return kNaN;
        value = value * radix + digit;
      }
      return value;
    }
  }
  std::size_t i = 0;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
  }
  const std::size_t body = i;
  std::size_t mantissa_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++mantissa_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++mantissa_digits;
  }
  if (mantissa_digits == 0) return kNaN;
  bool negative_exponent = false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      negative_exponent = s[i] == '-';
      ++i;
    }
    std::size_t exponent_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exponent_digits;
    if (exponent_digits == 0) return kNaN;
  }
  if (i != s.size()) return kNaN;
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(s.data() + body, s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // Overflow (a long run of digits, a big exponent) is Infinity; underflow
    // (a big negative exponent) is 0. Every caller rejects both anyway.
    value = negative_exponent ? 0.0 : kInf;
  } else if (ec != std::errc() || ptr != s.data() + s.size()) {
    return kNaN;
  }
  return negative ? -value : value;
}

namespace {

// JavaScript whitespace (String.prototype.trim and /\s/): ASCII tab, LF, VT,
// FF, CR, space, and U+00A0 U+1680 U+2000-200A U+2028 U+2029 U+202F U+205F
// U+3000 U+FEFF. Returns the byte length of the whitespace at `i`, or 0.
std::size_t js_space_at(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 == ' ' || (b0 >= 0x09 && b0 <= 0x0d)) return 1;
  if (b0 == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xa0) return 2;
  if ((b0 == 0xe1 || b0 == 0xe2 || b0 == 0xe3 || b0 == 0xef) && i + 2 < s.size()) {
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    const auto b2 = static_cast<unsigned char>(s[i + 2]);
    if ((b1 & 0xc0) != 0x80 || (b2 & 0xc0) != 0x80) return 0;
    const unsigned cp = ((b0 & 0x0fU) << 12) | ((b1 & 0x3fU) << 6) | (b2 & 0x3fU);
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
        cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff) {
      return 3;
    }
  }
  return 0;
}

}  // namespace

std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t n = js_space_at(s, i);
    if (n != 0) {
      i += n;
      continue;
    }
    const std::size_t start = i;
    while (i < s.size() && js_space_at(s, i) == 0) ++i;
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

bool contains(std::string_view s, char c) { return s.find(c) != std::string_view::npos; }

std::string replace_all(std::string_view s, char c, std::string_view with) {
  std::string out;
  for (const char ch : s) {
    if (ch == c) {
      out += with;
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace cron_detail

}  // namespace rehearse
