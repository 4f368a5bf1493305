// Scenario files: the typed form of an incident timeline and its loader.
//
// A scenario is one JSON document (docs/scenario-format.md, schema in
// docs/schema/scenario.schema.json): a virtual time span, the simulated
// services and their initial state, the scheduled jobs, a timeline of faults
// and what must hold at the end. The loader is strict on purpose: an unknown
// key, a wrong type, a bad instant, duration or cron, a fault outside the time
// span or a reference to something undeclared is an error naming the file, the
// JSON pointer and what was expected. A typo must never turn into a silently
// ignored setting, because a scenario that quietly tests less than its author
// meant is worse than one that does not load.
//
// Some things are *not* errors but flags: a job whose retry policy is missing
// or invalid (a scenario may replay exactly that omission, docs/semantics.md
// §2), a `publish` job that retries without an idempotency key or a
// reason, an environment override that gives a job an unusable schedule. The
// scenario is valid and runs; `rehearse validate --strict` refuses it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/environment.hpp"
#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "model/notification.hpp"
#include "model/result.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"
#include "sim/world/service_capacity.hpp"

namespace rehearse::sim {

inline constexpr int kScenarioFormat = 1;

// ---------------------------------------------------------------- services

enum class ServiceKind : unsigned char { model_api, orchestrator, brokerage, messenger };
// "model-api", "orchestrator", "brokerage", "messenger": the names used in
// files, traces and reports.
const char* to_string(ServiceKind kind) noexcept;
std::optional<ServiceKind> parse_service_kind(std::string_view name) noexcept;

inline constexpr DurationMs kDefaultServiceLatencyMs = 100;
// A scenario that declares no messenger gets one with this single target,
// where every notice goes (docs/scenario-format.md, `services`).
inline constexpr const char* kImplicitMessengerTarget = "ops";
inline constexpr DurationMs kDefaultServiceTimeoutMs = 30 * kSecondMs;

// Every simulated service answers after `latency_ms`; a call that times out
// (a `timeouts` fault) fails after `timeout_ms`, the client's own limit.
struct ServiceTiming {
  DurationMs latency_ms = kDefaultServiceLatencyMs;
  DurationMs timeout_ms = kDefaultServiceTimeoutMs;
};

struct ModelApiService {
  ServiceTiming timing;
};

struct OrchestratorIssue {
  std::string id;
  std::string status;  // one of issue_status_names()
};

struct OrchestratorAgent {
  std::string id;
  std::string role;     // as the orchestrator reports it (may be a legacy or unknown name)
  bool present = true;  // false: declared, but absent from the agent list at `start`
};

struct OrchestratorService {
  std::string instance = "orchestrator-1";  // changes when a migration names a new instance
  std::vector<OrchestratorIssue> issues;
  std::vector<OrchestratorAgent> agents;
  ServiceTiming timing;
};

struct BrokerageService {
  DurationMs token_lifetime_ms = 24 * kHourMs;
  // How long an issuance takes to answer; absent: timing.latency_ms.
  std::optional<DurationMs> issue_latency_ms;
  ServiceTiming timing;
};

struct MessengerService {
  std::vector<std::string> targets;
  ServiceTiming timing;
};

// A service the user names ("billing-api"): only `call` jobs call it; it
// takes the service fault kinds (quota_exhausted, http_errors, timeouts,
// network_errors) like the built-in ones.
struct UserService {
  ServiceTiming timing;
  std::optional<ServiceCapacity> capacity = std::nullopt;  // sim/world/service_capacity.hpp
};

// A service is declared when its key is present; jobs and faults may only use
// declared services. A key that is not a built-in name declares a user service.
struct ServiceDecls {
  std::optional<ModelApiService> model_api;
  std::optional<OrchestratorService> orchestrator;
  std::optional<BrokerageService> brokerage;
  std::optional<MessengerService> messenger;
  std::map<std::string, UserService> user;  // by name, in name order

  bool has(ServiceKind kind) const noexcept;
};

// -------------------------------------------------------------------- jobs

// A job kind is a position in the table of job kinds (job_kind_table(),
// sim/world/job_kind_table.hpp). The enumerators name the built-in kinds,
// which the world's own services know; a kind added to the table needs none.
enum class JobKind : unsigned char { group, fetch, reconcile, publish, call };
enum class TaskOutput : unsigned char { summary, preview, skip };

const char* to_string(JobKind kind) noexcept;
// Every job kind the scenario format knows, in JobKind order (the loader's
// table): what generators and coverage iterate, so a new kind is drawn too.
const std::vector<JobKind>& all_job_kinds();
const char* to_string(TaskOutput output) noexcept;

// What a re-run does outside when a job declares nothing: fetch and reconcile
// only read or update internal state; a group job's deliveries are guarded
// per slot by the send guard; a publish job publishes.
// (SideEffectKind is the core's vocabulary, model/retry_policy.hpp.)
SideEffectKind default_side_effects(JobKind kind) noexcept;
// Whether jobs of the kind keep a durable file of their own (a group or
// publish job's delivery ledger, a reconcile job's pipeline file).
bool job_keeps_file(JobKind kind) noexcept;

struct GroupTask {
  std::string id;
  TaskOutput produces = TaskOutput::summary;  // what the task yields when its calls succeed
  int model_calls = 1;                        // model-api calls per run (default 0 for skip)
};

struct ReconcileItem {
  std::string issue;                // external issue id in the orchestrator
  std::string stage = "DESIGNING";  // initial internal stage, one of stage_names()
  bool lost = false;                // the issue is already gone from the orchestrator at `start`
};

// One scheduled job. Fields after the common block apply to one kind only and
// stay empty / default for the others (the loader refuses them elsewhere).
struct JobSpec {
  std::string id;
  JobKind kind = JobKind::group;
  std::string schedule;                     // default cron expression, as written (validated)
  std::optional<std::string> schedule_env;  // env variable that overrides `schedule`
  // IANA zone the schedule is read in ("tz"); absent: UTC, unless the
  // expression carries a CRON_TZ= prefix (docs/semantics.md §3).
  std::optional<std::string> tz;
  // The policy exactly as written (object, "auto", or anything else): the
  // core's policy parser decides what it means, so an invalid policy reaches
  // the core unchanged and fails closed there. Absent: no policy at all.
  std::optional<nlohmann::json> retry_policy;
  // The policy held its system's own text (or a file of it), read by the
  // loader into the system's keys (docs/policies.md "Native files").
  bool policy_from_text = false;
  SideEffectKind side_effects = SideEffectKind::draft;
  std::optional<std::string> idempotency_key;
  std::string note;

  // group
  std::vector<GroupTask> tasks;
  // group, publish: messenger targets
  std::vector<std::string> targets;
  // fetch
  int requests = 1;       // authenticated brokerage requests per run
  bool parallel = false;  // the run's requests go out together (they share one reissue)
  // reconcile
  std::vector<ReconcileItem> items;
  std::optional<int> batch_size;  // at most this many due items per cycle; absent: all
  // call: the user services it calls, in order (method and path: trace only)
  struct Call {
    std::string service;
    std::string method = "GET";
    std::string path = "/";
  };
  std::vector<Call> calls;
  // A kind without typed fields here (one added to the job kind table,
  // sim/world/job_kind_table.hpp): its own keys as its reader kept them.
  nlohmann::json params = nlohmann::json::object();

  std::string pointer;  // "/jobs/3": where the job is in the file, for messages
  // Generated by a `fleet` block (sim/world/fleet.hpp), not listed in `jobs`: the
  // monitors keep counts of its slots, not a slot-by-slot history, unless
  // expect.jobs.<id>.slots names it (docs/monitors.md "Tallies").
  bool from_fleet = false;
};

// ------------------------------------------------------------------ faults

// A fault kind is a position in the table of fault kinds (fault_kinds(),
// sim/world/fault_kinds.hpp), which describes each kind once: keys, instant or
// lasting, what it applies to, trace fields, how it is applied. The
// enumerators name the kinds that code refers to directly; a kind added to
// the table needs none (tests/sim/world/test_fault_kinds.cpp checks these against
// the table).
enum class FaultKind : unsigned char {
  quota_exhausted,
  http_errors,
  timeouts,
  network_errors,
  token_revoked,
  issues_deleted,
  issue_status,
  agent_removed,
  agent_restored,
  restart,
  state_corrupted,
  torn_write,
  messenger_down,
  job_file_corrupted,
  clock_step,
  capacity,
};
// The kind's name in the table / the kind named `name` there.
const char* to_string(FaultKind kind) noexcept;
std::optional<FaultKind> parse_fault_kind(std::string_view name) noexcept;
// Kinds that last (`for`); the others happen at one instant (the table's `lasting`).
bool fault_has_duration(FaultKind kind) noexcept;

// The state files of docs/semantics.md §5.
enum class StateFile : unsigned char { retry_state, jobs, jobs_state };
const char* to_string(StateFile file) noexcept;  // "retry_state.json", ...

// flip: bytes XORed with 0x01 (at `flips`, or one drawn byte with a drawn mask).
enum class CorruptionMode : unsigned char { garbage, empty, truncated, schema, flip };
const char* to_string(CorruptionMode mode) noexcept;

// One timeline entry. As with JobSpec, kind-specific fields are meaningful for
// their kinds only (listed beside each); the loader fills them through the
// table's keys (FaultKeySpec::store).
struct FaultSpec {
  FaultKind kind = FaultKind::restart;
  TimeMs at_ms = 0;                  // absolute; an offset "+16h" is resolved against start
  std::optional<DurationMs> for_ms;  // lasting kinds; absent: until the end of the run
  std::string note;

  std::optional<ServiceKind> service;  // quota_exhausted, http_errors, timeouts,
                                       // network_errors, token_revoked
  std::string user_service;            // instead of `service`: a user service's name
  int http_status = 0;                 // http_errors, messenger_down
  double rate =
      1.0;  // http_errors, timeouts, network_errors: share of calls hit; capacity: share left
  TransportErrorKind transport = TransportErrorKind::none;  // network_errors
  std::vector<std::string> issues;                          // issues_deleted
  std::optional<std::string> new_instance;                  // issues_deleted
  std::string issue;                                        // issue_status
  std::string status;                                       // issue_status
  std::string agent;                                        // agent_removed, agent_restored
  DurationMs down_for_ms = 0;                               // restart, torn_write
  DurationMs step_ms = 0;  // clock_step: how far the machine's wall clock jumps (< 0: back)
  int worker = 0;          // restart: the worker process (1-based); 0: the machine, every worker
  StateFile file = StateFile::retry_state;        // state_corrupted, torn_write
  CorruptionMode mode = CorruptionMode::garbage;  // state_corrupted
  // state_corrupted, exact damage (seed-independent): `cut` keeps that many
  // bytes (mode truncated); `flips` are byte offsets, each XORed with 0x01
  // (mode flip). Absent: drawn from the disk's generator.
  std::optional<std::uint64_t> cut;
  std::vector<std::uint64_t> flips;
  std::vector<std::string> targets;  // messenger_down (empty: every target)
  std::string job;                   // job_file_corrupted: a group, publish or reconcile job
  // The keys of a kind whose table entry gives them no field above, by name,
  // as the loader read them (FaultValue::value).
  nlohmann::json params = nlohmann::json::object();

  std::string pointer;  // "/faults/2"

  // End of a lasting fault: at + for, or `until` when `for` is absent.
  TimeMs end_ms(TimeMs until_ms) const noexcept { return for_ms ? at_ms + *for_ms : until_ms; }
};

// ------------------------------------------------------------- expectations

// The job's durable state at the end of the run (decoded from the simulated
// disk's bytes); each field is optional. For the two instants, an engaged
// outer optional holding an empty inner one expects `null` (no instant).
struct StateExpectation {
  // "unreadable": the store cannot be read back at the end (a corrupt store
  // fails closed and keeps its bytes); the fields below are then unset.
  bool unreadable = false;
  std::optional<RetryStatus> retry_status;
  std::optional<NextAction> next_action;
  std::optional<std::optional<TimeMs>> next_run_at;
  std::optional<std::optional<TimeMs>> next_retry_at;
  std::optional<std::int64_t> retry_count;
  std::optional<std::optional<FailureClass>> failure_class;  // inner empty: `null`
};

// The policy the worker runs the job with (what "auto" chose, or the parse of
// any other form); each field is optional.
struct PolicyExpectation {
  std::optional<std::int64_t> max_retries;  // kRetriesUnlimited: "unlimited"
  std::optional<BackoffKind> backoff;
  std::optional<DurationMs> delay_ms;
  std::optional<BudgetScope> budget;
  // The shape a conversion must give: the growth per retry, the cap on each
  // delay (0: none), the jitter's kind, the deadline (0: none), the number
  // of retriers (1 for a policy of one).
  std::optional<double> factor;
  std::optional<DurationMs> cap_ms;
  std::optional<std::string> jitter;  // none, proportional, full, additive
  std::optional<DurationMs> deadline_ms;
  std::optional<std::int64_t> retriers;
};

// How a slot ended, as the monitors' slot tracker saw it at `until`.
enum class SlotOutcome : unsigned char {
  delivered,
  skipped,
  failed,
  exhausted,
  in_flight,
  superseded,
  coalesced
};
const char* to_string(SlotOutcome outcome) noexcept;
std::optional<SlotOutcome> parse_slot_outcome(std::string_view name) noexcept;
const std::vector<std::string>& slot_outcome_names();

// One regular slot of a job (expect.jobs.<id>.slots: the list names every
// slot the run had, in time order).
struct SlotExpectation {
  TimeMs slot = 0;
  std::optional<SlotOutcome> outcome;
  std::optional<std::int64_t> attempts;  // runs started for the slot
  // When each run started, within `tolerance_ms` (either way).
  std::optional<std::vector<TimeMs>> attempt_at;
  DurationMs tolerance_ms = kSecondMs;
  std::map<NotificationEvent, std::int64_t> notifications;  // for this slot
  std::string pointer;                                      // "/expect/jobs/x/slots/2"
};

// Messages of one job to one messenger target, by kind.
struct MessageExpectation {
  std::optional<std::int64_t> delivery;        // deliveries accepted
  std::optional<std::int64_t> failure_notice;  // failure notices accepted
  std::optional<std::int64_t> notification;    // notifications accepted
  std::optional<std::int64_t> refused;         // sends refused, any kind
};

// Bounds on the largest start lateness of the job's regular slots.
struct LatenessExpectation {
  std::optional<DurationMs> at_least_ms;
  std::optional<DurationMs> at_most_ms;
};

// Exact counts unless noted; every field is optional (absent: not checked).
struct JobExpectation {
  std::optional<std::int64_t> delivered_slots;
  std::optional<std::int64_t> skipped_slots;
  std::optional<std::int64_t> failed_slots;
  std::optional<std::int64_t> in_flight_slots;
  std::optional<RetryStatus> final_status;
  std::optional<std::int64_t> retries;  // retry runs (not regular runs)
  std::optional<std::int64_t> runs;     // all runs: regular, retries, late runs
  std::optional<std::int64_t> calls;    // external calls made by the job's runs
  std::map<NotificationEvent, std::int64_t> notifications;
  std::optional<DurationMs> max_delay_ms;  // upper bound: a regular slot's start lateness
  // Format 1, later additions (docs/scenario-format.md, `expect`):
  std::optional<StateExpectation> state;
  std::optional<PolicyExpectation> policy;
  std::optional<std::vector<SlotExpectation>> slots;   // every slot, in time order
  std::map<std::string, MessageExpectation> messages;  // by messenger target
  std::optional<LatenessExpectation> lateness;
};

struct ItemExpectation {
  std::optional<std::string> stage;            // final internal stage
  std::optional<std::string> reason_contains;  // substring of the item's reconcile error
  std::optional<std::int64_t> queries;         // orchestrator queries for this issue
  std::optional<std::int64_t> not_found;       // orchestrator 404 answers for this issue
};

// A state file a `state_corrupted` fault damaged: at `until` its bytes are
// those the damage left (kept) or not (changed).
enum class DamagedFileOutcome : unsigned char { kept, changed };

struct ServiceExpectation {
  std::optional<std::int64_t> calls;
  std::optional<std::int64_t> token_issues;  // brokerage only
  // A service of the user's own: its fleet load (sim/world/service_load.hpp).
  std::optional<bool> metastable;            // judged an hour after the trigger
  std::optional<DurationMs> drained_within;  // failures end this soon after it
};

struct Expectations {
  std::map<std::string, JobExpectation> jobs;    // by job id
  std::map<std::string, ItemExpectation> items;  // by issue id
  std::map<ServiceKind, ServiceExpectation> services;
  std::map<std::string, ServiceExpectation> user_services;  // by user service name
  std::map<NotificationEvent, std::int64_t> notifications;  // totals over all jobs
  std::map<StateFile, DamagedFileOutcome> damaged_files;
  // Invariants the run is expected to violate (test-only faulty variants);
  // empty: every invariant must hold.
  std::vector<std::string> violations;
};

// ------------------------------------------------------------------- flags

enum class FlagKind : unsigned char {
  policy_error,     // retry_policy missing or invalid: the job is never retried
  side_effects,     // a publish job retries without an idempotency key or a reason
  schedule_config,  // an env override gives the job an empty or unusable schedule
  schedule_idle,    // the job's schedule never fires inside [start, until]
};
const char* to_string(FlagKind kind) noexcept;

struct ScenarioFlag {
  FlagKind kind = FlagKind::policy_error;
  std::string where;  // "path:/jobs/1/retry_policy"
  std::string message;
};

// ----------------------------------------------------------------- scenario

// Where the worker's job queue lives (docs/worker.md, "Which queue the
// simulated world uses"): the world's SimQueue, outside every process (a
// queue server), or the core's DiskJobQueue on the simulated disk, which a
// power loss of the machine reaches.
enum class QueueStore : unsigned char { memory, disk };
const char* to_string(QueueStore store) noexcept;
const std::vector<std::string>& queue_store_names();  // in QueueStore's order

struct QueueSettings {
  QueueStore store = QueueStore::memory;
  int concurrency = 1;
  // Worker processes started on the one state directory and queue; one acts,
  // the others stand by on its worker lock (docs/worker.md).
  int workers = 1;
  DurationMs standby_poll_ms = 30'000;  // how often a standby asks for the lock
  std::int64_t max_events = 1'000'000;  // the run fails with bounded_run beyond this
};

struct Scenario {
  std::string path;  // as given to the loader
  int format = kScenarioFormat;
  std::string name;
  std::string description;
  std::vector<std::string> notes;  // free text: observed and inferred facts of an import
  TimeMs start_ms = 0;
  TimeMs until_ms = 0;
  std::uint64_t seed = 1;
  Environment env;
  QueueSettings queue;
  ServiceDecls services;
  std::vector<JobSpec> jobs;
  std::vector<FaultSpec> faults;  // in file order (the run orders by time, then file order)
  Expectations expect;
  // The `expect` block as written (null when there is none): what the report
  // lists as held next to the failures check_expectations() finds.
  nlohmann::json expect_source;
  std::vector<ScenarioFlag> flags;

  const JobSpec* find_job(std::string_view id) const noexcept;
};

// Everything one validation pass found: the scenario when there was no error,
// every error (in the order found; at most kScenarioErrorLimit are kept and
// `errors_omitted` counts the rest) and the flags of a valid scenario.
inline constexpr std::size_t kScenarioErrorLimit = 100;

struct ScenarioCheck {
  std::optional<Scenario> scenario;
  std::vector<Error> errors;  // Error::where is "path:/json/pointer" or "path:line:column"
  std::size_t errors_omitted = 0;
  std::vector<ScenarioFlag> flags;
  // What the world supplies that the file does not say ("path:/pointer: ..."):
  // information, never a failure, --strict or not.
  std::vector<std::string> notes;

  bool valid() const noexcept { return errors.empty(); }
};

ScenarioCheck check_scenario_json(std::string_view text, const std::string& path);
ScenarioCheck check_scenario_file(const std::string& path);

// The first error of a check (its message says how many more there were).
Result<Scenario> load_scenario_json(std::string_view text, const std::string& path);
Result<Scenario> load_scenario_file(const std::string& path);

// --------------------------------------------------- vocabulary and keys

// Names accepted in files, in one place so docs, schema and tests agree.
const std::vector<std::string>& issue_status_names();  // todo, in_progress, ...
const std::vector<std::string>& stage_names();         // DESIGNING, BUILDING, ...
const std::vector<std::string>& notification_event_names();
// For expect.violations: every invariant a run can report, in the order the
// monitors' registry (sim/monitors/registry.cpp) holds them.
const std::vector<std::string>& invariant_names();

// The keys the loader accepts, per object kind, named like the schema's $defs
// ("scenario" is the top level; "job" holds the keys common to all jobs and
// "job_group" those of group jobs only; likewise "fault" and "fault_<kind>").
// tests/sim/world/test_scenario_files.cpp checks these against the schema file.
const std::map<std::string, std::vector<std::string>>& scenario_known_keys();

}  // namespace rehearse::sim
