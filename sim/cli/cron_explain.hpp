// The content of `rehearse cron explain`: parsed fields, the low-frequency
// verdict with its warnings, and the policy "auto" would choose.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "model/cron.hpp"
#include "model/result.hpp"

namespace rehearse::cli {

struct CronExplanation {
  std::string text;     // human-readable, several lines
  nlohmann::json json;  // the same content as one document
};

Result<CronExplanation> explain_cron(const CronSchedule& schedule);

// How often a schedule really fires, counted over a fixed reference window:
// the 28 days from 2024-01-01T00:00:00Z (a Monday), so the answer does not
// depend on the day it is asked. A weekly schedule fires 4 times there.
inline constexpr TimeMs kRhythmStartMs = 1704067200000;
inline constexpr DurationMs kRhythmWindowMs = 28 * kDayMs;
inline constexpr int kRhythmLowFrequencyMax = 4;  // at most weekly
inline constexpr int kRhythmCountMax = 10000;     // counting stops here

struct ScheduleRhythm {
  int firings = 0;            // in the window, at most kRhythmCountMax
  bool count_capped = false;  // more than kRhythmCountMax
  // The shortest gap between consecutive firings from the window's start
  // (looking past the window when it holds fewer than two), and where.
  DurationMs shortest_gap_ms = 0;
  TimeMs shortest_gap_from_ms = 0;
  bool has_gap = false;
};
ScheduleRhythm schedule_rhythm(const CronSchedule& schedule);
// A warning when the literal low-frequency verdict disagrees with the count.
std::optional<std::string> rhythm_warning(const CronSchedule& schedule, const ScheduleRhythm& r);

}  // namespace rehearse::cli
