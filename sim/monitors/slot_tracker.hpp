// Shared tracker: every slot of every job as the world saw it, with a typed
// state (SlotState; no strings as states), and per job the facts several
// monitors judge by (its last failure, for a per_episode budget). Read by the
// invariants that need slots (retries_bounded, schedule_kept, nothing_lost);
// the source of the per-slot tallies and MonitorSet::slot_records().
//
// Transitions (docs/monitors.md "The slot tracker"; the last one seen wins):
//   queue_add (kind regular)          -> handed       (a new slot)
//   run_started                       -> running      (marked_skipped stays)
//   durable_delivery, verdict skipped -> marked_skipped
//   run_finished failure              -> failed
//   run_finished success / skipped    -> delivered, or skipped when marked
//   retry_scheduled                   -> retry_pending
//   retry_exhausted                   -> exhausted
//   failed_permanent                  -> failed_permanent
//   retry_dropped                     -> retry_dropped
//   retry_superseded                  -> superseded (from retry_pending or failed)
//   a firing folded into a late run   -> coalesced  (schedule_kept says which)
// The tracker is updated after the monitors have judged an event, so a
// monitor sees each slot as it was before the event.
//
// Memory (docs/performance.md "Memory with history"): a job with slot history
// (MonitoredJob::slot_history: a listed job, or a fleet job whose expect
// names its slots) keeps a SlotWatch per slot for the whole run, with when
// each run started and the notifications per slot. Any other job keeps a
// SlotWatch only while its slot is unfinished; once the slot reaches a
// finished state (delivered, skipped, exhausted, failed_permanent,
// retry_dropped, superseded, coalesced) it is kept as a 24-byte FinishedSlot
// holding everything a monitor reads of it (state, runs, last failure,
// stall), and an event for it again turns it back into a SlotWatch first.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"

namespace rehearse::sim {

// A slot's fate as the shared slot tracker sees it (the last one seen wins;
// docs/monitors.md "Tallies").
enum class SlotState {
  handed,            // handed out, not yet run
  running,           // a run started
  failed,            // the last run failed, nothing followed yet
  retry_pending,     // a retry was scheduled
  marked_skipped,    // the run marked the slot skipped, not yet finished
  delivered,         // success (or already complete after a delivery)
  skipped,           // the slot was skipped
  exhausted,         // retry_exhausted
  failed_permanent,  // failed_permanent
  retry_dropped,     // a queued retry dropped because the store could not be trusted
  superseded,        // per_episode: a newer slot dropped its pending retry
  coalesced,         // folded into a late run
};

// The tracker's name for a slot state (tallies, per-slot listings).
const char* to_string(SlotState state) noexcept;

// One slot as the shared slot tracker sees it (MonitorSet::slot_records()).
struct SlotRecord {
  std::string job;
  TimeMs slot = 0;
  SlotState state = SlotState::handed;
  int attempts = 0;                          // runs of the slot started
  std::optional<std::string> failure_class;  // of its last failure, if any
};

struct SlotWatch {
  std::string job;
  TimeMs slot = 0;
  std::size_t handed_index = 0;
  std::optional<TimeMs> carried_by;  // a coalesced slot: the run that carried it
  SlotState state = SlotState::handed;
  std::size_t state_index = 0;
  TimeMs state_t = 0;
  std::optional<std::string> last_failure_class;
  std::optional<TimeMs> last_failure_t;
  std::optional<std::size_t> run_index;  // current run's run_started
  int runs = 0;                          // runs of the slot started
  bool stalled = false;  // its durable record showed a stall since its last finished run
  // tallies()["jobs"][id]["slots"]: when each run of the slot started, and
  // the notifications for the slot, by event.
  std::vector<TimeMs> attempt_at;
  std::map<std::string, std::int64_t> notifications;
};

// A finished slot of a job without slot history, compactly: what the
// monitors read of a slot (SlotWatch's state, runs, last failure, stall).
struct FinishedSlot {
  TimeMs slot = 0;
  TimeMs last_failure_t = 0;  // when has_failure
  std::int32_t runs = 0;
  SlotState state = SlotState::delivered;
  bool stalled = false;
  bool has_failure = false;
  std::uint8_t failure_class = 0;  // index into the tracker's class names, when has_failure
};

// Per job: its runs, and its last failure (per_episode budgets count from it).
struct JobRuns {
  std::int64_t runs = 0;
  DurationMs max_delay_ms = 0;
  std::string final_status;
  std::optional<std::string> last_failure_class;  // the episode's last failure
  std::optional<TimeMs> last_failure_t;
  bool slot_history = true;  // MonitoredJob::slot_history
};

class SlotTracker {
 public:
  explicit SlotTracker(const JobTable& jobs);

  // After the monitors judged it: a raw event or a derived fact.
  void observe(const TraceEvent& event, std::size_t index);
  // A notification committed for a slot the tracker knows (before the
  // monitors judge it; a slot it does not know yet is not counted).
  void count_notification(const TraceEvent& notice);
  // schedule_kept's finding: firings folded into the late run of `carrier`
  // (at most 100, as a misfire record lists them); a known slot keeps its fate.
  void mark_coalesced(const std::string& job, TimeMs carrier, const std::vector<TimeMs>& folded,
                      std::size_t index);

  bool known(const std::string& job, TimeMs slot) const;
  // The slot, or nothing when unknown. A finished slot kept compactly is
  // returned as a SlotWatch rebuilt in a scratch member: the pointer is good
  // until the next call of find() or of any non-const member.
  const SlotWatch* find(const std::string& job, TimeMs slot) const;
  // The slot, made known when it was not (a compact finished slot becomes a
  // SlotWatch again until the event is observed).
  SlotWatch& at(const std::string& job, TimeMs slot);
  const JobRuns* job(const std::string& id) const;
  // The slots kept as SlotWatch, by (job, slot): every slot of a job with slot
  // history, the unfinished ones of the others. A `failed` slot (nothing has
  // followed its failed run yet) is unfinished, so it is always here.
  const std::map<std::pair<std::string, TimeMs>, SlotWatch>& watched() const noexcept {
    return slots_;
  }
  // How many slots are kept compactly (tests, docs/performance.md).
  std::size_t finished_compact() const noexcept;

  std::vector<SlotRecord> records() const;
  // tallies()["jobs"][job]["slots"], in time order (a job with slot history).
  nlohmann::json slot_list(const std::string& job) const;
  // The per-job slot counts, runs, final status and delay, and the slot list
  // of each job with slot history.
  void tally(nlohmann::json& tallies) const;

 private:
  void observe_event(const TraceEvent& e, std::size_t i);
  // A finished slot of a job without slot history leaves slots_ for finished_.
  void settle(const std::string& job, TimeMs slot);
  FinishedSlot* find_finished(const std::string& job, TimeMs slot);
  const FinishedSlot* find_finished(const std::string& job, TimeMs slot) const;
  SlotWatch rebuilt(const std::string& job, const FinishedSlot& f) const;
  std::optional<std::uint8_t> class_index(const std::string& name);
  bool history(const std::string& job) const;
  void on_run_started(const TraceEvent& e, std::size_t i, JobRuns& j);
  void on_run_finished(const TraceEvent& e, std::size_t i, JobRuns& j);
  void note_durable_state(const TraceEvent& e);
  void note_ledger(const TraceEvent& e, std::size_t i);

  const JobTable& jobs_table_;
  std::map<std::string, JobRuns> jobs_;
  std::map<std::pair<std::string, TimeMs>, SlotWatch> slots_;
  // Per job without slot history: its finished slots, by slot.
  std::map<std::string, std::vector<FinishedSlot>, std::less<>> finished_;
  std::vector<std::string> failure_classes_;  // FinishedSlot::failure_class names
  mutable SlotWatch scratch_;                 // find()'s answer for a compact slot
};

}  // namespace rehearse::sim
