#include "model/reconcile.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/token_client.hpp"  // the request header names shared by every job kind

namespace rehearse {
namespace {

using nlohmann::json;

struct StatusStage {
  std::string_view status;
  std::string_view stage;
};
constexpr std::array<StatusStage, 4> kStatusStages{{
    {"todo", kStageDesigning},
    {"in_progress", kStageBuilding},
    {"in_review", kStageReviewing},
    {"done", kStageDone},
}};

// Whether the listed role of an agent maps to `wanted`; an error says why not.
Status check_listed_role(const AgentEntry& agent, Role wanted, const char* what) {
  auto listed = parse_role(agent.role);
  if (!listed.ok()) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("{} agent {} is listed with an unknown role '{}'", what,
                                  short_id(agent.id), agent.role));
  }
  if (*listed != wanted) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("{} agent {} is listed as role '{}' ({}), expected {}", what,
                                  short_id(agent.id), agent.role, to_string(*listed),
                                  to_string(wanted)));
  }
  return {};
}

const AgentEntry* find_agent(const AgentDirectory& directory, const std::string& id) {
  for (const AgentEntry& agent : directory.agents) {
    if (agent.id == id) return &agent;
  }
  return nullptr;
}

std::string answer_text(const ServiceResult& result) { return to_failure_info(result).message; }

}  // namespace

// ------------------------------------------------------------------ stages

std::optional<int> stage_rank(std::string_view stage) noexcept {
  if (stage == kStageDesigning) return 0;
  if (stage == kStageBuilding) return 1;
  if (stage == kStageReviewing) return 2;
  return std::nullopt;
}

bool is_terminal_stage(std::string_view stage) noexcept {
  return stage == kStageDone || stage == kStageDesignFailed;
}

bool is_known_stage(std::string_view stage) noexcept {
  return stage_rank(stage).has_value() || is_terminal_stage(stage);
}

std::optional<std::string_view> stage_for_status(std::string_view status) noexcept {
  for (const StatusStage& entry : kStatusStages) {
    if (entry.status == status) return entry.stage;
  }
  return std::nullopt;
}

std::string next_stage(std::string_view current, std::string_view incoming) {
  if (is_terminal_stage(current)) return std::string(current);
  const std::optional<int> current_rank = stage_rank(current);
  if (!current_rank) return std::string(current);  // unknown current: leave it
  const std::optional<std::string_view> target = stage_for_status(incoming);
  if (!target) return std::string(current);  // unknown incoming: leave it
  if (*target == kStageDone) return kStageDone;
  const std::optional<int> target_rank = stage_rank(*target);
  REHEARSE_ASSERT(target_rank.has_value());
  return *target_rank > *current_rank ? std::string(*target) : std::string(current);
}

DurationMs transient_backoff_ms(int failures) {
  REHEARSE_ASSERT(failures >= 1);
  DurationMs delay_ms = kReconcileBackoffBaseMs;
  for (int n = 1; n < failures && delay_ms < kReconcileBackoffMaxMs; ++n) delay_ms *= 2;
  return std::min(delay_ms, kReconcileBackoffMaxMs);
}

// ------------------------------------------------- orchestrator answers

OrchestratorAnswer interpret_answer(const ServiceResult& result) {
  if (result.is_success()) {
    const json& body = result.response().body;
    return body.is_null() ? json::object() : body;
  }
  const FailureInfo info = to_failure_info(result);
  const FailureClass failure_class = classify(info);
  switch (failure_class) {
    case FailureClass::not_found:
      return IssueNotFound{info.http_status.value_or(404), info.message};
    case FailureClass::timeout:
    case FailureClass::network:
    case FailureClass::provider_5xx:
    case FailureClass::rate_limit: return TransientFailure{failure_class, info.message};
    case FailureClass::auth:
    case FailureClass::validation:
    case FailureClass::config:
    case FailureClass::unknown: break;
  }
  return RejectedFailure{failure_class, info.message};
}

Result<AgentDirectory> parse_agent_directory(const json& body) {
  if (!body.is_object() || !body.contains("instance") || !body.at("instance").is_string() ||
      body.at("instance").get<std::string>().empty()) {
    return make_error(ErrorCode::schema_error, "agent list without an instance id");
  }
  if (!body.contains("agents") || !body.at("agents").is_array()) {
    return make_error(ErrorCode::schema_error, "agent list without an 'agents' array");
  }
  AgentDirectory directory;
  directory.instance = body.at("instance").get<std::string>();
  for (const json& entry : body.at("agents")) {
    if (!entry.is_object() || !entry.contains("id") || !entry.at("id").is_string() ||
        !entry.contains("role") || !entry.at("role").is_string()) {
      return make_error(ErrorCode::schema_error, "agent entry without a string id and role");
    }
    directory.agents.push_back(
        AgentEntry{entry.at("id").get<std::string>(), entry.at("role").get<std::string>()});
  }
  return directory;
}

Result<std::optional<Handoff>> plan_handoff(std::string_view stage, const ReconcileConfig& config,
                                            const Environment& env,
                                            const AgentDirectory& directory) {
  const auto wanted = config.stage_roles.find(std::string(stage));
  if (wanted == config.stage_roles.end()) return std::optional<Handoff>{};
  auto role = parse_role(wanted->second);
  if (!role.ok()) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("stage {}: {}", stage, role.error().message));
  }
  // The lead agent must exist before any work is handed over (000).
  auto lead_id = agent_id_for(Role::lead, env);
  if (!lead_id.ok()) return std::move(lead_id).error();
  const AgentEntry* lead = find_agent(directory, *lead_id);
  if (lead == nullptr) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("lead agent {} ({}) is missing from the agent list of "
                                  "orchestrator {}",
                                  short_id(*lead_id), role_env_var(Role::lead),
                                  directory.instance));
  }
  if (auto s = check_listed_role(*lead, Role::lead, "lead"); !s.ok()) return s.error();
  auto agent_id = agent_id_for(*role, env);
  if (!agent_id.ok()) return std::move(agent_id).error();
  const AgentEntry* agent = find_agent(directory, *agent_id);
  if (agent == nullptr) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("{} agent {} ({}) is missing from the agent list of "
                                  "orchestrator {}",
                                  to_string(*role), short_id(*agent_id), role_env_var(*role),
                                  directory.instance));
  }
  if (auto s = check_listed_role(*agent, *role, to_string(*role)); !s.ok()) return s.error();
  return std::optional<Handoff>(Handoff{*role, *agent_id});
}

std::string default_item_id(const std::string& issue) { return "pipe-" + issue; }

// ------------------------------------------------------------ cycle

struct Reconciler::CycleState {
  CycleReport report;
  std::optional<AgentDirectory> directory;
  std::optional<FailureClass> agents_failure_class;
  std::string agents_failure;
  std::optional<Error> store_error;
  int validation_candidates = 0;
  int validation_lost = 0;
  int validation_pending = 0;
};

Reconciler::Reconciler(Clock& clock, Services& services, Log& log, PipelineStore& store,
                       Environment env, ReconcileConfig config)
    : clock_(clock),
      services_(services),
      log_(log),
      store_(store),
      env_(std::move(env)),
      config_(std::move(config)) {
  REHEARSE_ASSERT(!config_.batch_size || *config_.batch_size >= 1);
}

ServiceRequest Reconciler::make_request(const RunContext& context, const char* operation,
                                        const std::string& issue) const {
  ServiceRequest request;
  request.service = config_.service;
  request.operation = operation;
  request.target = issue;
  if (!issue.empty()) request.headers[kRequestHeaderItem] = issue;
  std::string id = fmt::format("{}/{}/a{}/{}", context.job_id, format_instant(context.slot),
                               context.attempt, operation);
  if (!issue.empty()) id += "/" + issue;
  stamp_run_headers(request, context, std::move(id));
  return request;
}

bool Reconciler::persist(const RunContext& context, const PipelineItem& item, CycleState& state) {
  Status saved = store_.save_item(item);
  if (saved.ok()) return true;
  state.store_error = saved.error();
  log_.error("pipeline_unavailable", {{"job_id", context.job_id},
                                      {"item", item.issue},
                                      {"reason", saved.error().describe()}});
  return false;
}

// ------------------------------------------------------------ one visit

// One item's visit: what it is for and what it has learnt so far.
struct Reconciler::Visit {
  const RunContext& context;
  PipelineItem item;
  bool full = false;              // a due attempt (else a validation only)
  bool needs_validation = false;  // its stored id predates the current instance
  std::string instance;           // the orchestrator instance (empty: unknown)
  TimeMs now = 0;
};

// How a visit ends, decided without I/O (decide_on_failure, decide_on_body,
// decide_on_assign); apply_decision then writes and logs it.
struct Reconciler::VisitDecision {
  enum class Kind : unsigned char {
    close_not_found,  // the issue is gone: DESIGN_FAILED, never queried again
    back_off,         // transient: retry after transient_backoff_ms
    defer,            // refused (config, auth...): next attempt in an hour
    note_refusal,     // validation only, refused: keep the reason, nothing else
    touch,            // validation only, answered: record the validated id
    advance,          // move to `target` (after the handoff, if any)
    stay,             // a clean attempt without a move
  };
  Kind kind = Kind::stay;
  FailureClass failure_class = FailureClass::unknown;
  std::string reason;              // back_off, defer, note_refusal
  std::string operation;           // close_not_found: the request that answered 404/410
  int http_status = 0;             // close_not_found
  std::string target;              // advance
  std::optional<Handoff> handoff;  // advance: assign the work first
};

// A failed get_issue or assign answer: how the visit ends. Nothing for an
// answer with a body (the caller decides on the body).
std::optional<Reconciler::VisitDecision> Reconciler::decide_on_failure(
    const OrchestratorAnswer& answer, const ServiceResult& result, const char* operation,
    bool full) {
  VisitDecision d;
  if (const auto* nf = std::get_if<IssueNotFound>(&answer)) {
    d.kind = VisitDecision::Kind::close_not_found;
    d.operation = operation;
    d.http_status = nf->http_status;
    return d;
  }
  if (const auto* t = std::get_if<TransientFailure>(&answer)) {
    d.kind = VisitDecision::Kind::back_off;
    d.failure_class = t->failure_class;
    d.reason = fmt::format("{}: {}", operation, t->message);
    return d;
  }
  if (const auto* r = std::get_if<RejectedFailure>(&answer)) {
    // Validation only: the item is not due, so no attempt is made or counted;
    // the refusal stays visible in its error and pushes the due attempt to
    // an hour after it (apply_decision).
    d.kind = full ? VisitDecision::Kind::defer : VisitDecision::Kind::note_refusal;
    d.failure_class = r->failure_class;
    d.reason = fmt::format("{} refused ({}): {}", operation, to_string(r->failure_class),
                           answer_text(result));
    return d;
  }
  return std::nullopt;
}

// get_issue answered with `body`: the stage the item moves to, and who gets
// the work first.
Reconciler::VisitDecision Reconciler::decide_on_body(const PipelineItem& item,
                                                     const nlohmann::json& body, bool full,
                                                     const CycleState& state) const {
  VisitDecision d;
  if (!full) {
    d.kind = VisitDecision::Kind::touch;
    return d;
  }
  const std::string status =
      body.is_object() && body.contains("status") && body.at("status").is_string()
          ? body.at("status").get<std::string>()
          : std::string();
  const std::string target = next_stage(item.stage, status);
  if (target == item.stage) return d;  // stay
  if (config_.stage_roles.count(target) != 0) {
    if (!state.directory) {
      d.kind = VisitDecision::Kind::back_off;
      d.failure_class = state.agents_failure_class.value_or(FailureClass::unknown);
      d.reason = "agent list unavailable: " + state.agents_failure;
      return d;
    }
    auto plan = plan_handoff(target, config_, env_, *state.directory);
    if (!plan.ok()) {
      d.kind = VisitDecision::Kind::defer;
      d.failure_class = FailureClass::config;
      d.reason = fmt::format("cannot hand {} work to an agent: {}", target, plan.error().message);
      return d;
    }
    d.handoff = *plan;
  }
  d.kind = VisitDecision::Kind::advance;
  d.target = target;
  return d;
}

// The assign request's answer: how the visit ends if it failed.
std::optional<Reconciler::VisitDecision> Reconciler::decide_on_assign(
    const OrchestratorAnswer& answer, const ServiceResult& result, const Handoff& handoff) {
  auto d = decide_on_failure(answer, result, "assign", /*full=*/true);
  if (d && d->kind == VisitDecision::Kind::defer) {
    d->reason =
        fmt::format("assign to {} agent {} refused ({}): {}", to_string(handoff.role),
                    short_id(handoff.agent_id), to_string(d->failure_class), answer_text(result));
  }
  return d;
}

// Visits one item: a full attempt (due) or a validation only (a migration made
// its stored id suspect). Returns false when the store failed (stop the cycle).
// The I/O only: the decisions are decide_on_*, the writes apply_decision.
Task<bool> Reconciler::visit(const RunContext& context, PipelineItem item, bool full,
                             CycleState& state) {
  const bool needs_validation =
      state.directory.has_value() && item.validated_instance != state.directory->instance;
  Visit v{context,
          std::move(item),
          full,
          needs_validation,
          state.directory ? state.directory->instance : std::string(),
          0};
  ServiceResult result = co_await services_.call(make_request(context, "get_issue", v.item.issue));
  ++state.report.queried;
  v.now = clock_.now();
  const OrchestratorAnswer answer = interpret_answer(result);
  if (auto failed = decide_on_failure(answer, result, "get_issue", full)) {
    // A refusal is the current instance's answer about the item: it is not
    // validated again before its due attempt (an hour away), which would be
    // a config attempt inside the hour (docs/reconcile.md).
    if (std::holds_alternative<RejectedFailure>(answer) && !v.instance.empty()) {
      v.item.validated_instance = v.instance;
    }
    co_return apply_decision(v, *failed, state);
  }
  if (!v.instance.empty()) v.item.validated_instance = v.instance;
  if (v.needs_validation) ++state.report.validated;
  if (full) v.item.failures = 0;  // an answer ends a run of transient failures
  VisitDecision decision = decide_on_body(v.item, std::get<json>(answer), full, state);
  if (decision.kind == VisitDecision::Kind::advance && decision.handoff) {
    // Hand the work over first, then record the stage: a crash in between
    // repeats the (idempotent) assignment, never loses it.
    const Handoff& handoff = *decision.handoff;
    ServiceRequest request = make_request(context, "assign", v.item.issue);
    request.body = json{{"agent", handoff.agent_id}, {"role", to_string(handoff.role)}};
    ServiceResult assigned = co_await services_.call(std::move(request));
    v.now = clock_.now();
    if (auto failed = decide_on_assign(interpret_answer(assigned), assigned, handoff)) {
      co_return apply_decision(v, *failed, state);
    }
    ++state.report.assigned;
    log_.info("agent_assigned", {{"job_id", context.job_id},
                                 {"item", v.item.issue},
                                 {"stage", decision.target},
                                 {"role", to_string(handoff.role)},
                                 {"agent", short_id(handoff.agent_id)}});
  }
  co_return apply_decision(v, decision, state);
}

bool Reconciler::apply_decision(Visit& v, const VisitDecision& d, CycleState& state) {
  using Kind = VisitDecision::Kind;
  switch (d.kind) {
    case Kind::close_not_found: return close_not_found(v, d, state);
    case Kind::back_off: return back_off(v, d, state);
    case Kind::defer: return defer(v, d, state);
    case Kind::note_refusal:
      // Not an attempt, but a refusal all the same: the next attempt waits
      // its hour (never earlier than it was), or a due attempt right after a
      // validation's refusal would ask again within the hour (invariant 8).
      v.item.reconcile_error = d.reason;
      v.item.next_attempt_at = std::max(v.item.next_attempt_at, v.now + kConfigDeferralMs);
      v.item.last_config_error_at = v.now;
      v.item.updated_at = v.now;
      if (v.needs_validation) ++state.validation_pending;
      return persist(v.context, v.item, state);
    case Kind::touch: v.item.updated_at = v.now; return persist(v.context, v.item, state);
    case Kind::advance: return advance(v, d, state);
    case Kind::stay:
      // A clean attempt; due again at the next cycle.
      v.item.reconcile_error.clear();
      v.item.next_attempt_at = v.now;
      v.item.updated_at = v.now;
      return persist(v.context, v.item, state);
  }
  REHEARSE_UNREACHABLE();
}

bool Reconciler::close_not_found(Visit& v, const VisitDecision& d, CycleState& state) {
  PipelineItem& item = v.item;
  const std::string from = item.stage;
  item.stage = kStageDesignFailed;
  item.reconcile_error = fmt::format(
      "issue {} not found in the orchestrator{} ({} answered HTTP {}): it no longer exists "
      "there (e.g. lost in a migration); the item is closed and will not be queried again",
      item.issue, v.instance.empty() ? std::string() : " instance " + v.instance, d.operation,
      d.http_status);
  item.failures = 0;
  item.updated_at = v.now;
  if (!persist(v.context, item, state)) return false;
  log_.warning("item_failed", {{"job_id", v.context.job_id},
                               {"item", item.issue},
                               {"reason", item.reconcile_error},
                               {"failure_class", to_string(FailureClass::not_found)}});
  log_.info(
      "stage_changed",
      {{"job_id", v.context.job_id}, {"item", item.issue}, {"from", from}, {"to", item.stage}});
  ++state.report.ended;
  ++state.report.advanced;
  if (v.needs_validation) ++state.validation_lost;
  return true;
}

bool Reconciler::back_off(Visit& v, const VisitDecision& d, CycleState& state) {
  PipelineItem& item = v.item;
  ++item.failures;
  TimeMs until = v.now + transient_backoff_ms(item.failures);
  // A validation-only visit never brings an item's next attempt forward
  // (that would break the hourly bound of a config deferral).
  if (!v.full) until = std::max(until, item.next_attempt_at);
  REHEARSE_ASSERT_GT(until, v.now);
  item.next_attempt_at = until;
  item.reconcile_error = d.reason;
  item.updated_at = v.now;
  if (!persist(v.context, item, state)) return false;
  log_.warning("item_backoff", {{"job_id", v.context.job_id},
                                {"item", item.issue},
                                {"until", format_instant(until)},
                                {"failures", item.failures},
                                {"failure_class", to_string(d.failure_class)},
                                {"reason", d.reason}});
  ++state.report.backed_off;
  if (v.needs_validation) ++state.validation_pending;
  return true;
}

bool Reconciler::defer(Visit& v, const VisitDecision& d, CycleState& state) {
  REHEARSE_ASSERT(v.full);
  PipelineItem& item = v.item;
  item.failures = 0;
  item.next_attempt_at = v.now + kConfigDeferralMs;
  item.last_config_error_at = v.now;
  item.reconcile_error = d.reason;
  item.updated_at = v.now;
  if (!persist(v.context, item, state)) return false;
  log_.warning("item_deferred", {{"job_id", v.context.job_id},
                                 {"item", item.issue},
                                 {"until", format_instant(item.next_attempt_at)},
                                 {"reason", d.reason},
                                 {"failure_class", to_string(d.failure_class)}});
  ++state.report.deferred;
  if (v.needs_validation && item.validated_instance != v.instance) ++state.validation_pending;
  return true;
}

bool Reconciler::advance(Visit& v, const VisitDecision& d, CycleState& state) {
  PipelineItem& item = v.item;
  // Stages only move forward (docs/reconcile.md): next_stage never goes back.
  REHEARSE_ASSERT_NE(d.target, item.stage);
  REHEARSE_ASSERT(!is_terminal_stage(item.stage));
  REHEARSE_ASSERT(is_terminal_stage(d.target) ||
                  stage_rank(d.target).value_or(-1) > stage_rank(item.stage).value_or(-1));
  const std::string from = item.stage;
  item.stage = d.target;
  item.reconcile_error.clear();
  item.next_attempt_at = v.now;
  item.updated_at = v.now;
  if (!persist(v.context, item, state)) return false;
  log_.info("stage_changed",
            {{"job_id", v.context.job_id}, {"item", item.issue}, {"from", from}, {"to", d.target}});
  ++state.report.advanced;
  return true;
}

namespace {

// The due items a cycle queries in full: every non-terminal item with
// next_attempt_at <= now, at most `batch_size` of them, the least recently
// visited first (earliest updated_at, which every visit sets; then store
// order). A visit that succeeds makes its item due again at once
// (next_attempt_at = now), so store order alone would let the first items of
// the store take every batch and starve the rest, and ranking by
// next_attempt_at would put an item whose backoff just ended behind items
// asked since (docs/reconcile.md, "Decisions").
std::vector<bool> pick_due_items(const std::vector<PipelineItem>& items, TimeMs now,
                                 std::optional<int> batch_size) {
  std::vector<std::size_t> due;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!is_terminal_stage(items[i].stage) && items[i].next_attempt_at <= now) due.push_back(i);
  }
  const auto limit = static_cast<std::size_t>(std::max(batch_size.value_or(0), 0));
  if (batch_size && due.size() > limit) {
    std::stable_sort(due.begin(), due.end(), [&items](std::size_t a, std::size_t b) {
      return items[a].updated_at < items[b].updated_at;
    });
    due.resize(limit);
  }
  std::vector<bool> picked(items.size(), false);
  for (const std::size_t i : due) picked[i] = true;
  return picked;
}

}  // namespace

Task<CycleReport> Reconciler::run_cycle(RunContext context) {
  CycleState state;
  const auto fail_store = [&](const Error& error) {
    log_.error("pipeline_unavailable", {{"job_id", context.job_id}, {"reason", error.describe()}});
    state.report.outcome = RunOutcome::failure(FailureClass::unknown,
                                               "pipeline store unavailable: " + error.describe());
    return state.report;
  };

  if (auto added = store_.add_missing(seed_items()); !added.ok()) {
    co_return fail_store(added.error());
  }
  co_await read_agents(context, state);
  if (state.agents_failure_class) {
    log_.warning("orchestrator_unreachable",
                 {{"job_id", context.job_id},
                  {"failure_class", to_string(*state.agents_failure_class)},
                  {"reason", state.agents_failure}});
  }
  if (state.directory) state.report.instance = state.directory->instance;

  auto items = store_.load();
  if (!items.ok()) co_return fail_store(items.error());
  const TimeMs cycle_ms = clock_.now();
  const std::vector<bool> picked = pick_due_items(*items, cycle_ms, config_.batch_size);
  for (std::size_t index = 0; index < items->size(); ++index) {
    PipelineItem& item = (*items)[index];
    if (is_terminal_stage(item.stage)) continue;  // DONE / DESIGN_FAILED: never queried again
    const bool needs_validation =
        state.directory.has_value() && item.validated_instance != state.directory->instance;
    const bool full = picked[index];
    // Items already backing off get validated at their due attempt: they had
    // no answer to confirm them with, and querying them now would defeat the
    // backoff. So do items deferred before any answer (a refusal on their very
    // first query): there is no stored id to re-check, only an hourly deferral.
    const bool never_answered_and_waiting =
        item.validated_instance.empty() && item.next_attempt_at > cycle_ms;
    const bool validate_only =
        !full && needs_validation && item.failures == 0 && !never_answered_and_waiting;
    if (!full && !validate_only) continue;
    if (needs_validation) ++state.validation_candidates;
    const bool kept = co_await visit(context, std::move(item), full, state);
    if (!kept) break;
  }
  if (state.store_error) co_return fail_store(*state.store_error);
  log_cycle(context, state);
  if (state.agents_failure_class) {
    state.report.outcome = RunOutcome::failure(*state.agents_failure_class, state.agents_failure);
  } else {
    state.report.outcome = RunOutcome::success();
  }
  co_return state.report;
}

// The configured items, as the store adds those it does not hold yet.
std::vector<PipelineItem> Reconciler::seed_items() const {
  std::vector<PipelineItem> seeds;
  for (const ReconcileSeed& seed : config_.items) {
    PipelineItem item;
    item.id = seed.id.empty() ? default_item_id(seed.issue) : seed.id;
    item.issue = seed.issue;
    item.stage = seed.stage;
    item.next_attempt_at = 0;
    item.updated_at = clock_.now();
    seeds.push_back(std::move(item));
  }
  return seeds;
}

// The orchestrator's agent list (its instance id and agents), or why not.
Task<void> Reconciler::read_agents(const RunContext& context, CycleState& state) {
  ServiceResult agents = co_await services_.call(make_request(context, "list_agents", ""));
  OrchestratorAnswer agents_answer = interpret_answer(agents);
  if (const auto* body = std::get_if<json>(&agents_answer)) {
    auto directory = parse_agent_directory(*body);
    if (directory.ok()) {
      state.directory = std::move(*directory);
    } else {
      state.agents_failure_class = FailureClass::unknown;
      state.agents_failure = "list_agents: " + directory.error().message;
    }
  } else {
    state.agents_failure_class = classify(to_failure_info(agents));
    state.agents_failure = "list_agents: " + answer_text(agents);
  }
  REHEARSE_ASSERT_NE(state.directory.has_value(), state.agents_failure_class.has_value());
}

void Reconciler::log_cycle(const RunContext& context, const CycleState& state) {
  if (state.validation_candidates > 0) {
    log_.info("ids_validated", {{"job_id", context.job_id},
                                {"instance", state.directory->instance},
                                {"validated", state.report.validated},
                                {"lost", state.validation_lost},
                                {"pending", state.validation_pending}});
  }
  log_.info("reconcile_cycle", {{"job_id", context.job_id},
                                {"instance", state.report.instance},
                                {"queried", state.report.queried},
                                {"advanced", state.report.advanced},
                                {"ended", state.report.ended},
                                {"deferred", state.report.deferred},
                                {"backed_off", state.report.backed_off},
                                {"assigned", state.report.assigned}});
}

ReconcileJob::ReconcileJob(Clock& clock, Services& services, Log& log, Disk& disk, Environment env,
                           ReconcileConfig config)
    : store_(disk, config.store_dir),
      reconciler_(clock, services, log, store_, std::move(env), std::move(config)) {}

Task<RunOutcome> ReconcileJob::run(RunContext context) {
  CycleReport report = co_await reconciler_.run_cycle(std::move(context));
  last_ = report;
  co_return report.outcome;
}

}  // namespace rehearse
