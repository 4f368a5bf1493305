// schedule_kept (docs/semantics.md §3, §10): every firing of the effective
// schedule is handed out once, on time, or folded into a late run that
// counts it. Reads the queue's own record of each hand-out (`queue_add`,
// kind regular) and the durable state the world read after it
// (`durable_job_state`), never the core's slot_due / slot_misfire lines;
// matches firings with the monitors' own cron matcher (witness_cron.hpp):
// - a job whose environment override is set but empty must never run;
// - a regular entry's slot is a firing, queued due (`ready_at`) at it;
// - no firing between the previous slot handed out and this one is skipped;
//   an older slot is never handed out again (except the same slot twice in a
//   row, and under a store that refuses writes);
// - firings due while the process was down are folded into the late run
//   (marked coalesced in the slot tracker) and the job's next durable row
//   counts exactly that many more (`coalesced_slots`), with `next_run_at` the
//   first firing strictly after the hand-out;
// - end: while the process is up, every firing before `until` was handed out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class ScheduleKept final : public Monitor {
 public:
  static constexpr const char* kName = "schedule_kept";
  static constexpr const char* kSummary =
      "next_run_at never moves off the schedule, and every slot is handed out on time";
  static std::vector<std::string> reads() { return {"queue_add", "durable_job_state"}; }

  ScheduleKept(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  Violations finish(TimeMs until) override;

 private:
  struct JobSchedule {
    std::optional<TimeMs> last_slot;    // last slot handed out or coalesced
    std::optional<TimeMs> last_handed;  // the slot of the last hand-out
    struct PendingMisfire {
      TimeMs slot = 0;
      std::int64_t coalesced = 0;
      std::size_t index = 0;
    };
    std::optional<PendingMisfire> pending_misfire;
    // The hand-out whose durable write must set next_run_at to `next`.
    struct PendingNext {
      TimeMs slot = 0;
      std::optional<TimeMs> next;
    };
    std::optional<PendingNext> pending_next;
    std::int64_t durable_coalesced = 0;  // coalesced_slots in the last durable row
    std::int64_t caught_up_boot = 0;     // the boot during which a new slot was last handed out
    std::int64_t pending_boot = 0;       // the boot the pending rows were owed in
  };

  void on_handout(const TraceEvent& e, std::size_t i, Violations& out);
  void check_none_skipped(const MonitoredJob& job, JobSchedule& j, TimeMs s, const TraceEvent& e,
                          std::size_t i, Violations& out);
  void check_durable_row(const TraceEvent& e, std::size_t i, Violations& out);
  void check_never_runs(const TraceEvent& e, std::size_t i, Violations& out);
  void check_due_at_firing(const TraceEvent& e, std::size_t i, Violations& out);

  MonitorContext& context_;
  TimeMs start_ms_ = 0;
  std::map<std::string, JobSchedule> jobs_;
};

}  // namespace rehearse::sim
