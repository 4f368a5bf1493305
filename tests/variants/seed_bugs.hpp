// Test-only faulty variants of core components: the seed bugs of incidents
// 000 and 001 (docs/semantics.md §0), rebuilt so that the harness can prove
// it catches them.
//
// They live under tests/ and are linked into test binaries only; model/ has
// no switch that turns any of them on. Each is a JobRunner (or wraps the
// core's) that a test plugs into the world through RunOptions::runner_factory
// (sim/world/world.hpp), so the rest of the world -- scheduler, store, queue,
// services, monitors -- is the real one.
//
// This header names the delivery ledger by a forward declaration only, to
// keep what a test sees narrow (sim/world/world_runners.hpp does the same).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/environment.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"
#include "model/reconcile.hpp"
#include "model/state_store.hpp"

namespace rehearse {
class DeliveryLedger;
class Disk;
}  // namespace rehearse

namespace rehearse::variants {

// (a) 001, "failure isolation erased the failure": the pre-fix group
// orchestrator caught every task error, turned it into a failure-notice item,
// and, the item list being non-empty, "delivered" it: the run returned
// normally, the send guard was consumed and the slot marked complete, so the
// queue saw a success and never retried. Rebuilt as a wrapper around the
// core's runner: whenever the core judges the run failed (after sending its
// failure notices), the wrapper consumes the guard, marks the slot delivered
// (logging guard_set / slot_marked as the core does) and reports success.
std::unique_ptr<JobRunner> make_swallowing_group_job(std::unique_ptr<JobRunner> core, Clock& clock,
                                                     Log& log, DeliveryLedger& ledger);

// (b) 000, "a 404 retried forever": a reconcile job whose orchestrator client
// treats a 404 for an issue as a passing error. Rebuilt as the core's
// ReconcileJob over a Services decorator that turns each get_issue 404/410
// into a 503 before the core sees it, so the lost item is backed off and
// queried again instead of ending DESIGN_FAILED. (The trace still shows the
// orchestrator's real 404: the decorator sits inside the process.)
// `config` is the one the world gives the core's job (reconcile_config_from,
// sim/world/orchestrator.hpp), so the variant keeps its items in the same store.
std::unique_ptr<JobRunner> make_transient_404_reconcile_job(Clock& clock, Services& services,
                                                            Log& log, Disk& disk, Environment env,
                                                            ReconcileConfig config);

// (c) 001, "it recovered the next day": a brokerage fetch job whose token
// client keeps the cached token on a 401 and simply sends the request again
// with the same token (the pre-fix client). Its cache is process memory (the
// factory builds a new runner, with an empty cache, at every boot), so only a
// restart clears a revoked token. Sequential requests, same attribution
// headers and request ids as the core's FetchJob.
std::unique_ptr<JobRunner> make_sticky_token_fetch_job(Clock& clock, Services& services, Log& log,
                                                       std::string job_id, int requests);

// The seed 004 family (docs/semantics.md §0, incident 004): a state store or
// scheduler that loses or bends the retry bookkeeping. Each is a decorator
// over the core's StateStore, plugged in through RunOptions::store_decorator
// (sim/world/world.hpp -> WorkerOptions::store_decorator, model/worker.hpp), built
// at every open of the worker; the scheduler above it is the core's, the
// store below it writes the files.
enum class StoreBug : unsigned char {
  // (a) every counter reads as 0 at boot (job row and per-slot records): the
  //     scheduler goes on from a reset budget.
  reset_counters_at_boot,
  // (b) a store that finds its files corrupt at open removes them and starts
  //     empty (under its lock) instead of failing closed.
  reset_when_corrupt,
  // (c) a retry that moves next_run_at: whenever a state with a retry pending
  //     is written, next_run_at becomes that retry's instant.
  retry_moves_next_run_at,
  // (d) success that does not reset the counter: a write that takes the job
  //     row's retry_count back to 0 with status ok keeps the old count.
  success_keeps_counter,
};
std::unique_ptr<JobStateStore> make_buggy_store(StateStore& store, Disk& disk, StoreBug bug);

}  // namespace rehearse::variants
