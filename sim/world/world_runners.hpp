// The scenario's jobs as the worker (model/worker.hpp) is configured with
// them: a scenario JobSpec becomes a JobConfig (its kind's name, the keys
// every job has, and the kind's own keys as params, docs/worker.md). The
// world builds nothing else of the worker: schedules, policies, config
// errors and runners are model/worker.cpp's and model/job_kinds.cpp's.
#pragma once

#include <vector>

#include "model/job_kinds.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// The model-api task a publish job's one call names.
inline constexpr const char* kPublishTask = "publish";

JobConfig job_config_of(const JobSpec& job);
std::vector<JobConfig> job_configs_of(const std::vector<JobSpec>& jobs);

}  // namespace rehearse::sim
