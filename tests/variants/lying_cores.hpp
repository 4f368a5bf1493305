// Test-only lying variants of core components: each logs what the rule wants
// and does something else, so only a witness that reads the world's own facts
// (not the core's log) catches it. Like seed_bugs.hpp, linked into test
// binaries only and plugged in through RunOptions::runner_factory
// (sim/world/world.hpp); model/ has no switch for them.
#pragma once

#include <memory>
#include <string>

#include "model/environment.hpp"
#include "model/job_queue.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"
#include "model/reconcile.hpp"

namespace rehearse {
class Disk;
}  // namespace rehearse

namespace rehearse::variants {

// A reconcile job whose pipeline store "takes" its lock without taking it:
// the core's ReconcileJob over a Disk decorator whose lock_exclusive hands
// back a handle that holds nothing. The core's log is unchanged (it believes
// it holds the lock); the disk records writes without a disk_lock, which
// state_durable catches.
std::unique_ptr<JobRunner> make_lockless_reconcile_job(Clock& clock, Services& services, Log& log,
                                                       Disk& disk, Environment env,
                                                       ReconcileConfig config);

// A reconcile job whose pipeline store, from its third write on, writes the
// bytes of its first write again (a stale snapshot: stages go back) while the
// core goes on logging the stage moves it believes it made. stage_monotonic
// reads the durable file as the world decodes it, so it catches this; a
// witness reading the core's stage_changed would not.
std::unique_ptr<JobRunner> make_stale_pipeline_reconcile_job(Clock& clock, Services& services,
                                                             Log& log, Disk& disk, Environment env,
                                                             ReconcileConfig config);

// A group job that counts a skip as a failure: the core's runner, whose
// skipped outcome (nothing failed, nothing to deliver) is reported to the
// scheduler as a failure (class unknown), so the slot is retried. The core's
// own log still says the group judged the run skipped. nothing_lost catches
// it from the model-api replies and what the world saw next (a retry queued).
std::unique_ptr<JobRunner> make_skip_as_failure_group_job(std::unique_ptr<JobRunner> core);

// The worker's queue port with a lie about time: the scheduler logs the
// instants the rule wants (retry_scheduled's next_retry_at, slot_due), the
// queue receives others. Plugged in through RunOptions::worker_ports
// (sim/world/world.hpp); the world's own queue records what it really received.
//  - shorter_retries: every retry is queued `shift_ms` earlier than the
//    scheduler chose (the log keeps the policy's delay): retries_bounded;
//  - late_slots: every regular slot is queued due `shift_ms` after its
//    firing (the log keeps the firing as the slot and next_run_at):
//    schedule_kept;
//  - unlogged_retry: when a run ends its budget (the finish carries a
//    retry_exhausted notification and no retry), one more retry is queued,
//    due `shift_ms` after the exhausted entry's due time; the core logs the
//    exhaustion and never this retry: retries_bounded.
enum class QueueLie : unsigned char { shorter_retries, late_slots, unlogged_retry };
std::unique_ptr<JobQueue> make_lying_queue(JobQueue& inner, QueueLie lie, DurationMs shift_ms);

// The worker's notifier port that sends every delivery message (kind
// "delivery") twice while the core logs, and records in its ledger, one
// delivery: no_duplicate_delivery, from the messenger's own records.
std::unique_ptr<Notifier> make_double_delivery_notifier(Notifier& inner);

// A runner that classifies one failure class as another: the core's runner,
// whose failure of class `from` is reported to the scheduler as `to` (so the
// durable row and the retry decision follow `to`), while the core's own log
// line of the failed request still names the class of the reply (e.g. a 403
// logged as auth, written and retried as network). It wraps any kind's
// runner: over a fetch job or a group job (a task's 403 from the model API),
// retries_bounded catches it with the monitors' own classification of the
// replies (for a group run, the group rule over its tasks' replies).
std::unique_ptr<JobRunner> make_misclassifying_runner(std::unique_ptr<JobRunner> core,
                                                      FailureClass from, FailureClass to);

// The worker's disk port on which the state store's copy of a damaged journal
// never comes to exist: renaming a file to a name holding ".damaged-" removes
// the source instead and reports success. The core believes it kept the copy
// (its `state_tail_dropped` names it), then drops the torn tail; the world
// sees the tail go with no copy kept: state_durable.
std::unique_ptr<Disk> make_copyless_disk(Disk& inner);

// The worker's disk port on which the fsync of one directory (the durable
// queue's, under `queue.store: disk`) does nothing and reports success: the
// core's DiskJobQueue acknowledges every operation as durable while none of
// its renames is, and a power loss takes them back. The core logs nothing
// amiss; state_durable catches it from the world's own reading of the queue
// file at the next boot (`queue_reopened`).
std::unique_ptr<Disk> make_dir_sync_skipping_disk(Disk& inner, std::string dir);

}  // namespace rehearse::variants
