// Crash sweeps over a whole scenario run (`rehearse check --crash-sweep`,
// docs/crash-sweep.md): the world run_scenario builds, every monitor on,
// with the worker crashed at every point of the run, one full run per point.
//
// Points. A baseline run without a planned crash gives E simulator events and
// D disk operations of the worker. Single points:
//   - event k, k = 0..E: the worker process crashes once k events have
//     executed (the page cache survives: a process crash); a k at which the
//     worker is down in the baseline is counted as `down` and not run;
//   - disk operation j, j = 0..D-1, twice: operation j does not happen and the
//     worker dies there, with a power loss (every unsynced byte, entry, rename
//     and removal lost, docs/sim-disk.md) and with a process crash.
// After each crash the worker boots again `reboot_after_ms` later.
// Pairs: for every single point that fired and was followed by a boot, the
// recovery is the stretch from that boot to the end of the first run the
// queue finished after it (its `queue_done`), at most `recovery_events_max`
// events, and ending early at the next crash or the end of the run. A second
// crash, with the first point's effect, falls after every event of the
// recovery and at every disk operation of it.
//
// Judging. Every run's invariants are the monitors' violations of that run
// (those the scenario lists in expect.violations excepted, as `run` does)
// and its errors; expectation counts are not checked (a crash changes them).
// A second delivery inside the at-least-once window is no violation (the
// monitor allows it and counts it: `duplicate_deliveries_in_window`, summed
// here). A planned crash that did not fire, or a run whose state before the
// crash differs from the baseline's (trace length, trace hash and disk
// operations after the same number of events; for a pair, from its single
// run), is a failure too: the prefix diverged.
//
// Determinism: each run is deterministic and independent of the others;
// `threads` only spreads whole runs over threads, and the report is the same
// for every thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// One point: a first crash and, for a pair, a second one.
struct ScenarioCrashPoint {
  WorkerCrashPoint first;
  std::optional<WorkerCrashPoint> second;

  bool operator==(const ScenarioCrashPoint&) const = default;
};

// "event:12:process_crash", "disk:7:power_loss", a pair joined by '+'. The
// text --crash-at reads back (parse_crash_point).
std::string to_string(const ScenarioCrashPoint& point);
// An error says what was expected (kind event|disk, an index, an effect
// power_loss|process_crash; at most two points).
Result<ScenarioCrashPoint> parse_crash_point(const std::string& text);

struct ScenarioCrashOptions {
  bool pairs = true;
  // At most this many points (runs) per scenario, singles first, then pairs
  // in the order of their first point; a sweep cut short says so.
  std::uint64_t points_max = 200'000;
  std::uint64_t recovery_events_max = 100;
  DurationMs reboot_after_ms = kWorldSupervisorRestartMs;
  std::optional<std::uint64_t> seed;  // overrides the scenario's
  unsigned threads = 1;               // runs in parallel (whole runs only)
  std::size_t failures_kept = 50;     // failures listed; the rest are counted
  // What the worker is built from (runner_factory, worker_ports,
  // store_decorator: a test's faulty variant); the rest of RunOptions is the
  // sweep's own.
  RunOptions base;
};

struct ScenarioCrashFailure {
  ScenarioCrashPoint point;
  std::string what;  // an invariant's name, "diverged" or "error"
  std::string message;
};

// Points per kind: how many there are, how many were run.
struct ScenarioCrashCount {
  std::uint64_t planned = 0;
  std::uint64_t run = 0;
};

struct ScenarioCrashReport {
  std::string scenario;
  std::string path;
  std::uint64_t seed = 0;
  std::uint64_t baseline_events = 0;
  std::uint64_t baseline_disk_operations = 0;
  ScenarioCrashCount events;      // event points where the worker is up (0..E minus `down`)
  std::uint64_t events_down = 0;  // event points where the baseline's worker is down
  ScenarioCrashCount disk_power_loss;
  ScenarioCrashCount disk_process_crash;
  ScenarioCrashCount pairs;
  std::uint64_t recovery_events_max = 0;
  std::uint64_t recoveries_bounded = 0;  // recoveries cut by recovery_events_max
  // The sweep was cut by points_max (`cut` says where); never silently.
  std::string cut;
  // The at-least-once window: duplicates the monitor allowed, over all runs,
  // and the points that had any.
  std::uint64_t duplicates_in_window = 0;
  std::uint64_t points_with_window_duplicates = 0;
  std::uint64_t failing_points = 0;
  std::vector<ScenarioCrashFailure> failures;  // the first failures_kept, in point order
  // The run without a crash failed: nothing was swept (failures say why).
  bool baseline_failed = false;

  std::uint64_t points_run() const noexcept {
    return events.run + disk_power_loss.run + disk_process_crash.run + pairs.run;
  }
  // No failing point (a cut sweep may still hold: `cut` says what it left out).
  bool held() const noexcept { return failing_points == 0; }
};

using ScenarioCrashProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// Sweeps one scenario. An error (exit 2 for a CLI): a kind this build cannot
// run. Everything that happens inside the runs is in the report.
Result<ScenarioCrashReport> sweep_scenario_crashes(const Scenario& scenario,
                                                   const ScenarioCrashOptions& options,
                                                   const ScenarioCrashProgress& progress = {});

// One point alone (the replay of a failure): its failures, judged exactly as
// in the sweep, the prefix check against a baseline included.
Result<std::vector<ScenarioCrashFailure>> replay_scenario_crash_point(
    const Scenario& scenario, const ScenarioCrashPoint& point, const ScenarioCrashOptions& options);

}  // namespace rehearse::sim
