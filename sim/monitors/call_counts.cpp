#include "sim/monitors/call_counts.hpp"

#include "model/assert.hpp"

namespace rehearse::sim {

void CallCounts::observe_call(const TraceEvent& e) {
  // MonitorSet::dispatch hands over service calls only.
  REHEARSE_ASSERT_EQ(e.type, "service_call");
  ++service_calls_[e.service];
  if (jobs_.find(e.job) != nullptr) ++job_calls_[e.job];
}

void CallCounts::observe_notification(const TraceEvent& notice) {
  const std::int64_t total = ++notifications_total_[notice.type];
  if (jobs_.find(notice.job) != nullptr) {
    const std::int64_t of_job = ++job_notifications_[notice.job][notice.type];
    // Counted in both at once: a job's share never passes the total.
    REHEARSE_ASSERT_LE(of_job, total);
  }
}

void CallCounts::tally(nlohmann::json& tallies) const {
  // A job's calls and notifications are among all calls and notifications
  // (each is counted in both at once), and no count goes below one.
  std::int64_t all_calls = 0, job_calls = 0;
  for (const auto& [name, n] : service_calls_) all_calls += n;
  for (const auto& [job, n] : job_calls_) job_calls += n;
  REHEARSE_ASSERT_LE(job_calls, all_calls);
  for (const auto& [job, by_type] : job_notifications_) {
    for (const auto& [ev, n] : by_type) {
      REHEARSE_ASSERT_GE(n, 1);
      const auto total = notifications_total_.find(ev);
      REHEARSE_ASSERT(total != notifications_total_.end());
      REHEARSE_ASSERT_LE(n, total->second);
    }
  }
  for (const auto& [id, config] : jobs_.all()) {
    nlohmann::json& o = tallies["jobs"][id];
    const auto calls = job_calls_.find(id);
    o["calls"] = calls == job_calls_.end() ? std::int64_t{0} : calls->second;
    nlohmann::json notes = nlohmann::json::object();
    if (const auto it = job_notifications_.find(id); it != job_notifications_.end()) {
      for (const auto& [ev, n] : it->second) notes[ev] = n;
    }
    o["notifications"] = std::move(notes);
  }
  for (const auto& [name, n] : service_calls_) tallies["services"][name] = {{"calls", n}};
  for (const auto& [ev, n] : notifications_total_) tallies["notifications"][ev] = n;
}

}  // namespace rehearse::sim
