#include "sim/monitors/notice_sends.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

NoticeSends::Key NoticeSends::key_of(const TraceEvent& e) {
  return {e.job, e.slot.value_or(kNoSlot), e.str("event"), e.num("attempt"), e.str("target")};
}

std::string NoticeSends::describe(const Key& k) {
  const auto& [job, slot, event, attempt, target] = k;
  return fmt::format("{} of job {} slot {} attempt {} to {}", event.empty() ? "(no event)" : event,
                     job.empty() ? "(none)" : job,
                     slot == kNoSlot ? std::string("(no slot)") : format_instant(slot), attempt,
                     target);
}

void NoticeSends::observe(const TraceEvent& e, std::size_t i, Violations& out) {
  if (process_.went_down_at(i) || is_crash_event(e.type)) {
    refused_.clear();  // the next boot sends again what the crash cut
    return;
  }
  if (e.type == "outbox_add") {
    const std::int64_t id = e.num("id", -1);
    const Key key = key_of(e);
    unsent_[id] = Committed{key, i, e.t};
    order_[key].push_back(id);
  } else if (e.type == "outbox_remove") {
    on_remove(e, i, out);
  } else if ((e.type == "message_delivered" || e.type == "message_refused") &&
             e.str("kind") == "notification") {
    on_send(e, i, out);
  }
}

// The first send of a committed message consumes it; any other send of the
// same fields is the outbox sending again, which only a crash since the last
// refusal allows.
void NoticeSends::on_send(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT(e.type == "message_delivered" || e.type == "message_refused");
  const Key key = key_of(e);
  const auto waiting = order_.find(key);
  if (waiting != order_.end() && !waiting->second.empty()) {
    unsent_.erase(waiting->second.front());
    waiting->second.pop_front();
  } else if (const auto refused = refused_.find(key); refused != refused_.end()) {
    out.push_back(
        {invariant_, i, e.t,
         fmt::format("notification {} was sent again at {} after the messenger refused "
                     "it at {} with no crash between: a refused notification is logged, "
                     "not retried",
                     describe(key), format_instant(e.t), format_instant(refused->second.t))});
  }
  if (e.type == "message_refused") {
    refused_[key] = Refusal{i, e.t};
  } else {
    refused_.erase(key);
  }
}

// A message removed before any send of it reached the messenger is lost: the
// outbox exists so that a notification survives until it was sent.
void NoticeSends::on_remove(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "outbox_remove");
  const auto it = unsent_.find(e.num("id", -1));
  if (it == unsent_.end() || !at_least_once_) return;
  const Committed gone = it->second;
  unsent_.erase(it);
  // Its fields were queued when it was committed; order_ never drops a key.
  const auto found = order_.find(gone.key);
  REHEARSE_ASSERT(found != order_.end());
  std::deque<std::int64_t>& ids = found->second;
  ids.erase(std::remove(ids.begin(), ids.end(), e.num("id", -1)), ids.end());
  out.push_back({invariant_, i, e.t,
                 fmt::format("notification {} (outbox message {}, committed at {}) left the "
                             "outbox without reaching the messenger: notifications are sent at "
                             "least once",
                             describe(gone.key), e.num("id", -1), format_instant(gone.t))});
}

void NoticeSends::finish(TimeMs until, Violations& out) const {
  if (!at_least_once_ || !process_.up() || !process_.boot_t()) return;
  const TimeMs boot = *process_.boot_t();
  for (const auto& [id, m] : unsent_) {
    REHEARSE_ASSERT_EQ(order_.count(m.key), 1u);
    const TimeMs owed_from = std::max(m.t, boot);

    if (until - owed_from < kSettleMs) continue;
    out.push_back(
        {invariant_, m.index, m.t,
         fmt::format("notification {} (outbox message {}, committed at {}) never "
                     "reached the messenger, although the worker was up from {} to the "
                     "end: notifications are sent at least once",
                     describe(m.key), id, format_instant(m.t), format_instant(owed_from))});
  }
}

}  // namespace rehearse::sim
