// When a parsed cron schedule fires: the day rule (the two day fields
// combined as cron-parser 4.9.0 combines them, model/cron_parse.cpp's header
// and docs/cron.md), matches() and the search for the next firing instant.
#include <bit>
#include <string>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/cron_detail.hpp"

namespace rehearse {

using cron_detail::day_matches;
using cron_detail::in_quotes;
using cron_detail::kDaysInMonthTable;
using cron_detail::kDom;
using cron_detail::kDow;
using cron_detail::kHour;
using cron_detail::kMinute;
using cron_detail::kMonth;
using cron_detail::kSecond;
using cron_detail::next_bit;

namespace cron_detail {

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

}  // namespace cron_detail

bool CronSchedule::matches(TimeMs t) const {
  if (fields_.size() != 6 || t < kMinInstantMs || t > kMaxInstantMs) return false;
  if (zone_) {
    // In a zone the firing instants are what next_after answers (a gap's
    // stand-ins included), whatever instant it is asked from.
    const TimeMs second = t - t % kSecondMs;
    const auto next = next_after(second - 1);
    return next.ok() && *next == second;
  }
  return matches_wall(t);
}

bool CronSchedule::matches_wall(TimeMs t) const {
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
  if (zone_) return next_after_in_zone(t);
  return next_wall_after(t);
}

Result<TimeMs> CronSchedule::next_wall_after(TimeMs t) const {
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
    REHEARSE_ASSERT(matches_wall(found));
    return found;
  }
  return make_error(ErrorCode::invalid_argument,
                    "cron expression " + in_quotes(source_) + " has no firing instant after " +
                        format_instant(t) + " before the end of year 9999 (the supported range)");
}

}  // namespace rehearse
