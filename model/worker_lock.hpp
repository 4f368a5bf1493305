// The worker lock: one acting worker per state directory (docs/worker.md,
// "Several processes on one state directory").
//
// Several worker processes may be started on one state directory and one
// queue (a second process on the same host as a hot standby, a supervisor
// that starts the new process before the old one is gone). Exactly one acts:
// the scheduler keeps its view of every job's state in its own memory and
// writes it back whole (model/scheduler.hpp), and a boot recovers every
// ACTIVE queue entry as its own predecessor's stalled run, so two acting
// processes would overwrite each other's states and re-run each other's
// runs. Before it opens anything, a process takes the exclusive lock
// `worker.lock` in the state directory and holds it for its whole life (the
// handle lives in the process's memory; the operating system releases it
// when the process dies, like flock(2)). A process that finds the lock held
// stands by: it asks again every `poll_ms` until the holder is gone, then
// boots as after a crash of the holder (intents replayed, the holder's
// leased runs recovered as stalled, misfired slots coalesced).
//
// A disk whose lock blocks (model/posix_disk.hpp) makes the standby wait in
// lock_exclusive itself; one that cannot block (the simulated disk) answers
// `busy` and the standby polls on the Clock.
#pragma once

#include <string>

#include "model/disk.hpp"
#include "model/ports.hpp"
#include "model/result.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

inline constexpr const char* kWorkerLockName = "worker.lock";
// How often a standby asks for the lock again (BullMQ checks stalled jobs
// every 30 s by default).
inline constexpr DurationMs kWorkerLockPollMs = 30 * kSecondMs;

// The lock file of a state directory.
std::string worker_lock_path(const std::string& state_dir);

// Takes the state directory's worker lock, standing by while another process
// holds it (`worker_standby` logged once, `worker_lock_taken` when granted,
// with how long it waited). Any error but `busy` is returned: the process
// cannot know whether it is alone and must not act.
Task<Result<DiskLockHandle>> take_worker_lock(Disk& disk, Clock& clock, Log& log,
                                              std::string state_dir,
                                              DurationMs poll_ms = kWorkerLockPollMs);

}  // namespace rehearse
