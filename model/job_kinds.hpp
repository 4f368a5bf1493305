// Job kinds: one table from a kind's name to the factory of its runner.
//
// A job configuration (JobConfig) names its kind and carries the keys every
// job has (schedule, retry_policy, targets) plus the kind's own keys in
// `params`. The worker (model/worker.hpp) looks the kind up here and calls
// its factory with the job, the job's parsed policy and the ports of the
// worker process. Adding a job kind is one runner file (the runner class and
// its factory, which reads its params) and one line in job_kinds()
// (model/job_kinds.cpp). docs/worker.md lists every kind's params.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/disk.hpp"
#include "model/environment.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"
#include "model/result.hpp"
#include "model/retry_machine.hpp"
#include "model/token_client.hpp"

namespace rehearse {

// One job as configured (a deployment's job file, a scenario's job).
struct JobConfig {
  std::string id;
  std::string kind;                         // a name in job_kinds()
  std::string schedule;                     // the default cron expression
  std::optional<std::string> schedule_env;  // names the variable that overrides it
  std::optional<std::string> schedule_tz;   // the IANA zone it is read in (absent: UTC)
  // The policy exactly as written; absent: the job has none (a config error).
  std::optional<nlohmann::json> retry_policy;
  std::vector<std::string> targets;                  // messenger targets (first: notifications)
  nlohmann::json params = nlohmann::json::object();  // the kind's own keys
};

// What a runner may use: the ports of the worker process that runs it. All
// live exactly as long as that process.
struct JobPorts {
  Clock& clock;
  Services& services;
  Notifier& notifier;
  Log& log;
  Disk& disk;
  DeliveryLedger& ledger;     // per-(job, slot) send guard and marker
  TokenClient& token_client;  // the process's token cache
  const Environment& env;
};

// Builds one job's runner. `policy` is the job's parsed policy (or why it is
// invalid); an error here is a config error of that job.
using JobRunnerFactory =
    std::function<Result<std::unique_ptr<JobRunner>>(const JobConfig& job,
                                                     const PolicyOrError& policy, JobPorts& ports)>;

struct JobKindEntry {
  std::string_view name;
  JobRunnerFactory make;
};

using JobKinds = std::vector<JobKindEntry>;

// Every job kind this build can run, in a fixed order.
const JobKinds& job_kinds();
// The entry named `name` in `kinds`, or nullptr.
const JobKindEntry* find_job_kind(std::string_view name, const JobKinds& kinds = job_kinds());

// The runner of `job` from `kinds` (invalid_argument: unknown kind, or the
// kind's params are not usable).
Result<std::unique_ptr<JobRunner>> make_job_runner(const JobConfig& job,
                                                   const PolicyOrError& policy, JobPorts& ports,
                                                   const JobKinds& kinds = job_kinds());

}  // namespace rehearse
