// Shared fixtures of the scheduler tests (tests/model/test_scheduler*.cpp): a
// simulated world (Simulator + SimClock, SimQueue, StateStore over SimDisk,
// SimServices with a model API defined here whose outages are scripted, the
// simulated Messenger, SimLog) with the scheduler as a simulated process, the
// job runners that call that model API, and the readers of the trace and the
// store the checks use. Inline: every test file of the binary includes it.
#pragma once

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
#include "model/scheduler.hpp"
#include "model/state_store.hpp"
#include "model/status_view.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/support/api_runner.hpp"

namespace rehearse::sim::scheduler_test {

using nlohmann::json;

inline constexpr const char* kStateDir = "/srv/state";
inline constexpr const char* kLedgerDir = "/srv/ledger";
inline constexpr const char* kOps = "ops-channel";

inline TimeMs at(const char* iso) {
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

// The job kind under test (tests/support/api_runner.hpp).
using testsupport::ApiRunner;

// --- the world ---------------------------------------------------------------

struct JobSpec {
  std::string id;
  std::string cron = "0 * * * *";
  json policy;
};

inline PolicyOrError policy_of(const JobSpec& spec, const CronSchedule& schedule) {
  return parse_retry_policy(spec.policy, schedule_facts(schedule));
}

inline json per_job_max2() { return {{"max", 2}, {"backoff_sec", 300}}; }

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
inline std::vector<Started> starts(const World& w, const std::string& job) {
  std::vector<Started> out;
  for (const TraceEvent& e : w.events("run_started", job)) {
    out.push_back(
        {e.slot.value_or(-1), e.str("kind"), e.num("attempt"), e.t, e.num("start_delay_ms")});
  }
  return out;
}

}  // namespace rehearse::sim::scheduler_test
