// The loader's flags: valid but suspicious scenarios (invalid retry policies,
// risky side effects, unusable schedules), computed once the scenario is valid.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

void Loader::compute_flags() {
  // Once, for a scenario the loader accepted (flags judge valid scenarios only).
  REHEARSE_ASSERT(errors_.empty() && omitted_ == 0);
  REHEARSE_ASSERT(flags_.empty());
  if (!scenario_.services.messenger && !scenario_.jobs.empty()) {
    notes_.push_back(fmt::format(
        "{}:/services: no messenger declared: every notice goes to the implicit target \"{}\", "
        "which accepts it (declare \"messenger\": {{\"targets\": [...]}} to name your own)",
        path_, kImplicitMessengerTarget));
  }
  for (const auto& job : scenario_.jobs) {
    REHEARSE_ASSERT(!job.id.empty());  // an accepted job has its id
    // The schedule the job actually runs on (an env override may replace it).
    std::optional<CronSchedule> schedule;
    if (job.schedule_env) {
      auto eff = effective_schedule(job.schedule, job.schedule_env, scenario_.env, job.tz);
      if (eff) {
        schedule = eff->schedule;
      } else {
        const auto value = env_lookup(scenario_.env, *job.schedule_env);
        flag(FlagKind::schedule_config, job.pointer + "/schedule_env",
             fmt::format("{}=\"{}\" gives job '{}' no usable schedule: every run fails with a "
                         "config error ({})",
                         *job.schedule_env, value ? std::string(*value) : std::string(), job.id,
                         eff.error().message));
      }
    } else if (auto parsed = CronSchedule::parse(job.schedule, job.tz)) {
      schedule = *parsed;
    }
    if (schedule) {
      // The first slot at or after start (next_after is strictly after).
      const TimeMs start = scenario_.start_ms;
      auto first = start % kSecondMs == 0 && schedule->matches(start) ? Result<TimeMs>(start)
                                                                      : schedule->next_after(start);
      if (!first || *first > scenario_.until_ms) {
        flag(FlagKind::schedule_idle, job.pointer + "/schedule",
             fmt::format("job '{}' never runs: its schedule \"{}\" does not fire between start "
                         "and until",
                         job.id, schedule->source()));
      }
    }
    // "auto" follows the effective schedule; without one, the config flag
    // above already says what is wrong.
    const bool is_auto = job.retry_policy && job.retry_policy->is_string() &&
                         job.retry_policy->get<std::string>() == "auto";
    if (is_auto && !schedule) continue;

    // The core's own parser decides, so validate reports exactly what a run
    // will do: an invalid policy fails closed there (never retried).
    std::optional<ScheduleFacts> facts;
    if (schedule) facts = schedule_facts(*schedule);
    auto policy = parse_retry_policy(job.retry_policy ? *job.retry_policy : json(), facts);
    if (!policy) {
      const std::string where =
          job.retry_policy ? job.pointer + "/retry_policy" + policy.error().where : job.pointer;
      flag(FlagKind::policy_error, where,
           fmt::format("job '{}': {}; the job runs on schedule but is never retried", job.id,
                       job.retry_policy ? policy.error().message
                                        : std::string("no retry_policy (there is no default)")));
      continue;
    }
    SideEffectDeclaration declaration;
    declaration.kind = job.side_effects;
    declaration.idempotency_key = job.idempotency_key.value_or("");
    if (auto warning = side_effect_warning(declaration, *policy)) {
      flag(FlagKind::side_effects, job.pointer, fmt::format("job '{}': {}", job.id, *warning));
    }
  }
  // At most two per job: one about its schedule, one about its policy.
  REHEARSE_ASSERT_LE(flags_.size(), 2 * scenario_.jobs.size());
}

}  // namespace rehearse::sim::scenario_detail
