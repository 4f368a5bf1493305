// Shared tracker: the retries each budget has scheduled, by the monitors' own
// count (per (job, slot) under a per_slot budget, per job until a run that
// did not fail under per_episode), and which failures are still unanswered.
// A failure is fresh from its run's end until a retry, retry_exhausted or
// failed_permanent notification answers it; a notification without a fresh
// failure is a replayed intent repeating an old decision, not a new retry.
// Read by retries_bounded (the exact window), nothing_lost (the budget spent)
// and state_durable (the counter the core announces). Updated after the
// monitors have judged an event.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>

#include "model/time.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/trace.hpp"

namespace rehearse::sim {

class RetryCount {
 public:
  explicit RetryCount(const JobTable& jobs) : jobs_(jobs) {}

  // run_finished, retry_scheduled, retry_exhausted, failed_permanent.
  void observe(const TraceEvent& event);

  // An unanswered failure of the job's budget (the slot's under per_slot).
  bool fresh(const std::string& job, TimeMs slot, bool per_slot) const;
  // Retries scheduled so far in the job's budget (the slot's under per_slot).
  int scheduled(const std::string& job, TimeMs slot, bool per_slot) const;

 private:
  const JobTable& jobs_;
  std::set<std::string> fresh_failure_;
  std::set<std::pair<std::string, TimeMs>> fresh_slot_failure_;
  std::map<std::pair<std::string, TimeMs>, int> slot_scheduled_;
  std::map<std::string, int> episode_scheduled_;
};

}  // namespace rehearse::sim
