// A failed assertion of the core inside a simulated run: the simulator's
// handler (sim/kernel/simulator.hpp) ends the run with the outcome `assertion_failed`
// instead of aborting the program, the message names the assertion, its
// operands and its place, and `rehearse run` reports it with the replay command
// (sim/report/report.hpp). Without the handler the same runs abort the test binary.
#include <cstdio>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "model/assert.hpp"
#include "model/job_queue.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/report.hpp"

namespace rehearse::sim {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(AssertInRun, TaskAssertionEndsTheRunWithItsOwnOutcome) {
  Simulator sim;
  const ProcessId p = sim.add_process("worker", [](Simulator&, ProcessId) {});
  sim.boot(p);
  auto body = [&]() -> Task<void> {
    co_await sim.clock().sleep_for(10);
    const int retries = 4;
    REHEARSE_ASSERT_LE(retries, 3);
  };
  sim.spawn(p, body(), "group-job");
  sim.schedule_call(1000, [] {});
  const RunResult r = sim.run();
  EXPECT_EQ(r.outcome, RunOutcome::assertion_failed);
  EXPECT_TRUE(contains(r.message, "process 'worker' task 'group-job'")) << r.message;
  EXPECT_TRUE(contains(r.message,
                       "assertion failed: retries <= 3 (retries = 4, 3 = 3) at "
                       "tests/sim/world/test_assert_in_run.cpp:"))
      << r.message;
  EXPECT_EQ(r.events_executed, 2u);  // ended right after the failing event
  EXPECT_EQ(std::string(to_string(r.outcome)), "assertion_failed");
}

TEST(AssertInRun, CallbackAndBootAssertionsEndTheRunToo) {
  Simulator sim;
  sim.schedule_call(
      5, [] { REHEARSE_ASSERT_EQ(1, 2); }, "tick");
  sim.schedule_call(9, [] { throw std::logic_error("never reached"); });
  const RunResult r = sim.run();
  EXPECT_EQ(r.outcome, RunOutcome::assertion_failed);
  EXPECT_TRUE(contains(r.message, "event 'tick'")) << r.message;
  EXPECT_TRUE(contains(r.message, "1 == 2 (1 = 1, 2 = 2)")) << r.message;

  Simulator booting;
  const ProcessId p =
      booting.add_process("worker", [](Simulator&, ProcessId) { REHEARSE_ASSERT(false); });
  booting.boot(p);
  const RunResult b = booting.run();
  EXPECT_EQ(b.outcome, RunOutcome::assertion_failed);
  EXPECT_TRUE(contains(b.message, "process 'worker' boot")) << b.message;
  EXPECT_EQ(b.events_executed, 0u);
}

// Outside a run the default handler is back: the simulator's is scoped.
TEST(AssertInRunDeathTest, OutsideARunTheDefaultHandlerAborts) {
  testing::GTEST_FLAG(death_test_style) = "threadsafe";
  {
    Simulator sim;
    sim.schedule_call(1, [] {});
    (void)sim.run();
  }
  EXPECT_DEATH(REHEARSE_ASSERT_EQ(1, 2), "rehearse: assertion failed: 1 == 2");
}

// --- The real core in the world: a queue port that breaks its contract.
// JobQueue::finish returns one outbox id per message handed to it; this
// queue drops the last one. The scheduler asserts the count before it pairs
// ids with messages (model/scheduler_outcome.cpp, apply_effects), so the run ends
// there: assertion_failed, not a monitor message later.
class ShortIdsQueue final : public JobQueue {
 public:
  explicit ShortIdsQueue(JobQueue& inner) : inner_(inner) {}

  Result<QueueAddResult> add(QueueEntrySpec spec) override { return inner_.add(std::move(spec)); }
  Result<std::optional<QueueEntry>> take_next(TimeMs now,
                                              const std::set<std::string>& busy) override {
    return inner_.take_next(now, busy);
  }
  Result<std::optional<TimeMs>> next_ready_at(const std::set<std::string>& busy) override {
    return inner_.next_ready_at(busy);
  }
  Status set_intent(std::uint64_t id, std::string intent) override {
    return inner_.set_intent(id, std::move(intent));
  }
  Result<std::vector<std::uint64_t>> finish(std::uint64_t id, QueueFinish finish) override {
    auto ids = inner_.finish(id, std::move(finish));
    if (ids.ok() && !ids->empty()) ids->pop_back();
    return ids;
  }
  Status requeue(std::uint64_t id) override { return inner_.requeue(id); }
  Result<std::vector<QueueEntry>> list() override { return inner_.list(); }
  Result<std::vector<QueueEntry>> list_active() override { return inner_.list_active(); }
  Result<std::size_t> cancel_retries(const std::string& job_id, TimeMs slot) override {
    return inner_.cancel_retries(job_id, slot);
  }
  Result<std::uint64_t> outbox_add(std::string target, std::string payload) override {
    return inner_.outbox_add(std::move(target), std::move(payload));
  }
  Result<std::vector<OutboxMessage>> outbox_list() override { return inner_.outbox_list(); }
  Result<bool> outbox_remove(std::uint64_t id) override { return inner_.outbox_remove(id); }

 private:
  JobQueue& inner_;
};

// One daily group job at 10:00, BullMQ attempts 3 with a fixed 10 min
// backoff, quota exhausted from 09:59:30 for an hour: 10:00, 10:10 and 10:20
// fail and the third failure spends the budget, whose retry_exhausted
// notice is the first message the scheduler hands to finish().
Scenario exhausting_scenario() {
  const std::string text = R"({
    "format": 1, "scenario": "short-ids",
    "start": "2026-12-07T09:30:00Z", "until": "2026-12-07T11:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "digest", "kind": "group", "schedule": "0 10 * * *",
              "retry_policy": {"attempts": 3, "backoff": {"type": "fixed", "delay": "10m"}},
              "tasks": [{"id": "t", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-07T09:59:30Z", "for": "1h", "kind": "quota_exhausted"}]})";
  auto loaded = load_scenario_json(text, "short-ids.json");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  return loaded.ok() ? std::move(loaded).value() : Scenario{};
}

TEST(AssertInRun, CoreAssertionIsReportedWithTheReplayCommand) {
  const Scenario scenario = exhausting_scenario();
  auto core = run_scenario(scenario, RunOptions{});
  ASSERT_TRUE(core.ok()) << core.error().describe();
  EXPECT_EQ(core->outcome, RunOutcome::completed) << core->outcome_message;

  RunOptions options;
  options.seed = 42;
  options.worker_ports = [](JobQueue& queue, Notifier&, Disk&) {
    WorkerPortWrappers w;
    w.queue = std::make_unique<ShortIdsQueue>(queue);
    return w;
  };
  auto run = run_scenario(scenario, options);
  ASSERT_TRUE(run.ok()) << run.error().describe();
  EXPECT_EQ(run->outcome, RunOutcome::assertion_failed);
  EXPECT_TRUE(contains(run->outcome_message,
                       "assertion failed: ids->size() == messages.size() (ids->size() = 0, "
                       "messages.size() = 1) at model/scheduler_outcome.cpp:"))
      << run->outcome_message;
  EXPECT_LT(run->end_ms, scenario.until_ms);  // stopped at the cause

  const Verdict verdict = judge_run(scenario, *run, std::nullopt);
  EXPECT_FALSE(verdict.held());
  const std::string findings = format_findings(*run, verdict);
  std::printf("%s", findings.c_str());  // what `rehearse run` prints after its table
  EXPECT_TRUE(contains(findings, "short-ids.json: error: the run ended with assertion_failed: "))
      << findings;
  EXPECT_TRUE(contains(findings, "model/scheduler_outcome.cpp:")) << findings;
  EXPECT_TRUE(contains(findings,
                       "short-ids.json: replay: rehearse run short-ids.json --seed 42 "
                       "--trace t.jsonl"))
      << findings;
  const SummaryRow row = summarize(scenario, *run, 0.0, verdict.held());
  const nlohmann::json doc = report_json(scenario, *run, verdict, row);
  EXPECT_EQ(doc["outcome"], "assertion_failed");
  EXPECT_EQ(doc["replay"], "rehearse run short-ids.json --seed 42 --trace t.jsonl");
}

}  // namespace
}  // namespace rehearse::sim
