#include "sim/monitors/job_table.hpp"

#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "model/assert.hpp"
#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

JobTable::JobTable(const Scenario& scenario) {
  for (const JobSpec& spec : scenario.jobs) {
    MonitoredJob w;
    w.id = spec.id;
    w.delivers = job_kind_def(spec.kind).delivers;
    const auto expected = scenario.expect.jobs.find(spec.id);
    w.slot_history = !spec.from_fleet ||
                     (expected != scenario.expect.jobs.end() && expected->second.slots.has_value());
    if (spec.kind == JobKind::group) {
      for (const GroupTask& t : spec.tasks) {
        w.tasks.push_back({t.id, std::string(to_string(t.produces)), t.model_calls});
      }
    }
    std::string expr = spec.schedule;
    bool schedule_known = true;
    const std::optional<std::string_view> override_value =
        spec.schedule_env ? env_lookup(scenario.env, *spec.schedule_env) : std::nullopt;
    if (override_value && override_value->empty()) {
      schedule_known = false;  // no schedule: asserted never to run (schedule_kept)
      w.never_runs = true;
      w.never_runs_why = "its schedule override is set but empty";
    } else if (override_value) {
      expr = std::string(*override_value);
    }
    if (schedule_known) {
      std::string why;
      WitnessCron::Refusal refusal = WitnessCron::Refusal::unknown_syntax;
      w.cron = WitnessCron::parse(expr, &why, &refusal, spec.tz);
      if (!w.cron && override_value && refusal == WitnessCron::Refusal::invalid) {
        // A config error of the job, like an empty override (docs/semantics.md §3).
        w.never_runs = true;
        w.never_runs_why =
            fmt::format("its schedule override {}='{}' is {}", *spec.schedule_env, expr, why);
      } else if (!w.cron) {
        unchecked("schedule_kept", spec.id, why);
      }
    }
    std::optional<bool> low;
    if (w.cron) low = w.cron->low_frequency();
    w.policy = read_policy(spec.retry_policy, low, &w.policy_judged);
    if (w.never_runs) {
      // No schedule, so no run and no retry: whatever the policy says (the
      // core parses a policy only for a usable schedule).
      w.policy = invalid_witness_policy("the job has no valid schedule");
      w.policy_judged = true;
    }
    if (!w.policy_judged) unchecked("retries_bounded", spec.id, w.policy.why_invalid);
    if (!w.policy_judged) w.policy.why_invalid = "unjudged";
    // A job that never runs has no schedule to judge it by, and says why.
    if (w.never_runs) REHEARSE_ASSERT(!w.cron.has_value() && !w.never_runs_why.empty());
    // The loader refused duplicate ids, so each job has one entry.
    const bool fresh = jobs_.emplace(spec.id, std::move(w)).second;
    REHEARSE_ASSERT(fresh);
  }
}

const MonitoredJob* JobTable::find(const std::string& id) const {
  const auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  // Keyed by the job's own id.
  REHEARSE_ASSERT_EQ(it->second.id, id);
  return &it->second;
}

void JobTable::unchecked(std::string invariant, std::string subject, std::string why) {
  // Named by the constructor, for a job it reads.
  REHEARSE_ASSERT(!invariant.empty());
  REHEARSE_ASSERT(unchecked_.is_array());
  unchecked_.push_back({{"invariant", std::move(invariant)},

                        {"subject", std::move(subject)},
                        {"why", std::move(why)}});
}

}  // namespace rehearse::sim
