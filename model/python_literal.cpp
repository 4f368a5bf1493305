#include "model/python_literal.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "model/state_codec.hpp"  // is_valid_utf8

namespace rehearse {

namespace {

using nlohmann::json;

constexpr int kMaxDepth = 64;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

json call_value(std::string callee) {
  return json{{"$call", std::move(callee)}, {"args", json::array()}, {"kwargs", json::object()}};
}

// Words that start or continue an expression rather than a value.
bool is_expression_word(std::string_view w) {
  return w == "if" || w == "else" || w == "and" || w == "or" || w == "not" || w == "in" ||
         w == "is" || w == "for" || w == "lambda" || w == "await" || w == "yield";
}

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<json> document() {
    skip_space(true);
    const char c = peek();
    Result<json> out = json();
    if (c == '@') {
      out = decorator();
    } else if (c == '{') {
      out = value(0);
    } else if (is_ident_start(c)) {
      out = call_or_keywords();
    } else {
      return expected(
          "a call (`RetryPolicy(...)`), a decorator (`@app.task(...)`), keyword "
          "arguments (`max_retries=5`) or a dict (`{...}`)");
    }
    if (!out.ok()) return out;
    skip_space(true);
    if (pos_ < text_.size()) return expected("the end of the input");
    return out;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::vector<std::size_t> open_;  // positions of the open brackets

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
    if (c == '\n' || c == '\r') return "a line break";
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
    // At the end of the input, the innermost open bracket is what is wrong.
    if (pos_ >= text_.size() && !open_.empty()) {
      return fail(fmt::format("the '{}' at {} is never closed (expected {})", text_[open_.back()],
                              where(open_.back()), what));
    }
    return fail(fmt::format("expected {}, got {}", what, got()));
  }
  Error expression(std::string_view what) const {
    return fail(fmt::format("{} is an expression: write its value", what));
  }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  // Spaces, comments and backslash continuations; line breaks too inside
  // brackets (as Python's tokenizer does) or when `newlines` is set.
  void skip_space(bool newlines = false) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\f') {
        ++pos_;
      } else if ((c == '\n' || c == '\r') && (newlines || !open_.empty())) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '\\' && (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n'))) {
        pos_ += peek(1) == '\n' ? 2 : 3;
      } else {
        break;
      }
    }
  }

  std::string_view identifier() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  // name(.name)*; the caller has seen an identifier start.
  Result<std::string> dotted_name() {
    std::string name(identifier());
    while (peek() == '.') {
      ++pos_;
      if (!is_ident_start(peek())) return expected("a name after '.'");
      name += '.';
      name += identifier();
    }
    return name;
  }

  Result<json> decorator() {
    ++pos_;  // '@'
    skip_space();
    if (!is_ident_start(peek())) return expected("the decorator's name after '@'");
    auto name = dotted_name();
    if (!name.ok()) return std::move(name).error();
    json out = call_value(*name);
    if (peek() == '(') {
      auto call = arguments(std::move(out), 0);
      if (!call.ok()) return call;
      out = std::move(*call);
    }
    skip_space();
    if (pos_ < text_.size() && peek() != '\n' && peek() != '\r') {
      return expected("the end of the decorator's line");
    }
    skip_space(true);
    const std::string_view rest = text_.substr(pos_);
    const auto starts = [&](std::string_view word) {
      return rest.substr(0, word.size()) == word && rest.size() > word.size() &&
             (rest[word.size()] == ' ' || rest[word.size()] == '\t');
    };
    // The function itself is not read: its body is code, not settings.
    if (starts("def") || starts("async")) pos_ = text_.size();
    if (pos_ < text_.size()) return expected("the decorated `def` line or the end of the input");
    return out;
  }

  Result<json> call_or_keywords() {
    const std::size_t start = pos_;
    auto name = dotted_name();
    if (!name.ok()) return std::move(name).error();
    skip_space();
    if (peek() == '(') return arguments(call_value(*name), 0);
    if (peek() == '=' && peek(1) != '=' && name->find('.') == std::string::npos) {
      pos_ = start;
      return keyword_lines();
    }
    return expected(fmt::format("'(' after '{}' (a call) or '=' (keyword arguments)", *name));
  }

  // `a=1, b=2` or one per line: keyword arguments outside any call.
  Result<json> keyword_lines() {
    json out = call_value("");
    while (true) {
      skip_space(true);
      if (pos_ >= text_.size()) return out;
      if (!is_ident_start(peek())) return expected("a keyword argument (`name=value`)");
      if (auto s = keyword(out["kwargs"], 0); !s.ok()) return std::move(s).error();
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (pos_ < text_.size() && peek() != '\n' && peek() != '\r') {
        return after_value("',' or a line break");
      }
    }
  }

  // name=value into `kwargs`; the caller has seen an identifier start.
  Status keyword(json& kwargs, int depth) {
    const std::size_t at = pos_;
    const std::string name(identifier());
    skip_space();
    if (peek() != '=' || peek(1) == '=') return expected(fmt::format("'=' after '{}'", name));
    ++pos_;
    if (kwargs.contains(name)) return fail(fmt::format("keyword '{}' given twice", name), at);
    auto v = value(depth + 1);
    if (!v.ok()) return std::move(v).error();
    kwargs[name] = std::move(*v);
    return {};
  }

  // Whether an identifier followed by '=' (not '==') starts here.
  bool at_keyword() const {
    std::size_t i = pos_;
    while (i < text_.size() && is_ident_char(text_[i])) ++i;
    while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t' || text_[i] == '\n')) ++i;
    return i < text_.size() && text_[i] == '=' && (i + 1 >= text_.size() || text_[i + 1] != '=');
  }

  Result<json> arguments(json call, int depth) {
    open_.push_back(pos_++);  // '('
    while (true) {
      skip_space();
      if (peek() == ')') break;
      const std::size_t at = pos_;
      if (peek() == '*')
        return fail(
            "unpacking (*args, **kwargs) cannot be read; write the "
            "arguments out");
      if (is_ident_start(peek()) && at_keyword()) {
        if (auto s = keyword(call["kwargs"], depth); !s.ok()) return std::move(s).error();
      } else {
        auto v = value(depth + 1);
        if (!v.ok()) return v;
        if (!call["kwargs"].empty())
          return fail("a positional argument after keyword arguments", at);
        call["args"].push_back(std::move(*v));
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ')') {
        return after_value("',' or ')'");
      }
    }
    ++pos_;
    open_.pop_back();
    return call;
  }

  // What follows a value when it is not a delimiter: say why.
  Error after_value(std::string_view delimiters) const {
    const char c = peek();
    if (std::string_view("+-*/%@&|^~<>=!").find(c) != std::string_view::npos && c != '\0') {
      return expression(fmt::format("an operator '{}'", c));
    }
    if (c == '[') return expression("a subscript");
    if (c == '(') return expression("a call of a call");
    if (c == ')' || c == ']' || c == '}') {
      if (open_.empty()) return fail(fmt::format("unbalanced '{}': no bracket is open", c));
      return fail(fmt::format("'{}' does not close the '{}' at {}", c, text_[open_.back()],
                              where(open_.back())));
    }
    if (is_ident_start(c)) {
      std::size_t end = pos_;
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
      const std::string_view w = text_.substr(pos_, end - pos_);
      if (is_expression_word(w)) return expression(fmt::format("'{}'", w));
    }
    return expected(delimiters);
  }

  Result<json> value(int depth) {
    skip_space();
    if (depth > kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    const char c = peek();
    if (c == '(') return tuple(depth);
    if (c == '[') return list(depth);
    if (c == '{') return dict(depth);
    if (c == '\'' || c == '"') return strings();
    if (is_digit(c) || (c == '.' && is_digit(peek(1)))) return number(pos_);
    if (c == '-' || c == '+') return signed_number();
    if (is_ident_start(c)) return string_prefix_length() > 0 ? strings() : word(depth);
    if (c == '*') return fail("unpacking (*x) cannot be read; write the values out");
    if (c == ')' || c == ']' || c == '}') return after_value("a value");
    return expected(
        "a value (a number, string, True, False, None, tuple, list, dict, name or call)");
  }

  Result<json> signed_number() {
    const std::size_t start = pos_;
    const bool negative = text_[pos_++] == '-';
    skip_space();
    if (!is_digit(peek()) && !(peek() == '.' && is_digit(peek(1)))) {
      pos_ = start;
      return expression(
          fmt::format("a unary '{}' before something other than a number", negative ? '-' : '+'));
    }
    auto n = number(start);
    if (!n.ok() || !negative) return n;
    if (n->is_number_integer()) {
      const std::int64_t v = n->get<std::int64_t>();
      if (v == std::numeric_limits<std::int64_t>::min()) return json(-static_cast<double>(v));
      return json(-v);
    }
    return json(-n->get<double>());
  }

  // A name: a constant, a (dotted) name, or a call.
  Result<json> word(int depth) {
    const std::size_t start = pos_;
    auto name = dotted_name();
    if (!name.ok()) return std::move(name).error();
    if (*name == "True") return json(true);
    if (*name == "False") return json(false);
    if (*name == "None") return json(nullptr);
    if (is_expression_word(*name)) {
      pos_ = start;
      return expression(fmt::format("'{}'", *name));
    }
    skip_space();
    if (peek() == '(') return arguments(call_value(*name), depth);
    return json{{"$name", *name}};
  }

  Result<json> tuple(int depth) {
    open_.push_back(pos_++);
    json items = json::array();
    bool comma = false;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      items.push_back(std::move(*v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        comma = true;
      } else if (peek() != ')') {
        return after_value("',' or ')'");
      }
    }
    ++pos_;
    open_.pop_back();
    // (X) is X in parentheses; (X,) and () are tuples.
    if (items.size() == 1 && !comma) return std::move(items[0]);
    return items;
  }

  Result<json> list(int depth) {
    open_.push_back(pos_++);
    json items = json::array();
    while (true) {
      skip_space();
      if (peek() == ']') break;
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      items.push_back(std::move(*v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ']') {
        return after_value("',' or ']'");
      }
    }
    ++pos_;
    open_.pop_back();
    return items;
  }

  Result<json> dict(int depth) {
    open_.push_back(pos_++);
    json out = json::object();
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::size_t key_at = pos_;
      auto k = value(depth + 1);
      if (!k.ok()) return k;
      skip_space();
      if (peek() != ':') {
        if (peek() == ',' || peek() == '}')
          return fail("a set cannot be read; write a list", key_at);
        return after_value("':' after the dict key");
      }
      if (!k->is_string()) return fail("a dict key that is not a string", key_at);
      const std::string key = k->get<std::string>();
      if (key == "$call" || key == "$name") {
        return fail(fmt::format("the dict key '{}' is reserved (it marks calls and names)", key),
                    key_at);
      }
      if (out.contains(key)) return fail(fmt::format("key '{}' given twice", key), key_at);
      ++pos_;
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      out[key] = std::move(*v);
      skip_space();
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != '}') {
        return after_value("',' or '}'");
      }
    }
    ++pos_;
    open_.pop_back();
    return out;
  }

  // Digits with '_' only between two digits.
  Status digits(std::string& out, std::string_view what) {
    if (!is_digit(peek())) return expected(what);
    while (true) {
      while (is_digit(peek())) out += text_[pos_++];
      if (peek() != '_') return {};
      ++pos_;
      if (!is_digit(peek())) return fail("a digit separator '_' must stand between two digits");
    }
  }

  Result<json> number(std::size_t start) {
    const std::size_t at = pos_;
    std::string clean;
    if (peek() == '0' && (is_ident_start(peek(1)) && peek(1) != '_' && peek(1) != 'e' &&
                          peek(1) != 'E' && peek(1) != 'j' && peek(1) != 'J')) {
      return fail("hex, octal and binary integers are not read; write it in decimal", start);
    }
    if (peek() != '.') {
      if (auto s = digits(clean, "a digit"); !s.ok()) return std::move(s).error();
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      clean += text_[pos_++];
      if (is_digit(peek())) {
        if (auto s = digits(clean, "a digit after '.'"); !s.ok()) return std::move(s).error();
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      clean += text_[pos_++];
      if (peek() == '+' || peek() == '-') clean += text_[pos_++];
      if (auto s = digits(clean, "a digit in the exponent"); !s.ok()) return std::move(s).error();
    }
    if (peek() == 'j' || peek() == 'J') return fail("an imaginary number cannot be read", start);
    if (is_ident_char(peek()) || peek() == '.') return expected("a delimiter after the number");
    if (integral) return integer(clean, at);
    const double d = std::strtod(clean.c_str(), nullptr);
    if (!std::isfinite(d)) return fail("number out of range", start);
    return json(d);
  }

  Result<json> integer(const std::string& clean, std::size_t at) {
    if (clean.size() > 1 && clean[0] == '0' && clean.find_first_not_of('0') != std::string::npos) {
      return fail("a zero-led integer (Python refuses it; write it in decimal)", at);
    }
    errno = 0;
    const long long v = std::strtoll(clean.c_str(), nullptr, 10);
    if (errno == 0) return json(static_cast<std::int64_t>(v));
    const double d = std::strtod(clean.c_str(), nullptr);
    if (!std::isfinite(d)) return fail("number out of range", at);
    return json(d);
  }

  // One string literal or several adjacent ones, joined as Python does.
  Result<json> strings() {
    std::string out;
    const std::size_t start = pos_;
    do {
      if (auto s = string_literal(out); !s.ok()) return std::move(s).error();
      skip_space();
    } while (peek() == '\'' || peek() == '"' ||
             (is_ident_start(peek()) && string_prefix_length() > 0));
    if (!is_valid_utf8(out)) return fail("a string that is not valid UTF-8", start);
    return json(std::move(out));
  }

  // The length of a string prefix (u, r, f, b, rb, ...) before a quote here, or 0.
  std::size_t string_prefix_length() const {
    std::size_t n = 0;
    while (n < 2 && std::string_view("rRuUfFbB").find(peek(n)) != std::string_view::npos &&
           peek(n) != '\0') {
      ++n;
    }
    for (std::size_t k = n; k > 0; --k) {
      if (peek(k) == '\'' || peek(k) == '"') return k;
    }
    return 0;
  }

  Status string_literal(std::string& out) {
    const std::size_t start = pos_;
    bool raw = false;
    for (std::size_t n = string_prefix_length(); n > 0; --n, ++pos_) {
      const char p = static_cast<char>(peek() | 0x20);
      if (p == 'f') return fail("an f-string cannot be read; write the plain string", start);
      if (p == 'b') return fail("a bytes literal cannot be read; write a string", start);
      raw = raw || p == 'r';
    }
    if (peek() != '\'' && peek() != '"') return expected("a string");
    const char quote = peek();
    const bool triple = peek(1) == quote && peek(2) == quote;
    pos_ += triple ? 3 : 1;
    while (true) {
      if (pos_ >= text_.size()) return fail("unterminated string", start);
      const char c = text_[pos_];
      if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
        pos_ += triple ? 3 : 1;
        return {};
      }
      if ((c == '\n' || c == '\r') && !triple) return fail("line break inside a string");
      if (c != '\\') {
        out += c;
        ++pos_;
      } else if (raw) {
        out += c;
        if (++pos_ < text_.size()) out += text_[pos_++];
      } else if (auto s = escape(out); !s.ok()) {
        return s;
      }
    }
  }

  Status escape(std::string& out) {
    const std::size_t at = pos_++;
    const char e = peek();
    ++pos_;
    switch (e) {
      case '\n': return {};
      case '\\': out += '\\'; return {};
      case '\'': out += '\''; return {};
      case '"': out += '"'; return {};
      case 'a': out += '\a'; return {};
      case 'b': out += '\b'; return {};
      case 'f': out += '\f'; return {};
      case 'n': out += '\n'; return {};
      case 'r': out += '\r'; return {};
      case 't': out += '\t'; return {};
      case 'v': out += '\v'; return {};
      case 'x': return hex_escape(out, 2, at);
      case 'u': return hex_escape(out, 4, at);
      case 'U': return hex_escape(out, 8, at);
      case 'N': return fail("\\N{...} escapes cannot be read; write the character", at);
      default: break;
    }
    if (e >= '0' && e <= '7') {
      std::uint32_t code = static_cast<std::uint32_t>(e - '0');
      for (int i = 0; i < 2 && peek() >= '0' && peek() <= '7'; ++i) {
        code = code * 8 + static_cast<std::uint32_t>(text_[pos_++] - '0');
      }
      append_utf8(out, code);
      return {};
    }
    if (at + 1 >= text_.size()) return fail("unterminated string", at);
    // Python keeps an unknown escape as written (with a warning).
    --pos_;
    out += '\\';
    return {};
  }

  Status hex_escape(std::string& out, int digits, std::size_t at) {
    std::uint32_t code = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) return fail(fmt::format("expected {} hex digits in the escape", digits), at);
      code = code * 16 + static_cast<std::uint32_t>(h);
      ++pos_;
    }
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return fail("an escape that is not a Unicode character", at);
    }
    append_utf8(out, code);
    return {};
  }
};

}  // namespace

Result<json> read_python_call(std::string_view text) { return Reader(text).document(); }

}  // namespace rehearse
