#include "sim/world/world_runners.hpp"

#include "sim/world/orchestrator.hpp"

namespace rehearse::sim {

JobConfig job_config_of(const JobSpec& job) {
  using nlohmann::json;
  JobConfig config;
  config.id = job.id;
  config.kind = to_string(job.kind);
  config.schedule = job.schedule;
  config.schedule_env = job.schedule_env;
  config.retry_policy = job.retry_policy;
  config.targets = job.targets;
  json& params = config.params;
  switch (job.kind) {
    case JobKind::group:
      params["tasks"] = json::array();
      for (const GroupTask& task : job.tasks) {
        params["tasks"].push_back({{"id", task.id}, {"model_calls", task.model_calls}});
      }
      break;
    case JobKind::fetch:
      params["requests"] = job.requests;
      params["parallel"] = job.parallel;
      break;
    case JobKind::publish: params["task"] = kPublishTask; break;
    case JobKind::reconcile: {
      const ReconcileConfig reconcile = reconcile_config_from(job);
      params["service"] = reconcile.service;
      params["store_dir"] = reconcile.store_dir;
      params["items"] = json::array();
      for (const ReconcileSeed& item : reconcile.items) {
        params["items"].push_back({{"issue", item.issue}, {"stage", item.stage}});
      }
      if (reconcile.batch_size) params["batch_size"] = *reconcile.batch_size;
      break;
    }
    case JobKind::call:
      params["calls"] = json::array();
      for (const JobSpec::Call& call : job.calls) {
        params["calls"].push_back(
            {{"service", call.service}, {"method", call.method}, {"path", call.path}});
      }
      break;
  }
  return config;
}

std::vector<JobConfig> job_configs_of(const std::vector<JobSpec>& jobs) {
  std::vector<JobConfig> out;
  out.reserve(jobs.size());
  for (const JobSpec& job : jobs) out.push_back(job_config_of(job));
  return out;
}

}  // namespace rehearse::sim
