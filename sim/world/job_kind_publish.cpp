// Publish jobs: a run asks the model API for a post and publishes it to the
// job's messenger targets (model/publish_job.hpp).
#include "sim/world/job_kind_builtins.hpp"
#include "sim/world/scenario_loader.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

namespace scenario_detail {

// A publish job's own key: where its posts go. Each run asks the model API
// for the post (model/publish_job.hpp), so the world must have it.
void Loader::load_publish(const json& v, const std::string& pointer, JobSpec& job) {
  // load_job sets the kind before its reader runs, and reads each job once.
  REHEARSE_ASSERT(job.kind == JobKind::publish && job.targets.empty());
  require_service(ServiceKind::model_api, pointer, fmt::format("publish job '{}'", job.id));
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

}  // namespace scenario_detail

using scenario_detail::Loader;
using scenario_detail::LoaderJobKeys;

JobKindDef publish_job_kind() {
  JobKindDef def;
  def.name = "publish";
  def.keys = {"targets"};
  def.side_effects = SideEffectKind::publish;
  def.keeps_file = true;  // its delivery ledger
  def.delivers = true;
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    LoaderJobKeys::of(keys).load(&Loader::load_publish, job);
  };
  def.runner_params = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::publish);  // callers look the entry up by the job's kind
    return json{{"task", kPublishTask}};
  };
  def.services = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::publish);  // callers look the entry up by the job's kind
    return std::vector<std::string>{to_string(ServiceKind::model_api)};
  };
  def.calls_per_run = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::publish);  // callers look the entry up by the job's kind
    return static_cast<std::int64_t>(job.targets.size()) + 1;
  };
  def.schema_properties = json::parse(R"json({
  "targets": {
    "$ref": "#/$defs/target_list"
  }
})json");
  def.schema_required = {"targets"};
  return def;
}

}  // namespace rehearse::sim
