#include "model/ruby_snippet.hpp"

#include <fmt/format.h>

#include <array>
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
constexpr int kMaxOperations = 128;
constexpr std::string_view kOptions = "sidekiq_options";
constexpr std::string_view kRetryIn = "sidekiq_retry_in";

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

struct Duration {
  std::string_view name;
  std::int64_t seconds;
};
constexpr std::array<Duration, 10> kDurations{{
    {"second", 1},
    {"seconds", 1},
    {"minute", 60},
    {"minutes", 60},
    {"hour", 3600},
    {"hours", 3600},
    {"day", 86400},
    {"days", 86400},
    {"week", 604800},
    {"weeks", 604800},
}};

// Words that make a block a program rather than a formula.
std::string what_word_does(std::string_view w) {
  if (w == "if" || w == "unless" || w == "case" || w == "when" || w == "else" || w == "then") {
    return fmt::format("branches (`{}`)", w);
  }
  if (w == "rand") return "draws a random number (`rand`)";
  if (w == "return" || w == "next" || w == "raise" || w == "begin") {
    return fmt::format("uses `{}`", w);
  }
  if (w == "nil" || w == "true" || w == "false") return fmt::format("returns `{}`", w);
  return fmt::format("calls `{}`", w);
}

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Result<json> document() {
    json out = json::object();
    bool found = false;
    while (pos_ < text_.size()) {
      skip_blank();
      const std::size_t line_start = pos_;
      const std::string_view w = peek_word();
      if (w == kOptions || w == kRetryIn) {
        found = true;
        pos_ += w.size();
        auto s = w == kOptions ? options(out) : retry_in(out, line_start);
        if (!s.ok()) return std::move(s).error();
        if (auto e = end_of_statement(w); !e.ok()) return std::move(e).error();
      } else if (text_.substr(pos_, 6) == "=begin") {
        skip_block_comment();
      } else {
        skip_line();
      }
    }
    if (!found) {
      return fail(
          "no `sidekiq_options` or `sidekiq_retry_in` line found (each must start its "
          "line)",
          0);
    }
    return out;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
  std::string param_;  // the block's first parameter
  std::vector<std::string> other_params_;

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
    if (c == '\n' || c == '\r') return "the end of the line";
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
    }
    return fmt::format("'{}'", c);
  }
  Error fail(std::string message, std::size_t at) const {
    return make_error(ErrorCode::parse_error, std::move(message), where(at));
  }
  Error fail(std::string message) const { return fail(std::move(message), pos_); }
  Error expected(std::string_view call, std::string_view what) const {
    return fail(fmt::format("{}: expected {}, got {}", call, what, got()));
  }
  Error cannot_plan(std::string_view what, std::size_t at) const {
    return fail(fmt::format("sidekiq_retry_in: the block {} cannot be planned; write an "
                            "arithmetic expression in count (e.g. `10 * (count + 1)`) or use "
                            "`retry: N` (docs/policies.md \"Sidekiq\")",
                            what),
                at);
  }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  std::string_view peek_word() const {
    std::size_t end = pos_;
    while (end < text_.size() && is_ident_char(text_[end])) ++end;
    return text_.substr(pos_, end - pos_);
  }

  void skip_line() {
    while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    if (pos_ < text_.size()) ++pos_;
  }
  // Blank space at a line's start, and blank lines.
  void skip_blank() {
    while (pos_ < text_.size() &&
           std::string_view(" \t\r\n\f").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
  }
  void skip_block_comment() {
    while (pos_ < text_.size()) {
      skip_line();
      if (text_.substr(pos_, 4) == "=end") return skip_line();
    }
  }
  // Spaces and a trailing comment; line breaks too when `newlines` is set.
  void skip_space(bool newlines) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\f' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '\\' && peek(1) == '\n') {
        pos_ += 2;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  Status end_of_statement(std::string_view call) {
    skip_space(false);
    if (peek() == ';') ++pos_;
    skip_space(false);
    if (pos_ < text_.size() && peek() != '\n' && peek() != '\r') {
      return expected(call, "the end of the statement");
    }
    return {};
  }

  // ---- sidekiq_options

  Status options(json& out) {
    const bool parens = peek() == '(';
    if (parens) {
      ++pos_;
    } else if (peek() != ' ' && peek() != '\t') {
      return expected(kOptions, "options after `sidekiq_options`");
    }
    skip_space(parens);
    if (peek() == '{') {
      auto h = hash(0);
      if (!h.ok()) return std::move(h).error();
      for (auto it = h->begin(); it != h->end(); ++it) {
        if (out.contains(it.key())) return fail(fmt::format("option '{}' given twice", it.key()));
        out[it.key()] = it.value();
      }
    } else if (auto s = pairs(out, parens ? ')' : '\0', 0); !s.ok()) {
      return s;
    }
    skip_space(parens);
    if (parens) {
      if (peek() != ')') return expected(kOptions, "')'");
      ++pos_;
    }
    return {};
  }

  // key: value, ... up to `close` (or the statement's end for '\0').
  Status pairs(json& out, char close, int depth) {
    while (true) {
      skip_space(close != '\0');
      if (close != '\0' && peek() == close) return {};
      const std::size_t at = pos_;
      auto k = key();
      if (!k.ok()) return std::move(k).error();
      if (out.contains(*k))
        return fail(fmt::format("{}: option '{}' given twice", kOptions, *k), at);
      auto v = value(depth + 1);
      if (!v.ok()) return std::move(v).error();
      out[*k] = std::move(*v);
      skip_space(close != '\0');
      if (peek() != ',') return {};
      ++pos_;
      skip_space(true);  // a trailing ',' continues the statement on the next line
    }
  }

  // `label:`, `"label":`, `:sym =>`, `'str' =>`; consumes the ':' or '=>'.
  Result<std::string> key() {
    std::string k;
    if (is_ident_start(peek())) {
      k = std::string(peek_word());
      pos_ += k.size();
      if (peek() != ':' || peek(1) == ':')
        return expected(kOptions, fmt::format("':' after '{}'", k));
      ++pos_;
      return k;
    }
    // Only strings and symbols: a key is never a nested value.
    const bool symbol =
        peek() == ':' && (is_ident_start(peek(1)) || peek(1) == '"' || peek(1) == '\'');
    if (peek() != '"' && peek() != '\'' && !symbol) {
      return expected(kOptions, "a key (`retry:`, `:retry =>`, `'retry' =>`)");
    }
    auto v = value(0);
    if (!v.ok()) return std::move(v).error();
    k = v->get<std::string>();
    if (peek() == ':' && (text_[pos_ - 1] == '"' || text_[pos_ - 1] == '\'')) {
      ++pos_;
      return k;
    }
    skip_space(true);
    if (peek() != '=' || peek(1) != '>') return expected(kOptions, "'=>' after the key");
    pos_ += 2;
    return k;
  }

  Result<json> value(int depth) {
    skip_space(true);
    if (depth > kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    const char c = peek();
    if (c == '\'' || c == '"') return string();
    if (c == ':' && (is_ident_start(peek(1)) || peek(1) == '"' || peek(1) == '\'')) {
      ++pos_;
      if (peek() == '"' || peek() == '\'') return string();
      std::string symbol(peek_word());
      pos_ += symbol.size();
      if (peek() == '?' || peek() == '!') symbol += text_[pos_++];
      return json(std::move(symbol));
    }
    if (is_digit(c) || (c == '-' && is_digit(peek(1)))) return number();
    if (c == '[') return array(depth);
    if (c == '{') return hash(depth);
    const std::string_view w = peek_word();
    if (w == "true" || w == "false" || w == "nil") {
      pos_ += w.size();
      return w == "nil" ? json(nullptr) : json(w == "true");
    }
    return expected(kOptions,
                    "a value (a number, 'string', :symbol, true, false, nil, [array] "
                    "or {hash})");
  }

  Result<json> array(int depth) {
    ++pos_;
    json out = json::array();
    while (true) {
      skip_space(true);
      if (peek() == ']') break;
      auto v = value(depth + 1);
      if (!v.ok()) return v;
      out.push_back(std::move(*v));
      skip_space(true);
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ']') {
        return expected(kOptions, "',' or ']'");
      }
    }
    ++pos_;
    return out;
  }

  Result<json> hash(int depth) {
    ++pos_;
    json out = json::object();
    if (auto s = pairs(out, '}', depth); !s.ok()) return std::move(s).error();
    skip_space(true);
    if (peek() != '}') return expected(kOptions, "',' or '}'");
    ++pos_;
    return out;
  }

  Result<json> number() {
    const std::size_t start = pos_;
    std::string clean;
    if (peek() == '-') clean += text_[pos_++];
    bool integral = true;
    while (is_digit(peek()) || (peek() == '_' && is_digit(peek(1))) ||
           (peek() == '.' && is_digit(peek(1)) && integral)) {
      if (peek() == '.') integral = false;
      if (peek() != '_') clean += peek();
      ++pos_;
    }
    if (is_ident_char(peek())) return expected(kOptions, "a delimiter after the number");
    errno = 0;
    if (integral) {
      const long long v = std::strtoll(clean.c_str(), nullptr, 10);
      if (errno == 0) return json(static_cast<std::int64_t>(v));
    }
    const double d = std::strtod(clean.c_str(), nullptr);
    if (!std::isfinite(d)) return fail("number out of range", start);
    return json(d);
  }

  Result<json> string() {
    const char quote = peek();
    const std::size_t start = pos_++;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return fail("unterminated string", start);
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '#' && quote == '"' && peek() == '{') {
        return fail("string interpolation (#{...}) cannot be read; write the string", pos_ - 1);
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = peek();
      ++pos_;
      if (quote == '\'') {
        if (e != '\\' && e != '\'') out += '\\';
        out += e;
        continue;
      }
      if (auto s = double_quoted_escape(e, out); !s.ok()) return std::move(s).error();
    }
    if (!is_valid_utf8(out)) return fail("a string that is not valid UTF-8", start);
    return json(std::move(out));
  }

  // The escapes of a double-quoted Ruby string that a setting would use.
  Status double_quoted_escape(char e, std::string& out) const {
    switch (e) {
      case 'n': out += '\n'; return {};
      case 't': out += '\t'; return {};
      case 'r': out += '\r'; return {};
      case 's': out += ' '; return {};
      case 'e': out += '\x1b'; return {};
      case '0': out += '\0'; return {};
      case '\\': out += '\\'; return {};
      case '"': out += '"'; return {};
      case '#': out += '#'; return {};
      case '\'': out += '\''; return {};
      default: break;
    }
    return fail("an escape that is not read here (only \\n \\t \\r \\s \\e \\0 \\\\ \\\" \\# \\')",
                pos_ - 2);
  }

  // ---- sidekiq_retry_in

  Status retry_in(json& out, std::size_t line_start) {
    if (out.contains("retry_in")) return fail("sidekiq_retry_in given twice", line_start);
    skip_space(false);
    const bool braces = peek() == '{';
    if (!braces && !(peek_word() == "do"))
      return expected(kRetryIn, "a block (`{ |count| ... }` or `do |count| ... end`)");
    pos_ += braces ? 1 : 2;
    if (auto s = block_params(); !s.ok()) return s;
    skip_space(true);
    auto ast = sum(0);
    if (!ast.ok()) return std::move(ast).error();
    if (auto s = block_end(braces); !s.ok()) return s;
    out["retry_in"] = std::move(*ast);
    return {};
  }

  Status block_params() {
    skip_space(true);
    if (peek() != '|') return {};
    ++pos_;
    while (true) {
      skip_space(false);
      if (!is_ident_start(peek())) return expected(kRetryIn, "a block parameter name");
      const std::string name(peek_word());
      pos_ += name.size();
      (param_.empty() ? param_ : other_params_.emplace_back()) = name;
      skip_space(false);
      if (peek() == '|') break;
      if (peek() != ',') return expected(kRetryIn, "',' or '|' in the block's parameters");
      ++pos_;
    }
    ++pos_;
    return {};
  }

  // After the expression: the block's end, or what else the block does.
  Status block_end(bool braces) {
    const std::size_t after = pos_;
    skip_space(false);
    const char c = peek();
    if (std::string_view("<>=!?&|").find(c) != std::string_view::npos && c != '\0') {
      return cannot_plan(fmt::format("compares or branches (`{}`)", c), pos_);
    }
    if (c == '.') return cannot_plan("calls a method", pos_);
    if (is_ident_start(c) && peek_word() != "end") {
      return cannot_plan(what_word_does(peek_word()), pos_);
    }
    skip_space(true);
    if (braces && peek() == '}') {
      ++pos_;
      return {};
    }
    if (!braces && peek_word() == "end") {
      pos_ += 3;
      return {};
    }
    if (pos_ >= text_.size())
      return fail(fmt::format("{}: the block is never closed", kRetryIn), after);
    if (peek() == ';' || pos_ > after) return cannot_plan("has more than one statement", pos_);
    return expected(kRetryIn, braces ? "'}'" : "`end`");
  }

  // ---- the block's arithmetic, lowest precedence first

  int parens_ = 0;  // inside parentheses a line break is space
  int operations_ = 0;

  // Bounds the AST's depth (and so eval_count_expression's recursion):
  // 1+1+1+... nests to the left once per operation.
  Status count_operation() {
    if (++operations_ <= kMaxOperations) return {};
    return fail(
        fmt::format("{}: the expression has more than {} operations", kRetryIn, kMaxOperations));
  }

  Result<json> sum(int depth) {
    auto lhs = product(depth);
    if (!lhs.ok()) return lhs;
    while (true) {
      skip_space(parens_ > 0);
      const char op = peek();
      if ((op != '+' && op != '-') || peek(1) == '=') return lhs;
      if (auto s = count_operation(); !s.ok()) return std::move(s).error();
      ++pos_;
      skip_space(true);
      auto rhs = product(depth);
      if (!rhs.ok()) return rhs;
      lhs = json::array({std::string(1, op), std::move(*lhs), std::move(*rhs)});
    }
  }

  Result<json> product(int depth) {
    auto lhs = unary(depth);
    if (!lhs.ok()) return lhs;
    while (true) {
      skip_space(parens_ > 0);
      const char op = peek();
      if ((op != '*' && op != '/' && op != '%') || peek(1) == '*' || peek(1) == '=') return lhs;
      if (auto s = count_operation(); !s.ok()) return std::move(s).error();
      ++pos_;
      skip_space(true);
      auto rhs = unary(depth);
      if (!rhs.ok()) return rhs;
      lhs = json::array({std::string(1, op), std::move(*lhs), std::move(*rhs)});
    }
  }

  // Unary minus binds looser than ** (-2 ** 2 is -4 in Ruby).
  Result<json> unary(int depth) {
    if (depth > kMaxDepth) return fail(fmt::format("nested deeper than {} levels", kMaxDepth));
    if (peek() == '-' || peek() == '+') {
      const bool negative = text_[pos_++] == '-';
      skip_space(parens_ > 0);
      auto operand = unary(depth + 1);
      if (!operand.ok() || !negative) return operand;
      return json::array({"neg", std::move(*operand)});
    }
    return power(depth);
  }

  // ** is right-associative and its exponent may carry a sign (2 ** -count).
  Result<json> power(int depth) {
    auto base = postfix(depth);
    if (!base.ok()) return base;
    skip_space(parens_ > 0);
    if (peek() != '*' || peek(1) != '*') return base;
    pos_ += 2;
    skip_space(true);
    auto exponent = unary(depth + 1);
    if (!exponent.ok()) return exponent;
    return json::array({"**", std::move(*base), std::move(*exponent)});
  }

  // A primary and its ActiveSupport durations: 5.minutes, (count + 1).hours.
  Result<json> postfix(int depth) {
    auto value = primary(depth);
    if (!value.ok()) return value;
    while (peek() == '.' && is_ident_start(peek(1))) {
      const std::size_t at = pos_++;
      const std::string_view method = peek_word();
      pos_ += method.size();
      const Duration* unit = nullptr;
      for (const Duration& d : kDurations) {
        if (d.name == method) unit = &d;
      }
      if (unit == nullptr) return cannot_plan(fmt::format("calls `.{}`", method), at);
      if (auto s = count_operation(); !s.ok()) return std::move(s).error();
      if (unit->seconds != 1) value = json::array({"*", std::move(*value), unit->seconds});
    }
    return value;
  }

  Result<json> primary(int depth) {
    const std::size_t at = pos_;
    const char c = peek();
    if (c == '(') {
      ++pos_;
      ++parens_;
      skip_space(true);
      auto inner = sum(depth + 1);
      if (!inner.ok()) return inner;
      skip_space(true);
      if (peek() != ')') return expected(kRetryIn, "')'");
      ++pos_;
      --parens_;
      return inner;
    }
    if (is_digit(c)) return block_integer();
    if (is_ident_start(c)) {
      const std::string name(peek_word());
      pos_ += name.size();
      if (!param_.empty() && name == param_) return json("count");
      for (const std::string& other : other_params_) {
        if (name == other) {
          return cannot_plan(fmt::format("uses `{}` (only the retry count can be planned)", name),
                             at);
        }
      }
      return cannot_plan(what_word_does(name), at);
    }
    if (c == ':') return cannot_plan(fmt::format("returns the symbol :{}", next_word(1)), at);
    if (c == '\'' || c == '"') return cannot_plan("returns a string", at);
    if (c == '}' || peek_word() == "end") return cannot_plan("is empty", at);
    return expected(kRetryIn, "an integer, the block's parameter or '('");
  }

  std::string_view next_word(std::size_t ahead) const {
    std::size_t end = pos_ + ahead;
    while (end < text_.size() && is_ident_char(text_[end])) ++end;
    return text_.substr(std::min(pos_ + ahead, text_.size()), end - std::min(pos_ + ahead, end));
  }

  Result<json> block_integer() {
    const std::size_t start = pos_;
    std::string digits;
    while (is_digit(peek()) || (peek() == '_' && is_digit(peek(1)))) {
      if (peek() != '_') digits += peek();
      ++pos_;
    }
    if (peek() == '.' && is_digit(peek(1))) {
      return cannot_plan(fmt::format("uses a float ({}.{})", digits, next_word(1)), start);
    }
    if (is_ident_char(peek())) return expected(kRetryIn, "a delimiter after the number");
    errno = 0;
    const long long v = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno != 0)
      return fail(fmt::format("{}: the integer {} is too large", kRetryIn, digits), start);
    return json(static_cast<std::int64_t>(v));
  }
};

// ---- evaluation

constexpr int kMaxEvalDepth = 256;

Error overflow(std::string_view op) {
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("sidekiq_retry_in: '{}' overflows a 64-bit integer", op));
}

Result<std::int64_t> apply(std::string_view op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (op == "+") return __builtin_add_overflow(a, b, &r) ? Result<std::int64_t>(overflow(op)) : r;
  if (op == "-") return __builtin_sub_overflow(a, b, &r) ? Result<std::int64_t>(overflow(op)) : r;
  if (op == "*") return __builtin_mul_overflow(a, b, &r) ? Result<std::int64_t>(overflow(op)) : r;
  if (op == "/" || op == "%") {
    if (b == 0) {
      return make_error(ErrorCode::invalid_argument, "sidekiq_retry_in: division by zero");
    }
    if (b == -1) {  // INT64_MIN / -1 overflows; x % -1 is 0
      if (op == "%") return std::int64_t{0};
      return __builtin_sub_overflow(std::int64_t{0}, a, &r) ? Result<std::int64_t>(overflow(op))
                                                            : r;
    }
    // Ruby rounds the quotient toward negative infinity; the remainder has b's sign.
    std::int64_t q = a / b, m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) {
      q -= 1;
      m += b;
    }
    return op == "/" ? q : m;
  }
  // op == "**"
  if (b < 0) {
    return make_error(ErrorCode::invalid_argument,
                      "sidekiq_retry_in: a negative exponent gives a fraction (a Ruby Rational)");
  }
  if (a == 0 || a == 1) return b == 0 ? 1 : a;
  if (a == -1) return b % 2 == 0 ? 1 : -1;
  std::int64_t result = 1;
  for (std::int64_t i = 0; i < b; ++i) {
    if (__builtin_mul_overflow(result, a, &result)) return overflow(op);
  }
  return result;
}

Result<std::int64_t> eval(const json& ast, std::int64_t count, int depth) {
  const auto malformed = [&ast]() {
    return make_error(ErrorCode::schema_error,
                      fmt::format("not a retry_in expression: {}", ast.dump().substr(0, 80)));
  };
  if (depth > kMaxEvalDepth) return malformed();
  if (ast.is_number_unsigned() &&
      ast.get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max()) {
    return malformed();
  }
  if (ast.is_number_integer()) return ast.get<std::int64_t>();
  if (ast.is_string() && ast.get<std::string>() == "count") return count;
  if (!ast.is_array() || ast.empty() || !ast[0].is_string()) return malformed();
  const std::string op = ast[0].get<std::string>();
  if (op == "neg" && ast.size() == 2) {
    auto a = eval(ast[1], count, depth + 1);
    if (!a.ok()) return a;
    return apply("-", 0, *a);
  }
  const bool binary = op == "+" || op == "-" || op == "*" || op == "/" || op == "%" || op == "**";
  if (!binary || ast.size() != 3) return malformed();
  auto a = eval(ast[1], count, depth + 1);
  if (!a.ok()) return a;
  auto b = eval(ast[2], count, depth + 1);
  if (!b.ok()) return b;
  return apply(op, *a, *b);
}

}  // namespace

Result<json> read_sidekiq_snippet(std::string_view text) { return Reader(text).document(); }

Result<std::int64_t> eval_count_expression(const json& ast, std::int64_t count) {
  return eval(ast, count, 0);
}

}  // namespace rehearse
