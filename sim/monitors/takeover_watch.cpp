#include "sim/monitors/takeover_watch.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

TakeoverWatch::TakeoverWatch(const char* invariant, DurationMs poll_ms, const WallClockTable& clock)
    : invariant_(invariant), poll_ms_(poll_ms), clock_(clock) {}

void TakeoverWatch::observe(const TraceEvent& e, std::size_t i, Violations& out) {
  check_deadline(e.t, i, out);
  const std::int64_t pid = pid_of(e);
  if (e.type == "process_boot") {
    up_.insert(pid);
  } else if (e.type == "disk_crash") {  // the machine's power loss: every process
    up_.clear();
    holder_.reset();
    vacancy_.reset();
  } else if (is_crash_event(e.type)) {
    up_.erase(pid);
    if (vacancy_) vacancy_->standbys.erase(pid);
    if (holder_ == pid) release(e.t, pid);
  } else if (e.type == "disk_lock" && is_worker_lock_path(e.str("path"))) {
    holder_ = pid;
    vacancy_.reset();
  } else if (e.type == "disk_unlock" && is_worker_lock_path(e.str("path")) && holder_ == pid) {
    release(e.t, pid);
  }
  // The lock is free while a vacancy is watched: a grant ends the vacancy.
  REHEARSE_ASSERT(!(vacancy_ && holder_));
}

void TakeoverWatch::release(TimeMs t, std::int64_t holder) {
  // Released by the process observe() saw hold the lock.
  REHEARSE_ASSERT(holder_ == holder);
  holder_.reset();

  Vacancy v{t, up_};
  v.standbys.erase(holder);
  if (!v.standbys.empty()) vacancy_ = std::move(v);
}

// A standby up since the release, the lock still free a poll interval later:
// the takeover is late (one poll: the standby asks again at most that late).
void TakeoverWatch::check_deadline(TimeMs t, std::size_t i, Violations& out) {
  // One poll on the machine's clock, which a clock step may shorten or
  // stretch: a standby asleep across a step back sleeps until the clock reads
  // again what it read before the step.
  if (!vacancy_ ||
      t <= clock_.reached(clock_.high_water(vacancy_->since) + poll_ms_, vacancy_->since)) {
    return;
  }
  if (!vacancy_->standbys.empty()) {
    out.push_back({invariant_, i, t,
                   fmt::format("the worker lock was free from {} and still no process held it "
                               "{} ms later, while standby process {} was up: a standby asks "
                               "for it every {} ms (queue.standby_poll)",
                               format_instant(vacancy_->since), t - vacancy_->since,
                               *vacancy_->standbys.begin(), poll_ms_)});
  }
  vacancy_.reset();
}

void TakeoverWatch::finish(TimeMs until, std::size_t index, Violations& out) {
  check_deadline(until, index, out);
}

}  // namespace rehearse::sim
