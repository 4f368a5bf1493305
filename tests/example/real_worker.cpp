// Goal: the worker a production program runs is the one the simulator runs.
// model/worker.hpp assembles it from job configurations (schedules with an
// environment override, policies, config errors, runners from the job-kind
// registry) over a durable queue in a POSIX directory (model/disk_job_queue)
// and runs on the real clock (model/real_driver, model/system_clock).
// Method: three jobs in one configuration: a group job due every second, a
// job whose schedule variable is set but empty, and a job of a kind no runner
// exists for. The worker runs for about 2.5 s of real time, is dropped (the
// process dies mid-loop), and a second worker opens the same directory and
// runs 1.5 s more. Checks: deliveries of distinct slots at real instants,
// each slot delivered at most once across the restart, the two broken jobs
// recorded as config errors in the state file (failed / config /
// manual_review) and in the log, never run; the queue file is a valid queue
// document; the state and queue files survive the restart.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/disk_job_queue.hpp"
#include "model/json_log.hpp"
#include "model/posix_disk.hpp"
#include "model/real_driver.hpp"
#include "model/state_store.hpp"
#include "model/system_clock.hpp"
#include "model/worker.hpp"
#include "model/worker_lock.hpp"
#include "tests/example/in_process_ports.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::example;
using nlohmann::json;

std::vector<JobConfig> jobs() {
  JobConfig heartbeat;
  heartbeat.id = "heartbeat";
  heartbeat.kind = "group";
  heartbeat.schedule = "* * * * * *";  // every second
  heartbeat.retry_policy = json{{"max", 1}, {"backoff_sec", 1}};
  heartbeat.targets = {"team-chat"};
  heartbeat.params = json{{"tasks", json::array({{{"id", "summary"}, {"model_calls", 1}}})}};

  JobConfig digest = heartbeat;
  digest.id = "digest";
  digest.schedule = "0 9 * * 1";
  digest.schedule_env = "DIGEST_CRON";  // set but empty below: a config error

  JobConfig legacy = heartbeat;
  legacy.id = "legacy";
  legacy.kind = "shell";  // no such kind in the registry
  return {heartbeat, digest, legacy};
}

struct Incarnation {
  std::vector<std::pair<std::string, json>> sent;
  std::vector<std::string> log;
};

// One worker process: open the queue and the worker, run until the deadline,
// die there (everything in memory is dropped).
Incarnation run_worker(const std::string& root, const Environment& env, DurationMs for_ms) {
  PosixDisk disk;
  RealDriver driver;
  InProcessModelApi model(driver.clock());
  InProcessMessenger messenger(driver.clock());
  // The production log adapter (docs/log-format.md): one JSON object per line.
  std::vector<std::string> lines;
  JsonLineLog log(driver.clock(), [&lines](std::string_view l) { lines.emplace_back(l); });
  SplitMix random;
  auto queue = DiskJobQueue::open(disk, root + "/queue");
  EXPECT_TRUE(queue.ok()) << queue.error().describe();
  if (!queue.ok()) return {};
  // The state directory's worker lock before anything is opened (docs/worker.md,
  // "Several processes on one state directory"); the previous incarnation's
  // lock died with it, so this one is granted at once.
  Result<DiskLockHandle> lock = make_error(ErrorCode::internal, "not taken");
  Task<void> take = [](Disk& d, Clock& c, Log& l, std::string dir,
                       Result<DiskLockHandle>& out) -> Task<void> {
    out = co_await take_worker_lock(d, c, l, std::move(dir));
  }(disk, driver.clock(), log, root + "/state", lock);
  auto taken = driver.run_until(take, SystemClock::wall_now_ms() + 5000);
  EXPECT_TRUE(taken.ok() && *taken && lock.ok()) << "the worker lock was not granted";
  if (!lock.ok()) return {};
  WorkerOptions options;
  options.state_dir = root + "/state";
  options.ledger_dir = root + "/ledger";
  options.ops_target = "ops-mail";
  auto worker =
      Worker::open(WorkerPorts{driver.clock(), *queue, disk, model, messenger, log, random, env},
                   jobs(), options);
  EXPECT_TRUE(worker.ok()) << worker.error().describe();
  if (!worker.ok()) return {};
  {
    Task<void> loop = (*worker)->run();
    auto finished = driver.run_until(loop, SystemClock::wall_now_ms() + for_ms);
    EXPECT_TRUE(finished.ok()) << finished.error().describe();
    EXPECT_FALSE(finished.ok() && *finished)
        << "the scheduler halted: " << (*worker)->scheduler().halt_error()->describe();
  }  // the loop and its runs die here, then the worker
  worker = make_error(ErrorCode::internal, "process ended");
  return {messenger.sent(), lines};
}

// Every line is a format-1 object; `event` was written for `job`.
bool logged(const Incarnation& run, const std::string& event, const std::string& job) {
  bool found = false;
  for (const std::string& line : run.log) {
    const json doc = json::parse(line);
    EXPECT_EQ(doc.at("log"), kLogFormat) << line;
    EXPECT_TRUE(parse_instant(doc.at("t").get<std::string>()).ok()) << line;
    const json& fields = doc.at("fields");
    if (doc.at("event") == event && fields.value("job_id", "") == job) found = true;
  }
  return found;
}

TEST(RealWorker, RunsConfiguredJobsOnRealTimeAndSurvivesARestart) {
  TempDir dir;
  const Environment env{{"DIGEST_CRON", ""}};
  const TimeMs started_ms = SystemClock::wall_now_ms();
  const Incarnation first = run_worker(dir.path(), env, 2500);
  const Incarnation second = run_worker(dir.path(), env, 1500);

  // Deliveries: distinct slots, each at most once across the restart.
  std::map<std::string, int> per_slot;
  for (const Incarnation* run : {&first, &second}) {
    for (const auto& [target, message] : run->sent) {
      if (message.value("kind", "") != "delivery") continue;
      EXPECT_EQ(target, "team-chat");
      EXPECT_EQ(message.at("job_id"), "heartbeat");
      ++per_slot[message.at("slot").get<std::string>()];
    }
  }
  EXPECT_GE(per_slot.size(), 2u)
      << "about one slot a second over 4 s (a loaded machine may coalesce some)";
  for (const auto& [slot, n] : per_slot) {
    EXPECT_EQ(n, 1) << "slot " << slot << " delivered " << n << " times";
    const TimeMs at = *parse_instant(slot);
    EXPECT_GE(at + 1000, started_ms);
    EXPECT_LE(at, SystemClock::wall_now_ms());
  }

  // The broken jobs: logged at each boot, recorded in the state, never run.
  for (const Incarnation* run : {&first, &second}) {
    EXPECT_TRUE(logged(*run, "schedule_config_error", "digest"));
    EXPECT_TRUE(logged(*run, "job_config_error", "legacy"));
    // The job that runs says how it is configured, at every boot.
    EXPECT_TRUE(logged(*run, "job_configured", "heartbeat"));
    EXPECT_FALSE(logged(*run, "job_configured", "legacy"));
  }
  PosixDisk disk;
  auto store = StateStore::open(disk, dir.path() + "/state");
  ASSERT_TRUE(store.ok()) << store.error().describe();
  for (const char* id : {"digest", "legacy"}) {
    auto state = store->read(id);
    ASSERT_TRUE(state.ok()) << id;
    EXPECT_EQ(state->retry_status, RetryStatus::failed) << id;
    EXPECT_EQ(state->failure_class, FailureClass::config) << id;
    EXPECT_EQ(state->next_action, NextAction::manual_review) << id;
    EXPECT_FALSE(state->next_run_at.has_value()) << id << " is never scheduled";
  }
  EXPECT_NE(store->read("digest")->last_error.find("DIGEST_CRON"), std::string::npos);
  EXPECT_NE(store->read("legacy")->last_error.find("'shell'"), std::string::npos);
  auto heartbeat = store->read("heartbeat");
  ASSERT_TRUE(heartbeat.ok());
  ASSERT_TRUE(heartbeat->last_slot.has_value());
  EXPECT_GE(*heartbeat->last_slot, *parse_instant(per_slot.rbegin()->first));

  // The queue file is a queue document (checksum and shape).
  const auto bytes = disk.read_file(dir.path() + "/queue/queue.json");
  ASSERT_TRUE(bytes.ok() && bytes->has_value());
  auto content = DiskJobQueue::decode(**bytes);
  ASSERT_TRUE(content.ok()) << content.error().describe();
  EXPECT_GE(content->next_id, per_slot.size() + 1) << "every slot went through the queue";
}

}  // namespace
