// Shared tracker: the acting worker's life as the world records it. A world
// may start several worker processes on one state directory (one acts, the
// others stand by: docs/worker.md); "the worker" here is the acting one.
// It comes up at a `process_boot` while no process acts, or when the disk
// grants a standby the state directory's worker lock (`disk_lock` of a
// `worker.lock`: a takeover is a boot of the state's new owner); it goes
// down when that process crashes (`process_crash`, `disk_process_crashed`,
// `disk_crash`: a world that records only some of them still ends it). A
// standby's boot or crash changes nothing. In a world where no worker lock
// was ever granted, a process still up when the acting one dies acts at
// once (nothing made it wait). Boots of the acting worker are counted; and
// whether the state store refused writes since the last boot (its
// `state_corrupt` notification was committed to the outbox: the core then
// cannot know its counters nor its schedule).
//
// Also the damage the world did to the state store's own files (the
// snapshot `retry_state.json` and its journal), from the world's records
// only (`store_corrupt_injected` applied, `disk_corrupted`): the store is
// visibly damaged from such an event until the world saw the damaged journal
// go (`journal_tail_gone`: a torn tail dropped, the file whole again). A boot
// while it is damaged is *blind*: what the store held (the last slot handed
// out, the counters, a failure shown) is unreadable or lost with the damaged
// records, so firings that fell while the process was down before it cannot
// be known (docs/monitors.md, "Damage the store cannot see past").
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/wall_clock.hpp"

namespace rehearse::sim {

bool is_boot_event(const std::string& type);
bool is_crash_event(const std::string& type);
// A state directory's worker lock file; a `disk_lock` of one.
bool is_worker_lock_path(const std::string& path);
bool is_worker_lock_event(const TraceEvent& event);
// The process an event names: the world's `pid`, the disk's and the queue's
// `process` (the same number); 0 in a hand-made trace without either.
std::int64_t pid_of(const TraceEvent& event);
// An event the tracker reads for the processes' lives.
bool is_process_event(const TraceEvent& event);
// store_corrupt_injected, disk_corrupted, journal_tail_gone.
bool is_store_damage_event(const std::string& type);

class ProcessTracker {
 public:
  // Reads boots, crashes and worker-lock grants (raw events, `index` the
  // event's), the world's damage to the state store and the `state_corrupt`
  // notification.
  void observe(const TraceEvent& event, std::size_t index);

  // Whether `event` would bring the acting worker up / take it down, judged
  // before observe() reads it.
  bool brings_up(const TraceEvent& event) const;
  bool takes_down(const TraceEvent& event) const;
  // The event at `index` (observed) brought the acting worker up / took it
  // down: what a monitor treats as the worker's boot / crash.
  bool came_up_at(std::size_t index) const noexcept { return up_at_ == index; }
  bool went_down_at(std::size_t index) const noexcept { return down_at_ == index; }

  bool up() const noexcept { return up_; }
  std::int64_t boots() const noexcept { return boots_; }
  std::optional<TimeMs> boot_t() const noexcept { return boot_t_; }
  // A state_corrupt notification since the last boot or crash.
  bool store_refused() const noexcept { return store_refused_; }

  // The world damaged the state store's files and the damage is still there.
  bool store_damaged() const noexcept { return !damaged_paths_.empty(); }
  // The last boot found the state store damaged (the world's records).
  bool boot_blind() const noexcept { return last_blind_boot_ != 0 && last_blind_boot_ == boots_; }
  // The number of the last blind boot (boots() then); 0 when none was.
  std::int64_t last_blind_boot() const noexcept { return last_blind_boot_; }
  // `t` fell while the process was down before a blind boot (from the crash
  // before it to the boot, both inclusive: a firing at the crash's instant
  // that the trace shows no hand-out of before the crash fell while down).
  bool in_blind_window(TimeMs t) const;
  // The same for `wall`, a reading of the machine's clock (a schedule's
  // slot): each window as the clock read it at its two ends.
  bool in_blind_window(TimeMs wall, const WallClockTable& clock) const;

 private:
  void observe_damage(const TraceEvent& event);
  void come_up(TimeMs t, std::size_t index);
  void go_down(TimeMs t, std::size_t index);

  std::set<std::int64_t> up_pids_;      // every worker process up
  std::optional<std::int64_t> acting_;  // the one acting, while it is up
  bool lock_seen_ = false;              // a worker lock was granted in this world
  std::size_t up_at_ = static_cast<std::size_t>(-1);
  std::size_t down_at_ = static_cast<std::size_t>(-1);
  bool up_ = false;
  std::int64_t boots_ = 0;
  std::optional<TimeMs> boot_t_;
  std::optional<TimeMs> down_t_;  // the last crash (not one at its boot's instant)
  bool store_refused_ = false;
  std::set<std::string> damaged_paths_;
  std::int64_t last_blind_boot_ = 0;
  std::vector<std::pair<TimeMs, TimeMs>> blind_windows_;  // [down at, booted at]
};

}  // namespace rehearse::sim
