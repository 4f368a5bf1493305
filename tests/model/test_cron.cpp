// Goal: every cron rule of docs/semantics.md §3 holds: accepted syntax and
// its errors, the day-of-month / day-of-week rule as cron-parser 4.9 applies
// it, next_after (strictly after, whole seconds, fast, never-firing
// expressions refused), the literal low-frequency rule with its warnings, and
// the environment override of a job's schedule.
// Method: one fixed example per rule (the boundary cases of incident 001,
// docs/semantics.md §11, among them), then RapidCheck properties: for random dense expressions
// next_after returns a match after t with no match in between (brute force
// over a bounded window), it is monotone, and parse never crashes on any
// string. Agreement with cron-parser itself lives in test_cron_vectors.cpp.
#include "model/cron.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/property.hpp"

namespace rehearse {
namespace {

TimeMs at(const char* text) {
  auto t = parse_instant(text);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

CronSchedule cron(const std::string& expression) {
  auto parsed = CronSchedule::parse(expression);
  if (!parsed) {
    ADD_FAILURE() << expression << ": " << parsed.error().message;
    return CronSchedule{};
  }
  return std::move(parsed).value();
}

// The next `count` firing instants after `from`, formatted.
std::vector<std::string> next_n(const std::string& expression, const char* from, int count = 3) {
  std::vector<std::string> out;
  const CronSchedule schedule = cron(expression);
  TimeMs t = at(from);
  for (int i = 0; i < count; ++i) {
    auto n = schedule.next_after(t);
    if (!n) {
      out.push_back("error: " + n.error().message);
      break;
    }
    out.push_back(format_instant(*n));
    t = *n;
  }
  return out;
}

using Instants = std::vector<std::string>;

Error parse_error(const std::string& expression) {
  auto parsed = CronSchedule::parse(expression);
  if (parsed) {
    ADD_FAILURE() << expression << " was accepted";
    return Error{};
  }
  return parsed.error();
}

bool has(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ------------------------------------------------------------------ syntax

TEST(CronParse, FiveFieldsHaveAnImplicitZeroSecond) {
  const CronSchedule s = cron("0 17 * * 5");
  EXPECT_FALSE(s.has_seconds_field());
  ASSERT_EQ(s.fields().size(), 6u);
  EXPECT_EQ(s.fields()[0].text, "0");
  EXPECT_EQ(s.fields()[0].values, 1u);
  EXPECT_EQ(s.fields()[2].text, "17");
  EXPECT_EQ(s.source(), "0 17 * * 5");
}

TEST(CronParse, SixFieldsStartWithSeconds) {
  const CronSchedule s = cron("0 0 17 * * 5");
  EXPECT_TRUE(s.has_seconds_field());
  EXPECT_EQ(s.fields()[2].values, std::uint64_t{1} << 17);
  EXPECT_EQ(next_n("30 15 10 * * *", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-01-01T10:15:30Z", "2024-01-02T10:15:30Z"}));
  EXPECT_EQ(next_n("*/20 * * * * *", "2024-01-01T00:00:00Z"),
            (Instants{"2024-01-01T00:00:20Z", "2024-01-01T00:00:40Z", "2024-01-01T00:01:00Z"}));
}

TEST(CronParse, NumbersRangesListsAndSteps) {
  auto minutes = [](const char* field) {
    return cron(std::string(field) + " * * * *").fields()[1].values;
  };
  auto bits = [](std::initializer_list<int> values) {
    std::uint64_t mask = 0;
    for (const int v : values) mask |= std::uint64_t{1} << v;
    return mask;
  };
  EXPECT_EQ(minutes("7"), bits({7}));
  EXPECT_EQ(minutes("1-4"), bits({1, 2, 3, 4}));
  EXPECT_EQ(minutes("1,5,9"), bits({1, 5, 9}));
  EXPECT_EQ(minutes("*/15"), bits({0, 15, 30, 45}));
  EXPECT_EQ(minutes("10-30/10"), bits({10, 20, 30}));
  EXPECT_EQ(minutes("5/20"), bits({5, 25, 45}));  // a/n runs from a to the field's end
  EXPECT_EQ(minutes("0-59/60"), bits({0}));
  EXPECT_EQ(minutes("1-2,58-59"), bits({1, 2, 58, 59}));
  EXPECT_EQ(cron("0 */6 * * *").fields()[2].values, bits({0, 6, 12, 18}));
  EXPECT_EQ(cron("0 0 1 */3 *").fields()[4].values, bits({1, 4, 7, 10}));
}

TEST(CronParse, MonthAndWeekdayNamesAreCaseInsensitive) {
  EXPECT_EQ(cron("0 9 * * MON-FRI").fields()[5].values, 0b0111110u);
  EXPECT_EQ(cron("0 9 * * mon-fri").fields()[5].values, 0b0111110u);
  EXPECT_EQ(cron("0 9 * * Sat,sun").fields()[5].values, 0b1000001u);
  EXPECT_EQ(cron("0 0 1 jan,Jul,DEC *").fields()[4].values, (1u << 1) | (1u << 7) | (1u << 12));
  EXPECT_EQ(cron("0 0 1 JAN-MAR *").fields()[4].values, 0b1110u);
  EXPECT_EQ(parse_error("0 0 * * MONDAY").code, ErrorCode::invalid_argument);
  EXPECT_TRUE(has(parse_error("0 0 1 JANUARY *").message, "month name"));
}

TEST(CronParse, WeekdaySevenIsSunday) {
  EXPECT_EQ(cron("0 0 * * 7").fields()[5].values, 1u);
  EXPECT_EQ(cron("0 0 * * 0").fields()[5].values, 1u);
  EXPECT_EQ(next_n("0 12 * * 7", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-01-07T12:00:00Z", "2024-01-14T12:00:00Z"}));
  EXPECT_TRUE(cron("0 0 * * 0-7").fields()[5].unrestricted);
}

TEST(CronParse, QuestionMarkIsAStarInDayFieldsOnly) {
  EXPECT_EQ(next_n("0 0 ? * *", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"}));
  EXPECT_TRUE(cron("0 0 ? * ?").fields()[3].unrestricted);
  EXPECT_TRUE(cron("0 0 ? * ?").fields()[5].unrestricted);
  for (const char* bad : {"? * * * *", "* ? * * *", "0 0 1 ? *", "? 0 0 1 * *"}) {
    const Error e = parse_error(bad);
    EXPECT_EQ(e.code, ErrorCode::invalid_argument) << bad;
    EXPECT_TRUE(has(e.message, "? is only allowed in day-of-month and day-of-week")) << e.message;
  }
}

TEST(CronParse, MacrosExpandToTheirFields) {
  struct Case {
    const char* macro;
    const char* first_after_2024;
  };
  for (const Case& c :
       {Case{"@yearly", "2025-01-01T00:00:00Z"}, Case{"@annually", "2025-01-01T00:00:00Z"},
        Case{"@monthly", "2024-02-01T00:00:00Z"}, Case{"@weekly", "2024-01-07T00:00:00Z"},
        Case{"@daily", "2024-01-02T00:00:00Z"}, Case{"@midnight", "2024-01-02T00:00:00Z"},
        Case{"@hourly", "2024-01-01T01:00:00Z"}}) {
    const CronSchedule s = cron(c.macro);
    EXPECT_EQ(s.macro(), c.macro);
    EXPECT_EQ(s.source(), c.macro);
    EXPECT_EQ(next_n(c.macro, "2024-01-01T00:00:00Z", 1), Instants{c.first_after_2024}) << c.macro;
  }
  // Spelled exactly, as cron-parser looks them up: no case folding, no spaces.
  for (const char* bad : {"@Daily", "@YEARLY", " @daily", "@daily ", "@fortnightly", "@"}) {
    EXPECT_EQ(parse_error(bad).code, ErrorCode::invalid_argument) << bad;
  }
  EXPECT_EQ(parse_error("@reboot").code, ErrorCode::unsupported);
}

TEST(CronParse, WhitespaceSeparatesFieldsAsInJavaScript) {
  for (const char* spaced : {"0\t0\n1 * *", "  0   0  1 * *  ", "0 0 1 * *\r\n",
                             "\xc2\xa0"
                             "0 0 1 * *",
                             "0\xe2\x80\x83"
                             "0 1 * *",
                             "\xef\xbb\xbf"
                             "0 0 1 * *",
                             "0 0 1 * *\xe3\x80\x80"}) {
    EXPECT_EQ(next_n(spaced, "2024-01-01T00:00:00Z", 1), Instants{"2024-02-01T00:00:00Z"})
        << spaced;
  }
}

// Documented strictness 1 and 2: cron-parser pads missing fields with * and
// reads an empty expression as every minute; both hide mistakes.
TEST(CronParse, FewerThanFiveFieldsAndEmptyAreErrors) {
  for (const char* bad : {"", " ", "\t\n", "* * * *", "0 12 * *", "5", "* *", "MON"}) {
    const Error e = parse_error(bad);
    EXPECT_EQ(e.code, ErrorCode::invalid_argument) << "[" << bad << "]";
    EXPECT_TRUE(has(e.message, "empty cron expression") || has(e.message, "expected 5"))
        << e.message;
  }
}

TEST(CronParse, UnsupportedSyntaxNamesTokenAndFieldPosition) {
  EXPECT_EQ(parse_error("0 0 15W * *").message,
            "field 3 (day-of-month) \"15W\": W is not supported (nearest weekday)");
  EXPECT_EQ(parse_error("0 0 15W * *").code, ErrorCode::unsupported);
  // In the 6-field form day-of-month is the 4th field as written.
  EXPECT_EQ(parse_error("0 0 0 LW * *").message,
            "field 4 (day-of-month) \"LW\": W is not supported (nearest weekday)");
  EXPECT_EQ(parse_error("H * * * *").message,
            "field 1 (minute) \"H\": H is not supported (hashed values)");
  EXPECT_EQ(parse_error("H * * * *").code, ErrorCode::unsupported);
  const Error year = parse_error("0 0 0 1 1 * 2030");
  EXPECT_EQ(year.code, ErrorCode::unsupported);
  EXPECT_TRUE(has(year.message, "field 7 \"2030\"")) << year.message;
  EXPECT_TRUE(has(year.message, "year field")) << year.message;
}

TEST(CronParse, InvalidFieldsNameTokenAndFieldPosition) {
  struct Case {
    const char* expression;
    const char* expected_prefix;
  };
  for (const Case& c : {
           Case{"60 * * * *", "field 1 (minute) \"60\": "},
           Case{"* 24 * * *", "field 2 (hour) \"24\": "},
           Case{"* * 0 * *", "field 3 (day-of-month) \"0\": "},
           Case{"* * * 13 *", "field 4 (month) \"13\": "},
           Case{"* * * * 8", "field 5 (day-of-week) \"8\": "},
           Case{"60 * * * * *", "field 1 (second) \"60\": "},
           Case{"5-1 * * * *", "field 1 (minute) \"5-1\": "},
           Case{"*/0 * * * *", "field 1 (minute) \"*/0\": "},
           Case{"1,,2 * * * *", "field 1 (minute) \"1,,2\": "},
           Case{"1/2/3 * * * *", "field 1 (minute) \"1/2/3\": "},
           Case{"0 0 * * 5#6", "field 5 (day-of-week) \"5#6\": "},
           Case{"0 0 * * 1-5#2", "field 5 (day-of-week) \"1-5#2\": "},
           Case{"0 0 L-5 * *", "field 3 (day-of-month) \"L-5\": "},
           Case{"0 L * * *", "field 2 (hour) \"L\": "},
           Case{"0 0 * * L", "field 5 (day-of-week) \"L\": "},
           Case{"0 0 * MON *", "field 4 (month) \"MON\": "},
           Case{"0 0 \x01 * *", "field 3 (day-of-month) \"\\x01\": "},
       }) {
    const Error e = parse_error(c.expression);
    EXPECT_EQ(e.message.rfind(c.expected_prefix, 0), 0u) << c.expression << " -> " << e.message;
    EXPECT_EQ(e.code, ErrorCode::invalid_argument) << c.expression;
  }
}

// cron-parser 4.9 behaviours that look like mistakes but decide when BullMQ
// jobs run; the core reproduces them (docs/cron.md, "cron-parser's reading").
TEST(CronParse, ReproducesCronParserReadings) {
  EXPECT_EQ(cron("1* * * * *").fields()[1].values, cron("10-59 * * * *").fields()[1].values);
  EXPECT_EQ(cron("0 0 1-5-9 * *").fields()[3].values, cron("0 0 1-5 * *").fields()[3].values);
  EXPECT_EQ(cron("-0 * * * *").fields()[1].values, 1u);
  EXPECT_EQ(cron("0 0 1 JANFEB *").fields()[4].values, std::uint64_t{1} << 12);
  // A weekday range ending on 7 (or 0) adds Sunday first.
  EXPECT_EQ(cron("0 0 * * 4-7/2").fields()[5].values, 0b1010001u);
  // `5#1e0` reads its occurrence with Number().
  EXPECT_EQ(cron("0 0 * * 5#1e0").fields()[5].nth_occurrence, 1u);
  // `dL` looks at the first character only: 9L is the last Tuesday.
  EXPECT_EQ(cron("0 0 * * 9L").fields()[5].last_weekday_mask, 1u << 2);
}

// ------------------------------------------------------------------ day rule

TEST(CronDayRule, FullRangeDayFieldsAreUnrestricted) {
  // `0 0 1-31 * 1` fires on Mondays only (docs/semantics.md §3, checked on cron-parser).
  EXPECT_EQ(next_n("0 0 1-31 * 1", "2024-01-01T00:00:00Z"),
            (Instants{"2024-01-08T00:00:00Z", "2024-01-15T00:00:00Z", "2024-01-22T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 */1 * 1", "2024-01-01T00:00:00Z", 1), Instants{"2024-01-08T00:00:00Z"});
  EXPECT_TRUE(cron("0 0 1-31 * 1").fields()[3].unrestricted);
  EXPECT_TRUE(cron("0 0 * * 1-7").fields()[5].unrestricted);
}

TEST(CronDayRule, BothRestrictedMeansEitherMatches) {
  // `0 0 */2 * 1`: odd days or Mondays.
  EXPECT_EQ(next_n("0 0 */2 * 1", "2024-01-01T00:00:00Z", 5),
            (Instants{"2024-01-03T00:00:00Z", "2024-01-05T00:00:00Z", "2024-01-07T00:00:00Z",
                      "2024-01-08T00:00:00Z", "2024-01-09T00:00:00Z"}));
  // `30 4 1,15 * 5`: the 1st, the 15th and every Friday.
  EXPECT_EQ(next_n("30 4 1,15 * 5", "2024-03-01T05:00:00Z", 3),
            (Instants{"2024-03-08T04:30:00Z", "2024-03-15T04:30:00Z", "2024-03-22T04:30:00Z"}));
}

// cronie treats a day field starting with `*` as unrestricted; cron-parser
// looks at the values. `*/7` in day-of-week is the list 0,7: a restriction.
TEST(CronDayRule, AStarPrefixDoesNotMakeAFieldUnrestricted) {
  EXPECT_FALSE(cron("0 0 1-7 * */7").fields()[5].unrestricted);
  // cronie: the first Sunday only. cron-parser: days 1-7 or Sundays.
  EXPECT_EQ(next_n("0 0 1-7 * */7", "2024-01-06T12:00:00Z", 3),
            (Instants{"2024-01-07T00:00:00Z", "2024-01-14T00:00:00Z", "2024-01-21T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 1-7 * */7", "2024-01-28T12:00:00Z", 2),
            (Instants{"2024-02-01T00:00:00Z", "2024-02-02T00:00:00Z"}));
}

TEST(CronDayRule, OnlyAnEightEntryWeekdayListIsUnrestricted) {
  // cron-parser counts list entries: 0-6 has 7, so it is a restriction that
  // happens to match every day, and the OR makes `0 0 1 * 0-6` daily.
  EXPECT_FALSE(cron("0 0 1 * 0-6").fields()[5].unrestricted);
  EXPECT_EQ(next_n("0 0 1 * 0-6", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 1 * 0-7", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"}));
}

TEST(CronDayRule, DayOfMonthWildcardDependsOnTheMonthLength) {
  // 30 entries: a wildcard in 30-day months and February, a restriction in
  // 31-day months (cron-parser compares the list length with the month).
  const CronSchedule s = cron("0 0 1-30 * 1");
  EXPECT_FALSE(s.fields()[3].unrestricted);
  EXPECT_EQ(s.fields()[3].entry_count, 30u);
  EXPECT_EQ(next_n("0 0 1-30 * 1", "2024-01-01T00:00:00Z", 1), Instants{"2024-01-02T00:00:00Z"});
  EXPECT_EQ(next_n("0 0 1-30 * 1", "2024-04-01T00:00:00Z", 2),
            (Instants{"2024-04-08T00:00:00Z", "2024-04-15T00:00:00Z"}));
}

TEST(CronDayRule, LastDayOfMonth) {
  EXPECT_EQ(next_n("0 0 L * *", "2024-01-01T00:00:00Z", 4),
            (Instants{"2024-01-31T00:00:00Z", "2024-02-29T00:00:00Z", "2024-03-31T00:00:00Z",
                      "2024-04-30T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 L 2 *", "2099-12-31T00:00:00Z", 2),
            (Instants{"2100-02-28T00:00:00Z", "2101-02-28T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 1,L * *", "2024-02-02T00:00:00Z", 2),
            (Instants{"2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z"}));
}

TEST(CronDayRule, LastAndNthWeekday) {
  EXPECT_EQ(next_n("0 0 * * 5L", "2024-01-01T00:00:00Z"),
            (Instants{"2024-01-26T00:00:00Z", "2024-02-23T00:00:00Z", "2024-03-29T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 * * FRIL", "2024-01-01T00:00:00Z", 1), Instants{"2024-01-26T00:00:00Z"});
  EXPECT_EQ(next_n("0 0 * * 1#1", "2024-01-02T00:00:00Z"),
            (Instants{"2024-02-05T00:00:00Z", "2024-03-04T00:00:00Z", "2024-04-01T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 * * 5#3", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-01-19T00:00:00Z", "2024-02-16T00:00:00Z"}));
  // 5th Saturday: only months with five.
  EXPECT_EQ(next_n("0 0 * * 6#5", "2024-01-01T00:00:00Z", 2),
            (Instants{"2024-03-30T00:00:00Z", "2024-06-29T00:00:00Z"}));
  // `#n` limits every matching day to the n-th week, whichever field matched.
  EXPECT_EQ(next_n("0 0 10 * 5#2", "2024-01-01T00:00:00Z", 3),
            (Instants{"2024-01-10T00:00:00Z", "2024-01-12T00:00:00Z", "2024-02-09T00:00:00Z"}));
}

// ------------------------------------------------------------------ next_after

TEST(CronNext, IsStrictlyAfterAndInWholeSeconds) {
  const CronSchedule s = cron("0 17 * * 5");
  // Exactly on a match: the next one, a week later.
  EXPECT_EQ(format_instant(*s.next_after(at("2026-12-04T17:00:00Z"))), "2026-12-11T17:00:00Z");
  // A millisecond before and after a match.
  EXPECT_EQ(format_instant(*s.next_after(at("2026-12-04T16:59:59.999Z"))), "2026-12-04T17:00:00Z");
  EXPECT_EQ(format_instant(*s.next_after(at("2026-12-04T17:00:00.001Z"))), "2026-12-11T17:00:00Z");
  const CronSchedule every_second = cron("* * * * * *");
  EXPECT_EQ(*every_second.next_after(at("2024-01-01T00:00:00.500Z")), at("2024-01-01T00:00:01Z"));
  EXPECT_EQ(*every_second.next_after(at("2024-01-01T00:00:00Z")), at("2024-01-01T00:00:01Z"));
}

TEST(CronNext, CarriesAcrossMonthAndYearEnds) {
  EXPECT_EQ(next_n("59 23 31 12 *", "2024-12-31T23:59:00Z", 1), Instants{"2025-12-31T23:59:00Z"});
  EXPECT_EQ(next_n("* * * * *", "2024-12-31T23:59:30Z", 2),
            (Instants{"2025-01-01T00:00:00Z", "2025-01-01T00:01:00Z"}));
  EXPECT_EQ(next_n("0 0 31 * *", "2024-01-31T00:00:00Z", 3),
            (Instants{"2024-03-31T00:00:00Z", "2024-05-31T00:00:00Z", "2024-07-31T00:00:00Z"}));
  EXPECT_EQ(next_n("59 59 23 * * *", "2024-02-29T23:59:59Z", 1), Instants{"2024-03-01T23:59:59Z"});
}

TEST(CronNext, LeapYearsFollowTheGregorianRules) {
  EXPECT_EQ(next_n("0 0 29 2 *", "2001-01-01T00:00:00Z", 2),
            (Instants{"2004-02-29T00:00:00Z", "2008-02-29T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 29 2 *", "2096-03-01T00:00:00Z", 1), Instants{"2104-02-29T00:00:00Z"});
  EXPECT_EQ(next_n("0 0 29 2 *", "2399-01-01T00:00:00Z", 1), Instants{"2400-02-29T00:00:00Z"});
}

// Sparse expressions are answered by jumping, not scanning: `0 0 29 2 *`
// from 2001 and the 5th Monday of February (28 years apart; cron-parser
// itself gives up here with "loop limit exceeded"). Speed is measured in the
// benchmarks; this checks the values.
TEST(CronNext, SparseExpressionsAreAnswered) {
  EXPECT_EQ(next_n("0 0 29 2 *", "2001-01-01T00:00:00Z", 1), Instants{"2004-02-29T00:00:00Z"});
  EXPECT_EQ(next_n("0 0 * 2 1#5", "2016-03-01T00:00:00Z", 2),
            (Instants{"2044-02-29T00:00:00Z", "2072-02-29T00:00:00Z"}));
  EXPECT_EQ(next_n("0 0 0 * 2 0#5", "2024-01-01T00:00:00Z", 1), Instants{"2032-02-29T00:00:00Z"});
}

TEST(CronNext, NeverFiringExpressionsAreRefused) {
  for (const char* never : {"0 0 30 2 *", "0 0 31 4,6 *", "0 0 31 2,4,6,9,11 *", "0 0 * * 5L#2",
                            "0 0 * * 5#1.5", "0 0 0 30 2 *", "0 0 5L 2 *"}) {
    const Error e = parse_error(never);
    EXPECT_EQ(e.code, ErrorCode::never_fires) << never << ": " << e.message;
    EXPECT_TRUE(has(e.message, "never fires")) << e.message;
  }
  // cron-parser rejects `30,L` in February even though L fires: same here,
  // but as bad input rather than "never fires".
  EXPECT_EQ(parse_error("0 0 30,L 2 *").code, ErrorCode::invalid_argument);
  EXPECT_EQ(parse_error("0 0 30 2 1").code, ErrorCode::invalid_argument);
}

TEST(CronNext, RangeLimitsAreErrorsNotCrashes) {
  const CronSchedule s = cron("* * * * *");
  EXPECT_EQ(s.next_after(-1).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(s.next_after(kMaxInstantMs + 1).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(s.next_after(at("9999-12-31T23:59:00Z")).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(format_instant(*s.next_after(0)), "1970-01-01T00:01:00Z");
  const CronSchedule unparsed;
  EXPECT_FALSE(unparsed.next_after(0).ok());
  EXPECT_FALSE(unparsed.matches(0));
  EXPECT_FALSE(unparsed.is_low_frequency());
  EXPECT_TRUE(unparsed.low_frequency_warnings().empty());
}

TEST(CronNext, MatchesIgnoresMilliseconds) {
  const CronSchedule s = cron("0 17 * * 5");
  EXPECT_TRUE(s.matches(at("2026-12-04T17:00:00Z")));
  EXPECT_TRUE(s.matches(at("2026-12-04T17:00:00.999Z")));
  EXPECT_FALSE(s.matches(at("2026-12-04T17:00:01Z")));
  EXPECT_FALSE(s.matches(at("2026-12-05T17:00:00Z")));
}

// ------------------------------------------------------------------ low frequency

TEST(CronLowFrequency, LiteralRuleOnTheReportsExamples) {
  EXPECT_TRUE(cron("0 17 * * 5").is_low_frequency());
  EXPECT_TRUE(cron("0 0 17 * * 5").is_low_frequency());
  EXPECT_FALSE(cron("10 17 * * 1-5").is_low_frequency());
  EXPECT_FALSE(cron("*/3 * * * *").is_low_frequency());
  EXPECT_TRUE(cron("0 9 1 * *").is_low_frequency());
}

TEST(CronLowFrequency, SpecialFormsAndMacros) {
  for (const char* low :
       {"0 0 L * *", "0 0 * * 5L", "0 0 * * 5#3", "0 0 * * FRI", "0 0 * * 7", "@weekly", "@monthly",
        "@yearly", "@annually", "0 0 15 * *", "0 0 1 * 1-5", "*/5 * * * 5"}) {
    EXPECT_TRUE(cron(low).is_low_frequency()) << low;
  }
  for (const char* frequent :
       {"@daily", "@midnight", "@hourly", "0 9 1,15 * *", "0 9 */2 * *", "0 9 1-7 * *",
        "0 9 * * MON-FRI", "0 9 ? * ?", "0 9 * * */2", "* * * * * *"}) {
    EXPECT_FALSE(cron(frequent).is_low_frequency()) << frequent;
  }
}

TEST(CronLowFrequency, WarnsWhereTheLiteralRuleMisjudges) {
  // Low by the rule, frequent in fact.
  const auto weekdays = cron("0 0 1 * 1-5").low_frequency_warnings();
  ASSERT_EQ(weekdays.size(), 1u);
  EXPECT_TRUE(has(weekdays[0], "1d apart")) << weekdays[0];
  EXPECT_TRUE(has(weekdays[0], "EITHER")) << weekdays[0];
  const auto fridays = cron("*/5 * * * 5").low_frequency_warnings();
  ASSERT_EQ(fridays.size(), 1u);
  EXPECT_TRUE(has(fridays[0], "5m apart")) << fridays[0];
  ASSERT_EQ(cron("0 0 1 * 0-6").low_frequency_warnings().size(), 1u);
  // Frequent by the rule, rare in fact.
  const auto twice_monthly = cron("0 9 1,15 * *").low_frequency_warnings();
  ASSERT_EQ(twice_monthly.size(), 1u);
  EXPECT_TRUE(has(twice_monthly[0], "does not count as low-frequency")) << twice_monthly[0];
  // Right both ways: no warning.
  for (const char* fine : {"0 17 * * 5", "0 0 17 * * 5", "0 9 1 * *", "10 17 * * 1-5",
                           "*/3 * * * *", "@weekly", "@daily", "0 0 29 2 *", "0 0 * * 5#2"}) {
    EXPECT_TRUE(cron(fine).low_frequency_warnings().empty()) << fine;
  }
}

// ------------------------------------------------------------------ effective schedule

TEST(CronEffectiveSchedule, UnsetVariableKeepsTheDefault) {
  const Environment env{{"OTHER", "* * * * *"}};
  auto e = effective_schedule("0 17 * * 5", std::string("WEEKLY_SUMMARY_CRON"), env);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->expression, "0 17 * * 5");
  EXPECT_EQ(e->origin, "default");
  auto no_env = effective_schedule("0 17 * * 5", std::nullopt, env);
  ASSERT_TRUE(no_env.ok());
  EXPECT_EQ(no_env->origin, "default");
}

TEST(CronEffectiveSchedule, SetVariableReplacesTheDefault) {
  const Environment env{{"WEEKLY_SUMMARY_CRON", "*/3 * * * *"}};
  auto e = effective_schedule("0 17 * * 5", std::string("WEEKLY_SUMMARY_CRON"), env);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->expression, "*/3 * * * *");
  EXPECT_EQ(e->origin, "env:WEEKLY_SUMMARY_CRON");
  // The low-frequency verdict follows the override, not the code default.
  EXPECT_FALSE(e->schedule.is_low_frequency());
  const Environment weekly{{"WEEKLY_SUMMARY_CRON", "0 0 17 * * 5"}};
  auto w = effective_schedule("*/3 * * * *", std::string("WEEKLY_SUMMARY_CRON"), weekly);
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->schedule.is_low_frequency());
  // With no variable named, the environment is not consulted at all.
  auto ignored = effective_schedule("*/3 * * * *", std::nullopt, weekly);
  ASSERT_TRUE(ignored.ok());
  EXPECT_FALSE(ignored->schedule.is_low_frequency());
}

TEST(CronEffectiveSchedule, EmptyOrBadVariableIsAConfigErrorNotAFallback) {
  for (const char* value : {"", "not a cron", "* * * *", "0 0 30 2 *", "   "}) {
    const Environment env{{"WEEKLY_SUMMARY_CRON", value}};
    auto e = effective_schedule("0 17 * * 5", std::string("WEEKLY_SUMMARY_CRON"), env);
    ASSERT_FALSE(e.ok()) << "[" << value << "]";
    EXPECT_TRUE(has(e.error().message, "config error")) << e.error().message;
    EXPECT_TRUE(has(e.error().message, "WEEKLY_SUMMARY_CRON")) << e.error().message;
    EXPECT_EQ(e.error().where, "env:WEEKLY_SUMMARY_CRON");
  }
  auto empty_name = effective_schedule("0 17 * * 5", std::string(""), Environment{});
  EXPECT_FALSE(empty_name.ok());
  auto bad_default = effective_schedule("0 17 * *", std::nullopt, Environment{});
  ASSERT_FALSE(bad_default.ok());
  EXPECT_TRUE(has(bad_default.error().message, "0 17 * *")) << bad_default.error().message;
}

// ------------------------------------------------------------------ describe

TEST(CronDescribe, FieldsInWords) {
  const CronSchedule s = cron("*/15 9-17 L jan,jul MON-FRI");
  EXPECT_EQ(describe_field(s.fields()[0]), "0");
  EXPECT_EQ(describe_field(s.fields()[1]), "0,15,30,45");
  EXPECT_EQ(describe_field(s.fields()[2]), "9-17");
  EXPECT_EQ(describe_field(s.fields()[3]), "the last day of the month");
  EXPECT_EQ(describe_field(s.fields()[4]), "JAN,JUL (1,7)");
  EXPECT_EQ(describe_field(s.fields()[5]), "MON-FRI (1-5)");
  EXPECT_EQ(s.describe_day_rule(), "day-of-month OR day-of-week (both are restricted)");
  const CronSchedule t = cron("* * * * * 5#2");
  EXPECT_EQ(describe_field(t.fields()[0]), "every second");
  EXPECT_EQ(describe_field(t.fields()[3]), "any day (unrestricted)");
  EXPECT_EQ(describe_field(t.fields()[5]), "the 2nd FRI of the month");
  EXPECT_EQ(t.describe_day_rule(),
            "day-of-week only (day-of-month is unrestricted), and only days 8-14 of the month "
            "(#2)");
  EXPECT_EQ(describe_field(cron("0 0 * * 1L,5L").fields()[5]),
            "the last MON of the month and the last FRI of the month");
  EXPECT_TRUE(has(describe_field(cron("0 0 1 * 0-6").fields()[5]), "restricted"));
  EXPECT_EQ(cron("0 0 * * *").describe_day_rule(), "any day");
}

// ------------------------------------------------------------------ properties

// Dense fields, so that a brute force over a short window finds most next
// instants; rarer day fields (L, #n) still get the window checked.
rc::Gen<std::string> gen_field(int kind) {
  using rc::gen::element;
  using rc::gen::inRange;
  using rc::gen::map;
  using rc::gen::oneOf;
  switch (kind) {
    case 0:  // second
      return oneOf(element<std::string>("*", "0", "*/10", "5-50", "0,30"),
                   map(inRange(1, 31), [](int k) { return "*/" + std::to_string(k); }),
                   map(inRange(0, 60), [](int a) { return std::to_string(a) + "/7"; }));
    case 1:  // minute
      return oneOf(element<std::string>("*", "*/5", "0-29", "15,45", "59"),
                   map(inRange(1, 31), [](int k) { return "*/" + std::to_string(k); }),
                   map(inRange(0, 60), [](int a) { return std::to_string(a); }),
                   map(inRange(0, 50),
                       [](int a) { return std::to_string(a) + "-" + std::to_string(a + 9); }));
    case 2:  // hour
      return oneOf(element<std::string>("*", "*/2", "9-17", "0,12", "23"),
                   map(inRange(0, 24), [](int a) { return std::to_string(a); }),
                   map(inRange(1, 7), [](int k) { return "*/" + std::to_string(k); }));
    case 3:  // day of month
      return element<std::string>("*", "*", "?", "*/2", "1-15", "L", "1,15,L", "2/3", "28-31");
    case 4:  // month
      return element<std::string>("*", "*", "*", "jan-jun", "*/2", "2", "FEB,MAR");
    default:  // day of week
      return element<std::string>("*", "*", "?", "MON-FRI", "0-6", "1,3,5", "5L", "5#2", "7",
                                  "sat,sun", "*/2", "0L", "3#5");
  }
}

rc::Gen<std::string> gen_dense_expression() {
  return rc::gen::apply(
      [](bool six, std::string s, std::string m, std::string h, std::string dom, std::string mon,
         std::string dow) {
        std::string e = m + " " + h + " " + dom + " " + mon + " " + dow;
        return six ? s + " " + e : e;
      },
      rc::gen::arbitrary<bool>(), gen_field(0), gen_field(1), gen_field(2), gen_field(3),
      gen_field(4), gen_field(5));
}

rc::Gen<TimeMs> gen_instant() {
  // 1990..2150, sometimes on whole minutes, sometimes with milliseconds.
  return rc::gen::apply(
      [](TimeMs t, int shape) {
        if (shape == 0) return t - t % kMinuteMs;
        if (shape == 1) return t - t % kSecondMs;
        return t;
      },
      rc::gen::inRange<TimeMs>(at("1990-01-01T00:00:00Z"), at("2150-01-01T00:00:00Z")),
      rc::gen::inRange(0, 3));
}

REHEARSE_PROP(CronProperty, NextAfterIsTheFirstMatchAfterT, ()) {
  const std::string expression = *gen_dense_expression();
  const TimeMs t = *gen_instant();
  auto parsed = CronSchedule::parse(expression);
  RC_PRE(parsed.ok());  // a few combinations never fire (e.g. `... 31 2 ...`)
  const CronSchedule& s = *parsed;
  auto next = s.next_after(t);
  RC_ASSERT(next.ok());
  RC_ASSERT(*next > t);
  RC_ASSERT(*next % kSecondMs == 0);
  RC_ASSERT(s.matches(*next));
  // Brute force: no whole second in (t, next) matches, within a window of 3
  // days by minutes (5 fields: the second is always 0) or 4 hours by seconds.
  const bool five = !s.has_seconds_field();
  const DurationMs step = five ? kMinuteMs : kSecondMs;
  const TimeMs end = std::min(*next, t + (five ? 3 * kDayMs : 4 * kHourMs));
  for (TimeMs u = (t / step + 1) * step; u < end; u += step) {
    RC_ASSERT(!s.matches(u));
  }
}

REHEARSE_PROP(CronProperty, NextAfterIsMonotoneAndStable, ()) {
  const std::string expression = *gen_dense_expression();
  const TimeMs t1 = *gen_instant();
  const DurationMs delta = *rc::gen::inRange<DurationMs>(0, 40 * kDayMs);
  auto parsed = CronSchedule::parse(expression);
  RC_PRE(parsed.ok());
  auto n1 = parsed->next_after(t1);
  auto n2 = parsed->next_after(t1 + delta);
  RC_ASSERT(n1.ok());
  RC_ASSERT(n2.ok());
  RC_ASSERT(*n1 <= *n2);
  // Any instant in [t1, n1) has the same next firing.
  const TimeMs mid = t1 + (*n1 - t1) / 2;
  RC_ASSERT(*parsed->next_after(mid) == *n1);
  RC_ASSERT(*parsed->next_after(*n1 - 1) == *n1);
}

// Whatever the string, parse answers with a schedule or an error value.
void check_parse_is_total(const std::string& text) {
  auto parsed = CronSchedule::parse(text);
  if (!parsed) {
    const ErrorCode code = parsed.error().code;
    RC_ASSERT(code == ErrorCode::invalid_argument || code == ErrorCode::unsupported ||
              code == ErrorCode::never_fires);
    RC_ASSERT(!parsed.error().message.empty());
    return;
  }
  RC_ASSERT(parsed->fields().size() == 6u);
  auto next = parsed->next_after(at("2024-01-01T00:00:00Z"));
  RC_ASSERT(next.ok());
  RC_ASSERT(parsed->matches(*next));
  (void)parsed->is_low_frequency();
  for (const CronField& f : parsed->fields()) RC_ASSERT(!describe_field(f).empty());
}

REHEARSE_PROP(CronProperty, ParseNeverCrashesOnCronLikeStrings, ()) {
  const auto pieces = *rc::gen::container<std::vector<std::string>>(rc::gen::element<std::string>(
      "0", "5", "7", "12", "31", "59", "60", "*", "?", "L", "W", "#", "/", "-", ",", " ", " ", " ",
      "\t", "MON", "fri", "jan", "x", "@daily", "2", "#2", "/3", "-0", "99999999999999999999",
      "\xc2\xa0", "\xff"));
  std::string text;
  for (const auto& p : pieces) text += p;
  check_parse_is_total(text);
}

REHEARSE_PROP(CronProperty, ParseNeverCrashesOnArbitraryBytes, (const std::string& text)) {
  check_parse_is_total(text);
}

}  // namespace
}  // namespace rehearse
