#include "sim/world/queue_events.hpp"

#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {

using nlohmann::json;

json queue_entry_fields(const QueueEntry& e) {
  return {{"id", e.id},
          {"kind", to_string(e.spec.kind)},
          {"attempt", e.spec.attempt},
          {"ready_at", format_instant(e.spec.ready_at)}};
}

std::string notification_event_of(const std::string& payload) {
  const json j = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("event") && j.at("event").is_string()) {
    return j.at("event").get<std::string>();
  }
  return {};
}

TraceEvent queue_event(TimeMs t, const char* type, const QueueEntrySpec* spec, json data) {
  REHEARSE_ASSERT(type != nullptr && *type != '\0');
  REHEARSE_ASSERT(data.is_object());  // the event's fields, by name
  TraceEvent e;
  e.t = t;
  e.type = type;
  e.service = "queue";
  if (spec != nullptr) {
    e.job = spec->job_id;
    e.slot = spec->slot;
  }
  e.data = std::move(data);
  return e;
}

TraceEvent queue_add_event(TimeMs t, const QueueEntrySpec& spec, const QueueEntry& entry,
                           bool added) {
  // The entry added, or the one already there with the same key (queue_key).
  REHEARSE_ASSERT(entry.spec.job_id == spec.job_id && entry.spec.slot == spec.slot &&
                  entry.spec.kind == spec.kind && entry.spec.attempt == spec.attempt);
  json data = queue_entry_fields(entry);
  data["added"] = added;
  return queue_event(t, "queue_add", &spec, std::move(data));
}

TraceEvent queue_take_event(TimeMs t, const QueueEntry& taken, std::uint32_t process) {
  REHEARSE_ASSERT(taken.state == QueueEntryState::active);  // a take leases the entry
  json data = queue_entry_fields(taken);
  data["process"] = process;  // who holds the lease (the queue's own record)
  return queue_event(t, "queue_take", &taken.spec, std::move(data));
}

TraceEvent queue_intent_event(TimeMs t, const QueueEntry& entry) {
  json data = queue_entry_fields(entry);
  data.erase("ready_at");
  return queue_event(t, "queue_intent", &entry.spec, std::move(data));
}

TraceEvent queue_done_event(TimeMs t, const QueueEntry& gone, const QueueFinish& finish) {
  json data = queue_entry_fields(gone);
  data["state"] = to_string(gone.state);
  data["adds"] = finish.adds.size();
  data["cancels"] = finish.cancels.size();
  data["outbox"] = finish.outbox.size();
  return queue_event(t, "queue_done", &gone.spec, std::move(data));
}

TraceEvent queue_requeue_event(TimeMs t, const QueueEntry& entry) {
  return queue_event(t, "queue_requeue", &entry.spec, queue_entry_fields(entry));
}

TraceEvent queue_cancel_event(TimeMs t, const QueueEntry& dropped) {
  return queue_event(t, "queue_cancel", &dropped.spec, queue_entry_fields(dropped));
}

TraceEvent outbox_add_event(TimeMs t, const OutboxMessage& m) {
  TraceEvent e = queue_event(
      t, "outbox_add", nullptr,
      {{"id", m.id}, {"target", m.target}, {"event", notification_event_of(m.payload)}});
  const json j = json::parse(m.payload, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return e;
  if (j.contains("job_id") && j.at("job_id").is_string()) e.job = j.at("job_id").get<std::string>();
  if (j.contains("slot") && j.at("slot").is_string()) {
    const auto slot = parse_instant(j.at("slot").get<std::string>());
    if (slot.ok()) e.slot = *slot;
  }
  for (const char* key : {"attempt", "failure_class", "next_action", "at", "next_retry_at"}) {
    if (j.contains(key)) e.data[key] = j.at(key);
  }
  return e;
}

TraceEvent outbox_remove_event(TimeMs t, const OutboxMessage& m) {
  return queue_event(
      t, "outbox_remove", nullptr,
      {{"id", m.id}, {"target", m.target}, {"event", notification_event_of(m.payload)}});
}

}  // namespace rehearse::sim
