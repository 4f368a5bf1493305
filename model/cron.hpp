// Cron expressions with cron-parser 4.9.0 (the version BullMQ 5.81 pins) as the
// reference: on every expression both accept, fire exactly when it fires; reject
// all it rejects; stricter in two documented places (fewer than 5 fields, empty
// expression). See docs/cron.md and docs/semantics.md §3.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/environment.hpp"
#include "model/result.hpp"
#include "model/time.hpp"
#include "model/time_zone.hpp"

namespace rehearse {

enum class CronFieldKind { second, minute, hour, day_of_month, month, day_of_week };

const char* to_string(CronFieldKind kind) noexcept;

// One parsed field. `values` is a bit mask over the field's range
// (second/minute 0-59, hour 0-23, day_of_month 1-31, month 1-12, day_of_week
// 0-6 with 7 folded onto 0). Day fields also carry the special forms.
struct CronField {
  CronFieldKind kind = CronFieldKind::minute;
  std::string text;          // the field as written (after macro expansion)
  std::uint64_t values = 0;  // bit i set: value i matches
  // The day-field rule, as cron-parser 4.9 decides it: day_of_week is
  // unrestricted when its value list has exactly 8 entries (`*`, `?`, `0-7`,
  // `1-7`; not `0-6`); day_of_month when its list has at least as many entries
  // as the month has days, counting February as 29. `unrestricted` is true for
  // a day_of_month that is a wildcard in every month (31 entries or more); a
  // list of 29 or 30 entries is a wildcard only in the shorter months (see
  // entry_count). Other fields: the values cover the whole range.
  bool unrestricted = false;
  // Length of cron-parser's value list for this field: every value of every
  // list element, duplicates and `L` entries included (`1-20,1-20` has 40).
  std::uint32_t entry_count = 0;
  // day_of_month: `L` (last day of the month) present.
  bool last_day_of_month = false;
  // day_of_week: `dL` entries (bit d: last weekday d of the month) and `d#n`
  // entries (pairs of weekday 0-6 and n 1-5).
  std::uint8_t last_weekday_mask = 0;
  std::vector<std::pair<unsigned, unsigned>> nth_weekdays;
  // day_of_week `...#n`: n (1-5), 0 when absent. As in cron-parser it restricts
  // every matching day, whichever field matched it, to days (n-1)*7+1 .. n*7.
  unsigned nth_occurrence = 0;
};

// Human-readable list of the field's values and special forms, for
// `rehearse cron explain`: "0,15,30,45", "MON-FRI (1-5)", "every minute",
// "any day (unrestricted)", "the last day of the month", "the 2nd FRI of the month".
std::string describe_field(const CronField& field);

class CronSchedule {
 public:
  // Parses 5 fields (min hour dom mon dow), 6 fields (sec min hour dom mon dow)
  // or a macro (@yearly @annually @monthly @weekly @daily @midnight @hourly).
  // Errors name the offending token and its 1-based field position:
  // ErrorCode::invalid_argument for bad syntax, ::unsupported for syntax of
  // other crons (W, H, a 7th field, @reboot), ::never_fires for an expression
  // that matches no instant at all (`0 0 30 2 *`, `0 0 31 4,6 *`).
  //
  // A leading `CRON_TZ=Zone ` or `TZ=Zone ` (as cronie and robfig/cron write
  // it) reads the fields in that IANA zone; without one they are UTC.
  static Result<CronSchedule> parse(std::string_view expression);
  // As above, in `zone` when one is given (a scenario's "tz", a system's own
  // zone key). A prefix naming another zone is ErrorCode::invalid_argument.
  static Result<CronSchedule> parse(std::string_view expression,
                                    const std::optional<std::string>& zone);

  // First firing instant strictly after `t` (whole seconds). Jumps field by
  // field over wall-clock time; in a zone, the daylight-saving rules of
  // docs/semantics.md §3 map wall-clock matches onto instants; an expression that can never fire
  // (`0 0 30 2 *`) is an ErrorCode::never_fires error rather than an endless search (parse already
  // refuses those). `t` outside [kMinInstantMs, kMaxInstantMs], or no match
  // before the end of year 9999, is ErrorCode::invalid_argument.
  Result<TimeMs> next_after(TimeMs t) const;

  // Whether instant `t` (whole second, ms ignored) is a firing instant.
  bool matches(TimeMs t) const;

  // docs/semantics.md §3, literal rule: the day-of-month or the day-of-week
  // field is one fixed value (L, 5L and 5#3 count as one fixed value), or the
  // expression is @weekly/@monthly/@yearly/@annually.
  bool is_low_frequency() const;

  // Cases where the literal low-frequency rule misjudges how often the
  // expression fires (e.g. `0 0 1 * 1-5`, `*/5 * * * 5`); empty otherwise.
  std::vector<std::string> low_frequency_warnings() const;

  // How the two day fields combine for this expression, in words: "any day",
  // "day-of-month only", "day-of-week only", "day-of-month OR day-of-week", plus
  // the `#n` week restriction when present.
  std::string describe_day_rule() const;

  const std::string& source() const noexcept { return source_; }
  // "@weekly" etc. when the expression was written as a macro, else empty.
  const std::string& macro() const noexcept { return macro_; }
  bool has_seconds_field() const noexcept { return has_seconds_; }
  // The zone the fields are read in; none: UTC.
  const std::optional<TimeZone>& zone() const noexcept { return zone_; }
  // In a fall-back fold, whether a wall-clock match fires in both passes: only
  // when the hour field covers every hour (`*`, `0-23`, `*/1`: every hour of
  // elapsed time); named hours fire once, in the first pass
  // (docs/semantics.md §3).
  bool fires_twice_in_fold() const noexcept;
  // Always six entries: second, minute, hour, day_of_month, month, day_of_week
  // (a 5-field expression has a second field of "0").
  const std::vector<CronField>& fields() const noexcept { return fields_; }

 private:
  // next_after's preconditions: parsed, t in range, every field matches a value.
  Status check_searchable(TimeMs t) const;
  // The search over wall-clock readings, as if they were UTC instants.
  Result<TimeMs> next_wall_after(TimeMs wall) const;
  bool matches_wall(TimeMs wall) const;
  // next_after in zone_, span by span (cron_zone.cpp).
  Result<TimeMs> next_after_in_zone(TimeMs t) const;
  Result<TimeMs> next_after_from_spans(TimeMs t) const;
  Result<std::optional<TimeMs>> pending_stand_in(const ZoneSpan& span, TimeMs t) const;
  Result<std::optional<TimeMs>> next_in_span(const ZoneSpan& span, TimeMs from) const;
  Result<std::optional<TimeMs>> gap_stand_in(const ZoneSpan& span, TimeMs match) const;

  std::string source_;
  std::string macro_;  // "@weekly" etc. when written as a macro
  bool has_seconds_ = false;
  std::vector<CronField> fields_;
  std::optional<TimeZone> zone_;

  friend struct CronParser;
};

// The schedule a job actually runs on: its default expression, unless it names
// an environment variable (`schedule_env`) that is set and non-empty, which
// replaces it. Set but empty or unparsable is an error (a `config` failure for
// that job), never a silent fallback to the default.
struct EffectiveSchedule {
  std::string expression;
  std::string origin;  // "default" or "env:NAME"
  CronSchedule schedule;
};

// `zone`: the job's own zone key, when it has one (see CronSchedule::parse).
Result<EffectiveSchedule> effective_schedule(std::string_view default_expression,
                                             const std::optional<std::string>& schedule_env,
                                             const Environment& env,
                                             const std::optional<std::string>& zone = std::nullopt);

}  // namespace rehearse
