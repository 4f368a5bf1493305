// SimServices: the Services port on the simulated world, plus the one shared
// way every simulated external system (model-api, orchestrator, brokerage)
// plugs into it.
//
// Timing model. A request takes effect at the service the moment it is sent
// (the service's state changes then: a token is issued, an issue is read), and
// the answer reaches the caller `latency` later. The wait is a suspension
// point of the caller: a crash in between loses the answer, never the effect,
// exactly as a real process that dies mid-request. Faults are injected only
// inside the SimService implementations, so they travel the same code paths
// real faults do.
//
// Every call is recorded in the trace: `service_call` when sent (with the
// request's operation, target and the headers that identify the job, slot,
// item and request id — never secrets), `service_reply` when the answer
// arrives (status, or transport error kind).
#pragma once

#include <map>
#include <string>

#include "model/ports.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

// Texts the simulated services share. The reason phrase of an HTTP status
// ("Too Many Requests"), nullptr for a status they do not name.
const char* http_reason_phrase(int status) noexcept;
// What a Node-style client reports for a transport error reaching `service`
// ("connect ECONNREFUSED brokerage", "request to X timed out after 30s").
std::string transport_error_text(TransportErrorKind kind, const std::string& service,
                                 DurationMs timeout_ms);

// What a simulated service answers, and after how long.
struct SimReply {
  ServiceResult result;
  DurationMs latency_ms = 0;
  // Set when the service's capacity decided the answer ("refused" by its rate
  // limit, "timed_out_in_line" behind its servers): the reply's trace event
  // says so, a fact the witnesses read.
  const char* capacity = nullptr;
};

class SimService {
 public:
  virtual ~SimService() = default;
  virtual const std::string& name() const = 0;
  // Handles a request arriving at `now_ms` (the simulator's now). Must be
  // deterministic given the service's state and the run's generator.
  virtual SimReply handle(const ServiceRequest& request, TimeMs now_ms) = 0;
};

// Request headers the trace copies (context, never credentials). The core
// sets these on its requests so that monitors can attribute calls.
inline constexpr const char* kHeaderJob = "x-job-id";
inline constexpr const char* kHeaderSlot = "x-slot";  // ISO instant
inline constexpr const char* kHeaderAttempt = "x-attempt";
inline constexpr const char* kHeaderItem = "x-item";
inline constexpr const char* kHeaderRequestId = "x-request-id";
inline constexpr const char* kHeaderAuthorization = "authorization";  // never traced

class SimServices final : public ::rehearse::Services {
 public:
  SimServices(Simulator& simulator, Trace& trace) : simulator_(simulator), trace_(trace) {}

  // Registers a service under its name (not owned; must outlive this).
  void add(SimService& service);
  bool has(const std::string& name) const { return services_.count(name) != 0; }

  // A request to an unregistered service fails as DNS would.
  Task<ServiceResult> call(ServiceRequest request) override;

  std::uint64_t calls() const noexcept { return calls_; }

 private:
  Simulator& simulator_;
  Trace& trace_;
  std::map<std::string, SimService*, std::less<>> services_;
  std::uint64_t calls_ = 0;
};

// Fills job / slot / item of a trace event from request headers.
void attribute_from_headers(TraceEvent& event, const std::map<std::string, std::string>& headers);

}  // namespace rehearse::sim
