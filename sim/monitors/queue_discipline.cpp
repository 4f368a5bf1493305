#include "sim/monitors/queue_discipline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/assert.hpp"
#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

QueueDiscipline::QueueDiscipline(const Scenario& scenario, MonitorContext& context)
    : context_(context),
      concurrency_(std::max(1, scenario.queue.concurrency)),
      takeover_(kName, scenario.queue.standby_poll_ms, context.wall_clock) {}

Violations QueueDiscipline::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  takeover_.observe(e, i, out);
  if (is_crash_event(e.type)) {
    end_leases_of(e);
    // A power loss ends every lease.
    if (e.type == "disk_crash") REHEARSE_ASSERT(leases_.empty());
    return out;
  }
  const std::int64_t id = e.num("id", -1);
  if (e.type == "queue_done" || e.type == "queue_requeue") {
    leases_.erase(id);
  } else if (e.type == "queue_take") {
    check_take(e, i, out);
    leases_[id] = Lease{e.num("process"), e.job};
  }
  return out;
}

Violations QueueDiscipline::finish(TimeMs until) {
  Violations out;
  takeover_.finish(until, context_.events_seen, out);
  return out;
}

// A crash ends the leases of its process (every process's at a power loss).
void QueueDiscipline::end_leases_of(const TraceEvent& crash) {
  REHEARSE_ASSERT(is_crash_event(crash.type));
  const bool machine = crash.type == "disk_crash";
  const std::int64_t pid = pid_of(crash);
  std::erase_if(leases_, [&](const auto& entry) { return machine || entry.second.process == pid; });
}

void QueueDiscipline::check_take(const TraceEvent& e, std::size_t i, Violations& out) const {
  REHEARSE_ASSERT_EQ(e.type, "queue_take");
  REHEARSE_ASSERT_GE(concurrency_, 1);
  const std::int64_t process = e.num("process");
  int held = 0;
  for (const auto& [id, lease] : leases_) {
    if (lease.process != process) continue;
    ++held;
    if (lease.job == e.job) {
      out.push_back({kName, i, e.t,
                     fmt::format("job {} taken again (entry {}) while its run of entry {} is "
                                 "still going: a job runs once at a time",
                                 e.job, e.num("id"), id)});
    }
  }
  // The process's leases are among all the leases held.
  REHEARSE_ASSERT_LE(held, leases_.size());
  if (held >= concurrency_) {
    out.push_back(
        {kName, i, e.t,
         fmt::format("process {} took entry {} of job {} while it ran {} entr{} "
                     "already: the queue's concurrency is {}",
                     process, e.num("id"), e.job, held, held == 1 ? "y" : "ies", concurrency_)});
  }
}

}  // namespace rehearse::sim
