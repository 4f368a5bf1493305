// RapidCheck generators for JobState and its parts, shared by the state codec
// and state store tests. "Fully populated" means every optional engaged, every
// string non-empty and every count non-zero, so that a field the codec forgot
// cannot hide behind its default value in a round trip.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"

namespace rehearse::testing {

// Text that stresses JSON escaping: quotes, backslashes, control bytes, NUL,
// multi-byte UTF-8 (2, 3 and 4 bytes). Always valid UTF-8.
inline rc::Gen<std::string> gen_text(bool non_empty) {
  static const std::vector<std::string> pieces = {"a",
                                                  "Z",
                                                  "0",
                                                  " ",
                                                  "\"",
                                                  "\\",
                                                  "/",
                                                  "\n",
                                                  "\t",
                                                  std::string(1, '\0'),
                                                  "\x1f",
                                                  "~",
                                                  "é",
                                                  "한",
                                                  "😀",
                                                  "HTTP 429",
                                                  "quota exhausted",
                                                  "{",
                                                  "}",
                                                  ":",
                                                  ","};
  return rc::gen::exec([non_empty] {
    const auto n = *rc::gen::inRange<std::size_t>(non_empty ? 1 : 0, 12);
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += *rc::gen::elementOf(pieces);
    return out;
  });
}

inline rc::Gen<std::string> gen_job_id() {
  return rc::gen::exec([] {
    const auto prefix =
        *rc::gen::element<std::string>("job", "weekly-summary", "fetch/prices", "a~b", "한글", "x");
    return prefix + "-" + std::to_string(*rc::gen::inRange(0, 1000));
  });
}

inline rc::Gen<TimeMs> gen_instant() {
  return rc::gen::inRange<TimeMs>(kMinInstantMs, kMaxInstantMs + 1);
}

inline rc::Gen<int> gen_count(bool non_zero) {
  return rc::gen::oneOf(rc::gen::inRange(non_zero ? 1 : 0, 10),
                        rc::gen::inRange(non_zero ? 1 : 0, std::numeric_limits<int>::max()),
                        rc::gen::just(non_zero ? std::numeric_limits<int>::max() : 0));
}

template <typename T>
rc::Gen<std::optional<T>> gen_optional(rc::Gen<T> gen, bool engaged) {
  if (engaged) return rc::gen::map(gen, [](T v) { return std::optional<T>(std::move(v)); });
  return rc::gen::oneOf(rc::gen::just(std::optional<T>{}),
                        rc::gen::map(gen, [](T v) { return std::optional<T>(std::move(v)); }));
}

inline rc::Gen<RetryStatus> gen_status() {
  return rc::gen::element(RetryStatus::ok, RetryStatus::retrying, RetryStatus::retry_exhausted,
                          RetryStatus::failed);
}
inline rc::Gen<NextAction> gen_action() {
  return rc::gen::element(NextAction::none, NextAction::retry, NextAction::wait_next_run,
                          NextAction::manual_review);
}
inline rc::Gen<FailureClass> gen_class() { return rc::gen::elementOf(all_failure_classes()); }

inline rc::Gen<SlotRecord> gen_slot(TimeMs slot, bool full) {
  return rc::gen::exec([slot, full] {
    SlotRecord r;
    r.slot = slot;
    r.retry_status = *gen_status();
    r.failure_class = *gen_optional(gen_class(), full);
    r.retry_count = *gen_count(full);
    r.next_retry_at = *gen_optional(gen_instant(), full);
    r.next_action = *gen_action();
    r.stalled_count = *gen_count(full);
    r.last_error = *gen_text(full);
    if (full) r.rule_counts = *rc::gen::container<std::vector<int>>(gen_count(false));
    if (r.rule_counts.size() > kRuleCountMax) r.rule_counts.resize(kRuleCountMax);
    if (full && *rc::gen::arbitrary<bool>()) {
      r.last_delay_ms = *rc::gen::inRange<DurationMs>(1, kBackoffDelayMaxMs + 1);
    }
    return r;
  });
}

inline rc::Gen<JobState> gen_job_state(bool full, rc::Gen<std::string> id_gen = gen_job_id()) {
  return rc::gen::exec([full, id_gen] {
    JobState s;
    s.job_id = *id_gen;
    s.retry_status = *gen_status();
    s.failure_class = *gen_optional(gen_class(), full);
    s.retry_count = *gen_count(full);
    s.retry_limit = *gen_count(full);
    s.next_retry_at = *gen_optional(gen_instant(), full);
    s.next_action = *gen_action();
    s.last_error = *gen_text(full);
    s.updated_at = *gen_optional(gen_instant(), full);
    s.next_run_at = *gen_optional(gen_instant(), full);
    s.last_slot = *gen_optional(gen_instant(), full);
    s.policy_error = *gen_text(full);
    s.misfire_runs = *gen_count(full);
    s.coalesced_slots = *gen_count(full);
    constexpr DurationMs kLatenessMax = std::numeric_limits<DurationMs>::max();
    s.max_lateness_ms = full ? *rc::gen::inRange<DurationMs>(1, kLatenessMax)
                             : *rc::gen::inRange<DurationMs>(0, 400 * kDayMs);
    const auto slot_count = *rc::gen::inRange(full ? 1 : 0, 4);
    for (int i = 0; i < slot_count; ++i) {
      const TimeMs at = *gen_instant();
      s.slots[at] = *gen_slot(at, full);
    }
    return s;
  });
}

}  // namespace rehearse::testing
