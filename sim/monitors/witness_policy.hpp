// What the monitors believe a job's retry policy allows: their own reading
// of `retry_policy` (docs/monitors.md "The policy table"), never
// model/retry_policy's parser.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "model/time.hpp"

namespace rehearse::sim {

struct WitnessPolicy {
  bool valid = false;
  std::string why_invalid;
  int retries_max = 0;
  bool per_slot = false;
  bool all_classes = false;
  std::set<std::string> classes;
  bool exponential = false;
  bool linear = false;               // delay * n
  std::optional<DurationMs> cap_ms;  // max_delay: a cap on each delay, before jitter
  DurationMs delay_ms = 0;
  double jitter = 0.0;

  bool retries_class(const std::string& failure_class) const;
  // The delay the policy gives retry n (>= 1) before jitter: `delay`,
  // round(2^(n-1) * delay) when exponential (docs/semantics.md §2), or
  // delay * n when linear; never above the cap when one is given.
  DurationMs base_delay_ms(int n) const;
  // The least delay before retry n (>= 1) the policy allows (jitter included, 1 ms slack).
  DurationMs min_delay_ms(int n) const;
  // The largest delay before retry n (>= 1): the base delay (jitter only
  // lowers it), 1 ms slack.
  DurationMs max_delay_ms(int n) const;
};

// The monitors' reading of a job's `retry_policy` (absent: invalid).
// `low_frequency` is empty when the effective schedule is unknown (an
// "auto" policy cannot then be read). `*judged` is false when the monitors do
// not judge the job's retries (another system's form, such an "auto").
WitnessPolicy read_policy(const std::optional<nlohmann::json>& written,
                          std::optional<bool> low_frequency, bool* judged);

}  // namespace rehearse::sim
