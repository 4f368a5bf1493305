// Shared tracker: the worker process's life as the world records it. Up from
// the world runner's `process_boot` to a crash (`process_crash`,
// `disk_process_crashed`, `disk_crash`: a world that records only some of
// them still ends the process); boots counted; and whether the state store
// refused writes since the last boot (its `state_corrupt` notification was
// committed to the outbox: the core then cannot know its counters nor its
// schedule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/time.hpp"
#include "sim/trace.hpp"

namespace rehearse::sim {

bool is_boot_event(const std::string& type);
bool is_crash_event(const std::string& type);

class ProcessTracker {
 public:
  // Reads boots and crashes (raw events) and the `state_corrupt` notification.
  void observe(const TraceEvent& event);

  bool up() const noexcept { return up_; }
  std::int64_t boots() const noexcept { return boots_; }
  std::optional<TimeMs> boot_t() const noexcept { return boot_t_; }
  // A state_corrupt notification since the last boot or crash.
  bool store_refused() const noexcept { return store_refused_; }

 private:
  bool up_ = false;
  std::int64_t boots_ = 0;
  std::optional<TimeMs> boot_t_;
  bool store_refused_ = false;
};

}  // namespace rehearse::sim
