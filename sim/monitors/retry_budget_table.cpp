#include "sim/monitors/retry_budget_table.hpp"

#include <algorithm>
#include <iterator>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {
std::int64_t within(const std::multiset<TimeMs>& instants, TimeMs now, DurationMs window) {
  return static_cast<std::int64_t>(
      std::distance(instants.upper_bound(now - window), instants.upper_bound(now)));
}
}  // namespace

void RetryBudgetTable::observe(const TraceEvent& e, bool fresh) {
  if (e.type != "queue_take" && e.type != "queue_add") return;
  const MonitoredJob* job = jobs_.find(e.job);
  if (job == nullptr || !job->policy.valid || job->policy.budget.name.empty()) return;
  const std::string& name = job->policy.budget.name;
  const TimeMs now = wall_clock_.wall(e.t);
  if (e.type == "queue_take") {
    const std::int64_t pid = pid_of(e);
    leases_[e.job] = Lease{pid, process_.boots()};
    windows_[{pid, process_.boots(), name}].attempts.insert(now);
    return;
  }
  if (e.str("kind") != "retry" || !e.flag("added") || !fresh) return;
  const auto lease = leases_.find(e.job);
  if (lease == leases_.end() || lease->second.boots != process_.boots()) return;
  windows_[{lease->second.pid, lease->second.boots, name}].retries.insert(now);
}

std::optional<BudgetRoom> RetryBudgetTable::room(const std::string& job, TimeMs t) const {
  const MonitoredJob* config = jobs_.find(job);
  if (config == nullptr || !config->policy.valid || config->policy.budget.name.empty()) {
    return std::nullopt;
  }
  const auto lease = leases_.find(job);
  if (lease == leases_.end() || lease->second.boots != process_.boots()) return std::nullopt;
  const WitnessPolicy::Budget& b = config->policy.budget;
  BudgetRoom out;
  const auto w = windows_.find({lease->second.pid, lease->second.boots, b.name});
  const TimeMs now = wall_clock_.wall(t);
  if (w != windows_.end()) {
    out.attempts = within(w->second.attempts, now, b.window_ms);
    out.retries = within(w->second.retries, now, b.window_ms);
  }
  out.allowed = std::max<std::int64_t>(b.min_retries, out.attempts * b.percent / 100);
  REHEARSE_ASSERT_GE(out.allowed, 0);
  return out;
}

}  // namespace rehearse::sim
