#include "sim/monitors/job_table.hpp"

#include <utility>

namespace rehearse::sim {

JobTable::JobTable(const Scenario& scenario) {
  for (const JobSpec& spec : scenario.jobs) {
    MonitoredJob w;
    w.id = spec.id;
    w.delivers = spec.kind == JobKind::group || spec.kind == JobKind::publish;
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
    if (spec.schedule_env) {
      const auto v = env_lookup(scenario.env, *spec.schedule_env);
      if (v && v->empty()) {
        schedule_known = false;  // no schedule: asserted never to run (schedule_kept)
        w.never_runs = true;
      } else if (v) {
        expr = std::string(*v);
      }
    }
    if (schedule_known) {
      std::string why;
      w.cron = WitnessCron::parse(expr, &why);
      if (!w.cron) unchecked("schedule_kept", spec.id, why);
    }
    std::optional<bool> low;
    if (w.cron) low = w.cron->low_frequency();
    w.policy = read_policy(spec.retry_policy, low, &w.policy_judged);
    if (!w.policy_judged) unchecked("retries_bounded", spec.id, w.policy.why_invalid);
    if (!w.policy_judged) w.policy.why_invalid = "unjudged";
    jobs_.emplace(spec.id, std::move(w));
  }
}

const MonitoredJob* JobTable::find(const std::string& id) const {
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobTable::unchecked(std::string invariant, std::string subject, std::string why) {
  unchecked_.push_back({{"invariant", std::move(invariant)},
                        {"subject", std::move(subject)},
                        {"why", std::move(why)}});
}

}  // namespace rehearse::sim
