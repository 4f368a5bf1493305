// state_durable (docs/semantics.md §5, §10): the job state survives restarts
// and damage is reported, never papered over. Reads the disk's own records
// (writes, appends, renames, removals, locks), the damage the world did
// (`store_corrupt_injected`, `disk_corrupted`), runs (run_facts.hpp), the
// notifications the outbox received, boots and crashes, and the world's own
// records of torn journal tails (`journal_tail_kept`, `journal_tail_gone`;
// the core's `state_tail_dropped` is not read):
// - the lock: in a store directory (add_locked_store, or any directory a
//   lock is taken in) a change by a process holding none of its locks fires
//   (a crash releases every lock);
// - durable before acknowledged: a lock of a store directory is released
//   only when every file written or appended there since has been fsynced
//   (disk_fsync; a rename moves the pending change to the new name);
// - counters: the n-th retry a budget schedules announces attempt n, n the
//   shared count (retry_count.hpp); a lower or a higher announced attempt fires;
//   a durable row (`durable_job_state`) that is `ok` keeps no count above 0;
// - a corrupt state file is never written, appended, renamed over or
//   removed (a journal cut at a record boundary, `records_whole`, counts as
//   corrupt only once the core reports a damage: the file cannot show it); no retry is scheduled
//   (the queue's retry queue_add) or started while the store refuses writes (a retry's start is its
//   queue take: one taken before the core reported the damage may finish after it);
// - a journal's tail is dropped only as a torn last record and only once a
//   durable byte-for-byte copy of the damaged journal is kept (the copy is
//   the damage's report, and lets the store replace a journal a fault cut);
// - the queue's durable promise (queue_promise.hpp): what the queue
//   acknowledged and did not finish is in the file a boot reopens (the
//   world's `queue_reopened`);
// - a job's own damaged file (ledger, pipeline file) fails its runs closed
//   and is kept (job_file_watch.hpp);
// - end: a damaged state file that a process booted after the damage read
//   (the disk's `disk_read` of a watched file) must have been reported; a
//   file no booted process reads needs no report from the worker, nor does a
//   reader that went down before it could (the next one that reads owes it);
// - a journal cut at a record boundary whose loss the delivery ledger proves
//   is reported by the next process that boots on it (ledger_loss_watch.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/job_file_watch.hpp"
#include "sim/monitors/ledger_loss_watch.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/queue_promise.hpp"

namespace rehearse::sim {

class StateDurable final : public Monitor {
 public:
  static constexpr const char* kName = "state_durable";
  static constexpr const char* kSummary =
      "what the store acknowledged survives crashes; corrupt files are kept and fail closed";
  static std::vector<std::string> reads() {
    return {"store_corrupt_injected",
            "job_file_damaged",
            "service_call",
            "message_delivered",
            "message_refused",
            "disk_corrupted",
            "disk_torn_write",
            "journal_tail_kept",
            "journal_tail_gone",
            "disk_write",
            "disk_append",
            "disk_remove",
            "disk_rename",
            "disk_lock",
            "disk_unlock",
            "disk_fail_stop",
            "disk_fsync",
            "disk_read",
            "queue_take",
            "queue_add",
            "queue_intent",
            "queue_done",
            "queue_cancel",
            "outbox_remove",
            "queue_reopened",
            "durable_job_state",
            "outbox_add",
            "process_boot",
            "process_crash",
            "disk_process_crashed",
            "disk_crash"};
  }

  StateDurable(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  Violations finish(TimeMs until) override;

  // A directory the world keeps a locked store in: its files change only
  // under a lock taken in it.
  void add_locked_store(std::string dir);

 private:
  void check_retry_start(const TraceEvent& e, std::size_t i, bool known_slot, Violations& out);
  void check_locked_writes(const TraceEvent& e, std::size_t i, Violations& out);
  void check_durable_before_unlock(const TraceEvent& e, std::size_t i, Violations& out);
  void check_ok_row_count(const TraceEvent& e, std::size_t i, Violations& out);
  bool note_state_damage(const TraceEvent& e);
  void check_damage_behind_report(const TraceEvent& e, std::size_t i, Violations& out);
  void note_damage_read(const TraceEvent& e);
  bool check_corrupt_file_kept(const TraceEvent& e, std::size_t i, Violations& out);
  void check_tail_kept(const TraceEvent& e, std::size_t i, Violations& out);
  void check_retry_counter(const TraceEvent& e, std::size_t i, Violations& out);
  void check_retry_queued(const TraceEvent& e, std::size_t i, Violations& out);

  MonitorContext& context_;
  std::map<std::string, std::int64_t> lock_holders_;  // lock file -> process holding it
  std::set<std::string> lock_dirs_;                   // directories of locked stores
  struct Unsynced {
    std::string how;           // disk_write / disk_append
    std::int64_t process = 0;  // who changed it: only its own unlock owes the fsync
  };
  std::map<std::string, Unsynced> unsynced_;   // store file -> its change not yet fsynced
  std::set<std::size_t> taken_while_refused_;  // indexes of retry takes while refused
  bool world_damaged_ = false;                 // the world damaged or tore any file of the disk
  std::vector<std::string> corrupt_paths_;
  // Journals a fault cut at a record boundary (`records_whole`): a valid,
  // shorter journal no reader of the file can tell from a whole one. Corrupt
  // (kept untouched) only once the core reports a damage (it found the loss
  // some other way, e.g. the delivery ledger at a boot).
  std::vector<std::string> hidden_loss_paths_;
  std::vector<std::string> reported_hidden_;  // hidden losses the core reported since the boot
  void forget_reported_hidden_losses();
  // Damage not reported yet (a state_corrupt, or a kept copy of a torn
  // journal, reports every damage before it).
  struct Damage {
    std::string path;
    bool booted = false;  // a process booted since
    bool read = false;    // and read the damaged file
  };
  std::vector<Damage> unreported_;
  QueuePromise queue_promise_;          // the queue's acknowledged entries and messages
  JobFileWatch job_files_{kName};       // a damaged ledger or pipeline file: closed, kept
  LedgerLossWatch ledger_loss_{kName};  // records the delivery ledger proves lost: reported
};

}  // namespace rehearse::sim
