#include "sim/world/world_runners.hpp"

#include "model/assert.hpp"
#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

JobConfig job_config_of(const JobSpec& job) {
  JobConfig config;
  config.id = job.id;
  config.kind = to_string(job.kind);
  config.schedule = job.schedule;
  config.schedule_env = job.schedule_env;
  config.schedule_tz = job.tz;
  config.retry_policy = job.retry_policy;
  config.targets = job.targets;
  config.params = job_kind_def(job.kind).runner_params(job);
  // The worker reads a kind's own keys as an object (docs/worker.md).
  REHEARSE_ASSERT(config.params.is_object());
  return config;
}

std::vector<JobConfig> job_configs_of(const std::vector<JobSpec>& jobs) {
  std::vector<JobConfig> out;
  out.reserve(jobs.size());
  for (const JobSpec& job : jobs) out.push_back(job_config_of(job));
  return out;
}

}  // namespace rehearse::sim
