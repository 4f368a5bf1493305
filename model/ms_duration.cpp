#include "model/ms_duration.hpp"

#include <fmt/format.h>

#include <array>
#include <numeric>
#include <string>

namespace rehearse {

namespace {

constexpr std::size_t kMaxLength = 100;  // ms throws beyond this
constexpr std::int64_t kSecond = 1000;
constexpr std::int64_t kDay = 24 * 3600 * kSecond;

struct Unit {
  std::string_view name;
  std::int64_t ms;
};

// Every spelling ms's regular expression accepts, with its length in ms.
constexpr std::array<Unit, 28> kUnits{{
    {"milliseconds", 1},
    {"millisecond", 1},
    {"msecs", 1},
    {"msec", 1},
    {"ms", 1},
    {"seconds", kSecond},
    {"second", kSecond},
    {"secs", kSecond},
    {"sec", kSecond},
    {"s", kSecond},
    {"minutes", 60 * kSecond},
    {"minute", 60 * kSecond},
    {"mins", 60 * kSecond},
    {"min", 60 * kSecond},
    {"m", 60 * kSecond},
    {"hours", 3600 * kSecond},
    {"hour", 3600 * kSecond},
    {"hrs", 3600 * kSecond},
    {"hr", 3600 * kSecond},
    {"h", 3600 * kSecond},
    {"days", kDay},
    {"day", kDay},
    {"d", kDay},
    {"weeks", 7 * kDay},
    {"week", 7 * kDay},
    {"w", 7 * kDay},
    {"years", kDay * 1461 / 4},
    {"year", kDay * 1461 / 4},
}};
// ms also accepts "yrs", "yr" and "y" for years.
constexpr std::array<std::string_view, 3> kYearShort{"yrs", "yr", "y"};

constexpr std::string_view kExpected =
    "expected a duration as the `ms` package writes it: a non-negative number, optional "
    "spaces, and a unit (ms, s, m, h, d, w, y or their long forms; none means ms), e.g. "
    "'1.5h', '30 seconds', '100'";

Error refuse(std::string_view text, std::string_view why) {
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("'{}': {}; {}", text.substr(0, kMaxLength), why, kExpected));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The unit's length in ms, or 0 when ms knows no such unit.
std::int64_t unit_ms(std::string_view unit) {
  if (unit.empty()) return 1;
  const std::string u = lower(unit);
  for (const Unit& known : kUnits) {
    if (u == known.name) return known.ms;
  }
  for (std::string_view y : kYearShort) {
    if (u == y) return kDay * 1461 / 4;
  }
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<std::int64_t> parse_ms_duration(std::string_view text) {
  if (text.empty()) return refuse(text, "empty");
  if (text.size() > kMaxLength) return refuse(text, "longer than 100 characters");
  if (text.front() == '-') return refuse(text, "a negative duration");
  // The number, as ms's (\d+)?\.?\d+: digits, at most one '.', a digit last.
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  const std::string_view whole = text.substr(0, i);
  std::string_view fraction;
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    fraction = text.substr(start, i - start);
    if (fraction.empty()) return refuse(text, "a number ending in '.'");
  }
  if (whole.empty() && fraction.empty()) return refuse(text, "no number");
  while (i < text.size() && text[i] == ' ') ++i;  // ms allows spaces, not tabs
  const std::string_view unit = text.substr(i);
  const std::int64_t per_unit = unit_ms(unit);
  if (per_unit == 0) return refuse(text, fmt::format("unknown unit '{}'", unit));
  // ms = (whole.fraction) * per_unit, exactly: whole * per_unit plus the
  // fraction's digits times per_unit over 10^digits, which must come out whole.
  while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
  std::int64_t ms = 0;
  for (char c : whole) {
    if (__builtin_mul_overflow(ms, 10, &ms) || __builtin_add_overflow(ms, c - '0', &ms)) {
      return refuse(text, "too large");
    }
  }
  if (__builtin_mul_overflow(ms, per_unit, &ms)) return refuse(text, "too large");
  // A fraction with a non-zero 19th digit is never whole: a unit has fewer
  // than 19 factors of 2 and of 5.
  if (fraction.size() > 18) return refuse(text, "not a whole number of milliseconds");
  std::int64_t numerator = 0, denominator = 1;
  for (char c : fraction) {
    numerator = numerator * 10 + (c - '0');
    denominator *= 10;
  }
  // numerator / denominator * per_unit is whole when the reduced denominator
  // divides per_unit; it is then below per_unit.
  const std::int64_t reduced = denominator / std::gcd(numerator, denominator);
  if (per_unit % reduced != 0) return refuse(text, "not a whole number of milliseconds");
  const std::int64_t part = numerator / (denominator / reduced) * (per_unit / reduced);
  if (__builtin_add_overflow(ms, part, &ms)) return refuse(text, "too large");
  return ms;
}

}  // namespace rehearse
