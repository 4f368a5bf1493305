#include "model/time.hpp"

#include <fmt/format.h>

#include <array>
#include <limits>

#include "model/assert.hpp"

namespace rehearse {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::parse_error: return "parse_error";
    case ErrorCode::schema_error: return "schema_error";
    case ErrorCode::corrupt: return "corrupt";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::io_error: return "io_error";
    case ErrorCode::never_fires: return "never_fires";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::busy: return "busy";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::internal: return "internal";
  }
  return "internal";
}

std::int64_t days_from_civil(int year, unsigned month, unsigned day) noexcept {
  const std::int64_t y = static_cast<std::int64_t>(year) - (month <= 2 ? 1 : 0);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned mp = month > 2 ? month - 3 : month + 9;
  const unsigned doy = (153 * mp + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

CivilDate civil_from_days(std::int64_t days) noexcept {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return CivilDate{static_cast<int>(y + (m <= 2 ? 1 : 0)), m, d};
}

bool is_leap_year(int year) noexcept {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

unsigned days_in_month(int year, unsigned month) noexcept {
  static constexpr std::array<unsigned, 12> kDays{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  REHEARSE_ASSERT(month >= 1 && month <= 12);
  if (month == 2 && is_leap_year(year)) return 29;
  return kDays[month - 1];
}

unsigned weekday_from_days(std::int64_t days) noexcept {
  return static_cast<unsigned>(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

CivilTime to_civil(TimeMs t) noexcept {
  std::int64_t days = t / kDayMs;
  std::int64_t rem = t % kDayMs;
  if (rem < 0) {
    rem += kDayMs;
    days -= 1;
  }
  CivilTime c;
  c.date = civil_from_days(days);
  c.weekday = weekday_from_days(days);
  c.hour = static_cast<unsigned>(rem / kHourMs);
  c.minute = static_cast<unsigned>(rem % kHourMs / kMinuteMs);
  c.second = static_cast<unsigned>(rem % kMinuteMs / kSecondMs);
  c.millisecond = static_cast<unsigned>(rem % kSecondMs);
  return c;
}

TimeMs from_civil(const CivilDate& date, unsigned hour, unsigned minute, unsigned second,
                  unsigned millisecond) noexcept {
  return days_from_civil(date.year, date.month, date.day) * kDayMs +
         static_cast<TimeMs>(hour) * kHourMs + static_cast<TimeMs>(minute) * kMinuteMs +
         static_cast<TimeMs>(second) * kSecondMs + millisecond;
}

namespace {

// Reads exactly `width` decimal digits at text[pos].
bool read_digits(std::string_view text, std::size_t pos, std::size_t width, unsigned& out) {
  if (pos + width > text.size()) return false;
  unsigned v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    const char c = text[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  out = v;
  return true;
}

Error instant_error(std::string_view text, std::string what) {
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("invalid instant \"{}\": {} (expected ISO-8601 UTC such as "
                                "2026-12-04T17:00:00Z)",
                                text, what));
}

}  // namespace

Result<TimeMs> parse_instant(std::string_view text) {
  // YYYY-MM-DDTHH:MM[:SS[.fff]]Z
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, ms = 0;
  if (!read_digits(text, 0, 4, year) || text.size() < 17 || text[4] != '-' ||
      !read_digits(text, 5, 2, month) || text[7] != '-' || !read_digits(text, 8, 2, day) ||
      text[10] != 'T' || !read_digits(text, 11, 2, hour) || text[13] != ':' ||
      !read_digits(text, 14, 2, minute)) {
    return instant_error(text, "malformed date or time");
  }
  std::size_t pos = 16;
  if (pos < text.size() && text[pos] == ':') {
    if (!read_digits(text, pos + 1, 2, second)) return instant_error(text, "malformed seconds");
    pos += 3;
    if (pos < text.size() && text[pos] == '.') {
      std::size_t digits = 0;
      ++pos;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (digits < 3) ms = ms * 10 + static_cast<unsigned>(text[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0 || digits > 3) {
        return instant_error(text, "fractional seconds must have 1 to 3 digits");
      }
      for (std::size_t i = digits; i < 3; ++i) ms *= 10;
    }
  }
  if (pos >= text.size() || text[pos] != 'Z' || pos + 1 != text.size()) {
    return instant_error(text, "must end in 'Z' (UTC)");
  }
  if (year < 1970) return instant_error(text, "year before 1970");
  if (month < 1 || month > 12) return instant_error(text, "month out of range 01-12");
  if (day < 1 || day > days_in_month(static_cast<int>(year), month)) {
    return instant_error(text, "day out of range for its month");
  }
  if (hour > 23) return instant_error(text, "hour out of range 00-23");
  if (minute > 59) return instant_error(text, "minute out of range 00-59");
  if (second > 59) return instant_error(text, "second out of range 00-59 (no leap seconds)");
  const TimeMs t =
      from_civil(CivilDate{static_cast<int>(year), month, day}, hour, minute, second, ms);
  REHEARSE_ASSERT_GE(t, 0);  // 1970 or later
  return t;
}

namespace {

// Writes `value` as exactly `width` decimal digits (value < 10^width).
char* put_digits(char* out, unsigned value, int width) noexcept {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  return out + width;
}

}  // namespace

// Years 0-9999 are written digit by digit (a trace event formats several
// instants, and fmt's parsing of the format string was a visible share of a
// fleet run, docs/performance.md); other years keep fmt's rendering.
std::string format_instant(TimeMs t) {
  const CivilTime c = to_civil(t);
  if (c.date.year >= 0 && c.date.year <= 9999) {
    char buf[24];
    char* p = put_digits(buf, static_cast<unsigned>(c.date.year), 4);
    *p++ = '-';
    p = put_digits(p, c.date.month, 2);
    *p++ = '-';
    p = put_digits(p, c.date.day, 2);
    *p++ = 'T';
    p = put_digits(p, c.hour, 2);
    *p++ = ':';
    p = put_digits(p, c.minute, 2);
    *p++ = ':';
    p = put_digits(p, c.second, 2);
    if (c.millisecond != 0) {
      *p++ = '.';
      p = put_digits(p, c.millisecond, 3);
    }
    *p++ = 'Z';
    return std::string(buf, p);
  }
  if (c.millisecond != 0) {
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", c.date.year, c.date.month,
                       c.date.day, c.hour, c.minute, c.second, c.millisecond);
  }
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", c.date.year, c.date.month, c.date.day,
                     c.hour, c.minute, c.second);
}

Result<DurationMs> parse_duration(std::string_view text) {
  struct Unit {
    std::string_view name;
    DurationMs ms;
  };
  // Longest unit names first where one is a prefix of another ("ms" vs "m").
  static constexpr std::array<Unit, 5> kUnits{
      {{"d", kDayMs}, {"h", kHourMs}, {"m", kMinuteMs}, {"s", kSecondMs}, {"ms", 1}}};
  auto fail = [&](const std::string& what) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("invalid duration \"{}\": {} (expected a number with units in "
                                  "descending order, e.g. \"90s\", \"30m\", \"1h30m\", \"7d\")",
                                  text, what));
  };
  if (text.empty()) return fail("empty");
  DurationMs total = 0;
  std::size_t pos = 0;
  int last_unit = -1;
  while (pos < text.size()) {
    if (text[pos] < '0' || text[pos] > '9') return fail("expected a digit");
    std::int64_t n = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (n > std::numeric_limits<std::int64_t>::max() / 10 - 10) return fail("too large");
      n = n * 10 + (text[pos] - '0');
      ++pos;
    }
    int unit = -1;
    if (text.substr(pos, 2) == "ms") {
      unit = 4;
    } else if (pos < text.size()) {
      for (int i = 0; i < 4; ++i) {
        if (text[pos] == kUnits[static_cast<std::size_t>(i)].name[0]) unit = i;
      }
    }
    if (unit < 0) return fail("missing or unknown unit (use d, h, m, s or ms)");
    if (unit <= last_unit) return fail("units must appear once each, largest first");
    const DurationMs scale = kUnits[static_cast<std::size_t>(unit)].ms;
    if (n > (std::numeric_limits<std::int64_t>::max() - total) / scale) return fail("too large");
    total += n * scale;
    REHEARSE_ASSERT_GE(total, 0);  // the overflow check above holds
    pos += kUnits[static_cast<std::size_t>(unit)].name.size();
    last_unit = unit;
  }
  return total;
}

std::string format_duration(DurationMs d) {
  if (d == 0) return "0ms";
  std::string out;
  if (d < 0) {
    out = "-";
    d = -d;
  }
  const std::array<std::pair<DurationMs, const char*>, 5> parts{
      {{kDayMs, "d"}, {kHourMs, "h"}, {kMinuteMs, "m"}, {kSecondMs, "s"}, {1, "ms"}}};
  for (const auto& [scale, name] : parts) {
    if (d >= scale) {
      out += fmt::format("{}{}", d / scale, name);
      d %= scale;
    }
  }
  REHEARSE_ASSERT_EQ(d, 0);  // every millisecond was written
  return out;
}

}  // namespace rehearse
