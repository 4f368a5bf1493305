// Goal: the durable queue on the Disk port (model/disk_job_queue.hpp) keeps
// its guarantees when the machine or the process dies at ANY disk operation:
// every operation acknowledged before the crash is there after a reopen, the
// one in flight is wholly there or wholly absent (never applied twice, no
// entry duplicated, no outbox message repeated), the queue always reopens,
// and it goes on working to the exact end state. A torn write of its temp
// file loses nothing. A damaged queue file fails closed and is kept byte for
// byte. Over PosixDisk it holds the same content.
// Method: a fixed workload that uses every mutating operation of the JobQueue
// port (add, a deduplicated add, take_next, set_intent, finish with a retry
// and an outbox message, outbox_add, requeue, outbox_remove, cancel_retries).
// The model is SimQueue (the simulated queue, in memory): the state after the
// first m steps of the same workload. Crash-anywhere: a baseline counts the
// disk operations N of open + workload; for every k in 0..N and both crash
// kinds (power loss; a crash of the process alone), a fresh SimDisk
// fail-stops the process at operation k, the disk crashes, a new queue object
// opens the directory, and its content is compared with the model; then the
// rest of the workload runs and, after one more power loss, the content must
// be exact. The number of crash points is printed, recorded and asserted.
// A property drives both queues with random operation sequences (with power
// losses and reopens among them) and requires the same answers and contents.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/disk_job_queue.hpp"
#include "model/posix_disk.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_queue.hpp"
#include "tests/support/property.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::sim {
namespace {

const std::string kDir = "/srv/queue";
constexpr int kSteps = 48;
constexpr TimeMs kHourMs = 3'600'000;
constexpr TimeMs kNow = 1'000'000'000'000;

struct QueueContent {
  std::vector<QueueEntry> entries;
  std::vector<OutboxMessage> outbox;
  bool operator==(const QueueContent&) const = default;
};

QueueContent content_of(JobQueue& queue) {
  auto entries = queue.list();
  auto outbox = queue.outbox_list();
  REHEARSE_ASSERT(entries.ok() && outbox.ok());
  return {std::move(entries).value(), std::move(outbox).value()};
}

std::string describe(const QueueContent& c) {
  std::string out = fmt::format("{} entries:", c.entries.size());
  for (const QueueEntry& e : c.entries) {
    out += fmt::format(" [{} {} {} {}]", e.id, queue_key(e.spec), to_string(e.state), e.intent);
  }
  out += fmt::format("; {} outbox:", c.outbox.size());
  for (const OutboxMessage& m : c.outbox) out += fmt::format(" [{} {}]", m.id, m.payload);
  return out;
}

std::optional<std::uint64_t> first_active(JobQueue& q) {
  auto active = q.list_active();
  REHEARSE_ASSERT(active.ok());
  if (active->empty()) return std::nullopt;
  return active->front().id;
}

// Step i of the workload: at most one mutating operation, chosen from what
// the queue holds (so a recovered queue at step i does what the model did).
Status step(JobQueue& q, int i) {
  const std::string job = fmt::format("job-{}", (i / 8) % 3);
  const TimeMs slot = TimeMs{i / 8} * kHourMs;
  const QueueEntrySpec regular{job, slot, RunKind::regular, 1, TimeMs{i} * 1000};
  switch (i % 8) {
    case 0:
    case 1:  // the second add of the same key is deduplicated
      return q.add(regular).ok() ? Status{} : q.add(regular).error();
    case 2:
    case 6: {
      if (i % 8 == 6) {
        if (auto id = first_active(q)) return q.requeue(*id);
      }
      auto taken = q.take_next(kNow, {});
      return taken.ok() ? Status{} : std::move(taken).error();
    }
    case 3: {
      auto id = first_active(q);
      return id ? q.set_intent(*id, fmt::format("intent-{}", i)) : Status{};
    }
    case 4: {
      auto id = first_active(q);
      if (!id) return {};
      QueueFinish finish;
      finish.adds.push_back({job, slot, RunKind::retry, 2, TimeMs{i} * 1000 + 500});
      finish.outbox.push_back({0, "ops", fmt::format(R"({{"event":"e-{}"}})", i)});
      auto done = q.finish(*id, std::move(finish));
      return done.ok() ? Status{} : std::move(done).error();
    }
    case 5: {
      auto added = q.outbox_add("team", fmt::format(R"({{"event":"m-{}"}})", i));
      return added.ok() ? Status{} : std::move(added).error();
    }
    default: {  // 7
      if (i % 16 == 7) {
        auto outbox = q.outbox_list();
        if (!outbox.ok() || outbox->empty()) return {};
        auto removed = q.outbox_remove(outbox->front().id);
        return removed.ok() ? Status{} : std::move(removed).error();
      }
      const std::vector<QueueEntry> entries = content_of(q).entries;
      for (const QueueEntry& e : entries) {
        if (e.spec.kind == RunKind::retry && e.state == QueueEntryState::waiting) {
          auto dropped = q.cancel_retries(e.spec.job_id, e.spec.slot);
          return dropped.ok() ? Status{} : std::move(dropped).error();
        }
      }
      return {};
    }
  }
}

// The model: the content after the first m steps, on the simulated queue.
const std::vector<QueueContent>& expected() {
  static const std::vector<QueueContent> states = [] {
    std::vector<QueueContent> out;
    SimQueue model;
    out.push_back(content_of(model));
    for (int i = 0; i < kSteps; ++i) {
      REHEARSE_ASSERT(step(model, i).ok());
      out.push_back(content_of(model));
    }
    return out;
  }();
  return states;
}

std::unique_ptr<SimDisk> fresh_disk(std::uint64_t seed = 0) {
  auto disk = std::make_unique<SimDisk>(nullptr, Rng(seed));
  REHEARSE_ASSERT(disk->make_dirs("/srv").ok());
  return disk;
}

struct CrashedRun {
  int acked = 0;
  bool opened = false;
};

// Opens the queue and runs steps from `first` until one fails (the process
// died) or the workload ends; the queue object dies with the process.
CrashedRun run_until_death(Disk& disk, int first = 0) {
  CrashedRun run;
  run.acked = first;
  auto queue = DiskJobQueue::open(disk, kDir);
  if (!queue.ok()) return run;
  run.opened = true;
  for (int i = first; i < kSteps; ++i) {
    if (!step(*queue, i).ok()) break;
    run.acked = i + 1;
  }
  return run;
}

enum class CrashKind { power_loss, process_only };
const char* name_of(CrashKind kind) {
  return kind == CrashKind::power_loss ? "power loss" : "process crash";
}
void crash(SimDisk& disk, CrashKind kind) {
  if (kind == CrashKind::power_loss) {
    disk.crash();
  } else {
    disk.process_crashed(0);
  }
}

// After a crash: reopen, check the allowed contents, finish the workload,
// lose power once more, check the exact end. Returns the steps held.
Result<int> recover_and_finish(SimDisk& disk, int acked) {
  auto queue = DiskJobQueue::open(disk, kDir);
  if (!queue.ok())
    return make_error(ErrorCode::internal, "reopen failed: " + queue.error().describe());
  const QueueContent now = content_of(*queue);
  int held = -1;
  if (now == expected()[acked]) {
    held = acked;
  } else if (acked < kSteps && now == expected()[acked + 1]) {
    held = acked + 1;  // the step in flight, wholly there
  } else {
    return make_error(ErrorCode::internal,
                      fmt::format("recovered {} after {} acknowledged steps; expected {}",
                                  describe(now), acked, describe(expected()[acked])));
  }
  for (int i = held; i < kSteps; ++i) {
    if (Status s = step(*queue, i); !s.ok()) {
      return make_error(ErrorCode::internal,
                        fmt::format("step {} after recovery failed: {}", i, s.error().describe()));
    }
  }
  queue = make_error(ErrorCode::internal, "closed");  // release the lock
  disk.crash();
  auto final_queue = DiskJobQueue::open(disk, kDir);
  if (!final_queue.ok()) return make_error(ErrorCode::internal, "final reopen failed");
  if (content_of(*final_queue) != expected()[kSteps]) {
    return make_error(ErrorCode::internal, "the finished workload is not exact after a crash: " +
                                               describe(content_of(*final_queue)));
  }
  return held;
}

TEST(DiskQueueCrash, WorkloadUsesEveryOperationAndMatchesTheModel) {
  const auto& states = expected();
  ASSERT_EQ(states.size(), static_cast<std::size_t>(kSteps + 1));
  const QueueContent& end = states.back();
  EXPECT_FALSE(end.entries.empty());
  EXPECT_FALSE(end.outbox.empty());
  auto disk = fresh_disk();
  const CrashedRun run = run_until_death(*disk);
  ASSERT_TRUE(run.opened);
  ASSERT_EQ(run.acked, kSteps);
  disk->crash();
  auto queue = DiskJobQueue::open(*disk, kDir);
  ASSERT_TRUE(queue.ok()) << queue.error().describe();
  EXPECT_EQ(content_of(*queue), end) << describe(content_of(*queue));
  EXPECT_EQ(disk->durable_listing(kDir), (std::vector<std::string>{"queue.json", "queue.lock"}))
      << "no temp file is left durable";
}

TEST(DiskQueueCrash, FailStopAtEveryDiskOperationLosesNothingAcknowledged) {
  std::uint64_t baseline_ops = 0;
  {
    auto disk = fresh_disk();
    ASSERT_EQ(run_until_death(*disk).acked, kSteps);
    baseline_ops = disk->operations();
  }
  ASSERT_GT(baseline_ops, 100u) << "the workload must reach many disk operations";
  std::uint64_t points = 0;
  std::map<std::string, int> outcomes;
  for (const CrashKind kind : {CrashKind::power_loss, CrashKind::process_only}) {
    for (std::uint64_t k = 0; k <= baseline_ops; ++k) {
      auto disk = fresh_disk();
      disk->fail_stop_after(k);
      const CrashedRun run = run_until_death(*disk);
      ASSERT_EQ(disk->counters().fail_stops == 1, k < baseline_ops) << "k=" << k;
      disk->cancel_fail_stop();
      crash(*disk, kind);
      auto held = recover_and_finish(*disk, run.acked);
      ASSERT_TRUE(held.ok()) << name_of(kind) << " after disk operation " << k << " (acked "
                             << run.acked << "): " << held.error().describe();
      ++outcomes[fmt::format("{}: in-flight step {}", name_of(kind),
                             *held > run.acked ? "present" : "absent")];
      ++points;
    }
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "crash points covered: " << points << " (" << baseline_ops
            << " disk operations, 2 crash kinds)" << std::endl;
  RecordProperty("crash_points", static_cast<int>(points));
  EXPECT_EQ(points, 2 * (baseline_ops + 1));
  // Both outcomes of an in-flight step occur: the sweep cut steps before
  // and after their rename.
  EXPECT_GT(outcomes["power loss: in-flight step absent"], 0);
  EXPECT_GT(outcomes["process crash: in-flight step present"], 0);
}

TEST(DiskQueueCrash, TornTempFileWriteLosesNothingAcknowledged) {
  int fired = 0;
  for (const CrashKind kind : {CrashKind::power_loss, CrashKind::process_only}) {
    for (int torn_at = 0; torn_at < kSteps; ++torn_at) {
      auto disk = fresh_disk(static_cast<std::uint64_t>(torn_at));
      CrashedRun run = run_until_death(*disk, 0);
      ASSERT_EQ(run.acked, kSteps);
      // Start over on a fresh disk, tearing the temp file at step `torn_at`.
      disk = fresh_disk(static_cast<std::uint64_t>(torn_at));
      {
        auto queue = DiskJobQueue::open(*disk, kDir);
        ASSERT_TRUE(queue.ok());
        run.acked = 0;
        for (int i = 0; i < kSteps; ++i) {
          if (i == torn_at) disk->arm_torn_write(kDir + "/queue.json.tmp");
          if (!step(*queue, i).ok()) break;
          run.acked = i + 1;
        }
      }
      if (disk->counters().torn_writes > 0) ++fired;
      disk->disarm_torn_write();
      crash(*disk, kind);
      auto held = recover_and_finish(*disk, run.acked);
      ASSERT_TRUE(held.ok()) << name_of(kind) << " torn at step " << torn_at << ": "
                             << held.error().describe();
      EXPECT_EQ(*held, run.acked) << "a torn temp file is never renamed into place";
    }
  }
  RecordProperty("torn_points", fired);
  EXPECT_GT(fired, kSteps) << "most steps write the temp file";
}

TEST(DiskQueueCrash, DamagedQueueFileFailsClosedAndIsKept) {
  auto disk = fresh_disk(7);
  ASSERT_EQ(run_until_death(*disk).acked, kSteps);
  const std::string path = kDir + "/queue.json";
  ASSERT_TRUE(disk->corrupt(path, CorruptionKind::flip_bytes).ok());
  const auto damaged = disk->read_file(path);
  ASSERT_TRUE(damaged.ok() && damaged->has_value());
  auto queue = DiskJobQueue::open(*disk, kDir);
  ASSERT_FALSE(queue.ok());
  EXPECT_EQ(queue.error().code, ErrorCode::corrupt) << queue.error().describe();
  EXPECT_EQ(queue.error().where, path);
  EXPECT_EQ(*disk->read_file(path), *damaged) << "the damaged file is kept byte for byte";
}

TEST(DiskQueueCrash, ABrokenQueueRefusesEveryLaterOperation) {
  auto disk = fresh_disk();
  auto queue = DiskJobQueue::open(*disk, kDir);
  ASSERT_TRUE(queue.ok());
  ASSERT_TRUE(queue->add({"a", 0, RunKind::regular, 1, 0}).ok());
  disk->fail_stop_after(2);  // the next add dies at its rename
  EXPECT_FALSE(queue->add({"b", 0, RunKind::regular, 1, 0}).ok());
  disk->cancel_fail_stop();
  ASSERT_TRUE(queue->broken().has_value());
  auto later = queue->list();
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(later.error().code, ErrorCode::io_error);
}

// --- the same answers as SimQueue, for any sequence -------------------------

// One generated operation: what, and two small numbers it uses.
struct Op {
  int what = 0;
  int a = 0;
  int b = 0;
};

// Applies op to a queue; the answer as text (compared between the queues).
std::string apply(JobQueue& q, const Op& op) {
  const std::string job = fmt::format("job-{}", op.a % 3);
  const TimeMs slot = TimeMs{op.b % 4} * kHourMs;
  const auto pick = [&](bool active) -> std::uint64_t {
    auto all = active ? q.list_active() : q.list();
    if (!all.ok() || all->empty())
      return 1000 + static_cast<std::uint64_t>(op.b);  // none: not_found
    return (*all)[static_cast<std::size_t>(op.b) % all->size()].id;
  };
  const auto status = [](const Status& s) {
    return s.ok() ? std::string("ok") : std::string(to_string(s.error().code));
  };
  switch (op.what % 11) {
    case 0:
    case 1: {
      auto r = q.add({job, slot, op.what % 2 == 0 ? RunKind::regular : RunKind::retry, 1 + op.b % 3,
                      TimeMs{op.a % 4} * 1000});
      return r.ok() ? fmt::format("{} {}", r->id, r->added) : status(r.error());
    }
    case 2: {
      std::set<std::string> busy;
      if (op.b % 2 == 1) busy.insert(job);
      auto r = q.take_next(TimeMs{op.b % 6} * 1000, busy);
      return r.ok() ? (r->has_value() ? std::to_string((*r)->id) : "none") : status(r.error());
    }
    case 3: {
      auto r =
          q.next_ready_at(op.b % 2 == 1 ? std::set<std::string>{job} : std::set<std::string>{});
      return r.ok() ? (r->has_value() ? std::to_string(**r) : "none") : status(r.error());
    }
    case 4: return status(q.set_intent(pick(op.a % 2 == 0), fmt::format("intent {}", op.b)));
    case 5: {
      QueueFinish finish;
      if (op.a % 2 == 0)
        finish.adds.push_back({job, slot, RunKind::retry, 2, TimeMs{op.b % 4} * 1000});
      if (op.a % 3 == 0) finish.cancels.push_back({job, slot});
      if (op.b % 2 == 0) finish.outbox.push_back({0, "ops", fmt::format("m{}", op.a)});
      auto r = q.finish(pick(op.a % 2 == 1), std::move(finish));
      return r.ok() ? fmt::format("{}", r->size()) : status(r.error());
    }
    case 6: return status(q.requeue(pick(true)));
    case 7: {
      auto r = q.cancel_retries(job, slot);
      return r.ok() ? std::to_string(*r) : status(r.error());
    }
    case 8: {
      auto r = q.outbox_add("team", fmt::format("p{}", op.b));
      return r.ok() ? std::to_string(*r) : status(r.error());
    }
    case 9: {
      auto all = q.outbox_list();
      const std::uint64_t id =
          all.ok() && !all->empty() ? all->front().id + static_cast<std::uint64_t>(op.b % 2) : 7;
      auto r = q.outbox_remove(id);
      return r.ok() ? (*r ? "removed" : "absent") : status(r.error());
    }
    default: return "reopen";  // 10: handled by the caller for the disk queue
  }
}

REHEARSE_PROP(DiskQueueModel, AnswersAndContentsEqualSimQueueAcrossPowerLosses,
              (const std::vector<std::tuple<int, int, int>>& ops)) {
  SimQueue model;
  auto disk = fresh_disk();
  auto opened = DiskJobQueue::open(*disk, kDir);
  RC_ASSERT(opened.ok());
  auto queue = std::make_unique<DiskJobQueue>(std::move(opened).value());
  for (const auto& [what, a, b] : ops) {
    const auto small = [](int v) { return static_cast<int>(static_cast<unsigned>(v) % 1024u); };
    const Op op{small(what), small(a), small(b)};
    if (op.what % 11 == 10) {
      queue.reset();
      disk->crash();
      auto reopened = DiskJobQueue::open(*disk, kDir);
      RC_ASSERT(reopened.ok());
      queue = std::make_unique<DiskJobQueue>(std::move(reopened).value());
    } else {
      RC_ASSERT(apply(*queue, op) == apply(model, op));
    }
    RC_ASSERT(content_of(*queue) == content_of(model));
  }
}

using testsupport::TempDir;

TEST(DiskQueueCrash, PosixDiskHoldsTheSameContentAndBytes) {
  TempDir dir;
  PosixDisk posix;
  auto sim_disk = fresh_disk();
  const std::string posix_dir = dir.path() + "/queue";
  {
    auto queue = DiskJobQueue::open(posix, posix_dir);
    ASSERT_TRUE(queue.ok()) << queue.error().describe();
    for (int i = 0; i < kSteps; ++i) ASSERT_TRUE(step(*queue, i).ok()) << i;
  }
  ASSERT_EQ(run_until_death(*sim_disk).acked, kSteps);
  auto reopened = DiskJobQueue::open(posix, posix_dir);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(content_of(*reopened), expected()[kSteps]);
  EXPECT_EQ(*posix.read_file(posix_dir + "/queue.json"),
            *sim_disk->read_file(kDir + "/queue.json"));
}

}  // namespace
}  // namespace rehearse::sim
