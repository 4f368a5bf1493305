// FetchJob: the `fetch` job kind. A scheduled job that makes its configured
// authenticated brokerage requests (quotes, positions, ...) through a
// TokenClient (model/token_client.hpp).
//
// The TokenClient is not owned: it lives as long as the PROCESS, because the
// token cache is process memory, shared by every run (and every fetch job)
// of that process. A crash or restart empties it; that is how the original
// bug looked from outside: fetches failed after a revocation "until restart".
//
// A run sends its requests in order, stopping at the first failure, or, with
// `parallel`, all together (they then meet a revocation together and share
// one reissue) and waits for all of them. A job without requests is a config
// failure (fail closed), not a silent success. Outcome: success when every request
// got a 2xx; otherwise failure with the class of the first failed request in
// configuration order (classify() on the status field or transport kind) and
// its message verbatim. A 401 that survives the one reissue is `auth`, which is
// not retryable under the default classes.
//
// Each request carries the attribution headers x-job-id, x-slot (ISO instant),
// x-attempt and x-request-id = "{job}/{slot}/a{attempt}/r{index}", so the trace
// can tie every call, reissue and retry to the run and the request.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_runner.hpp"
#include "model/ports.hpp"
#include "model/token_client.hpp"

namespace rehearse {

struct FetchRequestSpec {
  std::string operation = "quote";  // e.g. "quote", "positions"
  std::string target;               // e.g. a symbol; may be empty
  nlohmann::json body;              // sent as is (null: no body)
};

struct FetchJobConfig {
  std::string service = "brokerage";
  std::vector<FetchRequestSpec> requests;
  bool parallel = false;
};

// The request id FetchJob gives request `index` of the run `context`.
std::string fetch_request_id(const RunContext& context, std::size_t index);

class FetchJob final : public JobRunner {
 public:
  // `client` must outlive every run in flight (it is process memory). The
  // clock parks a parallel run until its last request has answered.
  FetchJob(Clock& clock, TokenClient& client, Log& log, FetchJobConfig config);

  Task<RunOutcome> run(RunContext context) override;

  const FetchJobConfig& config() const noexcept { return config_; }

 private:
  ServiceRequest make_request(const RunContext& context, std::size_t index) const;
  Task<RunOutcome> run_sequential(RunContext context);
  Task<RunOutcome> run_parallel(RunContext context);
  RunOutcome judge(const RunContext& context, std::size_t index, const ServiceResult& result);

  Clock& clock_;
  TokenClient& client_;
  Log& log_;
  FetchJobConfig config_;
};

}  // namespace rehearse
