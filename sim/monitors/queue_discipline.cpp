#include "sim/monitors/queue_discipline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

QueueDiscipline::QueueDiscipline(const Scenario& scenario, MonitorContext&)
    : concurrency_(std::max(1, scenario.queue.concurrency)) {}

Violations QueueDiscipline::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (is_crash_event(e.type)) {
    end_leases_of(e);
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

// A crash ends the leases of its process (every process's at a power loss).
void QueueDiscipline::end_leases_of(const TraceEvent& crash) {
  const bool machine = crash.type == "disk_crash";
  const std::int64_t pid = pid_of(crash);
  std::erase_if(leases_, [&](const auto& entry) { return machine || entry.second.process == pid; });
}

void QueueDiscipline::check_take(const TraceEvent& e, std::size_t i, Violations& out) const {
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
  if (held >= concurrency_) {
    out.push_back(
        {kName, i, e.t,
         fmt::format("process {} took entry {} of job {} while it ran {} entr{} "
                     "already: the queue's concurrency is {}",
                     process, e.num("id"), e.job, held, held == 1 ? "y" : "ies", concurrency_)});
  }
}

}  // namespace rehearse::sim
