// Invariant monitors (docs/semantics.md §10): independent witnesses.
//
// A monitor that asked the core whether the core was right would prove
// nothing, so these read only the trace (docs/trace-events.md lists every
// event they use) and judge with their own, simpler logic: a brute-force
// minute-by-minute cron matcher, a table of what each policy form allows, a
// record of sends, guard writes, replies and deferrals. Nothing here calls
// model/cron, model/retry_policy, model/retry_machine or classify.
//
// Use: MonitorSet set(scenario); set.add_secret(token) as tokens are issued;
// set.observe(event, index) for every recorded event in order (the first
// violation the event shows is returned); set.observe_text(...) for log lines
// and reports; set.finish(until) for the end checks; set.tallies() for the
// summary. A check the monitors cannot make (a cron syntax the matcher does
// not know, an env override that leaves no schedule) is skipped loudly: it is
// listed under tallies()["unchecked"], never passed silently.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"
#include "sim/scenario.hpp"
#include "sim/trace.hpp"

namespace rehearse::sim {

struct Violation {
  std::string invariant;    // one of invariant_names() (sim/scenario.hpp)
  std::size_t event_index;  // the event that showed it (end checks: trace size)
  TimeMs t;                 // virtual time of that event
  std::string message;      // what was seen, in words a user can act on (job/slot/item named)
};

// The invariants, in docs/semantics.md §10's order plus bounded_run: one
// table, the only list of their names (invariant_names(), the loader's
// `expect.violations` check and the JSON Schema's enum follow it; a test holds
// the schema equal). `reads` is what the invariant's monitor subscribes to:
// the trace event types it reads ("*": every event's JSON line as text, as
// no_secret_leak and bounded_run do; deterministic compares whole traces).
// MonitorSet::observe hands a monitor no event outside the union of these
// lists and kSharedReads, so a check cannot read an event it does not declare;
// tests/sim/test_monitor_sources.cpp checks each declared type against the
// source the trace records for it (world or core).
struct InvariantSpec {
  std::string name;
  std::vector<std::string> reads;
};
const std::vector<InvariantSpec>& invariant_specs();
// What the shared trackers read (process up/down, the slot tracker, tallies).
const std::vector<std::string>& shared_reads();

// The monitors' own cron matcher (brute force, minute by minute; 6 fields:
// the seconds of each matching minute). Supports `*`, `?`, numbers, ranges,
// lists, steps, month and weekday names, weekday 7, and the macros; refuses
// (with a reason) anything else (`L`, `#`, `W`, ...), so that the caller can
// skip its check loudly.
class WitnessCron {
 public:
  static std::optional<WitnessCron> parse(std::string_view expr, std::string* why);

  bool matches_minute(TimeMs minute_start) const;
  // Matching instants in (after, until], in order, at most `limit` of them.
  std::vector<TimeMs> between(TimeMs after, TimeMs until, std::size_t limit) const;
  // First matching instant strictly after `t`, searching at most `horizon_ms`.
  std::optional<TimeMs> next_after(TimeMs t, DurationMs horizon_ms) const;
  bool low_frequency() const noexcept { return low_frequency_; }

 private:
  std::vector<bool> seconds_, minutes_, hours_, doms_, months_, dows_;
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
  bool low_frequency_ = false;
};

// What the monitors believe a job's policy allows (their own table).
// A slot's fate as the shared slot tracker sees it (the last one seen wins;
// docs/monitors.md "Tallies").
enum class SlotState {
  handed,            // handed out, not yet run
  running,           // a run started
  failed,            // the last run failed, nothing followed yet
  retry_pending,     // a retry was scheduled
  marked_skipped,    // the run marked the slot skipped, not yet finished
  delivered,         // success (or already complete after a delivery)
  skipped,           // the slot was skipped
  exhausted,         // retry_exhausted
  failed_permanent,  // failed_permanent
  retry_dropped,     // a queued retry dropped because the store could not be trusted
  superseded,        // per_episode: a newer slot dropped its pending retry
  coalesced,         // folded into a late run
};

// The tracker's name for a slot state (tallies, per-slot listings).
const char* to_string(SlotState state) noexcept;

// One slot as the shared slot tracker sees it (MonitorSet::slot_records()).
struct SlotRecord {
  std::string job;
  TimeMs slot = 0;
  SlotState state = SlotState::handed;
  int attempts = 0;                           // runs of the slot started
  std::optional<std::string> failure_class;   // of its last failure, if any
};

struct WitnessPolicy {
  bool valid = false;
  std::string why_invalid;
  int retries_max = 0;
  bool per_slot = false;
  bool all_classes = false;
  std::set<std::string> classes;
  bool exponential = false;
  bool linear = false;                 // delay * n
  std::optional<DurationMs> cap_ms;    // max_delay: a cap on each delay, before jitter
  DurationMs delay_ms = 0;
  double jitter = 0.0;

  bool retries_class(const std::string& failure_class) const;
  // The delay the policy gives retry n (>= 1) before jitter: `delay`,
  // round(2^(n-1) * delay) when exponential (docs/semantics.md §2), or
  // delay * n when linear; never above the cap when one is given.
  DurationMs base_delay_ms(int n) const;
  // The least delay before retry n (>= 1) the policy allows (jitter included, 1 ms slack).
  DurationMs min_delay_ms(int n) const;
  // The largest delay before retry n (>= 1): the base delay (jitter only
  // lowers it), 1 ms slack.
  DurationMs max_delay_ms(int n) const;
};

class MonitorSet {
 public:
  // Jobs, their schedule (+ env override), their retry_policy JSON.
  explicit MonitorSet(const Scenario& scenario);
  // Token values as issued; full agent ids are added from the scenario.
  void add_secret(std::string value);
  // A directory the world keeps a locked store in (the state store, the
  // delivery ledger, a pipeline store): its files change only under a lock
  // taken in it (state_durable). Directories where a lock is taken are added
  // on their own.
  void add_locked_store(std::string dir);
  // Per event (call for every recorded event, in order). Returns the first
  // violation this event shows.
  std::optional<Violation> observe(const TraceEvent& event, std::size_t index);
  // Also checks free text that is not a trace event (log lines, the report) for secrets.
  std::optional<Violation> observe_text(std::string_view text, std::size_t index, TimeMs t);
  // (end) checks after the run stopped at `until` (nothing_lost, ...). In-flight
  // slots are not violations.
  std::vector<Violation> finish(TimeMs until_ms);
  // Counts the monitors gathered, for the summary table and expect checks
  // (slots delivered/skipped/failed/in flight, retries, exhausted,
  // notifications per event, runs, calls per job / per service, item
  // queries...). docs/monitors.md shows the shape.
  nlohmann::json tallies() const;
  // tallies()["jobs"][job]["slots"]: [{slot, outcome, attempts, attempt_at,
  // notifications}] in time order (outcome: delivered, skipped, failed,
  // exhausted, in_flight, superseded, coalesced).
  nlohmann::json slot_list(const std::string& job) const;

  // Every violation seen so far (observe, observe_text and finish), in order.
  const std::vector<Violation>& violations() const noexcept { return all_; }
  const WitnessPolicy* policy_of(const std::string& job) const;
  // Every slot the tracker knows, by (job, slot).
  std::vector<SlotRecord> slot_records() const;

 private:
  struct JobWatch;
  struct SlotWatch;
  using Found = std::vector<Violation>;

  std::optional<Violation> report(Found out);
  std::optional<TraceEvent> notification_of(const TraceEvent& e);
  std::vector<std::pair<TraceEvent, std::size_t>> run_facts_of(const TraceEvent& e,
                                                               std::size_t i);
  void note_durable_state(const TraceEvent& e);
  void note_pending_finish(const TraceEvent& e);
  void flush_pending_finish(Found& out);
  void run_checks(const TraceEvent& e, std::size_t i, Found& out);
  void on_boot_or_crash(const TraceEvent& e, std::size_t i, Found& out, bool boot);
  void check_stage(const TraceEvent& e, std::size_t i, Found& out);
  void check_retries(const TraceEvent& e, std::size_t i, Found& out);
  void check_schedule(const TraceEvent& e, std::size_t i, Found& out);
  void on_handout(const TraceEvent& e, std::size_t i, Found& out);
  void check_none_skipped(JobWatch& j, TimeMs s, const TraceEvent& e, std::size_t i, Found& out);
  void mark_coalesced(const std::string& job, TimeMs carrier, const std::vector<TimeMs>& folded,
                      std::size_t i);
  void check_durable_schedule(const TraceEvent& e, std::size_t i, Found& out);
  void track_slots(const TraceEvent& e, std::size_t i);
  void check_delivery(const TraceEvent& e, std::size_t i, Found& out);
  void note_ledger(const TraceEvent& e, std::size_t i);
  void check_durable(const TraceEvent& e, std::size_t i, Found& out);
  bool note_state_damage(const TraceEvent& e, std::size_t i);
  bool check_corrupt_file_kept(const TraceEvent& e, std::size_t i, Found& out);
  void check_retry_counter(const TraceEvent& e, std::size_t i, Found& out);
  void check_budget_spent(const TraceEvent& e, std::size_t i, Found& out);
  void check_tokens(const TraceEvent& e, std::size_t i, Found& out);
  void check_items(const TraceEvent& e, std::size_t i, Found& out);
  void check_config_attempts(const TraceEvent& e, std::size_t i, Found& out);
  void check_locked_writes(const TraceEvent& e, std::size_t i, Found& out);
  void check_group_verdict(const TraceEvent& e, std::size_t i, Found& out);
  void judge_group_run(const std::string& job, std::size_t i, TimeMs t, Found& out);
  void check_token_reuse(const TraceEvent& e, std::size_t i, Found& out);
  void check_retry_window(const TraceEvent& e, std::size_t i, Found& out);
  void check_never_runs(const TraceEvent& e, std::size_t i, Found& out);
  void check_slot_due_at_firing(const TraceEvent& e, std::size_t i, Found& out);
  void track_recovery(const TraceEvent& e, std::size_t i);
  void check_secrets(std::string_view text, std::size_t i, TimeMs t, const char* what, Found& out);
  void unchecked(std::string invariant, std::string subject, std::string why);
  JobWatch* job_watch(const std::string& id);
  SlotWatch& slot_watch(const std::string& job, TimeMs slot);

  struct JobWatch {
    std::string id;
    // group and publish jobs: a successful run must have delivered (or marked
    // the slot skipped); a success without any delivery is a lost slot.
    bool delivers = false;
    WitnessPolicy policy;
    std::optional<WitnessCron> cron;
    // An environment override set but empty: the job has no schedule and
    // must never run (schedule_kept fires on any queue entry for it).
    bool never_runs = false;
    // nothing_lost, the group verdict: the job's tasks (scenario) and the run
    // in progress as the world sees it (queue take, model-api replies, sends).
    struct Task {
      std::string id;
      std::string produces;  // summary, preview, skip
      int model_calls = 1;
    };
    std::vector<Task> tasks;
    struct GroupRun {
      TimeMs slot = 0;
      std::map<std::string, std::string> results;  // task -> deliverable / skip / failed
      bool failure_seen = false;   // a failure notice or a retry for the slot
      bool delivery_seen = false;  // a delivery for the slot
    };
    std::optional<GroupRun> group_run;
    // nothing_lost, the recovery notice: a failure notification (retry_scheduled,
    // retry_exhausted, failed_permanent) went to the messenger; a success after
    // it must be followed by a `recovered` notification.
    bool showed_failure = false;
    std::optional<std::size_t> success_unannounced;  // the success still owing `recovered`
    TimeMs success_unannounced_t = 0;
    // schedule_kept
    std::optional<TimeMs> last_slot;    // last slot handed out or coalesced
    std::optional<TimeMs> last_handed;  // the slot of the last slot_due
    struct PendingMisfire {
      TimeMs slot = 0;
      std::int64_t coalesced = 0;
      std::size_t index = 0;
    };
    std::optional<PendingMisfire> pending_misfire;
    // The hand-out whose durable write must set next_run_at to `next`.
    struct PendingNext {
      TimeMs slot = 0;
      std::optional<TimeMs> next;
    };
    std::optional<PendingNext> pending_next;
    std::int64_t durable_coalesced = 0;  // coalesced_slots in the last durable row
    // retries_bounded / state_durable: the budget the monitors count themselves
    int episode_retries = 0;  // per_episode: retries run in the episode
    std::set<std::pair<TimeMs, int>> episode_attempts;
    int episode_scheduled = 0;  // per_episode: retry_scheduled seen in the episode
    std::optional<std::string> last_failure_class;  // per_episode: the episode's last failure
    std::optional<TimeMs> last_failure_t;
    // tallies
    std::int64_t runs = 0, retries = 0, calls = 0;
    std::map<std::string, std::int64_t> notifications;
    std::string final_status;
    DurationMs max_delay_ms = 0;
  };
  struct SlotWatch {
    std::string job;
    TimeMs slot = 0;
    std::size_t handed_index = 0;
    std::optional<TimeMs> carried_by;  // a coalesced slot: the run that carried it
    SlotState state = SlotState::handed;
    std::size_t state_index = 0;
    TimeMs state_t = 0;
    std::set<int> retry_attempts;  // per_slot: retries run
    int scheduled = 0;             // per_slot: retry_scheduled seen
    std::optional<std::string> last_failure_class;
    std::optional<TimeMs> last_failure_t;
    std::optional<std::size_t> run_index;  // current run's run_started
    int runs = 0;                          // runs of the slot started
    bool stalled = false;  // its durable record showed a stall since its last finished run
    bool guard_in_run = false;  // the current run consumed the guard or set the marker
    bool guard_durable = false;  // the ledger durably holds the guard (or the marker)
    // tallies()["jobs"][id]["slots"]: when each run of the slot started, and
    // the notifications for the slot, by event.
    std::vector<TimeMs> attempt_at;
    std::map<std::string, std::int64_t> notifications;
  };

  // Copied from the scenario (the set does not keep a reference to it).
  TimeMs start_ms_ = 0;
  std::int64_t max_events_ = 0;
  std::map<std::string, JobWatch> jobs_;
  std::map<std::pair<std::string, TimeMs>, SlotWatch> slots_;
  std::vector<std::string> secrets_;
  std::vector<Violation> all_;
  nlohmann::json unchecked_ = nlohmann::json::array();
  std::size_t events_seen_ = 0;
  bool bounded_fired_ = false;
  TimeMs last_t_ = 0;

  // process
  bool up_ = false;
  std::int64_t boots_ = 0;
  std::optional<TimeMs> boot_t_;

  // stage_monotonic
  std::map<std::string, std::string> stages_;

  // no_duplicate_delivery: per (job, slot, target)
  struct SendWatch {
    std::int64_t delivered = 0;
    bool window_open = false;
    std::int64_t window_cuts = 0;  // crashes inside the window: duplicates allowed
    std::int64_t duplicates_in_window = 0;
  };
  std::map<std::tuple<std::string, TimeMs, std::string>, SendWatch> sends_;
  std::int64_t failure_notices_ = 0;

  // state_durable
  std::map<std::string, std::int64_t> lock_holders_;  // lock file -> process holding it
  std::set<std::string> lock_dirs_;                   // directories of locked stores
  std::vector<std::string> corrupt_paths_;
  std::optional<std::size_t> corrupt_index_;
  bool corrupt_seen_by_core_ = false;  // a state_corrupt event since the injection
  bool boot_after_corruption_ = false;
  std::optional<std::size_t> boot_after_corruption_index_;
  bool corrupt_mode_ = false;  // a state_corrupt was seen since the last boot
  // A failure not yet answered by a retry / exhausted / permanent notice
  // (a notice without one is a replayed intent, not a new decision).
  bool notifications_seen_ = false;  // the scenario declares a messenger (notifications go there)
  std::set<std::string> fresh_failure_;
  std::set<std::pair<std::string, TimeMs>> fresh_slot_failure_;

  // token_reissue_bounded: per request id
  struct RequestWatch {
    std::optional<std::int64_t> last_status;  // last authenticated reply
    int unauthorized = 0;
    int reissues = 0;
  };
  std::map<std::string, RequestWatch> requests_;
  // token_reissue_bounded, the first-401 rule: a token refused with a 401 is
  // dropped, so no request may be sent with it after that 401 reached the
  // client (001's bug kept the rejected token until a restart).
  std::map<std::string, std::string> rejected_fingerprint_;  // request id -> token it was refused
  std::map<std::string, TimeMs> unauthorized_seen_at_;       // fingerprint -> first 401 received
  std::map<std::string, TimeMs> last_sent_at_;               // request id -> its last call
  std::int64_t token_issues_ = 0, reissues_ = 0;

  // item_queries_bounded
  struct ItemWatch {
    std::optional<TimeMs> not_found_at;
    // From the orchestrator's own answers: the reply that showed a config
    // error (a refusal, or a handoff needed while the lead agent is missing).
    std::optional<TimeMs> config_error_at;
    bool validation_allowed = false;  // an instance change since: one validation query
    std::int64_t queries = 0;
    std::string reason;  // the latest reconcile error (item_failed / _deferred / _backoff)
  };
  std::map<std::string, ItemWatch> items_;
  std::string lead_prefix_;   // AGENT_LEAD_ID's first 8 characters (events carry those)
  bool lead_present_ = false;  // the lead agent is in the orchestrator's list now

  std::map<std::string, std::int64_t> service_calls_;
  std::map<std::string, std::int64_t> notifications_total_;
  std::set<std::string> notices_seen_;
  // Runs from the queue's records (run_facts_of): by queue entry id.
  struct OpenRun {
    std::string job;
    TimeMs slot = 0;
    std::string kind;
    std::int64_t attempt = 0;
    std::size_t take_index = 0;
    TimeMs take_t = 0;
    bool intent = false;
    bool wrote = false;  // the job's durable state changed while it ran
  };
  struct PendingFinish {
    OpenRun run;
    std::size_t index = 0;
    TimeMs t = 0;
    std::optional<std::string> failure_class;  // set: a failure
  };
  std::optional<PendingFinish> pending_finish_;
  std::map<std::uint64_t, OpenRun> open_runs_;
  std::map<std::string, nlohmann::json> durable_state_;  // job -> its durable facts  // notifications read from the outbox (notification_of)
};

// (cross) deterministic: compares two traces' JSON Lines; first differing line -> Violation.
std::optional<Violation> compare_traces(const Trace& a, const Trace& b);

}  // namespace rehearse::sim
