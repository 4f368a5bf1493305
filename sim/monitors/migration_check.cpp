#include "sim/monitors/migration_check.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/reply_class.hpp"
#include "sim/monitors/stage_rank.hpp"

namespace rehearse::sim {

namespace {

// An answer about an item: definitive (a 2xx, or a refusal other than 404 /
// 410, which end the item), transient, or neither (gone, or no answer).
std::optional<bool> definitive_answer(const TraceEvent& reply) {
  switch (item_answer(reply)) {
    case ItemAnswer::definitive: return true;
    case ItemAnswer::transient: return false;
    case ItemAnswer::gone:
    case ItemAnswer::none: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

MigrationCheck::MigrationCheck(const char* invariant, const Scenario& scenario)
    : invariant_(invariant) {
  for (const JobSpec& spec : scenario.jobs) {
    for (const ReconcileItem& item : spec.items) {
      items_of_[spec.id].insert(item.issue);
      records_[{spec.id, item.issue}].terminal = terminal_stage(item.stage);
    }
  }
  // Only a job with items has an entry.
  REHEARSE_ASSERT_LE(items_of_.size(), scenario.jobs.size());
}

void MigrationCheck::observe(const TraceEvent& e, std::size_t i, bool list_answered, bool went_down,
                             Violations& out) {
  if (went_down) {
    on_crash();
  } else if (e.type == "instance_changed") {
    for (const auto& [job, issues] : items_of_) migrated_.insert(job);
    // Every job with items awaits the new instance, and only those.
    REHEARSE_ASSERT_EQ(migrated_.size(), items_of_.size());
  } else if (e.type == "durable_stage") {
    records_[{e.job, e.item}].terminal = terminal_stage(e.str("stage"));
  } else if (e.type == "queue_intent") {
    on_intent(e, i, out);
  } else if (e.service == "orchestrator" && e.type == "service_reply") {
    on_reply(e, list_answered);
  } else if (e.service == "orchestrator" && e.type == "service_call" &&
             e.str("operation") == "get_issue") {
    const auto cycle = cycles_.find(e.job);
    if (cycle != cycles_.end()) cycle->second.asked.insert(e.item);
  }
}

void MigrationCheck::on_reply(const TraceEvent& e, bool list_answered) {
  REHEARSE_ASSERT_EQ(e.type, "service_reply");
  const std::string operation = e.str("operation");
  if (operation == "list_agents") {
    if (e.num("status", 0) == 200 && migrated_.erase(e.job) > 0) arm(e.job);
    return;
  }
  if ((operation != "get_issue" && operation != "assign") || e.item.empty()) return;
  const std::optional<bool> definitive = definitive_answer(e);
  if (!definitive) return;
  // An answer is recorded with an instance only in a cycle that has one; in
  // a cycle without one, a status that calls for a handoff backs the item
  // off (the handoff cannot be checked), so such an answer counts as one that
  // may leave it backing off. So does a transient answer to its handoff.
  pending_[e.job][e.item] = *definitive && list_answered;
}

// The cycle that learnt the new instance: the items it must ask.
void MigrationCheck::arm(const std::string& job) {
  // Armed once per migration: on_reply took the job out of migrated_.
  REHEARSE_ASSERT_EQ(migrated_.count(job), 0u);
  Cycle cycle;
  for (const std::string& issue : items_of_[job]) {
    const ItemRecord& r = records_[{job, issue}];
    if (r.answered && !r.backing_off && !r.terminal) cycle.required.insert(issue);
  }
  REHEARSE_ASSERT_LE(cycle.required.size(), items_of_[job].size());
  cycles_[job] = std::move(cycle);
}

void MigrationCheck::on_intent(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_intent");
  if (const auto cycle = cycles_.find(e.job); cycle != cycles_.end()) {
    // arm() requires only the job's own items.
    const auto items = items_of_.find(e.job);
    REHEARSE_ASSERT(items != items_of_.end());
    for (const std::string& issue : cycle->second.required) {
      REHEARSE_ASSERT_EQ(items->second.count(issue), 1u);
      if (cycle->second.asked.count(issue) != 0) continue;

      out.push_back({invariant_, i, e.t,
                     fmt::format("issue {} of job {} was not asked in the first cycle after the "
                                 "orchestrator reported a new instance (stored ids are checked "
                                 "first after a migration)",
                                 issue, e.job)});
    }
    cycles_.erase(cycle);
  }
  for (const auto& [issue, definitive] : pending_[e.job]) {
    ItemRecord& r = records_[{e.job, issue}];
    r.answered = r.answered || definitive;
    r.backing_off = !definitive;
  }
  pending_.erase(e.job);
}

void MigrationCheck::on_crash() {
  for (const auto& [job, answers] : pending_) {
    for (const auto& [issue, definitive] : answers) {
      if (!definitive) records_[{job, issue}].backing_off = true;
    }
  }
  pending_.clear();
  cycles_.clear();
}

}  // namespace rehearse::sim
