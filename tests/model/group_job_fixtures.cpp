#include "tests/model/group_job_fixtures.hpp"

namespace rehearse::group_test {

Task<void> drive(JobRunner& job, RunContext context, std::optional<RunOutcome>& out) {
  RunOutcome outcome = co_await job.run(std::move(context));
  out = outcome;
}

}  // namespace rehearse::group_test
