// Shared tracker: the Retry-After each job's last reply carried, as the
// world recorded it (`service_reply`'s `retry_after`: the header's text),
// read by the monitors' own parser as delta-seconds (digits only, at most
// 366 days; anything else is no hint). A job runs one run at a time, so its
// last reply before a retry is queued or a chain ends is the refusal.
#pragma once

#include <map>
#include <string>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

// The monitors' reading of a Retry-After header's text, in ms (0: none).
DurationMs witness_retry_after_ms(const std::string& text);

class RetryAfterTable {
 public:
  void observe(const TraceEvent& e);
  // The job's last reply's hint in ms (0: none, or no reply yet).
  DurationMs last(const std::string& job) const;

 private:
  std::map<std::string, DurationMs> last_;
};

}  // namespace rehearse::sim
