// JobQueue: the durable job queue port (docs/semantics.md §4).
//
// The queue is durable as BullMQ's is in Redis: it lives outside the worker
// process, so delayed retries, queued slots and the runs a worker had leased
// survive a restart of that process. Every operation is synchronous and
// atomic, like a Redis command or one of BullMQ's Lua scripts: a crash of the
// worker falls between two operations, never inside one.
//
// Entries. An entry is one job instance: (job, regular slot, kind, attempt),
// due at ready_at. It is WAITING until a worker takes it (take_next), then
// ACTIVE (leased by the worker) until the worker finishes it. After a restart
// every ACTIVE entry is a run the dead worker had leased: a stalled run
// (BullMQ's stalled jobs), unless it carries an intent (below).
//
// Keys. An entry's key is (job, slot, kind, attempt). add() is idempotent on
// the key among the entries in the queue: adding a key that is already there
// (waiting or active) returns the existing entry (BullMQ's custom job ids do
// the same). That makes "add, then record in the state store" safe to repeat
// after a crash between the two.
//
// Intents. Before a worker records a run's outcome in the state store, it
// stores on the ACTIVE entry an opaque intent (the transition it is about to
// persist and what must follow it). A restart that finds an ACTIVE entry with
// an intent replays the intent instead of treating the run as stalled, so a
// crash between the state write and the queue's finish neither loses the
// outcome nor counts it twice (docs/scheduler.md, "Order of durable steps").
//
// Outbox. Notifications to send are durable messages here too: finish() moves
// them in atomically with the entry's removal, the worker sends them and then
// removes them, and a restart sends what is left (at least once).
//
// The simulated implementation is sim/world/sim_queue.hpp. A production deployment
// plugs in its own adapter (e.g. over Redis); docs/scheduler.md lists what an
// adapter must guarantee.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "model/retry_machine.hpp"
#include "model/time.hpp"

namespace rehearse {

enum class QueueEntryState : unsigned char { waiting, active };
const char* to_string(QueueEntryState state) noexcept;

// What a caller asks to enqueue.
struct QueueEntrySpec {
  std::string job_id;
  TimeMs slot = 0;  // the regular slot this instance belongs to
  RunKind kind = RunKind::regular;
  int attempt = 1;      // 1 = the slot's regular run; retry n = attempt n + 1
  TimeMs ready_at = 0;  // not taken before this instant

  bool operator==(const QueueEntrySpec&) const = default;
};

struct QueueEntry {
  std::uint64_t id = 0;  // assigned by the queue in insertion order, never reused
  QueueEntrySpec spec;
  QueueEntryState state = QueueEntryState::waiting;
  std::string intent;  // empty: none (ACTIVE entries only)

  bool operator==(const QueueEntry&) const = default;
};

// "job|slot|kind|attempt": the identity add() deduplicates on.
std::string queue_key(const QueueEntrySpec& spec);

struct QueueAddResult {
  std::uint64_t id = 0;
  bool added = false;  // false: an entry with the same key was already there
};

// A waiting retry of (job, slot) to drop.
struct RetryCancel {
  std::string job_id;
  TimeMs slot = 0;

  bool operator==(const RetryCancel&) const = default;
};

// A notification waiting to be sent.
struct OutboxMessage {
  std::uint64_t id = 0;
  std::string target;
  std::string payload;  // the message, JSON text

  bool operator==(const OutboxMessage&) const = default;
};

// What finish() does atomically besides removing the entry.
struct QueueFinish {
  std::vector<QueueEntrySpec> adds;   // e.g. the retry the outcome scheduled (idempotent)
  std::vector<RetryCancel> cancels;   // waiting retries to drop
  std::vector<OutboxMessage> outbox;  // notifications (ids ignored; assigned here)
};

class JobQueue {
 public:
  virtual ~JobQueue() = default;

  // Adds a WAITING entry unless one with the same key is in the queue.
  virtual Result<QueueAddResult> add(QueueEntrySpec spec) = 0;

  // The first WAITING entry in (ready_at, id) order with ready_at <= now whose
  // job is not in `busy_jobs`; it becomes ACTIVE (leased). Empty: none.
  virtual Result<std::optional<QueueEntry>> take_next(TimeMs now,
                                                      const std::set<std::string>& busy_jobs) = 0;

  // The earliest ready_at among WAITING entries whose job is not busy.
  virtual Result<std::optional<TimeMs>> next_ready_at(const std::set<std::string>& busy_jobs) = 0;

  // Stores (replaces) the intent of an ACTIVE entry.
  virtual Status set_intent(std::uint64_t id, std::string intent) = 0;

  // Atomically: removes the entry (waiting or active), adds `finish.adds`,
  // drops the waiting retries named in `finish.cancels`, appends
  // `finish.outbox`. Returns the outbox ids assigned. not_found if no entry.
  virtual Result<std::vector<std::uint64_t>> finish(std::uint64_t id, QueueFinish finish) = 0;

  // ACTIVE -> WAITING (a stalled run runs again), intent cleared, ready_at kept.
  virtual Status requeue(std::uint64_t id) = 0;

  // Every entry, in id order; the ACTIVE ones only.
  virtual Result<std::vector<QueueEntry>> list() = 0;
  virtual Result<std::vector<QueueEntry>> list_active() = 0;

  // Drops the WAITING retries of (job, slot); returns how many.
  virtual Result<std::size_t> cancel_retries(const std::string& job_id, TimeMs slot) = 0;

  // The outbox.
  virtual Result<std::uint64_t> outbox_add(std::string target, std::string payload) = 0;
  virtual Result<std::vector<OutboxMessage>> outbox_list() = 0;
  virtual Result<bool> outbox_remove(std::uint64_t id) = 0;
};

}  // namespace rehearse
