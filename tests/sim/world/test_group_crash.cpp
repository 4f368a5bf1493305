// Goal: a group job keeps invariant 5 (docs/semantics.md §10) whatever
// instant the worker process dies at: the send guard and slot marker are never
// set by a failed run, every slot's deliverable reaches every target at least
// once, and a target receives it more than once ONLY when the crash fell in
// the at-least-once window (after the messenger accepted the delivery, before
// the ledger recorded that target). Failure notices may repeat.
// Method: crash-anywhere enumeration over two kinds of cut, for four runs (a
// run with deliverables, one whose first attempts fail on a quota outage, one
// whose first attempt meets a partial messenger outage, an all-skipped one):
//  - every suspension point: Simulator::sweep_crash_points crashes the worker
//    after k events, for every k the baseline run reaches;
//  - every disk operation: SimDisk::fail_stop_after(n) kills the worker at its
//    n-th ledger operation (the cuts between two synchronous writes, e.g.
//    between the guard and the marker, that no event boundary reaches).
// Each crash is a power loss (unsynced bytes vanish), the worker reboots one
// second later and the durable queue (owned by the test, as BullMQ's Redis
// is) runs the slot again until it completes. A trace listener tracks, per
// target, "accepted but not yet recorded"; a crash in that state counts as a
// window case for the target, and the final delivery count must equal 1 plus
// the target's window cases: exactly, so a core that resends outside the
// window, or fails to resend a lost one, fails here. The test prints how many
// points it covered and how many window cases it met, and asserts minimums.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "model/group_job.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {
namespace {

const TimeMs kSlot = *parse_instant("2026-12-04T17:00:00Z");
const std::vector<std::string> kTargets = {"team-chat", "ops-mail"};
constexpr DurationMs kBackoffMs = 30 * kMinuteMs;
constexpr DurationMs kRebootAfterMs = 1000;
constexpr int kAttemptsMax = 8;
const char* const kLedgerDir = "/ledger";

// What the durable queue knows of the slot (survives every crash).
struct SlotQueue {
  int attempts_started = 0;
  bool done = false;
  std::map<int, RunOutcomeKind> outcomes;  // by attempt
  std::vector<std::string> violations;
};

struct GroupRun {
  std::string name;
  std::function<void(ModelApi&, Messenger&)> faults;
  std::vector<std::pair<std::string, ModelOutput>> tasks;
  SlotVerdict verdict = SlotVerdict::delivered;
  bool notices = false;  // a failed attempt sends failure notices first
};

// The process's memory: its ledger handle and its runner (rebuilt per boot).
struct WorkerMemory {
  WorkerMemory(Clock& clock, Services& services, Notifier& notifier, Log& log,
               DeliveryLedger ledger_in, GroupJobConfig config)
      : ledger(std::move(ledger_in)),
        job(clock, services, notifier, log, ledger, std::move(config)) {}
  DeliveryLedger ledger;
  GroupJob job;
};

// The worker's loop over the durable queue: run the slot, record the outcome,
// back off after a failure, until the slot completes.
Task<void> worker_loop(Simulator& sim, SimDisk& disk, ProcessId self, WorkerMemory& memory,
                       SlotQueue& queue) {
  while (!queue.done && queue.attempts_started < kAttemptsMax) {
    const int attempt = ++queue.attempts_started;
    RunContext context{"weekly", kSlot, attempt, attempt > 1};
    const rehearse::RunOutcome outcome = co_await memory.job.run(std::move(context));
    // Died inside a disk operation: the world crashes us at this instant and
    // a dead process reports nothing.
    if (disk.is_dead(self)) co_return;
    queue.outcomes[attempt] = outcome.kind;
    if (!outcome.failed()) {
      queue.done = true;
      break;
    }
    const auto record = memory.ledger.read("weekly", kSlot);
    if (disk.is_dead(self)) co_return;
    if (!record.ok()) {
      queue.violations.push_back("ledger unreadable after a failed run: " +
                                 record.error().describe());
    } else if (record->guard_consumed() || record->complete()) {
      queue.violations.push_back(
          fmt::format("attempt {} failed but left the guard or marker", attempt));
    }
    co_await sim.clock().sleep_for(kBackoffMs);
  }
}

struct CutPlan {
  std::optional<std::uint64_t> crash_after_events;   // a suspension point
  std::optional<std::uint64_t> fail_stop_after_ops;  // a disk operation
  // Test-only faulty variant: the ledger's disk forgets every directory
  // fsync, so renamed files are not durable (the witness must catch it).
  bool drop_dir_fsync = false;
};

// Forwards to the simulated disk, except that fsync_dir does nothing.
class NoDirSyncDisk final : public Disk {
 public:
  explicit NoDirSyncDisk(Disk& inner) : inner_(inner) {}
  Result<std::optional<std::string>> read_file(const std::string& p) override {
    return inner_.read_file(p);
  }
  Result<std::optional<std::string>> read_range(const std::string& p, std::uint64_t o,
                                                std::uint64_t n) override {
    return inner_.read_range(p, o, n);
  }
  Status write_file(const std::string& p, std::string_view b) override {
    return inner_.write_file(p, b);
  }
  Status append_file(const std::string& p, std::string_view b) override {
    return inner_.append_file(p, b);
  }
  Status fsync_file(const std::string& p) override { return inner_.fsync_file(p); }
  Status rename_file(const std::string& f, const std::string& t) override {
    return inner_.rename_file(f, t);
  }
  Status fsync_dir(const std::string&) override { return {}; }
  Result<bool> remove_file(const std::string& p) override { return inner_.remove_file(p); }
  Status create_dir(const std::string& d) override { return inner_.create_dir(d); }
  Result<std::vector<std::string>> list_dir(const std::string& d) override {
    return inner_.list_dir(d);
  }
  Result<DiskLockHandle> lock_exclusive(const std::string& p) override {
    return inner_.lock_exclusive(p);
  }

 private:
  Disk& inner_;
};

struct RunReport {
  CrashSweepRun run;
  bool cut = false;                         // the planned cut happened
  std::uint64_t worker_disk_ops = 0;        // disk operations of the whole run
  std::map<std::string, int> window_cases;  // per target
  std::map<std::string, std::int64_t> deliveries;
  int duplicates = 0;  // extra deliveries over all targets
};

RunReport run_world(const GroupRun& setup, CutPlan plan) {
  Simulator sim({.start_ms = kSlot, .seed = 5});
  Trace trace;
  SimDisk disk(&trace, sim.rng().derive("disk"));
  NoDirSyncDisk faulty_disk(disk);
  Disk& ledger_disk = plan.drop_dir_fsync ? static_cast<Disk&>(faulty_disk) : disk;
  bind_to_simulator(disk, sim,
                    {.crash_effect = ProcessCrashEffect::power_loss,
                     .reboot_after_ms = kRebootAfterMs});
  SimServices services(sim, trace);
  SimLog log(sim, trace);
  ModelApi model(sim.rng(), {.latency_ms = 100, .timeout_ms = 30 * kSecondMs});
  Messenger messenger(sim, trace, {kTargets, 50});
  services.add(model);
  GroupJobConfig config;
  config.job_id = "weekly";
  config.targets = kTargets;
  for (const auto& [task, output] : setup.tasks) {
    config.tasks.push_back({task, 1});
    model.set_output(task, output);
  }
  setup.faults(model, messenger);
  SlotQueue queue;
  RunReport report;

  // The witness: per target, accepted by the messenger and not yet recorded.
  std::set<std::string> unrecorded;
  trace.add_listener([&](const TraceEvent& e, std::size_t) {
    if (e.type == "message_delivered" && e.str("kind") == "delivery") {
      unrecorded.insert(e.str("target"));
    } else if (e.type == "delivery_recorded") {
      unrecorded.erase(e.str("target"));
    }
  });

  ProcessId worker = 0;
  worker = sim.add_process("worker", [&](Simulator& s, ProcessId self) {
    auto ledger = DeliveryLedger::open(ledger_disk, kLedgerDir);
    if (!ledger.ok()) return;  // died opening it: the world crashes us
    auto& memory = s.emplace_memory<WorkerMemory>(self, s.clock(), services, messenger, log,
                                                  std::move(ledger).value(), config);
    s.spawn(self, worker_loop(s, disk, self, memory, queue), "group-worker");
  });
  sim.add_process_listener([&](ProcessId, ProcessChange change, TimeMs) {
    if (change != ProcessChange::crashed) return;
    report.cut = true;
    for (const auto& target : unrecorded) ++report.window_cases[target];
  });

  const std::uint64_t ops_before = disk.operations();
  if (plan.fail_stop_after_ops) disk.fail_stop_after(*plan.fail_stop_after_ops, 1);
  sim.boot(worker);
  REHEARSE_ASSERT(worker == 1);
  if (plan.crash_after_events) sim.plan_crash({worker, *plan.crash_after_events, kRebootAfterMs});
  const RunResult result = sim.run_until(kSlot + 6 * kHourMs);
  report.worker_disk_ops = disk.operations() - ops_before;
  report.run.events_executed = result.events_executed;
  report.run.crash_fired = plan.crash_after_events ? sim.crash_plan_fired() : report.cut;

  // --- judge the end state ---
  std::vector<std::string> problems = queue.violations;
  if (!result.ok()) problems.push_back("run: " + result.message);
  if (!queue.done) problems.push_back("the slot never completed");
  // No guard or marker event inside a failed attempt (trace witness).
  for (const auto& e : trace.events()) {
    if (e.type != "guard_set" && e.type != "slot_marked") continue;
    const auto it = queue.outcomes.find(static_cast<int>(e.num("attempt")));
    if (it != queue.outcomes.end() && it->second == RunOutcomeKind::failure) {
      problems.push_back(fmt::format("{} by failed attempt {}", e.type, e.num("attempt")));
    }
  }
  // No model call once a delivery was decided: a resumed outbox is resent,
  // never regenerated.
  bool decided = false;
  for (const auto& e : trace.events()) {
    if (e.type == "outbox_written") decided = true;
    if (decided && e.type == "service_call") problems.push_back("model call after the outbox");
  }
  DeliveryLedger reader = *DeliveryLedger::open(disk, kLedgerDir);
  const auto record = reader.read("weekly", kSlot);
  if (!record.ok()) {
    problems.push_back("final ledger: " + record.error().describe());
  } else {
    if (!record->guard_consumed() || !record->complete()) problems.push_back("slot not marked");
    if (record->verdict != setup.verdict) problems.push_back("wrong verdict");
  }
  for (const auto& target : kTargets) {
    const std::int64_t n = messenger.delivery_count("weekly", kSlot, target);
    const std::int64_t expected =
        setup.verdict == SlotVerdict::delivered ? 1 + report.window_cases[target] : 0;
    report.deliveries[target] = n;
    report.duplicates += static_cast<int>(n > 1 ? n - 1 : 0);
    if (n != expected) {
      problems.push_back(fmt::format("{} got {} deliveries, {} allowed ({} window cases)", target,
                                     n, expected, report.window_cases[target]));
    }
  }
  if (setup.notices) {
    // Whatever the cut, some failed attempt told every target (repeats allowed).
    for (const auto& target : kTargets) {
      std::int64_t notices = 0;
      for (const auto& m : messenger.accepted()) {
        notices += m.kind == "failure_notice" && m.target == target ? 1 : 0;
      }
      if (notices < 1) problems.push_back(target + " never got the failure notice");
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += p + "; ";
    report.run.verdict = make_error(ErrorCode::internal, all);
  }
  return report;
}

const std::vector<GroupRun>& setups() {
  static const std::vector<GroupRun> all = {
      {"deliverables",
       [](ModelApi&, Messenger&) {},
       {{"weekly-summary", ModelOutput::summary}, {"impact-report", ModelOutput::preview}},
       SlotVerdict::delivered},
      {"failures-then-recovery",
       [](ModelApi& m, Messenger&) { m.add_quota_outage(kSlot, kSlot + 20 * kMinuteMs); },
       {{"weekly-summary", ModelOutput::summary}, {"impact-report", ModelOutput::preview}},
       SlotVerdict::delivered,
       true},
      {"partial-messenger-outage",
       [](ModelApi&, Messenger& m) { m.add_outage(kSlot, kSlot + 20 * kMinuteMs, {"ops-mail"}); },
       {{"weekly-summary", ModelOutput::summary}},
       SlotVerdict::delivered},
      {"all-skipped",
       [](ModelApi&, Messenger&) {},
       {{"weekly-summary", ModelOutput::skip}, {"impact-report", ModelOutput::skip}},
       SlotVerdict::skipped},
  };
  return all;
}

TEST(GroupCrash, EverySuspensionPointKeepsInvariantFive) {
  std::uint64_t points_total = 0;
  int windows_total = 0;
  for (const GroupRun& setup : setups()) {
    int windows = 0;
    int duplicates = 0;
    std::vector<std::uint64_t> window_points;
    auto scenario = [&](std::optional<std::uint64_t> k) {
      RunReport r = run_world(setup, {k, std::nullopt});
      if (k) {
        int here = 0;
        for (const auto& [target, n] : r.window_cases) here += n;
        if (here > 0) window_points.push_back(*k);
        windows += here;
        duplicates += r.duplicates;
      } else {
        EXPECT_EQ(r.duplicates, 0) << "a duplicate without any crash";
      }
      return r.run;
    };
    const auto report = sweep_crash_points(scenario);
    ASSERT_TRUE(report.ok()) << setup.name << ": " << report.error().describe();
    for (const auto& f : report->failures) {
      ADD_FAILURE() << setup.name << ": crash after " << f.crash_after_events
                    << " events: " << f.error.message;
    }
    std::cout << setup.name << ": crash points covered: " << report->points
              << " (suspension points); at-least-once window cases: " << windows
              << ", duplicate deliveries: " << duplicates << " (crash points:";
    for (auto p : window_points) std::cout << " " << p;
    std::cout << ")\n";
    // Every run suspends at least once per model call and per message.
    EXPECT_GE(report->points, 1 + setup.tasks.size()) << setup.name;
    EXPECT_EQ(windows, duplicates) << setup.name << ": every window crash resends exactly once";
    if (setup.verdict == SlotVerdict::delivered) {
      // At least the crash during each target's answer from the messenger.
      EXPECT_GE(windows, 2) << setup.name;
    } else {
      EXPECT_EQ(windows, 0) << setup.name;
    }
    points_total += report->points;
    windows_total += windows;
  }
  std::cout << "crash points covered: " << points_total
            << " (suspension points, all runs); at-least-once window cases: " << windows_total
            << "\n";
  RecordProperty("crash_points", static_cast<int>(points_total));
  RecordProperty("window_cases", windows_total);
  EXPECT_GE(points_total, 25u);
}

// Teeth: the same sweep over a ledger whose directory entries are never made
// durable loses records at power loss, and the witness reports duplicate
// deliveries outside the window.
TEST(GroupCrash, SweepCatchesALedgerThatSkipsDirectoryFsync) {
  const GroupRun& setup = setups()[0];
  const auto report = sweep_crash_points([&](std::optional<std::uint64_t> k) {
    return run_world(setup, {k, std::nullopt, /*drop_dir_fsync=*/true}).run;
  });
  ASSERT_TRUE(report.ok()) << report.error().describe();
  ASSERT_FALSE(report->held());
  bool duplicate_reported = false;
  for (const auto& f : report->failures) {
    duplicate_reported |= f.error.message.find("deliveries") != std::string::npos;
  }
  EXPECT_TRUE(duplicate_reported) << report->failures.front().error.message;
  std::cout << "faulty ledger (no directory fsync): " << report->failures.size() << " of "
            << report->points << " crash points fail\n";
}

TEST(GroupCrash, EveryDiskOperationKeepsInvariantFive) {
  std::uint64_t points_total = 0;
  int windows_total = 0;
  for (const GroupRun& setup : setups()) {
    const RunReport baseline = run_world(setup, {});
    ASSERT_TRUE(baseline.run.verdict.ok()) << baseline.run.verdict.error().message;
    ASSERT_FALSE(baseline.cut);
    ASSERT_GT(baseline.worker_disk_ops, 0u);
    std::uint64_t covered = 0;
    int windows = 0;
    for (std::uint64_t n = 0; n < baseline.worker_disk_ops; ++n) {
      const RunReport r = run_world(setup, {std::nullopt, n});
      EXPECT_TRUE(r.cut) << setup.name << ": fail-stop at disk operation " << n << " never fired";
      if (!r.run.verdict.ok()) {
        ADD_FAILURE() << setup.name << ": fail-stop at disk operation " << n << ": "
                      << r.run.verdict.error().message;
      }
      for (const auto& [target, c] : r.window_cases) windows += c;
      ++covered;
    }
    std::cout << setup.name << ": crash points covered: " << covered
              << " (disk operations); at-least-once window cases: " << windows << "\n";
    EXPECT_GE(covered, 10u) << setup.name;
    points_total += covered;
    windows_total += windows;
  }
  std::cout << "crash points covered: " << points_total
            << " (disk operations, all runs); at-least-once window cases: " << windows_total
            << "\n";
  RecordProperty("disk_points", static_cast<int>(points_total));
  EXPECT_GE(points_total, 60u);
}

}  // namespace
}  // namespace rehearse::sim
