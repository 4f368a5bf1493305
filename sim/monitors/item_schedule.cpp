#include "sim/monitors/item_schedule.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

namespace {

// The longest wait the core may set after an answer about an item: the
// transient backoff's cap and the config deferral (docs/semantics.md §8).
constexpr DurationMs kLongestWaitMs = kHourMs;

std::optional<TimeMs> instant_field(const TraceEvent& e, const char* key) {
  const std::string text = e.str(key);
  if (text.empty()) return std::nullopt;
  const auto t = parse_instant(text);
  return t.ok() ? std::optional<TimeMs>(*t) : std::nullopt;
}

}  // namespace

ItemSchedule::ItemSchedule(const char* invariant, const Scenario& scenario,
                           const WallClockTable& clock)
    : invariant_(invariant), clock_(clock) {
  for (const JobSpec& spec : scenario.jobs) {
    if (spec.kind == JobKind::reconcile) batch_size_[spec.id] = spec.batch_size;
  }
  REHEARSE_ASSERT_LE(batch_size_.size(), scenario.jobs.size());
}

void ItemSchedule::observe(const TraceEvent& e, std::size_t i, bool went_down, Violations& out) {
  if (went_down) {
    cycles_.clear();  // a cut cycle may have stopped anywhere
    return;
  }
  if (e.type == "durable_schedule") {
    on_schedule(e, i, out);
  } else if (e.type == "durable_stage") {
    durable_[{e.job, e.item}].terminal = terminal_stage(e.str("stage"));
  } else if (e.type == "job_file_damaged") {
    damaged_.insert(e.job);
  } else if (e.type == "queue_intent") {
    judge_cycle(e, i, out);
  } else if (e.service == "orchestrator" && e.type == "service_reply") {
    // The core's item times are its clock's readings: so are these.
    if (e.str("operation") == "list_agents") open_cycle(e.job, clock_.wall(e.t));
    if (!e.item.empty()) last_answer_[e.item] = clock_.wall(e.t);
  } else if (e.service == "orchestrator" && e.type == "service_call") {
    const auto cycle = cycles_.find(e.job);
    if (cycle == cycles_.end()) return;
    if (e.str("operation") == "list_agents") {
      cycles_.erase(cycle);  // a cycle that never reached its intent is not judged
    } else if (e.str("operation") == "get_issue") {
      cycle->second.asked.insert(e.item);
    }
  }
}

// The cap: no durable next attempt further than 1 h from the orchestrator's
// last answer about the item (an item never answered yet is not judged: its
// record is the scenario's or the store's seed).
void ItemSchedule::on_schedule(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "durable_schedule");
  Durable& d = durable_[{e.job, e.item}];
  d.next_attempt_at = instant_field(e, "next_attempt_at");
  d.updated_at = instant_field(e, "updated_at");
  const auto answer = last_answer_.find(e.item);
  if (!d.next_attempt_at || answer == last_answer_.end()) return;
  if (*d.next_attempt_at <= answer->second + kLongestWaitMs) return;
  out.push_back({invariant_, i, e.t,
                 fmt::format("issue {}'s durable next attempt is at {}, {} after the "
                             "orchestrator's last answer about it at {} (a backoff or a deferral "
                             "waits at most {})",
                             e.item, format_instant(*d.next_attempt_at),
                             format_duration(*d.next_attempt_at - answer->second),
                             format_instant(answer->second), format_duration(kLongestWaitMs))});
}

// The job's agent list was answered: the core picks its due items now, from
// the pipeline file as it is on disk.
void ItemSchedule::open_cycle(const std::string& job, TimeMs at) {
  if (!batch_size_.contains(job) || damaged_.contains(job)) return;
  Cycle cycle;
  cycle.at = at;
  for (auto it = durable_.lower_bound({job, std::string()});
       it != durable_.end() && it->first.first == job; ++it) {
    cycle.items[it->first.second] = it->second;
  }
  // A copy of the job's own durable records, nothing else.
  REHEARSE_ASSERT_LE(cycle.items.size(), durable_.size());
  cycles_[job] = std::move(cycle);
}

// How many items the cycle asked that had been visited no later than `item`
// (an item with no readable visit instant counts: it may have been).
std::size_t ItemSchedule::asked_no_later(const Cycle& cycle, const Durable& item) const {
  std::size_t n = 0;
  for (const std::string& issue : cycle.asked) {
    const auto it = cycle.items.find(issue);
    const bool unknown = it == cycle.items.end() || !it->second.updated_at || !item.updated_at;
    if (unknown || *it->second.updated_at <= *item.updated_at) ++n;
  }
  // Counted among the items the cycle asked.
  REHEARSE_ASSERT_LE(n, cycle.asked.size());
  return n;
}

// The run's intent: every change of the cycle is on disk. Each item due at
// the cycle's instant and not asked fires, unless a full batch of items
// visited no later than it was asked instead.
void ItemSchedule::judge_cycle(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_intent");
  const auto found = cycles_.find(e.job);
  if (found == cycles_.end()) return;
  // open_cycle opens cycles of reconcile jobs only: the job has a batch entry.
  REHEARSE_ASSERT(batch_size_.contains(e.job));
  const Cycle cycle = std::move(found->second);

  cycles_.erase(found);
  if (damaged_.contains(e.job)) return;
  const std::optional<int> batch = batch_size_[e.job];
  for (const auto& [issue, item] : cycle.items) {
    if (item.terminal || !item.next_attempt_at || *item.next_attempt_at > cycle.at) continue;
    if (cycle.asked.contains(issue)) continue;
    const std::size_t before = asked_no_later(cycle, item);
    if (batch && before >= static_cast<std::size_t>(std::max(*batch, 0))) continue;
    out.push_back(
        {invariant_, i, e.t,
         fmt::format("issue {} was due at {} (next attempt {}) and its cycle did not ask it; "
                     "{} of the {} items asked had been visited no later than it ({}: the least "
                     "recently visited due items go first)",
                     issue, format_instant(cycle.at), format_instant(*item.next_attempt_at), before,
                     cycle.asked.size(),
                     batch ? fmt::format("batch_size {}", *batch) : std::string("no batch_size"))});
  }
}

}  // namespace rehearse::sim
