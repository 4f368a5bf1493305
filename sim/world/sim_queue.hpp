// SimQueue: the JobQueue port (model/job_queue.hpp) on the simulated world.
//
// An in-memory store that lives outside every simulated process, as a Redis
// server lives outside the BullMQ worker: a crash of the worker process loses
// nothing here. Every operation is atomic (it runs between two events, like a
// Redis command or a Lua script), so a crash falls between two operations.
//
// Processes. SimQueue knows only an integer owner per operation, from a hook
// (SimQueueHooks::current_owner; 0 when unset). bind_to_simulator() wires the
// hooks to a Simulator: the owner is the current process, and a process a
// fault kills is crashed by a world event at the current instant.
//
// Faults (only here, never in model/):
//   - fail_stop_after(n): the process dies at its (n+1)-th next operation,
//     which does not happen: the call returns io_error, every later operation
//     of that process fails with io_error until the world crashes it (the
//     crash-anywhere enumerator for the synchronous code between two
//     suspension points: "between any two durable steps");
//   - a process the simulated disk killed (SimQueueBinding::shared_disk) is
//     dead here too: a dead process issues no command anywhere.
//
// Trace (optional: nullptr for unit tests). Every mutating operation is a
// TraceEvent with the job and slot it concerns, built by sim/world/queue_events.hpp
// (queue_add, queue_take, queue_intent, queue_done, queue_requeue,
// queue_cancel, outbox_add, outbox_remove; and queue_fail_stop, its own
// fault: operation, operation_index, process).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/job_queue.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

class Simulator;
class SimDisk;

using QueueOwner = std::uint32_t;

struct SimQueueHooks {
  std::function<QueueOwner()> current_owner;  // empty: always 0
  std::function<TimeMs()> now;                // trace time; empty: 0
  // A fault killed `owner` inside one of its operations (schedule its crash).
  std::function<void(QueueOwner)> on_death;
  // Whether `owner` is dead for another reason (e.g. the disk killed it).
  std::function<bool(QueueOwner)> dead_elsewhere;
};

struct SimQueueCounters {
  std::uint64_t adds = 0;
  std::uint64_t deduplicated = 0;
  std::uint64_t takes = 0;
  std::uint64_t finishes = 0;
  std::uint64_t requeues = 0;
  std::uint64_t cancels = 0;  // entries dropped by cancels
  std::uint64_t intents = 0;
  std::uint64_t outbox_adds = 0;
  std::uint64_t outbox_removes = 0;
  std::uint64_t refused = 0;
  std::uint64_t fail_stops = 0;
};

class SimQueue final : public JobQueue {
 public:
  // Bounds (a limit on everything): a run that exceeds them is a bug.
  static constexpr std::size_t kEntriesMax = 1'000'000;
  static constexpr std::size_t kOutboxMax = 1'000'000;

  explicit SimQueue(Trace* trace = nullptr, SimQueueHooks hooks = {});

  void set_hooks(SimQueueHooks hooks) { hooks_ = std::move(hooks); }
  void set_trace(Trace* trace) noexcept { trace_ = trace; }

  // --- the JobQueue port ---
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

  // --- faults ---
  // The next n operations of `owner` (of anyone when unset) run; the one after
  // fails and kills its issuer. One-shot; a new call replaces it.
  void fail_stop_after(std::uint64_t n, std::optional<QueueOwner> owner = std::nullopt);
  void cancel_fail_stop() noexcept { fail_stop_.reset(); }
  bool fail_stop_armed() const noexcept { return fail_stop_.has_value(); }
  // The world crashed `owner`: it may use the queue again (a new incarnation).
  void process_crashed(QueueOwner owner) { dead_.erase(owner); }
  bool is_dead(QueueOwner owner) const { return dead_.count(owner) != 0; }

  // --- inspection (not operations: never refused, not counted) ---
  std::vector<QueueEntry> entries() const;
  std::vector<OutboxMessage> outbox() const;
  std::size_t size() const noexcept { return entries_.size(); }
  std::uint64_t operations() const noexcept { return operations_; }
  const SimQueueCounters& counters() const noexcept { return counters_; }

 private:
  QueueOwner owner() const;
  TimeMs trace_now() const;
  Status admit(const char* operation);
  // Stamps the event with the trace time and records it (no trace: nothing).
  void record(TraceEvent event);
  std::uint64_t add_locked(const QueueEntrySpec& spec, bool& added);
  std::size_t cancel_locked(const std::string& job_id, TimeMs slot);
  std::uint64_t outbox_add_locked(std::string target, std::string payload);

  struct FailStop {
    std::uint64_t remaining = 0;
    std::optional<QueueOwner> owner;
  };

  Trace* trace_ = nullptr;
  SimQueueHooks hooks_;
  std::map<std::uint64_t, QueueEntry> entries_;  // by id
  // (ready_at, id) of every waiting entry: the order take_next hands them
  // out in, so a take costs O(log n) and not a walk over the whole queue.
  std::set<std::pair<TimeMs, std::uint64_t>> waiting_;
  std::map<std::string, std::uint64_t> by_key_;    // queue_key -> id
  std::map<std::uint64_t, OutboxMessage> outbox_;  // by id
  std::uint64_t next_id_ = 1;
  std::uint64_t next_outbox_id_ = 1;
  std::set<QueueOwner> dead_;
  std::optional<FailStop> fail_stop_;
  std::uint64_t operations_ = 0;
  SimQueueCounters counters_;
};

struct SimQueueBinding {
  // When a fault kills a process: it is crashed now and booted again this
  // much later (never, when unset).
  std::optional<DurationMs> reboot_after_ms;
  // A disk whose dead processes are dead here too (optional).
  const SimDisk* shared_disk = nullptr;
};

// Wires the hooks to the simulator: owner = the current process, trace time =
// now(), a death = sim.schedule_crash(owner, now, reboot_after), and a process
// listener that tells the queue of every crash. Both must outlive the run.
void bind_to_simulator(SimQueue& queue, Simulator& simulator, SimQueueBinding binding = {});

}  // namespace rehearse::sim
