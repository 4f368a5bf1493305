#include "sim/monitors/process_tracker.hpp"

#include <algorithm>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {

// The state store's own files (docs/state-file.md): the snapshot and its
// journal; not the runtime views, the copies of a damaged journal, nor a
// temporary file.
bool state_store_file(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // The file's own name, without its directory.
  REHEARSE_ASSERT_EQ(name.find('/'), std::string::npos);
  return name == "retry_state.json" || name == "retry_state.journal";
}

}  // namespace

bool is_boot_event(const std::string& type) { return type == "process_boot"; }

bool is_crash_event(const std::string& type) {
  return type == "process_crash" || type == "disk_process_crashed" || type == "disk_crash";
}

bool is_store_damage_event(const std::string& type) {
  return type == "store_corrupt_injected" || type == "disk_corrupted" ||
         type == "journal_tail_gone";
}

bool is_worker_lock_path(const std::string& path) {
  const std::string name = "/worker.lock";
  return path.size() > name.size() &&
         path.compare(path.size() - name.size(), name.size(), name) == 0;
}

bool is_worker_lock_event(const TraceEvent& e) {
  return e.type == "disk_lock" && is_worker_lock_path(e.str("path"));
}

bool is_process_event(const TraceEvent& e) {
  return is_boot_event(e.type) || is_crash_event(e.type) || is_worker_lock_event(e);
}

std::int64_t pid_of(const TraceEvent& e) {
  if (e.type == "process_boot" || e.type == "process_crash") return e.num("pid");
  return e.num("process");
}

bool ProcessTracker::brings_up(const TraceEvent& e) const {
  // observe() asks only about a boot, a crash or a worker-lock grant.
  REHEARSE_ASSERT(is_process_event(e));
  if (is_boot_event(e.type)) return !acting_.has_value();
  return is_worker_lock_event(e) && acting_ != pid_of(e);
}

// A crash of the acting process; or another process granted the worker lock
// while it seemed to act: the lock is released only by its holder's death
// (a disk fault killed it; the world's crash of it comes later).
bool ProcessTracker::takes_down(const TraceEvent& e) const {
  if (!acting_) return false;
  if (is_worker_lock_event(e)) return pid_of(e) != *acting_;
  if (!is_crash_event(e.type)) return false;
  return e.type == "disk_crash" || pid_of(e) == *acting_;
}

void ProcessTracker::observe(const TraceEvent& e, std::size_t index) {
  // The notification, or its raw commit (the notification facts read each
  // distinct notice once, and a reboot at the same instant commits the same
  // one again).
  if (e.type == "state_corrupt" || (e.type == "outbox_add" && e.str("event") == "state_corrupt")) {
    store_refused_ = true;
    return;
  }
  if (is_store_damage_event(e.type)) {
    observe_damage(e);
    return;
  }
  if (!is_process_event(e)) return;
  const bool up = brings_up(e);
  const bool down = takes_down(e);
  const std::int64_t boots_before = boots_;
  if (is_boot_event(e.type)) up_pids_.insert(pid_of(e));
  if (is_worker_lock_event(e)) lock_seen_ = true;
  if (e.type == "disk_crash") up_pids_.clear();
  if (is_crash_event(e.type)) up_pids_.erase(pid_of(e));
  if (down) {
    acting_.reset();
    go_down(e.t, index);
    // Nothing makes a survivor wait without a worker lock: it acts at once.
    if (!up && !lock_seen_ && !up_pids_.empty()) {
      acting_ = *up_pids_.begin();
      come_up(e.t, index);
    }
  }
  if (up) {
    acting_ = pid_of(e);
    come_up(e.t, index);
  }
  // Some process acts exactly while the tracker says the worker is up.
  REHEARSE_ASSERT_EQ(acting_.has_value(), up_);
  // An event that brings the worker up leaves it up; boots only grow, by
  // at most one per event (a survivor takes over only when the event itself
  // brings no process up).
  if (up) REHEARSE_ASSERT(up_);
  REHEARSE_ASSERT_GE(boots_, boots_before);
  REHEARSE_ASSERT_LE(boots_ - boots_before, 1);
}

void ProcessTracker::come_up(TimeMs t, std::size_t index) {
  // Only down -> up: a new acting process takes over after the old one went.
  REHEARSE_ASSERT(!up_);
  store_refused_ = false;
  up_at_ = index;
  ++boots_;
  if (store_damaged()) {
    blind_windows_.emplace_back(down_t_.value_or(t - 1), t);
    last_blind_boot_ = boots_;
  }
  REHEARSE_ASSERT_GE(boots_, 1);
  REHEARSE_ASSERT_LE(last_blind_boot_, boots_);
  up_ = true;
  boot_t_ = t;
}

// A process that dies at the very instant it booted never ran its
// scheduler's first pass: the firings owed since the crash before stay owed,
// so the down time is that crash's (a blind boot after it excuses them).
void ProcessTracker::go_down(TimeMs t, std::size_t index) {
  // Only up -> down: takes_down needs an acting process.
  REHEARSE_ASSERT(up_);
  store_refused_ = false;
  down_at_ = index;
  if (up_ && (!boot_t_ || t > *boot_t_)) down_t_ = t;
  up_ = false;
}

// Damage the world applied to a state store file, and the world seeing a
// damaged journal's tail go (the file whole again).
void ProcessTracker::observe_damage(const TraceEvent& e) {
  // observe() hands over the world's damage records only.
  REHEARSE_ASSERT(is_store_damage_event(e.type));
  const std::string path = e.str("path");
  if (e.type == "journal_tail_gone") {
    damaged_paths_.erase(path);
    return;
  }
  if (!state_store_file(path)) return;
  if (const nlohmann::json* applied = field(e, "applied");
      applied != nullptr && applied->is_boolean() && !applied->get<bool>()) {
    return;  // the world could not damage the file
  }
  damaged_paths_.insert(path);
}

bool ProcessTracker::in_blind_window(TimeMs t) const {
  // One window per blind boot, each a boot counted by come_up.
  REHEARSE_ASSERT_LE(blind_windows_.size(), boots_);

  for (const auto& [down, booted] : blind_windows_) {
    if (down <= t && t <= booted) return true;
  }
  return false;
}

bool ProcessTracker::in_blind_window(TimeMs wall, const WallClockTable& clock) const {
  if (!clock.stepped()) return in_blind_window(wall);
  for (const auto& [down, booted] : blind_windows_) {
    // A step back while down can leave the boot reading less than the crash.
    const TimeMs a = clock.wall(down);
    const TimeMs b = clock.wall(booted);
    if (std::min(a, b) <= wall && wall <= std::max(a, b)) return true;
  }
  return false;
}

}  // namespace rehearse::sim
