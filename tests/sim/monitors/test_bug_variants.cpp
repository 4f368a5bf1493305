// Goal: the harness catches the incidents' bugs. Each seed bug (docs/semantics.md
// §0) is rebuilt as a test-only faulty variant of a core component
// (tests/variants/), plugged
// into an otherwise real world through RunOptions::runner_factory, and run on
// the bundled scenario that replays its incident: the run must FAIL, with the
// invariant the bug breaks, while the core's own runner passes the same
// scenario without that invariant firing (so the alarm is about the bug, not
// about the scenario).
// Method: run_scenario() twice per bug (core, then variant), compare the
// violations fired (every one is collected: stop_on_violation is off), and
// judge the variant's run with judge_run(), which also checks `expect`.
//   (a) 001 swallowed group failure  -> nothing_lost or no_duplicate_delivery
//   (b) 000 404 treated as transient -> item_queries_bounded
//   (c) 001 401 retried with the same token -> token_reissue_bounded
//       (invariant 7 of docs/semantics.md §10: the next request goes out with
//       the token a 401 refused), and the scenario's expectations.
#include <cstdlib>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "model/time.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"
#include "sim/world/orchestrator.hpp"
#include "tests/sim/world/fleet_twin.hpp"
#include "tests/variants/lying_cores.hpp"
#include "tests/variants/seed_bugs.hpp"

namespace rehearse::sim {
namespace {

std::string scenario_path(const std::string& name) {
  return std::string(REHEARSE_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

std::set<std::string> fired(const ScenarioRunResult& run) {
  std::set<std::string> names;
  for (const Violation& v : run.violations) names.insert(v.invariant);
  return names;
}

// Whether `invariant` fired on an event of type `type` (a world fact such as
// the queue's queue_add or the messenger's message_delivered), not only on
// one the core logged.
bool fired_on(const ScenarioRunResult& run, const std::string& invariant, const std::string& type) {
  for (const Violation& v : run.all_violations) {
    if (v.invariant == invariant && v.event_index < run.trace.events().size() &&
        run.trace.events()[v.event_index].type == type) {
      return true;
    }
  }
  return false;
}

std::string describe(const ScenarioRunResult& run) {
  std::string text;
  for (const Violation& v : run.violations) text += "  " + v.invariant + ": " + v.message + "\n";
  for (const std::string& e : run.errors) text += "  error: " + e + "\n";
  return text.empty() ? "  (no violation)\n" : text;
}

bool has_expect_failure(const Verdict& verdict, const std::string& pointer) {
  for (const ExpectFailure& f : verdict.expect_failures) {
    if (f.pointer == pointer) return true;
  }
  return false;
}

// The variant's run again as its fleet twin (tests/sim/world/fleet_twin.hpp: no
// slot history, finished slots kept compactly): the monitors must judge it
// exactly as they judged the run as written.
void expect_twin_judged_the_same(const Scenario& scenario, const RunOptions& options,
                                 const ScenarioRunResult& variant) {
  auto twin = run_scenario(twin::fleet_twin(scenario), options);
  ASSERT_TRUE(twin.ok()) << twin.error().message;
  EXPECT_EQ(twin::judgement(variant), twin::judgement(*twin));
}

// Runs the scenario with the core's runners and with `factory`, every
// violation collected in both runs.
struct Pair {
  Scenario scenario;
  ScenarioRunResult core;
  ScenarioRunResult variant;
};

Pair run_both(const std::string& name, RunnerFactory factory) {
  auto loaded = load_scenario_file(scenario_path(name));
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  Pair out{loaded.ok() ? std::move(loaded).value() : Scenario{}, {}, {}};
  if (!loaded.ok()) return out;
  RunOptions core_options;
  core_options.stop_on_violation = false;
  auto core = run_scenario(out.scenario, core_options);
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
  if (core.ok()) out.core = std::move(core).value();
  RunOptions variant_options;
  variant_options.stop_on_violation = false;
  variant_options.runner_factory = std::move(factory);
  auto variant = run_scenario(out.scenario, variant_options);
  EXPECT_TRUE(variant.ok()) << (variant.ok() ? "" : variant.error().message);
  if (variant.ok()) out.variant = std::move(variant).value();
  expect_twin_judged_the_same(out.scenario, variant_options, out.variant);
  return out;
}

TEST(BugVariants, SwallowedGroupFailureBreaksNothingLost) {
  // The all-fail job of group-run-verdicts: every task fails in a quota
  // outage. The variant turns the failed run into a delivered slot.
  Pair r =
      run_both("group-run-verdicts",
               [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                 if (job.id != "all-fail") return nullptr;
                 auto core = make_default_runner(job, ports);
                 if (!core.ok()) return nullptr;
                 return variants::make_swallowing_group_job(std::move(core).value(), ports.clock,
                                                            ports.log, ports.ledger);
               });
  const auto core_fired = fired(r.core);
  EXPECT_EQ(core_fired.count("nothing_lost") + core_fired.count("no_duplicate_delivery"), 0u)
      << "core run:\n"
      << describe(r.core);
  const auto bad = fired(r.variant);
  EXPECT_GE(bad.count("nothing_lost") + bad.count("no_duplicate_delivery"), 1u)
      << "the swallowed failure went unnoticed by the invariants; variant run:\n"
      << describe(r.variant);
  const Verdict verdict = judge_run(r.scenario, r.variant, std::nullopt);
  EXPECT_FALSE(verdict.held());
  // The scenario's own numbers see it too: no retry ran, the slot "delivered".
  EXPECT_TRUE(has_expect_failure(verdict, "/expect/jobs/all-fail/retries"));
}

TEST(BugVariants, NotFoundTreatedAsTransientBreaksItemQueriesBounded) {
  Pair r = run_both("reconcile-migration-404",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.kind != JobKind::reconcile) return nullptr;
                      return variants::make_transient_404_reconcile_job(ports.clock, ports.services,
                                                                        ports.log, ports.disk,
                                                                        ports.scenario.env,
                                                                        reconcile_config_from(job));
                    });
  EXPECT_EQ(fired(r.core).count("item_queries_bounded"), 0u) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant).count("item_queries_bounded"), 1u)
      << "a lost issue was queried again and nobody noticed; variant run:\n"
      << describe(r.variant);
  const Verdict verdict = judge_run(r.scenario, r.variant, std::nullopt);
  EXPECT_FALSE(verdict.held());
  EXPECT_TRUE(has_expect_failure(verdict, "/expect/items/ISS-9/stage"));
}

TEST(BugVariants, StickyTokenBreaksTokenReissueBounded) {
  Pair r = run_both("token-revoked-early",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.kind != JobKind::fetch) return nullptr;
                      return variants::make_sticky_token_fetch_job(ports.clock, ports.services,
                                                                   ports.log, job.id, job.requests);
                    });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  // The variant keeps the token a 401 refused and sends the next request with
  // it: invariant 7 read with docs/semantics.md §7's rule (the first 401 drops the token
  // and reissues once), judged by the monitor from the brokerage's own
  // auth_rejected fingerprints and the time the 401 reached the client.
  EXPECT_GE(fired(r.variant).count("token_reissue_bounded"), 1u) << describe(r.variant);
  // By the first-401 rule itself, at the brokerage's rejection of the first
  // request sent again with the refused token (its own 401 already received).
  EXPECT_TRUE(fired_on(r.variant, "token_reissue_bounded", "auth_rejected")) << describe(r.variant);
  const Verdict verdict = judge_run(r.scenario, r.variant, std::nullopt);
  EXPECT_FALSE(verdict.held());
  EXPECT_TRUE(has_expect_failure(verdict, "/expect/jobs/quote-fetch/delivered_slots"));
  EXPECT_TRUE(has_expect_failure(verdict, "/expect/jobs/quote-fetch/final_status"));
  EXPECT_TRUE(has_expect_failure(verdict, "/expect/services/brokerage/token_issues"));
}

// A pipeline store that writes a stale snapshot (stages go back) while the
// core logs forward moves: caught by stage_monotonic, which reads the durable
// file as the world decodes it.
TEST(LyingCores, StaleSnapshotPipelineStoreBreaksStageMonotonic) {
  Pair r = run_both("reconcile-out-of-order",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.kind != JobKind::reconcile) return nullptr;
                      return variants::make_stale_pipeline_reconcile_job(
                          ports.clock, ports.services, ports.log, ports.disk, ports.scenario.env,
                          reconcile_config_from(job));
                    });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant).count("stage_monotonic"), 1u)
      << "a stage that went back on disk passed; variant run:\n"
      << describe(r.variant);
}

// A group job that counts a skip as a failure (the core's log still says
// skipped): caught by nothing_lost from the model-api replies (every task
// skipped) and the retry the queue then received.
TEST(LyingCores, SkipCountedAsFailureBreaksNothingLost) {
  Pair r = run_both("group-run-verdicts",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.id != "all-skip") return nullptr;
                      auto core = make_default_runner(job, ports);
                      if (!core.ok()) return nullptr;
                      return variants::make_skip_as_failure_group_job(std::move(core).value());
                    });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant).count("nothing_lost"), 1u)
      << "a skip counted as a failure passed; variant run:\n"
      << describe(r.variant);
}

// Lying cores: the log says the rule was kept, the world's own records say
// otherwise. A pipeline store that writes without its lock (the core believes
// it holds it, its log is unchanged) is caught by state_durable from the disk's
// lock records.
TEST(LyingCores, LocklessPipelineStoreBreaksStateDurable) {
  Pair r = run_both("reconcile-out-of-order",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.kind != JobKind::reconcile) return nullptr;
                      return variants::make_lockless_reconcile_job(ports.clock, ports.services,
                                                                   ports.log, ports.disk,
                                                                   ports.scenario.env,
                                                                   reconcile_config_from(job));
                    });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"state_durable"})
      << "a store written without its lock passed; variant run:\n"
      << describe(r.variant);
}

// --- Lying ports: the scheduler logs what the rule wants, the worker's queue
// or notifier port does something else (tests/variants/lying_cores.hpp). Each
// runs on a small scenario written here, with exact timings.

// One daily group job at 10:00 (one task, one target), BullMQ attempts 3 with
// a fixed 10 min backoff, and `faults` (a JSON array).
Scenario digest_scenario(const std::string& faults) {
  const std::string text = R"({
    "format": 1, "scenario": "lying-port",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T11:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "digest", "kind": "group", "schedule": "0 10 * * *",
              "retry_policy": {"attempts": 3, "backoff": {"type": "fixed", "delay": "10m"}},
              "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": )" + faults + "}";
  auto loaded = load_scenario_json(text, "lying-port.json");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return loaded.ok() ? std::move(loaded).value() : Scenario{};
}

Pair run_both(Scenario scenario, WorkerPortsDecorator decorator) {
  Pair out{std::move(scenario), {}, {}};
  auto core = run_scenario(out.scenario, RunOptions{});
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
  if (core.ok()) out.core = std::move(core).value();
  RunOptions options;
  options.worker_ports = std::move(decorator);
  auto variant = run_scenario(out.scenario, options);
  EXPECT_TRUE(variant.ok()) << (variant.ok() ? "" : variant.error().message);
  if (variant.ok()) out.variant = std::move(variant).value();
  expect_twin_judged_the_same(out.scenario, options, out.variant);
  return out;
}

WorkerPortsDecorator lying_queue(variants::QueueLie lie, DurationMs shift_ms) {
  return [lie, shift_ms](JobQueue& queue, Notifier&, Disk&) {
    WorkerPortWrappers w;
    w.queue = variants::make_lying_queue(queue, lie, shift_ms);
    return w;
  };
}

// Quota exhausted 09:59:30 to 10:14:30: the 10:00 run fails, the policy's
// retry is due 10:10 (fails again), the next 10:20 (succeeds). The lying
// queue receives them due 10:08 and 10:16 while retry_scheduled still says
// 10:10: retries_bounded reads the queue's ready_at (8 min, outside [10 min,
// 10 min]).
TEST(LyingCores, RetryQueuedEarlierThanLoggedBreaksRetriesBounded) {
  Pair r =
      run_both(digest_scenario(
                   R"([{"at": "2026-12-07T09:59:30Z", "for": "15m", "kind": "quota_exhausted"}])"),
               lying_queue(variants::QueueLie::shorter_retries, 2 * kMinuteMs));
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(r.core.tallies["jobs"]["digest"]["retries"], 2) << r.core.tallies.dump();
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"retries_bounded"})
      << "a retry queued earlier than its logged delay passed; variant run:\n"
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "retries_bounded", "queue_add")) << describe(r.variant);
}

// Quota exhausted 09:59:30 to 10:59:30: 10:00, 10:10 and 10:20 fail and the
// budget (2 retries) is spent at 10:20 (retry_exhausted). The lying queue
// then receives a third retry, due 10:30, that the core never logs:
// retries_bounded reads the queue's own record, and nothing_lost sees a retry
// queued with no retry_scheduled message in its finish (nobody is told).
TEST(LyingCores, RetryQueuedButNeverLoggedBreaksRetriesBounded) {
  Pair r =
      run_both(digest_scenario(
                   R"([{"at": "2026-12-07T09:59:30Z", "for": "1h", "kind": "quota_exhausted"}])"),
               lying_queue(variants::QueueLie::unlogged_retry, 10 * kMinuteMs));
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(r.core.tallies["jobs"]["digest"]["retries"], 2) << r.core.tallies.dump();
  EXPECT_EQ(fired(r.variant), (std::set<std::string>{"nothing_lost", "retries_bounded"}))
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "retries_bounded", "queue_add")) << describe(r.variant);
}

// No fault: the 10:00 slot is queued due 10:05 while the core logs slot_due
// 10:00 and next_run_at tomorrow 10:00: schedule_kept reads the queue's own
// record (a regular slot is due at its firing).
TEST(LyingCores, SlotQueuedAtAnotherTimeBreaksScheduleKept) {
  Pair r =
      run_both(digest_scenario("[]"), lying_queue(variants::QueueLie::late_slots, 5 * kMinuteMs));
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"schedule_kept"})
      << "a slot queued off its firing passed; variant run:\n"
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "schedule_kept", "queue_add")) << describe(r.variant);
}

// No fault: the 10:00 slot's delivery reaches the messenger twice, with no
// crash in between, while the core logs and records one delivery:
// no_duplicate_delivery counts the messenger's message_delivered.
TEST(LyingCores, DeliverySentTwiceBreaksNoDuplicateDelivery) {
  Pair r = run_both(digest_scenario("[]"), [](JobQueue&, Notifier& notifier, Disk&) {
    WorkerPortWrappers w;
    w.notifier = variants::make_double_delivery_notifier(notifier);
    return w;
  });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"no_duplicate_delivery"})
      << "a delivery sent twice passed; variant run:\n"
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "no_duplicate_delivery", "message_delivered"))
      << describe(r.variant);
}

// --- The seed 004 family: a store or scheduler that loses or bends the retry
// bookkeeping (tests/variants/seed_bugs.hpp), between the core's scheduler and
// the core's store through RunOptions::store_decorator.

// One group job "job" (one task, one target) with `schedule`, `policy` and
// `faults` (JSON), from 09:30 to `until`.
Scenario store_scenario(const std::string& schedule, const std::string& policy,
                        const std::string& faults, const std::string& until) {
  const std::string text = R"({
    "format": 1, "scenario": "seed-004",
    "start": "2026-12-07T09:30:00Z", "until": ")" +
                           until + R"(",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "job", "kind": "group", "schedule": ")" +
                           schedule + R"(",
              "retry_policy": )" +
                           policy + R"(,
              "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": )" + faults + "}";
  auto loaded = load_scenario_json(text, "seed-004.json");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return loaded.ok() ? std::move(loaded).value() : Scenario{};
}

Pair run_with_store_bug(Scenario scenario, variants::StoreBug bug) {
  Pair out{std::move(scenario), {}, {}};
  auto core = run_scenario(out.scenario, RunOptions{});
  EXPECT_TRUE(core.ok()) << (core.ok() ? "" : core.error().message);
  if (core.ok()) out.core = std::move(core).value();
  RunOptions options;
  options.store_decorator = [bug](StateStore& store, Disk& disk) {
    return variants::make_buggy_store(store, disk, bug);
  };
  auto variant = run_scenario(out.scenario, options);
  EXPECT_TRUE(variant.ok()) << (variant.ok() ? "" : variant.error().message);
  if (variant.ok()) out.variant = std::move(variant).value();
  expect_twin_judged_the_same(out.scenario, options, out.variant);
  return out;
}

// (a) Daily 10:00, 2 retries 10 min apart, quota exhausted 09:59:30 to
// 10:59:30, restart 10:15 (back 10:17). Core: 10:00 fails, retry 1 at 10:10
// fails, retry 2 at 10:20 (from the durable queue) fails: exhausted. The
// variant's scheduler boots with the counter at 0 and retries 10:30 and
// 10:40 as well: 4 retries of a budget of 2.
TEST(SeedBug004, StoreResettingCountersAtBootBreaksRetriesBounded) {
  Pair r = run_with_store_bug(
      store_scenario("0 10 * * *", R"({"max": 2, "backoff_sec": 600})",
                     R"([{"at": "2026-12-07T09:59:30Z", "for": "1h", "kind": "quota_exhausted"},
                         {"at": "2026-12-07T10:15:00Z", "kind": "restart", "down_for": "2m"}])",
                     "2026-12-07T11:30:00Z"),
      variants::StoreBug::reset_counters_at_boot);
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(r.core.tallies["jobs"]["job"]["retries"], 2) << r.core.tallies.dump();
  EXPECT_EQ(fired(r.variant), (std::set<std::string>{"retries_bounded", "state_durable"}))
      << describe(r.variant) << r.variant.tallies.dump();
  // From the queue's own record: the third retry queued for a budget of 2
  // (state_durable also fires, from the attempt the core announces).
  EXPECT_TRUE(fired_on(r.variant, "retries_bounded", "queue_add")) << describe(r.variant);
}

// (b) Hourly, the state file overwritten with garbage at 10:30, restart at
// 10:40 (back 10:42). The core's store fails closed and reports
// state_corrupt; the variant removes the corrupt files at open and starts
// empty.
TEST(SeedBug004, StoreResettingItselfWhenCorruptBreaksStateDurable) {
  Pair r = run_with_store_bug(
      store_scenario("0 * * * *", R"({"max": 2, "backoff_sec": 300})",
                     R"([{"at": "2026-12-07T10:30:00Z", "kind": "state_corrupted"},
                         {"at": "2026-12-07T10:40:00Z", "kind": "restart", "down_for": "2m"}])",
                     "2026-12-07T11:30:00Z"),
      variants::StoreBug::reset_when_corrupt);
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"state_durable"})
      << describe(r.variant) << r.variant.tallies.dump();
  // From the disk's own records: the corrupt journal removed, then written.
  EXPECT_TRUE(fired_on(r.variant, "state_durable", "disk_remove")) << describe(r.variant);
}

// (c) Hourly, a retry 10 min after a failure, quota exhausted 09:59:30 to
// 10:04:30, restart 10:05 (back 10:07). The 10:00 run fails and its retry is
// due 10:10; the variant also writes next_run_at = 10:10 (the core keeps
// 11:00), so the booted scheduler hands out a slot at 10:10, which is no
// firing of "0 * * * *".
TEST(SeedBug004, RetryMovingNextRunAtBreaksScheduleKept) {
  Pair r = run_with_store_bug(
      store_scenario("0 * * * *", R"({"max": 2, "backoff_sec": 600})",
                     R"([{"at": "2026-12-07T09:59:30Z", "for": "5m", "kind": "quota_exhausted"},
                         {"at": "2026-12-07T10:05:00Z", "kind": "restart", "down_for": "2m"}])",
                     "2026-12-07T11:30:00Z"),
      variants::StoreBug::retry_moves_next_run_at);
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"schedule_kept"})
      << describe(r.variant) << r.variant.tallies.dump();
  // From the queue's own record: a regular slot at no firing.
  EXPECT_TRUE(fired_on(r.variant, "schedule_kept", "queue_add")) << describe(r.variant);
}

// (d) Hourly, exponential backoff from 5 min, quota exhausted 09:59:30 to
// 10:02:30 and 10:59:30 to 11:02:30, restart 10:30 (back 10:32). 10:00 fails,
// retry 1 at 10:05 succeeds (the counter must go back to 0; the variant keeps
// 1 on disk), so after the restart the 11:00 failure's retry is the variant's
// second (due 11:10) instead of a first (due 11:05).
TEST(SeedBug004, SuccessKeepingTheCounterBreaksRetriesBounded) {
  Pair r = run_with_store_bug(
      store_scenario("0 * * * *",
                     R"({"max": 3, "backoff": {"type": "exponential", "delay": "5m"}})",
                     R"([{"at": "2026-12-07T09:59:30Z", "for": "3m", "kind": "quota_exhausted"},
                         {"at": "2026-12-07T10:30:00Z", "kind": "restart", "down_for": "2m"},
                         {"at": "2026-12-07T10:59:30Z", "for": "3m", "kind": "quota_exhausted"}])",
                     "2026-12-07T11:30:00Z"),
      variants::StoreBug::success_keeps_counter);
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(r.core.tallies["jobs"]["job"]["retries"], 2) << r.core.tallies.dump();
  EXPECT_EQ(fired(r.variant), (std::set<std::string>{"retries_bounded", "state_durable"}))
      << describe(r.variant) << r.variant.tallies.dump();
  // From the queue's own record: the first retry of the new episode queued
  // 10 min after its failure, outside the policy's window for a first retry
  // (state_durable also fires, from the attempt the core announces).
  EXPECT_TRUE(fired_on(r.variant, "retries_bounded", "queue_add")) << describe(r.variant);
}

// --- A run's failure class and a dropped journal tail, judged from the
// world's facts (not the core's log).

// token-no-reissue: the 02:00 run meets a 401 that persists through the
// reissue and the 04:00 run a 403, both auth (not retried by the per-job
// policy). The variant reports them as network: the scheduler writes network
// in the durable row and queues a retry, while the core's log line of the
// failed request says auth. retries_bounded classifies the brokerage's
// replies itself (the 02:00 run's last answer, the 401 after the reissue, is
// auth) and fires when the queue hands out the retry (its queue_take); the
// durable row's class is not believed.
TEST(LyingCores, A403WrittenAsNetworkBreaksRetriesBounded) {
  Pair r = run_both("token-no-reissue",
                    [](const JobSpec& job, RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
                      if (job.kind != JobKind::fetch) return nullptr;
                      auto core = make_default_runner(job, ports);
                      if (!core.ok()) return nullptr;
                      return variants::make_misclassifying_runner(
                          std::move(core).value(), FailureClass::auth, FailureClass::network);
                    });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"retries_bounded"})
      << "an auth failure written and retried as network passed; variant run:\n"
      << describe(r.variant);
  // At the retry the queue handed out (the run's start is its queue_take).
  EXPECT_TRUE(fired_on(r.variant, "retries_bounded", "queue_take")) << describe(r.variant);
}

// torn-state-write: an append torn by a crash at 11:00 leaves a torn tail in
// the journal; at the boot (11:01) the core's store keeps a copy of the
// damaged journal, then its first write compacts the tail away. On the
// copyless disk the copy's rename drops it, while the core still reports
// the tail dropped "kept as" that copy: state_durable fires on the world's
// journal_tail_gone (no durable copy of the damaged bytes), never reading
// the core's state_tail_dropped.
TEST(LyingCores, ATornTailDroppedWithoutACopyBreaksStateDurable) {
  auto loaded = load_scenario_file(scenario_path("torn-state-write"));
  ASSERT_TRUE(loaded.ok());
  Pair r = run_both(std::move(loaded).value(), [](JobQueue&, Notifier&, Disk& disk) {
    WorkerPortWrappers w;
    w.disk = variants::make_copyless_disk(disk);
    return w;
  });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"state_durable"})
      << "a torn tail dropped without a copy passed; variant run:\n"
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "state_durable", "journal_tail_gone")) << describe(r.variant);
}

// disk-queue-restart-mid-retry-chain: the worker's queue is the core's
// DiskJobQueue on the simulated disk, and the machine loses power at 10:15
// with the second retry acknowledged in the queue. On a disk where the queue
// directory's fsync does nothing, none of the queue's renames was durable:
// the boot reopens a queue without the acknowledged retry. The core notices
// nothing (it restores the retry from its state store, and the chain goes
// on); state_durable fires on the world's queue_reopened.
TEST(LyingCores, AQueueWhoseRenamesAreNotDurableBreaksStateDurable) {
  auto loaded = load_scenario_file(scenario_path("disk-queue-restart-mid-retry-chain"));
  ASSERT_TRUE(loaded.ok());
  Pair r = run_both(std::move(loaded).value(), [](JobQueue&, Notifier&, Disk& disk) {
    WorkerPortWrappers w;
    w.disk = variants::make_dir_sync_skipping_disk(disk, kWorldQueueDir);
    return w;
  });
  EXPECT_TRUE(r.core.violations.empty()) << "core run:\n" << describe(r.core);
  EXPECT_EQ(fired(r.variant), std::set<std::string>{"state_durable"})
      << "acknowledged queue entries lost to a power loss passed; variant run:\n"
      << describe(r.variant);
  EXPECT_TRUE(fired_on(r.variant, "state_durable", "queue_reopened")) << describe(r.variant);
}

// A group job (one task, per-job policy: network retried, auth not) whose
// model-API calls all get a 403 from 09:59 on. The core fails the 10:00 run
// on auth and does not retry it (failed_permanent). The variant (the same
// misclassifying runner, over the core's group job) reports the failure as
// network: the durable row says network and a retry is queued at 10:05.
// The monitors compute a failed group run's class from its tasks' model-API
// replies (the 403: auth) and retries_bounded fires when the queue hands out
// the retry; the row's class is not believed.
TEST(LyingCores, AGroupTask403WrittenAsNetworkBreaksRetriesBounded) {
  const std::string text = R"({
    "format": 1, "scenario": "group-403",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T10:30:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "digest", "kind": "group", "schedule": "0 10 * * *",
              "retry_policy": {"max": 2, "backoff_sec": 300},
              "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T09:59:00Z", "kind": "http_errors",
                "service": "model-api", "status": 403}]})";
  auto loaded = load_scenario_json(text, "group-403.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  Pair out{std::move(loaded).value(), {}, {}};
  RunOptions core_options;
  core_options.stop_on_violation = false;
  auto core = run_scenario(out.scenario, core_options);
  ASSERT_TRUE(core.ok()) << core.error().message;
  RunOptions options;
  options.stop_on_violation = false;
  options.runner_factory = [](const JobSpec& job,
                              RunnerPorts& ports) -> std::unique_ptr<JobRunner> {
    auto runner = make_default_runner(job, ports);
    if (!runner.ok()) return nullptr;
    return variants::make_misclassifying_runner(std::move(runner).value(), FailureClass::auth,
                                                FailureClass::network);
  };
  auto variant = run_scenario(out.scenario, options);
  ASSERT_TRUE(variant.ok()) << variant.error().message;
  expect_twin_judged_the_same(out.scenario, options, *variant);
  EXPECT_TRUE(core.value().violations.empty()) << "core run:\n" << describe(core.value());
  EXPECT_EQ(core.value().tallies["jobs"]["digest"]["retries"], 0) << core.value().tallies.dump();
  EXPECT_EQ(fired(variant.value()), std::set<std::string>{"retries_bounded"})
      << "a group task's auth failure written and retried as network passed; variant run:\n"
      << describe(variant.value());
  EXPECT_TRUE(fired_on(variant.value(), "retries_bounded", "queue_take"))
      << describe(variant.value());
}

}  // namespace
}  // namespace rehearse::sim
