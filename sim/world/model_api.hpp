// ModelApi: the simulated "model-api" service group jobs call (a SimService
// plugged into SimServices; docs/group-jobs.md).
//
// Normal behaviour is scripted per task: each "generate" request for a task
// answers 200 with {"output": "summary"|"preview"|"skip", "text": ...} after
// the service latency. A script entry may name a job (it then wins over an
// entry for the task alone). A task without a script answers 404, so a test
// that forgot one fails loudly instead of delivering something invented.
//
// Faults are injected here only, each over a window [from, until):
//   quota outage  429 with a quota / usage-limit message naming the reset
//                 instant (the window's end), after the latency;
//   HTTP errors   the given status (4xx or 5xx) at a rate, after the latency;
//   timeouts      a transport timeout after the service's timeout, at a rate;
//   network       a transport error (refused, reset, dns, broken pipe) at a
//                 rate, after the latency.
// Faults are checked in the order they were added; the first active fault
// that hits decides. A fault with rate r draws one number from the service's
// own generator (the run's generator derived with the stream name
// "model-api") whenever its window is active, hit or not, so the draws depend
// only on the sequence of calls: a run is replayed exactly by its seed.
//
// Calls are counted per (job, task) (from the x-job-id header and the
// request's target) whatever their answer, faults included: a call reaches
// the service before it fails.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/failure.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {

// What a task's "generate" answer says when the service is healthy (the
// scenario's `produces`; kept apart from sim/world/scenario.hpp so that the
// simulated service does not depend on the scenario format).
enum class ModelOutput : unsigned char { summary, preview, skip };
const char* to_string(ModelOutput output) noexcept;

enum class ModelFaultKind : unsigned char { quota, http_error, timeout, network };
const char* to_string(ModelFaultKind kind) noexcept;

struct ModelFault {
  ModelFaultKind kind = ModelFaultKind::quota;
  TimeMs from_ms = 0;
  TimeMs until_ms = 0;  // exclusive
  int http_status = 0;  // http_error
  double rate = 1.0;    // share of calls hit while active
  TransportErrorKind transport = TransportErrorKind::connection_reset;  // network

  bool active_at(TimeMs t) const noexcept { return from_ms <= t && t < until_ms; }
};

struct ModelApiOptions {
  DurationMs latency_ms = 100;
  DurationMs timeout_ms = 30 * kSecondMs;
};

class ModelApi final : public SimService {
 public:
  static constexpr const char* kName = "model-api";
  static constexpr std::size_t kFaultsMax = 10'000;

  // `run_rng` is the simulator's generator; the service derives its own
  // stream from it by name.
  explicit ModelApi(const Rng& run_rng, ModelApiOptions options = {});

  const std::string& name() const override { return name_; }
  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override;

  // --- normal output ---
  void set_output(const std::string& task, ModelOutput output);
  void set_output(const std::string& job, const std::string& task, ModelOutput output);

  // --- faults ---
  void add_quota_outage(TimeMs from_ms, TimeMs until_ms);
  void add_http_errors(TimeMs from_ms, TimeMs until_ms, int status, double rate = 1.0);
  void add_timeouts(TimeMs from_ms, TimeMs until_ms, double rate = 1.0);
  void add_network_errors(TimeMs from_ms, TimeMs until_ms, double rate = 1.0,
                          TransportErrorKind kind = TransportErrorKind::connection_reset);
  const std::vector<ModelFault>& faults() const noexcept { return faults_; }

  // --- counters ---
  std::int64_t calls(const std::string& job, const std::string& task) const;
  std::int64_t calls_for_job(const std::string& job) const;
  std::int64_t total_calls() const noexcept { return total_calls_; }
  std::int64_t faulted_calls() const noexcept { return faulted_calls_; }

  const ModelApiOptions& options() const noexcept { return options_; }

 private:
  void add_fault(ModelFault fault);
  std::optional<SimReply> inject_fault(TimeMs now_ms);

  std::string name_ = kName;
  ModelApiOptions options_;
  Rng rng_;
  std::map<std::pair<std::string, std::string>, ModelOutput> outputs_;  // (job or "", task)
  std::vector<ModelFault> faults_;
  std::map<std::pair<std::string, std::string>, std::int64_t> calls_;  // (job, task)
  std::int64_t total_calls_ = 0;
  std::int64_t faulted_calls_ = 0;
};

}  // namespace rehearse::sim
