// Shared fixtures of the group job tests (tests/model/test_group_*.cpp): the
// simulated world one group job lives in (Simulator, SimServices with the
// ModelApi service, the Messenger, SimLog into a Trace, the DeliveryLedger over
// the simulated disk bound to the simulator), the weekly job's configuration
// and the ledger openers. Inline: every test file of the binary includes it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "model/delivery_ledger.hpp"
#include "model/group_job.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::group_test {

using sim::Messenger;
using sim::ModelApi;
using sim::ModelOutput;

inline const TimeMs kSlot = *parse_instant("2026-12-04T17:00:00Z");  // a Friday, 0 17 * * 5
inline constexpr DurationMs kModelLatencyMs = 100;
inline constexpr DurationMs kMessengerLatencyMs = 50;
inline const std::vector<std::string> kTargets = {"team-chat", "ops-mail"};

inline DeliveryLedger open_ledger(Disk& disk, const std::string& dir) {
  auto ledger = DeliveryLedger::open(disk, dir);
  REHEARSE_ASSERT(ledger.ok());
  return std::move(ledger).value();
}

inline DeliveryLedger bound_ledger(sim::SimDisk& disk, sim::Simulator& simulator) {
  sim::bind_to_simulator(disk, simulator);
  return open_ledger(disk, "/ledger");
}

// Coroutines of the fixtures are defined in group_job_fixtures.cpp, not inline here:
// clang 14 under ASan cannot emit a coroutine with vague (inline) linkage
// ("Cannot represent a difference across sections").
Task<void> drive(JobRunner& job, RunContext context, std::optional<RunOutcome>& out);

// The simulated world one group job lives in.
struct World {
  explicit World(std::uint64_t seed = 1)
      : sim({.start_ms = kSlot, .seed = seed}),
        model(sim.rng(), {.latency_ms = kModelLatencyMs, .timeout_ms = 30 * kSecondMs}),
        messenger(sim, trace, {kTargets, kMessengerLatencyMs}),
        disk(&trace, sim.rng().derive("disk")),
        ledger(bound_ledger(disk, sim)) {
    services.add(model);
    worker = sim.add_process("worker", [](sim::Simulator&, sim::ProcessId) {});
    sim.boot(worker);
  }

  GroupJob make_job(GroupJobConfig config) {
    return GroupJob(sim.clock(), services, messenger, log, ledger, std::move(config));
  }

  // Runs one attempt of kSlot starting at `at_ms` (not before now) to the end.
  RunOutcome run_at(GroupJob& job, TimeMs at_ms, int attempt) {
    if (at_ms > sim.now()) {
      const auto r = sim.run_until(at_ms);
      REHEARSE_ASSERT(r.ok());
    }
    std::optional<RunOutcome> out;
    sim.spawn(worker, drive(job, RunContext{job.config().job_id, kSlot, attempt, attempt > 1}, out),
              "group-run");
    const auto r = sim.run();
    REHEARSE_ASSERT(r.ok());
    REHEARSE_ASSERT(out.has_value());
    return *out;
  }
  RunOutcome run_now(GroupJob& job, int attempt = 1) { return run_at(job, sim.now(), attempt); }

  DeliverySlot record(const std::string& job_id = "weekly") {
    auto r = ledger.read(job_id, kSlot);
    REHEARSE_ASSERT(r.ok());
    return *r;
  }

  std::vector<sim::TraceEvent> events(std::string_view type) const {
    std::vector<sim::TraceEvent> out;
    for (const auto& e : trace.events()) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }

  sim::Simulator sim;
  sim::Trace trace;
  sim::SimServices services{sim, trace};
  sim::SimLog log{sim, trace};
  ModelApi model;
  Messenger messenger;
  sim::SimDisk disk;
  DeliveryLedger ledger;
  sim::ProcessId worker = 0;
};

inline GroupJobConfig weekly_config(std::vector<std::string> tasks) {
  GroupJobConfig c;
  c.job_id = "weekly";
  for (auto& t : tasks) c.tasks.push_back({std::move(t), 1});
  c.targets = kTargets;
  return c;
}

}  // namespace rehearse::group_test
