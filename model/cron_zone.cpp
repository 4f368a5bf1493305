// Cron schedules read in a time zone: the zone prefix, and the mapping of
// wall-clock matches onto instants across daylight-saving transitions
// (docs/semantics.md §3 "Time zones", docs/cron.md "Time zones").
#include <string>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/cron_detail.hpp"

namespace rehearse {
namespace {

using cron_detail::in_quotes;

struct ZonePrefix {
  std::optional<std::string> zone;  // the name after CRON_TZ= or TZ=
  std::string_view fields;          // the expression after the prefix
};

// `CRON_TZ=Europe/Berlin 30 2 * * *`: the name runs to the first blank.
ZonePrefix split_zone_prefix(std::string_view expression) {
  std::string_view text = expression;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  for (const std::string_view key : {std::string_view("CRON_TZ="), std::string_view("TZ=")}) {
    if (text.substr(0, key.size()) != key) continue;
    text.remove_prefix(key.size());
    const auto end = text.find_first_of(" \t");
    const std::string_view name = text.substr(0, end);
    std::string_view fields = end == std::string_view::npos ? std::string_view() : text.substr(end);
    // The blanks that separate the zone from the fields are not part of
    // them: `CRON_TZ=UTC @daily` is the macro.
    while (!fields.empty() && (fields.front() == ' ' || fields.front() == '\t')) {
      fields.remove_prefix(1);
    }
    return {std::string(name), fields};
  }
  return {std::nullopt, expression};
}

}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view expression) {
  return parse(expression, std::nullopt);
}

Result<CronSchedule> CronSchedule::parse(std::string_view expression,
                                         const std::optional<std::string>& zone) {
  const ZonePrefix prefix = split_zone_prefix(expression);
  if (prefix.zone && zone && *prefix.zone != *zone) {
    return make_error(ErrorCode::invalid_argument,
                      "cron expression " + in_quotes(expression) + " names the zone " +
                          in_quotes(*prefix.zone) + " but the job's zone is " + in_quotes(*zone) +
                          " (name one zone, in one place)");
  }
  auto parsed = cron_detail::parse_fields_of(prefix.zone ? prefix.fields : expression);
  if (!parsed) return parsed;
  const std::optional<std::string>& name = prefix.zone ? prefix.zone : zone;
  if (name) {
    auto located = TimeZone::locate(*name);
    if (!located) return located.error();
    parsed->zone_ = std::move(*located);
  }
  parsed->source_ = std::string(expression);
  return parsed;
}

bool CronSchedule::fires_twice_in_fold() const noexcept {
  constexpr std::uint64_t kEveryHour = (std::uint64_t{1} << 24) - 1;
  return fields_.size() == 6 && (fields_[cron_detail::kHour].values & kEveryHour) == kEveryHour;
}

// Each wall-clock match maps to an instant: a unique reading to its instant;
// one skipped by a gap to the instant the same reading has under the offset
// before the gap (02:30 becomes 03:30 after a one-hour spring-forward), unless
// a real match after the gap comes first, which then stands for it; one read
// twice in a fold to its first pass, and also to its second when the hour
// field is `*`. The search walks the zone's spans of one offset from `t` on.
Result<TimeMs> CronSchedule::next_after_in_zone(TimeMs t) const {
  if (Status s = check_searchable(t); !s.ok()) return s.error();
  REHEARSE_ASSERT(zone_.has_value());
  auto pending = pending_stand_in(zone_->span_at(t), t);
  if (!pending) return pending.error();
  auto found = next_after_from_spans(t);
  // A stand-in still ahead of `t`, inside the shift after a gap, comes first
  // unless a real match does.
  if (*pending && (!found || **pending < *found)) return **pending;
  return found;
}

Result<TimeMs> CronSchedule::next_after_from_spans(TimeMs t) const {
  TimeMs from = t;
  ZoneSpan span = zone_->span_at(t);
  // A match exists in every 400-year cycle (parse checks); two spans a year.
  constexpr int kSpansMax = 2 * 400 * 4;
  for (int spans = 0; spans < kSpansMax; ++spans) {
    auto found = next_in_span(span, from);
    if (!found) return found.error();
    if (*found) {
      REHEARSE_ASSERT_GT(**found, t);
      if (const auto end = zone_->listed_until(); end && **found >= *end) {
        return make_error(ErrorCode::unsupported,
                          "cron expression " + in_quotes(source_) + " in zone " + zone_->name() +
                              ": the system tz database lists this zone's transitions only "
                              "until " +
                              format_instant(*end) + "; later firings are not computed");
      }
      return **found;
    }
    if (span.end > kMaxInstantMs) break;
    // Strictly after the last instant of this span: the next span's first.
    from = span.end - 1;
    span = zone_->span_at(span.end);
  }
  return make_error(ErrorCode::invalid_argument,
                    "cron expression " + in_quotes(source_) + " has no firing instant after " +
                        format_instant(t) + " in zone " + zone_->name() +
                        " before the end of year 9999 (the supported range)");
}

// The first firing instant after `from` that lies in `span`, or one that a
// gap at the span's end shifts past it.
Result<std::optional<TimeMs>> CronSchedule::next_in_span(const ZoneSpan& span, TimeMs from) const {
  TimeMs wall = from + span.offset;
  // A fold's second pass: readings below `read_before` were read in the first.
  const bool second_pass = span.offset_before > span.offset;
  const TimeMs read_before = span.begin + span.offset_before;
  for (int jumps = 0; jumps < 2; ++jumps) {
    auto match = next_wall_after(wall);
    if (!match) return match.error();
    const TimeMs at = *match - span.offset;
    if (at < span.end) {
      if (second_pass && *match < read_before && !fires_twice_in_fold()) {
        wall = read_before - kSecondMs;
        continue;
      }
      return std::optional<TimeMs>(at);
    }
    return gap_stand_in(span, *match);
  }
  return std::optional<TimeMs>();
}

// From `t` inside [gap's end, gap's end + its length) the stand-in of the
// gap's first skipped reading may still lie ahead: the span walk from `t`
// reads on from after the gap and would never see it.
Result<std::optional<TimeMs>> CronSchedule::pending_stand_in(const ZoneSpan& span, TimeMs t) const {
  const DurationMs gap = span.offset - span.offset_before;
  if (gap <= 0 || t >= span.begin + gap) return std::optional<TimeMs>();
  auto match = next_wall_after(span.begin + span.offset_before - kSecondMs);
  if (!match) return match.error();
  if (*match >= span.begin + span.offset) return std::optional<TimeMs>();  // nothing skipped
  ZoneSpan before;
  before.end = span.begin;
  before.offset = span.offset_before;
  auto stand = gap_stand_in(before, *match);
  if (!stand) return stand.error();
  if (*stand && **stand > t) return *stand;
  return std::optional<TimeMs>();
}

// A match past `span`: when a gap at the span's end skipped its reading, the
// instant that stands for it; otherwise none in this span.
Result<std::optional<TimeMs>> CronSchedule::gap_stand_in(const ZoneSpan& span, TimeMs match) const {
  if (span.end > kMaxInstantMs) return std::optional<TimeMs>();
  const DurationMs after = zone_->span_at(span.end).offset;
  if (after <= span.offset || match >= span.end + after) return std::optional<TimeMs>();
  const TimeMs shifted = match - span.offset;
  auto real = next_wall_after(span.end + after - kSecondMs);
  if (real && *real - after < shifted) return std::optional<TimeMs>(*real - after);
  return std::optional<TimeMs>(shifted);
}

}  // namespace rehearse
