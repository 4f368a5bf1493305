// Reconcile of external issues into pipeline stages (docs/semantics.md §8;
// incident 000; guide: docs/reconcile.md).
//
// A reconcile job periodically reads the status of each tracked issue from
// the agent orchestrator and moves the item's internal pipeline stage forward.
// The original job retried lost issues forever after a migration, ignored
// in_progress / in_review, and ran on a mix of old role names. This one:
//
// - moves stages monotonically: next_stage(current, incoming) only goes
//   forward (DESIGNING < BUILDING < REVIEWING), DONE and DESIGN_FAILED are
//   terminal, unknown values leave the stage as it is;
// - ends an item whose issue the orchestrator answers 404/410 for: the answer
//   becomes the dedicated IssueNotFound type (no string matching), the item
//   ends DESIGN_FAILED with a reconcile error saying why, and it is never
//   queried again;
// - backs a single item off on network errors, timeouts, 5xx and 429:
//   1 min after the first consecutive failure, doubling, capped at 1 h;
// - defers an item exactly 1 h on a configuration error (lead agent missing
//   from the orchestrator's agent list, unknown role, unset AGENT_*_ID) and on
//   any other refusal a human must fix (401/403/400/422): a retryable failure
//   with a clear error, so a fixed setting is picked up on the next cycle
//   without hammering. The cycle itself still succeeds;
// - validates every stored external id first after a migration: each item
//   remembers the orchestrator instance it was last confirmed on; an item
//   whose instance differs from the one the orchestrator reports now is
//   queried in this cycle even when not due (a lost one ends DESIGN_FAILED
//   after exactly one 404).
//
// The orchestrator, as the core sees it (service "orchestrator"):
//   list_agents -> 200 {"instance": ID, "agents": [{"id", "role"}, ...]}
//   get_issue   (target = issue id) -> 200 {"id", "status"} | 404
//   assign      (target = issue id, body {"agent": id, "role": name}) -> 200 | 404
// Every request carries x-job-id, x-slot, x-attempt, x-item (the issue, for
// item requests) and x-request-id = "{job}/{slot}/a{attempt}/{operation}[/{issue}]".
//
// Log events (the trace's event types; monitors rely on these names):
//   stage_changed  {job_id, item, from, to}
//   item_failed    {job_id, item, reason, failure_class}       (ended DESIGN_FAILED)
//   item_deferred  {job_id, item, until, reason, failure_class} (config: +1 h)
//   item_backoff   {job_id, item, until, failures, failure_class, reason}
//   ids_validated  {job_id, instance, validated, lost, pending}
//   agent_assigned {job_id, item, stage, role, agent (8 chars)}
//   reconcile_cycle {job_id, instance, queried, advanced, ...} (one per cycle)
//   pipeline_unavailable {job_id, reason} (corrupt or unreadable store: the run fails)
//   orchestrator_unreachable {job_id, failure_class, reason} (list_agents failed)
// `item` is always the external issue id. Agent ids appear only as short_id().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/agent_roles.hpp"
#include "model/environment.hpp"
#include "model/job_runner.hpp"
#include "model/pipeline_store.hpp"
#include "model/ports.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

// ------------------------------------------------------------------ stages

inline constexpr const char* kStageDesigning = "DESIGNING";
inline constexpr const char* kStageBuilding = "BUILDING";
inline constexpr const char* kStageReviewing = "REVIEWING";
inline constexpr const char* kStageDone = "DONE";
inline constexpr const char* kStageDesignFailed = "DESIGN_FAILED";

// 0, 1, 2 for DESIGNING, BUILDING, REVIEWING; nullopt for terminal and unknown.
std::optional<int> stage_rank(std::string_view stage) noexcept;
bool is_terminal_stage(std::string_view stage) noexcept;
// A known stage name (the five above).
bool is_known_stage(std::string_view stage) noexcept;

// External status -> internal stage: todo -> DESIGNING, in_progress ->
// BUILDING, in_review -> REVIEWING, done -> DONE (ext); anything else nullopt.
std::optional<std::string_view> stage_for_status(std::string_view status) noexcept;

// The stage after observing external status `incoming` while at `current`:
// terminal or unknown current stays; unknown incoming stays; otherwise the
// later of the two (DONE is later than every non-terminal stage). Never
// backwards, whatever the order of observations.
std::string next_stage(std::string_view current, std::string_view incoming);

// ------------------------------------------------------------ delays

inline constexpr DurationMs kReconcileBackoffBaseMs = kMinuteMs;
inline constexpr DurationMs kReconcileBackoffMaxMs = kHourMs;
inline constexpr DurationMs kConfigDeferralMs = kHourMs;

// Delay after the n-th consecutive transient failure of one item (n >= 1):
// min(1 min * 2^(n-1), 1 h).
DurationMs transient_backoff_ms(int failures);

// ------------------------------------------------- orchestrator answers

// The dedicated not-found error (000): a 404 or 410 for an issue. Callers
// branch on the type, never on message text.
struct IssueNotFound {
  int http_status = 404;
  std::string message;
};
// Network, timeout, 5xx, 429: the other side's trouble; per-item backoff.
struct TransientFailure {
  FailureClass failure_class = FailureClass::network;
  std::string message;
};
// Anything else that is not a success (401, 403, 400, 422, ...): a human must
// look; deferred like a configuration error.
struct RejectedFailure {
  FailureClass failure_class = FailureClass::unknown;
  std::string message;
};
using OrchestratorAnswer =
    std::variant<nlohmann::json /* 2xx body */, IssueNotFound, TransientFailure, RejectedFailure>;

// Sorts a service result into the four kinds by its structured status (or
// transport kind), via classify().
OrchestratorAnswer interpret_answer(const ServiceResult& result);

// --------------------------------------------------------- agents

struct AgentEntry {
  std::string id;
  std::string role;  // as the orchestrator reports it (may be legacy or unknown)
};
struct AgentDirectory {
  std::string instance;
  std::vector<AgentEntry> agents;
};
// Reads a list_agents answer body; schema_error on a malformed one.
Result<AgentDirectory> parse_agent_directory(const nlohmann::json& body);

struct Handoff {
  Role role = Role::dev;
  std::string agent_id;  // full id: goes to the orchestrator only, never to logs
};

// ------------------------------------------------------------ config

struct ReconcileSeed {
  std::string issue;
  std::string stage = kStageDesigning;
  std::string id;  // internal id; empty: "pipe-" + issue
};

struct ReconcileConfig {
  std::string service = "orchestrator";
  // Directory of the pipeline store (pipeline.json) on the Disk port.
  std::string store_dir = "pipeline";
  // Items the job tracks; added to the store when missing (never reset).
  std::vector<ReconcileSeed> items;
  // At most this many due items per cycle (validation after a migration is
  // not limited by it); empty: all.
  std::optional<int> batch_size;
  // Which role's agent receives an item entering a stage; stages not listed
  // need no agent. Names go through parse_role (legacy names accepted; an
  // unknown one is a configuration error of the items entering that stage).
  std::map<std::string, std::string> stage_roles{{kStageBuilding, "dev"},
                                                 {kStageReviewing, "lead"}};
};

// Whether work may be handed to the orchestrator for an item entering
// `stage`: nullopt when the stage needs no agent; else the handoff, or a
// configuration error (ErrorCode::invalid_argument) whose message says what
// to fix with agent ids shortened to 8 characters. Checks, in order: the
// stage's role name, AGENT_LEAD_ID set, the lead agent present in the
// directory with a role that maps to lead, the role's AGENT_*_ID set, that
// agent present with a role that maps to the stage's role.
Result<std::optional<Handoff>> plan_handoff(std::string_view stage, const ReconcileConfig& config,
                                            const Environment& env,
                                            const AgentDirectory& directory);

// ------------------------------------------------------------ cycle

struct CycleReport {
  RunOutcome outcome;
  std::string instance;  // empty when list_agents failed
  int queried = 0;       // get_issue calls
  int advanced = 0;      // stage changes (DESIGN_FAILED included)
  int ended = 0;         // items ended DESIGN_FAILED
  int deferred = 0;      // config / rejected deferrals
  int backed_off = 0;    // transient failures
  int validated = 0;     // ids confirmed on `instance` this cycle
  int assigned = 0;      // assign calls that succeeded
};

// One reconcile cycle over the ports. Not owned: everything passed by
// reference must outlive the cycles in flight.
class Reconciler {
 public:
  Reconciler(Clock& clock, Services& services, Log& log, PipelineStore& store, Environment env,
             ReconcileConfig config);

  // Seeds missing items, reads the agent list (and the orchestrator's
  // instance), then visits due items and items that need validation, in store
  // order. Item failures never fail the cycle; a store that is corrupt or
  // cannot be written fails it (class unknown: fail closed); a list_agents
  // that gets no usable answer fails it with that answer's class after the
  // items were visited (handoffs are then backed off, not deferred).
  Task<CycleReport> run_cycle(RunContext context);

  const ReconcileConfig& config() const noexcept { return config_; }

 private:
  struct CycleState;
  struct Visit;
  struct VisitDecision;
  std::vector<PipelineItem> seed_items() const;
  Task<void> read_agents(const RunContext& context, CycleState& state);
  void log_cycle(const RunContext& context, const CycleState& state);
  Task<bool> visit(const RunContext& context, PipelineItem item, bool full, CycleState& state);
  // The decisions of a visit, without I/O.
  static std::optional<VisitDecision> decide_on_failure(const OrchestratorAnswer& answer,
                                                        const ServiceResult& result,
                                                        const char* operation, bool full);
  VisitDecision decide_on_body(const PipelineItem& item, const nlohmann::json& body, bool full,
                               const CycleState& state) const;
  static std::optional<VisitDecision> decide_on_assign(const OrchestratorAnswer& answer,
                                                       const ServiceResult& result,
                                                       const Handoff& handoff);
  // The writes and logs of a decision; false when the store failed.
  bool apply_decision(Visit& v, const VisitDecision& d, CycleState& state);
  bool close_not_found(Visit& v, const VisitDecision& d, CycleState& state);
  bool back_off(Visit& v, const VisitDecision& d, CycleState& state);
  bool defer(Visit& v, const VisitDecision& d, CycleState& state);
  bool advance(Visit& v, const VisitDecision& d, CycleState& state);
  ServiceRequest make_request(const RunContext& context, const char* operation,
                              const std::string& issue) const;
  bool persist(const RunContext& context, const PipelineItem& item, CycleState& state);

  Clock& clock_;
  Services& services_;
  Log& log_;
  PipelineStore& store_;
  Environment env_;
  ReconcileConfig config_;
};

// The `reconcile` job kind: one cycle per run (regular slot or retry).
class ReconcileJob final : public JobRunner {
 public:
  ReconcileJob(Clock& clock, Services& services, Log& log, Disk& disk, Environment env,
               ReconcileConfig config);

  Task<RunOutcome> run(RunContext context) override;

  PipelineStore& store() noexcept { return store_; }
  const CycleReport& last_report() const noexcept { return last_; }

 private:
  PipelineStore store_;
  Reconciler reconciler_;
  CycleReport last_;
};

// The internal id a seed gets when it names none.
std::string default_item_id(const std::string& issue);

}  // namespace rehearse
