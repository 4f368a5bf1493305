// The monitors' own cron matcher (docs/monitors.md "The cron matcher"):
// brute force, minute by minute; 6 fields: the seconds of each matching
// minute. Supports `*`, `?`, numbers, ranges, lists, steps, month and weekday
// names, weekday 7, `L` in day-of-month, `dL` and `d#n` in day-of-week, and
// the macros; refuses (with a reason) anything else (`W`, `H`, cron-parser's
// odd readings such as `5L` in day-of-month or `9L`), so that the caller can
// skip its check loudly. It never calls model/cron: a witness that asked the
// core would prove nothing.
// In a zone (the job's `tz`, or a `CRON_TZ=`/`TZ=` prefix) it reads the
// offsets from the tz database through date/tz itself, never through
// model/time_zone, and walks instants forward (docs/monitors.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"

namespace date {
class time_zone;  // <date/tz.h>, kept out of every monitor's includes
}  // namespace date

namespace rehearse::sim {

class WitnessCron {
 public:
  // Why parse() refused an expression: syntax this matcher does not know
  // (the core may well accept it: the check is skipped, loudly), or one the
  // documented grammar refuses by the monitors' own rules (cron_grammar.hpp).
  enum class Refusal : unsigned char { unknown_syntax, invalid };
  static std::optional<WitnessCron> parse(std::string_view expr, std::string* why,
                                          Refusal* refusal = nullptr);
  // Read in `zone` (an IANA name; absent: UTC unless the expression begins
  // with `CRON_TZ=Zone ` or `TZ=Zone `). A zone the tz database lacks, or a
  // prefix naming another zone than `zone`, is refused as invalid.
  static std::optional<WitnessCron> parse(std::string_view expr, std::string* why, Refusal* refusal,
                                          const std::optional<std::string>& zone);

  // The fields against a wall-clock reading (no zone applied).
  bool matches_minute(TimeMs minute_start) const;
  bool matches_day(const CivilTime& day) const;
  // Firing instants in (after, until], in order, at most `limit` of them;
  // in a zone, after its daylight-saving rules (docs/semantics.md §3).
  std::vector<TimeMs> between(TimeMs after, TimeMs until, std::size_t limit) const;
  // First matching instant strictly after `t`, searching at most `horizon_ms`.
  std::optional<TimeMs> next_after(TimeMs t, DurationMs horizon_ms) const;
  bool low_frequency() const noexcept { return low_frequency_; }
  // The zone's name as written, empty for UTC.
  const std::string& zone_name() const noexcept { return zone_name_; }

 private:
  // A stretch of instants under one UTC offset, [begin, end).
  struct Span {
    TimeMs begin = kMinInstantMs;
    TimeMs end = kMaxInstantMs + 1;
    DurationMs offset = 0;
    DurationMs offset_before = 0;  // just before `begin`
  };
  static std::optional<WitnessCron> parse_fields(std::string_view expr, std::string* why,
                                                 Refusal* refusal);
  // Matching wall-clock readings in (after, until], in order (UTC: instants).
  std::vector<TimeMs> wall_matches(TimeMs after, TimeMs until, std::size_t limit) const;
  Span span_at(TimeMs t) const;
  void collect_in_span(const Span& span, TimeMs after, TimeMs until, std::size_t limit,
                       std::vector<TimeMs>& out) const;
  std::optional<TimeMs> gap_stand_in(const Span& span) const;

  std::vector<bool> seconds_, minutes_, hours_, doms_, months_, dows_;
  bool last_dom_ = false;                                      // `L` in day-of-month
  std::vector<bool> last_dows_ = std::vector<bool>(7, false);  // `dL` in day-of-week
  int nth_ = 0;                                                // `d#n` in day-of-week: n (0: none)
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
  bool low_frequency_ = false;
  // The hour field covers every hour (`*`, `0-23`, `*/1`): a fold's repeated
  // hour fires again.
  bool hour_star_ = false;
  const date::time_zone* zone_ = nullptr;  // owned by the tz database; null: UTC
  std::string zone_name_;
};

}  // namespace rehearse::sim
