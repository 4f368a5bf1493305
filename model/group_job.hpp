// GroupJob: a group of generation tasks whose results are delivered together
// to every messenger target, once per regular slot (docs/semantics.md §6,
// incident 001; docs/group-jobs.md has the full rules and the trace).
//
// A run, in order:
//  1. Reads the slot's ledger record. A consumed guard (or a marker) means the
//     slot is done: exit quietly (already_complete) without calling model-api.
//     An outbox means an earlier run decided a delivery and did not finish
//     sending it: resume it (step 4) without generating anything again.
//  2. Runs the tasks in order, each one or more model-api "generate" requests.
//     A task yields a deliverable (summary, preview), a skip, or an error; an
//     error is caught, classified and turned into a failure notice item, and
//     the other tasks still run.
//  3. Judges by deliverables, not by counts (judge_group):
//       failed  : >= 1 task failed and no summary and no preview. The failure
//                 notice goes to every target directly (a target that refuses
//                 it is a warning; the others are still tried); nothing is
//                 recorded in the ledger; the run fails with the ORIGINAL task
//                 failure, whatever happened while sending notices.
//       skipped : nothing failed and nothing to deliver. Guard, then marker.
//       deliver : write the outbox, then step 4.
//  4. Sends the outbox to each target that has not accepted it yet, recording
//     each acceptance in the ledger right after it; a refusal is remembered
//     and the other targets are still tried. If any target refused, the run
//     fails (class from the first refusal) with nothing marked. Once every
//     target has it: consume the guard, then mark the slot complete.
//
// Why guard then marker: the guard is the record of the external effect (the
// send) and must exist before anything claims the slot is complete; a marker
// therefore always implies a guard (the ledger refuses the opposite). A crash
// between the two leaves a consumed guard without a marker: the next run
// finds the guard, completes the marker and exits quietly.
//
// The at-least-once window: a target's acceptance and its ledger record are
// two steps. A crash between them (or a failed ledger write, which is the same
// thing for durability) makes the next run send to that target again: the one
// kind of duplicate invariant 5 allows. A refused target never causes a
// duplicate elsewhere, because recorded targets are never sent to again.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/failure.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"

namespace rehearse {

struct GroupTaskSpec {
  std::string id;
  // model-api requests per run; 0: the task decides locally and skips.
  int model_calls = 1;
};

struct GroupJobConfig {
  std::string job_id;
  std::vector<GroupTaskSpec> tasks;  // run in this order
  std::vector<std::string> targets;  // messenger targets, in sending order
  std::string model_service = "model-api";
  // The job's policy's retryable classes: decides which task failure names
  // the failed run (the first retryable one). Defaults to the per-job form's.
  FailureClassSet retryable_classes = default_retryable_classes();
};

// A config error (empty id, no targets, duplicate task ids...), if any.
Status check_group_config(const GroupJobConfig& config);

inline constexpr int kModelCallsMax = 100;
inline constexpr std::size_t kGroupTasksMax = 100;
inline constexpr std::size_t kGroupTargetsMax = 100;

// --- the pure part: outcomes, judgement, messages --------------------------

enum class TaskOutcomeKind : unsigned char { summary, preview, skip, failed };
const char* to_string(TaskOutcomeKind kind) noexcept;
std::optional<TaskOutcomeKind> parse_task_outcome_kind(std::string_view name) noexcept;

struct TaskOutcome {
  std::string task;
  TaskOutcomeKind kind = TaskOutcomeKind::skip;
  std::string text;  // the deliverable's text (summary / preview)
  // failed only:
  FailureClass failure_class = FailureClass::unknown;
  std::optional<int> http_status;
  std::string error;  // the original error text, verbatim

  bool deliverable() const noexcept {
    return kind == TaskOutcomeKind::summary || kind == TaskOutcomeKind::preview;
  }
};

enum class GroupVerdict : unsigned char { deliver, failed, skipped };
const char* to_string(GroupVerdict verdict) noexcept;

struct GroupJudgement {
  GroupVerdict verdict = GroupVerdict::skipped;
  // failed only: the failure that names the run, and its task.
  FailureClass failure_class = FailureClass::unknown;
  std::string error;
  std::string failed_task;
  int deliverables = 0;
  int failures = 0;
  int skips = 0;
};

// Specificity of a class when no failure is retryable: the classifier's own
// most-specific-first order (auth, validation, not_found, config, rate_limit,
// provider_5xx, timeout, network, unknown); lower is more specific.
int failure_specificity(FailureClass c) noexcept;

// The judgement of docs/semantics.md §6. A failed run is named after its
// first task failure whose class is in `retryable`, else after the most
// specific failure (ties: the earlier task).
GroupJudgement judge_group(const std::vector<TaskOutcome>& outcomes,
                           const FailureClassSet& retryable);

// "⚠️ {task} auto-generation failed: {error}"
std::string failure_notice_text(std::string_view task, std::string_view error);

// The message items, in task order: every deliverable and one notice per
// failed task ({"task", "kind": summary|preview|failure_notice, "text"});
// skips are left out.
nlohmann::json delivery_items(const std::vector<TaskOutcome>& outcomes);
nlohmann::json notice_items(const std::vector<TaskOutcome>& outcomes);

// Message kinds and the fixed message shape the messenger and monitors read:
// {"kind", "job_id", "slot" (ISO), "attempt", "items": [...]} (+
// "failure_class" on failure notices).
inline constexpr const char* kMessageDelivery = "delivery";
inline constexpr const char* kMessageFailureNotice = "failure_notice";
nlohmann::json make_group_message(std::string_view kind, const RunContext& context,
                                  nlohmann::json items);

// --- the runner -----------------------------------------------------------

class GroupJob final : public JobRunner {
 public:
  GroupJob(Clock& clock, Services& services, Notifier& notifier, Log& log, DeliveryLedger& ledger,
           GroupJobConfig config);

  Task<RunOutcome> run(RunContext context) override;

  const GroupJobConfig& config() const noexcept { return config_; }

 private:
  Task<TaskOutcome> run_task(const RunContext& context, const GroupTaskSpec& task);
  Task<RunOutcome> send_failure_notices(const RunContext& context,
                                        const std::vector<TaskOutcome>& outcomes,
                                        const GroupJudgement& judgement);
  Task<RunOutcome> deliver(const RunContext& context, DeliverySlot record);
  RunOutcome complete_slot(const RunContext& context, SlotVerdict verdict);
  RunOutcome ledger_failure(const RunContext& context, const Error& error);
  // The steps of run().
  std::optional<RunOutcome> refuse_misconfigured(const RunContext& context);
  RunOutcome already_complete(const RunContext& context, const DeliverySlot& record);
  Task<std::vector<TaskOutcome>> run_tasks(const RunContext& context);
  void log_judgement(const RunContext& context, const GroupJudgement& judgement);
  Task<RunOutcome> write_outbox_and_deliver(const RunContext& context,
                                            const std::vector<TaskOutcome>& outcomes);

  Clock& clock_;
  Services& services_;
  Notifier& notifier_;
  Log& log_;
  DeliveryLedger& ledger_;
  GroupJobConfig config_;
};

}  // namespace rehearse
