// The shared trackers every monitor may read (MonitorSet owns one of each and
// keeps them up to date; a monitor holds a reference to this context). Each
// tracker lives in its own file: job_table (the jobs as the monitors read
// them), process_tracker (up/down, boots, a store refusing writes),
// slot_tracker (every slot's typed state), retry_count (retries per budget),
// call_counts (tallies only).
#pragma once

#include <cstddef>

#include "sim/monitors/call_counts.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/monitors/process_tracker.hpp"
#include "sim/monitors/retry_after_table.hpp"
#include "sim/monitors/retry_budget_table.hpp"
#include "sim/monitors/retry_count.hpp"
#include "sim/monitors/slot_tracker.hpp"
#include "sim/monitors/wall_clock.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

struct MonitorContext {
  explicit MonitorContext(const Scenario& scenario)
      : jobs(scenario),
        slots(jobs),
        retry_count(jobs),
        calls(jobs),
        budgets(jobs, process, wall_clock) {}
  MonitorContext(const MonitorContext&) = delete;
  MonitorContext& operator=(const MonitorContext&) = delete;

  JobTable jobs;
  ProcessTracker process;
  SlotTracker slots;
  RetryCount retry_count;
  CallCounts calls;
  WallClockTable wall_clock;    // the worker machine's clock, from the world's clock steps
  RetryAfterTable retry_after;  // each job's last reply's Retry-After
  RetryBudgetTable budgets;     // each retry budget's window, per worker process
  // Events observed so far (the index end checks report: the trace size).
  std::size_t events_seen = 0;
};

}  // namespace rehearse::sim
