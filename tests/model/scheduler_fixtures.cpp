#include "tests/model/scheduler_fixtures.hpp"

namespace rehearse::sim::scheduler_test {

Task<rehearse::RunOutcome> ApiRunner::run(RunContext context) {
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

}  // namespace rehearse::sim::scheduler_test
