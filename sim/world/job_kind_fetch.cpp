// Fetch jobs: a run makes authenticated brokerage requests with the worker's
// token cache (model/fetch_job.hpp).
#include "sim/world/job_kind_builtins.hpp"
#include "sim/world/scenario_loader.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

namespace scenario_detail {

void Loader::load_fetch(const json& v, const std::string& pointer, JobSpec& job) {
  REHEARSE_ASSERT(job.kind == JobKind::fetch);  // load_job sets the kind before its reader runs
  const std::string who = fmt::format("job '{}'", job.id.empty() ? pointer : job.id);
  if (const json* s = field(v, "service")) {
    const std::string at = child(pointer, "service");
    if (read_name(*s, at, {"brokerage"}, "fetch service")) {
      require_service(ServiceKind::brokerage, at, who);
    }
  } else {
    require_service(ServiceKind::brokerage, pointer, who);
  }
  if (const json* r = field(v, "requests")) {
    if (auto n = read_int(*r, child(pointer, "requests"), 1, 1000)) {
      job.requests = static_cast<int>(*n);
    }
  }
  if (const json* p = field(v, "parallel")) {
    if (auto b = read_bool(*p, child(pointer, "parallel"))) job.parallel = *b;
  }
}

}  // namespace scenario_detail

using scenario_detail::Loader;
using scenario_detail::LoaderJobKeys;

JobKindDef fetch_job_kind() {
  JobKindDef def;
  def.name = "fetch";
  def.keys = {"service", "requests", "parallel"};
  def.side_effects = SideEffectKind::none;
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    LoaderJobKeys::of(keys).load(&Loader::load_fetch, job);
  };
  def.runner_params = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::fetch);  // callers look the entry up by the job's kind
    return json{{"requests", job.requests}, {"parallel", job.parallel}};
  };
  def.services = [](const JobSpec&) {
    return std::vector<std::string>{to_string(ServiceKind::brokerage)};
  };
  // A reissue per request, and the token itself.
  def.calls_per_run = [](const JobSpec& job) {
    REHEARSE_ASSERT_GE(job.requests, 1);  // the loader's range: 1 to 1000
    return 2 * std::int64_t{job.requests} + 1;
  };
  def.schema_properties = json::parse(R"json({
  "service": {
    "const": "brokerage",
    "default": "brokerage"
  },
  "requests": {
    "type": "integer",
    "minimum": 1,
    "maximum": 1000,
    "default": 1
  },
  "parallel": {
    "type": "boolean",
    "default": false
  }
})json");
  def.schema_required = {};
  return def;
}

}  // namespace rehearse::sim
