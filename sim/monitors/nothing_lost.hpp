// nothing_lost (docs/semantics.md §4, §6, §10): every slot ends delivered,
// skipped, or failed visibly, and a group's verdict follows its tasks'
// results. Reads runs (run_facts.hpp), the notifications the outbox
// received, the messenger's records, the queue's takes and retries and the
// model API's replies (`status`, `body_class`):
// - a group or publish run that reports success with nothing of the slot
//   delivered and the slot not marked skipped (001's bug), or with a target
//   that never got the delivery (sent, or held by the ledger);
// - the group verdict from world facts: each task's result is its model-api
//   reply (200 summary/preview: a deliverable; 200 skip: a skip; anything
//   else: a failure) or, for a task making no call, what the scenario
//   scripts; a skipped run treated as failed, or a failed one that
//   delivered, fires (judged at the job's next take or at the end);
// - retry_exhausted only with the budget spent; failed_permanent on a class
//   the policy retries (the class of the slot's last failed run as the
//   world's replies give it, run_facts.hpp) only with the budget spent, after a second stall,
//   with an invalid policy or while the store refuses writes;
// - the recovery notice: after a failure notification reached the messenger,
//   the next success owes a `recovered` one (end; a crash forgives it, and
//   so does a blind boot, process_tracker.hpp, between the two);
// - a reconcile item entering DESIGN_FAILED in the durable pipeline file
//   (`durable_stage`) with no reconcile error saying why (§8);
// - a run leased (`queue_take`, with the taking process) by a process that
//   then died is recovered before the worker takes other work: finished
//   (`queue_done`, an intent's replay or a second stall) or put back
//   (`queue_requeue`); a take while such a lease is left fires (a standby
//   acting beside a live worker never recovers what the dead one held;
//   docs/worker.md);
// - a fetch or call run whose own request's last answer failed, reported as a
//   success (a swallowed failure);
// - a sequential fetch run, or a call run, sending a request after another
//   of its requests failed (sequential_requests.hpp);
// - a retry of a per_slot job cancelled (only a per_episode budget
//   supersedes a retry);
// - a queue entry put back to run again after its second stall (a run stalled
//   twice fails);
// - a regular entry leaves the queue only after its run's intent (no regular
//   slot is dropped);
// - a retry a run's finish queues comes with a retry_scheduled message in the
//   same queue operation (the outbox's record), or it is a hidden retry;
// - a group run whose verdict is failed sends its failure notice to every
//   target (delivered or refused) before it ends (its intent);
// - policy_invalid once per change of the recorded error: the scenario fixes
//   a job's policy, so the error cannot change; a second notice while the
//   job's durable row records the error (and the store was neither damaged
//   since nor refusing writes) is a repeat;
// - notifications reach the messenger at least once, a refused one is not
//   retried (notice_sends.hpp);
// - end: a failed run followed by nothing while the process is up; a job
//   whose policy is invalid (the monitors' own reading) with a durable row
//   that never recorded the policy error, or no policy_invalid notice.
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
#include "sim/monitors/notice_sends.hpp"
#include "sim/monitors/sequential_requests.hpp"

namespace rehearse::sim {

class NothingLost final : public Monitor {
 public:
  static constexpr const char* kName = "nothing_lost";
  static constexpr const char* kSummary =
      "every due slot ends delivered, skipped, failed with a notice, or still in flight";
  static std::vector<std::string> reads() {
    return {"queue_take",    "queue_intent",     "queue_done",        "durable_job_state",
            "outbox_add",    "durable_delivery", "message_delivered", "message_refused",
            "queue_add",     "service_reply",    "process_crash",     "disk_process_crashed",
            "disk_crash",    "durable_stage",    "queue_requeue",     "queue_cancel",
            "outbox_remove", "service_call",     "job_file_damaged"};
  }

  NothingLost(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  Violations finish(TimeMs until) override;

 private:
  // The group run in progress as the world sees it.
  struct GroupRun {
    TimeMs slot = 0;
    std::map<std::string, std::string> results;  // task -> deliverable / skip / failed
    bool failure_seen = false;                   // a failure notice or a retry for the slot
    bool delivery_seen = false;                  // a delivery for the slot
    std::set<std::string> noticed;               // targets a failure notice was sent to
  };
  // The verdict's inputs: any deliverable, any failure; none when not every
  // task answered.
  struct GroupVerdict {
    bool deliverable = false;
    bool failed = false;
  };
  std::optional<GroupVerdict> verdict_of(const std::string& job, const GroupRun& run) const;
  void check_every_task_ran(const std::string& job, const GroupRun& run, std::size_t i, TimeMs t,
                            Violations& out) const;
  void check_failure_noticed(const std::string& job, const GroupRun& run, std::size_t i, TimeMs t,
                             Violations& out) const;
  struct JobWatch {
    std::optional<GroupRun> group_run;
    bool showed_failure = false;           // a failure notification reached the messenger
    std::int64_t showed_failure_boot = 0;  // the boot it reached the messenger in
    bool showed_failure_refused = false;   // shown while the store refused writes
    // The last failure notification the core committed (the outbox's fact):
    // the boot it was committed in, and whether the store refused writes
    // then. A delivery in a later boot is the outbox replaying it.
    std::int64_t failure_committed_boot = 0;
    bool failure_committed_refused = false;
    std::optional<std::size_t> success_unannounced;  // the success still owing `recovered`
    TimeMs success_unannounced_t = 0;
  };

  void check_retry_announced(const TraceEvent& e, std::size_t i, Violations& out);
  void check_request_failure_swallowed(const TraceEvent& e, std::size_t i, Violations& out) const;
  void check_per_slot_retry_kept(const TraceEvent& e, std::size_t i, Violations& out) const;
  void check_stall_rerun(const TraceEvent& e, std::size_t i, std::int64_t id, Violations& out);
  void note_policy_visibility(const TraceEvent& e);
  void judge_invalid_policies_shown(Violations& out) const;
  void check_regular_outcome(const TraceEvent& e, std::size_t i, std::int64_t id, Violations& out);
  void check_success_delivered(const TraceEvent& e, std::size_t i, Violations& out);
  void note_ledger_targets(const TraceEvent& e);
  void check_budget_spent(const TraceEvent& e, std::size_t i, Violations& out);
  void check_rule_spent(const TraceEvent& e, std::size_t i, const WitnessPolicy& p,
                        const std::string& cls, bool stalled, Violations& out);
  void check_group_verdict(const TraceEvent& e, std::size_t i, Violations& out);
  void judge_group_run(const std::string& job, std::size_t i, TimeMs t, Violations& out);
  void track_recovery(const TraceEvent& e, std::size_t i);
  void check_item_failed_visibly(const TraceEvent& e, std::size_t i, Violations& out);
  // Leases of the queue's entries and those their dead holders left.
  struct Lease {
    std::int64_t process = 0;
    std::string what;  // "job slot attempt n"
    TimeMs died_at = 0;
  };
  void track_leases(const TraceEvent& e, std::size_t i, Violations& out);
  void orphan_leases_of(const TraceEvent& e);

  MonitorContext& context_;
  NoticeSends sends_;                // notifications from the outbox to the messenger
  SequentialRequests sequential_;    // requests of sequential runs
  bool notifications_seen_ = false;  // the scenario declares a messenger
  std::map<std::string, JobWatch> jobs_;
  std::set<std::string> ledger_damaged_;                // jobs whose ledger the world damaged
  std::set<std::pair<std::string, TimeMs>> delivered_;  // slots with a delivery sent
  // Slots whose durable ledger record says skipped: a later run of the slot
  // (a boot that lost its state and whose clock a step set back hands old
  // slots out again) finds them complete.
  std::set<std::pair<std::string, TimeMs>> ledger_skipped_;
  // (job, slot, target) a delivery reached: sent, or held by the ledger.
  std::set<std::tuple<std::string, TimeMs, std::string>> delivered_to_;
  std::map<std::string, std::vector<std::string>> targets_;  // a delivering job's targets
  std::map<std::string, std::string> item_stages_;           // issue -> its last durable stage
  std::map<std::int64_t, Lease> leases_;                     // queue id -> lease of a live process
  std::map<std::int64_t, Lease> orphans_;                    // queue id -> lease of a dead one
  // The finish being recorded: the adds and messages still to come.
  struct FinishWatch {
    std::int64_t adds_left = 0;
    std::int64_t outbox_left = 0;
    std::set<std::string> retried;    // jobs it queued a retry for
    std::set<std::string> announced;  // jobs it committed a retry_scheduled for
    std::size_t index = 0;
    TimeMs t = 0;
  };
  std::optional<FinishWatch> finish_;
  std::set<std::int64_t> intents_;      // queue entries with an intent recorded
  std::map<std::int64_t, int> stalls_;  // queue entry -> re-runs after its lease was orphaned
  // Jobs whose policy the monitors read as invalid: what their durable rows
  // and the outbox showed of it.
  struct PolicyShown {
    bool row_seen = false;           // a durable row of the job exists
    bool in_state = false;           // a row recorded the policy error
    bool noticed = false;            // the outbox received policy_invalid for the job
    bool recorded = false;           // the job's last durable row records the policy error
    std::int64_t recorded_boot = 0;  // the boot that row was read in
  };
  void check_policy_noticed_once(const TraceEvent& e, std::size_t i, Violations& out) const;
  std::map<std::string, PolicyShown> invalid_policies_;
};

}  // namespace rehearse::sim
