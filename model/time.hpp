// Instants and durations: integer milliseconds, UTC, hand-written ISO-8601.
//
// Every time in the core is an int64 count of milliseconds since the Unix epoch
// (UTC, no leap seconds). Durations are int64 milliseconds. g++ 12 has no
// std::chrono::parse or time-zone database, so parsing and calendar arithmetic
// are written here (civil-date algorithms after H. Hinnant's public-domain
// "chrono-compatible low-level date algorithms").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/result.hpp"

namespace rehearse {

using TimeMs = std::int64_t;      // instant: ms since 1970-01-01T00:00:00Z
using DurationMs = std::int64_t;  // signed span in ms

inline constexpr DurationMs kSecondMs = 1000;
inline constexpr DurationMs kMinuteMs = 60 * kSecondMs;
inline constexpr DurationMs kHourMs = 60 * kMinuteMs;
inline constexpr DurationMs kDayMs = 24 * kHourMs;

// Supported instant range: years 1970..9999 (the cron search and the file
// formats never need more, and bounding it keeps arithmetic overflow-free).
inline constexpr TimeMs kMinInstantMs = 0;
inline constexpr TimeMs kMaxInstantMs = 253402300799999;  // 9999-12-31T23:59:59.999Z

struct CivilDate {
  int year = 1970;
  unsigned month = 1;  // 1..12
  unsigned day = 1;    // 1..31
};

struct CivilTime {
  CivilDate date;
  unsigned hour = 0, minute = 0, second = 0, millisecond = 0;
  unsigned weekday = 4;  // 0 = Sunday .. 6 = Saturday (1970-01-01 was a Thursday)
};

// Days since 1970-01-01 for a proleptic Gregorian date, and back.
std::int64_t days_from_civil(int year, unsigned month, unsigned day) noexcept;
CivilDate civil_from_days(std::int64_t days) noexcept;
bool is_leap_year(int year) noexcept;
unsigned days_in_month(int year, unsigned month) noexcept;
// 0 = Sunday .. 6 = Saturday.
unsigned weekday_from_days(std::int64_t days) noexcept;

// Splits an instant into its UTC calendar fields (floor semantics for ms).
CivilTime to_civil(TimeMs t) noexcept;
TimeMs from_civil(const CivilDate& date, unsigned hour, unsigned minute, unsigned second,
                  unsigned millisecond = 0) noexcept;

// Parses "YYYY-MM-DDTHH:MM[:SS[.fff]]Z" (also "+00:00" and a lower-case "t"/"z"
// are refused: one spelling, UTC only). Fields are range-checked, including
// the day against its month.
Result<TimeMs> parse_instant(std::string_view text);
// "2026-12-04T17:00:00Z"; milliseconds appear only when non-zero ("...:00.250Z").
std::string format_instant(TimeMs t);

// Parses a duration string with units in descending order, each at most once:
// "90s", "30m", "2h", "7d", "1h30m", "250ms", "1d12h". A bare non-negative
// integer string is refused here (integers in files are milliseconds and come
// as JSON numbers; see parse_duration_value in the codec helpers).
Result<DurationMs> parse_duration(std::string_view text);
// Canonical form used in reports: "0ms", "90s" -> "1m30s", "3h", "1d2h".
std::string format_duration(DurationMs d);

}  // namespace rehearse
