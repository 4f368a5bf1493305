// The liveness phase of `rehearse check` (docs/check.md "Liveness"): after
// the last fault has ended, the world must settle within a stated bound.
//
// A check-level judgement, not a monitor: a bundled scenario may end in the
// middle of an outage on purpose, so "settled" is only asked of a world whose
// span leaves the bound after its last fault (a derived case does: the swarm
// extends `until`). It is judged from what the world holds at the end, never
// from the core's logs: the durable state read back from the simulated disk
// (ScenarioRunResult::final_states, final_items) and the scenario's own facts.
//
//   - no job is still `retrying` with a retry pending (next_action `retry`) a
//     bound after the last fault: its chain never ended (a job `retrying`
//     that waits for its next slot, next_action `wait_next_run`, is the
//     schedule's business);
//   - every reconcile item is terminal (DONE, DESIGN_FAILED) or progressing
//     (its last cycle left no reconcile error), unless the world itself still
//     stands against it: its issue was deleted, an agent removed and never
//     restored, or the same world without any fault has it stuck too (its
//     configuration, e.g. an agent id not set; the reference run is made
//     only when an item is stuck);
//   - a store that cannot be read back failed closed, which is visible
//     (state_corrupt): its jobs are not judged; nor are they when the
//     journal ends in a torn tail no process has seen yet (a fault cut or
//     flipped its last record after the last boot's read: the read-back
//     drops it, as the next boot will, so it may lack an acknowledged update),
//     or when the worker's store is failing closed at the end (a
//     state_corrupt sent since the last boot, after the world damaged the
//     store: ScenarioRunResult::store_failing_closed).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "model/time.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

inline constexpr const char* kLivenessInvariant = "liveness";
// The settle bound never exceeds this.
inline constexpr DurationMs kMaxSettleMs = 2 * kDayMs;
// The schedule period in the bound is at most this: "settled" asks only that
// no job is still retrying, which the retry chains bound; the period only
// lets a slot due right after a chain run, and a daily or weekly period would
// make every case simulate a day or a week of the frequent jobs.
inline constexpr DurationMs kSettlePeriodCapMs = kHourMs;

// When the last fault's effect ends: a lasting fault's end, a restart's or a
// torn write's return (at + down_for), an instant fault's instant; `start`
// without faults.
TimeMs last_fault_end_ms(const Scenario& scenario);

// How long the world may take to settle after its last fault: over the jobs
// (a serial queue runs them one after the other), each job's longest full
// retry chain (every retry's largest delay, by the monitors' own reading of
// the policy in any form, plus a run allowance per attempt), plus the longest
// schedule period (the gap between the first two firings after `after`, the
// last fault's end) up to kSettlePeriodCapMs; capped at kMaxSettleMs. A job
// whose chain alone exceeds kMaxSettleMs, or whose policy the monitors do not
// read, is left out of the bound and its retries are not judged here.
DurationMs settle_bound_ms(const Scenario& scenario, TimeMs after);

// The same scenario run without its faults (with the same seed), made on
// demand; null when it could not be run.
using ReferenceRun = std::function<const ScenarioRunResult*()>;

// The liveness verdict of a completed run; nullopt when it held or is not
// judged (the span leaves less than the bound after the last fault, or the
// run did not complete).
std::optional<Violation> judge_liveness(const Scenario& scenario, const ScenarioRunResult& run,
                                        const ReferenceRun& reference = {});

}  // namespace rehearse::sim
