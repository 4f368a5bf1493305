// Shared by the parts of test_retry_machine: instants, the hand-written
// hourly grid, policies for an hourly job, a fresh job row.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/retry_machine.hpp"

namespace rehearse::retry_test {

inline TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  EXPECT_TRUE(t.ok()) << iso;
  return t.ok() ? *t : 0;
}

// The hourly grid, written out by hand (no cron needed for the machine).
inline Result<TimeMs> next_hour(TimeMs t) { return (t / kHourMs + 1) * kHourMs; }
inline const NextSlotFn kHourly = next_hour;

inline PolicyOrError policy(const char* text) {
  return parse_retry_policy(nlohmann::json::parse(text), ScheduleFacts{"0 * * * *", false});
}

inline JobState fresh(const char* id = "threads-timely") {
  JobState s;
  s.job_id = id;
  return s;
}

}  // namespace rehearse::retry_test
