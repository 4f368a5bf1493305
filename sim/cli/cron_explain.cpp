#include "sim/cli/cron_explain.hpp"

#include <fmt/format.h>

#include <array>

#include "model/assert.hpp"
#include "model/retry_policy.hpp"

namespace rehearse::cli {

namespace {
constexpr std::array<const char*, 6> kFieldLabels{"second",       "minute", "hour",
                                                  "day-of-month", "month",  "day-of-week"};

std::string low_frequency_reason(const CronSchedule& schedule) {
  REHEARSE_ASSERT(schedule.is_low_frequency());  // the reason for a "yes" only
  if (!schedule.macro().empty()) return fmt::format("the macro {}", schedule.macro());
  return "the day-of-month or day-of-week field is one fixed value";
}
}  // namespace

ScheduleRhythm schedule_rhythm(const CronSchedule& schedule) {
  ScheduleRhythm r;
  const TimeMs end = kRhythmStartMs + kRhythmWindowMs;
  auto previous = schedule.next_after(kRhythmStartMs - 1);
  int seen = 0;  // firings looked at, also past the window
  while (previous) {
    if (*previous < end) {
      if (r.firings == kRhythmCountMax) {
        r.count_capped = true;
        break;
      }
      ++r.firings;
    }
    auto next = schedule.next_after(*previous);
    if (!next) break;
    REHEARSE_ASSERT_GT(*next, *previous);  // strictly after: every gap is positive
    if (!r.has_gap || *next - *previous < r.shortest_gap_ms) {
      r.shortest_gap_ms = *next - *previous;
      r.shortest_gap_from_ms = *previous;
      r.has_gap = true;
    }
    ++seen;
    if (*next >= end && seen >= 2) break;
    previous = next;
  }
  REHEARSE_ASSERT_LE(r.firings, kRhythmCountMax);
  if (r.count_capped) REHEARSE_ASSERT_EQ(r.firings, kRhythmCountMax);
  if (r.has_gap) REHEARSE_ASSERT_GT(r.shortest_gap_ms, 0);
  return r;
}

std::optional<std::string> rhythm_warning(const CronSchedule& schedule, const ScheduleRhythm& r) {
  // r comes from schedule_rhythm: a capped count stopped at the cap.
  REHEARSE_ASSERT_GE(r.firings, 0);
  REHEARSE_ASSERT_LE(r.firings, kRhythmCountMax);
  const bool low = schedule.is_low_frequency();
  const bool often = r.count_capped || r.firings > kRhythmLowFrequencyMax;
  const std::string count =
      fmt::format("{}{} times", r.count_capped ? "more than " : "", r.firings);
  if (low && often) {
    return fmt::format(
        "the low-frequency verdict (yes) disagrees with the firings: it fires {} "
        "in 28 days, more often than weekly, yet gets the long retry plan",
        count);
  }
  if (!low && !often) {
    return fmt::format(
        "the low-frequency verdict (no) disagrees with the firings: it fires only "
        "{} in 28 days, at most weekly, yet gets the short retry plan",
        count);
  }
  return std::nullopt;
}

Result<CronExplanation> explain_cron(const CronSchedule& schedule) {
  CronExplanation out;
  nlohmann::json fields = nlohmann::json::array();
  std::string text = fmt::format("expression:    {}\n", schedule.source());
  if (!schedule.macro().empty()) text += fmt::format("macro:         {}\n", schedule.macro());
  text += fmt::format("fields:        {} ({} fields as written)\n",
                      schedule.has_seconds_field() ? "sec min hour dom mon dow"
                                                   : "min hour dom mon dow",
                      schedule.has_seconds_field() ? 6 : 5);
  REHEARSE_ASSERT_LE(schedule.fields().size(), kFieldLabels.size());  // a label per field
  for (std::size_t i = 0; i < schedule.fields().size(); ++i) {
    const CronField& f = schedule.fields()[i];
    const std::string described = describe_field(f);
    text += fmt::format("  {:<13} {:<14} {}\n", kFieldLabels[i], f.text, described);
    fields.push_back({{"field", kFieldLabels[i]},
                      {"text", f.text},
                      {"description", described},
                      {"unrestricted", f.unrestricted}});
  }
  const std::string day_rule = schedule.describe_day_rule();
  text += fmt::format("days:          {}\n", day_rule);

  const bool low = schedule.is_low_frequency();
  const auto warnings = schedule.low_frequency_warnings();
  text += fmt::format("low-frequency: {}\n",
                      low ? fmt::format("yes ({})", low_frequency_reason(schedule))
                          : std::string("no"));
  const ScheduleRhythm rhythm = schedule_rhythm(schedule);
  text += fmt::format("firings:       {}{} in the 28 days from {}\n",
                      rhythm.count_capped ? "more than " : "", rhythm.firings,
                      format_instant(kRhythmStartMs));
  std::vector<std::string> all_warnings = warnings;
  if (auto w = rhythm_warning(schedule, rhythm)) all_warnings.push_back(*w);
  for (const auto& w : all_warnings) text += fmt::format("warning:       {}\n", w);

  const RetryPolicy policy = auto_retry_policy(schedule_facts(schedule));
  const RetryPlan plan = plan_retries(policy);
  std::string delays;
  for (const DurationMs d : plan.delays_ms) {
    delays += delays.empty() ? "" : ", ";
    delays += format_duration(d);
  }
  text += fmt::format(
      "auto policy:   attempts {}, {} {} (retries after {}; recovery window {}), budget {}\n",
      plan.max_retries + 1, to_string(policy.backoff.kind),
      format_duration(policy.backoff.delay_ms), delays.empty() ? "none" : delays,
      format_duration(plan.recovery_window_ms), to_string(plan.budget));

  out.text = std::move(text);
  out.json = {{"expression", schedule.source()},
              {"macro", schedule.macro()},
              {"has_seconds_field", schedule.has_seconds_field()},
              {"fields", fields},
              {"day_rule", day_rule},
              {"low_frequency", low},
              {"firings_28d", rhythm.firings},
              {"firings_28d_capped", rhythm.count_capped},
              {"warnings", all_warnings},
              {"auto_policy", to_json(policy)},
              {"auto_plan", to_json(plan)}};
  return out;
}

}  // namespace rehearse::cli
