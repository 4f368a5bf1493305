// Goal: instants and durations parse strictly and round-trip.
// Method: fixed vectors for each rule, then properties over the whole range.
#include "model/time.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/support/property.hpp"

namespace rehearse {
namespace {

TEST(Instant, ParsesAndFormatsUtc) {
  auto t = parse_instant("2026-12-04T17:00:00Z");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(format_instant(*t), "2026-12-04T17:00:00Z");
  EXPECT_EQ(*parse_instant("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_instant("1970-01-01T00:01Z"), 60000);
  EXPECT_EQ(*parse_instant("1970-01-01T00:00:01.5Z"), 1500);
  EXPECT_EQ(format_instant(1500), "1970-01-01T00:00:01.500Z");
  EXPECT_EQ(*parse_instant("2024-02-29T23:59:59Z"), 1709251199000);
}

TEST(Instant, RejectsMalformedAndOutOfRange) {
  for (const char* bad :
       {"", "2026-12-04", "2026-12-04 17:00:00Z", "2026-12-04T17:00:00",
        "2026-12-04T17:00:00+00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-12-04T24:00:00Z", "2026-12-04T23:60:00Z",
        "2026-12-04T23:59:60Z", "1969-12-31T23:59:59Z", "2026-12-04T17:00:00.1234Z",
        "2026-12-04T17:00:00.Z", "2026-12-04T17:00:00Zjunk", "２026-12-04T17:00:00Z"}) {
    auto r = parse_instant(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("invalid instant"), std::string::npos);
    }
  }
}

TEST(Duration, ParsesUnitStrings) {
  EXPECT_EQ(*parse_duration("90s"), 90 * kSecondMs);
  EXPECT_EQ(*parse_duration("30m"), 30 * kMinuteMs);
  EXPECT_EQ(*parse_duration("2h"), 2 * kHourMs);
  EXPECT_EQ(*parse_duration("7d"), 7 * kDayMs);
  EXPECT_EQ(*parse_duration("1h30m"), 90 * kMinuteMs);
  EXPECT_EQ(*parse_duration("250ms"), 250);
  EXPECT_EQ(*parse_duration("1d2h3m4s5ms"), kDayMs + 2 * kHourMs + 3 * kMinuteMs + 4005);
  EXPECT_EQ(*parse_duration("0s"), 0);
}

TEST(Duration, RejectsBadStrings) {
  for (const char* bad : {"", "90", "s", "1x", "30m1h", "1h1h", "-5s", "1.5h", " 1h", "1h ",
                          "99999999999999999999s"}) {
    EXPECT_FALSE(parse_duration(bad).ok()) << bad;
  }
}

TEST(Duration, FormatsCanonically) {
  EXPECT_EQ(format_duration(0), "0ms");
  EXPECT_EQ(format_duration(90 * kSecondMs), "1m30s");
  EXPECT_EQ(format_duration(3 * kHourMs), "3h");
  EXPECT_EQ(format_duration(kDayMs + 2 * kHourMs), "1d2h");
  EXPECT_EQ(format_duration(1500), "1s500ms");
}

TEST(Civil, KnownWeekdays) {
  EXPECT_EQ(to_civil(0).weekday, 4u);                                       // Thursday
  EXPECT_EQ(to_civil(*parse_instant("2026-12-04T17:00:00Z")).weekday, 5u);  // Friday
  EXPECT_EQ(to_civil(*parse_instant("2000-01-01T00:00:00Z")).weekday, 6u);  // Saturday
}

REHEARSE_PROP(InstantProps, FormatParseRoundTrip, ()) {
  const auto t = *rc::gen::inRange<std::int64_t>(kMinInstantMs, kMaxInstantMs);
  const std::string text = format_instant(t);
  const auto back = parse_instant(text);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == t);
}

// format_instant writes digits by hand for speed; the rendering it must
// match is the plain fmt one (also what it still uses outside years 0-9999).
std::string reference_format(TimeMs t) {
  const CivilTime c = to_civil(t);
  const std::string seconds = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", c.date.year,
                                          c.date.month, c.date.day, c.hour, c.minute, c.second);
  return c.millisecond == 0 ? seconds + "Z" : fmt::format("{}.{:03}Z", seconds, c.millisecond);
}

TEST(Instant, FormatsTheRangesEdgesAsFmtDoes) {
  for (const TimeMs t : {kMinInstantMs, kMinInstantMs + 1, TimeMs{0}, TimeMs{999}, TimeMs{-1},
                         kMaxInstantMs - 1, kMaxInstantMs}) {
    EXPECT_EQ(format_instant(t), reference_format(t)) << t;
  }
}

REHEARSE_PROP(InstantProps, FormatMatchesTheFmtRendering, ()) {
  const auto t = *rc::gen::inRange<std::int64_t>(kMinInstantMs, kMaxInstantMs);
  const bool whole_second = *rc::gen::arbitrary<bool>();
  const TimeMs instant = whole_second ? t - ((t % kSecondMs) + kSecondMs) % kSecondMs : t;
  RC_ASSERT(format_instant(instant) == reference_format(instant));
}

REHEARSE_PROP(InstantProps, CivilRoundTrip, ()) {
  const auto days = *rc::gen::inRange<std::int64_t>(0, 2932896);
  const CivilDate d = civil_from_days(days);
  RC_ASSERT(days_from_civil(d.year, d.month, d.day) == days);
  RC_ASSERT(d.day >= 1u);
  RC_ASSERT(d.day <= days_in_month(d.year, d.month));
}

REHEARSE_PROP(DurationProps, FormatParseRoundTrip, ()) {
  const auto d = *rc::gen::inRange<std::int64_t>(0, 400 * kDayMs);
  const auto back = parse_duration(format_duration(d));
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == d);
}

}  // namespace
}  // namespace rehearse
