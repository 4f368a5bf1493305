#include "sim/world/sim_queue.hpp"

#include <fmt/format.h>

#include <tuple>
#include <utility>

#include "model/assert.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/world/queue_events.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim {

SimQueue::SimQueue(Trace* trace, SimQueueHooks hooks) : trace_(trace), hooks_(std::move(hooks)) {}

QueueOwner SimQueue::owner() const { return hooks_.current_owner ? hooks_.current_owner() : 0; }

TimeMs SimQueue::trace_now() const { return hooks_.now ? hooks_.now() : 0; }

Status SimQueue::admit(const char* operation) {
  const QueueOwner who = owner();
  const bool dead = dead_.count(who) != 0 || (hooks_.dead_elsewhere && hooks_.dead_elsewhere(who));
  if (dead) {
    ++counters_.refused;
    return make_error(ErrorCode::io_error,
                      fmt::format("{} refused: simulated process {} is dead and must be crashed "
                                  "before it uses the queue again",
                                  operation, who),
                      "queue");
  }
  if (fail_stop_ && (!fail_stop_->owner || *fail_stop_->owner == who)) {
    if (fail_stop_->remaining == 0) {
      fail_stop_.reset();
      ++counters_.fail_stops;
      record(queue_event(
          0, "queue_fail_stop", nullptr,
          {{"operation", operation}, {"operation_index", operations_}, {"process", who}}));
      dead_.insert(who);
      if (hooks_.on_death) hooks_.on_death(who);
      return make_error(
          ErrorCode::io_error,
          fmt::format("{}: the process died before the operation (fail-stop)", operation), "queue");
    }
    --fail_stop_->remaining;
  }
  ++operations_;
  return {};
}

void SimQueue::record(TraceEvent event) {
  if (trace_ == nullptr) return;
  event.t = trace_now();
  trace_->record(std::move(event));
}

void SimQueue::fail_stop_after(std::uint64_t n, std::optional<QueueOwner> owner) {
  fail_stop_ = FailStop{n, owner};
}

std::uint64_t SimQueue::add_locked(const QueueEntrySpec& spec, bool& added) {
  const std::string key = queue_key(spec);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    added = false;
    ++counters_.deduplicated;
    record(queue_add_event(0, spec, entries_.at(it->second), /*added=*/false));
    return it->second;
  }
  REHEARSE_ASSERT(entries_.size() < kEntriesMax);
  QueueEntry entry;
  entry.id = next_id_++;
  entry.spec = spec;
  entry.state = QueueEntryState::waiting;
  by_key_.emplace(key, entry.id);
  TraceEvent added_event = queue_add_event(0, spec, entry, /*added=*/true);
  const std::uint64_t id = entry.id;
  waiting_.emplace(entry.spec.ready_at, id);
  const bool fresh = entries_.emplace(id, std::move(entry)).second;
  REHEARSE_ASSERT(fresh);  // ids are never reused
  // Every entry has its own key, and only entries wait.
  REHEARSE_ASSERT_EQ(by_key_.size(), entries_.size());
  REHEARSE_ASSERT_LE(waiting_.size(), entries_.size());
  added = true;
  ++counters_.adds;
  record(std::move(added_event));
  return id;
}

Result<QueueAddResult> SimQueue::add(QueueEntrySpec spec) {
  if (auto s = admit("add"); !s.ok()) return std::move(s).error();
  QueueAddResult out;
  out.id = add_locked(spec, out.added);
  // The id names an entry of the queue, new or the one already there.
  REHEARSE_ASSERT_LT(out.id, next_id_);
  REHEARSE_ASSERT(entries_.count(out.id) == 1);
  return out;
}

Result<std::optional<QueueEntry>> SimQueue::take_next(TimeMs now,
                                                      const std::set<std::string>& busy_jobs) {
  if (auto s = admit("take_next"); !s.ok()) return std::move(s).error();
  // The first waiting entry by (ready_at, id) whose job is not busy: ids grow
  // with insertion, so equal ready_at go first in, first out.
  QueueEntry* best = nullptr;
  for (auto w = waiting_.begin(); w != waiting_.end() && w->first <= now; ++w) {
    QueueEntry& e = entries_.at(w->second);
    REHEARSE_ASSERT(e.state == QueueEntryState::waiting);  // waiting_ holds waiting entries only
    if (busy_jobs.count(e.spec.job_id) != 0) continue;
    best = &e;
    waiting_.erase(w);
    break;
  }
  if (best == nullptr) return std::optional<QueueEntry>{};
  best->state = QueueEntryState::active;
  best->intent.clear();
  ++counters_.takes;
  record(queue_take_event(0, *best, owner()));
  return std::optional<QueueEntry>{*best};
}

Result<std::optional<TimeMs>> SimQueue::next_ready_at(const std::set<std::string>& busy_jobs) {
  if (auto s = admit("next_ready_at"); !s.ok()) return std::move(s).error();
  for (const auto& [ready_at, id] : waiting_) {
    REHEARSE_ASSERT(entries_.at(id).state ==
                    QueueEntryState::waiting);  // waiting_ holds only those
    if (busy_jobs.count(entries_.at(id).spec.job_id) == 0) return std::optional<TimeMs>{ready_at};
  }
  return std::optional<TimeMs>{};
}

Status SimQueue::set_intent(std::uint64_t id, std::string intent) {
  if (auto s = admit("set_intent"); !s.ok()) return s;
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return make_error(ErrorCode::not_found, fmt::format("no queue entry {}", id), "queue");
  }
  if (it->second.state != QueueEntryState::active) {
    return make_error(ErrorCode::invalid_argument, fmt::format("queue entry {} is not active", id),
                      "queue");
  }
  REHEARSE_ASSERT_EQ(it->second.id, id);  // entries_ is keyed by the entry's own id
  it->second.intent = std::move(intent);
  ++counters_.intents;
  record(queue_intent_event(0, it->second));
  return {};
}

std::size_t SimQueue::cancel_locked(const std::string& job_id, TimeMs slot) {
  std::size_t dropped = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const QueueEntry& e = it->second;
    if (e.state == QueueEntryState::waiting && e.spec.kind == RunKind::retry &&
        e.spec.job_id == job_id && e.spec.slot == slot) {
      record(queue_cancel_event(0, e));
      by_key_.erase(queue_key(e.spec));
      waiting_.erase({e.spec.ready_at, e.id});
      it = entries_.erase(it);
      ++dropped;
      ++counters_.cancels;
    } else {
      ++it;
    }
  }
  REHEARSE_ASSERT_EQ(by_key_.size(), entries_.size());
  return dropped;
}

std::uint64_t SimQueue::outbox_add_locked(std::string target, std::string payload) {
  REHEARSE_ASSERT(outbox_.size() < kOutboxMax);
  OutboxMessage m;
  m.id = next_outbox_id_++;
  m.target = std::move(target);
  m.payload = std::move(payload);
  ++counters_.outbox_adds;
  const std::uint64_t id = m.id;
  record(outbox_add_event(0, m));
  const bool fresh = outbox_.emplace(id, std::move(m)).second;
  REHEARSE_ASSERT(fresh);  // ids are never reused
  return id;
}

Result<std::vector<std::uint64_t>> SimQueue::finish(std::uint64_t id, QueueFinish finish) {
  if (auto s = admit("finish"); !s.ok()) return std::move(s).error();
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return make_error(ErrorCode::not_found, fmt::format("no queue entry {}", id), "queue");
  }
  const QueueEntry gone = it->second;
  by_key_.erase(queue_key(gone.spec));
  waiting_.erase({gone.spec.ready_at, gone.id});
  entries_.erase(it);
  ++counters_.finishes;
  record(queue_done_event(0, gone, finish));
  for (const RetryCancel& c : finish.cancels) cancel_locked(c.job_id, c.slot);
  for (const QueueEntrySpec& spec : finish.adds) {
    bool added = false;
    add_locked(spec, added);
  }
  std::vector<std::uint64_t> ids;
  ids.reserve(finish.outbox.size());
  for (OutboxMessage& m : finish.outbox) {
    ids.push_back(outbox_add_locked(std::move(m.target), std::move(m.payload)));
  }
  // New entries take new ids: the finished one stays gone.
  REHEARSE_ASSERT(entries_.count(id) == 0);
  return ids;
}

Status SimQueue::requeue(std::uint64_t id) {
  if (auto s = admit("requeue"); !s.ok()) return s;
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    return make_error(ErrorCode::not_found, fmt::format("no queue entry {}", id), "queue");
  }
  REHEARSE_ASSERT_EQ(it->second.id, id);  // entries_ is keyed by the entry's own id
  it->second.state = QueueEntryState::waiting;
  waiting_.emplace(it->second.spec.ready_at, id);
  it->second.intent.clear();
  REHEARSE_ASSERT_LE(waiting_.size(), entries_.size());
  ++counters_.requeues;
  record(queue_requeue_event(0, it->second));
  return {};
}

Result<std::vector<QueueEntry>> SimQueue::list() {
  if (auto s = admit("list"); !s.ok()) return std::move(s).error();
  return entries();
}

Result<std::vector<QueueEntry>> SimQueue::list_active() {
  if (auto s = admit("list_active"); !s.ok()) return std::move(s).error();
  std::vector<QueueEntry> out;
  for (const auto& [id, e] : entries_) {
    if (e.state == QueueEntryState::active) out.push_back(e);
  }
  // An active entry is never in waiting_.
  REHEARSE_ASSERT_LE(out.size() + waiting_.size(), entries_.size());
  return out;
}

Result<std::size_t> SimQueue::cancel_retries(const std::string& job_id, TimeMs slot) {
  if (auto s = admit("cancel_retries"); !s.ok()) return std::move(s).error();
  const std::size_t before = entries_.size();
  const std::size_t dropped = cancel_locked(job_id, slot);
  REHEARSE_ASSERT_EQ(entries_.size() + dropped, before);  // each entry dropped counted once
  return dropped;
}

Result<std::uint64_t> SimQueue::outbox_add(std::string target, std::string payload) {
  if (auto s = admit("outbox_add"); !s.ok()) return std::move(s).error();
  const std::uint64_t id = outbox_add_locked(std::move(target), std::move(payload));
  REHEARSE_ASSERT_LT(id, next_outbox_id_);  // a fresh id, below the next one
  return id;
}

Result<std::vector<OutboxMessage>> SimQueue::outbox_list() {
  if (auto s = admit("outbox_list"); !s.ok()) return std::move(s).error();
  return outbox();
}

Result<bool> SimQueue::outbox_remove(std::uint64_t id) {
  if (auto s = admit("outbox_remove"); !s.ok()) return std::move(s).error();
  auto it = outbox_.find(id);
  if (it == outbox_.end()) return false;
  REHEARSE_ASSERT_EQ(it->second.id, id);  // outbox_ is keyed by the message's own id
  ++counters_.outbox_removes;
  record(outbox_remove_event(0, it->second));
  outbox_.erase(it);
  return true;
}

std::vector<QueueEntry> SimQueue::entries() const {
  std::vector<QueueEntry> out;
  out.reserve(entries_.size());
  for (const auto& [id, e] : entries_) out.push_back(e);
  REHEARSE_ASSERT_EQ(by_key_.size(), entries_.size());  // every entry has its own key
  return out;
}

std::vector<OutboxMessage> SimQueue::outbox() const {
  std::vector<OutboxMessage> out;
  out.reserve(outbox_.size());
  for (const auto& [id, m] : outbox_) {
    REHEARSE_ASSERT_LT(id, next_outbox_id_);  // ids are handed out in order, never reused
    out.push_back(m);
  }
  return out;
}

void bind_to_simulator(SimQueue& queue, Simulator& simulator, SimQueueBinding binding) {
  REHEARSE_ASSERT(!binding.reboot_after_ms || *binding.reboot_after_ms >= 0);
  SimQueueHooks hooks;
  hooks.current_owner = [&simulator] { return simulator.current_process(); };
  hooks.now = [&simulator] { return simulator.now(); };
  hooks.on_death = [&simulator, reboot = binding.reboot_after_ms](QueueOwner who) {
    // The queue kills the issuer of the operation under way: the current process.
    REHEARSE_ASSERT_EQ(who, simulator.current_process());
    if (who == kWorld) return;
    simulator.schedule_crash(who, simulator.now(), reboot);
  };
  if (binding.shared_disk != nullptr) {
    const SimDisk* disk = binding.shared_disk;
    hooks.dead_elsewhere = [disk](QueueOwner who) { return disk->is_dead(who); };
  }
  queue.set_hooks(std::move(hooks));
  simulator.add_process_listener([&queue](ProcessId process, ProcessChange change, TimeMs) {
    if (change == ProcessChange::crashed) queue.process_crashed(process);
  });
}

}  // namespace rehearse::sim
