// Goal: the scheduler's order of durable steps (docs/scheduler.md) is safe
// wherever the worker process dies: at every suspension point a run reaches,
// and between any two durable steps (every state-store disk operation and
// every queue command). After the crash the process reboots, the run goes on
// to its end, and the durable state must be one the semantics allow:
// counters never reset, retries stay within each budget, next_run_at stays on
// the schedule's grid, no regular slot is lost, every expected notification
// was sent at least once, and nothing is left in the queue or the outbox.
// Method: one deterministic world (Simulator, SimQueue, StateStore over
// SimDisk with power loss on a crash, SimServices with a scripted model API,
// Messenger, SimLog) with two jobs whose retry chains overlap under
// concurrency 1: a per_episode hourly job and a per_slot job. Three sweeps:
// (1) sweep_crash_points crashes the process after every event index k of the
// baseline; (2) SimDisk::fail_stop_after(k) kills it at its k-th disk
// operation; (3) SimQueue::fail_stop_after(k) at its k-th queue command. Each
// crashed run reboots two minutes later. One judge checks every end state
// from the trace, the messenger and the store. The number of points covered
// is printed, recorded and asserted.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/failure.hpp"
#include "model/job_runner.hpp"
#include "model/retry_policy.hpp"
#include "model/scheduler.hpp"
#include "model/state_store.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/support/api_runner.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

constexpr const char* kStateDir = "/srv/state";
constexpr const char* kOps = "ops-channel";
constexpr DurationMs kRebootAfterMs = 2 * kMinuteMs;

TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

const TimeMs kStart = at("2026-03-02T09:58:00Z");
// Past the 11:00 run plus a reboot delay, before the next slot of either job.
const TimeMs kEnd = at("2026-03-02T11:12:00Z");

// A model API with an outage per job (HTTP 429 during [from, until)).
class ModelApi final : public SimService {
 public:
  const std::string& name() const override { return name_; }
  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override {
    ServiceResponse r;
    r.status = 200;
    auto it = outages_.find(request.target);
    if (it != outages_.end() && now_ms >= it->second.first && now_ms < it->second.second) {
      r.status = 429;
      r.body = {{"message", "usage limit reached"}};
    }
    return SimReply{ServiceResult(r), 30 * kSecondMs};
  }
  void add_outage(const std::string& job, TimeMs from, TimeMs until) {
    outages_[job] = {from, until};
  }

 private:
  std::string name_ = "model-api";
  std::map<std::string, std::pair<TimeMs, TimeMs>> outages_;
};

using testsupport::ApiRunner;

struct JobSpec {
  std::string id;
  std::string cron;
  json policy;
  int max_retries;
  TimeMs grid_offset_ms;  // slots are whole hours plus this
};

const std::vector<JobSpec>& job_specs() {
  static const std::vector<JobSpec> specs = {
      // per_episode (per-job form): 10:00 fails, retry 1 fails, retry 2 succeeds.
      {"digest", "0 * * * *", {{"max", 2}, {"backoff_sec", 300}}, 2, 0},
      // per_slot (BullMQ form): 10:30 fails, retry 1 fails, retry 2 succeeds.
      {"sync",
       "30 * * * *",
       {{"attempts", 3}, {"backoff", {{"type", "fixed"}, {"delay", "10m"}}}},
       2,
       30 * kMinuteMs},
  };
  return specs;
}

class World {
 public:
  World()
      : sim_({.start_ms = kStart, .seed = 11}),
        disk_(std::make_unique<SimDisk>(&trace_, Rng(5))),
        queue_(&trace_),
        services_(sim_, trace_),
        messenger_(sim_, trace_, MessengerOptions{{kOps}, 100}),
        log_(sim_, trace_),
        runner_(services_) {
    REHEARSE_ASSERT(disk_->make_dirs("/srv").ok());
    bind_to_simulator(*disk_, sim_, SimDiskBinding{ProcessCrashEffect::power_loss, kRebootAfterMs});
    bind_to_simulator(queue_, sim_, SimQueueBinding{kRebootAfterMs, disk_.get()});
    api_.add_outage("digest", at("2026-03-02T10:00:00Z"), at("2026-03-02T10:10:00Z"));
    api_.add_outage("sync", at("2026-03-02T10:30:00Z"), at("2026-03-02T10:45:00Z"));
    services_.add(api_);
    process_ = sim_.add_process("scheduler", [this](Simulator& s, ProcessId p) { boot(s, p); });
    sim_.boot(process_);  // up before the first event, so crash point 0 cuts it
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World() {
    if (sim_.is_up(process_)) sim_.crash(process_);
  }

  void boot(Simulator& s, ProcessId p) {
    auto store = StateStore::open(*disk_, kStateDir);
    if (!store.ok()) return;  // a disk fault killed the process in open
    StateStore& st = s.emplace_memory<StateStore>(p, std::move(*store));
    std::vector<ScheduledJob> jobs;
    for (const JobSpec& spec : job_specs()) {
      ScheduledJob job;
      job.id = spec.id;
      auto cron = CronSchedule::parse(spec.cron);
      REHEARSE_ASSERT(cron.ok());
      job.schedule = *cron;
      job.policy = parse_retry_policy(spec.policy, schedule_facts(job.schedule));
      REHEARSE_ASSERT(job.policy.ok());
      job.runner = &runner_;
      job.notify_target = kOps;
      jobs.push_back(std::move(job));
    }
    SchedulerOptions options;
    options.concurrency = 1;
    options.start_ms = kStart;
    Scheduler& scheduler = s.emplace_memory<Scheduler>(
        p, SchedulerPorts{s.clock(), queue_, st, messenger_, log_, s.rng()}, std::move(jobs),
        options);
    scheduler_ = &scheduler;
    s.spawn(p, scheduler.run(), "scheduler");
  }

  Simulator& sim() { return sim_; }
  SimDisk& disk() { return *disk_; }
  SimQueue& queue() { return queue_; }
  const Trace& trace() const { return trace_; }
  const Messenger& messenger() const { return messenger_; }
  ProcessId process() const { return process_; }
  const Scheduler* scheduler() const { return sim_.is_up(process_) ? scheduler_ : nullptr; }

 private:
  Trace trace_;
  Simulator sim_;
  std::unique_ptr<SimDisk> disk_;
  SimQueue queue_;
  SimServices services_;
  Messenger messenger_;
  SimLog log_;
  ModelApi api_;
  ApiRunner runner_;
  ProcessId process_ = 0;
  Scheduler* scheduler_ = nullptr;
};

Error fail(std::string message) { return make_error(ErrorCode::internal, std::move(message)); }

// The judge: what the semantics allow at the end, from the trace, the
// messenger and the durable store. `exactly_once_success` is false where a
// crash may fall between a run's end and its intent (a synchronous fail-stop
// there): the run is then re-run as stalled (BullMQ's at-least-once), and
// the runner's own guards make that harmless.
Status judge(World& w, bool exactly_once_success) {
  const RunResult r = w.sim().run_until(kEnd);
  if (!r.ok()) return fail(fmt::format("run ended {}: {}", to_string(r.outcome), r.message));
  const Scheduler* scheduler = w.scheduler();
  if (scheduler == nullptr) return fail("the scheduler process is down at the end");
  if (!scheduler->booted() || scheduler->halted()) {
    return fail("the scheduler is not running at the end" +
                (scheduler->halt_error() ? ": " + scheduler->halt_error()->describe() : ""));
  }
  if (!w.queue().entries().empty()) {
    return fail(fmt::format("{} entries left in the queue", w.queue().entries().size()));
  }
  if (!w.queue().outbox().empty()) return fail("notifications left unsent in the outbox");

  auto store = StateStore::open(w.disk(), kStateDir);
  if (!store.ok() || !store->health().ok()) return fail("the store cannot be opened or is corrupt");
  for (const JobSpec& spec : job_specs()) {
    auto s = store->read(spec.id);
    if (!s.ok()) return fail("read " + spec.id);
    // Counters reset only by the success that ends the chain.
    if (s->retry_status != RetryStatus::ok || s->retry_count != 0 || !s->slots.empty()) {
      return fail(fmt::format("{} ends as {} (want ok 0/.. without records)", spec.id, badge(*s)));
    }
    // next_run_at: the grid's next slot after the end, never moved.
    const TimeMs next = kEnd - kEnd % kHourMs + spec.grid_offset_ms +
                        (kEnd % kHourMs >= spec.grid_offset_ms ? kHourMs : 0);
    if (s->next_run_at != next) {
      return fail(fmt::format("{} next_run_at {} (want {})", spec.id,
                              s->next_run_at ? format_instant(*s->next_run_at) : "none",
                              format_instant(next)));
    }
  }

  for (const JobSpec& spec : job_specs()) {
    // Every handed-out slot is on the grid; no grid slot in the window is lost.
    std::set<TimeMs> handed;
    std::map<TimeMs, int> successes;
    std::map<TimeMs, std::set<std::int64_t>> retry_attempts;
    std::vector<std::int64_t> scheduled_attempts;
    for (const TraceEvent& e : w.trace().events()) {
      if (e.job != spec.id) continue;
      if (e.type == "slot_due") {
        if (!e.slot || (*e.slot - spec.grid_offset_ms) % kHourMs != 0) {
          return fail(spec.id + ": a slot off the grid was handed out");
        }
        handed.insert(*e.slot);
      } else if (e.type == "run_finished" && e.str("outcome") == "success" && e.slot) {
        successes[*e.slot] += 1;
      } else if (e.type == "run_started" && e.str("kind") == "retry" && e.slot) {
        retry_attempts[*e.slot].insert(e.num("attempt"));
      } else if (e.type == "retry_scheduled") {
        scheduled_attempts.push_back(e.num("attempt"));
      } else if (e.type == "recovered") {
        scheduled_attempts.push_back(0);  // the chain ends: a new one starts at 1
      }
    }
    for (TimeMs slot = kStart - kStart % kHourMs + spec.grid_offset_ms; slot <= kEnd;
         slot += kHourMs) {
      if (slot < kStart) continue;
      if (handed.count(slot) == 0) {
        return fail(fmt::format("{}: slot {} was never handed out", spec.id, format_instant(slot)));
      }
      const int n = successes[slot];
      if (n == 0 || (exactly_once_success && n != 1)) {
        return fail(
            fmt::format("{}: slot {} succeeded {} times", spec.id, format_instant(slot), n));
      }
    }
    // Retries within budget: attempts 2..max+1 only.
    for (const auto& [slot, attempts] : retry_attempts) {
      for (std::int64_t a : attempts) {
        if (a < 2 || a > spec.max_retries + 1) {
          return fail(fmt::format("{}: retry attempt {} of slot {} beyond the budget", spec.id, a,
                                  format_instant(slot)));
        }
      }
    }
    // Counters never reset inside a chain: the retry numbers only grow (a
    // repeat is a re-sent notification after a crash, allowed).
    std::int64_t last = 0;
    for (std::int64_t a : scheduled_attempts) {
      if (a != 0 && a < last) {
        return fail(fmt::format("{}: retry_scheduled attempt {} after {} (a counter reset)",
                                spec.id, a, last));
      }
      last = a;
    }
    // Every expected notification reached the messenger at least once.
    std::set<std::tuple<std::string, std::int64_t>> seen;
    for (const AcceptedMessage& m : w.messenger().accepted()) {
      if (m.message.value("job_id", "") != spec.id) continue;
      seen.emplace(m.message.value("event", ""), m.message.value("attempt", std::int64_t{-1}));
    }
    const std::set<std::tuple<std::string, std::int64_t>> want = {
        {"retry_scheduled", 1}, {"retry_scheduled", 2}, {"recovered", 2}};
    if (seen != want) {
      std::string got;
      for (const auto& [event, attempt] : seen) got += fmt::format(" {}/{}", event, attempt);
      return fail(fmt::format("{}: notifications{} (want retry_scheduled 1, 2 and recovered 2)",
                              spec.id, got));
    }
  }
  return {};
}

CrashSweepRun run_with_crash(std::optional<std::uint64_t> crash_after_events) {
  World w;
  if (crash_after_events) {
    w.sim().plan_crash(CrashPlan{w.process(), *crash_after_events, kRebootAfterMs});
  }
  CrashSweepRun run;
  run.verdict = judge(w, /*exactly_once_success=*/true);
  run.events_executed = w.sim().events_executed();
  run.crash_fired = w.sim().crash_plan_fired();
  return run;
}

std::string describe_failures(const std::vector<CrashSweepFailure>& failures) {
  std::string out;
  for (std::size_t i = 0; i < failures.size() && i < 10; ++i) {
    out += fmt::format("\n  point {}: {}", failures[i].crash_after_events,
                       failures[i].error.describe());
  }
  return out;
}

TEST(SchedulerCrash, BaselineHoldsWithoutCrash) {
  World w;
  const Status verdict = judge(w, true);
  ASSERT_TRUE(verdict.ok()) << verdict.error().describe();
  EXPECT_EQ(w.sim().boot_count(w.process()), 1u);
}

// (1) Crash at every suspension point the baseline reaches (every event).
TEST(SchedulerCrash, CrashAtEverySuspensionPoint) {
  auto report = sweep_crash_points(run_with_crash, 20'000);
  ASSERT_TRUE(report.ok()) << report.error().describe();
  std::cout << "crash points covered: " << report->points << "\n";
  RecordProperty("crash_points", static_cast<int>(report->points));
  // The baseline is about 60 events; far fewer means the scenario stopped
  // reaching the runs it is meant to cut.
  EXPECT_GT(report->points, 40u);
  EXPECT_TRUE(report->held()) << report->failures.size() << " failing points"
                              << describe_failures(report->failures);
}

// (2) and (3): a fail-stop at the k-th disk operation or queue command of
// the scheduler process, for every k the baseline performs.
enum class FailStopTarget { disk, queue };

std::uint64_t baseline_operations(FailStopTarget target) {
  World w;
  // The boot in World's constructor opens the store before a sweep can arm
  // its fail-stop; the judge opens it again after the run. Neither counts.
  const auto count = [&w, target] {
    return target == FailStopTarget::disk ? w.disk().operations() : w.queue().operations();
  };
  const std::uint64_t before = count();
  const RunResult r = w.sim().run_until(kEnd);
  REHEARSE_ASSERT(r.ok());
  return count() - before;
}

void sweep_fail_stops(FailStopTarget target, const char* name) {
  const std::uint64_t operations = baseline_operations(target);
  std::vector<CrashSweepFailure> failures;
  std::uint64_t fired = 0;
  for (std::uint64_t k = 0; k < operations; ++k) {
    World w;
    if (target == FailStopTarget::disk) {
      w.disk().fail_stop_after(k, w.process());
    } else {
      w.queue().fail_stop_after(k, w.process());
    }
    const Status verdict = judge(w, /*exactly_once_success=*/false);
    const bool did_fire = target == FailStopTarget::disk ? w.disk().counters().fail_stops > 0
                                                         : w.queue().counters().fail_stops > 0;
    if (!did_fire) {
      failures.push_back({k, fail("the fail-stop did not fire (the run diverged)")});
      continue;
    }
    ++fired;
    if (w.sim().crash_count(w.process()) == 0) {
      failures.push_back({k, fail("the process was not crashed after its fail-stop")});
    } else if (!verdict.ok()) {
      failures.push_back({k, verdict.error()});
    }
  }
  std::cout << name << " fail-stop points covered: " << fired << " of " << operations << "\n";
  ::testing::Test::RecordProperty(std::string(name) + "_fail_stop_points", static_cast<int>(fired));
  EXPECT_GT(fired, 40u);  // about 90 disk operations and 50 queue commands
  EXPECT_TRUE(failures.empty()) << failures.size() << " failing points"
                                << describe_failures(failures);
}

TEST(SchedulerCrash, FailStopAtEveryDiskOperation) {
  sweep_fail_stops(FailStopTarget::disk, "disk");
}

TEST(SchedulerCrash, FailStopAtEveryQueueCommand) {
  sweep_fail_stops(FailStopTarget::queue, "queue");
}

}  // namespace
}  // namespace rehearse::sim
