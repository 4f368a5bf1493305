#include "model/fetch_job.hpp"

#include <optional>
#include <utility>

#include <fmt/format.h>

namespace rehearse {
namespace {

// Counts a parallel child as finished however its frame ends (normally, with
// an exception, or destroyed with its parent) and wakes the parent when the
// last one is done. WaitList::notify_all never resumes inline, so this is
// safe from a destructor; when the frames are being destroyed the parent is
// no longer parked and nothing is scheduled.
class ChildDone {
 public:
  ChildDone(std::size_t& remaining, WaitList& parent) noexcept
      : remaining_(remaining), parent_(parent) {}
  ChildDone(const ChildDone&) = delete;
  ChildDone& operator=(const ChildDone&) = delete;
  ~ChildDone() {
    REHEARSE_ASSERT(remaining_ > 0);
    if (--remaining_ == 0) parent_.notify_all();
  }

 private:
  std::size_t& remaining_;
  WaitList& parent_;
};

Task<void> run_child(TokenClient& client, ServiceRequest request, std::optional<ServiceResult>& out,
                     std::size_t& remaining, WaitList& parent) {
  ChildDone done(remaining, parent);
  ServiceResult result = co_await client.request(std::move(request));
  out.emplace(std::move(result));
}

}  // namespace

std::string fetch_request_id(const RunContext& context, std::size_t index) {
  return fmt::format("{}/{}/a{}/r{}", context.job_id, format_instant(context.slot), context.attempt,
                     index);
}

FetchJob::FetchJob(Clock& clock, TokenClient& client, Log& log, FetchJobConfig config)
    : clock_(clock), client_(client), log_(log), config_(std::move(config)) {}

ServiceRequest FetchJob::make_request(const RunContext& context, std::size_t index) const {
  const FetchRequestSpec& spec = config_.requests.at(index);
  ServiceRequest request;
  request.service = config_.service;
  request.operation = spec.operation;
  request.target = spec.target;
  request.body = spec.body;
  stamp_run_headers(request, context, fetch_request_id(context, index));
  return request;
}

RunOutcome FetchJob::judge(const RunContext& context, std::size_t index,
                           const ServiceResult& result) {
  REHEARSE_ASSERT(!result.is_success());
  const FailureInfo info = to_failure_info(result);
  const FailureClass failure_class = classify(info);
  LogFields fields{{"job_id", context.job_id},
                   {"slot", format_instant(context.slot)},
                   {"attempt", context.attempt},
                   {"request_id", fetch_request_id(context, index)},
                   {"operation", config_.requests.at(index).operation},
                   {"failure_class", to_string(failure_class)}};
  append_failure_fields(fields, info);
  log_.warning("fetch_request_failed", fields);
  // The message travels verbatim (docs/semantics.md §1); the class comes
  // from the structured status, never from the text.
  return RunOutcome::failure(failure_class, info.message);
}

Task<RunOutcome> FetchJob::run(RunContext context) {
  if (config_.requests.empty()) {
    co_return RunOutcome::failure(FailureClass::config, "fetch job has no requests configured");
  }
  if (config_.parallel) {
    RunOutcome outcome = co_await run_parallel(std::move(context));
    co_return outcome;
  }
  RunOutcome outcome = co_await run_sequential(std::move(context));
  co_return outcome;
}

Task<RunOutcome> FetchJob::run_sequential(RunContext context) {
  for (std::size_t i = 0; i < config_.requests.size(); ++i) {
    ServiceResult result = co_await client_.request(make_request(context, i));
    if (!result.is_success()) co_return judge(context, i, result);
  }
  co_return RunOutcome::success();
}

// Fan-out without an executor API: each child is a Task owned by this frame
// and started here with one resume() (as co_await starts a task: it runs on
// this stack until its first suspension and returns). From then on children
// are resumed only by the executor (their service replies); the last one to
// finish wakes this frame through the WaitList. Destroying this frame (a
// crash) destroys the children first-declared-last: `children` goes before
// `waiters` and `remaining`, which the children reference.
Task<RunOutcome> FetchJob::run_parallel(RunContext context) {
  const std::size_t count = config_.requests.size();
  WaitList waiters(clock_);
  std::size_t remaining = count;
  std::vector<std::optional<ServiceResult>> results(count);
  std::vector<Task<void>> children;
  children.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    children.push_back(
        run_child(client_, make_request(context, i), results[i], remaining, waiters));
  }
  for (Task<void>& child : children) child.start_handle().resume();
  while (remaining > 0) co_await waiters.wait();
  for (Task<void>& child : children) child.take_result();  // rethrows a child's exception
  for (std::size_t i = 0; i < count; ++i) {
    REHEARSE_ASSERT(results[i].has_value());
    if (!results[i]->is_success()) co_return judge(context, i, *results[i]);
  }
  co_return RunOutcome::success();
}

}  // namespace rehearse
