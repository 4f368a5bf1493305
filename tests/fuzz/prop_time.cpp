// Instants and durations (docs/fuzzing.md, target `time`). Input: 8 bytes of
// instant, 8 bytes of duration, 1 byte choosing what the rest is read as.
//  - every supported instant: format_instant then parse_instant gives it back;
//    to_civil then from_civil gives it back; the civil fields are in range and
//    the weekday agrees with weekday_from_days; days <-> civil round-trips;
//  - every duration >= 0: format_duration then parse_duration gives it back;
//  - text: parse_instant / parse_duration either refuse (invalid_argument,
//    naming the text) or accept a value in range whose canonical form parses
//    back to the same value.
#include <string>

#include "model/time.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

void check_instant_value(TimeMs t) {
  const std::string text = format_instant(t);
  const Result<TimeMs> back = parse_instant(text);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == t, std::to_string(t) + " -> " + text);
  const CivilTime c = to_civil(t);
  REHEARSE_FUZZ_CHECK(c.date.month >= 1 && c.date.month <= 12 && c.date.day >= 1 &&
                          c.date.day <= days_in_month(c.date.year, c.date.month) && c.hour < 24 &&
                          c.minute < 60 && c.second < 60 && c.millisecond < 1000 && c.weekday < 7,
                      text);
  REHEARSE_FUZZ_CHECK(from_civil(c.date, c.hour, c.minute, c.second, c.millisecond) == t, text);
  const std::int64_t days = days_from_civil(c.date.year, c.date.month, c.date.day);
  REHEARSE_FUZZ_CHECK(days == t / kDayMs, text);
  REHEARSE_FUZZ_CHECK(weekday_from_days(days) == c.weekday, text);
  const CivilDate d = civil_from_days(days);
  REHEARSE_FUZZ_CHECK(d.year == c.date.year && d.month == c.date.month && d.day == c.date.day,
                      text);
}

void check_duration_value(DurationMs d) {
  const std::string text = format_duration(d);
  const Result<DurationMs> back = parse_duration(text);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == d,
                      std::to_string(d) + " -> " + text + " -> " +
                          (back.ok() ? std::to_string(*back) : back.error().describe()));
}

void check_refused(std::string_view text, const Error& error) {
  REHEARSE_FUZZ_CHECK(error.code == ErrorCode::invalid_argument, error.describe());
  REHEARSE_FUZZ_CHECK(!error.message.empty(), std::string(text));
}

void check_instant_text(std::string_view text) {
  const Result<TimeMs> t = parse_instant(text);
  if (!t.ok()) return check_refused(text, t.error());
  REHEARSE_FUZZ_CHECK(*t >= kMinInstantMs && *t <= kMaxInstantMs, std::string(text));
  check_instant_value(*t);
}

void check_duration_text(std::string_view text) {
  const Result<DurationMs> d = parse_duration(text);
  if (!d.ok()) return check_refused(text, d.error());
  REHEARSE_FUZZ_CHECK(*d >= 0, std::string(text) + " -> " + std::to_string(*d));
  check_duration_value(*d);
}

}  // namespace

void check_time(std::string_view input) {
  Input in(input);
  check_instant_value(
      static_cast<TimeMs>(in.u64() % static_cast<std::uint64_t>(kMaxInstantMs + 1)));
  const std::uint64_t raw_duration = in.u64();
  // Small durations are the interesting ones; the top bit widens to all of int64.
  const std::uint64_t bound = (raw_duration >> 63) != 0 ? (std::uint64_t{1} << 63) - 1
                                                        : std::uint64_t{400} * 24 * 3600 * 1000;
  check_duration_value(static_cast<DurationMs>(raw_duration % bound));
  if ((in.byte() & 1U) == 0) {
    check_instant_text(in.rest());
  } else {
    check_duration_text(in.rest());
  }
}

}  // namespace rehearse::fuzz
