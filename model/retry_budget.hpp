// Retry budgets (docs/retry.md "Retry budgets"): retries as a share of the
// attempts over a sliding window, shared by every job whose policy names the
// same budget. A fleet that retries in step can keep a recovering provider
// down (a metastable failure); a budget caps the retries the whole fleet adds
// at once, as Envoy's retry budgets (budget_percent, min_retry_concurrency)
// and Finagle's RetryBudget (percentCanRetry, minRetriesPerSec) do.
//
// The rule, at the instant `now` a run fails and would be retried: the retry
// is made iff
//   retries made in (now - window, now] + 1
//       <= max(min_retries, attempts started in (now - window, now] * percent / 100)
// (integer division). An attempt is a run the worker took from its queue
// (regular or retry) of any job naming the budget; each policy judges by its own numbers, the
// counts are shared by name. The counts live in the worker process's memory, as Envoy's and
// Finagle's do: a restart starts them empty.
#pragma once

#include <map>
#include <set>
#include <string>

#include "model/time.hpp"

namespace rehearse {

inline constexpr DurationMs kRetryBudgetWindowMaxMs = kHourMs;
inline constexpr int kRetryBudgetMinRetriesMax = 1000;

struct RetryBudget {
  std::string name;  // empty: no budget
  int percent = 20;  // 0..100
  DurationMs window_ms = 10 * kSecondMs;
  int min_retries = 3;

  bool operator==(const RetryBudget&) const = default;
};

// What one budget's window held at an instant.
struct RetryBudgetCounts {
  std::int64_t attempts = 0;
  std::int64_t retries = 0;
};

class RetryBudgets {
 public:
  void note_attempt(const std::string& name, TimeMs now);
  void note_retry(const std::string& name, TimeMs now);
  RetryBudgetCounts counts(const RetryBudget& budget, TimeMs now) const;
  // Whether one more retry fits `budget` at `now` (the rule above).
  bool allows(const RetryBudget& budget, TimeMs now) const;

 private:
  struct Window {
    std::multiset<TimeMs> attempts;
    std::multiset<TimeMs> retries;
  };
  // Drops what no window can reach any more (the longest is an hour). A
  // machine clock set back leaves later instants in place: they count only
  // once `now` passes them again.
  static void prune(std::multiset<TimeMs>& instants, TimeMs now);
  std::map<std::string, Window> windows_;
};

// The most retries `budget` allows in a window that held `attempts`.
std::int64_t retry_budget_allowance(const RetryBudget& budget, std::int64_t attempts);

}  // namespace rehearse
