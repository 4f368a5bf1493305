// Goal: a group job judges its runs by deliverables (docs/semantics.md §6,
// incident 001) and keeps the send guard and slot marker honest: every group
// case of §11 (all tasks fail; skip + failure; a summary or preview
// present; a failing notice send keeps the original error), the messenger
// failing on the success path, partial target failures, all-skipped slots,
// quiet re-runs, retries that deliver once, a corrupt ledger failing closed;
// the same seed gives the same trace.
// Method: the real GroupJob on the simulated world (group_job_fixtures.hpp):
// no mocks. Faults are time windows at the model-api and messenger; checks read
// the run's outcome, the ledger, the messenger's counts and the trace.
#include "model/group_job.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/model_api.hpp"
#include "tests/model/group_job_fixtures.hpp"

namespace rehearse::group_test {
namespace {

// Task i's (single) model call starts at kSlot + i * latency: a window over
// exactly that call hits task i only.
TimeMs call_time(int task_index) { return kSlot + task_index * kModelLatencyMs; }

const std::string kQuotaMessagePrefix = "You exceeded your current quota";

// ---------------------------------------------------------------------------
// Section 11 (001): all tasks fail -> the run fails, the guard is not consumed

TEST(GroupJob, AllTasksFailingFailsTheRunWithoutConsumingTheGuard) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  w.model.set_output("impact-report", ModelOutput::preview);
  w.model.add_quota_outage(kSlot, kSlot + 4 * kHourMs);
  GroupJob job = w.make_job(weekly_config({"weekly-summary", "impact-report"}));

  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::failure);
  EXPECT_EQ(out.failure_class, FailureClass::rate_limit);
  // The original error text, verbatim (the first retryable failure's).
  EXPECT_EQ(out.error.rfind(kQuotaMessagePrefix, 0), 0u) << out.error;
  EXPECT_NE(out.error.find("2026-12-04T21:00:00Z"), std::string::npos) << out.error;

  // Guard and marker untouched, nothing decided for delivery.
  EXPECT_TRUE(w.record().empty());
  EXPECT_TRUE(w.events("guard_set").empty());
  EXPECT_TRUE(w.events("slot_marked").empty());

  // The failure notice went to every target directly, naming each task.
  for (const auto& target : kTargets) {
    EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, target), 0);
  }
  EXPECT_EQ(w.messenger.count("failure_notice", "weekly", kSlot), 2);
  ASSERT_EQ(w.messenger.accepted().size(), 2u);
  for (std::size_t i = 0; i < kTargets.size(); ++i) {
    const auto& m = w.messenger.accepted()[i];
    EXPECT_EQ(m.target, kTargets[i]);
    EXPECT_EQ(m.message.at("kind"), "failure_notice");
    EXPECT_EQ(m.message.at("job_id"), "weekly");
    EXPECT_EQ(m.message.at("slot"), "2026-12-04T17:00:00Z");
    EXPECT_EQ(m.message.at("attempt"), 1);
    EXPECT_EQ(m.message.at("failure_class"), "rate_limit");
    const auto& items = m.message.at("items");
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].at("text").get<std::string>().rfind(
                  "\xE2\x9A\xA0\xEF\xB8\x8F weekly-summary auto-generation failed: " +
                      kQuotaMessagePrefix,
                  0),
              0u);
    EXPECT_EQ(items[1].at("task"), "impact-report");
  }
  const auto judged = w.events("group_judged");
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_EQ(judged[0].str("verdict"), "failed");
  EXPECT_EQ(judged[0].num("failures"), 2);
}

// Section 11 (001): skip + failure with no deliverable -> the run fails.
TEST(GroupJob, SkipPlusFailureWithoutDeliverableFails) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  // A task that decides locally to skip (no model call), then one that fails.
  GroupJobConfig c = weekly_config({"weekly-summary"});
  c.tasks.insert(c.tasks.begin(), GroupTaskSpec{"holiday-check", 0});
  w.model.add_quota_outage(kSlot, kSlot + kHourMs);
  GroupJob job = w.make_job(c);

  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::failure);
  EXPECT_EQ(out.failure_class, FailureClass::rate_limit);
  EXPECT_TRUE(w.record().empty());
  EXPECT_EQ(w.model.calls("weekly", "holiday-check"), 0);
  EXPECT_EQ(w.model.calls("weekly", "weekly-summary"), 1);
  EXPECT_EQ(w.messenger.count("failure_notice", "weekly", kSlot), 2);
  // The notice lists the failed task only, not the skip.
  EXPECT_EQ(w.messenger.accepted()[0].message.at("items").size(), 1u);
}

TEST(GroupJob, ModelSkipPlusPermanentFailureFailsWithThePermanentClass) {
  World w;
  w.model.set_output("preview-draft", ModelOutput::skip);  // the model says: nothing today
  // "impact-report" has no script: the model-api answers 404.
  GroupJob job = w.make_job(weekly_config({"preview-draft", "impact-report"}));
  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::failure);
  EXPECT_EQ(out.failure_class, FailureClass::not_found);
  EXPECT_EQ(out.error, "no such task 'impact-report'");
  EXPECT_TRUE(w.record().empty());
  const auto results = w.events("task_result");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].str("outcome"), "skip");
  EXPECT_EQ(results[1].str("outcome"), "failed");
  EXPECT_EQ(results[1].str("failure_class"), "not_found");
  EXPECT_EQ(results[1].num("http_status"), 404);
}

// Section 11 (001): a summary or a preview present -> succeeds as before,
// failed tasks included as notice items.
struct DeliverableCase {
  const char* name;
  std::vector<ModelOutput> outputs;  // per task, in order
  int failing_task;                  // -1: none
};

class GroupJobDeliverable : public ::testing::TestWithParam<DeliverableCase> {};

TEST_P(GroupJobDeliverable, SucceedsAndDeliversOncePerTarget) {
  const DeliverableCase& param = GetParam();
  World w;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < param.outputs.size(); ++i) {
    names.push_back(fmt::format("task-{}", i));
    w.model.set_output(names.back(), param.outputs[i]);
  }
  if (param.failing_task >= 0) {
    w.model.add_http_errors(call_time(param.failing_task), call_time(param.failing_task + 1), 503);
  }
  GroupJob job = w.make_job(weekly_config(names));
  const RunOutcome out = w.run_now(job);
  ASSERT_EQ(out.kind, RunOutcomeKind::success) << out.error;

  const DeliverySlot rec = w.record();
  EXPECT_TRUE(rec.guard_consumed());
  EXPECT_TRUE(rec.complete());
  EXPECT_EQ(rec.verdict, SlotVerdict::delivered);
  EXPECT_FALSE(rec.outbox.has_value());  // dropped once complete
  EXPECT_EQ(rec.delivered_to, (std::vector<std::string>{"ops-mail", "team-chat"}));

  for (const auto& target : kTargets) {
    EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, target), 1) << target;
  }
  EXPECT_EQ(w.messenger.count("failure_notice", "weekly", kSlot), 0);
  const auto& items = w.messenger.accepted().at(0).message.at("items");
  std::size_t expected_items = 0;
  for (std::size_t i = 0; i < param.outputs.size(); ++i) {
    if (static_cast<int>(i) == param.failing_task || param.outputs[i] != ModelOutput::skip) {
      ++expected_items;
    }
  }
  ASSERT_EQ(items.size(), expected_items);
  bool notice_seen = false;
  for (const auto& item : items) {
    if (item.at("kind") == "failure_notice") {
      notice_seen = true;
      EXPECT_EQ(item.at("task"), names[static_cast<std::size_t>(param.failing_task)]);
      EXPECT_EQ(item.at("failure_class"), "provider_5xx");
      EXPECT_NE(item.at("text").get<std::string>().find("auto-generation failed: HTTP 503"),
                std::string::npos);
    }
  }
  EXPECT_EQ(notice_seen, param.failing_task >= 0);
  // Guard first, then the marker, after every delivery record.
  std::vector<std::string> order;
  for (const auto& e : w.trace.events()) {
    if (e.type == "delivery_recorded" || e.type == "guard_set" || e.type == "slot_marked") {
      order.push_back(e.type);
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"delivery_recorded", "delivery_recorded", "guard_set",
                                             "slot_marked"}));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GroupJobDeliverable,
    ::testing::Values(
        DeliverableCase{"summary_only", {ModelOutput::summary}, -1},
        DeliverableCase{"preview_only", {ModelOutput::preview}, -1},
        DeliverableCase{"summary_and_failure", {ModelOutput::summary, ModelOutput::summary}, 1},
        DeliverableCase{"failure_then_preview", {ModelOutput::summary, ModelOutput::preview}, 0},
        DeliverableCase{"preview_skip_failure",
                        {ModelOutput::preview, ModelOutput::skip, ModelOutput::summary},
                        2}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// Section 11 (001): a failing notice send keeps the original error.
TEST(GroupJob, FailingNoticeSendKeepsTheOriginalError) {
  for (const bool every_target_down : {false, true}) {
    World w;
    w.model.set_output("weekly-summary", ModelOutput::summary);
    w.model.add_quota_outage(kSlot, kSlot + kHourMs);
    if (every_target_down) {
      w.messenger.add_outage(kSlot, kSlot + kHourMs);
    } else {
      w.messenger.add_outage(kSlot, kSlot + kHourMs, {"team-chat"});
    }
    GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
    const RunOutcome out = w.run_now(job);
    EXPECT_EQ(out.kind, RunOutcomeKind::failure);
    EXPECT_EQ(out.failure_class, FailureClass::rate_limit) << "not the messenger's 5xx";
    EXPECT_EQ(out.error.rfind(kQuotaMessagePrefix, 0), 0u) << out.error;
    EXPECT_TRUE(w.record().empty());
    const auto warnings = w.events("notice_send_failed");
    ASSERT_EQ(warnings.size(), every_target_down ? 2u : 1u);
    EXPECT_EQ(warnings[0].str("target"), "team-chat");
    EXPECT_EQ(warnings[0].str("level"), "warning");
    EXPECT_NE(warnings[0].str("error").find("503"), std::string::npos);
    // The other target was still tried and got it.
    EXPECT_EQ(w.messenger.count("failure_notice", "weekly", kSlot), every_target_down ? 0 : 1);
    EXPECT_EQ(w.events("message_refused").size(), every_target_down ? 2u : 1u);
    const auto failed = w.events("group_run_failed");
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0].str("failure_class"), "rate_limit");
  }
}

// The messenger failing on the success path fails the run; nothing marked.
// The retry resends the same outbox without generating anything again.
TEST(GroupJob, MessengerDownOnTheSuccessPathFailsAndTheRetryDeliversOnce) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  w.messenger.add_outage(kSlot, kSlot + 20 * kMinuteMs);
  GroupJob job = w.make_job(weekly_config({"weekly-summary"}));

  const RunOutcome first = w.run_now(job, 1);
  EXPECT_EQ(first.kind, RunOutcomeKind::failure);
  EXPECT_EQ(first.failure_class, FailureClass::provider_5xx);
  EXPECT_NE(first.error.find("503 Service Unavailable"), std::string::npos);
  DeliverySlot rec = w.record();
  EXPECT_FALSE(rec.guard_consumed());
  EXPECT_FALSE(rec.complete());
  EXPECT_TRUE(rec.delivered_to.empty());
  ASSERT_TRUE(rec.outbox.has_value());  // the decided delivery waits in the outbox
  EXPECT_EQ(w.events("delivery_send_failed").size(), 2u);
  EXPECT_EQ(w.model.total_calls(), 1);

  const RunOutcome retry = w.run_at(job, kSlot + 30 * kMinuteMs, 2);
  EXPECT_EQ(retry.kind, RunOutcomeKind::success) << retry.error;
  EXPECT_EQ(w.model.total_calls(), 1) << "the retry resent the outbox, it did not regenerate";
  for (const auto& target : kTargets) {
    EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, target), 1) << target;
  }
  rec = w.record();
  EXPECT_TRUE(rec.complete());
  EXPECT_EQ(w.events("outbox_resumed").size(), 1u);
  // The resent message says which attempt delivered it.
  EXPECT_EQ(w.messenger.accepted().back().message.at("attempt"), 2);
}

// Partial target failure: the run fails, the accepted target is recorded and
// never sent to again, the retry completes the others: no duplicate.
TEST(GroupJob, PartialTargetFailureNeverDuplicatesOnRetry) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  w.messenger.add_outage(kSlot, kSlot + 20 * kMinuteMs, {"ops-mail"});
  GroupJob job = w.make_job(weekly_config({"weekly-summary"}));

  const RunOutcome first = w.run_now(job, 1);
  EXPECT_EQ(first.kind, RunOutcomeKind::failure);
  DeliverySlot rec = w.record();
  EXPECT_EQ(rec.delivered_to, std::vector<std::string>{"team-chat"});
  EXPECT_FALSE(rec.guard_consumed());
  EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, "team-chat"), 1);
  EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, "ops-mail"), 0);

  // Still down at the first retry: fails again, no resend to team-chat.
  const RunOutcome second = w.run_at(job, kSlot + 10 * kMinuteMs, 2);
  EXPECT_EQ(second.kind, RunOutcomeKind::failure);
  const RunOutcome third = w.run_at(job, kSlot + 30 * kMinuteMs, 3);
  EXPECT_EQ(third.kind, RunOutcomeKind::success);
  EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, "team-chat"), 1);
  EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, "ops-mail"), 1);
  EXPECT_TRUE(w.messenger.duplicate_deliveries().empty());
  EXPECT_EQ(w.model.total_calls(), 1);
}

// No failure and no deliverable: skipped, nothing sent, guard and marker set.
TEST(GroupJob, AllSkippedMarksTheSlotSkipped) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::skip);
  GroupJobConfig c = weekly_config({"weekly-summary"});
  c.tasks.push_back({"holiday-check", 0});
  GroupJob job = w.make_job(c);
  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::skipped);
  EXPECT_TRUE(w.messenger.accepted().empty());
  const DeliverySlot rec = w.record();
  EXPECT_TRUE(rec.guard_consumed());
  EXPECT_TRUE(rec.complete());
  EXPECT_EQ(rec.verdict, SlotVerdict::skipped);
  EXPECT_EQ(w.events("slot_marked").at(0).str("verdict"), "skipped");
}

// A completed slot is never re-entered: the re-run exits quietly without a
// model call or a message.
TEST(GroupJob, ReRunAfterCompletionExitsQuietly) {
  for (const ModelOutput output : {ModelOutput::summary, ModelOutput::skip}) {
    World w;
    w.model.set_output("weekly-summary", output);
    GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
    const RunOutcome first = w.run_now(job, 1);
    ASSERT_FALSE(first.failed());
    const auto calls = w.model.total_calls();
    const auto messages = w.messenger.accepted().size();
    const auto trace_before = w.trace.size();

    const RunOutcome again = w.run_at(job, kSlot + kHourMs, 2);
    EXPECT_EQ(again.kind, RunOutcomeKind::already_complete);
    EXPECT_EQ(w.model.total_calls(), calls);
    EXPECT_EQ(w.messenger.accepted().size(), messages);
    // Nothing but the start and the quiet exit in the trace.
    std::vector<std::string> types;
    for (std::size_t i = trace_before; i < w.trace.size(); ++i) {
      const std::string& type = w.trace.events()[i].type;
      if (type.rfind("disk_", 0) != 0) types.push_back(type);
    }
    EXPECT_EQ(types, (std::vector<std::string>{"group_run_started", "group_already_complete"}));
  }
}

// A retry after failed runs delivers once; failure notices may repeat.
TEST(GroupJob, RetryAfterFailedRunsDeliversOnce) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  w.model.set_output("impact-report", ModelOutput::preview);
  w.model.add_quota_outage(kSlot, kSlot + kHourMs);
  GroupJob job = w.make_job(weekly_config({"weekly-summary", "impact-report"}));

  EXPECT_EQ(w.run_at(job, kSlot, 1).kind, RunOutcomeKind::failure);
  EXPECT_EQ(w.run_at(job, kSlot + 30 * kMinuteMs, 2).kind, RunOutcomeKind::failure);
  EXPECT_TRUE(w.record().empty());
  EXPECT_EQ(w.run_at(job, kSlot + 90 * kMinuteMs, 3).kind, RunOutcomeKind::success);
  for (const auto& target : kTargets) {
    EXPECT_EQ(w.messenger.delivery_count("weekly", kSlot, target), 1);
  }
  EXPECT_EQ(w.messenger.count("failure_notice", "weekly", kSlot), 4);  // 2 runs x 2 targets
  EXPECT_EQ(w.run_at(job, kSlot + 2 * kHourMs, 4).kind, RunOutcomeKind::already_complete);
  EXPECT_EQ(w.model.calls("weekly", "weekly-summary"), 3);
}

// A crash between the guard and the marker leaves a guard alone: the next run
// completes the marker and exits quietly (verdict from what the record shows).
TEST(GroupJob, GuardWithoutMarkerIsCompletedByTheNextRun) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
  ASSERT_TRUE(w.ledger.consume_guard("weekly", kSlot, kSlot).ok());
  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::already_complete);
  EXPECT_EQ(w.model.total_calls(), 0);
  const DeliverySlot rec = w.record();
  EXPECT_TRUE(rec.complete());
  EXPECT_EQ(rec.verdict, SlotVerdict::skipped);  // no outbox, no delivery recorded
  EXPECT_TRUE(w.events("slot_marked").at(0).flag("repaired"));
  EXPECT_EQ(w.events("group_already_complete").at(0).str("reason"), "guard");

  World v;
  GroupJob job2 = v.make_job(weekly_config({"weekly-summary"}));
  ASSERT_TRUE(v.ledger.write_outbox("weekly", kSlot, nlohmann::json::array(), kSlot).ok());
  ASSERT_TRUE(v.ledger.record_delivery("weekly", kSlot, "team-chat", kSlot).ok());
  ASSERT_TRUE(v.ledger.consume_guard("weekly", kSlot, kSlot).ok());
  EXPECT_EQ(v.run_now(job2).kind, RunOutcomeKind::already_complete);
  EXPECT_EQ(v.record().verdict, SlotVerdict::delivered);
}

// A corrupt ledger fails the run closed and visibly, before any model call or
// message, and the file stays as it was.
TEST(GroupJob, CorruptLedgerFailsTheRunClosed) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
  const std::string path = w.ledger.path_for("weekly");
  ASSERT_TRUE(w.disk.write_file(path, "{\"format\": 1, \"job_id\": \"wee").ok());
  const RunOutcome out = w.run_now(job);
  EXPECT_EQ(out.kind, RunOutcomeKind::failure);
  EXPECT_EQ(out.failure_class, FailureClass::unknown);
  EXPECT_NE(out.error.find("corrupt"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find(path), std::string::npos) << out.error;
  EXPECT_EQ(w.model.total_calls(), 0);
  EXPECT_TRUE(w.messenger.accepted().empty());
  EXPECT_EQ(**w.disk.read_file(path), "{\"format\": 1, \"job_id\": \"wee");
  EXPECT_EQ(w.events("ledger_error").size(), 1u);
}

// Transport errors and statuses become classes through the classifier; the
// error text is the service's own.
TEST(GroupJob, TaskErrorsAreClassifiedFromStructuredFields) {
  struct Case {
    std::function<void(ModelApi&)> fault;
    FailureClass expected;
    std::string error_prefix;
  };
  const std::vector<Case> cases = {
      {[](ModelApi& m) { m.add_timeouts(kSlot, kSlot + kHourMs); }, FailureClass::timeout,
       "ETIMEDOUT: model-api did not answer within 30s"},
      {[](ModelApi& m) {
         m.add_network_errors(kSlot, kSlot + kHourMs, 1.0, TransportErrorKind::connection_refused);
       },
       FailureClass::network, "connect ECONNREFUSED"},
      {[](ModelApi& m) { m.add_http_errors(kSlot, kSlot + kHourMs, 502); },
       FailureClass::provider_5xx, "HTTP 502 Bad Gateway"},
      {[](ModelApi& m) { m.add_http_errors(kSlot, kSlot + kHourMs, 403); }, FailureClass::auth,
       "HTTP 403 Forbidden"},
  };
  for (const Case& c : cases) {
    World w;
    w.model.set_output("weekly-summary", ModelOutput::summary);
    c.fault(w.model);
    GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
    const RunOutcome out = w.run_now(job);
    EXPECT_EQ(out.failure_class, c.expected) << out.error;
    EXPECT_EQ(out.error.rfind(c.error_prefix, 0), 0u) << out.error;
  }
  // A timeout takes the service's timeout, not its latency.
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  w.model.add_timeouts(kSlot, kSlot + kHourMs);
  GroupJob job = w.make_job(weekly_config({"weekly-summary"}));
  (void)w.run_now(job);
  EXPECT_EQ(w.events("service_reply").at(0).t, kSlot + 30 * kSecondMs);
}

// Requests carry the headers that let the trace attribute every call.
TEST(GroupJob, RequestsCarryJobSlotAttemptAndRequestId) {
  World w;
  w.model.set_output("weekly-summary", ModelOutput::summary);
  GroupJobConfig c = weekly_config({"weekly-summary"});
  c.tasks[0].model_calls = 2;
  GroupJob job = w.make_job(c);
  ASSERT_EQ(w.run_at(job, kSlot + kMinuteMs, 3).kind, RunOutcomeKind::success);
  const auto calls = w.events("service_call");
  ASSERT_EQ(calls.size(), 2u);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].service, "model-api");
    EXPECT_EQ(calls[i].job, "weekly");
    EXPECT_EQ(calls[i].slot, kSlot);
    EXPECT_EQ(calls[i].str("operation"), "generate");
    EXPECT_EQ(calls[i].str("target"), "weekly-summary");
    EXPECT_EQ(calls[i].num("attempt"), 3);  // a number in the trace
    EXPECT_EQ(calls[i].str("request_id"),
              fmt::format("weekly/2026-12-04T17:00:00Z/a3/weekly-summary/{}", i + 1));
  }
  EXPECT_EQ(w.model.calls("weekly", "weekly-summary"), 2);
}

TEST(GroupJob, ConfigErrorsFailTheRunAsConfig) {
  World w;
  GroupJobConfig no_targets = weekly_config({"weekly-summary"});
  no_targets.targets.clear();
  GroupJobConfig dup = weekly_config({"a", "a"});
  GroupJobConfig bad_calls = weekly_config({"a"});
  bad_calls.tasks[0].model_calls = -1;
  for (GroupJobConfig c : {no_targets, dup, bad_calls}) {
    EXPECT_FALSE(check_group_config(c).ok());
    GroupJob job = w.make_job(c);
    const RunOutcome out = w.run_now(job);
    EXPECT_EQ(out.failure_class, FailureClass::config) << out.error;
  }
  EXPECT_TRUE(check_group_config(weekly_config({"a", "b"})).ok());
  EXPECT_EQ(w.model.total_calls(), 0);
}

// The same seed gives a byte-identical trace for a run with random faults.
TEST(GroupJobDeterminism, SameSeedSameTrace) {
  auto run = [](std::uint64_t seed) {
    World w(seed);
    for (const char* t : {"a", "b", "c"}) w.model.set_output(t, ModelOutput::summary);
    w.model.add_http_errors(kSlot, kSlot + 3 * kHourMs, 503, 0.5);
    w.messenger.add_outage(kSlot, kSlot + kHourMs, {"ops-mail"});
    GroupJob job = w.make_job(weekly_config({"a", "b", "c"}));
    for (int attempt = 1; attempt <= 4; ++attempt) {
      (void)w.run_at(job, kSlot + (attempt - 1) * 45 * kMinuteMs, attempt);
    }
    return std::make_pair(w.trace.hash(), w.trace.size());
  };
  const auto a = run(11);
  EXPECT_EQ(a, run(11));
  EXPECT_GT(a.second, 20u);
  bool differs = false;
  for (std::uint64_t seed = 12; seed < 20 && !differs; ++seed) differs = run(seed) != a;
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace rehearse::group_test
