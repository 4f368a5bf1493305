// The queue's trace events (docs/trace-events.md, "Queue and disk"), built in
// one place for every queue the world runs the worker over: the in-memory
// SimQueue (sim/world/sim_queue.hpp) and the tracing decorator over the core's
// DiskJobQueue (sim/world/traced_queue.hpp). The monitors read these events as the
// world's facts, so both queues must write them with the same fields.
//
// Every event has service `queue` and the job and slot of the entry it
// concerns (an outbox event: of the message it carries, when it names them):
//   queue_add       id, kind, attempt, ready_at, added (false: deduplicated;
//                   then the fields are the entry already there)
//   queue_take      id, kind, attempt, ready_at, process (the lease's holder)
//   queue_intent    id, kind, attempt
//   queue_done      id, kind, attempt, ready_at, state (what the entry was),
//                   adds, cancels, outbox (how many the finish carried)
//   queue_requeue   id, kind, attempt, ready_at
//   queue_cancel    id, kind, attempt, ready_at (one per dropped retry)
//   outbox_add      id, target, event, and the job, slot, attempt,
//                   failure_class, next_action, at, next_retry_at the
//                   message names
//   outbox_remove   id, target, event
//   queue_fail_stop operation, operation_index, process
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/job_queue.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

// The fields every entry event carries: id, kind, attempt, ready_at.
nlohmann::json queue_entry_fields(const QueueEntry& entry);

// The notification event an outbox payload names (payloads are notification
// JSON; anything else: empty).
std::string notification_event_of(const std::string& payload);

// `spec` gives the event's job and slot (null: none).
TraceEvent queue_event(TimeMs t, const char* type, const QueueEntrySpec* spec, nlohmann::json data);

// queue_add of `spec`: `entry` is the one added, or the one already there.
TraceEvent queue_add_event(TimeMs t, const QueueEntrySpec& spec, const QueueEntry& entry,
                           bool added);
TraceEvent queue_take_event(TimeMs t, const QueueEntry& taken, std::uint32_t process);
TraceEvent queue_intent_event(TimeMs t, const QueueEntry& entry);
// `gone` as it was before the finish removed it.
TraceEvent queue_done_event(TimeMs t, const QueueEntry& gone, const QueueFinish& finish);
TraceEvent queue_requeue_event(TimeMs t, const QueueEntry& entry);
TraceEvent queue_cancel_event(TimeMs t, const QueueEntry& dropped);

// The message as the queue holds it: the job and slot it names and what it
// says, so a notification is a fact of the world's queue, readable without
// the core's log.
TraceEvent outbox_add_event(TimeMs t, const OutboxMessage& message);
TraceEvent outbox_remove_event(TimeMs t, const OutboxMessage& message);

}  // namespace rehearse::sim
