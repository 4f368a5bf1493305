// What `rehearse cron next|explain` show of a schedule read in a time zone:
// each instant's wall-clock reading and offset, the instants the
// daylight-saving rules of docs/semantics.md §3 "Time zones" placed, and the
// zone's transitions. The core decides the instants; this only describes them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/result.hpp"
#include "model/time_zone.hpp"

namespace rehearse::cli {

// Why a firing instant lies where it does.
enum class DstRule : unsigned char {
  none,         // its wall-clock reading matches the fields and happens once
  gap,          // stands in for a reading a spring-forward gap skipped
  fold_first,   // the first pass of a reading a fall-back fold repeats
  fold_second,  // the second pass (only an hour field of `*` fires there)
};

struct ZonedSlot {
  TimeMs at = 0;
  DurationMs offset = 0;  // local = at + offset
  DstRule rule = DstRule::none;
  TimeMs skipped_reading = 0;  // gap: the wall-clock reading that does not exist
};

// A zoned schedule beside the same fields read in UTC, which answers whether
// a wall-clock reading itself matches.
class ZoneView {
 public:
  // `schedule` must have a zone.
  static Result<ZoneView> make(const CronSchedule& schedule);

  const CronSchedule& schedule() const noexcept { return schedule_; }
  const TimeZone& zone() const noexcept { return *schedule_.zone(); }
  ZonedSlot slot(TimeMs at) const;
  // The zone's changes of offset in (after, until], in time order.
  std::vector<ZoneTransition> transitions(TimeMs after, TimeMs until) const;
  // Readings of the fields in [from, to) on the wall clock, at most `max`.
  std::vector<TimeMs> wall_matches(TimeMs from, TimeMs to, int max) const;

 private:
  ZoneView(CronSchedule schedule, CronSchedule wall);

  CronSchedule schedule_;
  CronSchedule wall_;  // the same fields, in UTC
};

// "+02:00", "-05:00", "+05:30" (seconds only when the offset has them).
std::string format_offset(DurationMs offset);
// "2026-03-29 03:30:00": the wall-clock reading `local` (ms as if UTC).
std::string format_local(TimeMs local);
// "02:30", or "02:30:15" when the reading has seconds.
std::string format_clock(TimeMs local);

// "2026-03-29T01:30:00Z  2026-03-29 03:30:00 +02:00  shifted: 02:30 does not exist"
std::string slot_line(const ZonedSlot& slot);
// "springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)", "falls back: 03:00 -> 02:00 (...)"
std::string transition_words(const ZoneTransition& t);
// "-- 2026-03-29T01:00:00Z Europe/Berlin springs forward: 02:00 -> 03:00 (+01:00 -> +02:00)"
std::string transition_line(const std::string& zone, const ZoneTransition& t);
// {"at", "local", "offset", "dst_rule", "shifted_from"}.
nlohmann::json slot_json(const ZonedSlot& slot);
// {"at", "kind" ("gap"/"fold"), "local_before", "local_after", "offset_before", "offset_after"}.
nlohmann::json transition_json(const ZoneTransition& t);

// `cron next` in a zone: one line per instant and per transition between
// `from` and the last instant, in time order (text), or the JSON fields
// "tz", "tz_database", "slots" and "transitions" added to `doc`.
std::string zoned_next_text(const ZoneView& view, TimeMs from, const std::vector<TimeMs>& next);
void add_zoned_next_json(nlohmann::json& doc, const ZoneView& view, TimeMs from,
                         const std::vector<TimeMs>& next);

struct ZoneExplanation {
  std::string text;     // lines appended to `cron explain`'s own
  nlohmann::json json;  // the "tz", "tz_database" and "zone" fields
};
// `cron explain` in a zone: what the expression does in a gap and in a fold,
// and at each of the zone's transitions in the 12 months from `from`.
ZoneExplanation explain_zone(const ZoneView& view, TimeMs from);
// `from` plus one calendar year (February 29 becomes February 28).
TimeMs one_year_after(TimeMs from);

}  // namespace rehearse::cli
