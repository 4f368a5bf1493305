// PublishJob: the `publish` job kind. One model-api "generate" call makes the
// post, then the post is delivered once to every messenger target, through
// the same per-(job, slot) delivery ledger group jobs use (send guard, per
// target delivery record, slot marker; model/delivery_ledger.hpp).
//
// A run, in order:
//  1. Reads the slot's ledger record. A consumed guard means the slot is done:
//     complete a missing marker and exit quietly (already_complete), without
//     calling the model. An outbox means an earlier run decided the post and
//     did not finish sending it: resume it (step 3) without generating again.
//  2. One model-api request (target `task`). A failure fails the run with its
//     class (status as a field) and message verbatim; nothing is recorded,
//     nothing is sent. A success writes the post as the slot's outbox.
//  3. Sends the outbox to each target that has not accepted it yet, recording
//     each acceptance right after it. A refusal is remembered and the other
//     targets are still tried; any refusal fails the run with nothing
//     marked. Once every target has it: consume the guard, then mark.
//
// Why a publish job needs this: its re-run posts again (side_effects
// "publish"), so a retry must never repeat a post a target already has. The
// at-least-once window is the one of group jobs: a crash between a target's
// acceptance and its record makes the next run post to it again.
//
// Log events (same names as group jobs where the meaning is the same, so the
// monitors read both alike): publish_run_started, publish_run_failed,
// delivery_send_failed, delivery_recorded, guard_set, slot_marked,
// publish_already_complete, ledger_error.
#pragma once

#include <string>
#include <vector>

#include "model/delivery_ledger.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"

namespace rehearse {

struct PublishJobConfig {
  std::string job_id;
  std::vector<std::string> targets;  // in sending order
  std::string model_service = "model-api";
  std::string task = "publish";  // the model-api request's target
};

class PublishJob final : public JobRunner {
 public:
  PublishJob(Clock& clock, Services& services, Notifier& notifier, Log& log, DeliveryLedger& ledger,
             PublishJobConfig config);

  Task<RunOutcome> run(RunContext context) override;

  const PublishJobConfig& config() const noexcept { return config_; }

 private:
  Task<RunOutcome> deliver(const RunContext& context, DeliverySlot record);
  RunOutcome complete_slot(const RunContext& context);
  RunOutcome fail(const RunContext& context, FailureClass c, const std::string& message);
  RunOutcome ledger_failure(const RunContext& context, const Error& error);

  Clock& clock_;
  Services& services_;
  Notifier& notifier_;
  Log& log_;
  DeliveryLedger& ledger_;
  PublishJobConfig config_;
};

}  // namespace rehearse
