// Goal: a world over the core's DiskJobQueue (`queue.store: disk`) records
// the queue's facts exactly as a world over SimQueue does, so the monitors
// judge both alike: the tracing decorator (sim/world/traced_queue.hpp) records the
// same events with the same fields, in the same order, for any sequence of
// port operations, across power losses and reopens; and an operation a crash
// cut after its rename, which the queue holds once the crash is over, is
// recorded at that crash (and one the crash took back is not).
// Method: one random operation sequence (RapidCheck) drives SimQueue and a
// TracedQueue over a DiskJobQueue on a SimDisk, each with its own trace;
// every answer and every trace line must be equal. Interrupted operations:
// the disk's fail-stop at a chosen operation of an add or a take, then
// settle() with what a crash of the process alone, or a power loss, leaves.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/disk_job_queue.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/sim_queue.hpp"
#include "sim/world/traced_queue.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

const std::string kDir = "/srv/queue";
const std::string kFile = kDir + "/queue.json";
constexpr TimeMs kHourMs = 3'600'000;
constexpr QueueProcess kProcess = 7;

// A disk whose every operation is the process kProcess's.
std::unique_ptr<SimDisk> process_disk() {
  auto disk = std::make_unique<SimDisk>(nullptr);
  SimDiskHooks hooks;
  hooks.current_owner = [] { return DiskOwner{kProcess}; };
  disk->set_hooks(std::move(hooks));
  REHEARSE_ASSERT(disk->make_dirs("/srv").ok());
  return disk;
}

// The queue of kProcess on `disk`, reached through a TracedQueue recording
// into `trace`; reopen() is the next boot of the process.
class DiskWorld {
 public:
  explicit DiskWorld(Trace& trace)
      : disk_(process_disk()),
        traced_(&trace,
                TracedQueueHooks{.current_process = [] { return kProcess; },
                                 .now = [] { return TimeMs{0}; },
                                 .dead = [this](QueueProcess p) { return disk_->is_dead(p); }}) {
    reopen();
  }

  void reopen() {
    traced_.detach(kProcess);
    queue_.reset();
    auto opened = DiskJobQueue::open(*disk_, kDir);
    REHEARSE_ASSERT(opened.ok());
    queue_ = std::make_unique<DiskJobQueue>(std::move(opened).value());
    traced_.attach(kProcess, *queue_);
  }
  // The process dies with the call in flight: the crash's kind decides what
  // of queue.json is left, and so what settle() records.
  void crash(bool process_only) {
    traced_.detach(kProcess);
    queue_.reset();
    traced_.settle(kProcess,
                   process_only ? disk_->live_content(kFile) : disk_->durable_content(kFile));
    if (process_only) {
      disk_->process_crashed(kProcess);
    } else {
      disk_->crash();
    }
    reopen();
  }

  SimDisk& disk() { return *disk_; }
  TracedQueue& queue() { return traced_; }

 private:
  std::unique_ptr<SimDisk> disk_;
  TracedQueue traced_;
  std::unique_ptr<DiskJobQueue> queue_;
};

SimQueueHooks process_hooks() {
  SimQueueHooks hooks;
  hooks.current_owner = [] { return kProcess; };
  return hooks;
}

// A notification payload naming a job and a slot (outbox_add reads them).
std::string notice(const std::string& job, TimeMs slot, int n) {
  return fmt::format(R"({{"event":"retry_scheduled","job_id":"{}","slot":"{}","attempt":{}}})", job,
                     format_instant(slot), n);
}

std::string status_text(const Status& s) {
  return s.ok() ? std::string("ok") : std::string(to_string(s.error().code));
}

// One port operation chosen by (what, a, b); the answer as text.
std::string apply(JobQueue& q, int what, int a, int b) {
  const std::string job = fmt::format("job-{}", a % 3);
  const TimeMs slot = TimeMs{b % 4} * kHourMs;
  const auto pick = [&](bool active) -> std::uint64_t {
    auto all = active ? q.list_active() : q.list();
    if (!all.ok() || all->empty()) return 1000;  // none: not_found
    return (*all)[static_cast<std::size_t>(b) % all->size()].id;
  };
  switch (what % 10) {
    case 0:
    case 1: {
      auto r = q.add({job, slot, what % 2 == 0 ? RunKind::regular : RunKind::retry, 1 + b % 3,
                      TimeMs{a % 4} * 1000});
      return r.ok() ? fmt::format("{} {}", r->id, r->added) : status_text(r.error());
    }
    case 2: {
      auto r = q.take_next(TimeMs{b % 6} * 1000,
                           b % 2 == 1 ? std::set<std::string>{job} : std::set<std::string>{});
      return r.ok() ? (r->has_value() ? std::to_string((*r)->id) : "none") : status_text(r.error());
    }
    case 3: return status_text(q.set_intent(pick(a % 2 == 0), fmt::format("intent {}", b)));
    case 4: {
      QueueFinish finish;
      if (a % 2 == 0) finish.adds.push_back({job, slot, RunKind::retry, 2, TimeMs{b % 4} * 1000});
      if (a % 4 == 0) finish.adds.push_back({job, slot, RunKind::retry, 2, 0});  // a repeat
      if (a % 3 == 0) finish.cancels.push_back({job, slot});
      if (b % 2 == 0) finish.outbox.push_back({0, "ops", notice(job, slot, a % 5)});
      auto r = q.finish(pick(a % 2 == 1), std::move(finish));
      return r.ok() ? fmt::format("{}", r->size()) : status_text(r.error());
    }
    case 5: return status_text(q.requeue(pick(true)));
    case 6: {
      auto r = q.cancel_retries(job, slot);
      return r.ok() ? std::to_string(*r) : status_text(r.error());
    }
    case 7: {
      auto r = q.outbox_add("team", b % 2 == 0 ? notice(job, slot, b) : fmt::format("p{}", b));
      return r.ok() ? std::to_string(*r) : status_text(r.error());
    }
    default: {  // 8, 9
      auto all = q.outbox_list();
      const std::uint64_t id =
          all.ok() && !all->empty() ? all->front().id + static_cast<std::uint64_t>(b % 2) : 7;
      auto r = q.outbox_remove(id);
      return r.ok() ? (*r ? "removed" : "absent") : status_text(r.error());
    }
  }
}

std::vector<std::string> lines(const Trace& trace) {
  std::vector<std::string> out;
  for (const TraceEvent& e : trace.events()) out.push_back(to_json_line(e));
  return out;
}

REHEARSE_PROP(TracedQueue, RecordsWhatSimQueueRecordsAcrossPowerLosses,
              (const std::vector<std::tuple<int, int, int>>& ops)) {
  Trace memory_trace;
  Trace disk_trace;
  SimQueue memory(&memory_trace, process_hooks());
  DiskWorld disk(disk_trace);
  for (const auto& [what, a, b] : ops) {
    const auto small = [](int v) { return static_cast<int>(static_cast<unsigned>(v) % 1024u); };
    if (small(what) % 13 == 12) {
      disk.crash(/*process_only=*/false);  // a power loss between two operations
      continue;
    }
    RC_ASSERT(apply(disk.queue(), small(what), small(a), small(b)) ==
              apply(memory, small(what), small(a), small(b)));
  }
  RC_ASSERT(lines(disk_trace) == lines(memory_trace));
}

// A fixed sequence that uses every kind of event, so the property's
// equality is not met by traces that happen to be empty.
TEST(TracedQueue, RecordsEveryKindOfEventAsSimQueueDoes) {
  Trace memory_trace;
  Trace disk_trace;
  SimQueue memory(&memory_trace, process_hooks());
  DiskWorld disk(disk_trace);
  const std::vector<std::tuple<int, int, int>> ops{{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {2, 0, 4},
                                                   {3, 1, 0}, {4, 0, 0}, {7, 0, 0}, {7, 0, 1},
                                                   {8, 0, 0}, {2, 0, 4}, {5, 0, 0}, {6, 0, 0}};
  for (const auto& [what, a, b] : ops) {
    EXPECT_EQ(apply(disk.queue(), what, a, b), apply(memory, what, a, b)) << what;
  }
  EXPECT_EQ(lines(disk_trace), lines(memory_trace));
  std::set<std::string> types;
  for (const TraceEvent& e : disk_trace.events()) types.insert(e.type);
  EXPECT_EQ(types, (std::set<std::string>{"queue_add", "queue_take", "queue_intent", "queue_done",
                                          "queue_cancel", "queue_requeue", "outbox_add",
                                          "outbox_remove"}));
}

// The disk's operation `k` of the next persist does not happen (the process
// dies there): 0 write, 1 fsync, 2 rename, 3 directory fsync.
std::vector<std::string> add_cut_at(std::uint64_t k, bool process_only) {
  Trace trace;
  DiskWorld world(trace);
  EXPECT_TRUE(world.queue().add({"job", 0, RunKind::regular, 1, 0}).ok());
  world.disk().fail_stop_after(k);
  EXPECT_FALSE(world.queue().add({"job", kHourMs, RunKind::retry, 2, 5}).ok());
  EXPECT_EQ(trace.size(), 1u);  // the call failed: nothing recorded yet
  world.crash(process_only);
  auto held = world.queue().list();
  EXPECT_TRUE(held.ok());
  std::vector<std::string> out;
  for (const TraceEvent& e : trace.events()) out.push_back(e.type + " " + e.data.dump());
  EXPECT_EQ(out.size(), held.ok() ? held->size() : 0u) << "the trace names what the queue holds";
  return out;
}

TEST(TracedQueue, ACallCutAfterItsRenameIsRecordedWhenTheCrashKeepsIt) {
  // A crash of the process alone keeps the rename: the add happened.
  const auto kept = add_cut_at(3, /*process_only=*/true);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1], R"(queue_add {"added":true,"attempt":2,"id":2,"kind":"retry",)"
                     R"("ready_at":"1970-01-01T00:00:00.005Z"})");
  // A power loss takes the rename back, and a cut before the rename leaves
  // the old file under either crash: nothing to record.
  EXPECT_EQ(add_cut_at(3, /*process_only=*/false).size(), 1u);
  EXPECT_EQ(add_cut_at(2, /*process_only=*/true).size(), 1u);
  EXPECT_EQ(add_cut_at(1, /*process_only=*/true).size(), 1u);
}

TEST(TracedQueue, ASettledTakeNamesTheDeadProcessAsTheLeaseHolder) {
  Trace trace;
  DiskWorld world(trace);
  ASSERT_TRUE(world.queue().add({"job", 0, RunKind::regular, 1, 0}).ok());
  world.disk().fail_stop_after(3);
  EXPECT_FALSE(world.queue().take_next(0, {}).ok());
  // Dead: every later call is refused before it reaches the queue.
  EXPECT_EQ(world.queue().list().error().code, ErrorCode::io_error);
  world.crash(/*process_only=*/true);
  ASSERT_EQ(trace.size(), 2u);
  const TraceEvent& take = trace.events().back();
  EXPECT_EQ(take.type, "queue_take");
  EXPECT_EQ(take.num("process"), kProcess);
  auto active = world.queue().list_active();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), 1u);
}

}  // namespace
}  // namespace rehearse::sim
