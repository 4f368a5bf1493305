// Part of state_durable (docs/group-jobs.md "Corrupt file", docs/reconcile.md
// "Corrupt or unwritable store"): a job's own durable file that the world
// damaged (`job_file_damaged`: a delivery ledger, a pipeline file) fails the
// job closed and is kept. Judged from world facts only:
// - a run of the job taken (`queue_take`) by a process that had read the
//   damaged bytes (the disk's `disk_read` of the watched file, since its last
//   crash) makes no service call for the job (`service_call`: the model API,
//   the orchestrator) and sends no delivery or failure notice for it
//   (`message_delivered` / `message_refused`; a notification of the failure
//   is allowed); the run that first reads the damage is not judged, as calls
//   made before the read are the run's right;
// - the damaged file is never written, appended, renamed over or removed.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class JobFileWatch {
 public:
  explicit JobFileWatch(const char* invariant) : invariant_(invariant) {}

  void observe(const TraceEvent& e, std::size_t i, Violations& out);

 private:
  struct Damage {
    std::string job;
    std::set<std::int64_t> readers;  // processes that read the damaged bytes
  };

  void note_crash(const TraceEvent& e);
  void note_take(const TraceEvent& e);
  void check_call(const TraceEvent& e, std::size_t i, Violations& out);
  void check_kept(const TraceEvent& e, std::size_t i, Violations& out);
  Damage* damage_at(const std::string& path);

  const char* invariant_;
  std::map<std::string, Damage> damaged_;  // damaged path -> its damage
  // Jobs whose current run was taken by a process that had read the damage.
  std::set<std::string> closed_;
};

}  // namespace rehearse::sim
