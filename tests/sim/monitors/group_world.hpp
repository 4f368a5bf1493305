// A group job runner for the monitor tests (tests/sim/monitors/), built in a
// translation unit of its own behind a narrow header (the tests see only
// JobRunner). The handle owns the ledger and the job.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/disk.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"

namespace rehearse::sim::testing {

class GroupRunnerHandle {
 public:
  virtual ~GroupRunnerHandle() = default;
  virtual JobRunner& runner() = 0;
};

// Empty when the ledger cannot be opened (a disk fault killed the process).
std::unique_ptr<GroupRunnerHandle> make_group_runner(Clock& clock, ::rehearse::Services& services,
                                                     Notifier& notifier, Log& log, Disk& disk,
                                                     const std::string& ledger_dir,
                                                     const std::string& job_id,
                                                     const std::vector<std::string>& targets,
                                                     const std::vector<std::string>& tasks);

}  // namespace rehearse::sim::testing
