// queue_discipline (docs/semantics.md §6, §10): the queue runs scheduled
// jobs with a set concurrency (1 by default), and a job never runs twice at
// once. Reads the queue's own records of leases (`queue_take` with the taking
// process; `queue_done` and `queue_requeue` end a lease) and the crashes that
// end a process's leases:
// - a take while the taking process already holds `queue.concurrency`
//   leases fires (a long retry chain of one job delays the others' slots: it
//   must not run beside them);
// - a take of a job while a lease of the same job is held fires.
// A dead process's leases are not its successor's: they end at the crash.
// Also the takeover (takeover_watch.hpp): with the worker lock free, a
// standby that stays up holds it within one `queue.standby_poll`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/takeover_watch.hpp"

namespace rehearse::sim {

class QueueDiscipline final : public Monitor {
 public:
  static constexpr const char* kName = "queue_discipline";
  static constexpr const char* kSummary =
      "queue entries are taken once, acknowledged, and never run after they are done";
  static std::vector<std::string> reads() {
    return {"queue_take",           "queue_done", "queue_requeue", "process_crash", "process_boot",
            "disk_process_crashed", "disk_crash", "disk_lock",     "disk_unlock"};
  }

  QueueDiscipline(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  Violations finish(TimeMs until) override;

 private:
  struct Lease {
    std::int64_t process = 0;
    std::string job;
  };

  void end_leases_of(const TraceEvent& crash);
  void check_take(const TraceEvent& e, std::size_t i, Violations& out) const;

  MonitorContext& context_;
  int concurrency_ = 1;
  TakeoverWatch takeover_;
  std::map<std::int64_t, Lease> leases_;  // queue entry id -> its live lease
};

}  // namespace rehearse::sim
