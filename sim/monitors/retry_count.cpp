#include "sim/monitors/retry_count.hpp"

namespace rehearse::sim {

void RetryCount::observe(const TraceEvent& e) {
  const MonitoredJob* job = jobs_.find(e.job);
  if (job == nullptr || !e.slot) return;
  const std::pair<std::string, TimeMs> key{e.job, *e.slot};
  if (e.type == "run_finished") {
    if (e.str("outcome") == "failure") {
      fresh_failure_.insert(e.job);
      fresh_slot_failure_.insert(key);
    } else {
      episode_scheduled_[e.job] = 0;  // the episode ends
    }
  } else if (e.type == "retry_scheduled") {
    const bool per_slot = job->policy.per_slot;
    const bool was_fresh =
        per_slot ? fresh_slot_failure_.erase(key) != 0 : fresh_failure_.erase(e.job) != 0;
    if (!was_fresh) return;  // a replayed intent announces the same retry again
    ++(per_slot ? slot_scheduled_[key] : episode_scheduled_[e.job]);
  } else if (e.type == "retry_exhausted" || e.type == "failed_permanent") {
    fresh_failure_.erase(e.job);
    fresh_slot_failure_.erase(key);
  }
}

bool RetryCount::fresh(const std::string& job, TimeMs slot, bool per_slot) const {
  return per_slot ? fresh_slot_failure_.count({job, slot}) != 0 : fresh_failure_.count(job) != 0;
}

int RetryCount::scheduled(const std::string& job, TimeMs slot, bool per_slot) const {
  if (per_slot) {
    const auto it = slot_scheduled_.find({job, slot});
    return it == slot_scheduled_.end() ? 0 : it->second;
  }
  const auto it = episode_scheduled_.find(job);
  return it == episode_scheduled_.end() ? 0 : it->second;
}

}  // namespace rehearse::sim
