#include "tests/support/api_runner.hpp"

#include <string>
#include <utility>

#include "model/failure.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::testsupport {

Task<RunOutcome> ApiRunner::run(RunContext context) {
  ServiceRequest request;
  request.service = "model-api";
  request.operation = "generate";
  request.target = context.job_id;
  request.headers = {{sim::kHeaderJob, context.job_id},
                     {sim::kHeaderSlot, format_instant(context.slot)},
                     {sim::kHeaderAttempt, std::to_string(context.attempt)}};
  ServiceResult result = co_await services_.call(std::move(request));
  if (result.is_success()) co_return RunOutcome::success();
  const FailureInfo info = to_failure_info(result);
  co_return RunOutcome::failure(classify(info), info.message);
}

}  // namespace rehearse::testsupport
