#include "sim/check/liveness.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "model/assert.hpp"
#include "sim/monitors/handoff_roles.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/monitors/stage_rank.hpp"
#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

namespace {

constexpr DurationMs kPeriodHorizonMs = 400 * kDayMs;

// The longest a call may take: the slowest service's timeout plus latency.
DurationMs slowest_call_ms(const Scenario& s) {
  DurationMs worst = kDefaultServiceTimeoutMs + kDefaultServiceLatencyMs;
  const auto consider = [&](const ServiceTiming& t) {
    worst = std::max(worst, t.timeout_ms + t.latency_ms);
  };
  if (s.services.model_api) consider(s.services.model_api->timing);
  if (s.services.orchestrator) consider(s.services.orchestrator->timing);
  if (s.services.brokerage) consider(s.services.brokerage->timing);
  if (s.services.messenger) consider(s.services.messenger->timing);
  for (const auto& [name, u] : s.services.user) consider(u.timing);
  return worst;
}

// The longest Retry-After a service of the world may send: a fixed one, or
// "auto"'s wait for one token, at most the rate's window (a lowered rate is
// still at least one request per window).
DurationMs longest_retry_after_ms(const Scenario& s) {
  DurationMs longest = 0;
  for (const auto& [name, u] : s.services.user) {
    if (!u.capacity) continue;
    const ServiceCapacity& c = *u.capacity;
    if (c.retry_after == ServiceCapacity::RetryAfter::fixed) {
      longest = std::max(longest, c.retry_after_ms);
    }
    if (c.retry_after == ServiceCapacity::RetryAfter::next_token) {
      longest = std::max(longest, (c.per_ms + kSecondMs - 1) / kSecondMs * kSecondMs);
    }
  }
  return longest;
}

// One job's longest full retry chain: every attempt's run allowance plus
// every retry's largest delay (a Retry-After it honours may lengthen each).
DurationMs chain_ms(const JobSpec& spec, const MonitoredJob& job, DurationMs call_ms,
                    DurationMs retry_after_ms) {
  const WitnessPolicy& p = job.policy;
  const DurationMs run_ms = (job_kind_def(spec.kind).calls_per_run(spec) + 1) * call_ms;
  // A deadline ends the chain: no retry comes due after it, then one run.
  const DurationMs by_deadline =
      p.valid && p.deadline_ms > 0 ? p.deadline_ms + run_ms : kMaxSettleMs + 1;
  DurationMs total = by_deadline;
  if (!p.valid || p.retries_max != kWitnessUnlimited) {
    const int retries = p.valid ? p.retries_max : 0;
    total = (static_cast<DurationMs>(retries) + 1) * run_ms;
    // Past the settle cap the exact length no longer matters (and a thousand
    // saturated delays would overflow).
    for (int n = 1; n <= retries && total <= kMaxSettleMs; ++n) {
      const DurationMs hinted = p.honors_retry_after ? retry_after_ms : 0;
      total += std::min(std::max(p.max_delay_ms(n), hinted), kMaxSettleMs + 1);
    }
    if (p.valid && p.deadline_ms > 0) total = std::min(total, by_deadline);
  }
  // Work the kind defers itself (a reconcile item's own backoff) waits on.
  total += job_kind_def(spec.kind).settle_ms;
  REHEARSE_ASSERT_GE(total, 0);
  return total;
}

// The gap between the first two firings after `after` (0 when unknown).
DurationMs period_ms(const MonitoredJob& job, TimeMs after) {
  if (!job.cron) return 0;
  const auto first = job.cron->next_after(after, kPeriodHorizonMs);
  if (!first) return 0;
  const auto second = job.cron->next_after(*first, kPeriodHorizonMs);
  return second ? *second - *first : 0;
}

// Whether an agent the environment names for a role is listed under a role
// name that does not map to that role (the monitors' own table): every
// handoff to that role, or every handoff at all for the lead, is a config
// error the world keeps standing.
bool roles_stand_against(const Scenario& s) {
  if (!s.services.orchestrator) return false;
  for (const OrchestratorAgent& a : s.services.orchestrator->agents) {
    const std::optional<std::string> named = env_role_of(s, a.id);
    if (named && witness_role_of(a.role) != named) return true;
  }
  return false;
}

// Whether the world itself still stands against an item at the end: its
// issue deleted, an agent absent (declared so, or removed) and not restored
// after, or an agent listed under a role name that is not its role's.
bool world_stands_against(const Scenario& s, const std::string& issue) {
  if (roles_stand_against(s)) return true;
  std::set<std::string> absent;
  if (const auto& o = s.services.orchestrator) {
    for (const OrchestratorAgent& a : o->agents) {
      if (!a.present) absent.insert(a.id);
    }
  }
  std::vector<const FaultSpec*> faults;
  for (const FaultSpec& f : s.faults) faults.push_back(&f);
  std::stable_sort(faults.begin(), faults.end(),
                   [](const FaultSpec* a, const FaultSpec* b) { return a->at_ms < b->at_ms; });
  for (const FaultSpec* f : faults) {
    if (f->kind == FaultKind::issues_deleted &&
        std::find(f->issues.begin(), f->issues.end(), issue) != f->issues.end()) {
      return true;
    }
    if (f->kind == FaultKind::agent_removed) absent.insert(f->agent);
    if (f->kind == FaultKind::agent_restored) absent.erase(f->agent);
  }
  return !absent.empty();
}

// Whether liveness judges the job's retries: the monitors read its policy
// (every form; not an "auto" on a schedule they cannot read) and its full
// chain fits the settle cap. A chain longer than the cap (a Temporal policy
// with 100 x initialInterval as its maximum, days apart) cannot be waited
// out by a bounded run; retries_bounded still bounds every retry of it.
bool chain_judged(const JobSpec& spec, const MonitoredJob& job, DurationMs call_ms) {
  return job.policy_judged && chain_ms(spec, job, call_ms, 0) <= kMaxSettleMs;
}

// Whether the world damaged the job's own file (job_file_corrupted): the job
// then fails closed until an operator repairs the file, which no world does,
// so it never settles (state_durable judges that it fails closed).
bool job_file_damaged(const Scenario& s, const std::string& job_id) {
  return std::any_of(s.faults.begin(), s.faults.end(), [&](const FaultSpec& f) {
    return f.kind == FaultKind::job_file_corrupted && f.job == job_id;
  });
}

// Whether the job calls a service with a capacity: a standing condition, not
// a fault that ends, so a refusal (and the retry it leaves pending) may come
// at any instant of the span, the last one included.
bool calls_limited_service(const Scenario& s, const JobSpec& spec) {
  for (const JobSpec::Call& call : spec.calls) {
    const auto it = s.services.user.find(call.service);
    if (it != s.services.user.end() && it->second.capacity) return true;
  }
  return false;
}

std::optional<Violation> unsettled_job(const Scenario& s, const ScenarioRunResult& run,
                                       const std::string& when) {
  const JobTable table(s);
  const DurationMs call_ms = slowest_call_ms(s);
  for (const FinalJobState& f : run.final_states) {
    // Waiting for its next slot (next_action wait_next_run) is the schedule's
    // business; a retry still pending a bound after the last fault is not.
    if (!f.state || f.state->retry_status != RetryStatus::retrying ||
        f.state->next_action != NextAction::retry) {
      continue;
    }
    const JobSpec* spec = s.find_job(f.job_id);
    const MonitoredJob* job = table.find(f.job_id);
    if (spec == nullptr || job == nullptr || !chain_judged(*spec, *job, call_ms)) continue;
    if (job_file_damaged(s, f.job_id) || calls_limited_service(s, *spec)) continue;
    return Violation{
        kLivenessInvariant, run.trace.size(), run.end_ms,
        fmt::format(
            "job {} still has a retry pending at the end (retry_count {}, next_retry_at {}), {}",
            f.job_id, f.state->retry_count,
            f.state->next_retry_at ? format_instant(*f.state->next_retry_at) : "none", when)};
  }
  return std::nullopt;
}

// Whether the fault-free reference run has the item stuck too (a standing
// condition of the world's configuration, such as an agent id not set).
bool stuck_without_faults(const ScenarioRunResult* reference, const FinalItemState& item) {
  if (reference == nullptr) return false;
  for (const FinalItemState& r : reference->final_items) {
    if (r.job_id == item.job_id && r.issue == item.issue) return !r.reconcile_error.empty();
  }
  return false;
}

// Whether the item's job runs often enough late in the span to retry the
// item: only a regular run of the job queries its items, an item's own
// backoff or configuration deferral is at most an hour (docs/reconcile.md),
// and a run with a `batch_size` queries that many due items, the least
// recently visited first, so every item gets its turn within
// ceil(items / batch_size) runs. The job must fire that many times from an
// hour after the last fault's end, the last one a run's allowance before
// `until`. A reconcile job firing twice a day leaves its items waiting for
// those runs, as a job waits for its next slot.
bool job_runs_after_deferral(const Scenario& s, const std::string& job_id, TimeMs last) {
  const JobTable table(s);
  const MonitoredJob* job = table.find(job_id);
  const auto spec =
      std::find_if(s.jobs.begin(), s.jobs.end(), [&](const JobSpec& j) { return j.id == job_id; });
  if (job == nullptr || !job->cron || spec == s.jobs.end()) return false;  // unknown: not judged
  const auto items = static_cast<std::int64_t>(spec->items.size());
  const std::int64_t batch = spec->batch_size.value_or(0);
  const std::int64_t rounds =
      batch > 0 ? std::max<std::int64_t>(1, (items + batch - 1) / batch) : 1;
  const DurationMs allowance =
      (job_kind_def(spec->kind).calls_per_run(*spec) + 1) * slowest_call_ms(s);
  const TimeMs from = last + kHourMs - 1;
  const TimeMs to = s.until_ms - allowance;
  if (to <= from) return false;
  const auto runs = static_cast<std::size_t>(rounds);
  return job->cron->between(from, to, runs).size() == runs;
}

std::optional<Violation> unsettled_item(const Scenario& s, const ScenarioRunResult& run,
                                        TimeMs last, const std::string& when,
                                        const ReferenceRun& reference) {
  const ScenarioRunResult* ref = nullptr;
  bool asked = false;
  for (const FinalItemState& item : run.final_items) {
    if (terminal_stage(item.stage) || item.reconcile_error.empty()) {
      continue;
    }
    if (world_stands_against(s, item.issue) || job_file_damaged(s, item.job_id)) continue;
    if (!job_runs_after_deferral(s, item.job_id, last)) continue;
    if (!asked && reference) ref = reference();
    asked = true;
    if (stuck_without_faults(ref, item)) continue;
    return Violation{
        kLivenessInvariant, run.trace.size(), run.end_ms,
        fmt::format("item {} of job {} is stuck at {} with the reconcile error '{}' (the same "
                    "world without faults is not), {}",
                    item.issue, item.job_id, item.stage, item.reconcile_error, when)};
  }
  return std::nullopt;
}

}  // namespace

TimeMs last_fault_end_ms(const Scenario& s) {
  TimeMs last = s.start_ms;
  for (const FaultSpec& f : s.faults) {
    TimeMs end = fault_has_duration(f.kind) ? f.end_ms(s.until_ms) : f.at_ms;
    if (f.kind == FaultKind::restart || f.kind == FaultKind::torn_write) end += f.down_for_ms;
    last = std::max(last, end);
  }
  return last;
}

DurationMs settle_bound_ms(const Scenario& s, TimeMs after) {
  const JobTable table(s);
  const DurationMs call_ms = slowest_call_ms(s);
  const DurationMs retry_after_ms = longest_retry_after_ms(s);
  DurationMs chains = 0;
  DurationMs period = 0;
  for (const JobSpec& spec : s.jobs) {
    const MonitoredJob* job = table.find(spec.id);
    if (job == nullptr) continue;
    if (chain_judged(spec, *job, call_ms)) chains += chain_ms(spec, *job, call_ms, retry_after_ms);
    period = std::max(period, period_ms(*job, after));
  }
  // Every wait in progress when the machine's clock stepped back ends that
  // much later (docs/semantics.md §4 "Clock steps").
  DurationMs stepped_back = 0;
  for (const FaultSpec& f : s.faults) {
    if (f.kind == FaultKind::clock_step && f.step_ms < 0) stepped_back -= f.step_ms;
  }
  return std::min(kMaxSettleMs, chains + std::min(period, kSettlePeriodCapMs) + stepped_back);
}

std::optional<Violation> judge_liveness(const Scenario& s, const ScenarioRunResult& run,
                                        const ReferenceRun& reference) {
  if (run.outcome != RunOutcome::completed) return std::nullopt;
  const TimeMs last = last_fault_end_ms(s);
  const DurationMs bound = settle_bound_ms(s, last);
  if (s.until_ms - last < bound) return std::nullopt;  // the span leaves no settle window
  const std::string when =
      fmt::format("{} after the last fault ended at {} (settle bound {})",
                  format_duration(s.until_ms - last), format_instant(last), format_duration(bound));
  // A torn tail no process has seen yet: the read-back drops it as the next
  // boot would (reported then), so the jobs' durable state may lack what was
  // acknowledged before the damage; they are not judged (docs/check.md).
  if (!run.unreported_torn_tail && !run.store_failing_closed) {
    if (auto job = unsettled_job(s, run, when)) return job;
  }
  return unsettled_item(s, run, last, when, reference);
}

}  // namespace rehearse::sim
