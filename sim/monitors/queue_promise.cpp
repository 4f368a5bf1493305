#include "sim/monitors/queue_promise.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <vector>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {
namespace {

// The ids a `queue_reopened` lists under `key` (none when it lists none).
std::set<std::uint64_t> listed(const TraceEvent& e, const char* key) {
  std::set<std::uint64_t> ids;
  const nlohmann::json* list = field(e, key);
  if (list == nullptr || !list->is_array()) return ids;
  for (const nlohmann::json& id : *list) {
    const bool id_number =
        id.is_number_unsigned() || (id.is_number_integer() && id.get<std::int64_t>() >= 0);
    if (id_number) ids.insert(id.get<std::uint64_t>());
  }
  REHEARSE_ASSERT_LE(ids.size(), list->size());
  return ids;
}

std::string id_list(const std::set<std::uint64_t>& ids) {
  return ids.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(ids, ", "));
}

}  // namespace

void QueuePromise::note(const TraceEvent& e) {
  const auto id = static_cast<std::uint64_t>(e.num("id"));
  if (e.type == "queue_add" && e.flag("added")) {
    entries_[id] = Held{fmt::format("queue entry {} (job {} slot {}, {} attempt {})", id, e.job,
                                    slot_text(e.slot), e.str("kind"), e.num("attempt")),
                        e.t};
  } else if (e.type == "queue_done" || e.type == "queue_cancel") {
    entries_.erase(id);
  } else if (e.type == "outbox_add") {
    outbox_[id] =
        Held{fmt::format("outbox message {} ({} to {})", id, e.str("event"), e.str("target")), e.t};
  } else if (e.type == "outbox_remove") {
    outbox_.erase(id);
  }
}

Violations QueuePromise::check_reopened(const TraceEvent& e, std::size_t index,
                                        const char* invariant) {
  REHEARSE_ASSERT_EQ(e.type, "queue_reopened");
  Violations out;
  const bool readable = e.data.value("readable", true);
  const std::set<std::uint64_t> entries = listed(e, "entries");
  const std::set<std::uint64_t> outbox = listed(e, "outbox");
  const std::string holds = readable ? fmt::format("holds entries {} and outbox messages {}",
                                                   id_list(entries), id_list(outbox))
                                     : std::string("cannot be read by the world");
  for (auto* held : {&entries_, &outbox_}) {
    const std::set<std::uint64_t>& there = held == &entries_ ? entries : outbox;
    for (auto it = held->begin(); it != held->end();) {
      if (there.count(it->first) != 0) {
        ++it;
        continue;
      }
      out.push_back(
          {invariant, index, e.t,
           fmt::format("{} acknowledged at {} is missing from the queue the boot "
                       "reopened ({} {}): an acknowledged operation must survive a "
                       "crash",
                       it->second.what, format_instant(it->second.t), e.str("path"), holds)});
      it = held->erase(it);
    }
  }
  // What the reopened file holds beyond the acknowledged is held from here on
  // (the open made it durable and the core acts on it).
  for (std::uint64_t id : entries)
    entries_.try_emplace(id, Held{fmt::format("queue entry {}", id), e.t});
  for (std::uint64_t id : outbox)
    outbox_.try_emplace(id, Held{fmt::format("outbox message {}", id), e.t});
  // Whatever the reopened queue holds is held from here on.
  REHEARSE_ASSERT_GE(entries_.size(), entries.size());
  REHEARSE_ASSERT_GE(outbox_.size(), outbox.size());
  return out;
}

}  // namespace rehearse::sim
