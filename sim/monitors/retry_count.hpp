// Shared tracker: the retries each budget has scheduled, by the monitors' own
// count (per (job, slot) under a per_slot budget, per job until a run that
// did not fail under per_episode), and which failures are still unanswered.
// A failure is fresh from its run's end until a retry, retry_exhausted or
// failed_permanent notification answers it; a notification without a fresh
// failure is a replayed intent repeating an old decision, not a new retry.
// Read by retries_bounded (the exact window), nothing_lost (the budget spent)
// and state_durable (the counter the core announces). Updated after the
// monitors have judged an event.
//
// After a blind boot (process_tracker.hpp: the state store was damaged when
// the process booted) the counts the store held may be lost with the damaged
// records (docs/state-file.md: a journal cut at a record boundary, or how
// much a cut took, cannot be told): each job's count is rebased on the first
// durable row the world reads of it after that boot (`retry_count`, and each
// in-flight slot's under per_slot), or 0 when the job runs before any row
// was read (an unreadable store keeps nothing).
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"

namespace rehearse::sim {

class RetryCount {
 public:
  explicit RetryCount(const JobTable& jobs) : jobs_(jobs) {}

  // run_finished, retry_scheduled, retry_exhausted, failed_permanent.
  void observe(const TraceEvent& event);

  // An unanswered failure of the job's budget (the slot's under per_slot).
  bool fresh(const std::string& job, TimeMs slot, bool per_slot) const;
  // Retries scheduled so far in the job's budget (the slot's under per_slot).
  int scheduled(const std::string& job, TimeMs slot, bool per_slot) const;
  // A blind boot: every job's count is rebased on what the store still holds.
  void rebase_after_blind_boot();
  // The retries the last rebase found already started (0 when none was
  // made): the row's count, less the retry it still has pending
  // (next_action retry), which the boot runs again as that same retry.
  int surviving(const std::string& job, TimeMs slot, bool per_slot) const;
  // A policy of several retriers: the retries retrier `rule` has scheduled
  // for the slot (each counts its own; by the class each retry answered).
  int scheduled_by_rule(const std::string& job, TimeMs slot, std::size_t rule) const;

 private:
  const JobTable& jobs_;
  std::set<std::string> fresh_failure_;
  std::set<std::pair<std::string, TimeMs>> fresh_slot_failure_;
  std::map<std::pair<std::string, TimeMs>, int> slot_scheduled_;
  std::map<std::string, int> episode_scheduled_;
  std::set<std::string> rebase_;  // jobs whose count awaits the surviving durable row
  std::map<std::pair<std::string, TimeMs>, int> slot_surviving_;
  std::map<std::string, int> episode_surviving_;
  std::map<std::tuple<std::string, TimeMs, std::size_t>, int> rule_scheduled_;

  void rebase(const std::string& job, const TraceEvent* row);
  void rebase_rules(const std::string& job, TimeMs slot, const nlohmann::json& record);
  void count_by_rule(const MonitoredJob& job, const TraceEvent& e);
};

}  // namespace rehearse::sim
