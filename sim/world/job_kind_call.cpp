// Call jobs: a run calls services of the user's own, in order
// (model/call_job.hpp).
#include "sim/world/job_kind_builtins.hpp"
#include "sim/world/scenario_loader.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

namespace scenario_detail {

// A call job's own key: the calls of one run.
void Loader::load_call_job(const json& v, const std::string& pointer, JobSpec& job) {
  // load_job sets the kind before its reader runs, and reads each job once.
  REHEARSE_ASSERT(job.kind == JobKind::call && job.calls.empty());
  if (const json* c = require(v, pointer, "calls", "a non-empty list of calls")) {
    load_calls(*c, child(pointer, "calls"), job);
  }
}

}  // namespace scenario_detail

using scenario_detail::Loader;
using scenario_detail::LoaderJobKeys;

JobKindDef call_job_kind() {
  JobKindDef def;
  def.name = "call";
  def.keys = {"calls"};
  def.side_effects = SideEffectKind::none;
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    LoaderJobKeys::of(keys).load(&Loader::load_call_job, job);
  };
  def.runner_params = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::call);  // callers look the entry up by the job's kind
    json calls = json::array();
    for (const JobSpec::Call& call : job.calls) {
      calls.push_back({{"service", call.service}, {"method", call.method}, {"path", call.path}});
    }
    return json{{"calls", calls}};
  };
  def.services = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::call);  // callers look the entry up by the job's kind
    std::vector<std::string> out;
    for (const JobSpec::Call& call : job.calls) {
      if (std::find(out.begin(), out.end(), call.service) == out.end()) out.push_back(call.service);
    }
    REHEARSE_ASSERT_LE(out.size(), job.calls.size());  // each service once, in call order
    return out;
  };
  def.calls_per_run = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::call);  // callers look the entry up by the job's kind
    return static_cast<std::int64_t>(job.calls.size());
  };
  def.schema_properties = json::parse(R"json({
  "calls": {
    "type": "array",
    "minItems": 1,
    "maxItems": 100,
    "items": {
      "$ref": "#/$defs/call"
    },
    "description": "The calls of one run, in order; the first that does not answer 2xx fails the run."
  }
})json");
  def.schema_required = {"calls"};
  def.schema_defs = json::parse(R"json({
  "call": {
    "type": "object",
    "additionalProperties": false,
    "required": [
      "service"
    ],
    "properties": {
      "service": {
        "$ref": "#/$defs/identifier",
        "description": "A service of the user's own declared in /services."
      },
      "method": {
        "enum": [
          "GET",
          "POST",
          "PUT",
          "PATCH",
          "DELETE",
          "HEAD"
        ],
        "default": "GET",
        "description": "For the trace only."
      },
      "path": {
        "type": "string",
        "pattern": "^/",
        "default": "/",
        "description": "For the trace only."
      }
    }
  }
})json");
  return def;
}

}  // namespace rehearse::sim
