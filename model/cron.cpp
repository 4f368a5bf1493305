// Cron expressions, evaluated the way cron-parser 4.9.0 evaluates them in UTC.
//
// The reference is cron-parser 4.9.0 (pinned by BullMQ 5.81): a job runs when
// that library says it runs, so the parser reproduces its observable
// behaviour, quirks included, rather than a textbook cron. In short (details
// and examples in docs/cron.md):
//  - A field is rewritten textually before it is read: month and weekday names
//    become numbers, `*` (else `?`) becomes "min-max". `1*` in a minute field is
//    therefore 10-59, and `JANFEB` is 12.
//  - A list element is `a`, `a-b` (text after a second `-` is ignored), `a-b/n`,
//    or `a/n` (a to the field's end); an `L` token in a day field is kept as a
//    token; numbers follow JavaScript's Number() (so `-0` is 0).
//  - Day fields: day-of-week is a wildcard when its value list has exactly 8
//    entries; day-of-month when its list is at least as long as the month
//    (February counted as 29). When neither is a wildcard a day matches if
//    either field matches. `d#n` (one per expression) limits every matching
//    day to the n-th week of the month.
// Where cron-parser gives up (its 10000-step loop limit) we still answer; where
// it fails lazily (an `L` without weekday in day-of-week) or never fires, we
// refuse at parse time. See tests/data/cron_vectors.json for the agreement.
#include "model/cron.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "model/assert.hpp"

namespace rehearse {

const char* to_string(CronFieldKind kind) noexcept {
  switch (kind) {
    case CronFieldKind::second: return "second";
    case CronFieldKind::minute: return "minute";
    case CronFieldKind::hour: return "hour";
    case CronFieldKind::day_of_month: return "day-of-month";
    case CronFieldKind::month: return "month";
    case CronFieldKind::day_of_week: return "day-of-week";
  }
  return "unknown";
}

namespace {

struct FieldSpec {
  CronFieldKind kind;
  int min;
  int max;
};

// Index = position in the 6-field form.
constexpr std::array<FieldSpec, 6> kSpecs = {{
    {CronFieldKind::second, 0, 59},
    {CronFieldKind::minute, 0, 59},
    {CronFieldKind::hour, 0, 23},
    {CronFieldKind::day_of_month, 1, 31},
    {CronFieldKind::month, 1, 12},
    {CronFieldKind::day_of_week, 0, 7},
}};

constexpr std::size_t kSecond = 0, kMinute = 1, kHour = 2, kDom = 3, kMonth = 4, kDow = 5;

// cron-parser's month lengths for the wildcard test and the explicit-day
// check: February always counts 29 days.
constexpr std::array<unsigned, 13> kDaysInMonthTable = {0,  31, 29, 31, 30, 31, 30,
                                                        31, 31, 30, 31, 30, 31};

constexpr std::array<const char*, 13> kMonthNames = {
    "", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<const char*, 7> kWeekdayNames = {"SUN", "MON", "TUE", "WED",
                                                      "THU", "FRI", "SAT"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char to_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
char to_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

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

// cron-parser's day test for one calendar day (its `_findSchedule` day
// checks, which run before the month is even looked at). `dim` is the real
// length of the month; the wildcard test uses the table with February = 29.
bool day_matches(const CronField& dom, const CronField& dow, unsigned month, unsigned day,
                 unsigned weekday, unsigned dim) {
  const bool dom_match = ((dom.values >> day) & 1U) != 0 || (dom.last_day_of_month && day == dim);
  const bool dow_match = ((dow.values >> weekday) & 1U) != 0 ||
                         (((dow.last_weekday_mask >> weekday) & 1U) != 0 && day + 7 > dim);
  const bool dom_wild = dom.entry_count >= kDaysInMonthTable[month];
  const bool dow_wild = dow.entry_count == 8;
  if (!dom_match && (!dow_match || dow_wild)) return false;
  if (dom_wild && !dow_wild && !dow_match) return false;
  if (dow.nth_occurrence != 0 && (day + 6) / 7 != dow.nth_occurrence) return false;
  return true;
}

// Whether some calendar day in some month of `month_bits` passes the day
// test. Every (month, leap year, weekday of the 1st) combination occurs in
// every 400-year Gregorian cycle, so this decides "ever fires" exactly.
bool some_day_matches(const CronField& dom, const CronField& dow, std::uint64_t month_bits) {
  for (unsigned m = 1; m <= 12; ++m) {
    if (((month_bits >> m) & 1U) == 0) continue;
    for (const bool leap : {false, true}) {
      if (leap && m != 2) continue;
      const unsigned dim = m == 2 ? (leap ? 29U : 28U) : kDaysInMonthTable[m];
      for (unsigned first_weekday = 0; first_weekday < 7; ++first_weekday) {
        for (unsigned d = 1; d <= dim; ++d) {
          if (day_matches(dom, dow, m, d, (first_weekday + d - 1) % 7, dim)) return true;
        }
      }
    }
  }
  return false;
}

// Lowest set bit at or above `from` in `bits`, or -1.
int next_bit(std::uint64_t bits, unsigned from) {
  if (from >= 64) return -1;
  const std::uint64_t rest = bits >> from;
  if (rest == 0) return -1;
  return static_cast<int>(from) + std::countr_zero(rest);
}

std::uint64_t full_mask(int min, int max) {
  std::uint64_t mask = 0;
  for (int v = min; v <= max; ++v) mask |= std::uint64_t{1} << v;
  return mask;
}

// "1-5,10,12" from a bit mask.
std::string compress(std::uint64_t bits, int min, int max, const char* const* names = nullptr) {
  std::string out;
  int v = min;
  while (v <= max) {
    if (((bits >> v) & 1U) == 0) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 <= max && ((bits >> (end + 1)) & 1U) != 0) ++end;
    if (!out.empty()) out += ',';
    auto name = [&](int x) { return names != nullptr ? std::string(names[x]) : std::to_string(x); };
    out += name(v);
    if (end == v + 1) {
      out += ',' + name(end);
    } else if (end > v) {
      out += '-' + name(end);
    }
    v = end + 1;
  }
  return out;
}

const char* ordinal(unsigned n) {
  switch (n) {
    case 1: return "1st";
    case 2: return "2nd";
    case 3: return "3rd";
    case 4: return "4th";
    case 5: return "5th";
    default: return "n-th";
  }
}

// One field while it is parsed: the public CronField plus what only the
// parser needs (per-value entry counts for cron-parser's day-of-month filter,
// a day-of-week `L` token without weekday, the raw `#` occurrence).
struct WorkField {
  CronField field;
  std::array<std::uint32_t, 64> multiplicity{};
  std::uint32_t text_entries = 0;
  std::uint32_t exact_last_entries = 0;  // day-of-month entries spelled exactly "L"
  std::string weekdayless_last;          // e.g. "L" or "L5" in day-of-week
  double nth = 0;                        // Number() of the text after '#', 0 when absent
};

// One list element after cron-parser's repeat/range step: a list of numbers
// (a range), a number, or a token kept as text (an `L` form in a day field).
struct Element {
  enum class Kind { range, number, text } kind = Kind::number;
  std::vector<int> range;
  double number = 0.0;
  std::string text;
};

struct Macro {
  const char* name;
  const char* expansion;
};

// @annually and @midnight are ours: cron-parser 4.9.0 only knows the other
// five and rejects these two (docs/cron.md, "Differences").
constexpr std::array<Macro, 7> kMacros = {{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

}  // namespace

// Parses one expression into a CronSchedule, mirroring cron-parser 4.9.0.
struct CronParser {
  std::size_t field_offset = 0;  // 1 for a 5-field expression (no seconds written)

  Error field_error(ErrorCode code, std::size_t index, std::string_view token,
                    const std::string& why) const {
    const std::size_t position = index + 1 - field_offset;
    return make_error(code, "field " + std::to_string(position) + " (" +
                                to_string(kSpecs[index].kind) + ") " + in_quotes(token) + ": " +
                                why);
  }

  static bool allowed_char(std::size_t index, char c) {
    const bool day_field = index == kDom || index == kDow;
    return is_digit(c) || c == ',' || c == '*' || c == '/' || c == '-' ||
           (day_field && (c == '?' || c == 'L'));
  }

  // The error for a character cron-parser's validation refuses, naming the
  // syntax of other crons that we recognise.
  Error bad_character(std::size_t index, std::string_view token, std::string_view rewritten) const {
    for (const char c : rewritten) {
      if (allowed_char(index, c)) continue;
      switch (c) {
        case 'W':
          return field_error(ErrorCode::unsupported, index, token,
                             "W is not supported (nearest weekday)");
        case 'H':
          return field_error(ErrorCode::unsupported, index, token,
                             "H is not supported (hashed values)");
        case '?':
          return field_error(ErrorCode::invalid_argument, index, token,
                             "? is only allowed in day-of-month and day-of-week");
        case 'L':
          return field_error(ErrorCode::invalid_argument, index, token,
                             "L is only allowed in day-of-month and day-of-week");
        case '#':
          return field_error(ErrorCode::invalid_argument, index, token,
                             "# is only allowed in day-of-week");
        default: break;
      }
      if (is_alpha(c)) {
        return field_error(ErrorCode::invalid_argument, index, token,
                           std::string("unexpected letter '") + c +
                               "' (names are allowed only in month and day-of-week)");
      }
      return field_error(ErrorCode::invalid_argument, index, token,
                         "unexpected character " + in_quotes(std::string_view(&c, 1)));
    }
    return field_error(ErrorCode::invalid_argument, index, token, "empty value");
  }

  Result<Element> parse_range(std::size_t index, std::string_view token, std::string_view val,
                              std::string_view step_text) const {
    const FieldSpec& spec = kSpecs[index];
    const auto parts = split(val, '-');
    Element element;
    if (parts.size() > 1) {
      if (parts[0].empty()) {
        if (parts[1].empty()) {
          return field_error(ErrorCode::invalid_argument, index, token, "invalid range");
        }
        // "-5": Number() of the whole text, checked as a single value later
        // (negative or NaN fails; "-0" is 0, as in cron-parser).
        element.kind = Element::Kind::number;
        element.number = js_to_number(val);
        return element;
      }
      // As in cron-parser, text after a second '-' is ignored ("1-5-9" is 1-5).
      const double lo = js_to_number(parts[0]);
      const double hi = js_to_number(parts[1]);
      if (std::isnan(lo) || std::isnan(hi) || lo < spec.min || hi > spec.max) {
        return field_error(ErrorCode::invalid_argument, index, token,
                           "range " + in_quotes(val) + " is outside " + std::to_string(spec.min) +
                               "-" + std::to_string(spec.max));
      }
      if (lo > hi) {
        return field_error(ErrorCode::invalid_argument, index, token,
                           "range " + in_quotes(val) + " starts after it ends");
      }
      const double step = js_to_number(step_text);
      if (std::isnan(step) || step <= 0) {
        return field_error(ErrorCode::invalid_argument, index, token,
                           "step " + in_quotes(step_text) + " is not a positive number");
      }
      // cron-parser's stepping, including its day-of-week habit of adding 0
      // (Sunday) first whenever the range ends on 0 or 7: `4-7/2` is 0,4,6.
      // A step too large for a double (hundreds of digits) selects nothing.
      element.kind = Element::Kind::range;
      const int first = static_cast<int>(lo);
      const int last = static_cast<int>(hi);
      const bool sunday_first = spec.kind == CronFieldKind::day_of_week && last % 7 == 0;
      if (sunday_first) element.range.push_back(0);
      double counter = step;
      for (int v = first; v <= last; ++v) {
        if (sunday_first && v == 0) {
          counter += 1;
        } else if (std::fmod(counter, step) == 0.0) {
          element.range.push_back(v);
          counter = 1;
        } else {
          counter += 1;
        }
      }
      return element;
    }
    const double number = js_to_number(val);
    if (std::isnan(number)) {
      element.kind = Element::Kind::text;
      element.text = std::string(val);
    } else {
      element.kind = Element::Kind::number;
      element.number = number;
    }
    return element;
  }

  // Replaces each run of three ASCII letters by its month or weekday number.
  Result<std::string> replace_names(std::size_t index, std::string_view token,
                                    std::string_view value) const {
    std::string out;
    std::size_t i = 0;
    while (i < value.size()) {
      const bool name_here = i + 2 < value.size() && is_alpha(value[i]) && is_alpha(value[i + 1]) &&
                             is_alpha(value[i + 2]);
      if (!name_here) {
        out += value[i];
        ++i;
        continue;
      }
      const std::string name = {to_upper(value[i]), to_upper(value[i + 1]), to_upper(value[i + 2])};
      int number = -1;
      if (index == kMonth) {
        for (std::size_t m = 1; m <= 12; ++m) {
          if (name == kMonthNames[m]) number = static_cast<int>(m);
        }
      } else {
        for (std::size_t d = 0; d < 7; ++d) {
          if (name == kWeekdayNames[d]) number = static_cast<int>(d);
        }
      }
      if (number < 0) {
        std::size_t begin = i;
        std::size_t end = i;
        while (end < value.size() && is_alpha(value[end])) ++end;
        return field_error(ErrorCode::invalid_argument, index, token,
                           in_quotes(value.substr(begin, end - begin)) + " is not a " +
                               (index == kMonth ? "month name (JAN-DEC)"
                                                : "weekday name (SUN-SAT)"));
      }
      out += std::to_string(number);
      i += 3;
    }
    return out;
  }

  // Parses field `index` (position in the 6-field form) into `work`.
  Status parse_field(std::size_t index, std::string_view token, WorkField& work) const {
    const FieldSpec& spec = kSpecs[index];
    work.field.kind = spec.kind;
    work.field.text = std::string(token);
    std::string_view value = token;
    if (index == kDow && contains(token, '#')) {
      if (Status s = parse_occurrence(token, work, value); !s.ok()) return s;
    }
    auto rewritten = normalize_field(index, token, value);
    if (!rewritten) return std::move(rewritten).error();
    const auto atoms = split(*rewritten, ',');
    for (const auto atom : atoms) {
      if (atom.empty()) {
        return field_error(ErrorCode::invalid_argument, index, token, "empty element in list");
      }
    }
    for (const auto atom : atoms) {
      if (Status s = add_atom(index, token, atom, work); !s.ok()) return s;
    }
    REHEARSE_ASSERT_EQ(work.field.kind, spec.kind);
    return {};
  }

  // Day-of-week `x#n`: n is read with Number() and must lie in 1-5; `value`
  // becomes the weekday before the '#'.
  Status parse_occurrence(std::string_view token, WorkField& work, std::string_view& value) const {
    const auto atoms = split(token, '#');
    if (contains(token, ',')) {
      return field_error(ErrorCode::invalid_argument, kDow, token,
                         "# cannot be combined with a list");
    }
    if (contains(token, '/')) {
      return field_error(ErrorCode::invalid_argument, kDow, token,
                         "# cannot be combined with a step");
    }
    if (contains(token, '-')) {
      return field_error(ErrorCode::invalid_argument, kDow, token,
                         "# cannot be combined with a range");
    }
    const double nth = js_to_number(atoms.back());
    if (atoms.size() > 2 || std::isnan(nth) || nth < 1 || nth > 5) {
      return field_error(ErrorCode::invalid_argument, kDow, token,
                         "the occurrence after # must be 1-5");
    }
    work.nth = nth;
    value = atoms[0];
    if (value.empty()) {
      return field_error(ErrorCode::invalid_argument, kDow, token, "a weekday is needed before #");
    }
    return {};
  }

  // Names to numbers, the character check, then `*` (else `?`) replaced
  // textually by the field's full range.
  Result<std::string> normalize_field(std::size_t index, std::string_view token,
                                      std::string_view value) const {
    const FieldSpec& spec = kSpecs[index];
    std::string rewritten(value);
    if (index == kMonth || index == kDow) {
      auto replaced = replace_names(index, token, value);
      if (!replaced) return std::move(replaced).error();
      rewritten = std::move(*replaced);
    }
    bool valid = !rewritten.empty();
    for (const char c : rewritten) valid = valid && allowed_char(index, c);
    if (!valid) return bad_character(index, token, rewritten);
    const std::string full = std::to_string(spec.min) + "-" + std::to_string(spec.max);
    if (contains(rewritten, '*')) {
      rewritten = replace_all(rewritten, '*', full);
    } else if (contains(rewritten, '?')) {
      rewritten = replace_all(rewritten, '?', full);
    }
    return rewritten;
  }

  // One list element (`a`, `a-b`, `a/n`, `a-b/n`, an `L` form) into `work`.
  Status add_atom(std::size_t index, std::string_view token, std::string_view atom,
                  WorkField& work) const {
    const FieldSpec& spec = kSpecs[index];
    const auto repeat = split(atom, '/');
    if (repeat.size() > 2) {
      return field_error(ErrorCode::invalid_argument, index, token,
                         "more than one / in " + in_quotes(atom));
    }
    Result<Element> element = Error{};
    if (repeat.size() == 2) {
      // `a/n` means `a-max/n` when `a` is a number (cron-parser's loose ==;
      // an `L` form keeps its text and the step is ignored).
      std::string start(repeat[0]);
      if (!std::isnan(js_to_number(start))) start += "-" + std::to_string(spec.max);
      element = parse_range(index, token, start, repeat[1]);
    } else {
      element = parse_range(index, token, atom, "1");
    }
    if (!element) return std::move(element).error();
    switch (element->kind) {
      case Element::Kind::range:
        for (const int v : element->range) {
          REHEARSE_ASSERT_GE(v, 0);
          REHEARSE_ASSERT_LE(v, spec.max);
          ++work.multiplicity[static_cast<std::size_t>(v)];
        }
        return {};
      case Element::Kind::number: {
        const double n = element->number;
        if (std::isnan(n) || n < spec.min || n > spec.max) {
          return field_error(ErrorCode::invalid_argument, index, token,
                             "value " + in_quotes(atom) + " is outside " +
                                 std::to_string(spec.min) + "-" + std::to_string(spec.max));
        }
        int v = static_cast<int>(n);  // "-0" is 0
        if (index == kDow) v %= 7;    // a single 7 is Sunday
        ++work.multiplicity[static_cast<std::size_t>(v)];
        return {};
      }
      case Element::Kind::text: return add_text(index, token, element->text, work);
    }
    REHEARSE_UNREACHABLE();
  }

  // An element kept as text: only an `L` form in a day field.
  Status add_text(std::size_t index, std::string_view token, const std::string& text,
                  WorkField& work) const {
    CronField& field = work.field;
    const bool day_field = index == kDom || index == kDow;
    if (!day_field || !contains(text, 'L')) {
      return field_error(ErrorCode::invalid_argument, index, token,
                         in_quotes(text) + " is not a number");
    }
    ++work.text_entries;
    if (index == kDom) {
      // Any token with an L means "last day of the month" (`5L` too).
      field.last_day_of_month = true;
      if (text == "L") ++work.exact_last_entries;
    } else if (is_digit(text[0])) {
      // cron-parser reads only the first character: `5L`, `55L` and
      // `5LL` are the last Friday, `9L` the last Tuesday (9 % 7).
      field.last_weekday_mask =
          static_cast<std::uint8_t>(field.last_weekday_mask | (1U << ((text[0] - '0') % 7)));
    } else if (work.weekdayless_last.empty()) {
      work.weekdayless_last = text;
    }
    return {};
  }

  // Counts, masks and flags of a parsed field from its per-value entries.
  static void finish(std::size_t index, WorkField& work) {
    CronField& field = work.field;
    field.values = 0;
    field.entry_count = work.text_entries;
    for (std::size_t v = 0; v < work.multiplicity.size(); ++v) {
      if (work.multiplicity[v] == 0) continue;
      field.entry_count += work.multiplicity[v];
      field.values |= std::uint64_t{1} << v;
    }
    const FieldSpec& spec = kSpecs[index];
    if (index == kDow) {
      // 7 only ever arrives together with 0 (a range adds Sunday first).
      field.values &= ~(std::uint64_t{1} << 7);
      field.unrestricted = field.entry_count == 8;
      // A fractional occurrence (`5#1.5`) never matches in cron-parser; 6
      // matches no day either, and parse refuses such an expression anyway.
      const bool whole = work.nth == std::floor(work.nth);
      field.nth_occurrence = whole ? static_cast<unsigned>(work.nth) : 6U;
      field.nth_weekdays.clear();
      if (field.nth_occurrence != 0) {
        for (unsigned d = 0; d < 7; ++d) {
          if (((field.values >> d) & 1U) != 0) {
            field.nth_weekdays.emplace_back(d, field.nth_occurrence);
          }
        }
      }
    } else if (index == kDom) {
      field.unrestricted = field.entry_count >= 31;
    } else {
      field.unrestricted = field.values == full_mask(spec.min, spec.max);
    }
  }

  Result<CronSchedule> parse(std::string_view expression) {
    CronSchedule schedule;
    schedule.source_ = std::string(expression);
    std::string_view text = expression;
    for (const Macro& macro : kMacros) {
      // Exact spelling only: cron-parser looks the macro up before trimming.
      if (expression == macro.name) {
        schedule.macro_ = macro.name;
        text = macro.expansion;
      }
    }
    const auto tokens = split_fields(text);
    if (Status s = check_field_count(expression, tokens); !s.ok()) return s.error();
    field_offset = tokens.size() == 5 ? 1 : 0;
    schedule.has_seconds_ = tokens.size() == 6;
    std::array<WorkField, 6> work;
    if (Status s = parse_fields(tokens, work); !s.ok()) return s.error();
    if (Status s = check_explicit_day(work); !s.ok()) return s.error();
    if (Status s = check_fires(work); !s.ok()) return s.error();
    schedule.fields_.reserve(6);
    for (auto& w : work) schedule.fields_.push_back(std::move(w.field));
    REHEARSE_ASSERT_EQ(schedule.fields_.size(), std::size_t{6});
    return schedule;
  }

  // 5 or 6 fields; an unknown macro and 7 fields are named as such.
  static Status check_field_count(std::string_view expression,
                                  const std::vector<std::string_view>& tokens) {
    if (tokens.empty()) {
      return make_error(ErrorCode::invalid_argument,
                        "empty cron expression (cron-parser would read it as every minute; "
                        "write \"* * * * *\" if that is meant)");
    }
    if (tokens.size() == 1 && !tokens[0].empty() && tokens[0][0] == '@') {
      const std::string_view word = tokens[0];
      const bool other_cron = word == "@reboot" || word.substr(0, 6) == "@every";
      return make_error(other_cron ? ErrorCode::unsupported : ErrorCode::invalid_argument,
                        "unknown macro " + in_quotes(expression) +
                            " (supported, spelled exactly: @yearly @annually @monthly @weekly "
                            "@daily @midnight @hourly)");
    }
    if (tokens.size() < 5) {
      return make_error(ErrorCode::invalid_argument,
                        std::to_string(tokens.size()) + " field(s) in " + in_quotes(expression) +
                            ": expected 5 (minute hour day-of-month month day-of-week) or 6 "
                            "(second first); cron-parser would pad the missing fields with *");
    }
    if (tokens.size() > 6) {
      return make_error(ErrorCode::unsupported,
                        "field 7 " + in_quotes(tokens[6]) + ": " + std::to_string(tokens.size()) +
                            " fields; a year field (or any 7th field) is not supported");
    }
    return {};
  }

  // Every field in order; a 5-field expression gets second 0.
  Status parse_fields(const std::vector<std::string_view>& tokens,
                      std::array<WorkField, 6>& work) const {
    REHEARSE_ASSERT_EQ(tokens.size() + field_offset, std::size_t{6});
    for (std::size_t index = 0; index < 6; ++index) {
      if (index == 0 && field_offset == 1) {
        work[0].field.kind = CronFieldKind::second;
        work[0].field.text = "0";
        work[0].multiplicity[0] = 1;
        finish(0, work[0]);
        continue;
      }
      const std::string_view token = tokens[index - field_offset];
      if (Status s = parse_field(index, token, work[index]); !s.ok()) return s;
      finish(index, work[index]);
    }
    return {};
  }

  // cron-parser's explicit-day check: with exactly one month entry, the
  // smallest day-of-month must exist in that month (February: 29), and
  // larger days are dropped from the list, and so is every `L` form other
  // than a plain "L" (its filter compares `5L` <= 29, which is false).
  Status check_explicit_day(std::array<WorkField, 6>& work) const {
    CronField& dom = work[kDom].field;
    const CronField& dow = work[kDow].field;
    const CronField& month = work[kMonth].field;
    if (month.entry_count != 1) return {};
    const auto m = static_cast<unsigned>(std::countr_zero(month.values));
    REHEARSE_ASSERT(m >= 1 && m <= 12);
    const unsigned dim = kDaysInMonthTable[m];
    const int smallest = next_bit(dom.values, 0);
    bool explicit_day_error = false;
    if (smallest >= 0 && static_cast<unsigned>(smallest) > dim) explicit_day_error = true;
    for (unsigned d = dim + 1; d <= 31; ++d) work[kDom].multiplicity[d] = 0;
    work[kDom].text_entries = work[kDom].exact_last_entries;
    dom.last_day_of_month = work[kDom].exact_last_entries > 0;
    finish(kDom, work[kDom]);
    if (!explicit_day_error) return {};
    const bool fires = some_day_matches(dom, dow, month.values);
    return field_error(fires ? ErrorCode::invalid_argument : ErrorCode::never_fires, kDom, dom.text,
                       "day " + std::to_string(smallest) + " does not exist in " + kMonthNames[m] +
                           " (month " + in_quotes(month.text) + ")" +
                           (fires ? "; cron-parser 4.9 rejects a day-of-month whose smallest "
                                    "day does not exist in the only month"
                                  : ", so the expression never fires"));
  }

  // An expression that parses must fire: every field matches some value and
  // some calendar day satisfies the day fields and the month together.
  Status check_fires(const std::array<WorkField, 6>& work) const {
    const CronField& dom = work[kDom].field;
    const CronField& dow = work[kDow].field;
    const CronField& month = work[kMonth].field;
    // An `L` without weekday in day-of-week ("L", "L5"): cron-parser accepts it
    // but throws on the first day it checks that no plain weekday matches.
    if (!work[kDow].weekdayless_last.empty() && (dow.values & 0x7f) != 0x7f) {
      return field_error(ErrorCode::invalid_argument, kDow, dow.text,
                         in_quotes(work[kDow].weekdayless_last) +
                             ": L in day-of-week needs a weekday before it, as in 5L "
                             "(cron-parser accepts it but fails at the first day it checks)");
    }
    for (std::size_t index : {kSecond, kMinute, kHour, kMonth}) {
      if (work[index].field.values == 0) {
        return field_error(ErrorCode::never_fires, index, work[index].field.text,
                           "matches no value, so the expression never fires");
      }
    }
    if (work[kDow].nth != 0 && work[kDow].nth != std::floor(work[kDow].nth)) {
      return field_error(ErrorCode::never_fires, kDow, dow.text,
                         "the occurrence after # is not a whole number, so the expression "
                         "never fires");
    }
    if (!some_day_matches(dom, dow, month.values)) {
      return make_error(ErrorCode::never_fires,
                        "the expression never fires: no calendar day satisfies day-of-month " +
                            in_quotes(dom.text) + ", month " + in_quotes(month.text) +
                            " and day-of-week " + in_quotes(dow.text) + " together");
    }
    return {};
  }
};

Result<CronSchedule> CronSchedule::parse(std::string_view expression) {
  CronParser parser;
  return parser.parse(expression);
}

bool CronSchedule::matches(TimeMs t) const {
  if (fields_.size() != 6 || t < kMinInstantMs || t > kMaxInstantMs) return false;
  const CivilTime c = to_civil(t);
  const unsigned dim = days_in_month(c.date.year, c.date.month);
  return ((fields_[kMonth].values >> c.date.month) & 1U) != 0 &&
         day_matches(fields_[kDom], fields_[kDow], c.date.month, c.date.day, c.weekday, dim) &&
         ((fields_[kHour].values >> c.hour) & 1U) != 0 &&
         ((fields_[kMinute].values >> c.minute) & 1U) != 0 &&
         ((fields_[kSecond].values >> c.second) & 1U) != 0;
}

namespace {

// The calendar position next_after walks forward; each step either settles
// a unit (it matches) or moves to a later position and asks for another pass.
struct CronCursor {
  int year = 0;
  unsigned month = 1;
  unsigned day = 1;
  unsigned hour = 0;
  unsigned minute = 0;
  unsigned second = 0;

  void next_day() {
    ++day;
    hour = minute = second = 0;
  }
  void next_hour() {
    ++hour;
    minute = second = 0;
    if (hour > 23) next_day();
  }
  void first_day_of(int y, unsigned m) {
    year = y;
    month = m;
    day = 1;
    hour = minute = second = 0;
  }
};

// Each settle_* returns true when the unit matches (moving forward within
// it if needed), false after moving to a later month, day, hour or minute.
bool settle_month(CronCursor& c, std::uint64_t month_bits) {
  if (((month_bits >> c.month) & 1U) != 0) return true;
  const int m = next_bit(month_bits, c.month + 1);
  if (m < 0 || m > 12) {
    c.first_day_of(c.year + 1, static_cast<unsigned>(std::countr_zero(month_bits)));
  } else {
    c.first_day_of(c.year, static_cast<unsigned>(m));
  }
  return false;
}

bool settle_day(CronCursor& c, const CronField& dom, const CronField& dow) {
  const unsigned dim = days_in_month(c.year, c.month);
  if (c.day > dim) {
    if (c.month == 12) {
      c.first_day_of(c.year + 1, 1);
    } else {
      c.first_day_of(c.year, c.month + 1);
    }
    return false;
  }
  const unsigned weekday = weekday_from_days(days_from_civil(c.year, c.month, c.day));
  if (day_matches(dom, dow, c.month, c.day, weekday, dim)) return true;
  c.next_day();
  return false;
}

bool settle_hour(CronCursor& c, std::uint64_t hour_bits) {
  const int h = next_bit(hour_bits, c.hour);
  if (h < 0 || h > 23) {
    c.next_day();
    return false;
  }
  if (static_cast<unsigned>(h) != c.hour) {
    c.hour = static_cast<unsigned>(h);
    c.minute = c.second = 0;
  }
  return true;
}

bool settle_minute(CronCursor& c, std::uint64_t minute_bits) {
  const int m = next_bit(minute_bits, c.minute);
  if (m < 0 || m > 59) {
    c.next_hour();
    return false;
  }
  if (static_cast<unsigned>(m) != c.minute) {
    c.minute = static_cast<unsigned>(m);
    c.second = 0;
  }
  return true;
}

bool settle_second(CronCursor& c, std::uint64_t second_bits) {
  const int s = next_bit(second_bits, c.second);
  if (s < 0 || s > 59) {
    ++c.minute;
    c.second = 0;
    if (c.minute > 59) {
      c.minute = 0;
      c.next_hour();
    }
    return false;
  }
  c.second = static_cast<unsigned>(s);
  return true;
}

}  // namespace

Status CronSchedule::check_searchable(TimeMs t) const {
  if (fields_.size() != 6) {
    return make_error(ErrorCode::never_fires, "empty cron schedule (not parsed)");
  }
  if (t < kMinInstantMs || t > kMaxInstantMs) {
    return make_error(ErrorCode::invalid_argument,
                      "instant " + std::to_string(t) + " ms is outside the supported range");
  }
  for (const std::size_t index : {kMonth, kHour, kMinute, kSecond}) {
    if (fields_[index].values == 0) {
      return make_error(ErrorCode::never_fires,
                        "cron expression " + in_quotes(source_) + " never fires");
    }
  }
  return {};
}

Result<TimeMs> CronSchedule::next_after(TimeMs t) const {
  if (Status s = check_searchable(t); !s.ok()) return s.error();
  // The first whole second strictly after t.
  const TimeMs start = (t / kSecondMs + 1) * kSecondMs;
  const CivilTime civil = to_civil(start);
  CronCursor c{civil.date.year, civil.date.month, civil.date.day,
               civil.hour,      civil.minute,     civil.second};
  // Each pass moves to a later month, day, hour, minute or second. Parse
  // guarantees a match in every 400-year cycle; the rarest valid expressions
  // (a 5th Monday in February, up to 40 years apart) need about 15000 passes,
  // one per day. The cap only guards against a bug turning into a hang.
  constexpr int kPassesMax = 4'000'000;
  for (int pass = 0; pass < kPassesMax && c.year <= 9999; ++pass) {
    if (!settle_month(c, fields_[kMonth].values) || !settle_day(c, fields_[kDom], fields_[kDow]) ||
        !settle_hour(c, fields_[kHour].values) || !settle_minute(c, fields_[kMinute].values) ||
        !settle_second(c, fields_[kSecond].values)) {
      continue;
    }
    const TimeMs found = from_civil(CivilDate{c.year, c.month, c.day}, c.hour, c.minute, c.second);
    if (found > kMaxInstantMs) break;
    // Postconditions (docs/cron.md): strictly later, and a firing instant.
    REHEARSE_ASSERT_GT(found, t);
    REHEARSE_ASSERT_EQ(found % kSecondMs, 0);
    REHEARSE_ASSERT(matches(found));
    return found;
  }
  return make_error(ErrorCode::invalid_argument,
                    "cron expression " + in_quotes(source_) + " has no firing instant after " +
                        format_instant(t) + " before the end of year 9999 (the supported range)");
}

namespace {

// The literal rule's "one fixed value": a single number, name, `L`, `dL` or
// `d#n`; not `*`, `?`, a range, a list or a step.
bool is_one_fixed_value(const std::string& text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == ',' || c == '-' || c == '/') return false;
  }
  return true;
}

}  // namespace

bool CronSchedule::is_low_frequency() const {
  if (fields_.size() != 6) return false;
  return is_one_fixed_value(fields_[kDom].text) || is_one_fixed_value(fields_[kDow].text);
}

std::vector<std::string> CronSchedule::low_frequency_warnings() const {
  std::vector<std::string> warnings;
  if (fields_.size() != 6) return warnings;
  // "Really low-frequency" here: consecutive firings are always at least a
  // week apart. The literal rule is meant to single out schedules whose next
  // run is far away, and its own example (`0 17 * * 5`) runs weekly. Whether
  // some gap is shorter is decided over one whole 400-year Gregorian cycle
  // (from 2000-01-01); once a shorter gap is seen the scan only goes on for a
  // year or 2000 firings, so the gap reported is the shortest seen there.
  constexpr DurationMs kWeekMs = 7 * kDayMs;
  constexpr TimeMs kCycleStartMs = 946684800000;                     // 2000-01-01T00:00:00Z
  constexpr TimeMs kCycleEndMs = kCycleStartMs + 146097LL * kDayMs;  // 2400-01-01T00:00:00Z
  constexpr int kFiringsAfterShortGapMax = 2000;
  const bool literal = is_low_frequency();
  DurationMs shortest_ms = std::numeric_limits<DurationMs>::max();
  auto previous = next_after(kCycleStartMs - kSecondMs);
  int firings = 0;
  while (previous && *previous < kCycleEndMs) {
    auto next = next_after(*previous);
    if (!next) break;
    shortest_ms = std::min(shortest_ms, *next - *previous);
    ++firings;
    const bool short_gap_seen = shortest_ms < kWeekMs;
    if (short_gap_seen &&
        (firings >= kFiringsAfterShortGapMax || *next - kCycleStartMs >= 366 * kDayMs)) {
      break;
    }
    previous = next;
  }
  if (shortest_ms == std::numeric_limits<DurationMs>::max()) return warnings;
  const bool both_restricted = !fields_[kDom].unrestricted && !fields_[kDow].unrestricted;
  if (literal && shortest_ms < kWeekMs) {
    std::string why =
        "counts as low-frequency by the literal rule (a day field is one fixed "
        "value), yet consecutive firings can be only " +
        format_duration(shortest_ms) + " apart";
    if (both_restricted) {
      why += "; both day fields are restricted, so a day matches when EITHER matches";
    }
    warnings.push_back(why);
  } else if (!literal && shortest_ms >= kWeekMs) {
    warnings.push_back(
        "does not count as low-frequency by the literal rule (no day field is "
        "one fixed value), yet consecutive firings are at least " +
        format_duration(shortest_ms) + " apart");
  }
  return warnings;
}

std::string CronSchedule::describe_day_rule() const {
  if (fields_.size() != 6) return "never (not parsed)";
  const CronField& dom = fields_[kDom];
  const CronField& dow = fields_[kDow];
  std::string rule;
  if (dow.unrestricted) {
    rule = dom.unrestricted ? "any day" : "day-of-month only (day-of-week is unrestricted)";
  } else if (dom.unrestricted) {
    rule = "day-of-week only (day-of-month is unrestricted)";
  } else if (dom.entry_count >= 29) {
    rule = "day-of-week only in months of up to " + std::to_string(dom.entry_count) +
           " days, day-of-month OR day-of-week in longer months (cron-parser counts "
           "day-of-month entries)";
  } else {
    rule = "day-of-month OR day-of-week (both are restricted)";
  }
  if (dow.nth_occurrence != 0) {
    rule += ", and only days " + std::to_string(dow.nth_occurrence * 7 - 6) + "-" +
            std::to_string(dow.nth_occurrence * 7) + " of the month (#" +
            std::to_string(dow.nth_occurrence) + ")";
  }
  return rule;
}

std::string describe_field(const CronField& field) {
  const auto index = static_cast<std::size_t>(field.kind);
  const FieldSpec& spec = kSpecs[index];
  switch (field.kind) {
    case CronFieldKind::second:
    case CronFieldKind::minute:
    case CronFieldKind::hour:
      if (field.unrestricted) return std::string("every ") + to_string(field.kind);
      return compress(field.values, spec.min, spec.max);
    case CronFieldKind::month:
      if (field.unrestricted) return "every month";
      return compress(field.values, 1, 12, kMonthNames.data()) + " (" +
             compress(field.values, 1, 12) + ")";
    case CronFieldKind::day_of_month: {
      if (field.unrestricted) return "any day (unrestricted)";
      std::vector<std::string> parts;
      if (field.values != 0) parts.push_back("days " + compress(field.values, 1, 31));
      if (field.last_day_of_month) parts.emplace_back("the last day of the month");
      std::string out;
      for (const auto& p : parts) out += (out.empty() ? "" : " and ") + p;
      if (out.empty()) out = "no day";
      if (field.entry_count >= 29) {
        out += " (" + std::to_string(field.entry_count) +
               " entries: unrestricted in months of up to that many days)";
      }
      return out;
    }
    case CronFieldKind::day_of_week: {
      if (field.unrestricted) return "any day (unrestricted)";
      std::vector<std::string> parts;
      if (field.values != 0) {
        std::string days = compress(field.values, 0, 6, kWeekdayNames.data());
        if (field.nth_occurrence != 0) {
          days = "the " + std::string(ordinal(field.nth_occurrence)) + " " + days + " of the month";
        } else {
          days += " (" + compress(field.values, 0, 6) + ")";
        }
        parts.push_back(days);
      }
      for (unsigned d = 0; d < 7; ++d) {
        if (((field.last_weekday_mask >> d) & 1U) != 0) {
          parts.push_back(std::string("the last ") + kWeekdayNames[d] + " of the month");
        }
      }
      std::string out;
      for (const auto& p : parts) out += (out.empty() ? "" : " and ") + p;
      if (out.empty()) out = "no day";
      if ((field.values & 0x7f) == 0x7f && !field.unrestricted) {
        out +=
            " (restricted: cron-parser treats only an 8-entry list such as * or 0-7 as "
            "unrestricted)";
      }
      return out;
    }
  }
  return field.text;
}

Result<EffectiveSchedule> effective_schedule(std::string_view default_expression,
                                             const std::optional<std::string>& schedule_env,
                                             const Environment& env) {
  if (schedule_env) {
    if (schedule_env->empty()) {
      return make_error(ErrorCode::invalid_argument,
                        "config error: schedule_env is set but names no variable");
    }
    if (const auto value = env_lookup(env, *schedule_env)) {
      if (value->empty()) {
        return make_error(ErrorCode::invalid_argument,
                          "config error: environment variable " + *schedule_env +
                              " is set but empty; it must hold a cron expression (unset it to "
                              "use the default " +
                              in_quotes(default_expression) + ")",
                          "env:" + *schedule_env);
      }
      auto parsed = CronSchedule::parse(*value);
      if (!parsed) {
        Error error = std::move(parsed).error();
        error.message = "config error: environment variable " + *schedule_env + "=" +
                        in_quotes(*value) + " is not a usable cron expression: " + error.message;
        error.where = "env:" + *schedule_env;
        return error;
      }
      return EffectiveSchedule{std::string(*value), "env:" + *schedule_env, std::move(*parsed)};
    }
  }
  auto parsed = CronSchedule::parse(default_expression);
  if (!parsed) {
    Error error = std::move(parsed).error();
    error.message = "schedule " + in_quotes(default_expression) + ": " + error.message;
    return error;
  }
  return EffectiveSchedule{std::string(default_expression), "default", std::move(*parsed)};
}

}  // namespace rehearse
