#include "sim/monitors/retries_bounded.hpp"

#include <fmt/format.h>
#include <algorithm>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

RetriesBounded::RetriesBounded(const Scenario&, MonitorContext& context)
    : context_(context), supersede_(kName, context.jobs, context.process) {}

Violations RetriesBounded::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job != nullptr && e.slot) {
    if (e.type == "run_started" && e.str("kind") == "retry") {
      on_retry_started(e, i, *job, out);
    } else if (e.type == "retry_scheduled" && job->policy_judged) {
      on_retry_scheduled(e, i, *job, out);
    } else if (e.type == "run_finished" && e.str("outcome") != "failure") {
      // The episode ends, and with it what a blind boot found of it: no
      // later retry of this boot is rebased on that.
      episode_attempts_[e.job].clear();
      episode_base_[e.job] = 0;
      rebased_boot_[e.job] = context_.process.boots();
    }
  }
  note_queued_retry(e);
  check_budget(e, i, out);
  check_window(e, i, out);
  supersede_.observe(e, i, out);
  return out;
}

// The first time the queue received each retry (a retry run again after its
// end was lost keeps the failure it first answered); a cancelled entry's
// retry never ran, so a later add of it is a new one.
void RetriesBounded::note_queued_retry(const TraceEvent& e) {
  if (e.str("kind") != "retry" || !e.slot) return;
  const std::tuple<std::string, TimeMs, int> key{e.job, *e.slot,
                                                 static_cast<int>(e.num("attempt"))};
  if (e.type == "queue_cancel") {
    queued_.erase(key);
    return;
  }
  if (e.type != "queue_add" || !e.flag("added")) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr) return;
  const SlotWatch& s = context_.slots.at(e.job, *e.slot);
  // The slot tracker holds every job of the job table.
  REHEARSE_ASSERT(context_.slots.job(e.job) != nullptr);
  const JobRuns& runs = *context_.slots.job(e.job);
  const bool per_slot = job->policy.per_slot;
  queued_.try_emplace(key, QueuedRetry{per_slot ? s.last_failure_t : runs.last_failure_t,
                                       per_slot ? s.last_failure_class : runs.last_failure_class,
                                       context_.process.boots()});
}

// The failure a started retry answers: the last one, except for a retry the
// queue held from before a blind boot (the damage may have lost the records
// of the retries between), which answers the failure that queued it.
RetriesBounded::Answered RetriesBounded::failure_answered(const TraceEvent& e,
                                                          Answered last) const {
  // Asked for a started retry of a job's slot (on_retry_started).
  REHEARSE_ASSERT(e.slot.has_value());
  const ProcessTracker& process = context_.process;
  if (!process.boot_blind()) return last;
  const auto it = queued_.find({e.job, *e.slot, static_cast<int>(e.num("attempt"))});
  if (it == queued_.end() || it->second.boot >= process.boots()) return last;
  return Answered{it->second.failed_t, it->second.failure_class};
}

void RetriesBounded::on_retry_started(const TraceEvent& e, std::size_t i, const MonitoredJob& job,
                                      Violations& out) {
  const WitnessPolicy& p = job.policy;
  const int attempt = static_cast<int>(e.num("attempt"));
  rebase_after_blind_boot(e.job);
  std::set<int>& slot_attempts = slot_attempts_[{e.job, *e.slot}];
  std::set<std::pair<TimeMs, int>>& episode = episode_attempts_[e.job];
  const bool fresh =
      p.per_slot ? slot_attempts.insert(attempt).second : episode.insert({*e.slot, attempt}).second;
  if (fresh) ++retries_[e.job];
  // Every distinct attempt counted in the budget was counted in the tally
  // too (the tally is never reset; the budget's sets are).
  REHEARSE_ASSERT_GE(retries_[e.job],
                     static_cast<std::int64_t>(p.per_slot ? slot_attempts.size() : episode.size()));
  if (!job.policy_judged || !fresh) return;
  const int n = static_cast<int>(p.per_slot ? slot_attempts.size() : episode.size()) +
                (p.per_slot ? slot_base_[{e.job, *e.slot}] : episode_base_[e.job]);
  // This fresh attempt is in the set, and a rebase's base is never negative.
  REHEARSE_ASSERT_GE(n, 1);
  static const SlotWatch kUnknownSlot;
  const SlotWatch* s = context_.slots.find(e.job, *e.slot);
  const SlotWatch& slot = s != nullptr ? *s : kUnknownSlot;
  REHEARSE_ASSERT(context_.slots.job(e.job) != nullptr);
  const JobRuns& runs = *context_.slots.job(e.job);
  const Answered answered =
      failure_answered(e, p.per_slot ? Answered{slot.last_failure_t, slot.last_failure_class}
                                     : Answered{runs.last_failure_t, runs.last_failure_class});
  const std::optional<TimeMs>& failed_t = answered.failed_t;
  const std::optional<std::string>& cls = answered.failure_class;
  if (!p.valid) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retried although its policy is invalid ({})", e.job,
                               slot_text(e.slot), p.why_invalid)});
  } else if (n > p.retries_max) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} exceeds the policy's {} ({})", e.job,
                               slot_text(e.slot), n, p.retries_max,
                               p.per_slot ? "per_slot" : "per_episode")});
  } else if (cls && !p.retries_class(*cls)) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retried after a {} failure, a class its policy "
                               "does not retry",
                               e.job, slot_text(e.slot), *cls)});
  } else if (failed_t && p.rules.empty() &&
             context_.wall_clock.wall(e.t) <
                 context_.wall_clock.wall(*failed_t) + p.min_delay_ms(n)) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} ran {} after the failure, before its "
                               "backoff of {}",
                               e.job, slot_text(e.slot), n, format_duration(e.t - *failed_t),
                               format_duration(p.min_delay_ms(n) + 1))});
  }
}

// The first retry of a job after a blind boot, in that boot or a later one
// (a boot after it reads what the blind one wrote): its attempts so far are
// those the damaged store still held (the shared count's rebase,
// retry_count.hpp), not the ones the monitor saw before the damage.
void RetriesBounded::rebase_after_blind_boot(const std::string& job) {
  const ProcessTracker& process = context_.process;
  const std::int64_t blind = process.last_blind_boot();
  if (blind == 0 || rebased_boot_[job] >= blind) return;
  // The blind boot is one of the boots so far, so the rebase is done once.
  REHEARSE_ASSERT_LE(blind, process.boots());
  rebased_boot_[job] = process.boots();
  episode_attempts_[job].clear();
  episode_base_[job] = context_.retry_count.surviving(job, 0, false);
  REHEARSE_ASSERT_GE(episode_base_[job], 0);
  for (auto& [key, attempts] : slot_attempts_) {
    if (key.first != job) continue;
    attempts.clear();
    slot_base_[key] = context_.retry_count.surviving(job, key.second, true);
    REHEARSE_ASSERT_GE(slot_base_[key], 0);
  }
}

void RetriesBounded::on_retry_scheduled(const TraceEvent& e, std::size_t i, const MonitoredJob& job,
                                        Violations& out) {
  // observe() hands over a judged job's retry_scheduled.
  REHEARSE_ASSERT_EQ(e.type, "retry_scheduled");
  REHEARSE_ASSERT(job.policy_judged);
  const WitnessPolicy& p = job.policy;
  const std::string cls = e.str("failure_class");
  if (!p.valid) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: a retry was scheduled although its policy is "
                               "invalid ({})",
                               e.job, slot_text(e.slot), p.why_invalid)});
  } else if (!cls.empty() && !p.retries_class(cls)) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: a retry was scheduled for class {}, which its "
                               "policy does not retry",
                               e.job, slot_text(e.slot), cls)});
  } else if (e.num("attempt") > p.retries_max) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} scheduled, beyond the policy's {}", e.job,
                               slot_text(e.slot), e.num("attempt"), p.retries_max)});
  }
}

// The exact window: a retry the queue receives for a fresh failure (at its
// instant, or at the replay of its run's intent after a crash) is due within the policy's window
// for the n-th retry of the budget (n from the monitors' own count): no earlier than the jitter's
// floor, no later than the base delay. From the queue's own record (`queue_add`, kind retry:
// `ready_at`), not from the core's notice.
void RetriesBounded::check_window(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "queue_add" || e.str("kind") != "retry" || !e.flag("added") || !e.slot) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || !job->policy.valid) return;
  const WitnessPolicy& p = job->policy;
  const SlotWatch& s = context_.slots.at(e.job, *e.slot);
  const bool fresh = context_.retry_count.fresh(e.job, *e.slot, p.per_slot);
  REHEARSE_ASSERT(context_.slots.job(e.job) != nullptr);
  const auto& failed_t = p.per_slot ? s.last_failure_t : context_.slots.job(e.job)->last_failure_t;
  // A retry restored at a boot for a failure already answered keeps its old
  // due time (not fresh: not judged again). One the boot's replay of a run's
  // intent adds answers the failure that intent committed: its due time
  // counts from that failure, as the queue's own at the failure's instant.
  if (!fresh || !failed_t) return;
  const auto ready = parse_instant(e.str("ready_at"));
  if (!ready.ok()) return;
  if (!p.rules.empty()) {
    check_rule_window(e, i, *job, *ready, *failed_t, out);
    return;
  }
  const int n = context_.retry_count.scheduled(e.job, *e.slot, p.per_slot) + 1;
  if (n > p.retries_max) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} queued, beyond the policy's {} ({})",
                               e.job, slot_text(e.slot), n, p.retries_max,
                               p.per_slot ? "per_slot" : "per_episode")});
    return;
  }
  if (p.past_deadline(*e.slot, *ready)) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} queued due {}, after the policy's "
                               "deadline {} after the slot",
                               e.job, slot_text(e.slot), n, format_instant(*ready),
                               format_duration(p.deadline_ms))});
    return;
  }
  // The core adds the backoff to its own clock's reading of the failure.
  const DurationMs delay = *ready - context_.wall_clock.wall(*failed_t);
  const DurationMs high = decorrelated_high(p, e.job, *e.slot, n, delay, p.max_delay_ms(n));
  const auto [lo, hi] = honoured(p, e.job, p.min_delay_ms(n), high);
  if (delay < lo || delay > hi) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} queued {} after the failure, outside its "
                               "policy's window [{}, {}]",
                               e.job, slot_text(e.slot), n, format_duration(delay),
                               format_duration(lo + 1), format_duration(hi - 1))});
  }
}

// Several retriers: the retry belongs to the retrier of the class the world
// saw fail the run, and is judged by that retrier's own count and curve.
void RetriesBounded::check_rule_window(const TraceEvent& e, std::size_t i, const MonitoredJob& job,
                                       TimeMs ready, TimeMs failed_t, Violations& out) {
  const WitnessPolicy& p = job.policy;
  const SlotWatch& s = context_.slots.at(e.job, *e.slot);
  if (!s.last_failure_class) return;
  const WitnessRule* rule = p.rule_of(*s.last_failure_class);
  if (rule == nullptr) return;  // retries_class judges a class no retrier takes
  const auto index = static_cast<std::size_t>(rule - p.rules.data());
  const int n = context_.retry_count.scheduled_by_rule(e.job, *e.slot, index) + 1;
  if (n > rule->retries_max) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} of retrier {} ({}) queued, beyond its "
                               "MaxAttempts {}",
                               e.job, slot_text(e.slot), n, index, *s.last_failure_class,
                               rule->retries_max)});
    return;
  }
  WitnessPolicy one = p;
  one.rules.clear();
  one.delays = rule->delays;
  const DurationMs delay = ready - context_.wall_clock.wall(failed_t);
  const auto [lo, hi] = honoured(p, e.job, one.min_delay_ms(n), one.max_delay_ms(n));
  if (delay < lo || delay > hi) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {} slot {}: retry {} of retrier {} queued {} after the "
                               "failure, outside its window [{}, {}]",
                               e.job, slot_text(e.slot), n, index, format_duration(delay),
                               format_duration(lo + 1), format_duration(hi - 1))});
  }
}

// Decorrelated jitter: retry n > 1 is at most 3 times the previous retry's
// wait in the slot's chain, as the queue recorded it (capped), when that wait
// was the curve's own (no Retry-After the policy honours could have
// lengthened it); otherwise the bound over any history stands. Remembers
// this retry's wait for the next.
DurationMs RetriesBounded::decorrelated_high(const WitnessPolicy& p, const std::string& job,
                                             TimeMs slot, int n, DurationMs delay,
                                             DurationMs high) {
  if (p.delays.jitter != WitnessDelays::Jitter::decorrelated) return high;
  std::optional<DurationMs>& previous = decorrelated_previous_[{job, slot}];
  if (n > 1 && previous) high = std::min(high, p.delays.decorrelated_after_ms(*previous) + 1);
  const bool hinted = p.honors_retry_after && context_.retry_after.last(job) > 0;
  previous = hinted ? std::nullopt : std::optional<DurationMs>(delay);
  return high;
}

std::pair<DurationMs, DurationMs> RetriesBounded::honoured(const WitnessPolicy& p,
                                                           const std::string& job, DurationMs lo,
                                                           DurationMs hi) const {
  const DurationMs hint = context_.retry_after.last(job);
  if (!p.honors_retry_after || hint == 0) return {lo, hi};
  // The monitors' slack of 1 ms on either side, as min/max_delay_ms keep it.
  return {std::max(lo, hint - 1), std::max(hi, hint + 1)};
}

// The retry budget: a fresh retry the queue receives must fit the window of
// the process deciding for the job (the shared table holds it before this event).
void RetriesBounded::check_budget(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "queue_add" || e.str("kind") != "retry" || !e.flag("added") || !e.slot) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || !job->policy.valid || job->policy.budget.name.empty()) return;
  if (!context_.retry_count.fresh(e.job, *e.slot, job->policy.per_slot)) return;
  const std::optional<BudgetRoom> room = context_.budgets.room(e.job, e.t);
  if (!room || room->has_room()) return;
  const WitnessPolicy::Budget& b = job->policy.budget;
  out.push_back(
      {kName, i, e.t,
       fmt::format("job {} slot {}: a retry queued beyond retry budget {}: {} retries "
                   "and {} attempts in the last {} allow {} ({}%, at least {})",
                   e.job, slot_text(e.slot), b.name, room->retries + 1, room->attempts,
                   format_duration(b.window_ms), room->allowed, b.percent, b.min_retries)});
}

void RetriesBounded::tally(nlohmann::json& tallies) const {
  // Retries are counted only for jobs of the table (observe looks them up).
  for (const auto& [id, n] : retries_) REHEARSE_ASSERT(context_.jobs.find(id) != nullptr);
  for (const auto& [id, config] : context_.jobs.all()) {
    const auto it = retries_.find(id);
    tallies["jobs"][id]["retries"] = it == retries_.end() ? std::int64_t{0} : it->second;
  }
}

}  // namespace rehearse::sim
