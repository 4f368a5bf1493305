// CallJob: the `call` job kind, a job of the user's own shape. On its
// schedule it calls its declared services in order (docs/worker.md): each
// call names a service, and a method and path that only label the request in
// the trace (they select nothing; the service answers by its own state and
// faults).
//
// Outcome: success when every call got a 2xx. The first call that does not
// ends the run (later calls are not made): a failure with the class
// classify() gives its structured status or transport kind (503 is
// provider_5xx, 404 not_found, a timeout timeout, ...) and its message
// verbatim; whether that class is retried is the job's policy's call, as for
// every kind. A job without calls is a config failure (fail closed).
//
// Each request carries x-job-id, x-slot, x-attempt and
// x-request-id = "{job}/{slot}/a{attempt}/c{index}" so the trace ties every
// call to its run.
#pragma once

#include <string>
#include <vector>

#include "model/job_runner.hpp"
#include "model/ports.hpp"

namespace rehearse {

struct CallSpec {
  std::string service;         // the service's name, as declared
  std::string method = "GET";  // trace only
  std::string path = "/";      // trace only
};

struct CallJobConfig {
  std::vector<CallSpec> calls;
};

// The request id CallJob gives call `index` of the run `context`.
std::string call_request_id(const RunContext& context, std::size_t index);

class CallJob final : public JobRunner {
 public:
  CallJob(Services& services, Log& log, CallJobConfig config);

  Task<RunOutcome> run(RunContext context) override;

  const CallJobConfig& config() const noexcept { return config_; }

 private:
  ServiceRequest make_request(const RunContext& context, std::size_t index) const;
  RunOutcome judge(const RunContext& context, std::size_t index, const ServiceResult& result);

  Services& services_;
  Log& log_;
  CallJobConfig config_;
};

}  // namespace rehearse
