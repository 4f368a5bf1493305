#include "model/job_kinds.hpp"

#include <fmt/format.h>

#include <utility>

#include "model/assert.hpp"
#include "model/call_job.hpp"
#include "model/fetch_job.hpp"
#include "model/group_job.hpp"
#include "model/publish_job.hpp"
#include "model/reconcile.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

Error params_error(const JobConfig& job, std::string_view key, std::string_view expected) {
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("job '{}' ({}): params.{} must be {}", job.id, job.kind, key,
                                expected),
                    fmt::format("job:{}/params/{}", job.id, key));
}

// params[key] as T when present and of the right JSON type; `fallback` when absent.
template <typename T>
Result<T> param(const JobConfig& job, std::string_view key, T fallback, std::string_view expected,
                bool (json::*is_type)() const noexcept) {
  if (!job.params.is_object() || !job.params.contains(key)) return fallback;
  const json& value = job.params.at(std::string(key));
  if (!(value.*is_type)()) return params_error(job, key, expected);
  return value.get<T>();
}

// --- group: params.tasks = [{"id": "...", "model_calls": 1}, ...] ---------
Result<std::unique_ptr<JobRunner>> make_group(const JobConfig& job, const PolicyOrError& policy,
                                              JobPorts& ports) {
  GroupJobConfig config;
  config.job_id = job.id;
  config.targets = job.targets;
  const json tasks = job.params.is_object() ? job.params.value("tasks", json::array()) : json();
  if (!tasks.is_array()) return params_error(job, "tasks", "an array of {id, model_calls}");
  for (const json& task : tasks) {
    if (!task.is_object() || !task.contains("id") || !task.at("id").is_string() ||
        !task.value("model_calls", json(1)).is_number_integer()) {
      return params_error(job, "tasks", "an array of {id: string, model_calls: integer}");
    }
    config.tasks.push_back({task.at("id").get<std::string>(), task.value("model_calls", 1)});
  }
  // Which task failure names a failed run follows the job's own policy.
  if (policy.ok()) config.retryable_classes = policy->retryable_classes;
  return std::unique_ptr<JobRunner>(std::make_unique<GroupJob>(
      ports.clock, ports.services, ports.notifier, ports.log, ports.ledger, std::move(config)));
}

// --- fetch: params.requests (authenticated requests per run), params.parallel
Result<std::unique_ptr<JobRunner>> make_fetch(const JobConfig& job, const PolicyOrError&,
                                              JobPorts& ports) {
  auto requests = param<int>(job, "requests", 1, "an integer >= 1", &json::is_number_integer);
  if (!requests.ok()) return std::move(requests).error();
  if (*requests < 1) return params_error(job, "requests", "an integer >= 1");
  auto parallel = param<bool>(job, "parallel", false, "a boolean", &json::is_boolean);
  if (!parallel.ok()) return std::move(parallel).error();
  FetchJobConfig config;
  config.parallel = *parallel;
  for (int i = 0; i < *requests; ++i) {
    config.requests.push_back(
        FetchRequestSpec{"quote", fmt::format("{}-{}", job.id, i + 1), nullptr});
  }
  return std::unique_ptr<JobRunner>(
      std::make_unique<FetchJob>(ports.clock, ports.token_client, ports.log, std::move(config)));
}

// --- publish: params.task (the model-api task; default "publish") ---------
Result<std::unique_ptr<JobRunner>> make_publish(const JobConfig& job, const PolicyOrError&,
                                                JobPorts& ports) {
  auto task = param<std::string>(job, "task", "publish", "a string", &json::is_string);
  if (!task.ok()) return std::move(task).error();
  PublishJobConfig config;
  config.job_id = job.id;
  config.targets = job.targets;
  config.task = std::move(task).value();
  return std::unique_ptr<JobRunner>(std::make_unique<PublishJob>(
      ports.clock, ports.services, ports.notifier, ports.log, ports.ledger, std::move(config)));
}

// --- reconcile: params.items = [{"issue", "stage"}], params.batch_size,
// params.service (default "orchestrator"), params.store_dir (default
// "pipeline-<job id>") ------------------------------------------------------
Result<std::unique_ptr<JobRunner>> make_reconcile(const JobConfig& job, const PolicyOrError&,
                                                  JobPorts& ports) {
  ReconcileConfig config;
  auto service = param<std::string>(job, "service", "orchestrator", "a string", &json::is_string);
  if (!service.ok()) return std::move(service).error();
  auto store_dir =
      param<std::string>(job, "store_dir", "pipeline-" + job.id, "a string", &json::is_string);
  if (!store_dir.ok()) return std::move(store_dir).error();
  config.service = std::move(service).value();
  config.store_dir = std::move(store_dir).value();
  const json items = job.params.is_object() ? job.params.value("items", json::array()) : json();
  if (!items.is_array()) return params_error(job, "items", "an array of {issue, stage}");
  for (const json& item : items) {
    if (!item.is_object() || !item.contains("issue") || !item.at("issue").is_string() ||
        !item.value("stage", json(kStageDesigning)).is_string()) {
      return params_error(job, "items", "an array of {issue: string, stage: string}");
    }
    ReconcileSeed seed;
    seed.issue = item.at("issue").get<std::string>();
    seed.stage = item.value("stage", std::string(kStageDesigning));
    config.items.push_back(std::move(seed));
  }
  if (job.params.is_object() && job.params.contains("batch_size")) {
    auto batch = param<int>(job, "batch_size", 0, "an integer >= 1", &json::is_number_integer);
    if (!batch.ok()) return std::move(batch).error();
    if (*batch < 1) return params_error(job, "batch_size", "an integer >= 1");
    config.batch_size = *batch;
  }
  // Its pipeline store is process memory over the durable disk.
  return std::unique_ptr<JobRunner>(std::make_unique<ReconcileJob>(
      ports.clock, ports.services, ports.log, ports.disk, ports.env, std::move(config)));
}

// --- call: params.calls = [{"service": "...", "method": "GET", "path": "/"}]
Result<std::unique_ptr<JobRunner>> make_call(const JobConfig& job, const PolicyOrError&,
                                             JobPorts& ports) {
  constexpr std::string_view kShape =
      "an array of {service: string, method?: string, path?: string}";
  const json calls = job.params.is_object() ? job.params.value("calls", json::array()) : json();
  if (!calls.is_array()) return params_error(job, "calls", kShape);
  CallJobConfig config;
  for (const json& call : calls) {
    if (!call.is_object() || !call.contains("service") || !call.at("service").is_string() ||
        !call.value("method", json("GET")).is_string() ||
        !call.value("path", json("/")).is_string()) {
      return params_error(job, "calls", kShape);
    }
    config.calls.push_back(CallSpec{call.at("service").get<std::string>(),
                                    call.value("method", std::string("GET")),
                                    call.value("path", std::string("/"))});
  }
  return std::unique_ptr<JobRunner>(
      std::make_unique<CallJob>(ports.services, ports.log, std::move(config)));
}

}  // namespace

const JobKinds& job_kinds() {
  // One line per kind: its name in a job's configuration, its runner factory.
  static const JobKinds kinds{
      {"group", make_group},     {"fetch", make_fetch}, {"reconcile", make_reconcile},
      {"publish", make_publish}, {"call", make_call},
  };
  return kinds;
}

const JobKindEntry* find_job_kind(std::string_view name, const JobKinds& kinds) {
  REHEARSE_ASSERT(!kinds.empty());
  for (const JobKindEntry& entry : kinds) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

Result<std::unique_ptr<JobRunner>> make_job_runner(const JobConfig& job,
                                                   const PolicyOrError& policy, JobPorts& ports,
                                                   const JobKinds& kinds) {
  const JobKindEntry* kind = find_job_kind(job.kind, kinds);
  if (kind == nullptr) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("config error: job '{}' has kind '{}', which this build "
                                  "cannot run",
                                  job.id, job.kind),
                      fmt::format("job:{}/kind", job.id));
  }
  return kind->make(job, policy, ports);
}

}  // namespace rehearse
