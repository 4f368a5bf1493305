// Where the documented cron grammar itself refuses an expression
// (docs/semantics.md §3, docs/cron.md), decided by the monitors' own rules:
// an environment override that is no valid cron is a config error of its
// job, which then never runs (never a fallback to its default). Only what
// these rules decide for certain is called invalid; anything else the
// witness cannot read stays "unknown syntax" (its job is listed unchecked),
// since the core follows cron-parser's lenient readings (`1*`, `JANFEB`,
// `5#1e0`, ...) that a stricter witness would wrongly call invalid.
// Shares no code with model/cron.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rehearse::sim {

// An expression made of ASCII only: its fields are split exactly as the
// core splits them (the core also splits on Unicode spaces).
bool cron_is_ascii(std::string_view expr);
// Not 5 or 6 fields (fewer are refused, docs/cron.md "Strictnesses"; a 7th,
// year field is unsupported); a one-word expression that is no macro
// spelled exactly (`@reboot`, `@every5m`, `@DAILY`) is one field.
std::optional<std::string> cron_shape_refusal(std::string_view expr, std::size_t fields);
// A field written as one plain number outside its range (`61` in minutes).
std::optional<std::string> cron_value_refusal(const std::string& field, const char* name, int lo,
                                              int hi);
// The day of month exists in no month the expression allows, or, with a
// single month, its smallest day does not exist in it (cron-parser's
// explicit-day check, which refuses `0 0 30 2 1` too). `doms` over 0..31
// (plain numbers), `months` over 0..12; `month_single`: the month field is
// one plain value; `dow_any`: the day-of-week field is `*` or `?`.
std::optional<std::string> cron_day_refusal(const std::vector<bool>& doms, bool last_dom,
                                            const std::vector<bool>& months, bool month_single,
                                            bool dow_any);

}  // namespace rehearse::sim
