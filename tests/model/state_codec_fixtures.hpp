// Shared fixtures of the state codec tests (tests/model/test_state_codec*.cpp):
// the sample job of the golden document and the journals built from it, and
// the generator of a few fully random jobs (whole documents of 100 jobs only
// slow the search down). Inline: every test file of the binary includes it.
#pragma once

#include <rapidcheck.h>

#include <vector>

#include "model/job_state.hpp"
#include "model/state_codec.hpp"
#include "model/time.hpp"
#include "tests/model/job_state_gen.hpp"

namespace rehearse::codec_test {

using testing::gen_job_state;

inline JobState sample_job() {
  JobState s;
  s.job_id = "weekly-summary";
  s.retry_status = RetryStatus::retrying;
  s.failure_class = FailureClass::rate_limit;
  s.retry_count = 1;
  s.retry_limit = 2;
  s.next_retry_at = *parse_instant("2026-12-04T17:05:00Z");
  s.next_action = NextAction::retry;
  s.last_error = "HTTP 429";
  s.updated_at = *parse_instant("2026-12-04T17:00:00Z");
  s.next_run_at = *parse_instant("2026-12-11T17:00:00Z");
  s.last_slot = *parse_instant("2026-12-04T17:00:00Z");
  SlotRecord slot;
  slot.slot = *s.last_slot;
  slot.retry_status = RetryStatus::retrying;
  slot.failure_class = FailureClass::rate_limit;
  slot.retry_count = 1;
  slot.next_retry_at = s.next_retry_at;
  slot.next_action = NextAction::retry;
  slot.last_error = "HTTP 429";
  s.slots[slot.slot] = slot;
  return s;
}

// A few jobs (whole documents of 100 jobs only slow the search down).
inline rc::Gen<std::vector<JobState>> gen_states(int min) {
  return rc::gen::exec([min] {
    const auto n = *rc::gen::inRange(min, 10);
    return *rc::gen::container<std::vector<JobState>>(static_cast<std::size_t>(n),
                                                      gen_job_state(false));
  });
}

}  // namespace rehearse::codec_test
