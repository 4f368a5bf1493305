// Goal: a group job judges its runs by deliverables (docs/semantics.md §6,
// incident 001) and keeps the send guard and slot marker honest: every group
// case of §11 (all tasks fail; skip + failure; a summary or preview
// present; a failing notice send keeps the original error), the messenger
// failing on the success path, partial target failures, all-skipped slots,
// quiet re-runs, retries that deliver once; the delivery ledger's format,
// fail-closed corruption handling and bounds; the simulated model-api and
// messenger themselves.
// Method: the real GroupJob on the simulated world (Simulator, SimServices
// with the ModelApi service, the Messenger, SimLog into a Trace, the
// DeliveryLedger over the simulated disk bound to the simulator; its format
// and bounds also over PosixDisk in a fresh temporary directory): no mocks.
// Faults are time windows at the model-api and messenger; checks read the
// run's outcome, the ledger, the messenger's counts and the trace. RapidCheck
// properties generate task outputs, fault windows and outages at random and
// check the delivery rules after every attempt, and check judge_group against
// the rule as written (not a second implementation of it).
#include "model/group_job.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "model/posix_disk.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/support/property.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse {
namespace {

using sim::Messenger;
using sim::ModelApi;
using sim::ModelOutput;

using testsupport::TempDir;

const TimeMs kSlot = *parse_instant("2026-12-04T17:00:00Z");  // a Friday, 0 17 * * 5
constexpr DurationMs kModelLatencyMs = 100;
constexpr DurationMs kMessengerLatencyMs = 50;
const std::vector<std::string> kTargets = {"team-chat", "ops-mail"};

DeliveryLedger open_ledger(Disk& disk, const std::string& dir) {
  auto ledger = DeliveryLedger::open(disk, dir);
  REHEARSE_ASSERT(ledger.ok());
  return std::move(ledger).value();
}

DeliveryLedger bound_ledger(sim::SimDisk& disk, sim::Simulator& simulator) {
  sim::bind_to_simulator(disk, simulator);
  return open_ledger(disk, "/ledger");
}

Task<void> drive(JobRunner& job, RunContext context, std::optional<RunOutcome>& out) {
  RunOutcome outcome = co_await job.run(std::move(context));
  out = outcome;
}

// The simulated world one group job lives in.
struct World {
  explicit World(std::uint64_t seed = 1)
      : sim({.start_ms = kSlot, .seed = seed}),
        model(sim.rng(), {.latency_ms = kModelLatencyMs, .timeout_ms = 30 * kSecondMs}),
        messenger(sim, trace, {kTargets, kMessengerLatencyMs}),
        disk(&trace, sim.rng().derive("disk")),
        ledger(bound_ledger(disk, sim)) {
    services.add(model);
    worker = sim.add_process("worker", [](sim::Simulator&, sim::ProcessId) {});
    sim.boot(worker);
  }

  GroupJob make_job(GroupJobConfig config) {
    return GroupJob(sim.clock(), services, messenger, log, ledger, std::move(config));
  }

  // Runs one attempt of kSlot starting at `at_ms` (not before now) to the end.
  RunOutcome run_at(GroupJob& job, TimeMs at_ms, int attempt) {
    if (at_ms > sim.now()) {
      const auto r = sim.run_until(at_ms);
      REHEARSE_ASSERT(r.ok());
    }
    std::optional<RunOutcome> out;
    sim.spawn(worker, drive(job, RunContext{job.config().job_id, kSlot, attempt, attempt > 1}, out),
              "group-run");
    const auto r = sim.run();
    REHEARSE_ASSERT(r.ok());
    REHEARSE_ASSERT(out.has_value());
    return *out;
  }
  RunOutcome run_now(GroupJob& job, int attempt = 1) { return run_at(job, sim.now(), attempt); }

  DeliverySlot record(const std::string& job_id = "weekly") {
    auto r = ledger.read(job_id, kSlot);
    REHEARSE_ASSERT(r.ok());
    return *r;
  }

  std::vector<sim::TraceEvent> events(std::string_view type) const {
    std::vector<sim::TraceEvent> out;
    for (const auto& e : trace.events()) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }

  sim::Simulator sim;
  sim::Trace trace;
  sim::SimServices services{sim, trace};
  sim::SimLog log{sim, trace};
  ModelApi model;
  Messenger messenger;
  sim::SimDisk disk;
  DeliveryLedger ledger;
  sim::ProcessId worker = 0;
};

GroupJobConfig weekly_config(std::vector<std::string> tasks) {
  GroupJobConfig c;
  c.job_id = "weekly";
  for (auto& t : tasks) c.tasks.push_back({std::move(t), 1});
  c.targets = kTargets;
  return c;
}

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

// ---------------------------------------------------------------------------
// The judgement, unit and property.

TaskOutcome failed(std::string task, FailureClass c, std::string error) {
  TaskOutcome o;
  o.task = std::move(task);
  o.kind = TaskOutcomeKind::failed;
  o.failure_class = c;
  o.error = std::move(error);
  return o;
}
TaskOutcome produced(std::string task, TaskOutcomeKind kind) {
  TaskOutcome o;
  o.task = std::move(task);
  o.kind = kind;
  return o;
}

TEST(JudgeGroup, FirstRetryableFailureNamesTheRun) {
  const auto j = judge_group({failed("a", FailureClass::auth, "403"),
                              failed("b", FailureClass::rate_limit, "quota"),
                              failed("c", FailureClass::timeout, "slow")},
                             default_retryable_classes());
  EXPECT_EQ(j.verdict, GroupVerdict::failed);
  EXPECT_EQ(j.failure_class, FailureClass::rate_limit);
  EXPECT_EQ(j.error, "quota");
  EXPECT_EQ(j.failed_task, "b");
}

TEST(JudgeGroup, WithoutRetryableFailureTheMostSpecificNamesTheRun) {
  const auto j = judge_group(
      {failed("a", FailureClass::unknown, "?"), failed("b", FailureClass::not_found, "gone"),
       failed("c", FailureClass::auth, "denied"), failed("d", FailureClass::auth, "denied again")},
      default_retryable_classes());
  EXPECT_EQ(j.failure_class, FailureClass::auth);
  EXPECT_EQ(j.failed_task, "c");  // ties: the earlier task
  // A policy that narrows its classes makes rate_limit permanent here.
  FailureClassSet only_timeout;
  insert(only_timeout, FailureClass::timeout);
  const auto k = judge_group({failed("a", FailureClass::rate_limit, "quota"),
                              failed("b", FailureClass::provider_5xx, "503")},
                             only_timeout);
  EXPECT_EQ(k.failure_class, FailureClass::rate_limit);
}

TEST(JudgeGroup, DeliverablesNotCountsDecide) {
  const auto skip_fail = judge_group({produced("a", TaskOutcomeKind::skip),
                                      failed("b", FailureClass::rate_limit, "q")},
                                     default_retryable_classes());
  EXPECT_EQ(skip_fail.verdict, GroupVerdict::failed);
  const auto preview_fail = judge_group({failed("a", FailureClass::rate_limit, "q"),
                                         produced("b", TaskOutcomeKind::preview)},
                                        default_retryable_classes());
  EXPECT_EQ(preview_fail.verdict, GroupVerdict::deliver);
  const auto skips =
      judge_group({produced("a", TaskOutcomeKind::skip), produced("b", TaskOutcomeKind::skip)},
                  default_retryable_classes());
  EXPECT_EQ(skips.verdict, GroupVerdict::skipped);
  EXPECT_EQ(judge_group({}, default_retryable_classes()).verdict, GroupVerdict::skipped);
}

TEST(JudgeGroup, SpecificityFollowsTheClassifiersOrder) {
  const std::vector<FailureClass> order = {FailureClass::auth,       FailureClass::validation,
                                           FailureClass::not_found,  FailureClass::config,
                                           FailureClass::rate_limit, FailureClass::provider_5xx,
                                           FailureClass::timeout,    FailureClass::network,
                                           FailureClass::unknown};
  ASSERT_EQ(order.size(), all_failure_classes().size());
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_LT(failure_specificity(order[i - 1]), failure_specificity(order[i]));
  }
}

TEST(JudgeGroup, NoticeTextKeepsTheErrorVerbatim) {
  EXPECT_EQ(failure_notice_text("weekly-summary", "HTTP 429: quota"),
            "\xE2\x9A\xA0\xEF\xB8\x8F weekly-summary auto-generation failed: HTTP 429: quota");
}

rc::Gen<TaskOutcome> gen_outcome(int index) {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange(0, 4),
                                    rc::gen::inRange<int>(0, static_cast<int>(kFailureClassCount))),
                      [index](const std::pair<int, int>& p) {
                        TaskOutcome o;
                        o.task = fmt::format("t{}", index);
                        o.kind = static_cast<TaskOutcomeKind>(p.first);
                        if (o.kind == TaskOutcomeKind::failed) {
                          o.failure_class =
                              all_failure_classes()[static_cast<std::size_t>(p.second)];
                          o.error = fmt::format("error of t{}", index);
                        }
                        return o;
                      });
}

REHEARSE_PROP(JudgeGroupProp, VerdictAndNamingFollowTheRule, ()) {
  const int n = *rc::gen::inRange(0, 8);
  std::vector<TaskOutcome> outcomes;
  for (int i = 0; i < n; ++i) outcomes.push_back(*gen_outcome(i));
  const auto bits = *rc::gen::inRange<unsigned>(0, 1u << kFailureClassCount);
  const FailureClassSet retryable(bits);

  const auto j = judge_group(outcomes, retryable);
  bool any_deliverable = false;
  bool any_failure = false;
  for (const auto& o : outcomes) {
    any_deliverable |= o.deliverable();
    any_failure |= o.kind == TaskOutcomeKind::failed;
  }
  if (any_deliverable) {
    RC_ASSERT(j.verdict == GroupVerdict::deliver);
  } else if (any_failure) {
    RC_ASSERT(j.verdict == GroupVerdict::failed);
  } else {
    RC_ASSERT(j.verdict == GroupVerdict::skipped);
  }
  if (j.verdict != GroupVerdict::failed) return;
  // The named task is a failed task, and its class and error are its own.
  std::size_t named = outcomes.size();
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].task == j.failed_task) named = i;
  }
  RC_ASSERT(named < outcomes.size());
  RC_ASSERT(outcomes[named].kind == TaskOutcomeKind::failed);
  RC_ASSERT(outcomes[named].failure_class == j.failure_class);
  RC_ASSERT(outcomes[named].error == j.error);
  bool any_retryable = false;
  for (const auto& o : outcomes) {
    any_retryable |= o.kind == TaskOutcomeKind::failed && contains(retryable, o.failure_class);
  }
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    if (o.kind != TaskOutcomeKind::failed || i == named) continue;
    if (any_retryable) {
      RC_ASSERT(contains(retryable, j.failure_class));
      if (i < named) RC_ASSERT(!contains(retryable, o.failure_class));
    } else {
      const int mine = failure_specificity(j.failure_class);
      const int theirs = failure_specificity(o.failure_class);
      const bool ordered = i < named ? mine < theirs : mine <= theirs;
      RC_ASSERT(ordered);
    }
  }
}

// ---------------------------------------------------------------------------
// Random worlds: the delivery rules hold after every attempt.

REHEARSE_PROP(GroupJobProp, DeliveryRulesHoldInRandomWorlds, ()) {
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  World w(seed);
  const int task_count = *rc::gen::inRange(1, 5);
  GroupJobConfig c;
  c.job_id = "weekly";
  c.targets = kTargets;
  for (int i = 0; i < task_count; ++i) {
    const std::string id = fmt::format("task-{}", i);
    const int calls = *rc::gen::inRange(0, 3);
    c.tasks.push_back({id, calls});
    const int script = *rc::gen::inRange(0, 4);  // 3: no script (404)
    if (script < 3) w.model.set_output(id, static_cast<ModelOutput>(script));
  }
  const int faults = *rc::gen::inRange(0, 4);
  for (int i = 0; i < faults; ++i) {
    const TimeMs from = kSlot + *rc::gen::inRange<TimeMs>(0, 3 * kHourMs);
    const TimeMs until = from + *rc::gen::inRange<TimeMs>(1, 2 * kHourMs);
    const double rate = *rc::gen::element(0.3, 1.0);
    switch (*rc::gen::inRange(0, 4)) {
      case 0: w.model.add_quota_outage(from, until); break;
      case 1:
        w.model.add_http_errors(from, until, *rc::gen::element(500, 503, 429, 404), rate);
        break;
      case 2: w.model.add_timeouts(from, until, rate); break;
      default: w.model.add_network_errors(from, until, rate); break;
    }
  }
  const int outages = *rc::gen::inRange(0, 3);
  for (int i = 0; i < outages; ++i) {
    const TimeMs from = kSlot + *rc::gen::inRange<TimeMs>(0, 3 * kHourMs);
    const TimeMs until = from + *rc::gen::inRange<TimeMs>(1, 2 * kHourMs);
    if (*rc::gen::arbitrary<bool>()) {
      w.messenger.add_outage(from, until);
    } else {
      w.messenger.add_outage(from, until, {*rc::gen::elementOf(kTargets)});
    }
  }
  GroupJob job = w.make_job(c);

  std::optional<RunOutcome> final_outcome;
  for (int attempt = 1; attempt <= 8 && !final_outcome; ++attempt) {
    const DeliverySlot before = w.record();
    const auto calls_before = w.model.total_calls();
    const RunOutcome out = w.run_at(job, kSlot + (attempt - 1) * 40 * kMinuteMs, attempt);
    const DeliverySlot after = w.record();
    RC_ASSERT(out.kind != RunOutcomeKind::already_complete);
    if (before.outbox) RC_ASSERT(w.model.total_calls() == calls_before);  // resumed, not redone
    if (out.failed()) {
      // Guard and marker are never set by a failed run.
      RC_ASSERT(!after.guard_consumed());
      RC_ASSERT(!after.complete());
      RC_ASSERT(!out.error.empty());
    } else {
      final_outcome = out;
      RC_ASSERT(after.guard_consumed());
      RC_ASSERT(after.complete());
    }
  }
  // Without crashes there is never a duplicate delivery.
  RC_ASSERT(w.messenger.duplicate_deliveries().empty());
  const DeliverySlot rec = w.record();
  for (const auto& target : kTargets) {
    const auto n = w.messenger.delivery_count("weekly", kSlot, target);
    RC_ASSERT(n == (rec.has_delivered_to(target) ? 1 : 0));
  }
  if (final_outcome) {
    RC_TAG(to_string(final_outcome->kind));
    const bool delivered = final_outcome->kind == RunOutcomeKind::success;
    RC_ASSERT(rec.verdict == (delivered ? SlotVerdict::delivered : SlotVerdict::skipped));
    for (const auto& target : kTargets) {
      RC_ASSERT(w.messenger.delivery_count("weekly", kSlot, target) == (delivered ? 1 : 0));
    }
    // And the slot is never re-entered.
    const auto calls = w.model.total_calls();
    const RunOutcome again = w.run_at(job, w.sim.now() + kMinuteMs, 99);
    RC_ASSERT(again.kind == RunOutcomeKind::already_complete);
    RC_ASSERT(w.model.total_calls() == calls);
  } else {
    RC_TAG("still failing");
    RC_ASSERT(!rec.complete());
  }
}

// ---------------------------------------------------------------------------
// The delivery ledger.

struct LedgerFixture : ::testing::Test {
  TempDir dir;
  PosixDisk disk;
  DeliveryLedger ledger = open_ledger(disk, dir.path() + "/ledger");
};

TEST_F(LedgerFixture, MissingFileMeansNothingRecorded) {
  const auto rec = ledger.read("weekly", kSlot);
  ASSERT_TRUE(rec.ok());
  EXPECT_TRUE(rec->empty());
  EXPECT_EQ(rec->slot, kSlot);
  EXPECT_FALSE(*disk.read_file(ledger.path_for("weekly")));
}

TEST_F(LedgerFixture, RecordsSurviveAFreshLedgerObjectAndRoundTrip) {
  ASSERT_TRUE(
      ledger.write_outbox("weekly", kSlot, nlohmann::json::array({{{"k", 1}}}), kSlot).ok());
  ASSERT_TRUE(ledger.record_delivery("weekly", kSlot, "team-chat", kSlot + 1).ok());
  ASSERT_TRUE(ledger.record_delivery("weekly", kSlot, "alpha", kSlot + 2).ok());
  ASSERT_TRUE(ledger.record_delivery("weekly", kSlot, "alpha", kSlot + 3).ok());  // idempotent
  DeliveryLedger other = open_ledger(disk, dir.path() + "/ledger");
  auto rec = other.read("weekly", kSlot);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->delivered_to, (std::vector<std::string>{"alpha", "team-chat"}));
  ASSERT_TRUE(rec->outbox.has_value());
  EXPECT_EQ(rec->outbox->at(0).at("k"), 1);
  ASSERT_TRUE(other.consume_guard("weekly", kSlot, kSlot + 5).ok());
  ASSERT_TRUE(other.mark_complete("weekly", kSlot, SlotVerdict::delivered, kSlot + 6).ok());
  rec = ledger.read("weekly", kSlot);
  EXPECT_EQ(rec->guard_at, kSlot + 5);
  EXPECT_EQ(rec->marked_at, kSlot + 6);
  EXPECT_FALSE(rec->outbox);
  // Encode / decode is the identity on what was read.
  const auto all = *ledger.read_job("weekly");
  const auto decoded = decode_ledger(encode_ledger("weekly", all), "weekly");
  ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
  EXPECT_EQ(*decoded, all);
  // No temp file left behind.
  const auto names = *disk.list_dir(dir.path() + "/ledger");
  for (const auto& n : names) EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;
}

TEST_F(LedgerFixture, OrderIsEnforcedGuardBeforeMarkerOutboxOnce) {
  EXPECT_FALSE(ledger.mark_complete("weekly", kSlot, SlotVerdict::skipped, kSlot).ok());
  EXPECT_FALSE(ledger.record_delivery("weekly", kSlot, "team-chat", kSlot).ok());  // no outbox
  ASSERT_TRUE(ledger.write_outbox("weekly", kSlot, nlohmann::json::array(), kSlot).ok());
  EXPECT_FALSE(ledger.write_outbox("weekly", kSlot, nlohmann::json::array(), kSlot).ok());
  ASSERT_TRUE(ledger.record_delivery("weekly", kSlot, "team-chat", kSlot).ok());
  ASSERT_TRUE(ledger.consume_guard("weekly", kSlot, kSlot + 1).ok());
  ASSERT_TRUE(ledger.consume_guard("weekly", kSlot, kSlot + 9).ok());  // first time kept
  EXPECT_FALSE(ledger.write_outbox("weekly", kSlot, nlohmann::json::array(), kSlot).ok());
  EXPECT_FALSE(ledger.mark_complete("weekly", kSlot, SlotVerdict::skipped, kSlot).ok());
  ASSERT_TRUE(ledger.mark_complete("weekly", kSlot, SlotVerdict::delivered, kSlot + 2).ok());
  const auto rec = *ledger.read("weekly", kSlot);
  EXPECT_EQ(rec.guard_at, kSlot + 1);
  EXPECT_EQ(rec.verdict, SlotVerdict::delivered);
  // Nothing recorded for this slot by the failed attempts.
  EXPECT_TRUE(ledger.read("weekly", kSlot + kDayMs)->empty());
}

TEST_F(LedgerFixture, CorruptFilesFailClosedAndStayUntouched) {
  ASSERT_TRUE(ledger.consume_guard("weekly", kSlot, kSlot).ok());
  const std::string path = ledger.path_for("weekly");
  const std::string good = **disk.read_file(path);

  // Each damage is caught: bytes, JSON, shape, checksum, consistency.
  nlohmann::json doc = nlohmann::json::parse(good);
  std::vector<std::pair<std::string, std::string>> damaged = {
      {"empty", ""},
      {"garbage", "\x01\x02garbage"},
      {"truncated", good.substr(0, good.size() / 2)},
      {"array", "[]"},
  };
  {
    nlohmann::json d = doc;
    d["slots"][0].erase("guard_at");  // the guard silently lost: checksum catches it
    damaged.emplace_back("lost guard", d.dump());
  }
  {
    nlohmann::json d = doc;
    d["job_id"] = "other";
    damaged.emplace_back("wrong job", d.dump());
  }
  {
    nlohmann::json d = doc;
    d["extra"] = 1;
    damaged.emplace_back("unknown key", d.dump());
  }
  {
    // Consistent checksum but a marker without a guard (a forged completion):
    // only the consistency check is left to catch it.
    const std::vector<DeliverySlot> forged = {DeliverySlot{
        kSlot, std::nullopt, std::nullopt, {}, std::nullopt, kSlot, SlotVerdict::skipped}};
    EXPECT_FALSE(check_slot_records(forged).ok());
    const std::string text = encode_ledger("weekly", forged);
    damaged.emplace_back("marker without guard", text);
  }
  for (const auto& [name, bytes] : damaged) {
    ASSERT_TRUE(disk.write_file(path, bytes).ok());
    const auto rec = ledger.read("weekly", kSlot);
    ASSERT_FALSE(rec.ok()) << name;
    EXPECT_EQ(rec.error().code, ErrorCode::corrupt) << name;
    EXPECT_EQ(rec.error().where.rfind(path, 0), 0u) << name << ": " << rec.error().where;
    // Writes refuse too, and the file is kept byte for byte.
    EXPECT_FALSE(ledger.consume_guard("weekly", kSlot + kDayMs, kSlot).ok()) << name;
    EXPECT_EQ(**disk.read_file(path), bytes) << name;
  }
  // Another job's file is unaffected.
  EXPECT_TRUE(ledger.consume_guard("daily", kSlot, kSlot).ok());
}

// The bound tests run with small bounds over the simulated disk (the same
// code as the defaults, at a fraction of the writes).
constexpr DeliveryLedgerOptions kSmallBounds{.completed_slots_kept = 16, .open_slots_max = 24};

struct SimLedgerFixture : ::testing::Test {
  sim::SimDisk disk;
  DeliveryLedger ledger = *DeliveryLedger::open(disk, "/ledger", kSmallBounds);
};

TEST_F(SimLedgerFixture, KeepsTheMostRecentCompletedSlotsAndEveryOpenOne) {
  // An open slot older than everything: never pruned.
  ASSERT_TRUE(ledger.write_outbox("hourly", kSlot - kDayMs, nlohmann::json::array(), kSlot).ok());
  const std::size_t total = kSmallBounds.completed_slots_kept + 20;
  for (std::size_t i = 0; i < total; ++i) {
    const TimeMs slot = kSlot + static_cast<TimeMs>(i) * kHourMs;
    ASSERT_TRUE(ledger.consume_guard("hourly", slot, slot).ok());
    ASSERT_TRUE(ledger.mark_complete("hourly", slot, SlotVerdict::skipped, slot + 1).ok());
  }
  const auto all = *ledger.read_job("hourly");
  ASSERT_EQ(all.size(), kSmallBounds.completed_slots_kept + 1);
  EXPECT_EQ(DeliveryLedgerOptions{}.completed_slots_kept, 256u);  // the documented defaults
  EXPECT_EQ(DeliveryLedgerOptions{}.open_slots_max, 1024u);
  EXPECT_EQ(all.front().slot, kSlot - kDayMs);
  EXPECT_FALSE(all.front().complete());
  EXPECT_EQ(all[1].slot, kSlot + 20 * kHourMs);  // the 20 oldest completions went
  EXPECT_EQ(all.back().slot, kSlot + static_cast<TimeMs>(total - 1) * kHourMs);
  // A late completion of an old slot is recent by completion time: kept.
  ASSERT_TRUE(ledger.consume_guard("hourly", kSlot - kDayMs, kSlot + 1000 * kHourMs).ok());
  ASSERT_TRUE(
      ledger.mark_complete("hourly", kSlot - kDayMs, SlotVerdict::skipped, kSlot + 1000 * kHourMs)
          .ok());
  const auto after = *ledger.read_job("hourly");
  EXPECT_EQ(after.size(), kSmallBounds.completed_slots_kept);
  EXPECT_EQ(after.front().slot, kSlot - kDayMs);
}

TEST_F(SimLedgerFixture, OpenSlotsAreBounded) {
  for (std::size_t i = 0; i < kSmallBounds.open_slots_max; ++i) {
    ASSERT_TRUE(ledger
                    .write_outbox("spam", kSlot + static_cast<TimeMs>(i) * kMinuteMs,
                                  nlohmann::json::array(), kSlot)
                    .ok());
  }
  const auto over = ledger.write_outbox("spam", kSlot - kMinuteMs, nlohmann::json::array(), kSlot);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("open slots"), std::string::npos);
}

// Over the simulated disk: every acknowledged ledger write survives a power
// loss right after it (the ledger fsyncs the file and the directory).
TEST(DeliveryLedgerSimDisk, AcknowledgedWritesSurvivePowerLoss) {
  sim::SimDisk disk;
  DeliveryLedger ledger = open_ledger(disk, "/ledger");
  const std::vector<std::function<Status()>> steps = {
      [&] { return ledger.write_outbox("weekly", kSlot, nlohmann::json::array({"x"}), kSlot); },
      [&] { return ledger.record_delivery("weekly", kSlot, "team-chat", kSlot); },
      [&] { return ledger.record_delivery("weekly", kSlot, "ops-mail", kSlot); },
      [&] { return ledger.consume_guard("weekly", kSlot, kSlot + 1); },
      [&] { return ledger.mark_complete("weekly", kSlot, SlotVerdict::delivered, kSlot + 2); },
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto before = *ledger.read("weekly", kSlot);
    ASSERT_TRUE(steps[i]().ok()) << i;
    const auto acknowledged = *ledger.read("weekly", kSlot);
    EXPECT_NE(acknowledged, before) << i;
    disk.crash();
    const auto after = ledger.read("weekly", kSlot);
    ASSERT_TRUE(after.ok()) << i;
    EXPECT_EQ(*after, acknowledged) << "step " << i << " lost by a power loss";
  }
}

// Damage on the medium is caught or harmless: after random byte flips the
// ledger either fails closed (corrupt) or reads exactly what was written
// (a flip that only changed JSON whitespace into other whitespace).
REHEARSE_PROP(DeliveryLedgerProp, FlippedBytesAreDetectedOrHarmless, ()) {
  sim::SimDisk disk(nullptr, sim::Rng(*rc::gen::arbitrary<std::uint64_t>()));
  DeliveryLedger ledger = open_ledger(disk, "/ledger");
  const int slots = *rc::gen::inRange(1, 6);
  for (int i = 0; i < slots; ++i) {
    const TimeMs slot = kSlot + i * kHourMs;
    RC_ASSERT(ledger.write_outbox("weekly", slot, nlohmann::json::array({"item"}), slot).ok());
    RC_ASSERT(ledger.record_delivery("weekly", slot, "team-chat", slot).ok());
    if (*rc::gen::arbitrary<bool>()) {
      RC_ASSERT(ledger.consume_guard("weekly", slot, slot).ok());
      RC_ASSERT(ledger.mark_complete("weekly", slot, SlotVerdict::delivered, slot).ok());
    }
  }
  const auto written = *ledger.read_job("weekly");
  sim::Corruption flip;
  flip.kind = sim::CorruptionKind::flip_bytes;
  flip.count = static_cast<std::uint64_t>(*rc::gen::inRange(1, 4));
  RC_ASSERT(disk.corrupt(ledger.path_for("weekly"), flip).ok());
  const auto read = ledger.read_job("weekly");
  if (read.ok()) {
    RC_TAG("harmless");
    RC_ASSERT(*read == written);
  } else {
    RC_TAG("detected");
    RC_ASSERT(read.error().code == ErrorCode::corrupt);
  }
}

TEST(DeliveryLedgerNames, JobIdsBecomeSafeFileNames) {
  EXPECT_EQ(DeliveryLedger::encode_job_id("weekly-summary_v2.1@x"), "weekly-summary_v2.1@x");
  EXPECT_EQ(DeliveryLedger::encode_job_id("a/b:c#d%"), "a%2Fb%3Ac%23d%25");
  EXPECT_EQ(DeliveryLedger::encode_job_id(".."), "..");  // plus the suffix: never the parent
  EXPECT_NE(DeliveryLedger::encode_job_id("a:b"), DeliveryLedger::encode_job_id("a%3Ab"));
}

// ---------------------------------------------------------------------------
// The simulated model-api and messenger on their own.

TEST(ModelApiSim, RateFaultsAreDeterministicPerSeedAndHitSomeCalls) {
  auto run = [](std::uint64_t seed) {
    sim::Simulator s({.start_ms = kSlot, .seed = seed});
    ModelApi api(s.rng());
    api.set_output("t", ModelOutput::summary);
    api.add_http_errors(kSlot, kSlot + kHourMs, 503, 0.5);
    std::string pattern;
    ServiceRequest request{"model-api", "generate", "t", {}, {{"x-job-id", "j"}}};
    for (int i = 0; i < 200; ++i) {
      pattern += api.handle(request, kSlot + i).result.is_success() ? '.' : 'x';
    }
    EXPECT_EQ(api.calls("j", "t"), 200);
    EXPECT_EQ(api.calls_for_job("j"), 200);
    return pattern;
  };
  const std::string a = run(7);
  EXPECT_EQ(a, run(7));
  EXPECT_NE(a, run(8));
  const auto hits = std::count(a.begin(), a.end(), 'x');
  EXPECT_GT(hits, 60);
  EXPECT_LT(hits, 140);
}

TEST(ModelApiSim, WindowsAreHalfOpenAndTheFirstActiveFaultDecides) {
  sim::Simulator s({.start_ms = kSlot});
  ModelApi api(s.rng(), {.latency_ms = 10, .timeout_ms = 5000});
  api.set_output("t", ModelOutput::preview);
  api.add_quota_outage(kSlot + 100, kSlot + 200);
  api.add_http_errors(kSlot + 150, kSlot + 300, 500);
  const ServiceRequest request{"model-api", "generate", "t", {}, {{"x-slot", "S"}}};
  auto status_at = [&](TimeMs t) {
    const auto reply = api.handle(request, t);
    return reply.result.has_response() ? reply.result.response().status : -1;
  };
  EXPECT_EQ(status_at(kSlot + 99), 200);
  EXPECT_EQ(status_at(kSlot + 100), 429);
  EXPECT_EQ(status_at(kSlot + 199), 429);  // both active: the first added decides
  EXPECT_EQ(status_at(kSlot + 200), 500);
  EXPECT_EQ(status_at(kSlot + 300), 200);
  const auto ok = api.handle(request, kSlot);
  EXPECT_EQ(ok.latency_ms, 10);
  EXPECT_EQ(ok.result.response().body.at("output"), "preview");
  EXPECT_EQ(ok.result.response().body.at("text"), "preview of t for S");
  // Unknown task and unknown operation.
  EXPECT_EQ(api.handle({"model-api", "generate", "nope", {}, {}}, kSlot).result.response().status,
            404);
  EXPECT_EQ(api.handle({"model-api", "delete", "t", {}, {}}, kSlot).result.response().status, 400);
  // A job-specific script wins over the task's.
  api.set_output("j2", "t", ModelOutput::skip);
  EXPECT_EQ(api.handle({"model-api", "generate", "t", {}, {{"x-job-id", "j2"}}}, kSlot)
                .result.response()
                .body.at("output"),
            "skip");
  EXPECT_EQ(api.faulted_calls(), 3);
}

Task<void> send_one(Messenger& m, std::string target, nlohmann::json message,
                    std::optional<Status>& out) {
  Status s = co_await m.send(std::move(target), std::move(message));
  out = s;
}

TEST(MessengerSim, DeliversAtSendAnswersAfterLatencyAndCountsPerSlotTarget) {
  sim::Simulator s({.start_ms = kSlot});
  sim::Trace trace;
  Messenger m(s, trace, {{"a", "b"}, 250});
  m.add_outage(kSlot + kMinuteMs, kSlot + 2 * kMinuteMs, {"b"});
  const auto p = s.add_process("p", [](sim::Simulator&, sim::ProcessId) {});
  s.boot(p);
  const RunContext ctx{"weekly", kSlot, 2, true};
  const nlohmann::json delivery =
      make_group_message(kMessageDelivery, ctx, nlohmann::json::array());

  std::optional<Status> first;
  s.spawn(p, send_one(m, "a", delivery, first));
  ASSERT_TRUE(s.run_until(kSlot + 100).ok());
  // The effect happened at send; the answer has not arrived yet.
  EXPECT_EQ(m.delivery_count("weekly", kSlot, "a"), 1);
  EXPECT_FALSE(first.has_value());
  s.crash(p);  // the sender dies waiting for the answer: the delivery stays
  ASSERT_TRUE(s.run().ok());
  EXPECT_FALSE(first.has_value());
  EXPECT_EQ(m.delivery_count("weekly", kSlot, "a"), 1);

  s.boot(p);
  std::optional<Status> second, refused, unknown;
  s.spawn(p, send_one(m, "a", delivery, second));
  ASSERT_TRUE(s.run().ok());
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->ok());
  EXPECT_EQ(m.delivery_count("weekly", kSlot, "a"), 2);
  ASSERT_TRUE(s.run_until(kSlot + kMinuteMs).ok());
  s.spawn(p, send_one(m, "b", delivery, refused));
  s.spawn(p, send_one(m, "zzz", delivery, unknown));
  ASSERT_TRUE(s.run().ok());
  EXPECT_FALSE(refused->ok());
  EXPECT_NE(refused->error().message.find("503"), std::string::npos);
  EXPECT_FALSE(unknown->ok());
  EXPECT_NE(unknown->error().message.find("404"), std::string::npos);
  EXPECT_EQ(m.refused_count(), 2);
  EXPECT_EQ(m.duplicate_deliveries().size(), 1u);

  std::vector<std::string> types;
  for (const auto& e : trace.events()) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"message_delivered", "message_delivered",
                                             "message_refused", "message_refused"}));
  const auto& dup = trace.events()[1];
  EXPECT_EQ(dup.job, "weekly");
  EXPECT_EQ(dup.slot, kSlot);
  EXPECT_EQ(dup.service, "messenger");
  EXPECT_EQ(dup.str("target"), "a");
  EXPECT_EQ(dup.str("kind"), "delivery");
  EXPECT_EQ(dup.num("attempt"), 2);
  EXPECT_EQ(dup.num("delivery_count"), 2);
  EXPECT_TRUE(dup.flag("duplicate"));
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
}  // namespace rehearse
