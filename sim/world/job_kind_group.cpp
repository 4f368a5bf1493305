// Group jobs: a run asks the model API for each task's output and sends the
// summaries to the job's messenger targets (model/group_job.hpp).
#include "sim/world/job_kind_builtins.hpp"
#include "sim/world/scenario_loader.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

namespace scenario_detail {

void Loader::load_group(const json& v, const std::string& pointer, JobSpec& job) {
  // load_job sets the kind before its reader runs, and reads each job once.
  REHEARSE_ASSERT(job.kind == JobKind::group && job.tasks.empty());
  bool calls_model = false;
  if (const json* list = require(v, pointer, "tasks", "a non-empty array of tasks")) {
    const std::string at = child(pointer, "tasks");
    if (expect_array(*list, at, "a list of tasks", true, 100)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string tp = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, tp, "a task")) continue;
        check_keys(entry, tp, keys_of("task"));
        GroupTask task;
        bool ok = true;
        if (const json* id = require(entry, tp, "id", "the task id")) {
          auto s = read_identifier(*id, child(tp, "id"), "task id");
          const bool duplicate = s && std::any_of(job.tasks.begin(), job.tasks.end(),
                                                  [&](const GroupTask& t) { return t.id == *s; });
          if (duplicate) value_error(child(tp, "id"), fmt::format("duplicate task id '{}'", *s));
          if (s && !duplicate) {
            task.id = *s;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* p = require(entry, tp, "produces", "one of: summary, preview, skip")) {
          if (auto i = read_name(*p, child(tp, "produces"), to_vector(kTaskOutputNames),
                                 "task output")) {
            task.produces = static_cast<TaskOutput>(*i);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        // A task that skips usually decides so without asking the model.
        task.model_calls = task.produces == TaskOutput::skip ? 0 : 1;
        if (const json* c = field(entry, "model_calls")) {
          if (auto k = read_int(*c, child(tp, "model_calls"), 0, 100)) {
            task.model_calls = static_cast<int>(*k);
          }
        }
        if (task.model_calls > 0) calls_model = true;
        if (ok) job.tasks.push_back(task);
      }
      REHEARSE_ASSERT_LE(job.tasks.size(), list->size());  // at most one task per entry
    }
  }
  if (calls_model) {
    require_service(ServiceKind::model_api, child(pointer, "tasks"),
                    fmt::format("group job '{}'", job.id));
  }
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

}  // namespace scenario_detail

using scenario_detail::Loader;
using scenario_detail::LoaderJobKeys;

JobKindDef group_job_kind() {
  JobKindDef def;
  def.name = "group";
  def.keys = {"tasks", "targets"};
  def.side_effects = SideEffectKind::draft;
  def.keeps_file = true;  // its delivery ledger
  def.delivers = true;
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    LoaderJobKeys::of(keys).load(&Loader::load_group, job);
  };
  def.runner_params = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::group);  // callers look the entry up by the job's kind
    json tasks = json::array();
    for (const GroupTask& task : job.tasks) {
      REHEARSE_ASSERT_GE(task.model_calls, 0);  // the loader's range: 0 to 100
      tasks.push_back({{"id", task.id}, {"model_calls", task.model_calls}});
    }
    return json{{"tasks", tasks}};
  };
  def.services = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::group);  // callers look the entry up by the job's kind
    const bool asks_model = std::any_of(job.tasks.begin(), job.tasks.end(),
                                        [](const GroupTask& t) { return t.model_calls > 0; });
    return asks_model ? std::vector<std::string>{to_string(ServiceKind::model_api)}
                      : std::vector<std::string>{};
  };
  def.calls_per_run = [](const JobSpec& job) {
    std::int64_t n = 0;
    for (const GroupTask& t : job.tasks) n += t.model_calls;
    REHEARSE_ASSERT_GE(n, 0);  // no task calls the model a negative number of times
    return n + static_cast<std::int64_t>(job.targets.size());
  };
  def.schema_properties = json::parse(R"json({
  "tasks": {
    "type": "array",
    "minItems": 1,
    "maxItems": 100,
    "items": {
      "$ref": "#/$defs/task"
    }
  },
  "targets": {
    "$ref": "#/$defs/target_list"
  }
})json");
  def.schema_required = {"tasks", "targets"};
  def.schema_defs = json::parse(R"json({
  "task": {
    "type": "object",
    "additionalProperties": false,
    "required": [
      "id",
      "produces"
    ],
    "properties": {
      "id": {
        "$ref": "#/$defs/identifier"
      },
      "produces": {
        "enum": [
          "summary",
          "preview",
          "skip"
        ],
        "description": "What the task yields when its calls succeed."
      },
      "model_calls": {
        "type": "integer",
        "minimum": 0,
        "maximum": 100,
        "description": "model-api calls per run (default 1; 0 for skip)."
      }
    }
  }
})json");
  return def;
}

}  // namespace rehearse::sim
