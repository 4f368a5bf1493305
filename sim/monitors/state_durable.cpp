#include "sim/monitors/state_durable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {

bool disk_change(const std::string& type) {
  return type == "disk_write" || type == "disk_append" || type == "disk_rename" ||
         type == "disk_remove";
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// `path` names the damaged file `bad` (the same path, or `bad` relative to it).
bool same_file(const std::string& path, const std::string& bad) {
  // Damage is noted only under a named path (note_state_damage).
  REHEARSE_ASSERT(!bad.empty());
  return path == bad || (path.size() > bad.size() &&
                         path.compare(path.size() - bad.size(), bad.size(), bad) == 0 &&
                         path[path.size() - bad.size() - 1] == '/');
}

}  // namespace

StateDurable::StateDurable(const Scenario&, MonitorContext& context) : context_(context) {}

void StateDurable::add_locked_store(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  lock_dirs_.insert(std::move(dir));
}

Violations StateDurable::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  job_files_.observe(e, i, out);
  ledger_loss_.observe(e, context_.process.came_up_at(i), context_.process.went_down_at(i));
  if (e.type == "job_file_damaged" || e.type == "service_call" || e.type == "message_delivered" ||
      e.type == "message_refused") {
    return out;
  }
  // (A takeover's worker-lock grant both ends the dead holder's life and
  // boots the new one; it is also a lock to note below.)
  if (e.type == "disk_crash" || context_.process.went_down_at(i)) {
    unsynced_.clear();  // what was not durable is the crash's to lose
    // A reader that died before it could report owes nothing any more: the
    // next process that boots and reads the damage owes the report.
    for (Damage& d : unreported_) d.read = false;
  }
  if (context_.process.came_up_at(i)) {
    for (Damage& d : unreported_) d.booted = true;
    forget_reported_hidden_losses();
  }
  if (is_boot_event(e.type)) return out;
  if (e.type == "disk_read") {
    note_damage_read(e);
    return out;
  }
  if (e.type == "disk_process_crashed") {  // a process's locks die with it
    std::erase_if(lock_holders_, [&](const auto& held) { return held.second == e.num("process"); });
  }
  if (e.type == "disk_crash") lock_holders_.clear();  // the machine's power loss: every lock
  // A power loss forgets every lock and every change not yet durable.
  if (e.type == "disk_crash") REHEARSE_ASSERT(lock_holders_.empty() && unsynced_.empty());
  if (is_crash_event(e.type)) return out;
  check_damage_behind_report(e, i, out);
  queue_promise_.note(e);
  if (e.type == "queue_reopened") return queue_promise_.check_reopened(e, i, kName);
  const bool known_slot = context_.jobs.find(e.job) != nullptr && e.slot;
  check_retry_start(e, i, known_slot, out);
  check_locked_writes(e, i, out);
  check_durable_before_unlock(e, i, out);
  if (e.type == "durable_job_state") {
    check_ok_row_count(e, i, out);
    return out;
  }
  if (note_state_damage(e)) return out;
  if (e.type == "journal_tail_gone") {
    check_tail_kept(e, i, out);
    return out;
  }
  if (check_corrupt_file_kept(e, i, out)) return out;
  // Counters survive restarts: the n-th retry of a budget announces attempt n.
  if (e.type == "retry_scheduled" && known_slot) check_retry_counter(e, i, out);
  if (e.type == "queue_add") check_retry_queued(e, i, out);
  return out;
}

// No retry is scheduled while the store refuses writes (its counters cannot
// be trusted), judged from the queue's own record of the retry (a notice an
// intent decided before the damage, replayed at the boot that found it with
// no retry queued, schedules nothing).
void StateDurable::check_retry_queued(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_add");
  if (e.str("kind") != "retry" || !e.flag("added") || !context_.process.store_refused()) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {} slot {}: a retry was scheduled while the state store is "
                             "corrupt (its counters cannot be trusted)",
                             e.job, slot_text(e.slot))});
}

// No retry runs while the store refuses writes (docs/semantics.md §5: a
// retry queued before the damage was found does not run), judged at the
// retry's start: the queue's take, while the core had reported the store
// corrupt. The run fact (`run_started`, at the take's index) settles only at
// the run's end, and a retry already running when the damage is found
// cannot be held back; a retry taken and dropped (no run fact) is no run.
void StateDurable::check_retry_start(const TraceEvent& e, std::size_t i, bool known_slot,
                                     Violations& out) {
  REHEARSE_ASSERT(!known_slot || e.slot.has_value());
  if (e.type == "queue_take" && e.str("kind") == "retry" && context_.process.store_refused()) {
    taken_while_refused_.insert(i);
    return;
  }
  if (e.type != "run_started" || e.str("kind") != "retry" || !known_slot) return;
  if (taken_while_refused_.erase(i) == 0) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {} slot {}: a retry ran while the state store is corrupt", e.job,
                             slot_text(e.slot))});
}

// The lock (docs/semantics.md §5): a store's files change only under its
// lock. From the disk's own records: a directory in which a lock file was
// ever taken is a locked store; any write, append, rename or removal there
// by a process that holds none of its locks fires.
void StateDurable::check_locked_writes(const TraceEvent& e, std::size_t i, Violations& out) {
  // observe() dropped a crash's locks and never hands the crash on.
  REHEARSE_ASSERT(!is_crash_event(e.type));
  // The worker lock names who acts, not who may change the store's files:
  // held for a process's whole life, it would excuse every unlocked update.
  // It does make its directory a locked store (the state directory), so an
  // update that never takes the store's lock fires from the first one, not
  // only once some other operation has taken that lock there.
  if (is_worker_lock_event(e)) {
    lock_dirs_.insert(dir_of(e.str("path")));
    return;
  }
  if (is_worker_lock_path(e.str("path"))) return;
  if (e.type == "disk_lock") {
    lock_holders_[e.str("path")] = e.num("process");
    lock_dirs_.insert(dir_of(e.str("path")));
    return;
  }
  if (e.type == "disk_unlock") {
    lock_holders_.erase(e.str("path"));
    return;
  }
  if (!disk_change(e.type)) return;
  const std::string path = e.type == "disk_rename" ? e.str("to") : e.str("path");
  const std::string dir = dir_of(path);
  if (lock_dirs_.count(dir) == 0 || lock_holders_.count(path) != 0) return;  // the lock file itself
  const std::int64_t process = e.num("process");
  for (const auto& [lock, holder] : lock_holders_) {
    if (dir_of(lock) == dir && holder == process) return;
  }
  out.push_back(
      {kName, i, e.t,
       fmt::format("{} of {} by process {} without the store's lock (held: {})", e.type, path,
                   process, lock_holders_.empty() ? std::string("none") : "by another")});
}

// Acknowledged only once durable (docs/semantics.md §5): a store's update
// ends when it releases its lock, so every file written or appended in a
// locked store directory under that lock must have been fsynced since (a
// rename carries the file's state to its new name) by the time the lock is
// released. From the disk's own records; a crash forgets what was pending.
void StateDurable::check_durable_before_unlock(const TraceEvent& e, std::size_t i,
                                               Violations& out) {
  // observe() forgot the pending changes at a crash and never hands it on.
  REHEARSE_ASSERT(!is_crash_event(e.type));
  if (e.type == "disk_write" || e.type == "disk_append") {
    const std::string path = e.str("path");
    if (lock_dirs_.count(dir_of(path)) != 0) unsynced_[path] = Unsynced{e.type, e.num("process")};
  } else if (e.type == "disk_fsync") {
    unsynced_.erase(e.str("path"));
  } else if (e.type == "disk_remove") {
    unsynced_.erase(e.str("path"));
  } else if (e.type == "disk_rename") {
    // The change moves with its file; `to` loses what it had. Read before
    // erasing: a rename onto itself keeps its entry.
    std::optional<Unsynced> moved;
    if (const auto it = unsynced_.find(e.str("from")); it != unsynced_.end()) moved = it->second;
    unsynced_.erase(e.str("from"));
    unsynced_.erase(e.str("to"));
    if (moved) unsynced_[e.str("to")] = std::move(*moved);
  } else if (e.type == "disk_fail_stop") {
    // A disk fault killed the process: its unsynced changes are its crash's
    // to lose (another process may take the lock before the crash lands).
    std::erase_if(unsynced_, [&](const auto& u) { return u.second.process == e.num("process"); });
  } else if (e.type == "disk_unlock") {
    const std::string dir = dir_of(e.str("path"));
    for (auto it = unsynced_.begin(); it != unsynced_.end();) {
      if (dir_of(it->first) != dir || it->second.process != e.num("process")) {
        ++it;
        continue;
      }
      out.push_back({kName, i, e.t,
                     fmt::format("{} released the store's lock with {} of {} not fsynced: an "
                                 "update is acknowledged only once it is durable",
                                 e.str("path"), it->second.how, it->first)});
      it = unsynced_.erase(it);
    }
  }
}

// A success resets the count (docs/semantics.md §4: `ok`, count 0): a durable
// row the world reads as `ok` with a retry_count above 0 carries a spent
// budget into the next episode.
void StateDurable::check_ok_row_count(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "durable_job_state");
  if (e.str("retry_status") != "ok" || e.num("retry_count") <= 0) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {}: durable row is ok with retry_count {}: a success resets "
                             "the count to 0",
                             e.job, e.num("retry_count"))});
}

// Missing means fresh (docs/semantics.md §5): a store reports damage only when
// there is some. The report is the queue's outbox message `state_corrupt`;
// every way the world damages bytes (a fault's garbage or cut, a torn write)
// leaves its own record, so a report with none of them before it is a store
// that took a missing or valid file for a corrupt one and failed closed.
void StateDurable::check_damage_behind_report(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT(!is_boot_event(e.type) && !is_crash_event(e.type));
  if (e.type == "disk_corrupted" || e.type == "disk_torn_write") world_damaged_ = true;
  if (e.type == "store_corrupt_injected") {
    const auto* applied = field(e, "applied");
    if (applied == nullptr || !applied->is_boolean() || applied->get<bool>()) world_damaged_ = true;
  }
  if (e.type != "outbox_add" || e.str("event") != "state_corrupt" || world_damaged_) return;
  out.push_back({kName, i, e.t,
                 "the store reported itself corrupt (state_corrupt) but the world damaged "
                 "no file of the disk: a missing or valid store is read as fresh, never as "
                 "corrupt"});
}

// Damage the world did to a state file, and the copy of it the world saw kept.
// True when `e` was one of those events.
bool StateDurable::note_state_damage(const TraceEvent& e) {
  // observe() judges a durable row (check_ok_row_count) and returns before.
  REHEARSE_ASSERT_NE(e.type, "durable_job_state");
  if (e.type == "store_corrupt_injected" || e.type == "disk_corrupted") {
    const std::string path = e.str("path", e.str("file"));
    const bool state_file = e.type == "store_corrupt_injected" ||
                            path.find("retry_state.json") != std::string::npos ||
                            path.find("jobs.json") != std::string::npos ||
                            path.find("jobs_state.json") != std::string::npos;
    if (!state_file || path.empty()) return true;
    if (const auto* applied = field(e, "applied");
        applied != nullptr && applied->is_boolean() && !applied->get<bool>()) {
      return true;  // the world could not damage the file: nothing to report
    }
    if (e.flag("records_whole")) {
      // The cut left whole records (the disk_corrupted just before it named
      // the same path): nothing in the file to report or to keep.
      std::erase(corrupt_paths_, path);
      std::erase_if(unreported_, [&](const Damage& d) { return d.path == path; });
      hidden_loss_paths_.push_back(path);
      return true;
    }
    corrupt_paths_.push_back(path);
    unreported_.push_back(Damage{path});
    return true;
  }
  if (e.type == "state_corrupt") {
    unreported_.clear();
    corrupt_paths_.insert(corrupt_paths_.end(), hidden_loss_paths_.begin(),
                          hidden_loss_paths_.end());
    reported_hidden_.insert(reported_hidden_.end(), hidden_loss_paths_.begin(),
                            hidden_loss_paths_.end());
    hidden_loss_paths_.clear();
    return true;
  }
  if (e.type == "journal_tail_kept") {
    // The world saw a durable byte-for-byte copy of a journal with a torn
    // tail: the damage is kept where an operator finds it (its report), so
    // the store may drop the tail and replace that file from now on.
    if (!e.flag("torn")) return true;
    unreported_.clear();
    const std::string file = e.str("path");
    corrupt_paths_.erase(std::remove(corrupt_paths_.begin(), corrupt_paths_.end(), file),
                         corrupt_paths_.end());
    return true;
  }
  return false;
}

// A boot's full load cannot see a cut at a record boundary, even one a
// running store found and reported (the store keeps no record of it across
// processes: docs/state-file.md): from the boot on, that journal is a valid
// one again until the core reports a damage anew.
void StateDurable::forget_reported_hidden_losses() {
  for (const std::string& path : reported_hidden_) {
    std::erase(corrupt_paths_, path);
    hidden_loss_paths_.push_back(path);
  }
  reported_hidden_.clear();
}

// A journal's damaged tail is dropped only as a torn last record, and only
// once a durable copy of the damaged journal is kept (docs/state-file.md,
// rule 6), from the world's record of the tail going (`journal_tail_gone`).
void StateDurable::check_tail_kept(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "journal_tail_gone");
  const auto* kept = field(e, "kept_as");
  if (!e.flag("torn")) {
    out.push_back({kName, i, e.t,
                   fmt::format("the corrupt journal {} (a bad record at offset {} before its "
                               "tail) was replaced: a corrupt store is kept until an operator "
                               "repairs it",
                               e.str("path"), e.num("offset"))});
  } else if (kept == nullptr || !kept->is_array() || kept->empty()) {
    out.push_back({kName, i, e.t,
                   fmt::format("the torn tail of {} ({} bytes at offset {}) was dropped and no "
                               "copy of the damaged journal is kept",
                               e.str("path"), e.num("length"), e.num("offset"))});
  }
}

// A corrupt state file is kept until an operator repairs it. True when `e`
// was a disk write, rename or removal.
bool StateDurable::check_corrupt_file_kept(const TraceEvent& e, std::size_t i, Violations& out) {
  if (!disk_change(e.type)) return false;
  const std::string path = e.type == "disk_rename" ? e.str("to") : e.str("path");
  for (const std::string& bad : corrupt_paths_) {
    if (same_file(path, bad)) {
      out.push_back({kName, i, e.t,
                     fmt::format("the corrupt state file {} was replaced ({}): a corrupt store "
                                 "must be kept until an operator repairs it",
                                 path, e.type)});
    }
  }
  return true;
}

// Counters survive restarts: the n-th retry of a budget announces attempt n,
// by the monitors' own count (retry_count.hpp), compared, never adopted (a
// counter not reset after a success announces a higher attempt, a reset one
// a lower).
void StateDurable::check_retry_counter(const TraceEvent& e, std::size_t i, Violations& out) {
  // observe() asks only for a known job's slot (known_slot).
  const MonitoredJob* job = context_.jobs.find(e.job);
  REHEARSE_ASSERT(job != nullptr && e.slot.has_value());
  const WitnessPolicy& p = job->policy;
  const RetryCount& counts = context_.retry_count;
  if (!counts.fresh(e.job, *e.slot, p.per_slot)) return;  // a replayed intent: the same retry
  // While the store fails closed no retry is scheduled (judged at the queue's
  // add): a notice now is an intent decided before the damage, replayed with
  // the number it had then, which the count rebased on the damaged store
  // cannot confirm.
  if (context_.process.store_refused()) return;
  const int count = counts.scheduled(e.job, *e.slot, p.per_slot);
  const std::int64_t attempt = e.num("attempt");
  if (attempt < count + 1 && p.valid) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry counter went back to {} after {} retries "
                               "of the same budget (lost across a restart?)",
                               e.job, slot_text(e.slot), attempt, count)});
  } else if (attempt > count + 1 && p.valid) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} announced after only {} retries of the "
                               "budget (a counter not reset after a success?)",
                               e.job, slot_text(e.slot), attempt, count)});
  }
}

// A damaged file not reported yet, read by a process that booted after the
// damage: that process relies on the file, so the damage is its to report.
// (A read before any boot since the damage is a running process's look at a
// file it already trusted; what a running store can miss is listed in
// docs/state-file.md, and its next boot reads the file again.)
void StateDurable::note_damage_read(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "disk_read");
  const std::string path = e.str("path");

  for (Damage& d : unreported_) {
    if (d.booted && same_file(path, d.path)) d.read = true;
  }
}

// End: a damaged state file that a process booted after the damage read must
// have been reported (state_corrupt). A file no process read after a boot
// (one the core does not use, such as jobs.json / jobs_state.json in this
// world: docs/state-file.md, "Runtime views") has no reader to report it.
Violations StateDurable::finish(TimeMs until_ms) {
  Violations out = ledger_loss_.finish(context_.events_seen, until_ms);
  const auto read =
      std::find_if(unreported_.begin(), unreported_.end(), [](const Damage& d) { return d.read; });
  if (read == unreported_.end()) return out;
  // note_damage_read marks a read only after a boot since the damage.
  REHEARSE_ASSERT(read->booted);
  out.push_back({kName, context_.events_seen, until_ms,
                 fmt::format("the state store was corrupted ({}) and the process booted after and "
                             "read it, but no state_corrupt was reported",
                             read->path)});
  return out;
}

}  // namespace rehearse::sim
