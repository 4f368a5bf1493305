// The world's crashes: which processes a crash cuts and when they come back,
// and the crash plan (RunOptions::crash_plan) with its run marks.
#include "sim/world/world_detail.hpp"

namespace rehearse::sim::world_detail {

// Worker `worker` (1-based) crashes alone, the page cache surviving; worker
// 0 is the machine: every worker process goes down with its unsynced writes.
// A planned crash (a crash sweeps') is a power loss of the machine or a
// crash of worker 1 alone. Each process crashed boots again down_for_ms later.
void World::crash_worker(const std::string& cause, DurationMs down_for_ms, int worker,
                         std::optional<CrashEffect> planned) {
  if (finished_) return;
  const std::vector<ProcessId> targets = crash_targets(worker, planned);
  if (targets.empty()) return;  // already down: nothing to cut
  const CrashEffect effect =
      planned.value_or(worker > 0 ? CrashEffect::process_only : CrashEffect::power_loss);
  bool first = true;
  for (ProcessId p : targets) {
    crash_cause_ = cause;
    // The machine's power loss happens once; the other processes die with it.
    crash_effect_ = first ? effect : CrashEffect::process_only;
    crash_planned_ = planned.has_value();
    first = false;
    sim_.crash(p);
    REHEARSE_ASSERT(!sim_.is_up(p));
    schedule_reboot(p, down_for_ms);
  }
  if (planned) {
    ++crash_points_fired_;
    // A point fires only once it was taken from the plan.
    REHEARSE_ASSERT_LE(crash_points_fired_, next_point_);
    arm_next_crash_point();
  }
}

int World::worker_number(ProcessId process) const {
  for (std::size_t w = 0; w < processes_.size(); ++w) {
    if (processes_[w] == process) return static_cast<int>(w + 1);
  }
  // process_ is worker 1, found above.
  REHEARSE_ASSERT(processes_.empty() || process != process_);
  return 0;
}

std::optional<int> World::acting_worker() const {
  if (processes_.size() == 1) {
    if (sim_.is_up(process_)) return 1;
    return std::nullopt;
  }
  const auto holder = disk_.lock_holder(worker_lock_path(kWorldStateDir));
  if (!holder || !sim_.is_up(static_cast<ProcessId>(*holder))) return std::nullopt;
  const int worker = worker_number(static_cast<ProcessId>(*holder));
  // Only a worker process takes the worker lock, and an up holder is one.
  REHEARSE_ASSERT_GE(worker, 1);
  REHEARSE_ASSERT_LE(worker, processes_.size());
  return worker;
}

// A planned crash names its worker: a process-only one cuts that process, a
// power loss the machine.
std::vector<ProcessId> World::crash_targets(int worker, std::optional<CrashEffect> planned) const {
  std::vector<ProcessId> targets;
  if ((planned && *planned == CrashEffect::process_only) || (!planned && worker > 0)) {
    const ProcessId one =
        worker > 0 ? processes_.at(static_cast<std::size_t>(worker - 1)) : process_;
    if (sim_.is_up(one)) targets.push_back(one);
    return targets;
  }
  for (ProcessId p : processes_) {
    if (sim_.is_up(p)) targets.push_back(p);
  }
  REHEARSE_ASSERT_LE(targets.size(), processes_.size());
  return targets;
}

void World::schedule_reboot(ProcessId process, DurationMs down_for_ms) {
  const TimeMs at = sim_.now() + std::max<DurationMs>(0, down_for_ms);
  REHEARSE_ASSERT_GE(at, sim_.now());
  sim_.schedule_call_for(
      kWorld, at,
      [this, process] {
        REHEARSE_ASSERT_NE(process, kWorld);  // only worker processes crash and boot
        if (!finished_ && !sim_.is_up(process)) sim_.boot(process);
      },
      "boot");
}

// The next point of RunOptions::crash_plan: an event point fires from
// after_event (or at once when its count is already reached), a disk point
// is a fail-stop of the worker's disk operations (planned_disk_death).
void World::arm_next_crash_point() {
  if (!options_.crash_plan || next_point_ >= options_.crash_plan->points.size()) return;
  const WorkerCrashPoint& point = options_.crash_plan->points[next_point_];
  if (point.at == CrashAt::event) {
    if (events_seen_ > point.index) {
      miss_crash_point(fmt::format("event point {} is behind the run ({} events executed)",
                                   point.index, events_seen_));
    } else if (events_seen_ == point.index) {
      after_event();  // the count is reached now: the worker is down, so it is missed
    }
    return;
  }
  const std::uint64_t done = disk_.operations();
  if (done > point.index) {
    miss_crash_point(fmt::format("disk point {} is behind the run ({} operations performed)",
                                 point.index, done));
    return;
  }
  // One worker: its own operations; several: whichever process does the
  // point's operation dies (planned_disk_death).
  std::optional<DiskOwner> owner;
  if (processes_.size() == 1) owner = static_cast<DiskOwner>(process_);
  REHEARSE_ASSERT_GE(point.index, done);
  disk_.fail_stop_after(point.index - done, owner);
  fail_stops_seen_ = disk_.counters().fail_stops;
  disk_point_armed_ = true;
}

// After every executed event (and once before the first): the run's mark,
// then an event crash point whose count is reached.
void World::after_event() {
  if (options_.record_marks && run_marks_.size() == events_seen_) {
    run_marks_.push_back(current_mark());
  }
  // One mark per event seen, and one before the first: never ahead.
  if (options_.record_marks) REHEARSE_ASSERT_LE(run_marks_.size(), events_seen_ + 1);
  if (!options_.crash_plan || next_point_ >= options_.crash_plan->points.size()) return;
  const WorkerCrashPoint point = options_.crash_plan->points[next_point_];
  if (point.at != CrashAt::event || point.index != events_seen_) return;
  const std::optional<int> acting = acting_worker();
  if (!acting) {
    miss_crash_point(fmt::format("the worker is down after {} events", events_seen_));
    return;
  }
  ++next_point_;
  crash_worker("crash_sweep", options_.crash_plan->reboot_after_ms, *acting, point.effect);
}

// The disk's death of the worker is the armed disk point's fail-stop: crash
// it from a world event at this instant with the point's effect.
bool World::planned_disk_death(DiskOwner owner) {
  if (!disk_point_armed_ || disk_.counters().fail_stops <= fail_stops_seen_) return false;
  const int worker = worker_number(static_cast<ProcessId>(owner));
  disk_point_armed_ = false;
  // Armed only from the plan's next point, which nothing has taken since.
  REHEARSE_ASSERT(options_.crash_plan.has_value());
  REHEARSE_ASSERT_LT(next_point_, options_.crash_plan->points.size());
  REHEARSE_ASSERT(options_.crash_plan->points[next_point_].at != CrashAt::event);
  const WorkerCrashPoint point = options_.crash_plan->points[next_point_++];
  death_events_ = sim_.events_executed();
  const DurationMs down = options_.crash_plan->reboot_after_ms;
  sim_.schedule_call_for(
      kWorld, sim_.now(),
      [this, down, worker, effect = point.effect] {
        crash_worker("crash_sweep", down, worker, effect);
      },
      "crash");
  return true;
}

void World::miss_crash_point(std::string why) {
  REHEARSE_ASSERT(options_.crash_plan.has_value());
  if (crash_point_missed_.empty()) crash_point_missed_ = std::move(why);
  next_point_ = options_.crash_plan->points.size();  // the plan ends here
}

RunMark World::current_mark() const {
  return RunMark{trace_.size(), trace_.hash(), disk_.operations(), acting_worker().has_value()};
}

void World::record_worker_mark(WorkerMarkKind kind, bool planned) {
  if (!options_.record_marks) return;
  // The disk's operation count only grows.
  REHEARSE_ASSERT(worker_marks_.empty() ||
                  worker_marks_.back().disk_operations <= disk_.operations());
  std::uint64_t events = sim_.events_executed();
  if (kind == WorkerMarkKind::crash && planned && death_events_) {
    events = *death_events_;  // a disk point: the event it fell in, not the crash's
    REHEARSE_ASSERT_LE(events, sim_.events_executed());
    death_events_.reset();
  }
  worker_marks_.push_back(WorkerMark{kind, events, disk_.operations(), planned});
}

}  // namespace rehearse::sim::world_detail
