// Goal: the worker (model/worker.hpp) is the one place that turns job
// configurations into a running scheduler: the effective schedule (an
// environment variable that is set and non-empty replaces the default; set
// but empty or unparsable is a config error, never a fallback), the policy
// as written (none: "has no retry_policy"), config errors recorded in the
// job's state (failed / config / manual_review, once, never over a corrupt
// store), runners from the job-kind registry (unknown kind or unusable
// params: a config error of that job only), a caller's kinds table. And
// the simulated world no longer assembles any of it (a source check).
// Method: Worker::open over a SimDisk, a SimQueue and the simulator's ports;
// the state is read back from the store.
#include "model/worker.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

JobConfig group_job(std::string id) {
  JobConfig job;
  job.id = std::move(id);
  job.kind = "group";
  job.schedule = "0 9 * * 1";
  job.retry_policy = json{{"max", 2}, {"backoff_sec", 60}};
  job.targets = {"team"};
  job.params = json{{"tasks", json::array({{{"id", "report"}}})}};
  return job;
}

struct Fixture {
  Trace trace;
  Simulator sim{SimulatorOptions{.start_ms = *parse_instant("2026-12-07T08:00:00Z"), .seed = 1}};
  SimDisk disk{nullptr};
  SimQueue queue;
  SimServices services{sim, trace};
  Messenger messenger{sim, trace, MessengerOptions{}};
  SimLog log{sim, trace};
  Environment env;

  Fixture() { REHEARSE_ASSERT(disk.make_dirs("/srv").ok()); }

  Result<std::unique_ptr<Worker>> open(std::vector<JobConfig> jobs,
                                       const JobKinds& kinds = job_kinds()) {
    WorkerOptions options;
    options.state_dir = "/srv/state";
    options.ledger_dir = "/srv/ledger";
    return Worker::open(WorkerPorts{sim.clock(), queue, disk, services, messenger, log, sim.rng(),
                                    env},
                        std::move(jobs), options, kinds);
  }
  bool logged(const std::string& event) const {
    for (const std::string& line : log.lines()) {
      if (line.find(event) != std::string::npos) return true;
    }
    return false;
  }
};

void expect_config_error(Worker& worker, const std::string& id, const std::string& needle) {
  auto state = worker.store().read(id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->retry_status, RetryStatus::failed);
  EXPECT_EQ(state->failure_class, FailureClass::config);
  EXPECT_EQ(state->next_action, NextAction::manual_review);
  EXPECT_NE(state->last_error.find(needle), std::string::npos) << state->last_error;
}

TEST(Worker, AnEnvironmentOverrideThatIsSetAndNonEmptyReplacesTheSchedule) {
  Environment env{{"REPORT_CRON", "*/15 * * * *"}};
  JobConfig job = group_job("report");
  job.schedule_env = "REPORT_CRON";
  const JobPlan plan = plan_job(job, env);
  ASSERT_TRUE(plan.schedule.ok());
  EXPECT_EQ(plan.schedule->origin, "env:REPORT_CRON");
  EXPECT_EQ(plan.schedule->expression, "*/15 * * * *");
  ASSERT_TRUE(plan.policy.ok()) << plan.policy.error().describe();
  // Unset: the default.
  EXPECT_EQ(plan_job(job, {}).schedule->origin, "default");
}

TEST(Worker, AnEmptyOrUnparsableOverrideIsAConfigErrorInTheStateNeverAFallback) {
  Fixture f;
  f.env = {{"EMPTY_CRON", ""}, {"BAD_CRON", "every monday"}};
  JobConfig empty = group_job("empty");
  empty.schedule_env = "EMPTY_CRON";
  JobConfig bad = group_job("bad");
  bad.schedule_env = "BAD_CRON";
  auto worker = f.open({empty, bad, group_job("fine")});
  ASSERT_TRUE(worker.ok()) << worker.error().describe();
  expect_config_error(**worker, "empty", "EMPTY_CRON is set but empty");
  expect_config_error(**worker, "bad", "BAD_CRON");
  EXPECT_TRUE(f.logged("schedule_config_error"));
  ASSERT_EQ((*worker)->config_errors().size(), 2u);
  EXPECT_EQ((*worker)->config_errors()[0].first, "empty");
  EXPECT_EQ((*worker)->scheduled(), std::vector<std::string>{"fine"});
  // A second boot finds the same error already recorded: nothing is written.
  const std::uint64_t sequence = (*worker)->store().sequence();
  worker = make_error(ErrorCode::internal, "process ended");
  auto again = f.open({empty, bad, group_job("fine")});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->store().sequence(), sequence);
}

TEST(Worker, AnUnknownKindOrUnusableParamsIsAConfigErrorOfThatJobOnly) {
  Fixture f;
  JobConfig shell = group_job("shell");
  shell.kind = "shell";
  JobConfig broken = group_job("broken");
  broken.params = json{{"tasks", "report"}};
  // A call job whose call lacks its service, and one whose calls are no list.
  JobConfig no_service = group_job("no-service");
  no_service.kind = "call";
  no_service.params = json{{"calls", json::array({{{"method", "GET"}}})}};
  JobConfig not_a_list = group_job("not-a-list");
  not_a_list.kind = "call";
  not_a_list.params = json{{"calls", "billing-api"}};
  JobConfig calls = group_job("calls");
  calls.kind = "call";
  calls.params = json{{"calls", json::array({{{"service", "billing-api"}}})}};
  auto worker = f.open({shell, broken, no_service, not_a_list, calls, group_job("fine")});
  ASSERT_TRUE(worker.ok());
  expect_config_error(**worker, "shell", "kind 'shell'");
  expect_config_error(**worker, "broken", "params.tasks");
  expect_config_error(**worker, "no-service", "params.calls");
  expect_config_error(**worker, "not-a-list", "params.calls");
  EXPECT_TRUE(f.logged("job_config_error"));
  EXPECT_EQ((*worker)->scheduled(), (std::vector<std::string>{"calls", "fine"}));
}

TEST(Worker, AJobWithoutAPolicyIsScheduledWithThePolicyError) {
  JobConfig job = group_job("no-policy");
  job.retry_policy.reset();
  const JobPlan plan = plan_job(job, {});
  ASSERT_TRUE(plan.schedule.ok());
  ASSERT_FALSE(plan.policy.ok());
  EXPECT_NE(plan.policy.error().message.find("has no retry_policy"), std::string::npos);
}

TEST(Worker, TheRegistryHasOneEntryPerKindAndACallersTableIsUsed) {
  std::vector<std::string> names;
  for (const JobKindEntry& kind : job_kinds()) names.emplace_back(kind.name);
  EXPECT_EQ(names, (std::vector<std::string>{"group", "fetch", "reconcile", "publish", "call"}));
  EXPECT_EQ(find_job_kind("shell"), nullptr);

  // A caller's table (the world's wraps the core's factories): a kind it
  // lacks is a config error; its factory builds the runners of its kind.
  Fixture f;
  int built = 0;
  JobKinds only_group{
      {"group", [&built](const JobConfig& job, const PolicyOrError& policy, JobPorts& ports) {
         ++built;
         return find_job_kind("group")->make(job, policy, ports);
       }}};
  JobConfig fetch = group_job("f");
  fetch.kind = "fetch";
  auto worker = f.open({group_job("a"), group_job("b"), fetch}, only_group);
  ASSERT_TRUE(worker.ok());
  EXPECT_EQ(built, 2);
  EXPECT_EQ((*worker)->scheduled(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ((*worker)->config_errors().size(), 1u);
  EXPECT_NE((*worker)->config_errors()[0].second.find("kind 'fetch'"), std::string::npos);
}

TEST(Worker, AConfigErrorIsNotWrittenOverACorruptStore) {
  Fixture f;
  {
    auto worker = f.open({group_job("fine")});
    ASSERT_TRUE(worker.ok());
    ASSERT_TRUE((*worker)->store().update("fine", [](JobState& s) { s.retry_count = 1; }).ok());
  }
  ASSERT_TRUE(f.disk.corrupt("/srv/state/retry_state.journal", CorruptionKind::garbage).ok());
  const auto before = f.disk.read_file("/srv/state/retry_state.journal");
  f.env = {{"EMPTY_CRON", ""}};
  JobConfig empty = group_job("empty");
  empty.schedule_env = "EMPTY_CRON";
  auto worker = f.open({empty});
  ASSERT_TRUE(worker.ok());
  EXPECT_FALSE((*worker)->store().health().ok());
  EXPECT_EQ(f.disk.read_file("/srv/state/retry_state.journal")->value(), before->value());
}

std::string source(const char* path) {
  std::ifstream in(std::string(REHEARSE_SOURCE_DIR) + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Worker, TheSimulatedWorldDoesNotAssembleTheWorker) {
  for (const char* file :
       {"sim/world/world.cpp", "sim/world/world_detail.hpp", "sim/world/world_faults.cpp",
        "sim/world/world_crashes.cpp", "sim/world/world_processes.cpp",
        "sim/world/world_observe.cpp", "sim/world/world_run.cpp", "sim/world/world_runners.cpp",
        "sim/world/world.hpp"}) {
    const std::string text = source(file);
    ASSERT_FALSE(text.empty()) << file;
    for (const char* word :
         {"parse_retry_policy", "effective_schedule", "record_config_error", "Scheduler>(",
          "ScheduledJob", "GroupJob", "FetchJob", "PublishJob", "ReconcileJob", "TokenClient>("}) {
      EXPECT_EQ(text.find(word), std::string::npos) << file << " mentions " << word;
    }
  }
  const std::string worker = source("model/worker.cpp");
  EXPECT_NE(worker.find("record_config_error"), std::string::npos);
  EXPECT_NE(worker.find("parse_retry_policy"), std::string::npos);
}

}  // namespace
}  // namespace rehearse::sim
