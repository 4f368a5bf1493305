// Cron expressions, evaluated the way cron-parser 4.9.0 evaluates them in UTC.
// This unit parses them (and picks a job's effective expression); the
// JavaScript text rules it reads with are in cron_text.cpp, when a schedule
// fires in cron_match.cpp, what it means in words in cron_explain.cpp.
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
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <string>
#include <utility>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/cron_detail.hpp"

namespace rehearse {

using cron_detail::contains;
using cron_detail::FieldSpec;
using cron_detail::in_quotes;
using cron_detail::is_alpha;
using cron_detail::is_digit;
using cron_detail::js_to_number;
using cron_detail::kDaysInMonthTable;
using cron_detail::kDom;
using cron_detail::kDow;
using cron_detail::kHour;
using cron_detail::kMinute;
using cron_detail::kMonth;
using cron_detail::kMonthNames;
using cron_detail::kSecond;
using cron_detail::kSpecs;
using cron_detail::kWeekdayNames;
using cron_detail::next_bit;
using cron_detail::replace_all;
using cron_detail::some_day_matches;
using cron_detail::split;
using cron_detail::split_fields;
using cron_detail::to_upper;

namespace {

std::uint64_t full_mask(int min, int max) {
  std::uint64_t mask = 0;
  for (int v = min; v <= max; ++v) mask |= std::uint64_t{1} << v;
  return mask;
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

Result<CronSchedule> cron_detail::parse_fields_of(std::string_view expression) {
  CronParser parser;
  return parser.parse(expression);
}

Result<EffectiveSchedule> effective_schedule(std::string_view default_expression,
                                             const std::optional<std::string>& schedule_env,
                                             const Environment& env,
                                             const std::optional<std::string>& zone) {
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
      auto parsed = CronSchedule::parse(*value, zone);
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
  auto parsed = CronSchedule::parse(default_expression, zone);
  if (!parsed) {
    Error error = std::move(parsed).error();
    error.message = "schedule " + in_quotes(default_expression) + ": " + error.message;
    return error;
  }
  return EffectiveSchedule{std::string(default_expression), "default", std::move(*parsed)};
}

}  // namespace rehearse
