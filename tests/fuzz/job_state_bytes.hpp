// A valid JobState drawn from fuzz bytes (for the store target): every field
// in range, text fields printable ASCII, so encode/decode is exact.
#pragma once

#include <string>

#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {

inline std::string printable(Input& in, std::size_t max) {
  std::string s;
  const std::size_t n = in.byte() % (max + 1);
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(' ' + in.byte() % 95));
  return s;
}

inline std::optional<TimeMs> maybe_instant(Input& in) {
  const std::uint8_t b = in.byte();
  if (b % 3 == 0) return std::nullopt;
  return TimeMs{1'700'000'000'000} + TimeMs{b} * kMinuteMs;
}

inline JobState job_state_from(Input& in, std::string job_id) {
  JobState s;
  s.job_id = std::move(job_id);
  s.retry_status = static_cast<RetryStatus>(in.byte() % 4);
  if (const std::uint8_t c = in.byte(); c % 2 == 0) {
    s.failure_class = static_cast<FailureClass>(c / 2 % kFailureClassCount);
  }
  s.retry_count = in.byte();
  s.retry_limit = in.byte();
  s.next_retry_at = maybe_instant(in);
  s.next_action = static_cast<NextAction>(in.byte() % 4);
  s.last_error = printable(in, 12);
  s.updated_at = maybe_instant(in);
  s.last_slot = maybe_instant(in);
  s.misfire_runs = in.byte() % 5;
  s.max_lateness_ms = TimeMs{in.byte()} * kSecondMs;
  for (std::uint8_t n = in.byte() % 3; n > 0; --n) {
    SlotRecord r;
    r.slot = TimeMs{1'700'000'000'000} + TimeMs{in.byte()} * kHourMs;
    r.retry_status = static_cast<RetryStatus>(in.byte() % 4);
    r.retry_count = in.byte() % 7;
    r.last_error = printable(in, 6);
    s.slots[r.slot] = r;
  }
  return s;
}

}  // namespace rehearse::fuzz
