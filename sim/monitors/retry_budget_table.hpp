// Shared tracker: each retry budget's window as the world's queue shows it
// (docs/retry.md "Retry budgets"), per worker process, never the core's
// counts. An attempt is a `queue_take` of a job whose policy (the monitors'
// reading) names the budget, counted for the process that took it (the
// take's `process`); a retry is a fresh `queue_add` of kind retry, counted
// for the process that holds the failing run's lease (a process is a pid
// between two boots of the acting worker). Instants are the
// machine's clock (wall_clock.hpp), as the core's are.
//
// room() answers, for a job at an instant, what its budget's window holds in
// the process deciding for it: retries_bounded fires on a retry added beyond
// it, nothing_lost on a chain ended "by the budget" while it had room. A job
// whose lease was taken before the acting worker's last boot is decided by
// counts that died with the old process: no answer.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/monitors/process_tracker.hpp"
#include "sim/monitors/wall_clock.hpp"

namespace rehearse::sim {

struct BudgetRoom {
  std::int64_t attempts = 0;
  std::int64_t retries = 0;
  std::int64_t allowed = 0;  // max(min_retries, attempts * percent / 100)

  bool has_room() const noexcept { return retries + 1 <= allowed; }
};

class RetryBudgetTable {
 public:
  RetryBudgetTable(const JobTable& jobs, const ProcessTracker& process,
                   const WallClockTable& wall_clock)
      : jobs_(jobs), process_(process), wall_clock_(wall_clock) {}

  // queue_take and queue_add (kind retry, added); `fresh` says whether the
  // add answers a new failure (retry_count.hpp), not a restore.
  void observe(const TraceEvent& e, bool fresh);
  // The window of `job`'s budget at world time `t`; nullopt without a budget
  // or when no live process decides for the job.
  std::optional<BudgetRoom> room(const std::string& job, TimeMs t) const;

 private:
  struct Window {
    std::multiset<TimeMs> attempts;
    std::multiset<TimeMs> retries;
  };
  struct Lease {
    std::int64_t pid = 0;
    std::int64_t boots = 0;  // the acting worker's boots when it was taken
  };
  const JobTable& jobs_;
  const ProcessTracker& process_;
  const WallClockTable& wall_clock_;
  // By (pid, the acting worker's boots, budget): a process's counts die with
  // it, and a pid the world gives again after a boot is a new process.
  std::map<std::tuple<std::int64_t, std::int64_t, std::string>, Window> windows_;
  std::map<std::string, Lease> leases_;  // by job
};

}  // namespace rehearse::sim
