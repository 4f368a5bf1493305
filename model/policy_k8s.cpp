// A Kubernetes Job's retry settings as the core's RetryPolicy
// (docs/policies.md, "k8s"): a Job spec, a whole Job or CronJob manifest (in
// JSON, or YAML read by model/yaml_document). backoffLimit (or an indexed
// Job's backoffLimitPerIndex) is the count, activeDeadlineSeconds the
// deadline; podFailurePolicy rules are reported, as exit codes and pod
// conditions are not failure classes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/assert.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

constexpr std::string_view kNotAJob =
    "expected a Kubernetes Job: a manifest with kind Job (or CronJob) or a Job spec";

// The Job spec inside a manifest (Job: spec; CronJob: spec.jobTemplate.spec)
// with its pointer; a bare spec is its own.
Result<std::pair<const json*, std::string>> job_spec(const json& input, SystemPolicy& out) {
  if (!input.contains("kind")) return std::pair<const json*, std::string>{&input, ""};
  const json& kind = input.at("kind");
  const bool job = kind == "Job", cron_job = kind == "CronJob";
  if (!job && !cron_job) {
    return invalid("/kind", fmt::format("{}, got kind {}", kNotAJob, describe_value(kind)));
  }
  if (auto s = sort_keys(input, {"spec"}, {"apiVersion", "kind", "metadata", "status"},
                         "Kubernetes Job", out);
      !s.ok()) {
    return std::move(s).error();
  }
  out.ignored.clear();
  const json* spec = input.contains("spec") ? &input.at("spec") : nullptr;
  std::string where = "/spec";
  if (cron_job && spec != nullptr && spec->is_object()) {
    out.notes.push_back(
        "a CronJob: its jobTemplate's spec is read (schedule and timeZone are the "
        "job's schedule, not its retries)");
    const json* tmpl = spec->contains("jobTemplate") ? &spec->at("jobTemplate") : nullptr;
    spec = tmpl != nullptr && tmpl->is_object() && tmpl->contains("spec") ? &tmpl->at("spec")
                                                                          : nullptr;
    where = "/spec/jobTemplate/spec";
  }
  if (spec == nullptr || !spec->is_object()) {
    return schema(where, "expected the Job's spec (an object)");
  }
  return std::pair<const json*, std::string>{spec, where};
}

// backoffLimit, or an indexed Job's backoffLimitPerIndex (each index's own
// count, which is the count of one job here).
Result<int> read_backoff_limit(const json& spec, const std::string& base, SystemPolicy& out) {
  for (const char* key : {"backoffLimitPerIndex", "backoffLimit"}) {
    if (!spec.contains(key)) continue;
    REHEARSE_TRY(limit, read_integer(spec.at(key), base + "/" + key,
                                     fmt::format("{} (retries after the first pod)", key), 0,
                                     kRetryCountMax));
    if (std::string_view(key) == "backoffLimitPerIndex") {
      out.notes.push_back(
          "backoffLimitPerIndex: an indexed Job's count per index, read as the "
          "count of this job");
    }
    return static_cast<int>(*limit);
  }
  out.defaults.push_back("backoffLimit: 6");
  return 6;
}

// podFailurePolicy: each rule said in words; none changes the plan.
void note_pod_failure_rules(const json& spec, SystemPolicy& out) {
  if (!spec.contains("podFailurePolicy")) return;
  const json& rules = spec.at("podFailurePolicy").value("rules", json::array());
  for (const json& rule : rules) {
    const std::string action = rule.value("action", "?");
    const std::string on = rule.contains("onExitCodes")       ? "exit codes"
                           : rule.contains("onPodConditions") ? "pod conditions"
                                                              : "?";
    out.notes.push_back(fmt::format(
        "podFailurePolicy rule {} on {}: not a failure class, not modelled (a pod cut by a "
        "disruption is re-run as rehearse re-runs a run cut by a restart; say which classes "
        "fail at once with retryable_classes)",
        action, on));
  }
}

}  // namespace

Result<SystemPolicy> convert_k8s(const json& input) {
  SystemPolicy out;
  if (auto s = require_object(input, "Kubernetes Job"); !s.ok()) return std::move(s).error();
  REHEARSE_TRY(found, job_spec(input, out));
  const json& spec = *found->first;
  const std::string& base = found->second;
  if (auto s = sort_keys(spec, {"backoffLimit", "backoffLimitPerIndex", "activeDeadlineSeconds"},
                         {"completions", "parallelism", "ttlSecondsAfterFinished", "template",
                          "selector", "manualSelector", "suspend", "completionMode",
                          "podReplacementPolicy", "managedBy", "maxFailedIndexes",
                          "podFailurePolicy", "successPolicy"},
                         "Kubernetes Job", out);
      !s.ok()) {
    return rebased(std::move(s).error(), base);
  }
  REHEARSE_TRY(retries, read_backoff_limit(spec, base, out));
  note_pod_failure_rules(spec, out);
  // The Job controller's pod failure back-off: 10 s, doubling, capped at 6 min.
  Backoff b{BackoffKind::exponential, 10 * kSecondMs, 0.0};
  b.max_delay_ms = 6 * kMinuteMs;
  out.policy = system_policy(PolicyForm::k8s, *retries, b);
  if (spec.contains("activeDeadlineSeconds")) {
    REHEARSE_TRY(deadline,
                 read_seconds(spec.at("activeDeadlineSeconds"), base + "/activeDeadlineSeconds",
                              "activeDeadlineSeconds (whole seconds)", 1));
    out.policy.deadline_ms = *deadline;
  }
  return out;
}

}  // namespace rehearse::policy_forms_detail
