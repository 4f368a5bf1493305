// Cron schedules in a time zone: the daylight-saving rules of
// docs/semantics.md §3, each case derived by hand from the zone's published
// transition (the instants are UTC; local readings in the comments).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/time_zone.hpp"

namespace rehearse {
namespace {

std::vector<std::string> next_n(const std::string& expr, const std::string& zone,
                                const std::string& from, int n) {
  auto schedule = CronSchedule::parse(expr, zone);
  EXPECT_TRUE(schedule.ok()) << (schedule.ok() ? "" : schedule.error().message);
  std::vector<std::string> out;
  if (!schedule.ok()) return out;
  TimeMs t = *parse_instant(from);
  for (int i = 0; i < n; ++i) {
    auto next = schedule->next_after(t);
    EXPECT_TRUE(next.ok()) << (next.ok() ? "" : next.error().message);
    if (!next.ok()) break;
    EXPECT_TRUE(schedule->matches(*next)) << format_instant(*next);
    t = *next;
    out.push_back(format_instant(t));
  }
  return out;
}

using V = std::vector<std::string>;

// Europe/Berlin springs forward on 2026-03-29 at 01:00Z: 02:00 CET is 03:00 CEST.
TEST(CronZone, AFixedTimeInTheGapRunsShiftedByTheGap) {
  // 02:30 does not exist that night: it runs at 03:30 CEST (01:30Z), once.
  EXPECT_EQ(next_n("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3),
            (V{"2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}));
}

TEST(CronZone, SeveralMatchesInOneGapRunOnce) {
  // 02:00, 02:20 and 02:40 are all skipped: one run, at 03:00 CEST.
  EXPECT_EQ(next_n("*/20 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z", 2),
            (V{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z"}));
}

TEST(CronZone, AnHourlyJobHasNoRunForTheMissingHour) {
  // 01:30 CET, then 03:30 CEST (02:30 shifted is 03:30: one run), 04:30 CEST.
  EXPECT_EQ(next_n("30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", 3),
            (V{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"}));
}

// Europe/Berlin falls back on 2026-10-25 at 01:00Z: 03:00 CEST is 02:00 CET.
TEST(CronZone, AStartInsideTheGapsShiftStillSeesTheShiftedRun) {
  // From 03:15 CEST (01:15Z), after the jump, 02:30's stand-in (03:30 CEST)
  // is still ahead: a job created or restarted there keeps the day's run.
  EXPECT_EQ(next_n("30 2 * * *", "Europe/Berlin", "2026-03-29T01:15:00Z", 2),
            (V{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}));
  EXPECT_EQ(next_n("30 0 * * *", "America/Santiago", "2026-09-06T04:00:00Z", 1),
            (V{"2026-09-06T04:30:00Z"}));
}

TEST(CronZone, AnHourFieldCoveringEveryHourRunsInBothPasses) {
  for (const std::string expr : {"30 0-23 * * *", "30 */1 * * *", "30 * * * *"}) {
    EXPECT_EQ(next_n(expr, "Europe/Berlin", "2026-10-25T00:00:00Z", 2),
              (V{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"}))
        << expr;
  }
}

TEST(CronZone, AFixedTimeInTheFoldRunsOnceInTheFirstPass) {
  EXPECT_EQ(next_n("30 2 * * *", "Europe/Berlin", "2026-10-24T00:00:00Z", 3),
            (V{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
  EXPECT_EQ(next_n("*/20 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 4),
            (V{"2026-10-25T00:00:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:40:00Z",
               "2026-10-26T01:00:00Z"}));
}

TEST(CronZone, AnEveryHourJobRunsInBothPassesOfTheFold) {
  // 02:30 CEST (00:30Z) and 02:30 CET (01:30Z): two real hours.
  EXPECT_EQ(next_n("30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3),
            (V{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}));
}

TEST(CronZone, AStepHourNamesWallClockHoursAndRunsOnceInTheFold) {
  // 00:00 CEST, 02:00 CEST; 02:00 CET is the same wall hour again: no run.
  EXPECT_EQ(next_n("0 */2 * * *", "Europe/Berlin", "2026-10-24T21:00:00Z", 3),
            (V{"2026-10-24T22:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"}));
}

TEST(CronZone, AStartInsideTheFoldsFirstPassStillSeesTheSecond) {
  // From 02:40 CEST (00:40Z) an hourly :30 job next runs at 02:30 CET (01:30Z).
  EXPECT_EQ(next_n("30 * * * *", "Europe/Berlin", "2026-10-25T00:40:00Z", 1),
            (V{"2026-10-25T01:30:00Z"}));
  // A daily 02:30 job does not: its 02:30 has passed.
  EXPECT_EQ(next_n("30 2 * * *", "Europe/Berlin", "2026-10-25T00:40:00Z", 1),
            (V{"2026-10-26T01:30:00Z"}));
}

// America/Santiago springs forward at local midnight: 2026-09-06 00:00 -04 is 01:00 -03.
TEST(CronZone, AMidnightThatDoesNotExistRunsAtOneAndTheDayIsKept) {
  EXPECT_EQ(next_n("0 0 * * *", "America/Santiago", "2026-09-05T00:00:00Z", 3),
            (V{"2026-09-05T04:00:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}));
}

// Australia/Lord_Howe moves 30 minutes: 2026-10-04 02:00 +10:30 is 02:30 +11.
TEST(CronZone, ARealMatchAfterAHalfHourGapStandsForTheSkippedOne) {
  // 02:20 is skipped (shifted it would be 02:50); 02:40 exists and comes first.
  EXPECT_EQ(next_n("20,40 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 3),
            (V{"2026-10-03T15:40:00Z", "2026-10-04T15:20:00Z", "2026-10-04T15:40:00Z"}));
}

TEST(CronZone, TheZoneMayBeWrittenAsAPrefix) {
  auto prefixed = CronSchedule::parse("CRON_TZ=America/New_York 30 2 * * *");
  ASSERT_TRUE(prefixed.ok());
  ASSERT_TRUE(prefixed->zone().has_value());
  EXPECT_EQ(prefixed->zone()->name(), "America/New_York");
  EXPECT_EQ(prefixed->source(), "CRON_TZ=America/New_York 30 2 * * *");
  // 2026-03-08 02:30 EST does not exist: 03:30 EDT = 07:30Z.
  EXPECT_EQ(format_instant(*prefixed->next_after(*parse_instant("2026-03-08T00:00:00Z"))),
            "2026-03-08T07:30:00Z");
  auto tz = CronSchedule::parse("TZ=UTC 0 9 * * 1");
  ASSERT_TRUE(tz.ok());
  EXPECT_EQ(tz->zone()->name(), "UTC");
  // The same zone in both places is one zone; two zones are an error.
  EXPECT_TRUE(CronSchedule::parse("CRON_TZ=UTC 0 9 * * 1", std::string("UTC")).ok());
  auto both = CronSchedule::parse("CRON_TZ=UTC 0 9 * * 1", std::string("Europe/Berlin"));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message.find("name one zone"), std::string::npos);
}

TEST(CronZone, WithoutAZoneTheFieldsAreUtc) {
  auto plain = CronSchedule::parse("30 2 * * *");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->zone().has_value());
  EXPECT_EQ(next_n("30 2 * * *", "UTC", "2026-03-29T00:00:00Z", 1), (V{"2026-03-29T02:30:00Z"}));
}

TEST(CronZone, BadZonesAreRefusedByName) {
  for (const std::string bad : {"Mars/Olympus", "CET-1CEST,M3.5.0,M10.5.0/3", ""}) {
    auto parsed = CronSchedule::parse("0 9 * * *", bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
    if (!bad.empty()) {
      EXPECT_NE(parsed.error().message.find(bad), std::string::npos);
    }
  }
  EXPECT_FALSE(CronSchedule::parse("CRON_TZ= 0 9 * * *").ok());
}

TEST(CronZone, TheMacroAfterAPrefixIsStillAMacro) {
  auto daily = CronSchedule::parse("CRON_TZ=Europe/Berlin @daily");
  ASSERT_TRUE(daily.ok()) << daily.error().message;
  EXPECT_EQ(format_instant(*daily->next_after(*parse_instant("2026-07-01T00:00:00Z"))),
            "2026-07-01T22:00:00Z");
}

TEST(CronZone, FiringsPastTheDatabasesListedYearsAreRefusedNotGuessed) {
  // The zone files list Berlin's transitions through 2037 only.
  auto berlin = CronSchedule::parse("0 12 1 7 *", std::string("Europe/Berlin"));
  ASSERT_TRUE(berlin.ok());
  EXPECT_EQ(format_instant(*berlin->next_after(*parse_instant("2037-01-01T00:00:00Z"))),
            "2037-07-01T10:00:00Z");
  auto later = berlin->next_after(*parse_instant("2037-08-01T00:00:00Z"));
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code, ErrorCode::unsupported);
  // A zone with one fixed offset has nothing to list.
  auto kolkata = CronSchedule::parse("0 12 1 7 *", std::string("Asia/Kolkata"));
  ASSERT_TRUE(kolkata.ok());
  EXPECT_EQ(format_instant(*kolkata->next_after(*parse_instant("2040-01-01T00:00:00Z"))),
            "2040-07-01T06:30:00Z");
}

TEST(TimeZone, ReadsGapsAndFoldsFromTheDatabase) {
  auto berlin = TimeZone::locate("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  const LocalReading gap = berlin->read_local(*parse_instant("2026-03-29T02:30:00Z"));
  EXPECT_EQ(gap.kind, LocalKind::nonexistent);
  EXPECT_EQ(gap.first_offset, kHourMs);
  EXPECT_EQ(gap.second_offset, 2 * kHourMs);
  EXPECT_EQ(gap.transition, *parse_instant("2026-03-29T01:00:00Z"));
  const LocalReading fold = berlin->read_local(*parse_instant("2026-10-25T02:30:00Z"));
  EXPECT_EQ(fold.kind, LocalKind::ambiguous);
  EXPECT_EQ(fold.first_offset, 2 * kHourMs);
  EXPECT_EQ(fold.second_offset, kHourMs);
  const ZoneSpan span = berlin->span_at(*parse_instant("2026-07-01T00:00:00Z"));
  EXPECT_EQ(span.begin, *parse_instant("2026-03-29T01:00:00Z"));
  EXPECT_EQ(span.end, *parse_instant("2026-10-25T01:00:00Z"));
  EXPECT_EQ(span.offset_before, kHourMs);
  EXPECT_FALSE(tz_database_version().empty());
  EXPECT_NE(tz_database_version(), "unknown");
}

}  // namespace
}  // namespace rehearse
