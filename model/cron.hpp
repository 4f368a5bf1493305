// Cron expressions with cron-parser 4.9.0 (the version BullMQ 5.81 pins) as the
// reference: on every expression both accept, fire exactly when it fires; reject
// all it rejects; stricter in two documented places (fewer than 5 fields, empty
// expression). See docs/cron.md and semantics.md section 3.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/environment.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

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
  bool unrestricted = false; // values cover the whole range (day-field rule)
  // day_of_month: `L` (last day of the month) present.
  bool last_day_of_month = false;
  // day_of_week: `dL` entries (bit d: last weekday d of the month) and `d#n`
  // entries (pairs of weekday 0-6 and n 1-5).
  std::uint8_t last_weekday_mask = 0;
  std::vector<std::pair<unsigned, unsigned>> nth_weekdays;
};

class CronSchedule {
 public:
  // Parses 5 fields (min hour dom mon dow), 6 fields (sec min hour dom mon dow)
  // or a macro (@yearly @annually @monthly @weekly @daily @midnight @hourly).
  // Errors name the offending token and its 1-based field position.
  static Result<CronSchedule> parse(std::string_view expression);

  // First matching instant strictly after `t` (UTC, whole seconds). Jumps
  // field by field; an expression that can never fire (`0 0 30 2 *`) is an
  // ErrorCode::never_fires error rather than an endless search.
  Result<TimeMs> next_after(TimeMs t) const;

  // Whether instant `t` (whole second, ms ignored) matches the expression.
  bool matches(TimeMs t) const;

  // semantics.md section 3, literal rule: the day-of-month or the day-of-week
  // field is one fixed value (L, 5L and 5#3 count as one fixed value), or the
  // expression is @weekly/@monthly/@yearly/@annually.
  bool is_low_frequency() const;

  // Cases where the literal low-frequency rule misjudges how often the
  // expression fires (e.g. `0 0 1 * 1-5`, `*/5 * * * 5`); empty otherwise.
  std::vector<std::string> low_frequency_warnings() const;

  const std::string& source() const noexcept { return source_; }
  bool has_seconds_field() const noexcept { return has_seconds_; }
  // Always six entries: second, minute, hour, day_of_month, month, day_of_week
  // (a 5-field expression has a second field of "0").
  const std::vector<CronField>& fields() const noexcept { return fields_; }

 private:
  std::string source_;
  std::string macro_;  // "@weekly" etc. when written as a macro
  bool has_seconds_ = false;
  std::vector<CronField> fields_;

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

Result<EffectiveSchedule> effective_schedule(std::string_view default_expression,
                                             const std::optional<std::string>& schedule_env,
                                             const Environment& env);

}  // namespace rehearse
