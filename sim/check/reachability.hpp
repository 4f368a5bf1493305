// Reachability points (docs/check.md "Coverage"): named situations a search
// must reach, in the spirit of "sometimes" assertions. A point is reached in
// a run when the world's own records show the situation (a retry a cap
// shortened, a reconcile batch that left items for the next cycle, a standby
// taking over with a retry pending, a job kind, policy form, fault kind or
// failure class in action, a zoned job's slot on the day of a daylight-saving
// gap or fold); `rehearse check --coverage` counts the cases
// that reached each point, and `--require-coverage` fails when a point of the
// table was reached by no case. The observer reads the trace as the monitors
// do, from world facts, and judges nothing.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

struct ReachabilityPoint {
  std::string name;     // "retry:capped", "job:call", "fault:restart", ...
  std::string meaning;  // one line: what the world showed
};

// Every point, in table order: the named situations, then one per job kind,
// policy form, fault kind and failure class (each from its own table).
const std::vector<ReachabilityPoint>& reachability_points();

class ReachabilityObserver {
 public:
  explicit ReachabilityObserver(const Scenario& scenario);

  void observe(const TraceEvent& event);
  // The names of the points reached so far, in table order.
  std::vector<std::string> reached() const;

 private:
  struct ReconcileRun {
    std::set<std::string> asked;  // items with a get_issue in this run
  };
  // The local calendar day, as instants [begin, end), of a change of its
  // zone's offset inside the span: a spring-forward gap or a fall-back fold.
  struct TransitionDay {
    TimeMs begin = 0;
    TimeMs end = 0;
    bool gap = false;
  };

  void reach(const std::string& name) {
    REHEARSE_ASSERT_NE(name.find(':'), std::string::npos);  // every point is "group:detail"
    reached_.insert(name);
  }
  void on_queue(const TraceEvent& e);
  void on_retry_added(const TraceEvent& e);
  void on_reply(const TraceEvent& e);
  void note_policy_shape(const TraceEvent& e, const WitnessPolicy& p);
  void on_exhausted(const TraceEvent& e);
  void on_durable(const TraceEvent& e);
  void on_reconcile(const TraceEvent& e);
  void on_item_reply(const TraceEvent& e);
  void on_worker_lock(const TraceEvent& e);
  void note_listed_roles();
  void note_transition_days();
  void on_regular_slot(const TraceEvent& e);
  int retry_number(const TraceEvent& e, const WitnessPolicy& policy);

  const Scenario& scenario_;
  JobTable jobs_;
  std::set<std::string> reached_;
  std::map<std::string, bool> last_retry_after_;  // by job: its last reply carried one
  // Retries queued per (job, slot) and per job since its last `ok` row: the
  // number of the retry a queue_add announces (the monitors' own count).
  std::map<std::pair<std::string, TimeMs>, int> per_slot_;
  std::map<std::string, int> per_episode_;
  std::set<std::uint64_t> waiting_retries_;    // retry entries queued, not yet taken or gone
  std::map<std::string, std::string> stages_;  // item -> durable stage
  std::map<std::string, ReconcileRun> reconcile_runs_;  // job -> its run in progress
  std::optional<std::string> lock_holder_;              // the process holding the worker lock
  bool booted_once_ = false;                            // the disk queue was opened once already
  std::set<std::string> migrated_;               // reconcile jobs yet to meet the new instance
  std::set<std::string> first_cycle_;            // jobs in their first cycle on it
  std::set<std::string> legacy_agents_;          // short ids listed under a legacy role name
  bool roles_mixed_ = false;                     // a named agent listed under a role not theirs
  bool lead_legacy_ = false;                     // the lead listed under a legacy role name
  std::map<std::string, int> transient_in_row_;  // item -> transient answers about it in a row
  // Zoned job -> the days of its zone's transitions inside the span.
  std::map<std::string, std::vector<TransitionDay>> transition_days_;
};

}  // namespace rehearse::sim
