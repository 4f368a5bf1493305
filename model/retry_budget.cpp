#include "model/retry_budget.hpp"

#include <algorithm>
#include <iterator>

#include "model/assert.hpp"

namespace rehearse {

namespace {
std::int64_t in_window(const std::multiset<TimeMs>& instants, TimeMs now, DurationMs window) {
  const auto first = instants.upper_bound(now - window);
  const auto last = instants.upper_bound(now);
  return static_cast<std::int64_t>(std::distance(first, last));
}
}  // namespace

void RetryBudgets::prune(std::multiset<TimeMs>& instants, TimeMs now) {
  instants.erase(instants.begin(), instants.lower_bound(now - kRetryBudgetWindowMaxMs));
}

void RetryBudgets::note_attempt(const std::string& name, TimeMs now) {
  REHEARSE_ASSERT(!name.empty());
  Window& w = windows_[name];
  prune(w.attempts, now);
  w.attempts.insert(now);
}

void RetryBudgets::note_retry(const std::string& name, TimeMs now) {
  REHEARSE_ASSERT(!name.empty());
  Window& w = windows_[name];
  prune(w.retries, now);
  w.retries.insert(now);
}

RetryBudgetCounts RetryBudgets::counts(const RetryBudget& budget, TimeMs now) const {
  REHEARSE_ASSERT(budget.window_ms > 0 && budget.window_ms <= kRetryBudgetWindowMaxMs);
  const auto it = windows_.find(budget.name);
  if (it == windows_.end()) return {};
  return {in_window(it->second.attempts, now, budget.window_ms),
          in_window(it->second.retries, now, budget.window_ms)};
}

bool RetryBudgets::allows(const RetryBudget& budget, TimeMs now) const {
  const RetryBudgetCounts c = counts(budget, now);
  return c.retries + 1 <= retry_budget_allowance(budget, c.attempts);
}

std::int64_t retry_budget_allowance(const RetryBudget& budget, std::int64_t attempts) {
  REHEARSE_ASSERT(budget.percent >= 0 && budget.percent <= 100);
  REHEARSE_ASSERT(budget.min_retries >= 0 && budget.min_retries <= kRetryBudgetMinRetriesMax);
  REHEARSE_ASSERT_GE(attempts, 0);
  return std::max<std::int64_t>(budget.min_retries, attempts * budget.percent / 100);
}

}  // namespace rehearse
