#include "sim/monitors/retry_after_table.hpp"

#include <algorithm>

namespace rehearse::sim {

DurationMs witness_retry_after_ms(const std::string& text) {
  if (text.empty() || text.size() > 12) return 0;
  std::int64_t seconds = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return 0;
    seconds = seconds * 10 + (c - '0');
  }
  return std::min<std::int64_t>(seconds, 366LL * 86'400) * 1000;
}

void RetryAfterTable::observe(const TraceEvent& e) {
  if (e.type != "service_reply" || e.job.empty() || e.source != EventSource::world) return;
  last_[e.job] = witness_retry_after_ms(e.str("retry_after"));
}

DurationMs RetryAfterTable::last(const std::string& job) const {
  const auto it = last_.find(job);
  return it == last_.end() ? 0 : it->second;
}

}  // namespace rehearse::sim
