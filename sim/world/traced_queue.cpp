#include "sim/world/traced_queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "model/assert.hpp"
#include "model/disk_job_queue.hpp"
#include "sim/world/queue_events.hpp"

namespace rehearse::sim {
namespace {

using Kind = QueueCall::Kind;

std::optional<QueueContents> contents_of(JobQueue& queue) {
  auto entries = queue.list();
  auto outbox = queue.outbox_list();
  if (!entries.ok() || !outbox.ok()) return std::nullopt;
  QueueContents c;
  for (QueueEntry& e : *entries) c.entries.emplace(e.id, std::move(e));
  for (OutboxMessage& m : *outbox) c.outbox.emplace(m.id, std::move(m));
  return c;
}

std::vector<RetryCancel> cancels_of(const QueueCall& call) {
  if (call.kind == Kind::finish) return call.finish.cancels;
  if (call.kind == Kind::cancel) return {call.cancel};
  return {};
}

std::vector<QueueEntrySpec> adds_of(const QueueCall& call) {
  if (call.kind == Kind::finish) return call.finish.adds;
  if (call.kind == Kind::add) return {call.spec};
  return {};
}

QueueCall call_of(Kind kind, std::uint64_t id = 0) {
  QueueCall call;
  call.kind = kind;
  call.id = id;
  return call;
}

// The entry a finish removed is its own event (queue_done), not a cancel.
std::uint64_t finished_id(const QueueCall& call) { return call.kind == Kind::finish ? call.id : 0; }

// The entry the call names, as it is after the call (intent, requeue).
void named_entry_event(const QueueCall& call, const QueueContents& after, TimeMs t,
                       std::vector<TraceEvent>& out) {
  REHEARSE_ASSERT(call.kind == Kind::intent || call.kind == Kind::requeue);
  const auto it = after.entries.find(call.id);
  if (it == after.entries.end()) return;
  out.push_back(call.kind == Kind::intent ? queue_intent_event(t, it->second)
                                          : queue_requeue_event(t, it->second));
}

// The lease: an entry that was waiting and is active now.
void take_events(const QueueContents& before, const QueueContents& after, QueueProcess process,
                 TimeMs t, std::vector<TraceEvent>& out) {
  for (const auto& [id, e] : after.entries) {
    const auto was = before.entries.find(id);
    if (e.state != QueueEntryState::active || was == before.entries.end()) continue;
    if (was->second.state == QueueEntryState::waiting)
      out.push_back(queue_take_event(t, e, process));
  }
}

// The retries that left the queue, in the order SimQueue drops them: by the
// first cancel naming them, then by id (an entry that left without a cancel
// naming it goes last: the trace says what the queue did). Returns their ids.
std::set<std::uint64_t> cancel_events(const QueueCall& call, const QueueContents& before,
                                      const QueueContents& after, TimeMs t,
                                      std::vector<TraceEvent>& out) {
  const std::vector<RetryCancel> cancels = cancels_of(call);
  std::vector<std::pair<std::size_t, const QueueEntry*>> dropped;
  for (const auto& [id, e] : before.entries) {
    if (id == finished_id(call) || after.entries.count(id) != 0) continue;
    std::size_t rank = cancels.size();
    for (std::size_t c = 0; c < cancels.size() && rank == cancels.size(); ++c) {
      if (cancels[c].job_id == e.spec.job_id && cancels[c].slot == e.spec.slot) rank = c;
    }
    dropped.emplace_back(rank, &e);
  }
  std::stable_sort(dropped.begin(), dropped.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::set<std::uint64_t> ids;
  for (const auto& [rank, e] : dropped) {
    out.push_back(queue_cancel_event(t, *e));
    ids.insert(e->id);
  }
  return ids;
}

// Each add the call asked for: the entry that came in with its key, or the
// one already there (deduplicated); then any entry that came in unasked.
void add_events(const QueueCall& call, const QueueContents& before, const QueueContents& after,
                const std::set<std::uint64_t>& dropped, TimeMs t, std::vector<TraceEvent>& out) {
  std::map<std::string, const QueueEntry*> present;  // by queue_key
  for (const auto& [id, e] : before.entries) {
    if (id != finished_id(call) && dropped.count(id) == 0) present.emplace(queue_key(e.spec), &e);
  }
  const std::size_t events_before = out.size();
  std::vector<const QueueEntry*> fresh;
  for (const auto& [id, e] : after.entries) {
    if (before.entries.count(id) == 0) fresh.push_back(&e);
  }
  std::set<std::uint64_t> claimed;
  for (const QueueEntrySpec& spec : adds_of(call)) {
    const std::string key = queue_key(spec);
    if (const auto it = present.find(key); it != present.end()) {
      out.push_back(queue_add_event(t, spec, *it->second, /*added=*/false));
      continue;
    }
    for (const QueueEntry* e : fresh) {
      if (claimed.count(e->id) != 0 || queue_key(e->spec) != key) continue;
      claimed.insert(e->id);
      present.emplace(key, e);
      out.push_back(queue_add_event(t, spec, *e, /*added=*/true));
      break;
    }
  }
  for (const QueueEntry* e : fresh) {
    if (claimed.count(e->id) == 0) out.push_back(queue_add_event(t, e->spec, *e, /*added=*/true));
  }
  // Every entry that came in is named by an add, asked for or not.
  REHEARSE_ASSERT_LE(claimed.size(), fresh.size());
  REHEARSE_ASSERT_GE(out.size() - events_before, fresh.size());
}

void outbox_events(const QueueContents& before, const QueueContents& after, TimeMs t,
                   std::vector<TraceEvent>& out) {
  for (const auto& [id, m] : after.outbox) {
    if (before.outbox.count(id) == 0) out.push_back(outbox_add_event(t, m));
  }
  for (const auto& [id, m] : before.outbox) {
    if (after.outbox.count(id) == 0) out.push_back(outbox_remove_event(t, m));
  }
}

}  // namespace

std::vector<TraceEvent> queue_call_events(const QueueCall& call, const QueueContents& before,
                                          const QueueContents& after, QueueProcess process,
                                          TimeMs t) {
  std::vector<TraceEvent> out;
  if (call.kind == Kind::finish) {
    const auto gone = before.entries.find(call.id);
    if (gone != before.entries.end()) out.push_back(queue_done_event(t, gone->second, call.finish));
  } else if (call.kind == Kind::take) {
    take_events(before, after, process, t, out);
  } else if (call.kind == Kind::intent || call.kind == Kind::requeue) {
    named_entry_event(call, after, t, out);
  }
  const std::set<std::uint64_t> dropped = cancel_events(call, before, after, t, out);
  add_events(call, before, after, dropped, t, out);
  outbox_events(before, after, t, out);
  return out;
}

TracedQueue::TracedQueue(Trace* trace, TracedQueueHooks hooks)
    : trace_(trace), hooks_(std::move(hooks)) {}

void TracedQueue::attach(QueueProcess process, JobQueue& queue) {
  // A process opens its queue once per incarnation; the crash that ended the
  // previous one destroyed its memory, and with it the attachment.
  REHEARSE_ASSERT(open_.count(process) == 0);
  open_[process] = &queue;
}

void TracedQueue::detach(QueueProcess process) { open_.erase(process); }

void TracedQueue::settle(QueueProcess process, const std::optional<std::string>& surviving) {
  // The crash destroyed the process's memory (and its attachment) before
  // the world settles what it cut.
  REHEARSE_ASSERT(open_.count(process) == 0);
  const auto it = interrupted_.find(process);
  if (it == interrupted_.end()) return;
  const Interrupted cut = std::move(it->second);
  interrupted_.erase(it);
  if (!surviving) return;  // no queue file: the call never reached it
  auto content = DiskJobQueue::decode(*surviving);
  if (!content.ok()) return;  // the next open fails closed on these bytes
  QueueContents after{std::move(content->entries), std::move(content->outbox)};
  if (after != cut.before) record(cut.call, cut.before, after, process);
}

QueueProcess TracedQueue::process() const {
  return hooks_.current_process ? hooks_.current_process() : 0;
}

TimeMs TracedQueue::trace_now() const { return hooks_.now ? hooks_.now() : 0; }

Result<JobQueue*> TracedQueue::target(const char* operation) const {
  const QueueProcess who = process();
  if (hooks_.dead && hooks_.dead(who)) {
    return make_error(ErrorCode::io_error,
                      fmt::format("{} refused: simulated process {} is dead and must be crashed "
                                  "before it uses the queue again",
                                  operation, who),
                      "queue");
  }
  const auto it = open_.find(who);
  if (it == open_.end()) {
    return make_error(
        ErrorCode::io_error,
        fmt::format("{} refused: simulated process {} has no queue open", operation, who), "queue");
  }
  return it->second;
}

template <typename R, typename Forward>
R TracedQueue::mutate(const char* operation, QueueCall call, Forward&& forward) {
  auto queue = target(operation);
  if (!queue.ok()) return std::move(queue).error();
  JobQueue& q = **queue;
  std::optional<QueueContents> before = contents_of(q);
  R result = forward(q);
  // A queue that cannot be read (broken by an earlier disk error) refuses
  // the call before it reaches the disk.
  if (!before) return result;
  const QueueProcess who = process();
  if (!result.ok()) {
    if (result.error().code == ErrorCode::io_error) {
      interrupted_.try_emplace(who, Interrupted{std::move(call), std::move(*before)});
    }
    return result;
  }
  if (std::optional<QueueContents> after = contents_of(q)) record(call, *before, *after, who);
  return result;
}

void TracedQueue::record(const QueueCall& call, const QueueContents& before,
                         const QueueContents& after, QueueProcess process) {
  if (trace_ == nullptr) return;
  for (TraceEvent& e : queue_call_events(call, before, after, process, trace_now())) {
    trace_->record(std::move(e));
  }
}

Result<QueueAddResult> TracedQueue::add(QueueEntrySpec spec) {
  QueueCall call = call_of(Kind::add);
  call.spec = spec;
  return mutate<Result<QueueAddResult>>("add", std::move(call),
                                        [&](JobQueue& q) { return q.add(spec); });
}

Result<std::optional<QueueEntry>> TracedQueue::take_next(TimeMs now,
                                                         const std::set<std::string>& busy_jobs) {
  return mutate<Result<std::optional<QueueEntry>>>(
      "take_next", call_of(Kind::take), [&](JobQueue& q) { return q.take_next(now, busy_jobs); });
}

Result<std::optional<TimeMs>> TracedQueue::next_ready_at(const std::set<std::string>& busy_jobs) {
  auto queue = target("next_ready_at");
  if (!queue.ok()) return std::move(queue).error();
  return (*queue)->next_ready_at(busy_jobs);
}

Status TracedQueue::set_intent(std::uint64_t id, std::string intent) {
  return mutate<Status>("set_intent", call_of(Kind::intent, id),
                        [&](JobQueue& q) { return q.set_intent(id, std::move(intent)); });
}

Result<std::vector<std::uint64_t>> TracedQueue::finish(std::uint64_t id, QueueFinish finish) {
  QueueCall call = call_of(Kind::finish, id);
  call.finish = finish;
  return mutate<Result<std::vector<std::uint64_t>>>("finish", std::move(call), [&](JobQueue& q) {
    return q.finish(id, std::move(finish));
  });
}

Status TracedQueue::requeue(std::uint64_t id) {
  return mutate<Status>("requeue", call_of(Kind::requeue, id),
                        [&](JobQueue& q) { return q.requeue(id); });
}

Result<std::vector<QueueEntry>> TracedQueue::list() {
  auto queue = target("list");
  if (!queue.ok()) return std::move(queue).error();
  return (*queue)->list();
}

Result<std::vector<QueueEntry>> TracedQueue::list_active() {
  auto queue = target("list_active");
  if (!queue.ok()) return std::move(queue).error();
  return (*queue)->list_active();
}

Result<std::size_t> TracedQueue::cancel_retries(const std::string& job_id, TimeMs slot) {
  QueueCall call = call_of(Kind::cancel);
  call.cancel = RetryCancel{job_id, slot};
  return mutate<Result<std::size_t>>("cancel_retries", std::move(call),
                                     [&](JobQueue& q) { return q.cancel_retries(job_id, slot); });
}

Result<std::uint64_t> TracedQueue::outbox_add(std::string to, std::string payload) {
  return mutate<Result<std::uint64_t>>("outbox_add", call_of(Kind::outbox_add), [&](JobQueue& q) {
    return q.outbox_add(std::move(to), std::move(payload));
  });
}

Result<std::vector<OutboxMessage>> TracedQueue::outbox_list() {
  auto queue = target("outbox_list");
  if (!queue.ok()) return std::move(queue).error();
  return (*queue)->outbox_list();
}

Result<bool> TracedQueue::outbox_remove(std::uint64_t id) {
  return mutate<Result<bool>>("outbox_remove", call_of(Kind::outbox_remove, id),
                              [&](JobQueue& q) { return q.outbox_remove(id); });
}

}  // namespace rehearse::sim
