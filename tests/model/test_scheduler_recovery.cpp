// Goal: the scheduler survives restarts and fails closed (docs/semantics.md
// §4, §6, §9): counters survive a restart in the middle of a retry chain, a
// crash between the outcome write and the queue's finish replays the intent,
// a stalled run is re-run once and failed on its second stall, misfires while
// down coalesce into one late run; a corrupt store (or a ledger the state does
// not know) fails closed and is reported, an invalid policy or a
// non-retryable class is never retried, a schedule error stops only its job.
// Method: the scheduler as a simulated process in the world of
// scheduler_fixtures.hpp; restarts are crashes of that process (power loss on
// the disk) followed by a boot, damage is written to the simulated disk.
// Checks read the durable state store, the messenger's accepted notifications
// and the trace.
#include "model/scheduler.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/state_store.hpp"
#include "model/status_view.hpp"
#include "sim/kernel/trace.hpp"
#include "tests/model/scheduler_fixtures.hpp"

namespace rehearse::sim::scheduler_test {
namespace {

// --- restarts ----------------------------------------------------------------

// The process dies while a retry is pending and comes back before it is due:
// the delayed retry (durable queue) still fires on time and the count
// continues from the store.
TEST(Scheduler, CountersSurviveRestartMidRetryChain) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.restart(at("2026-03-02T10:03:00Z"), at("2026-03-02T10:04:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:04:30Z"));
  ASSERT_EQ(w.sim().boot_count(w.process()), 2u);
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 1);
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  w.run_until(at("2026-03-02T10:07:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 2) << "the count continued after the restart";
  w.run_until(at("2026-03-02T10:12:00Z"));
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(runs[1].kind, "retry");
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted"}));
}

// Down past the retry's time: the retry runs late, right after the boot, and
// the count still continues.
TEST(Scheduler, RetryDueWhileDownRunsAfterBootWithCountKept) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  w.restart(at("2026-03-02T10:03:00Z"), at("2026-03-02T10:20:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:40:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_GE(runs.size(), 2u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:20:00Z"));
  EXPECT_EQ(runs[1].kind, "retry");
  EXPECT_EQ(runs[1].start_delay_ms, at("2026-03-02T10:20:00Z") - at("2026-03-02T10:05:30Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
}

// The process dies right after a failure's outcome reached the state store
// and before the queue finished the entry (the queue command after the
// intent fails and kills it). The restart replays the intent: the outcome is
// neither lost nor counted twice, and the run is not taken for a stall.
TEST(Scheduler, CrashBetweenOutcomeWriteAndQueueFinishReplaysTheIntent) {
  // Outlives the world: its destructor crashes the worker, which the
  // listener below still sees.
  bool armed = false;
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T14:00:00Z"));
  bind_to_simulator(w.queue(), w.sim(), SimQueueBinding{2 * kMinuteMs, &w.disk()});
  SimQueue& queue = w.queue();
  const ProcessId process = w.process();
  w.trace().add_listener([&](const TraceEvent& e, std::size_t) {
    if (!armed && e.type == "queue_intent") {
      armed = true;
      queue.fail_stop_after(0, process);  // the next command (finish) dies
    }
  });
  w.start();
  w.run_until(at("2026-03-02T10:04:00Z"));
  ASSERT_TRUE(armed);
  ASSERT_EQ(w.sim().crash_count(w.process()), 1u);
  ASSERT_EQ(w.sim().boot_count(w.process()), 2u);
  JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_count, 1) << "written once, replayed as a no-op";
  EXPECT_EQ(s.next_retry_at, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(w.events("intent_replayed", "digest").size(), 1u);
  EXPECT_TRUE(w.events("run_stalled", "digest").empty());
  w.run_until(at("2026-03-02T10:12:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:05:30Z"));
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_EQ(runs[2].attempt, 3);
  s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::retry_exhausted);
  EXPECT_EQ(s.retry_count, 2);
  // The notification committed before the crash was sent after the replay.
  EXPECT_EQ(w.note_events("digest"),
            (std::vector<std::string>{"retry_scheduled", "retry_scheduled", "retry_exhausted"}));
}

// A crash in the middle of a run: after the restart the run is stalled, runs
// again without consuming an attempt, and completes.
TEST(Scheduler, StalledRunRerunsOnceWithoutConsumingAnAttempt) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T10:00:10Z"), at("2026-03-02T10:00:20Z"));  // mid-call
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::vector<TraceEvent> stalls = w.events("run_stalled", "digest");
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_EQ(stalls[0].str("decision"), "rerun");
  EXPECT_EQ(stalls[0].num("stalled_count"), 1);
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].slot, at("2026-03-02T10:00:00Z"));
  EXPECT_EQ(runs[1].kind, "regular");
  EXPECT_EQ(runs[1].attempt, 1) << "the same attempt, no retry consumed";
  EXPECT_EQ(runs[1].t, at("2026-03-02T10:00:20Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
  EXPECT_TRUE(s.slots.empty()) << "the stall count is forgotten once the run ends";
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(w.note_events("digest").empty());
  EXPECT_EQ(w.api().calls("digest"), 2);
}

// The state records a retry as started (next_action retry, no instant) but
// the queue holds nothing for it: the records of its end were lost (in the
// swarm, a journal tail dropped with acknowledged records in it; here the
// store is rewritten by hand while the process is down). The boot re-queues
// it, ready now, the same attempt, and the job settles instead of waiting
// for its next slot.
TEST(Scheduler, AStartedRetryTheQueueNoLongerHoldsRunsAgainAtBoot) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T10:03:00Z"));
  w.restart(at("2026-03-02T10:20:00Z"), at("2026-03-02T10:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:25:00Z"));
  ASSERT_EQ(w.stored("digest").retry_status, RetryStatus::ok);  // retry 1 succeeded
  const TimeMs slot = at("2026-03-02T10:00:00Z");
  {
    auto store = StateStore::open(w.disk(), kStateDir);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE(store
                    ->update("digest",
                             [&](JobState& s) {
                               s.retry_status = RetryStatus::retrying;
                               s.failure_class = FailureClass::rate_limit;
                               s.retry_count = 1;
                               s.next_action = NextAction::retry;
                               s.next_retry_at.reset();
                               SlotRecord r;
                               r.slot = slot;
                               r.retry_status = RetryStatus::retrying;
                               r.failure_class = FailureClass::rate_limit;
                               r.retry_count = 1;
                               r.next_action = NextAction::retry;
                               s.slots[slot] = r;
                             })
                    .ok());
  }
  w.run_until(at("2026-03-02T10:40:00Z"));
  const std::vector<TraceEvent> restored = w.events("retry_restored", "digest");
  ASSERT_EQ(restored.size(), 1u);
  EXPECT_EQ(restored[0].num("attempt"), 2);
  EXPECT_EQ(restored[0].str("reason"), "started, and its end was lost");
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_FALSE(runs.empty());
  EXPECT_EQ(runs.back().kind, "retry");
  EXPECT_EQ(runs.back().attempt, 2) << "the same attempt, run again";
  EXPECT_EQ(runs.back().t, at("2026-03-02T10:30:00Z"));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::ok);
  EXPECT_EQ(s.retry_count, 0);
}

// A second stall of the same run fails it (BullMQ's maxStalledCount 1).
TEST(Scheduler, SecondStallOfTheSameRunFailsIt) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T10:00:10Z"), at("2026-03-02T10:00:20Z"));
  w.restart(at("2026-03-02T10:00:30Z"), at("2026-03-02T10:00:40Z"));  // mid-rerun
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::vector<TraceEvent> stalls = w.events("run_stalled", "digest");
  ASSERT_EQ(stalls.size(), 2u);
  EXPECT_EQ(stalls[0].str("decision"), "rerun");
  EXPECT_EQ(stalls[1].str("decision"), "fail");
  EXPECT_EQ(starts(w, "digest").size(), 2u) << "no third run of the slot";
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::failed);
  EXPECT_EQ(s.failure_class, FailureClass::unknown);
  EXPECT_EQ(s.next_action, NextAction::manual_review);
  EXPECT_EQ(s.last_error, std::string(kStalledError));
  EXPECT_EQ(s.next_run_at, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent"}));
  // The next slot still runs, and succeeds.
  w.run_until(at("2026-03-02T11:01:00Z"));
  EXPECT_EQ(w.stored("digest").retry_status, RetryStatus::ok);
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent", "recovered"}));
}

// Slots that came due while the process was down coalesce into one late run;
// the lateness and the folded slots are recorded.
TEST(Scheduler, MisfiresWhileDownCoalesceIntoOneLateRun) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.restart(at("2026-03-02T09:50:00Z"), at("2026-03-02T13:20:00Z"));
  w.start();
  w.run_until(at("2026-03-02T13:30:00Z"));
  const std::vector<Started> runs = starts(w, "digest");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].slot, at("2026-03-02T10:00:00Z"));
  EXPECT_EQ(runs[0].t, at("2026-03-02T13:20:00Z"));
  EXPECT_EQ(runs[0].start_delay_ms, 3 * kHourMs + 20 * kMinuteMs);
  const std::vector<TraceEvent> misfires = w.events("slot_misfire", "digest");
  ASSERT_EQ(misfires.size(), 1u);
  EXPECT_EQ(misfires[0].num("lateness_ms"), 3 * kHourMs + 20 * kMinuteMs);
  EXPECT_EQ(misfires[0].num("coalesced_count"), 3);
  EXPECT_EQ(misfires[0].data.at("coalesced_slots"),
            json({"2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z", "2026-03-02T13:00:00Z"}));
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.misfire_runs, 1);
  EXPECT_EQ(s.coalesced_slots, 3);
  EXPECT_EQ(s.max_lateness_ms, 3 * kHourMs + 20 * kMinuteMs);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T14:00:00Z")) << "back on the grid";
  w.run_until(at("2026-03-02T14:01:00Z"));
  EXPECT_EQ(starts(w, "digest").back().t, at("2026-03-02T14:00:00Z"));
}

// --- fail closed -------------------------------------------------------------

// A corrupt store: regular runs continue, no retry is scheduled or run, the
// corrupt files are never replaced, and state_corrupt is notified once per
// boot.
TEST(Scheduler, CorruptStoreFailsClosed) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T11:00:00Z"), at("2026-03-02T13:00:00Z"));
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T10:40:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:35:00Z"));  // down, after a successful 10:00 run
  const std::string snapshot = std::string(kStateDir) + "/" + StateStore::kSnapshotName;
  ASSERT_TRUE(w.disk().put_durable(snapshot, "{not json").ok());
  const auto journal =
      w.disk().durable_content(std::string(kStateDir) + "/" + StateStore::kJournalName);
  w.run_until(at("2026-03-02T12:30:00Z"));

  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  EXPECT_FALSE(w.scheduler()->halted());
  // Regular runs at 11:00 and 12:00, no retries.
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  // One state_corrupt for the boot, then failed_permanent (fail closed).
  std::vector<std::string> events;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    events.push_back(m.message.value("event", ""));
  }
  EXPECT_EQ(events,
            (std::vector<std::string>{"state_corrupt", "failed_permanent", "failed_permanent"}));
  EXPECT_NE(w.notes("digest").front().value("detail", "").find("state store corrupt"),
            std::string::npos);
  // Nothing replaced the corrupt file; the bad bytes are kept.
  EXPECT_EQ(w.disk().durable_content(snapshot), std::optional<std::string>("{not json"));
  EXPECT_EQ(w.disk().live_content(snapshot), std::optional<std::string>("{not json"));
  EXPECT_EQ(w.disk().durable_content(std::string(kStateDir) + "/" + StateStore::kJournalName),
            journal);
  auto store = StateStore::open(w.disk(), kStateDir);
  ASSERT_TRUE(store.ok());
  const StoreHealth health = store->health();
  ASSERT_FALSE(health.ok());
  ASSERT_TRUE(health.error.has_value());
  // Visible in the status view, over what this boot knows.
  std::vector<StatusJob> jobs;
  for (const auto& [id, st] : w.scheduler()->states()) {
    jobs.push_back(
        {st, policy_of({id, "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))});
  }
  const StatusReport report = build_status(jobs, health.error->describe());
  EXPECT_EQ(render_text(report).rfind("state_corrupt:", 0), 0u);
  EXPECT_EQ(to_json(report).at("state_corrupt"), health.error->describe());
  // Another restart: notified once more (once per boot), still no retry.
  w.restart(at("2026-03-02T12:30:00Z"), at("2026-03-02T12:31:00Z"));
  w.run_until(at("2026-03-02T12:45:00Z"));
  std::int64_t corrupt_notes = 0;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    corrupt_notes += m.message.value("event", "") == "state_corrupt" ? 1 : 0;
  }
  EXPECT_EQ(corrupt_notes, 2);
  for (const Started& r : starts(w, "digest")) EXPECT_EQ(r.kind, "regular");
}

// The store is damaged while the worker runs and the next
// slot's hand-out is the write that finds it corrupt. The slot is handed out
// once (next_run_at moves on in memory; before the fix the loop handed it out
// again), its failure is not retried, state_corrupt is notified once, and
// later slots run on schedule.
TEST(Scheduler, AHandOutThatFindsTheStoreCorruptHandsTheSlotOutOnce) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:59:30Z"), at("2026-03-02T11:10:00Z"), 503);
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  ASSERT_TRUE(w.disk().put_durable(journal, "garbage\n").ok());
  w.run_until(at("2026-03-02T13:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  std::vector<TimeMs> handed;
  for (const TraceEvent& e : w.events("slot_due", "digest")) handed.push_back(*e.slot);
  EXPECT_EQ(handed, (std::vector<TimeMs>{at("2026-03-02T10:00:00Z"), at("2026-03-02T11:00:00Z"),
                                         at("2026-03-02T12:00:00Z"), at("2026-03-02T13:00:00Z")}));
  EXPECT_EQ(w.scheduler()->states().at("digest").next_run_at, at("2026-03-02T14:00:00Z"));
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>(4, "regular")));
  std::vector<std::string> events;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    events.push_back(m.message.value("event", ""));
  }
  EXPECT_EQ(events, (std::vector<std::string>{"state_corrupt", "failed_permanent", "recovered"}));
  EXPECT_EQ(w.disk().live_content(journal), std::optional<std::string>("garbage\n"));
}

// A retry queued before the damage. It passes the check
// when taken (nothing has read the store since), and the write of its start
// is what finds the store corrupt: it is checked again and dropped, visibly
// (retry_dropped, the status view), never run against the untrusted counter.
TEST(Scheduler, ARetryQueuedBeforeTheStoreIsDamagedIsDroppedVisibly) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:59:00Z"), at("2026-03-02T11:10:00Z"), 503);
  w.start();
  w.run_until(at("2026-03-02T11:02:00Z"));  // 11:00 failed, a retry waits for 11:05:30
  ASSERT_EQ(w.note_events("digest"), (std::vector<std::string>{"retry_scheduled"}));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  ASSERT_TRUE(w.disk().put_durable(journal, "garbage\n").ok());
  w.run_until(at("2026-03-02T12:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "digest")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  const auto dropped = w.events("retry_dropped", "digest");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].slot, at("2026-03-02T11:00:00Z"));
  EXPECT_EQ(dropped[0].num("attempt"), 2);
  const StatusNotices& notices = w.scheduler()->notices();
  ASSERT_EQ(notices.dropped_retries.size(), 1u);
  EXPECT_EQ(notices.dropped_retries[0].job_id, "digest");
  EXPECT_EQ(notices.dropped_retries[0].slot, at("2026-03-02T11:00:00Z"));
  // The in-memory state no longer shows the retry pending.
  const JobState& s = w.scheduler()->states().at("digest");
  for (const auto& [slot, record] : s.slots) EXPECT_NE(record.next_action, NextAction::retry);
  std::vector<StatusJob> jobs{
      {s, policy_of({"digest", "0 * * * *", per_job_max2()}, *CronSchedule::parse("0 * * * *"))}};
  const StatusReport report = build_status(jobs, std::string("corrupt"), notices);
  const std::string text = render_text(report);
  EXPECT_NE(text.find("retries dropped (1):\n  digest  slot 2026-03-02T11:00:00Z  attempt 2"),
            std::string::npos)
      << text;
  EXPECT_EQ(to_json(report).at("dropped_retries").size(), 1u);
  std::int64_t corrupt_notes = 0;
  for (const AcceptedMessage& m : w.messenger().accepted()) {
    corrupt_notes += m.message.value("event", "") == "state_corrupt" ? 1 : 0;
  }
  EXPECT_EQ(corrupt_notes, 1);
}

// The delivery ledger records a slot only after its
// hand-out was written to the state, so a ledger slot past the state's
// last_slot proves lost records, even when the journal looks whole. The boot
// then fails closed (state_records_lost, state_corrupt, schedules from now,
// nothing written); a fresh start (no state files: an operator's reset) is
// not compared.
TEST(Scheduler, ALedgerSlotTheStateDoesNotKnowProvesLostRecordsAtBoot) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.use_ledger();
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T11:30:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:45:00Z"));  // 10:00 ran; down until 11:30
  ASSERT_EQ(w.stored("digest").last_slot, at("2026-03-02T10:00:00Z"));
  // As if 11:00 had been handed out and delivered, and the record of its
  // hand-out then cut from the end of the journal.
  w.ledger_delivered("digest", at("2026-03-02T11:00:00Z"));
  const std::string journal = std::string(kStateDir) + "/" + StateStore::kJournalName;
  const auto before = w.disk().live_content(journal);
  w.run_until(at("2026-03-02T12:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_TRUE(w.scheduler()->state_corrupt());
  const auto lost = w.events("state_records_lost", "digest");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].str("ledger_slot"), "2026-03-02T11:00:00Z");
  EXPECT_EQ(lost[0].str("state_last_slot"), "2026-03-02T10:00:00Z");
  // From the boot: the missed 11:00 slot is not run late, 12:00 runs.
  std::vector<TimeMs> handed;
  for (const TraceEvent& e : w.events("slot_due", "digest")) handed.push_back(*e.slot);
  EXPECT_EQ(handed, (std::vector<TimeMs>{at("2026-03-02T10:00:00Z"), at("2026-03-02T12:00:00Z")}));
  EXPECT_EQ(w.disk().live_content(journal), before);  // nothing written
}

TEST(Scheduler, AFreshStartIsNotComparedWithTheLedger) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.use_ledger();
  w.ledger_delivered("digest", at("2026-03-02T09:00:00Z"));
  w.start();
  w.run_until(at("2026-03-02T10:30:00Z"));
  ASSERT_NE(w.scheduler(), nullptr);
  EXPECT_FALSE(w.scheduler()->state_corrupt());
  EXPECT_TRUE(w.events("state_records_lost").empty());
  EXPECT_EQ(w.stored("digest").last_slot, at("2026-03-02T10:00:00Z"));
}

// An invalid policy: the job runs on its schedule, is never retried, and
// policy_invalid is notified once (not again after a restart).
TEST(Scheduler, InvalidPolicyRunsOnScheduleNeverRetried) {
  World w(at("2026-03-02T09:30:00Z"),
          {{"legacy", "0 * * * *", {{"max", -1}, {"backoff_sec", 300}}}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T12:00:00Z"));
  w.restart(at("2026-03-02T10:30:00Z"), at("2026-03-02T10:31:00Z"));
  w.start();
  w.run_until(at("2026-03-02T12:30:00Z"));
  std::vector<std::string> kinds;
  for (const Started& r : starts(w, "legacy")) kinds.push_back(r.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"regular", "regular", "regular"}));
  EXPECT_EQ(w.note_events("legacy"), (std::vector<std::string>{"policy_invalid", "failed_permanent",
                                                               "failed_permanent", "recovered"}));
  const JobState s = w.stored("legacy");
  EXPECT_FALSE(s.policy_error.empty());
  EXPECT_EQ(s.retry_limit, 0);
  EXPECT_EQ(s.next_run_at, at("2026-03-02T13:00:00Z"));
}

// A non-retryable class is not retried: failed, manual_review.
TEST(Scheduler, NonRetryableClassIsNotRetried) {
  World w(at("2026-03-02T09:30:00Z"), {{"digest", "0 * * * *", per_job_max2()}});
  w.api().add_outage(at("2026-03-02T10:00:00Z"), at("2026-03-02T10:30:00Z"), 401);
  w.start();
  w.run_until(at("2026-03-02T10:45:00Z"));
  EXPECT_EQ(starts(w, "digest").size(), 1u);
  const JobState s = w.stored("digest");
  EXPECT_EQ(s.retry_status, RetryStatus::failed);
  EXPECT_EQ(s.failure_class, FailureClass::auth);
  EXPECT_EQ(s.next_action, NextAction::manual_review);
  EXPECT_EQ(w.note_events("digest"), (std::vector<std::string>{"failed_permanent"}));
}

// A schedule that cannot give a next slot (past year 9999) stops that job
// once and loudly; the loop does not spin on it and other jobs go on.
TEST(Scheduler, ScheduleErrorStopsOnlyThatJobWithoutSpinning) {
  World w(at("9999-12-31T20:30:00Z"),
          {{"yearly", "@yearly", per_job_max2()}, {"hourly", "0 * * * *", per_job_max2()}});
  w.start();
  w.run_until(at("9999-12-31T22:30:00Z"));  // asserts the run ended normally
  const std::vector<TraceEvent> errors = w.events("schedule_error", "yearly");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(starts(w, "yearly").empty());
  EXPECT_EQ(starts(w, "hourly").size(), 2u);
  EXPECT_LT(w.sim().events_executed(), 200u);
}

}  // namespace
}  // namespace rehearse::sim::scheduler_test
