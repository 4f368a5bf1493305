#include "model/group_job.hpp"

#include <exception>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse {

// --- vocabulary ------------------------------------------------------------

const char* to_string(TaskOutcomeKind kind) noexcept {
  switch (kind) {
    case TaskOutcomeKind::summary: return "summary";
    case TaskOutcomeKind::preview: return "preview";
    case TaskOutcomeKind::skip: return "skip";
    case TaskOutcomeKind::failed: return "failed";
  }
  return "failed";
}

std::optional<TaskOutcomeKind> parse_task_outcome_kind(std::string_view name) noexcept {
  if (name == "summary") return TaskOutcomeKind::summary;
  if (name == "preview") return TaskOutcomeKind::preview;
  if (name == "skip") return TaskOutcomeKind::skip;
  if (name == "failed") return TaskOutcomeKind::failed;
  return std::nullopt;
}

const char* to_string(GroupVerdict verdict) noexcept {
  switch (verdict) {
    case GroupVerdict::deliver: return "deliver";
    case GroupVerdict::failed: return "failed";
    case GroupVerdict::skipped: return "skipped";
  }
  return "failed";
}

Status check_group_config(const GroupJobConfig& config) {
  auto bad = [&](std::string why) {
    return make_error(ErrorCode::invalid_argument, std::move(why), config.job_id);
  };
  if (config.job_id.empty()) return bad("group job has no id");
  if (config.tasks.empty() || config.tasks.size() > kGroupTasksMax) {
    return bad(
        fmt::format("a group job has 1..{} tasks, not {}", kGroupTasksMax, config.tasks.size()));
  }
  std::set<std::string, std::less<>> ids;
  for (const GroupTaskSpec& t : config.tasks) {
    if (t.id.empty()) return bad("a task has no id");
    if (!ids.insert(t.id).second) return bad(fmt::format("task '{}' appears twice", t.id));
    if (t.model_calls < 0 || t.model_calls > kModelCallsMax) {
      return bad(fmt::format("task '{}': model_calls must be 0..{}", t.id, kModelCallsMax));
    }
  }
  if (config.targets.empty() || config.targets.size() > kGroupTargetsMax) {
    return bad(fmt::format("a group job has 1..{} targets, not {}", kGroupTargetsMax,
                           config.targets.size()));
  }
  std::set<std::string, std::less<>> targets;
  for (const std::string& t : config.targets) {
    if (t.empty()) return bad("a target is empty");
    if (!targets.insert(t).second) return bad(fmt::format("target '{}' appears twice", t));
  }
  if (config.model_service.empty()) return bad("no model service named");
  return {};
}

// --- the pure part ---------------------------------------------------------

int failure_specificity(FailureClass c) noexcept {
  switch (c) {
    case FailureClass::auth: return 0;
    case FailureClass::validation: return 1;
    case FailureClass::not_found: return 2;
    case FailureClass::config: return 3;
    case FailureClass::rate_limit: return 4;
    case FailureClass::provider_5xx: return 5;
    case FailureClass::timeout: return 6;
    case FailureClass::network: return 7;
    case FailureClass::unknown: return 8;
  }
  return 8;
}

GroupJudgement judge_group(const std::vector<TaskOutcome>& outcomes,
                           const FailureClassSet& retryable) {
  GroupJudgement j;
  const TaskOutcome* first_retryable = nullptr;
  const TaskOutcome* most_specific = nullptr;
  for (const TaskOutcome& o : outcomes) {
    if (o.deliverable()) {
      ++j.deliverables;
    } else if (o.kind == TaskOutcomeKind::skip) {
      ++j.skips;
    } else {
      ++j.failures;
      if (!first_retryable && contains(retryable, o.failure_class)) first_retryable = &o;
      if (!most_specific || failure_specificity(o.failure_class) <
                                failure_specificity(most_specific->failure_class)) {
        most_specific = &o;
      }
    }
  }
  if (j.deliverables > 0) {
    j.verdict = GroupVerdict::deliver;
  } else if (j.failures > 0) {
    j.verdict = GroupVerdict::failed;
    const TaskOutcome* named = first_retryable ? first_retryable : most_specific;
    REHEARSE_ASSERT(named != nullptr);
    j.failure_class = named->failure_class;
    j.error = named->error;
    j.failed_task = named->task;
  } else {
    j.verdict = GroupVerdict::skipped;
  }
  REHEARSE_ASSERT_EQ(static_cast<std::size_t>(j.deliverables + j.skips + j.failures),
                     outcomes.size());
  return j;
}

std::string failure_notice_text(std::string_view task, std::string_view error) {
  return fmt::format("\xE2\x9A\xA0\xEF\xB8\x8F {} auto-generation failed: {}", task, error);
}

namespace {

nlohmann::json notice_item(const TaskOutcome& o) {
  return nlohmann::json{{"task", o.task},
                        {"kind", "failure_notice"},
                        {"failure_class", to_string(o.failure_class)},
                        {"text", failure_notice_text(o.task, o.error)}};
}

}  // namespace

nlohmann::json delivery_items(const std::vector<TaskOutcome>& outcomes) {
  nlohmann::json items = nlohmann::json::array();
  for (const TaskOutcome& o : outcomes) {
    if (o.deliverable()) {
      items.push_back(
          nlohmann::json{{"task", o.task}, {"kind", to_string(o.kind)}, {"text", o.text}});
    } else if (o.kind == TaskOutcomeKind::failed) {
      items.push_back(notice_item(o));
    }
  }
  return items;
}

nlohmann::json notice_items(const std::vector<TaskOutcome>& outcomes) {
  nlohmann::json items = nlohmann::json::array();
  for (const TaskOutcome& o : outcomes) {
    if (o.kind == TaskOutcomeKind::failed) items.push_back(notice_item(o));
  }
  return items;
}

nlohmann::json make_group_message(std::string_view kind, const RunContext& context,
                                  nlohmann::json items) {
  nlohmann::json m = nlohmann::json::object();
  m["kind"] = std::string(kind);
  m["job_id"] = context.job_id;
  m["slot"] = format_instant(context.slot);
  m["attempt"] = context.attempt;
  m["items"] = std::move(items);
  return m;
}

// --- the runner ------------------------------------------------------------

GroupJob::GroupJob(Clock& clock, Services& services, Notifier& notifier, Log& log,
                   DeliveryLedger& ledger, GroupJobConfig config)
    : clock_(clock),
      services_(services),
      notifier_(notifier),
      log_(log),
      ledger_(ledger),
      config_(std::move(config)) {}

namespace {

// What a model-api answer must look like: {"output": summary|preview|skip,
// "text": "..."}.
std::optional<TaskOutcomeKind> answer_output(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("output") || !body.at("output").is_string()) {
    return std::nullopt;
  }
  const auto kind = parse_task_outcome_kind(body.at("output").get<std::string>());
  if (!kind || *kind == TaskOutcomeKind::failed) return std::nullopt;
  return kind;
}

}  // namespace

Task<TaskOutcome> GroupJob::run_task(const RunContext& context, const GroupTaskSpec& task) {
  TaskOutcome outcome;
  outcome.task = task.id;
  outcome.kind = TaskOutcomeKind::skip;  // model_calls == 0: decided locally
  const std::string slot_text = format_instant(context.slot);
  for (int call = 1; call <= task.model_calls; ++call) {
    ServiceRequest request;
    request.service = config_.model_service;
    request.operation = "generate";
    request.target = task.id;
    request.body = nlohmann::json{
        {"job_id", context.job_id}, {"task", task.id}, {"slot", slot_text}, {"call", call}};
    request.headers["x-job-id"] = context.job_id;
    request.headers["x-slot"] = slot_text;
    request.headers["x-attempt"] = std::to_string(context.attempt);
    request.headers["x-request-id"] =
        fmt::format("{}/{}/a{}/{}/{}", context.job_id, slot_text, context.attempt, task.id, call);
    ServiceResult result = co_await services_.call(std::move(request));
    if (!result.is_success()) {
      const FailureInfo info = to_failure_info(result);
      outcome.kind = TaskOutcomeKind::failed;
      outcome.failure_class = classify(info);
      outcome.http_status = info.http_status;
      outcome.error = info.message;
      co_return outcome;
    }
    const nlohmann::json& body = result.response().body;
    const auto output = answer_output(body);
    if (!output) {
      // A 2xx the core cannot read is not a deliverable; fail closed.
      FailureInfo info;
      info.local_class = FailureClass::unknown;
      info.http_status = result.response().status;
      info.message = fmt::format("{} answered {} with an unreadable body for task {}",
                                 config_.model_service, result.response().status, task.id);
      outcome.kind = TaskOutcomeKind::failed;
      outcome.failure_class = classify(info);
      outcome.http_status = info.http_status;
      outcome.error = info.message;
      co_return outcome;
    }
    outcome.kind = *output;
    outcome.text.clear();
    if (body.contains("text") && body.at("text").is_string()) {
      outcome.text = body.at("text").get<std::string>();
    }
    if (*output == TaskOutcomeKind::skip) break;  // the model says: nothing to deliver
  }
  co_return outcome;
}

RunOutcome GroupJob::ledger_failure(const RunContext& context, const Error& error) {
  // A ledger that cannot be read or written fails the run closed: sending
  // without it could duplicate a delivery, skipping could lose one.
  const std::string message = "delivery ledger: " + error.describe();
  log_.error("ledger_error", with_fields(run_log_fields(context),
                                         {{"code", to_string(error.code)}, {"error", message}}));
  log_.error("group_run_failed", with_fields(run_log_fields(context),
                                             {{"failure_class", to_string(FailureClass::unknown)},
                                              {"error", message}}));
  return RunOutcome::failure(FailureClass::unknown, message);
}

RunOutcome GroupJob::complete_slot(const RunContext& context, SlotVerdict verdict) {
  const std::string& job = context.job_id;
  if (auto s = ledger_.consume_guard(job, context.slot, clock_.now()); !s.ok()) {
    return ledger_failure(context, s.error());
  }
  log_.info("guard_set", run_log_fields(context));
  if (auto s = ledger_.mark_complete(job, context.slot, verdict, clock_.now()); !s.ok()) {
    // The guard already stands for the slot (every run after this one exits
    // quietly and completes the marker), so the run itself did its job: it
    // is not turned into a failure, which would claim a guard set by a
    // failed run.
    log_.error("slot_mark_failed",
               with_fields(run_log_fields(context), {{"error", s.error().describe()}}));
  } else {
    log_.info("slot_marked",
              with_fields(run_log_fields(context), {{"verdict", to_string(verdict)}}));
  }
  return verdict == SlotVerdict::delivered ? RunOutcome::success() : RunOutcome::skipped();
}

Task<RunOutcome> GroupJob::send_failure_notices(const RunContext& context,
                                                const std::vector<TaskOutcome>& outcomes,
                                                const GroupJudgement& judgement) {
  nlohmann::json message =
      make_group_message(kMessageFailureNotice, context, notice_items(outcomes));
  message["failure_class"] = to_string(judgement.failure_class);
  for (const std::string& target : config_.targets) {
    // Sent directly to every target (no failure-alert recipient needed); a
    // refusal, or even an exception from the adapter, is a warning and never
    // replaces the run's own failure.
    std::string send_error;
    try {
      Status sent = co_await notifier_.send(target, message);
      if (!sent.ok()) send_error = sent.error().describe();
    } catch (const std::exception& e) {
      send_error = e.what();
    }
    if (send_error.empty()) {
      log_.info("notice_sent", with_fields(run_log_fields(context), {{"target", target}}));
    } else {
      log_.warning("notice_send_failed", with_fields(run_log_fields(context),
                                                     {{"target", target}, {"error", send_error}}));
    }
  }
  log_.error("group_run_failed", with_fields(run_log_fields(context),
                                             {{"failure_class", to_string(judgement.failure_class)},
                                              {"task", judgement.failed_task},
                                              {"error", judgement.error}}));
  co_return RunOutcome::failure(judgement.failure_class, judgement.error);
}

Task<RunOutcome> GroupJob::deliver(const RunContext& context, DeliverySlot record) {
  REHEARSE_ASSERT(record.outbox.has_value());
  const nlohmann::json message = make_group_message(kMessageDelivery, context, *record.outbox);
  std::optional<Error> first_refusal;
  std::string refused_target;
  for (const std::string& target : config_.targets) {
    if (record.has_delivered_to(target)) continue;  // never twice to a recorded target
    Status sent = co_await notifier_.send(target, message);
    if (!sent.ok()) {
      log_.error("delivery_send_failed",
                 with_fields(run_log_fields(context),
                             {{"target", target}, {"error", sent.error().describe()}}));
      if (!first_refusal) {
        first_refusal = sent.error();
        refused_target = target;
      }
      continue;  // the other targets still get theirs
    }
    // The at-least-once window is between the send above and this record.
    if (auto s = ledger_.record_delivery(context.job_id, context.slot, target, clock_.now());
        !s.ok()) {
      co_return ledger_failure(context, s.error());
    }
    log_.info("delivery_recorded", with_fields(run_log_fields(context), {{"target", target}}));
  }
  if (first_refusal) {
    FailureInfo info;
    info.message = first_refusal->describe();
    const FailureClass c = classify(info);
    log_.error("group_run_failed",
               with_fields(run_log_fields(context), {{"failure_class", to_string(c)},
                                                     {"target", refused_target},
                                                     {"error", info.message}}));
    co_return RunOutcome::failure(c, info.message);
  }
  co_return complete_slot(context, SlotVerdict::delivered);
}

std::optional<RunOutcome> GroupJob::refuse_misconfigured(const RunContext& context) {
  std::string why;
  if (auto s = check_group_config(config_); !s.ok()) {
    why = s.error().describe();
  } else if (context.job_id != config_.job_id) {
    why = fmt::format("run for job '{}' handed to group job '{}'", context.job_id, config_.job_id);
  } else {
    return std::nullopt;
  }
  log_.error("group_run_failed",
             with_fields(run_log_fields(context),
                         {{"failure_class", to_string(FailureClass::config)}, {"error", why}}));
  return RunOutcome::failure(FailureClass::config, why);
}

// The slot was decided by an earlier run (its guard or marker): nothing to
// do but finish a marker a crash left unwritten.
RunOutcome GroupJob::already_complete(const RunContext& context, const DeliverySlot& record) {
  REHEARSE_ASSERT(record.guard_consumed() || record.complete());
  if (!record.complete()) {
    // A crash fell between the guard and the marker: finish the marker.
    const SlotVerdict verdict = (record.outbox || !record.delivered_to.empty())
                                    ? SlotVerdict::delivered
                                    : SlotVerdict::skipped;
    if (auto s = ledger_.mark_complete(context.job_id, context.slot, verdict, clock_.now());
        !s.ok()) {
      log_.error("slot_mark_failed",
                 with_fields(run_log_fields(context), {{"error", s.error().describe()}}));
    } else {
      log_.info("slot_marked", with_fields(run_log_fields(context),
                                           {{"verdict", to_string(verdict)}, {"repaired", true}}));
    }
  }
  log_.info("group_already_complete",
            with_fields(run_log_fields(context),
                        {{"reason", record.complete() ? "marker" : "guard"}}));
  return RunOutcome::already_complete();
}

// Every task in order, each logged with its outcome.
Task<std::vector<TaskOutcome>> GroupJob::run_tasks(const RunContext& context) {
  std::vector<TaskOutcome> outcomes;
  outcomes.reserve(config_.tasks.size());
  for (const GroupTaskSpec& task : config_.tasks) {
    log_.info("task_started", with_fields(run_log_fields(context), {{"task", task.id}}));
    TaskOutcome outcome = co_await run_task(context, task);
    REHEARSE_ASSERT_EQ(outcome.task, task.id);
    LogFields fields = with_fields(run_log_fields(context),
                                   {{"task", outcome.task}, {"outcome", to_string(outcome.kind)}});
    if (outcome.kind == TaskOutcomeKind::failed) {
      fields.push_back({"failure_class", to_string(outcome.failure_class)});
      if (outcome.http_status) fields.push_back({"http_status", *outcome.http_status});
      fields.push_back({"error", outcome.error});
      log_.warning("task_result", fields);
    } else {
      log_.info("task_result", fields);
    }
    outcomes.push_back(std::move(outcome));
  }
  co_return outcomes;
}

void GroupJob::log_judgement(const RunContext& context, const GroupJudgement& judgement) {
  LogFields fields =
      with_fields(run_log_fields(context), {{"verdict", to_string(judgement.verdict)},
                                            {"deliverables", judgement.deliverables},
                                            {"failures", judgement.failures},
                                            {"skips", judgement.skips}});
  if (judgement.verdict == GroupVerdict::failed) {
    fields.push_back({"failure_class", to_string(judgement.failure_class)});
  }
  log_.info("group_judged", fields);
}

// The outbox first (the decision survives a crash), then the sends.
Task<RunOutcome> GroupJob::write_outbox_and_deliver(const RunContext& context,
                                                    const std::vector<TaskOutcome>& outcomes) {
  nlohmann::json items = delivery_items(outcomes);
  REHEARSE_ASSERT(!items.empty());
  const TimeMs now = clock_.now();
  if (auto s = ledger_.write_outbox(context.job_id, context.slot, items, now); !s.ok()) {
    co_return ledger_failure(context, s.error());
  }
  log_.info("outbox_written", with_fields(run_log_fields(context),
                                          {{"items", static_cast<std::int64_t>(items.size())}}));
  DeliverySlot fresh;
  fresh.slot = context.slot;
  fresh.outbox = std::move(items);
  fresh.outbox_at = now;
  RunOutcome delivered = co_await deliver(context, std::move(fresh));
  co_return delivered;
}

Task<RunOutcome> GroupJob::run(RunContext context) {
  if (auto refused = refuse_misconfigured(context)) co_return *refused;
  log_.info("group_run_started", run_log_fields(context));

  auto read = ledger_.read(context.job_id, context.slot);
  if (!read.ok()) co_return ledger_failure(context, read.error());
  DeliverySlot record = std::move(read).value();
  REHEARSE_ASSERT_EQ(record.slot, context.slot);
  if (record.guard_consumed() || record.complete()) co_return already_complete(context, record);

  if (record.outbox) {
    // An earlier run decided this delivery and did not finish sending it:
    // resend the same items to the targets that miss it, generate nothing.
    nlohmann::json missing = nlohmann::json::array();
    for (const std::string& t : config_.targets) {
      if (!record.has_delivered_to(t)) missing.push_back(t);
    }
    log_.info("outbox_resumed", with_fields(run_log_fields(context), {{"targets", missing}}));
    RunOutcome resumed = co_await deliver(context, std::move(record));
    co_return resumed;
  }

  const std::vector<TaskOutcome> outcomes = co_await run_tasks(context);
  const GroupJudgement judgement = judge_group(outcomes, config_.retryable_classes);
  log_judgement(context, judgement);
  switch (judgement.verdict) {
    case GroupVerdict::failed: {
      RunOutcome failed = co_await send_failure_notices(context, outcomes, judgement);
      co_return failed;
    }
    case GroupVerdict::skipped: co_return complete_slot(context, SlotVerdict::skipped);
    case GroupVerdict::deliver: {
      RunOutcome delivered = co_await write_outbox_and_deliver(context, outcomes);
      co_return delivered;
    }
  }
  REHEARSE_UNREACHABLE();
}

}  // namespace rehearse
