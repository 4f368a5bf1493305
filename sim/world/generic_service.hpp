// GenericService: a service the scenario declares under a name of the user's
// own ("billing-api", "ledger-api"), called by `call` jobs (model/call_job.hpp;
// docs/scenario-format.md). A SimService plugged into SimServices under that
// name, so the world routes requests to it by name like any built-in one.
//
// Healthy, it answers every request 200 {"ok": true, "method", "path"} after
// its latency: method and path label the call, they select nothing.
//
// Faults (the same vocabulary as the built-in services), each over a window
// [from, until), checked in the order added, the first hit answers:
//   quota      429 "quota exhausted" naming the reset instant, after the latency;
//   http_error the given status at a rate, after the latency;
//   timeout    a transport timeout at a rate, after the service's timeout;
//   network    a transport error (refused, reset, dns, broken pipe) at a rate,
//              after the latency.
// Capacity (sim/world/service_capacity.hpp), when declared, is judged after
// the faults: a request a fault answers never reaches the gate. Beyond the
// rate limit it is refused with the declared status ("rate limit exceeded")
// and a `retry-after` header in seconds when one is declared; in line for a
// server longer than the timeout it ends as a transport timeout.
// An active fault draws one number from the service's own stream (the run's
// generator derived with the name "service/<name>") on every call in its
// window, hit or not, so a run replays exactly from its seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/world/model_api.hpp"  // ModelFault: the fault window shape the services share
#include "sim/world/service_capacity.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {

struct GenericServiceOptions {
  DurationMs latency_ms = 100;
  DurationMs timeout_ms = 30 * kSecondMs;
  std::optional<ServiceCapacity> capacity = std::nullopt;
};

class GenericService final : public SimService {
 public:
  GenericService(std::string name, const Rng& run_rng, GenericServiceOptions options);

  const std::string& name() const override { return name_; }
  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override;

  // A fault window (ModelFault's fields; `rate` is ignored for quota).
  void add_fault(ModelFault fault) {
    REHEARSE_ASSERT_LE(fault.from_ms, fault.until_ms);
    REHEARSE_ASSERT(fault.rate >= 0.0 && fault.rate <= 1.0);
    faults_.push_back(fault);
  }
  const std::vector<ModelFault>& faults() const noexcept { return faults_; }
  // A capacity fault: the rate limit lowered to `share` of the declared
  // one (at least 1) over [from, until).
  void add_capacity_drop(TimeMs from, TimeMs until, double share);

  std::int64_t total_calls() const noexcept { return total_calls_; }

 private:
  std::optional<SimReply> inject_fault(TimeMs now_ms);
  SimReply serve(const ServiceRequest& request, TimeMs now_ms);

  std::string name_;
  GenericServiceOptions options_;
  Rng rng_;
  std::vector<ModelFault> faults_;
  std::optional<CapacityGate> gate_;
  std::int64_t total_calls_ = 0;
};

}  // namespace rehearse::sim
