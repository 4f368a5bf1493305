// The job kind the scheduler tests run: one call to the model API per run,
// classified by its HTTP status (a structured field, never message text).
#pragma once

#include "model/job_runner.hpp"
#include "model/ports.hpp"

namespace rehearse::testsupport {

class ApiRunner final : public JobRunner {
 public:
  explicit ApiRunner(Services& services) : services_(services) {}

  // Defined in api_runner.cpp, not inline here: clang 14 under ASan cannot
  // emit a coroutine with vague (inline) linkage ("Cannot represent a
  // difference across sections").
  Task<RunOutcome> run(RunContext context) override;

 private:
  Services& services_;
};

}  // namespace rehearse::testsupport
