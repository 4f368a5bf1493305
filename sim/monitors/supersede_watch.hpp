// Part of retries_bounded (docs/retry.md, "Supersede"): under a per_episode
// budget a regular slot coming due drops the pending retry of an earlier
// slot, and so does a regular run starting; the episode's count goes on with
// the new slot. Judged from the queue's own records: a retry entry that was
// pending (added, neither taken nor cancelled) when a later slot of its job
// was handed out (`queue_add` of a regular entry) is never taken afterwards,
// and no retry of an earlier slot starts after the job's latest regular run.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "model/time.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

class SupersedeWatch {
 public:
  SupersedeWatch(const char* invariant, const JobTable& jobs, const ProcessTracker& process);

  void observe(const TraceEvent& e, std::size_t i, Violations& out);

 private:
  struct PendingRetry {
    std::string job;
    TimeMs slot = 0;
  };

  bool per_episode(const std::string& job) const;
  void on_hand_out(const TraceEvent& e);
  void on_take(const TraceEvent& e, std::size_t i, Violations& out);

  const char* invariant_;
  const JobTable& jobs_;
  const ProcessTracker& process_;
  std::map<std::int64_t, PendingRetry> pending_;  // queue entry id -> its retry
  // Pending retries a later slot's hand-out superseded (forgotten at a crash:
  // the drop may die with the process, and the boot decides again).
  std::set<std::int64_t> superseded_;
  // The slot of each job's latest regular run.
  std::map<std::string, TimeMs> regular_started_;
};

}  // namespace rehearse::sim
