// Reconcile jobs: a run brings each item's internal stage in line with its
// issue in the orchestrator (model/reconcile.hpp, docs/reconcile.md).
#include "sim/world/job_kind_builtins.hpp"
#include "sim/world/orchestrator.hpp"
#include "sim/world/scenario_loader.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

namespace scenario_detail {

void Loader::load_reconcile(const json& v, const std::string& pointer, JobSpec& job) {
  // load_job sets the kind before its reader runs, and reads each job once.
  REHEARSE_ASSERT(job.kind == JobKind::reconcile && job.items.empty());
  const bool has_orchestrator = require_service(ServiceKind::orchestrator, pointer,
                                                fmt::format("reconcile job '{}'", job.id));
  if (const json* list = require(v, pointer, "items", "a non-empty array of items")) {
    const std::string at = child(pointer, "items");
    if (expect_array(*list, at, "a list of items", true)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ip = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ip, "an item")) continue;
        check_keys(entry, ip, keys_of("item"));
        ReconcileItem item;
        bool ok = true;
        if (const json* s = field(entry, "stage")) {
          if (auto k = read_name(*s, child(ip, "stage"), stage_names(), "stage")) {
            item.stage = stage_names()[*k];
          }
        }
        if (const json* l = field(entry, "lost")) {
          if (auto b = read_bool(*l, child(ip, "lost"))) item.lost = *b;
        }
        if (const json* is = require(entry, ip, "issue", "the external issue id")) {
          const std::string isp = child(ip, "issue");
          auto s = read_identifier(*is, isp, "issue id");
          if (s && std::any_of(job.items.begin(), job.items.end(),
                               [&](const ReconcileItem& i) { return i.issue == *s; })) {
            value_error(isp, fmt::format("duplicate item '{}' in this job", *s));
            s.reset();
          }
          if (s && has_orchestrator) {
            const bool known =
                std::find(issue_ids_.begin(), issue_ids_.end(), *s) != issue_ids_.end();
            if (item.lost && known) {
              value_error(isp, fmt::format("item '{}' is declared lost, but the orchestrator "
                                           "has an issue '{}' at start; remove one of the two",
                                           *s, *s));
              s.reset();
            } else if (!item.lost && !known) {
              std::string message = fmt::format(
                  "unknown issue '{}' (not in /services/orchestrator/issues; an issue already "
                  "gone at start needs \"lost\": true)",
                  *s);
              if (const auto near = closest(*s, issue_ids_)) {
                message += fmt::format("; did you mean '{}'?", *near);
              }
              reference_error(isp, std::move(message));
              s.reset();
            }
          }
          if (s) {
            item.issue = *s;
            item_issues_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (ok) job.items.push_back(item);
      }
      REHEARSE_ASSERT_LE(job.items.size(), list->size());  // at most one item per entry
    }
  }
  if (const json* b = field(v, "batch_size")) {
    if (auto n = read_int(*b, child(pointer, "batch_size"), 1, 10'000)) {
      job.batch_size = static_cast<int>(*n);
    }
  }
}

}  // namespace scenario_detail

using scenario_detail::Loader;
using scenario_detail::LoaderJobKeys;

JobKindDef reconcile_job_kind() {
  JobKindDef def;
  def.name = "reconcile";
  def.keys = {"items", "batch_size"};
  def.side_effects = SideEffectKind::none;
  def.keeps_file = true;  // its pipeline file
  def.read = [](JobKeyReader& keys, JobSpec& job) {
    LoaderJobKeys::of(keys).load(&Loader::load_reconcile, job);
  };
  def.runner_params = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::reconcile);  // callers look the entry up by the job's kind
    const ReconcileConfig reconcile = reconcile_config_from(job);
    REHEARSE_ASSERT_EQ(reconcile.items.size(), job.items.size());  // one seed per item
    json items = json::array();
    for (const ReconcileSeed& item : reconcile.items) {
      items.push_back({{"issue", item.issue}, {"stage", item.stage}});
    }
    json params{
        {"service", reconcile.service}, {"store_dir", reconcile.store_dir}, {"items", items}};
    if (reconcile.batch_size) params["batch_size"] = *reconcile.batch_size;
    return params;
  };
  // Its failures are per item: no outage of one service fails a run.
  def.services = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::reconcile);  // callers look the entry up by the job's kind
    return std::vector<std::string>{};
  };
  def.calls_per_run = [](const JobSpec& job) {
    REHEARSE_ASSERT(job.kind == JobKind::reconcile);  // callers look the entry up by the job's kind
    return 3 * static_cast<std::int64_t>(job.items.size()) + 1;
  };
  // An item's own backoff and config deferral reach one hour (docs/reconcile.md).
  def.settle_ms = kHourMs;
  def.schema_properties = json::parse(R"json({
  "items": {
    "type": "array",
    "minItems": 1,
    "items": {
      "$ref": "#/$defs/item"
    }
  },
  "batch_size": {
    "type": "integer",
    "minimum": 1,
    "maximum": 10000
  }
})json");
  def.schema_required = {"items"};
  def.schema_defs = json::parse(R"json({
  "item": {
    "type": "object",
    "additionalProperties": false,
    "required": [
      "issue"
    ],
    "properties": {
      "issue": {
        "$ref": "#/$defs/identifier"
      },
      "stage": {
        "$ref": "#/$defs/stage",
        "description": "Initial internal stage (default DESIGNING)."
      },
      "lost": {
        "type": "boolean",
        "default": false,
        "description": "The issue is already gone from the orchestrator at start."
      }
    }
  }
})json");
  return def;
}

}  // namespace rehearse::sim
