// TracedQueue: the JobQueue port the world hands a worker whose queue is the
// core's DiskJobQueue on the simulated disk (scenario `queue.store: disk`,
// docs/worker.md). It forwards every operation to the DiskJobQueue the
// calling process opened and records the same trace events, with the same
// fields, as SimQueue does (sim/world/queue_events.hpp), so the monitors judge a
// disk-queue world as they judge a memory-queue one.
//
// Where it lives. Outside the processes, as SimQueue does: the DiskJobQueue
// is process memory (attached after the boot opened it, detached when the
// process dies), this object is the world's and outlives every incarnation.
//
// Events from the queue's own contents. A mutating operation's events are
// read from what the queue holds before and after it (list, outbox_list:
// reads that touch no disk), not from what the call asked for: a deduplicated
// add names the entry already there, a finish's cancels are the retries that
// left the queue, its adds the entries that came in. So the trace says what
// the queue did.
//
// Interrupted operations. A SimQueue operation is atomic; a DiskJobQueue
// operation is a write, an fsync, a rename and a directory fsync, and a crash
// can fall between the rename and the directory fsync. The call then fails
// (its process died), yet a crash of that process alone keeps the rename (the
// page cache survives): the operation happened, and the next boot acts on it.
// settle() is told at the process's crash which bytes of queue.json survive
// the crash; when they hold another queue than the one before the
// interrupted call, the call's events are recorded then (at the crash's
// instant, before the crash's own records), so the trace never misses an
// operation the queue holds.
//
// A process the disk killed issues no command: its calls are refused with
// io_error, as SimQueue refuses them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/job_queue.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

using QueueProcess = std::uint32_t;

struct TracedQueueHooks {
  std::function<QueueProcess()> current_process;  // empty: always 0
  std::function<TimeMs()> now;                    // trace time; empty: 0
  std::function<bool(QueueProcess)> dead;         // killed elsewhere (the disk)
};

// What a queue holds, as its reads give it.
struct QueueContents {
  std::map<std::uint64_t, QueueEntry> entries;    // by id
  std::map<std::uint64_t, OutboxMessage> outbox;  // by id

  bool operator==(const QueueContents&) const = default;
};

// One mutating call, as much of it as its events need.
struct QueueCall {
  enum class Kind : unsigned char {
    add,
    take,
    intent,
    finish,
    requeue,
    cancel,
    outbox_add,
    outbox_remove
  };
  Kind kind = Kind::add;
  std::uint64_t id = 0;  // intent, finish, requeue, outbox_remove
  QueueEntrySpec spec;   // add
  RetryCancel cancel;    // cancel
  QueueFinish finish;    // finish: what it carried
};

// The events of `call` by `process`, which took the queue from `before` to
// `after`, in SimQueue's order.
std::vector<TraceEvent> queue_call_events(const QueueCall& call, const QueueContents& before,
                                          const QueueContents& after, QueueProcess process,
                                          TimeMs t);

class TracedQueue final : public JobQueue {
 public:
  explicit TracedQueue(Trace* trace, TracedQueueHooks hooks = {});

  // `process` opened `queue`; its calls go there until detach().
  void attach(QueueProcess process, JobQueue& queue);
  void detach(QueueProcess process);
  // `process` died; `surviving` is what its queue file holds after the crash
  // (nullopt: no file). Records the events of the call its death
  // interrupted, when that call is in those bytes.
  void settle(QueueProcess process, const std::optional<std::string>& surviving);

  Result<QueueAddResult> add(QueueEntrySpec spec) override;
  Result<std::optional<QueueEntry>> take_next(TimeMs now,
                                              const std::set<std::string>& busy_jobs) override;
  Result<std::optional<TimeMs>> next_ready_at(const std::set<std::string>& busy_jobs) override;
  Status set_intent(std::uint64_t id, std::string intent) override;
  Result<std::vector<std::uint64_t>> finish(std::uint64_t id, QueueFinish finish) override;
  Status requeue(std::uint64_t id) override;
  Result<std::vector<QueueEntry>> list() override;
  Result<std::vector<QueueEntry>> list_active() override;
  Result<std::size_t> cancel_retries(const std::string& job_id, TimeMs slot) override;
  Result<std::uint64_t> outbox_add(std::string target, std::string payload) override;
  Result<std::vector<OutboxMessage>> outbox_list() override;
  Result<bool> outbox_remove(std::uint64_t id) override;

 private:
  struct Interrupted {
    QueueCall call;
    QueueContents before;
  };

  QueueProcess process() const;
  TimeMs trace_now() const;
  Result<JobQueue*> target(const char* operation) const;
  // A mutating call: forwarded, then its events; a failed call that may have
  // reached the disk is kept for settle().
  template <typename R, typename Forward>
  R mutate(const char* operation, QueueCall call, Forward&& forward);
  void record(const QueueCall& call, const QueueContents& before, const QueueContents& after,
              QueueProcess process);

  Trace* trace_ = nullptr;
  TracedQueueHooks hooks_;
  std::map<QueueProcess, JobQueue*> open_;
  std::map<QueueProcess, Interrupted> interrupted_;
};

}  // namespace rehearse::sim
