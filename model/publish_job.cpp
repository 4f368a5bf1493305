#include "model/publish_job.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <optional>
#include <utility>

#include "model/group_job.hpp"

namespace rehearse {

PublishJob::PublishJob(Clock& clock, Services& services, Notifier& notifier, Log& log,
                       DeliveryLedger& ledger, PublishJobConfig config)
    : clock_(clock),
      services_(services),
      notifier_(notifier),
      log_(log),
      ledger_(ledger),
      config_(std::move(config)) {}

RunOutcome PublishJob::fail(const RunContext& context, FailureClass c, const std::string& message) {
  log_.error("publish_run_failed",
             with_fields(run_log_fields(context),
                         {{"failure_class", to_string(c)}, {"error", message}}));
  return RunOutcome::failure(c, message);
}

RunOutcome PublishJob::ledger_failure(const RunContext& context, const Error& error) {
  // Without the ledger a send could duplicate a post and a skip could lose
  // one: the run fails closed, visibly.
  const std::string message = "delivery ledger: " + error.describe();
  log_.error("ledger_error", with_fields(run_log_fields(context),
                                         {{"code", to_string(error.code)}, {"error", message}}));
  return fail(context, FailureClass::unknown, message);
}

RunOutcome PublishJob::complete_slot(const RunContext& context) {
  if (auto s = ledger_.consume_guard(context.job_id, context.slot, clock_.now()); !s.ok()) {
    return ledger_failure(context, s.error());
  }
  log_.info("guard_set", run_log_fields(context));
  if (auto s =
          ledger_.mark_complete(context.job_id, context.slot, SlotVerdict::delivered, clock_.now());
      !s.ok()) {
    // The guard stands for the slot: later runs exit quietly and repair the
    // marker, so this run still did its job (as in GroupJob).
    log_.error("slot_mark_failed",
               with_fields(run_log_fields(context), {{"error", s.error().describe()}}));
  } else {
    log_.info("slot_marked", with_fields(run_log_fields(context), {{"verdict", "delivered"}}));
  }
  return RunOutcome::success();
}

Task<RunOutcome> PublishJob::deliver(const RunContext& context, DeliverySlot record) {
  REHEARSE_ASSERT(record.outbox.has_value());
  const nlohmann::json message = make_group_message(kMessageDelivery, context, *record.outbox);
  std::optional<Error> first_refusal;
  for (const std::string& target : config_.targets) {
    if (record.has_delivered_to(target)) continue;  // never twice to a recorded target
    Status sent = co_await notifier_.send(target, message);
    if (!sent.ok()) {
      log_.error("delivery_send_failed",
                 with_fields(run_log_fields(context),
                             {{"target", target}, {"error", sent.error().describe()}}));
      if (!first_refusal) first_refusal = sent.error();
      continue;
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
    co_return fail(context, classify(info), info.message);
  }
  co_return complete_slot(context);
}

Task<RunOutcome> PublishJob::run(RunContext context) {
  if (config_.targets.empty() || context.job_id != config_.job_id) {
    co_return fail(context, FailureClass::config,
                   fmt::format("publish job '{}': no targets or a run for job '{}'", config_.job_id,
                               context.job_id));
  }
  log_.info("publish_run_started", run_log_fields(context));
  auto read = ledger_.read(context.job_id, context.slot);
  if (!read.ok()) co_return ledger_failure(context, read.error());
  DeliverySlot record = std::move(read).value();

  if (record.guard_consumed()) {
    if (!record.complete()) {
      // A crash fell between the guard and the marker: finish the marker.
      if (auto s = ledger_.mark_complete(context.job_id, context.slot, SlotVerdict::delivered,
                                         clock_.now());
          !s.ok()) {
        log_.error("slot_mark_failed",
                   with_fields(run_log_fields(context), {{"error", s.error().describe()}}));
      } else {
        log_.info("slot_marked", with_fields(run_log_fields(context),
                                             {{"verdict", "delivered"}, {"repaired", true}}));
      }
    }
    log_.info("publish_already_complete", run_log_fields(context));
    co_return RunOutcome::already_complete();
  }

  if (!record.outbox) {
    const std::string slot_text = format_instant(context.slot);
    ServiceRequest request;
    request.service = config_.model_service;
    request.operation = "generate";
    request.target = config_.task;
    request.body =
        nlohmann::json{{"job_id", context.job_id}, {"task", config_.task}, {"slot", slot_text}};
    request.headers["x-job-id"] = context.job_id;
    request.headers["x-slot"] = slot_text;
    request.headers["x-attempt"] = std::to_string(context.attempt);
    request.headers["x-request-id"] =
        fmt::format("{}/{}/a{}/{}", context.job_id, slot_text, context.attempt, config_.task);
    ServiceResult result = co_await services_.call(std::move(request));
    if (!result.is_success()) {
      const FailureInfo info = to_failure_info(result);
      co_return fail(context, classify(info), info.message);
    }
    const nlohmann::json& body = result.response().body;
    std::string text;
    if (body.is_object() && body.contains("text") && body.at("text").is_string()) {
      text = body.at("text").get<std::string>();
    }
    nlohmann::json items = nlohmann::json::array();
    items.push_back({{"task", config_.task}, {"kind", "post"}, {"text", text}});
    if (auto s = ledger_.write_outbox(context.job_id, context.slot, items, clock_.now()); !s.ok()) {
      co_return ledger_failure(context, s.error());
    }
    record.outbox = std::move(items);
  }
  RunOutcome outcome = co_await deliver(context, std::move(record));
  co_return outcome;
}

}  // namespace rehearse
