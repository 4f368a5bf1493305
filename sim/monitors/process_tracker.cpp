#include "sim/monitors/process_tracker.hpp"

#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {

// The state store's own files (docs/state-file.md): the snapshot and its
// journal; not the runtime views, the copies of a damaged journal, nor a
// temporary file.
bool state_store_file(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
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

void ProcessTracker::observe(const TraceEvent& e) {
  if (e.type == "state_corrupt") {
    store_refused_ = true;
    return;
  }
  if (is_store_damage_event(e.type)) {
    observe_damage(e);
    return;
  }
  const bool boot = is_boot_event(e.type);
  if (!boot && !is_crash_event(e.type)) return;
  store_refused_ = false;
  if (boot) {
    ++boots_;
    boot_blind_ = store_damaged();
    if (boot_blind_) blind_windows_.emplace_back(down_t_.value_or(e.t - 1), e.t);
    up_ = true;
    boot_t_ = e.t;
  } else {
    // A process that dies at the very instant it booted never ran its
    // scheduler's first pass: the firings owed since the crash before
    // stay owed, so the down time is that crash's (a blind boot after it
    // excuses them; found by `rehearse check`, serial-queue-delay 492).
    if (up_ && (!boot_t_ || e.t > *boot_t_)) down_t_ = e.t;
    up_ = false;
  }
}

// Damage the world applied to a state store file, and the world seeing a
// damaged journal's tail go (the file whole again).
void ProcessTracker::observe_damage(const TraceEvent& e) {
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
  for (const auto& [down, booted] : blind_windows_) {
    if (down <= t && t <= booted) return true;
  }
  return false;
}

}  // namespace rehearse::sim
