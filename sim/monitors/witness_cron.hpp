// The monitors' own cron matcher (docs/monitors.md "The cron matcher"):
// brute force, minute by minute; 6 fields: the seconds of each matching
// minute. Supports `*`, `?`, numbers, ranges, lists, steps, month and weekday
// names, weekday 7, `L` in day-of-month, `dL` and `d#n` in day-of-week, and
// the macros; refuses (with a reason) anything else (`W`, `H`, cron-parser's
// odd readings such as `5L` in day-of-month or `9L`), so that the caller can
// skip its check loudly. It never calls model/cron: a witness that asked the
// core would prove nothing.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"

namespace rehearse::sim {

class WitnessCron {
 public:
  // Why parse() refused an expression: syntax this matcher does not know
  // (the core may well accept it: the check is skipped, loudly), or one the
  // documented grammar refuses by the monitors' own rules (cron_grammar.hpp).
  enum class Refusal : unsigned char { unknown_syntax, invalid };
  static std::optional<WitnessCron> parse(std::string_view expr, std::string* why,
                                          Refusal* refusal = nullptr);

  bool matches_minute(TimeMs minute_start) const;
  bool matches_day(const CivilTime& day) const;
  // Matching instants in (after, until], in order, at most `limit` of them.
  std::vector<TimeMs> between(TimeMs after, TimeMs until, std::size_t limit) const;
  // First matching instant strictly after `t`, searching at most `horizon_ms`.
  std::optional<TimeMs> next_after(TimeMs t, DurationMs horizon_ms) const;
  bool low_frequency() const noexcept { return low_frequency_; }

 private:
  std::vector<bool> seconds_, minutes_, hours_, doms_, months_, dows_;
  bool last_dom_ = false;                                      // `L` in day-of-month
  std::vector<bool> last_dows_ = std::vector<bool>(7, false);  // `dL` in day-of-week
  int nth_ = 0;                                                // `d#n` in day-of-week: n (0: none)
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
  bool low_frequency_ = false;
};

}  // namespace rehearse::sim
