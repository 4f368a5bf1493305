// retries_bounded (docs/semantics.md §2, §10): retries stay within the
// policy, by the monitors' own reading of it (witness_policy.hpp). Reads runs
// (the queue's takes and finishes, the durable row: run_facts.hpp), the
// retry_scheduled notifications the outbox received, and the queue's own
// record of each retry (`queue_add`, kind retry: its `ready_at`):
// - a retry of a job whose policy is invalid or absent;
// - more distinct retries than the budget allows (per (job, slot) under
//   per_slot, per job until a run that did not fail under per_episode);
// - a retry after a failure class the policy does not retry;
// - a retry started before the failure + the least backoff (after a blind
//   boot, a retry the queue held from before it counts from the failure
//   that queued it);
// - a retry_scheduled beyond the limit or for a class not retried;
// - the exact window: a retry queued at a fresh failure is due within
//   [floor(d * (1 - jitter)), d] of it, d the delay of the n-th retry of the
//   budget, n from the shared count (retry_count.hpp); beyond the budget fires.
//   A policy that honours Retry-After: the window's both ends are at least
//   the Retry-After of the job's last reply (retry_after_table.hpp).
//   Decorrelated jitter: at most 3 times the chain's previous wait (capped).
// - a retry added beyond the policy's retry budget (retry_budget_table.hpp:
//   the window's retries plus this one above max(min_retries, attempts *
//   percent / 100) in the process deciding).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/supersede_watch.hpp"

namespace rehearse::sim {

class RetriesBounded final : public Monitor {
 public:
  static constexpr const char* kName = "retries_bounded";
  static constexpr const char* kSummary =
      "retries stay within the policy's budget and delays, and only for retryable failures";
  static std::vector<std::string> reads() {
    return {"queue_take",   "queue_intent", "queue_done",           "durable_job_state",
            "outbox_add",   "queue_add",    "queue_cancel",         "process_crash",
            "process_boot", "disk_crash",   "disk_process_crashed", "service_reply"};
  }

  RetriesBounded(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // jobs.<id>.retries: distinct retry attempts started.
  void tally(nlohmann::json& tallies) const override;

 private:
  void on_retry_started(const TraceEvent& e, std::size_t i, const MonitoredJob& job,
                        Violations& out);
  void on_retry_scheduled(const TraceEvent& e, std::size_t i, const MonitoredJob& job,
                          Violations& out);
  void check_window(const TraceEvent& e, std::size_t i, Violations& out);
  void check_budget(const TraceEvent& e, std::size_t i, Violations& out);
  void check_rule_window(const TraceEvent& e, std::size_t i, const MonitoredJob& job, TimeMs ready,
                         TimeMs failed_t, Violations& out);

  // The window [lo, hi] of a retry, raised to the Retry-After of the job's
  // last reply when its policy honours it.
  std::pair<DurationMs, DurationMs> honoured(const WitnessPolicy& p, const std::string& job,
                                             DurationMs lo, DurationMs hi) const;
  DurationMs decorrelated_high(const WitnessPolicy& p, const std::string& job, TimeMs slot, int n,
                               DurationMs delay, DurationMs high);

  MonitorContext& context_;
  SupersedeWatch supersede_;  // per_episode: a later slot supersedes pending retries
  // Distinct retry attempts run: per (job, slot) under per_slot, per job
  // (slot, attempt) in the episode under per_episode.
  std::map<std::pair<std::string, TimeMs>, std::set<int>> slot_attempts_;
  std::map<std::string, std::set<std::pair<TimeMs, int>>> episode_attempts_;
  // After a blind boot (process_tracker.hpp): the retries the damaged store
  // still holds, counted before the attempts started since; the boot a
  // job's attempts were last rebased at.
  std::map<std::pair<std::string, TimeMs>, int> slot_base_;
  std::map<std::string, int> episode_base_;
  std::map<std::string, std::int64_t> rebased_boot_;
  // Decorrelated jitter: the last retry's wait per (job, slot), when it was
  // the curve's own.
  std::map<std::pair<std::string, TimeMs>, std::optional<DurationMs>> decorrelated_previous_;
  void rebase_after_blind_boot(const std::string& job);
  // Each retry the queue received (job, slot, attempt), first time: the
  // failure it answered and the boot it was added in (a cancel forgets it).
  // After a blind boot, a retry queued before it (one the queue still held,
  // or one run again because the damage lost its end) counts its backoff
  // from the failure that first queued it, and is judged on that failure's
  // class.
  struct QueuedRetry {
    std::optional<TimeMs> failed_t;
    std::optional<std::string> failure_class;
    std::int64_t boot = 0;
  };
  // The failure a started retry answers: its instant and class.
  struct Answered {
    std::optional<TimeMs> failed_t;
    std::optional<std::string> failure_class;
  };
  std::map<std::tuple<std::string, TimeMs, int>, QueuedRetry> queued_;
  void note_queued_retry(const TraceEvent& e);
  Answered failure_answered(const TraceEvent& e, Answered last) const;
  std::map<std::string, std::int64_t> retries_;  // tally
};

}  // namespace rehearse::sim
