#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

bool is_boot_event(const std::string& type) { return type == "process_boot"; }

bool is_crash_event(const std::string& type) {
  return type == "process_crash" || type == "disk_process_crashed" || type == "disk_crash";
}

void ProcessTracker::observe(const TraceEvent& e) {
  if (e.type == "state_corrupt") {
    store_refused_ = true;
    return;
  }
  const bool boot = is_boot_event(e.type);
  if (!boot && !is_crash_event(e.type)) return;
  store_refused_ = false;
  if (boot) {
    ++boots_;
    up_ = true;
    boot_t_ = e.t;
  } else {
    up_ = false;
  }
}

}  // namespace rehearse::sim
