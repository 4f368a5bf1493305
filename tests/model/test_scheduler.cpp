// Goal: the scheduler loop (model/scheduler.hpp) runs jobs on their regular
// grid and carries the pure retry machine's decisions through the durable
// queue, the state store, notifications and logs exactly as docs/semantics.md
// §4, §6 and §9 say: the 004 hourly outage example end to end, per_slot
// budgets, counters that survive a restart in the middle of a retry chain, a
// stalled run re-run once and failed on its second stall, misfires coalesced
// into one late run, a long run delaying another job's slot under concurrency
// 1 (measured), a corrupt store failing closed, an invalid policy never
// retried.
// Method: a simulated world (Simulator + SimClock, SimQueue, StateStore over
// SimDisk, SimServices with a model API defined here whose outages are
// scripted, the simulated Messenger, SimLog). Job runners are small JobRunner
// classes that call that simulated service. The scheduler runs as a simulated
// process; restarts are crashes of that process (power loss on the disk)
// followed by a boot. Checks read the durable state store, the messenger's
// accepted notifications and the trace (the same names everywhere).
#include "model/scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/failure.hpp"
#include "model/job_runner.hpp"
#include "model/retry_policy.hpp"
#include "model/state_store.hpp"
#include "model/status_view.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

constexpr const char* kStateDir = "/srv/state";
constexpr const char* kLedgerDir = "/srv/ledger";
constexpr const char* kOps = "ops-channel";

TimeMs at(const char* iso) {
  auto t = parse_instant(iso);
  REHEARSE_ASSERT(t.ok());
  return *t;
}

// --- the simulated model API -------------------------------------------------

// A model API with scripted outages: during [from, until) every call gets the
// outage's HTTP status; otherwise 200. Each job may take its own time to
// answer (a long generation).
class ModelApi final : public SimService {
 public:
  struct Outage {
    TimeMs from = 0;
    TimeMs until = 0;
    int status = 429;
  };

  const std::string& name() const override { return name_; }

  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override {
    ++calls_[request.target];
    DurationMs latency = 30 * kSecondMs;
    if (auto it = latency_.find(request.target); it != latency_.end()) latency = it->second;
    for (const Outage& o : outages_) {
      if (now_ms >= o.from && now_ms < o.until) {
        ServiceResponse r;
        r.status = o.status;
        r.body = {{"message", o.status == 429 ? "usage limit reached (429)" : "upstream error"}};
        return SimReply{ServiceResult(r), latency};
      }
    }
    ServiceResponse ok;
    ok.status = 200;
    ok.body = {{"text", "done"}};
    return SimReply{ServiceResult(ok), latency};
  }

  void add_outage(TimeMs from, TimeMs until, int status = 429) {
    outages_.push_back({from, until, status});
  }
  void set_latency(const std::string& job, DurationMs latency) { latency_[job] = latency; }
  int calls(const std::string& job) const {
    auto it = calls_.find(job);
    return it == calls_.end() ? 0 : it->second;
  }

 private:
  std::string name_ = "model-api";
  std::vector<Outage> outages_;
  std::map<std::string, DurationMs> latency_;
  std::map<std::string, int> calls_;
};

// The job kind under test: one call to the model API per run, classified by
// its HTTP status (a structured field, never message text).
class ApiRunner final : public JobRunner {
 public:
  explicit ApiRunner(Services& services) : services_(services) {}

  Task<rehearse::RunOutcome> run(RunContext context) override {
    ServiceRequest request;
    request.service = "model-api";
    request.operation = "generate";
    request.target = context.job_id;
    request.headers = {{kHeaderJob, context.job_id},
                       {kHeaderSlot, format_instant(context.slot)},
                       {kHeaderAttempt, std::to_string(context.attempt)}};
    ServiceResult result = co_await services_.call(std::move(request));
    if (result.is_success()) co_return rehearse::RunOutcome::success();
    const FailureInfo info = to_failure_info(result);
    co_return rehearse::RunOutcome::failure(classify(info), info.message);
  }

 private:
  Services& services_;
};

// --- the world ---------------------------------------------------------------

struct JobSpec {
  std::string id;
  std::string cron = "0 * * * *";
  json policy;
};

PolicyOrError policy_of(const JobSpec& spec, const CronSchedule& schedule) {
  return parse_retry_policy(spec.policy, schedule_facts(schedule));
}

json per_job_max2() { return {{"max", 2}, {"backoff_sec", 300}}; }

class World {
 public:
  World(TimeMs start, std::vector<JobSpec> jobs, SchedulerOptions options = {})
      : sim_({.start_ms = start, .seed = 7}),
        disk_(std::make_unique<SimDisk>(&trace_, Rng(3))),
        queue_(&trace_),
        services_(sim_, trace_),
        messenger_(sim_, trace_, MessengerOptions{{kOps}, 100}),
        log_(sim_, trace_),
        runner_(services_),
        specs_(std::move(jobs)),
        options_(std::move(options)) {
    REHEARSE_ASSERT(disk_->make_dirs("/srv").ok());
    bind_to_simulator(*disk_, sim_);
    bind_to_simulator(queue_, sim_, SimQueueBinding{std::nullopt, disk_.get()});
    services_.add(api_);
    process_ = sim_.add_process("scheduler", [this](Simulator& s, ProcessId p) { boot(s, p); });
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  // Tear the process down while the ports its frames refer to still exist.
  ~World() {
    if (sim_.is_up(process_)) sim_.crash(process_);
  }

  void boot(Simulator& s, ProcessId p) {
    auto store = StateStore::open(*disk_, kStateDir);
    if (!store.ok()) return;  // the disk killed the process during open
    StateStore& st = s.emplace_memory<StateStore>(p, std::move(*store));
    DeliveryLedger* ledger = nullptr;
    if (with_ledger_) {
      auto opened = DeliveryLedger::open(*disk_, kLedgerDir);
      REHEARSE_ASSERT(opened.ok());
      ledger = &s.emplace_memory<DeliveryLedger>(p, std::move(*opened));
    }
    std::vector<ScheduledJob> jobs;
    for (const JobSpec& spec : specs_) {
      ScheduledJob job;
      job.id = spec.id;
      auto cron = CronSchedule::parse(spec.cron);
      REHEARSE_ASSERT(cron.ok());
      job.schedule = *cron;
      job.policy = policy_of(spec, job.schedule);
      job.runner = &runner_;
      job.notify_target = kOps;
      jobs.push_back(std::move(job));
    }
    Scheduler& scheduler = s.emplace_memory<Scheduler>(
        p, SchedulerPorts{s.clock(), queue_, st, messenger_, log_, s.rng(), ledger},
        std::move(jobs), options_);
    scheduler_ = &scheduler;
    s.spawn(p, scheduler.run(), "scheduler");
  }

  // The process gets the delivery ledger port (the boot's lost-record check).
  void use_ledger() { with_ledger_ = true; }
  // Records `slot` as delivered and complete in the ledger, as a group run would.
  void ledger_delivered(const std::string& job, TimeMs slot) {
    auto ledger = DeliveryLedger::open(*disk_, kLedgerDir);
    REHEARSE_ASSERT(ledger.ok());
    REHEARSE_ASSERT(ledger->consume_guard(job, slot, slot).ok());
    REHEARSE_ASSERT(ledger->mark_complete(job, slot, SlotVerdict::delivered, slot).ok());
  }
  void start() { sim_.boot(process_); }
  void run_until(TimeMs t) {
    const RunResult r = sim_.run_until(t);
    ASSERT_TRUE(r.ok()) << to_string(r.outcome) << ": " << r.message;
  }
  // A restart: the process dies at `crash_at` and boots again at `boot_at`.
  void restart(TimeMs crash_at, TimeMs boot_at) {
    sim_.schedule_crash(process_, crash_at, boot_at - crash_at);
  }

  JobState stored(const std::string& job) {
    auto store = StateStore::open(*disk_, kStateDir);
    REHEARSE_ASSERT(store.ok());
    auto s = store->read(job);
    REHEARSE_ASSERT(s.ok());
    return *s;
  }

  // Notifications the messenger accepted for a job, in order.
  std::vector<json> notes(const std::string& job) const {
    std::vector<json> out;
    for (const AcceptedMessage& m : messenger_.accepted()) {
      if (m.kind == "notification" && m.message.value("job_id", "") == job) {
        out.push_back(m.message);
      }
    }
    return out;
  }
  std::vector<std::string> note_events(const std::string& job) const {
    std::vector<std::string> out;
    for (const json& n : notes(job)) out.push_back(n.at("event").get<std::string>());
    return out;
  }
  std::vector<TraceEvent> events(const std::string& type, const std::string& job = {}) const {
    std::vector<TraceEvent> out;
    for (const TraceEvent& e : trace_.events()) {
      if (e.type == type && (job.empty() || e.job == job)) out.push_back(e);
    }
    return out;
  }

  Simulator& sim() { return sim_; }
  SimDisk& disk() { return *disk_; }
  SimQueue& queue() { return queue_; }
  ModelApi& api() { return api_; }
  Messenger& messenger() { return messenger_; }
  Trace& trace() { return trace_; }
  Scheduler* scheduler() { return sim_.is_up(process_) ? scheduler_ : nullptr; }
  ProcessId process() const { return process_; }

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
  std::vector<JobSpec> specs_;
  SchedulerOptions options_;
  ProcessId process_ = 0;
  Scheduler* scheduler_ = nullptr;
  bool with_ledger_ = false;
};

// Regular and retry runs that started, as (slot, kind, attempt, start time).
struct Started {
  TimeMs slot;
  std::string kind;
  std::int64_t attempt;
  TimeMs t;
  std::int64_t start_delay_ms;
};
std::vector<Started> starts(const World& w, const std::string& job) {
  std::vector<Started> out;
  for (const TraceEvent& e : w.events("run_started", job)) {
    out.push_back(
        {e.slot.value_or(-1), e.str("kind"), e.num("attempt"), e.t, e.num("start_delay_ms")});
  }
  return out;
}

// --- 004's hourly example ----------------------------------------------------

// Hourly job, per-job form {max 2, backoff 300 s} (per_episode), model API
// rate-limited 10:00-14:00. 10:00 fails (retrying 1/2), the retry fails
// (2/2), the next retry fails (retry_exhausted); 11:00, 12:00, 13:00 run on
// schedule, fail, no accelerated retries; 14:00 succeeds and resets.
TEST(Scheduler, HourlyOutageExampleEndToEnd) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.start();

  // Failure 1 (the 10:00 run answers at 10:00:30): retrying 1/2.
  w.run_until(at("2026-03-02T10:01:00Z"));
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.failure_class, FailureClass::rate_limit);
  EXPECT_EQ(s.retry_count, 1);
  EXPECT_EQ(s.retry_limit, 2);
  EXPECT_EQ(s.next_action, NextAction::retry);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));

  // Failure 2: retrying 2/2, the next retry 5 minutes after it.
  w.run_until(at("2026-03-02T10:07:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retrying);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:11:00Z"));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));

  // Failure 3: the budget is spent.
  w.run_until(at("2026-03-02T10:12:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_action, NextAction::wait_next_run);
  EXPECT_FALSE(s.next_retry_at.has_value());
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(badge(s), "rate_limit 2/2 retry_exhausted");
  // The status view lists it among the exhausted, with its policy.
  const StatusReport report = build_status(
      {{s, policy_of({"digest", "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))}});
  ASSERT_EQ(report.exhausted.size(), 1u);
  EXPECT_EQ(report.exhausted[0].badge, "rate_limit 2/2 retry_exhausted");
  EXPECT_NE(render_text(report).find("policy: per_job max=2 backoff=fixed 5m"), std::string::npos);

  // 11:00-13:00 fail on schedule, without accelerated retries; 14:00 succeeds.
  w.run_until(at("2026-03-02T14:30:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
  EXPECT_FALSE(s.next_retry_at.has_value());
  EXPECT_EQ(s.next_run_at, at("2026-03-02T15:00:00Z"));
  EXPECT_TRUE(s.slots.empty());

  const std::vector<Started> runs = starts(w, "digest");
  std::vector<std::pair<TimeMs, std::string>> seen;
  for (const Started& r : runs) seen.emplace_back(r.t, r.kind);
  const std::vector<std::pair<TimeMs, std::string>> want = {
      {at("2026-03-02T10:00:00Z"), "regular"}, {at("2026-03-02T10:05:30Z"), "retry"},
      {at("2026-03-02T10:11:00Z"), "retry"},   {at("2026-03-02T11:00:00Z"), "regular"},
      {at("2026-03-02T12:00:00Z"), "regular"}, {at("2026-03-02T13:00:00Z"), "regular"},
      {at("2026-03-02T14:00:00Z"), "regular"}};
  EXPECT_EQ(seen, want);
  // Every regular run started exactly at its slot (no start delay).
  for (const Started& r : runs) {
    if (r.kind == "regular") {
      EXPECT_EQ(r.slot, r.t);
      EXPECT_EQ(r.start_delay_ms, 0);
    }
  }

  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted",
                                      "retry_exhausted", "retry_exhausted", "retry_exhausted",
                                      "recovered"}));
  const std::vector<json> notes = w.notes("digest");
  ASSERT_EQ(notes.size(), 7u);
  const std::vector<int> attempts = {1, 2, 2, 2, 2, 2, 2};
  for (std::size_t i = 0; i < notes.size(); ++i) {
    EXPECT_EQ(notes[i].at("attempt").get<int>(), attempts[i]) << i;
    // Fixed fields on every notification.
    for (const char* key : {"event", "job_id", "failure_class", "attempt", "next_action", "at"}) {
      EXPECT_TRUE(notes[i].contains(key)) << key;
    }
  }
  EXPECT_EQ(notes[0].at("next_action"), "retry");
  EXPECT_EQ(notes[0].at("next_retry_at"), "2026-03-02T10:05:30Z");
  EXPECT_EQ(notes[2].at("next_action"), "wait_next_run");
  EXPECT_EQ(notes[6].at("failure_class"), "rate_limit");
  // The log uses the same names (trace events of the same type).
  EXPECT_EQ(w.events("retry_scheduled", "digest").size(), 2u);
  EXPECT_EQ(w.events("retry_exhausted", "digest").size(), 4u);
  EXPECT_EQ(w.events("recovered", "digest").size(), 1u);
  // next_run_at never moved off the hourly grid: every handed-out slot is one.
  for (const TraceEvent& e : w.events("slot_due", "digest")) {
    ASSERT_TRUE(e.slot.has_value());
    EXPECT_EQ(*e.slot % kHourMs, 0);
  }
  EXPECT_TRUE(w.queue().entries().empty());
  EXPECT_TRUE(w.queue().outbox().empty());
}

// A regular slot that comes due while a retry is pending supersedes it
// (per_episode): the pending retry is dropped, the count is kept.
TEST(Scheduler, PerEpisodeRegularSlotSupersedesPendingRetry) {
  // Retries 40 minutes apart: the 10:00 failure's retry (10:40:30) fails
  // again and schedules one for 11:21:00; the 11:00 slot supersedes it.
  World w(at("2026-03-02T09:30:00Z"),
          {{"digest", "0 * * * *", {{"max", 3}, {"backoff_sec", 2400}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T12:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:59:00Z"));
  JobState s = w.stored("digest");
  ASSERT_EQ(s.retry_count, 2);
  ASSERT_EQ(s.next_retry_at, at("2026-03-02T11:21:00Z"));
  w.run_until(at("2026-03-02T11:01:00Z"));
  ASSERT_EQ(w.events("retry_superseded", "digest").size(), 1u);
  // The 11:00 run failed with the episode's count at 2 -> retry 3/3.
  s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 3);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T11:40:30Z"));
  w.run_until(at("2026-03-02T11:30:00Z"));
  // The superseded retry never ran.
  for (const Started& r : starts(w, "digest")) {
    EXPECT_NE(r.t, at("2026-03-02T11:21:00Z"));
  }
}

// --- per_slot ----------------------------------------------------------------

// BullMQ form, per_slot: every slot is its own instance with a full budget
// and stays on its grid; a slot's retries do not touch the next slot's.
TEST(Scheduler, PerSlotEachSlotHasFullBudgetOnItsGrid) {
  World w(at("2026-03-02T09:30:00Z"),
          {{"sync",
            "0 * * * *",
            {{"attempts", 3}, {"backoff", {{"type", "fixed"}, {"delay", "10m"}}}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T11:15:00Z"));
  w.start();
  w.run_until(at("2026-03-02T11:45:00Z"));

  std::vector<std::tuple<TimeMs, TimeMs, std::string, std::int64_t>> seen;
  for (const Started& r : starts(w, "sync")) seen.emplace_back(r.t, r.slot, r.kind, r.attempt);
  const TimeMs s10 = at("2026-03-02T10:00:00Z");
  const TimeMs s11 = at("2026-03-02T11:00:00Z");
  const std::vector<std::tuple<TimeMs, TimeMs, std::string, std::int64_t>> want = {
      {s10, s10, "regular", 1},
      {at("2026-03-02T10:10:30Z"), s10, "retry", 2},
      {at("2026-03-02T10:21:00Z"), s10, "retry", 3},
      {s11, s11, "regular", 1},  // on its grid, budget untouched by 10:00's
      {at("2026-03-02T11:10:30Z"), s11, "retry", 2},
      {at("2026-03-02T11:21:00Z"), s11, "retry", 3}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(w.note_events("sync"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted",
                                      "retry_scheduled", "retry_scheduled", "recovered"}));
  const std::vector<json> notes = w.notes("sync");
  EXPECT_EQ(notes[3].at("attempt"), 1);  // 11:00's first failure: a fresh budget
  EXPECT_EQ(notes[3].at("slot"), "2026-03-02T11:00:00Z");
  const JobState s = w.stored("sync");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T12:00:00Z"));
  EXPECT_TRUE(s.slots.empty());
}

// --- restarts ----------------------------------------------------------------

// The process dies while a retry is pending and comes back before it is due:
// the delayed retry (durable queue) still fires on time and the count
// continues from the store.
TEST(Scheduler, CountersSurviveRestartMidRetryChain) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.restart(at("2026-03-02T10:03:00Z"), at("2026-03-02T10:04:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:04:30Z"));
  ASSERT_EQ(w.sim().boot_count(w.process()), 2u);
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 1);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  w.run_until(at("2026-03-02T10:07:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 2) << "the count continued after the restart";
  w.run_until(at("2026-03-02T10:12:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(runs[1].kind, "retry");
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted"}));
}

// Down past the retry's time: the retry runs late, right after the boot, and
// the count still continues.
TEST(Scheduler, RetryDueWhileDownRunsAfterBootWithCountKept) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.restart(at("2026-03-02T10:03:00Z"), at("2026-03-02T10:20:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:40:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:20:00Z"));
  EXPECT_EQ(runs[1].kind, "retry");
  EXPECT_EQ(runs[1].start_delay_ms, at("2026-03-02T10:20:00Z") - at("2026-03-02T10:05:30Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
}

// The process dies right after a failure's outcome reached the state store
// and before the queue finished the entry (the queue command after the
// intent fails and kills it). The restart replays the intent: the outcome is
// neither lost nor counted twice, and the run is not taken for a stall.
TEST(Scheduler, CrashBetweenOutcomeWriteAndQueueFinishReplaysTheIntent) {
  // Outlives the world: its destructor crashes the worker, which the
  // listener below still sees.
  bool armed = false;
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  bind_to_simulator(w.queue(), w.sim(), SimQueueBinding{2 * kMinuteMs, &w.disk()});
  SimQueue& queue = w.queue();
  const ProcessId process = w.process();
  w.trace().add_listener([&](const TraceEvent& e, std::size_t) {
    if (!armed && e.type == "queue_intent") {
      armed = true;
      queue.fail_stop_after(0, process);  // the next command (finish) dies
    }
  });
  w.start();
  w.run_until(at("2026-03-02T10:04:00Z"));
  ASSERT_TRUE(armed);
  ASSERT_EQ(w.sim().crash_count(w.process()), 1u);
  ASSERT_EQ(w.sim().boot_count(w.process()), 2u);
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 1) << "written once, replayed as a no-op";
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(w.events("intent_replayed", "digest").size(), 1u);
  EXPECT_TRUE(w.events("run_stalled", "digest").empty());
  w.run_until(at("2026-03-02T10:12:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_EQ(runs[2].attempt, 3);
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  // The notification committed before the crash was sent after the replay.
  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted"}));
}

// A crash in the middle of a run: after the restart the run is stalled, runs
// again without consuming an attempt, and completes.
TEST(Scheduler, StalledRunRerunsOnceWithoutConsumingAnAttempt) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T10:00:10Z"), at("2026-03-02T10:00:20Z"));  // mid-call
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::vector<TraceEvent> stalls = w.events("run_stalled", "digest");
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].str("decision"), "rerun");
  EXPECT_EQ(stalls[0].num("stalled_count"), 1);
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].slot, at("2026-03-02T10:00:00Z"));
  EXPECT_EQ(runs[1].kind, "regular");
  EXPECT_EQ(runs[1].attempt, 1) << "the same attempt, no retry consumed";
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:00:20Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
  EXPECT_TRUE(s.slots.empty()) << "the stall count is forgotten once the run ends";
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(w.note_events("digest").empty());
  EXPECT_EQ(w.api().calls("digest"), 2);
}

// The state records a retry as started (next_action retry, no instant) but
// the queue holds nothing for it: the records of its end were lost (in the
// swarm, a journal tail dropped with acknowledged records in it; here the
// store is rewritten by hand while the process is down). The boot re-queues
// it, ready now, the same attempt, and the job settles instead of waiting
// for its next slot.
TEST(Scheduler, AStartedRetryTheQueueNoLongerHoldsRunsAgainAtBoot) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T10:03:00Z"));
  w.restart(at("2026-03-02T10:20:00Z"), at("2026-03-02T10:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:25:00Z"));
  ASSERT_EQ(w.stored("digest").retry_status, RetryStatus::ok);  // retry 1 succeeded
  const TimeMs slot = at("2026-03-02T10:00:00Z");
  {
    auto store = StateStore::open(w.disk(), kStateDir);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store
                    ->update("digest",
                             [&](JobState& s) {
                               s.retry_status = RetryStatus::retrying;
                               s.failure_class = FailureClass::rate_limit;
                               s.retry_count = 1;
                               s.next_action = NextAction::retry;
                               s.next_retry_at.reset();
                               SlotRecord r;
                               r.slot = slot;
                               r.retry_status = RetryStatus::retrying;
                               r.failure_class = FailureClass::rate_limit;
                               r.retry_count = 1;
                               r.next_action = NextAction::retry;
                               s.slots[slot] = r;
                             })
                    .ok());
  }
  w.run_until(at("2026-03-02T10:40:00Z"));
  const std::vector<TraceEvent> restored = w.events("retry_restored", "digest");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0].num("attempt"), 2);
  EXPECT_EQ(restored[0].str("reason"), "started, and its end was lost");
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.back().kind, "retry");
  EXPECT_EQ(runs.back().attempt, 2) << "the same attempt, run again";
  EXPECT_EQ(runs.back().t, at("2026-03-02T10:30:00Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
}

// A second stall of the same run fails it (BullMQ's maxStalledCount 1).
TEST(Scheduler, SecondStallOfTheSameRunFailsIt) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T10:00:10Z"), at("2026-03-02T10:00:20Z"));
  w.restart(at("2026-03-02T10:00:30Z"), at("2026-03-02T10:00:40Z"));  // mid-rerun
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::vector<TraceEvent> stalls = w.events("run_stalled", "digest");
  ASSERT_EQ(stalls.size(), 2u);
  EXPECT_EQ(stalls[0].str("decision"), "rerun");
  EXPECT_EQ(stalls[1].str("decision"), "fail");
  EXPECT_EQ(starts(w, "digest").size(), 2u) << "no third run of the slot";
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::failed);
  EXPECT_EQ(s.failure_class, FailureClass::unknown);
  EXPECT_EQ(s.next_action, NextAction::manual_review);
  EXPECT_EQ(s.last_error, std::string(kStalledError));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent"}));
  // The next slot still runs, and succeeds.
  w.run_until(at("2026-03-02T11:01:00Z"));
  EXPECT_EQ(w.stored("digest").retry_status, RetryStatus::ok);
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent", "recovered"}));
}

// Slots that came due while the process was down coalesce into one late run;
// the lateness and the folded slots are recorded.
TEST(Scheduler, MisfiresWhileDownCoalesceIntoOneLateRun) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T09:50:00Z"), at("2026-03-02T13:20:00Z"));
  w.start();
  w.run_until(at("2026-03-02T13:30:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].slot, at("2026-03-02T10:00:00Z"));
  EXPECT_EQ(runs[0].t, at("2026-03-02T13:20:00Z"));
  EXPECT_EQ(runs[0].start_delay_ms, 3 * kHourMs + 20 * kMinuteMs);
  const std::vector<TraceEvent> misfires = w.events("slot_misfire", "digest");
  ASSERT_EQ(misfires.size(), 1u);
  EXPECT_EQ(misfires[0].num("lateness_ms"), 3 * kHourMs + 20 * kMinuteMs);
  EXPECT_EQ(misfires[0].num("coalesced_count"), 3);
  EXPECT_EQ(misfires[0].data.at("coalesced_slots"),
            json({"2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z", "2026-03-02T13:00:00Z"}));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.misfire_runs, 1);
  EXPECT_EQ(s.coalesced_slots, 3);
  EXPECT_EQ(s.max_lateness_ms, 3 * kHourMs + 20 * kMinuteMs);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T14:00:00Z")) << "back on the grid";
  w.run_until(at("2026-03-02T14:01:00Z"));
  EXPECT_EQ(starts(w, "digest").back().t, at("2026-03-02T14:00:00Z"));
}

// --- concurrency -------------------------------------------------------------

// With concurrency 1 a long run of one job delays another job's slot; the
// delay is measured (run_started.start_delay_ms) while the slot itself is
// handed out on time (no misfire). With concurrency 2 it is not delayed.
TEST(Scheduler, ConcurrencyOneDelaysAnotherJobsSlotAndMeasuresIt) {
  for (int concurrency : {1, 2}) {
    SchedulerOptions options;
    options.concurrency = concurrency;
    World w(at("2026-03-02T09:30:00Z"),
            {{"long", "0 * * * *", per_job_max2()}, {"short", "5 * * * *", per_job_max2()}},
            options);
    w.api().set_latency("long", 20 * kMinuteMs);
    w.start();
    w.run_until(at("2026-03-02T10:30:00Z"));
    const std::vector<Started> runs = starts(w, "short");
    ASSERT_EQ(runs.size(), 1u);
    const std::vector<TraceEvent> due = w.events("slot_due", "short");
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].t, at("2026-03-02T10:05:00Z")) << "handed out at its instant";
    if (concurrency == 1) {
      EXPECT_EQ(runs[0].t, at("2026-03-02T10:20:00Z"));
      EXPECT_EQ(runs[0].start_delay_ms, 15 * kMinuteMs);
    } else {
      EXPECT_EQ(runs[0].t, at("2026-03-02T10:05:00Z"));
      EXPECT_EQ(runs[0].start_delay_ms, 0);
    }
    EXPECT_EQ(w.stored("short").misfire_runs, 0);
    EXPECT_EQ(w.stored("short").next_run_at, at("2026-03-02T11:05:00Z"));
  }
}

// --- fail closed -------------------------------------------------------------

// A corrupt store: regular runs continue, no retry is scheduled or run, the
// corrupt files are never replaced, and state_corrupt is notified once per
// boot.
TEST(Scheduler, CorruptStoreFailsClosed) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T11:00:00Z"), at("2026-03-02T13:00:00Z"));
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T10:40:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:35:00Z"));  // down, after a successful 10:00 run
  const std::string snapshot = std::string(kStateDir) + "/" + StateStore::kSnapshotName;
  ASSERT_TRUE(w.disk().put_durable(snapshot, "{not json").ok());
  const auto journal =
      w.disk().durable_content(std::string(kStateDir) + "/" + StateStore::kJournalName);
  w.run_until(at("2026-03-02T12:30:00Z"));

  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  EXPECT_FALSE(w.scheduler()->halted());
  // Regular runs at 11:00 and 12:00, no retries.
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  // One state_corrupt for the boot, then failed_permanent (fail closed).
  std::vector<std::string> events;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    events.push_back(m.message.value("event", ""));
  }
  EXPECT_EQ(events,
            (std::vector<std::string>{"state_corrupt", "failed_permanent", "failed_permanent"}));
  EXPECT_NE(w.notes("digest").front().value("detail", "").find("state store corrupt"),
            std::string::npos);
  // Nothing replaced the corrupt file; the bad bytes are kept.
  EXPECT_EQ(w.disk().durable_content(snapshot), std::optional<std::string>("{not json"));
  EXPECT_EQ(w.disk().live_content(snapshot), std::optional<std::string>("{not json"));
  EXPECT_EQ(w.disk().durable_content(std::string(kStateDir) + "/" + StateStore::kJournalName),
            journal);
  auto store = StateStore::open(w.disk(), kStateDir);
  ASSERT_TRUE(store.ok());
  const StoreHealth health = store->health();
  ASSERT_FALSE(health.ok());
  ASSERT_TRUE(health.error.has_value());
  // Visible in the status view, over what this boot knows.
  std::vector<StatusJob> jobs;
  for (const auto& [id, st] : w.scheduler()->states()) {
    jobs.push_back(
        {st, policy_of({id, "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))});
  }
  const StatusReport report = build_status(jobs, health.error->describe());
  EXPECT_EQ(render_text(report).rfind("state_corrupt:", 0), 0u);
  EXPECT_EQ(to_json(report).at("state_corrupt"), health.error->describe());
  // Another restart: notified once more (once per boot), still no retry.
  w.restart(at("2026-03-02T12:30:00Z"), at("2026-03-02T12:31:00Z"));
  w.run_until(at("2026-03-02T12:45:00Z"));
  std::int64_t corrupt_notes = 0;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    corrupt_notes += m.message.value("event", "") == "state_corrupt" ? 1 : 0;
  }
  EXPECT_EQ(corrupt_notes, 2);
  for (const Started& r : starts(w, "digest")) EXPECT_EQ(r.kind, "regular");
}

// The store is damaged while the worker runs and the next
// slot's hand-out is the write that finds it corrupt. The slot is handed out
// once (next_run_at moves on in memory; before the fix the loop handed it out
// again), its failure is not retried, state_corrupt is notified once, and
// later slots run on schedule.
TEST(Scheduler, AHandOutThatFindsTheStoreCorruptHandsTheSlotOutOnce) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:59:30Z"), at("2026-03-02T11:10:00Z"), 503);
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  ASSERT_TRUE(w.disk().put_durable(journal, "garbage\n").ok());
  w.run_until(at("2026-03-02T13:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  std::vector<TimeMs> handed;
  for (const TraceEvent& e : w.events("slot_due", "digest")) handed.push_back(*e.slot);
  EXPECT_EQ(handed, (std::vector<TimeMs>{at("2026-03-02T10:00:00Z"), at("2026-03-02T11:00:00Z"),
                                         at("2026-03-02T12:00:00Z"), at("2026-03-02T13:00:00Z")}));
  EXPECT_EQ(w.scheduler()->states().at("digest").next_run_at, at("2026-03-02T14:00:00Z"));
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>(4, "regular")));
  std::vector<std::string> events;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    events.push_back(m.message.value("event", ""));
  }
  EXPECT_EQ(events, (std::vector<std::string>{"state_corrupt", "failed_permanent", "recovered"}));
  EXPECT_EQ(w.disk().live_content(journal), std::optional<std::string>("garbage\n"));
}

// A retry queued before the damage. It passes the check
// when taken (nothing has read the store since), and the write of its start
// is what finds the store corrupt: it is checked again and dropped, visibly
// (retry_dropped, the status view), never run against the untrusted counter.
TEST(Scheduler, ARetryQueuedBeforeTheStoreIsDamagedIsDroppedVisibly) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:59:00Z"), at("2026-03-02T11:10:00Z"), 503);
  w.start();
  w.run_until(at("2026-03-02T11:02:00Z"));  // 11:00 failed, a retry waits for 11:05:30
  ASSERT_EQ(w.note_events("digest"), (std::vector<std::string>{"retry_scheduled"}));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  ASSERT_TRUE(w.disk().put_durable(journal, "garbage\n").ok());
  w.run_until(at("2026-03-02T12:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  const auto dropped = w.events("retry_dropped", "digest");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].slot, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(dropped[0].num("attempt"), 2);
  const StatusNotices& notices = w.scheduler()->notices();
  ASSERT_EQ(notices.dropped_retries.size(), 1u);
  EXPECT_EQ(notices.dropped_retries[0].job_id, "digest");
  EXPECT_EQ(notices.dropped_retries[0].slot, at("2026-03-02T11:00:00Z"));
  // The in-memory state no longer shows the retry pending.
  const JobState& s = w.scheduler()->states().at("digest");
  for (const auto& [slot, record] : s.slots) EXPECT_NE(record.next_action, NextAction::retry);
  std::vector<StatusJob> jobs{
      {s, policy_of({"digest", "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))}};
  const StatusReport report = build_status(jobs, std::string("corrupt"), notices);
  const std::string text = render_text(report);
  EXPECT_NE(text.find("retries dropped (1):\n  digest  slot 2026-03-02T11:00:00Z  attempt 2"),
            std::string::npos)
      << text;
  EXPECT_EQ(to_json(report).at("dropped_retries").size(), 1u);
  std::int64_t corrupt_notes = 0;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    corrupt_notes += m.message.value("event", "") == "state_corrupt" ? 1 : 0;
  }
  EXPECT_EQ(corrupt_notes, 1);
}

// The delivery ledger records a slot only after its
// hand-out was written to the state, so a ledger slot past the state's
// last_slot proves lost records, even when the journal looks whole. The boot
// then fails closed (state_records_lost, state_corrupt, schedules from now,
// nothing written); a fresh start (no state files: an operator's reset) is
// not compared.
TEST(Scheduler, ALedgerSlotTheStateDoesNotKnowProvesLostRecordsAtBoot) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.use_ledger();
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T11:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:45:00Z"));  // 10:00 ran; down until 11:30
  ASSERT_EQ(w.stored("digest").last_slot, at("2026-03-02T10:00:00Z"));
  // As if 11:00 had been handed out and delivered, and the record of its
  // hand-out then cut from the end of the journal.
  w.ledger_delivered("digest", at("2026-03-02T11:00:00Z"));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  const auto before = w.disk().live_content(journal);
  w.run_until(at("2026-03-02T12:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  const auto lost = w.events("state_records_lost", "digest");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].str("ledger_slot"), "2026-03-02T11:00:00Z");
  EXPECT_EQ(lost[0].str("state_last_slot"), "2026-03-02T10:00:00Z");
  // From the boot: the missed 11:00 slot is not run late, 12:00 runs.
  std::vector<TimeMs> handed;
  for (const TraceEvent& e : w.events("slot_due", "digest")) handed.push_back(*e.slot);
  EXPECT_EQ(handed, (std::vector<TimeMs>{at("2026-03-02T10:00:00Z"), at("2026-03-02T12:00:00Z")}));
  EXPECT_EQ(w.disk().live_content(journal), before);  // nothing written
}

TEST(Scheduler, AFreshStartIsNotComparedWithTheLedger) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.use_ledger();
  w.ledger_delivered("digest", at("2026-03-02T09:00:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_FALSE(w.scheduler()->state_corrupt());
  EXPECT_TRUE(w.events("state_records_lost").empty());
  EXPECT_EQ(w.stored("digest").last_slot, at("2026-03-02T10:00:00Z"));
}

// An invalid policy: the job runs on its schedule, is never retried, and
// policy_invalid is notified once (not again after a restart).
TEST(Scheduler, InvalidPolicyRunsOnScheduleNeverRetried) {
  World w(at("2026-03-02T09:30:00Z"),
          {{"legacy", "0 * * * *", {{"max", -1}, {"backoff_sec", 300}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T12:00:00Z"));
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T10:31:00Z"));
  w.start();
  w.run_until(at("2026-03-02T12:30:00Z"));
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "legacy")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  EXPECT_EQ(w.note_events("legacy"), (std::vector<std::string>{"policy_invalid", "failed_permanent",
                                                               "failed_permanent", "recovered"}));
  const JobState s = w.stored("legacy");
  EXPECT_FALSE(s.policy_error.empty());
  EXPECT_EQ(s.retry_limit, 0);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T13:00:00Z"));
}

// A non-retryable class is not retried: failed, manual_review.
TEST(Scheduler, NonRetryableClassIsNotRetried) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T10:30:00Z"), 401);
  w.start();
  w.run_until(at("2026-03-02T10:45:00Z"));
  EXPECT_EQ(starts(w, "digest").size(), 1u);
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::failed);
  EXPECT_EQ(s.failure_class, FailureClass::auth);
  EXPECT_EQ(s.next_action, NextAction::manual_review);
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent"}));
}

// A schedule that cannot give a next slot (past year 9999) stops that job
// once and loudly; the loop does not spin on it and other jobs go on.
TEST(Scheduler, ScheduleErrorStopsOnlyThatJobWithoutSpinning) {
  World w(at("9999-12-31T20:30:00Z"),
          {{"yearly", "@yearly", per_job_max2()}, {"hourly", "0 * * * *", per_job_max2()}});
  w.start();
  w.run_until(at("9999-12-31T22:30:00Z"));  // asserts the run ended normally
  const std::vector<TraceEvent> errors = w.events("schedule_error", "yearly");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(starts(w, "yearly").empty());
  EXPECT_EQ(starts(w, "hourly").size(), 2u);
  EXPECT_LT(w.sim().events_executed(), 200u);
}

// The same seed gives a byte-identical trace (determinism, invariant 10).
TEST(Scheduler, SameSeedSameTrace) {
  auto run_once = [] {
    World w(at("2026-03-02T09:30:00Z"),
            {{"digest", "0 * * * *", per_job_max2()},
             {"sync",
              "*/20 * * * *",
              {{"attempts", 3},
               {"backoff", {{"type", "exponential"}, {"delay", "2m"}, {"jitter", 0.5}}}}}});
    w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T11:00:00Z"), 503);
    w.restart(at("2026-03-02T10:10:10Z"), at("2026-03-02T10:12:00Z"));
    w.start();
    w.run_until(at("2026-03-02T12:00:00Z"));
    return std::make_pair(w.trace().hash(), w.trace().size());
  };
  const auto a = run_once();
  const auto b = run_once();
  EXPECT_EQ(a, b);
  EXPECT_GT(a.second, 50u);
}

}  // namespace
}  // namespace rehearse::sim
