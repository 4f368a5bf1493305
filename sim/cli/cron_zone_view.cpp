#include "sim/cli/cron_zone_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "model/assert.hpp"

namespace rehearse::cli {
namespace {

const char* dst_rule_name(DstRule rule) {
  switch (rule) {
    case DstRule::none: return nullptr;
    case DstRule::gap: return "gap";
    case DstRule::fold_first: return "fold_first";
    case DstRule::fold_second: return "fold_second";
  }
  return nullptr;
}

// "02:00", or "2026-04-04 23:00" when the two readings of a transition fall
// on different days.
std::string transition_reading(TimeMs local, TimeMs other) {
  const CivilDate a = to_civil(local).date;
  const CivilDate b = to_civil(other).date;
  if (a.year == b.year && a.month == b.month && a.day == b.day) return format_clock(local);
  return fmt::format("{:04}-{:02}-{:02} {}", a.year, a.month, a.day, format_clock(local));
}

}  // namespace

Result<ZoneView> ZoneView::make(const CronSchedule& schedule) {
  REHEARSE_ASSERT(schedule.zone().has_value());  // the callers show zoned schedules only
  // The fields' own texts, read again without the zone: a wall-clock reading
  // matches them exactly when it matches the zoned schedule's fields.
  std::string fields;
  for (const CronField& f : schedule.fields()) {
    if (!fields.empty()) fields += ' ';
    fields += f.text;
  }
  auto wall = CronSchedule::parse(fields);
  if (!wall) return wall.error();
  REHEARSE_ASSERT(!wall->zone().has_value());
  ZoneView view{schedule, *wall};
  return view;
}

ZoneView::ZoneView(CronSchedule schedule, CronSchedule wall)
    : schedule_(std::move(schedule)), wall_(std::move(wall)) {}

ZonedSlot ZoneView::slot(TimeMs at) const {
  ZonedSlot s;
  s.at = at;
  s.offset = zone().offset_at(at);
  const TimeMs local = at + s.offset;
  if (wall_.matches(local)) {
    const LocalReading reading = zone().read_local(local);
    if (reading.kind == LocalKind::ambiguous) {
      s.rule = at == local - reading.first_offset ? DstRule::fold_first : DstRule::fold_second;
    }
    return s;
  }
  // Not a reading of the fields: the core put it here for one a gap skipped,
  // the same reading under the offset before the gap.
  const ZoneSpan span = zone().span_at(at);
  const TimeMs skipped = at + span.offset_before;
  if (span.offset_before < span.offset &&
      zone().read_local(skipped).kind == LocalKind::nonexistent) {
    s.rule = DstRule::gap;
    s.skipped_reading = skipped;
  }
  return s;
}

std::vector<ZoneTransition> ZoneView::transitions(TimeMs after, TimeMs until) const {
  std::vector<ZoneTransition> out;
  TimeMs t = after;
  while (auto next = zone().next_transition(t, until)) {
    REHEARSE_ASSERT_GT(next->at, t);  // strictly later: the loop ends
    out.push_back(*next);
    t = next->at;
  }
  return out;
}

std::vector<TimeMs> ZoneView::wall_matches(TimeMs from, TimeMs to, int max) const {
  std::vector<TimeMs> out;
  TimeMs t = std::max(from - 1, kMinInstantMs);
  while (static_cast<int>(out.size()) < max) {
    auto next = wall_.next_after(t);
    if (!next || *next >= to) break;
    out.push_back(*next);
    t = *next;
  }
  return out;
}

std::string format_offset(DurationMs offset) {
  const DurationMs a = std::llabs(offset);
  const char sign = offset < 0 ? '-' : '+';
  const auto h = a / kHourMs, m = a % kHourMs / kMinuteMs, s = a % kMinuteMs / kSecondMs;
  if (s != 0) return fmt::format("{}{:02}:{:02}:{:02}", sign, h, m, s);
  return fmt::format("{}{:02}:{:02}", sign, h, m);
}

std::string format_local(TimeMs local) {
  const CivilTime c = to_civil(local);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", c.date.year, c.date.month, c.date.day,
                     c.hour, c.minute, c.second);
}

std::string format_clock(TimeMs local) {
  const CivilTime c = to_civil(local);
  if (c.second != 0) return fmt::format("{:02}:{:02}:{:02}", c.hour, c.minute, c.second);
  return fmt::format("{:02}:{:02}", c.hour, c.minute);
}

std::string slot_line(const ZonedSlot& slot) {
  std::string line = fmt::format("{}  {} {}", format_instant(slot.at),
                                 format_local(slot.at + slot.offset), format_offset(slot.offset));
  switch (slot.rule) {
    case DstRule::none: break;
    case DstRule::gap:
      line += fmt::format("  shifted: {} does not exist", format_clock(slot.skipped_reading));
      break;
    case DstRule::fold_first: line += "  first pass of the fold"; break;
    case DstRule::fold_second: line += "  second pass of the fold"; break;
  }
  return line;
}

std::string transition_words(const ZoneTransition& t) {
  REHEARSE_ASSERT_NE(t.offset_before, t.offset_after);  // a transition changes the offset
  const TimeMs before = t.at + t.offset_before, after = t.at + t.offset_after;
  return fmt::format("{}: {} -> {} ({} -> {})",
                     t.offset_after > t.offset_before ? "springs forward" : "falls back",
                     transition_reading(before, after), transition_reading(after, before),
                     format_offset(t.offset_before), format_offset(t.offset_after));
}

std::string transition_line(const std::string& zone, const ZoneTransition& t) {
  return fmt::format("-- {} {} {}", format_instant(t.at), zone, transition_words(t));
}

nlohmann::json slot_json(const ZonedSlot& slot) {
  std::string local = format_local(slot.at + slot.offset);
  local[10] = 'T';  // ISO-8601 local time: the offset is its own field
  nlohmann::json out{{"at", format_instant(slot.at)},
                     {"local", local},
                     {"offset", format_offset(slot.offset)},
                     {"dst_rule", nullptr},
                     {"shifted_from", nullptr}};
  if (const char* rule = dst_rule_name(slot.rule)) out["dst_rule"] = rule;
  if (slot.rule == DstRule::gap) {
    std::string skipped = format_local(slot.skipped_reading);
    skipped[10] = 'T';
    out["shifted_from"] = skipped;
  }
  return out;
}

nlohmann::json transition_json(const ZoneTransition& t) {
  std::string before = format_local(t.at + t.offset_before);
  std::string after = format_local(t.at + t.offset_after);
  before[10] = after[10] = 'T';
  return {{"at", format_instant(t.at)},
          {"kind", t.offset_after > t.offset_before ? "gap" : "fold"},
          {"local_before", before},
          {"local_after", after},
          {"offset_before", format_offset(t.offset_before)},
          {"offset_after", format_offset(t.offset_after)}};
}

std::string zoned_next_text(const ZoneView& view, TimeMs from, const std::vector<TimeMs>& next) {
  std::string out;
  if (next.empty()) return out;
  const std::vector<ZoneTransition> changes = view.transitions(from, next.back());
  std::size_t c = 0;
  for (const TimeMs at : next) {
    // A transition at the instant of a slot comes first: the slot is under its new offset.
    for (; c < changes.size() && changes[c].at <= at; ++c) {
      out += transition_line(view.zone().name(), changes[c]) + "\n";
    }
    out += slot_line(view.slot(at)) + "\n";
  }
  REHEARSE_ASSERT_EQ(c, changes.size());  // every transition lies before the last slot
  return out;
}

void add_zoned_next_json(nlohmann::json& doc, const ZoneView& view, TimeMs from,
                         const std::vector<TimeMs>& next) {
  doc["tz"] = view.zone().name();
  doc["tz_database"] = tz_database_version();
  doc["slots"] = nlohmann::json::array();
  for (const TimeMs at : next) doc["slots"].push_back(slot_json(view.slot(at)));
  doc["transitions"] = nlohmann::json::array();
  if (next.empty()) return;
  for (const ZoneTransition& t : view.transitions(from, next.back())) {
    doc["transitions"].push_back(transition_json(t));
  }
}

TimeMs one_year_after(TimeMs from) {
  const CivilTime c = to_civil(from);
  const unsigned day = std::min(c.date.day, days_in_month(c.date.year + 1, c.date.month));
  return from_civil({c.date.year + 1, c.date.month, day}, c.hour, c.minute, c.second,
                    c.millisecond);
}

}  // namespace rehearse::cli
