#include "model/call_job.hpp"

#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/token_client.hpp"

namespace rehearse {

std::string call_request_id(const RunContext& context, std::size_t index) {
  return fmt::format("{}/{}/a{}/c{}", context.job_id, format_instant(context.slot), context.attempt,
                     index);
}

CallJob::CallJob(Services& services, Log& log, CallJobConfig config)
    : services_(services), log_(log), config_(std::move(config)) {}

ServiceRequest CallJob::make_request(const RunContext& context, std::size_t index) const {
  REHEARSE_ASSERT_LT(index, config_.calls.size());
  const CallSpec& spec = config_.calls.at(index);
  ServiceRequest request;
  request.service = spec.service;
  request.operation = spec.method;
  request.target = spec.path;
  stamp_run_headers(request, context, call_request_id(context, index));
  return request;
}

RunOutcome CallJob::judge(const RunContext& context, std::size_t index,
                          const ServiceResult& result) {
  const FailureInfo info = to_failure_info(result);
  const FailureClass failure_class = classify(info);
  const CallSpec& spec = config_.calls.at(index);
  LogFields fields{{"job_id", context.job_id},   {"slot", format_instant(context.slot)},
                   {"attempt", context.attempt}, {"request_id", call_request_id(context, index)},
                   {"service", spec.service},    {"method", spec.method},
                   {"path", spec.path},          {"failure_class", to_string(failure_class)}};
  append_failure_fields(fields, info);
  log_.warning("call_failed", fields);
  // The class comes from the structured status, never from the text.
  RunOutcome outcome = RunOutcome::failure(failure_class, info.message);
  outcome.retry_after_ms = info.retry_after_ms;
  return outcome;
}

Task<RunOutcome> CallJob::run(RunContext context) {
  if (config_.calls.empty()) {
    co_return RunOutcome::failure(FailureClass::config, "call job has no calls configured");
  }
  for (std::size_t i = 0; i < config_.calls.size(); ++i) {
    ServiceResult result = co_await services_.call(make_request(context, i));
    if (!result.is_success()) co_return judge(context, i, result);
  }
  co_return RunOutcome::success();
}

}  // namespace rehearse
