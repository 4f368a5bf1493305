// `rehearse cron explain --tz`: the daylight-saving rules of
// docs/semantics.md §3 "Time zones" as they apply to one expression, and what
// it does at each of the zone's transitions in a year.
#include <fmt/format.h>

#include <algorithm>

#include "model/assert.hpp"
#include "sim/cli/cron_zone_view.hpp"

namespace rehearse::cli {
namespace {

// Wall-clock readings of one gap or fold: every second of a day-long jump
// (Pacific/Apia, 2011) still counts exactly.
constexpr int kReadingsMax = 24 * 3600 + 1;

std::string gap_rule(const CronSchedule& schedule) {
  if (schedule.fires_twice_in_fold()) {
    return "a time that does not exist runs once, shifted by the gap, for the first of its "
           "times there; the hour field is *, so a one-hour gap shifts them onto the next "
           "hour's own times and the missing hour has no run of its own";
  }
  return "a time that does not exist runs once, shifted by the gap (02:30 on a night that "
         "jumps from 02:00 to 03:00 runs at 03:30), for the first of its times there, unless "
         "a real time after the gap comes earlier; the day keeps its run";
}

std::string fold_rule(const CronSchedule& schedule) {
  if (schedule.fires_twice_in_fold()) {
    return "runs in both passes: the hour field is *, every hour of elapsed time, and the "
           "repeated hour is a real hour";
  }
  return fmt::format(
      "runs once, in the first pass: the hour field \"{}\" names wall-clock hours, and a "
      "wall-clock hour named once runs once",
      schedule.fields()[2].text);
}

// The last firing instant before `until`. next_after is monotonic in its
// start, so the latest start whose next instant is still before `until` is
// found by widening the look-back, then by bisection (a firing every second
// costs no more than one a year).
std::optional<TimeMs> last_slot_before(const CronSchedule& schedule, TimeMs until) {
  const auto before = [&](TimeMs start) {
    auto next = schedule.next_after(start);
    return next.ok() && *next < until;
  };
  TimeMs lo = kMinInstantMs;
  for (DurationMs back = kSecondMs;; back *= 2) {
    lo = std::max(until - back, kMinInstantMs);
    if (before(lo)) break;
    if (lo == kMinInstantMs) return std::nullopt;
  }
  TimeMs hi = until - 1;  // its next instant is at `until` or later
  while (hi - lo > 1) {
    const TimeMs mid = lo + (hi - lo) / 2;
    if (before(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  auto last = schedule.next_after(lo);
  REHEARSE_ASSERT(last.ok() && *last < until);
  return *last;
}

std::optional<TimeMs> first_slot_from(const CronSchedule& schedule, TimeMs from) {
  auto next = schedule.next_after(from - 1);
  if (!next) return std::nullopt;
  return *next;
}

struct TransitionEffect {
  int readings = 0;  // the expression's readings in the gap or fold
  std::string text;
};

TransitionEffect transition_effect(const ZoneView& view, const ZoneTransition& t,
                                   const std::optional<TimeMs>& after) {
  const bool gap = t.offset_after > t.offset_before;
  const TimeMs lo = t.at + std::min(t.offset_before, t.offset_after);
  const TimeMs hi = t.at + std::max(t.offset_before, t.offset_after);
  const std::vector<TimeMs> readings = view.wall_matches(lo, hi, kReadingsMax);
  TransitionEffect out;
  out.readings = static_cast<int>(readings.size());
  if (readings.empty()) {
    out.text = fmt::format("unaffected: no time of the expression falls in {}-{}", format_clock(lo),
                           format_clock(hi));
    return out;
  }
  const std::string times = readings.size() == 1
                                ? format_clock(readings.front())
                                : fmt::format("{} and {} more of its times",
                                              format_clock(readings.front()), readings.size() - 1);
  const bool one = readings.size() == 1;
  if (gap) {
    out.text = fmt::format("{} {} not exist", times, one ? "does" : "do");
    if (!after) return out;
    const ZonedSlot slot = view.slot(*after);
    const std::string at =
        fmt::format("{} {}", format_clock(slot.at + slot.offset), format_offset(slot.offset));
    out.text += slot.rule == DstRule::gap
                    ? fmt::format("; runs once, shifted, at {}", at)
                    : fmt::format("; no run of {} own: the next run, at {}, stands for {}",
                                  one ? "its" : "their", at, one ? "it" : "them");
    return out;
  }
  out.text = fmt::format("{} {} twice; ", times, one ? "happens" : "happen");
  out.text +=
      view.schedule().fires_twice_in_fold()
          ? fmt::format("runs in both passes ({} and {})", format_offset(t.offset_before),
                        format_offset(t.offset_after))
          : fmt::format("runs once, in the first pass ({})", format_offset(t.offset_before));
  return out;
}

void add_transition(ZoneExplanation& out, const ZoneView& view, const ZoneTransition& t) {
  const std::optional<TimeMs> before = last_slot_before(view.schedule(), t.at);
  const std::optional<TimeMs> after = first_slot_from(view.schedule(), t.at);
  const TransitionEffect effect = transition_effect(view, t, after);
  out.text += fmt::format("  {} {}\n", format_instant(t.at), transition_words(t));
  out.text += fmt::format("    effect:    {}\n", effect.text);
  out.text += fmt::format("    before:    {}\n", before ? slot_line(view.slot(*before)) : "none");
  out.text += fmt::format("    after:     {}\n", after ? slot_line(view.slot(*after)) : "none");
  nlohmann::json entry = transition_json(t);
  entry["effect"] = effect.text;
  entry["affected_readings"] = effect.readings;
  entry["slot_before"] = before ? slot_json(view.slot(*before)) : nlohmann::json(nullptr);
  entry["slot_after"] = after ? slot_json(view.slot(*after)) : nlohmann::json(nullptr);
  out.json["zone"]["transitions"].push_back(std::move(entry));
}

}  // namespace

ZoneExplanation explain_zone(const ZoneView& view, TimeMs from) {
  const CronSchedule& schedule = view.schedule();
  const TimeMs until = std::min(one_year_after(from), kMaxInstantMs);
  REHEARSE_ASSERT_LE(from, until);  // empty only at the very end of the supported range
  ZoneExplanation out;
  const std::string name = view.zone().name();
  const std::string gap = gap_rule(schedule), fold = fold_rule(schedule);
  out.text =
      fmt::format("zone:          {} (tz database {}): the fields are read on its wall clock\n",
                  name, tz_database_version());
  out.text += fmt::format("in a gap:      {}\nin a fold:     {}\n", gap, fold);
  out.json = {{"tz", name},
              {"tz_database", tz_database_version()},
              {"zone",
               {{"gap_rule", gap},
                {"fold_rule", fold},
                {"fires_twice_in_fold", schedule.fires_twice_in_fold()},
                {"window", {{"from", format_instant(from)}, {"until", format_instant(until)}}},
                {"transitions", nlohmann::json::array()}}}};
  const std::vector<ZoneTransition> changes = view.transitions(from, until);
  const std::string window =
      fmt::format("the 12 months from {} to {}", format_instant(from), format_instant(until));
  if (changes.empty()) {
    out.text += fmt::format("transitions:   none in {} (the offset stays {})\n", window,
                            format_offset(view.zone().offset_at(from)));
    return out;
  }
  out.text += fmt::format("transitions:   {} in {}\n", changes.size(), window);
  for (const ZoneTransition& t : changes) add_transition(out, view, t);
  return out;
}

}  // namespace rehearse::cli
