#include "sim/monitors/retry_count.hpp"

#include <algorithm>

#include "model/assert.hpp"
#include "model/time.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

void RetryCount::rebase_after_blind_boot() {
  episode_surviving_.clear();
  slot_surviving_.clear();
  for (const auto& [id, config] : jobs_.all()) rebase_.insert(id);
  // Only the table's jobs ever await a rebase: now every one of them does.
  REHEARSE_ASSERT_EQ(rebase_.size(), jobs_.all().size());
}

namespace {

// A retry the record still has pending (scheduled, not finished): the boot
// runs it again as the same retry, so it is not one already started.
int pending_retry(const nlohmann::json& record) {
  const auto it = record.find("next_action");
  return it != record.end() && it->is_string() && it->get<std::string>() == "retry" ? 1 : 0;
}

}  // namespace

// The count the damaged store still holds for the job: the row the world
// read (nullptr: none before the job ran again, so nothing survived).
void RetryCount::rebase(const std::string& job, const TraceEvent* row) {
  rebase_.erase(job);
  const nlohmann::json* count = row == nullptr ? nullptr : field(*row, "retry_count");
  episode_scheduled_[job] = count != nullptr && count->is_number_integer() ? count->get<int>() : 0;
  episode_surviving_[job] =
      std::max(0, episode_scheduled_[job] - (row == nullptr ? 0 : pending_retry(row->data)));
  const nlohmann::json* slots = row == nullptr ? nullptr : field(*row, "slots");
  for (auto& [key, n] : slot_scheduled_) {
    if (key.first != job) continue;
    n = 0;
    int pending = 0;
    if (slots != nullptr && slots->is_object()) {
      for (const auto& [slot, record] : slots->items()) {
        const auto t = parse_instant(slot);
        if (t.ok() && *t == key.second && record.contains("retry_count") &&
            record["retry_count"].is_number_integer()) {
          n = record["retry_count"].get<int>();
          pending = pending_retry(record);
          rebase_rules(job, key.second, record);
        }
      }
    }
    slot_surviving_[key] = std::max(0, n - pending);
  }
  // Rebased once per blind boot; what survived is a count, never below zero
  // whatever the damaged row said.
  REHEARSE_ASSERT_EQ(rebase_.count(job), 0u);
  REHEARSE_ASSERT_GE(episode_surviving_[job], 0);
  const int held = std::max(0, episode_scheduled_[job]);
  REHEARSE_ASSERT_LE(episode_surviving_[job], held);
}

// Each retrier's count as the surviving record holds it (`rule_counts`).
void RetryCount::rebase_rules(const std::string& job, TimeMs slot, const nlohmann::json& record) {
  const auto it = record.find("rule_counts");
  for (auto& [key, n] : rule_scheduled_) {
    if (std::get<0>(key) != job || std::get<1>(key) != slot) continue;
    const std::size_t i = std::get<2>(key);
    const bool held =
        it != record.end() && it->is_array() && i < it->size() && (*it)[i].is_number_integer();
    n = held ? std::max(0, (*it)[i].get<int>()) : 0;
  }
}

int RetryCount::surviving(const std::string& job, TimeMs slot, bool per_slot) const {
  if (per_slot) {
    const auto it = slot_surviving_.find({job, slot});
    // rebase() keeps what survived at zero or more, whatever the row said.
    REHEARSE_ASSERT(it == slot_surviving_.end() || it->second >= 0);
    return it == slot_surviving_.end() ? 0 : it->second;
  }
  const auto it = episode_surviving_.find(job);
  REHEARSE_ASSERT(it == episode_surviving_.end() || it->second >= 0);
  return it == episode_surviving_.end() ? 0 : it->second;
}

void RetryCount::count_by_rule(const MonitoredJob& job, const TraceEvent& e) {
  const std::vector<WitnessRule>& rules = job.policy.rules;
  const WitnessRule* rule = job.policy.rule_of(e.str("failure_class"));
  if (rule == nullptr) return;
  const auto index = static_cast<std::size_t>(rule - rules.data());
  REHEARSE_ASSERT_LT(index, rules.size());
  ++rule_scheduled_[{e.job, *e.slot, index}];
}

int RetryCount::scheduled_by_rule(const std::string& job, TimeMs slot, std::size_t rule) const {
  const auto it = rule_scheduled_.find({job, slot, rule});
  return it == rule_scheduled_.end() ? 0 : it->second;
}

void RetryCount::observe(const TraceEvent& e) {
  const MonitoredJob* job = jobs_.find(e.job);
  if (job == nullptr) return;
  if (rebase_.count(e.job) != 0) {
    if (e.type == "durable_job_state") {
      rebase(e.job, &e);
      return;
    }
    if (e.type == "run_started" || e.type == "run_finished") rebase(e.job, nullptr);
  }
  if (!e.slot) return;
  const std::pair<std::string, TimeMs> key{e.job, *e.slot};
  if (e.type == "run_finished") {
    if (e.str("outcome") == "failure") {
      fresh_failure_.insert(e.job);
      fresh_slot_failure_.insert(key);
    } else {
      episode_scheduled_[e.job] = 0;  // the episode ends
    }
  } else if (e.type == "retry_scheduled") {
    const bool per_slot = job->policy.per_slot;
    const bool was_fresh =
        per_slot ? fresh_slot_failure_.erase(key) != 0 : fresh_failure_.erase(e.job) != 0;
    if (!was_fresh) return;  // a replayed intent announces the same retry again
    const int before = scheduled(e.job, *e.slot, per_slot);
    ++(per_slot ? slot_scheduled_[key] : episode_scheduled_[e.job]);
    count_by_rule(*job, e);
    // The count the monitors read is the one this retry added to.
    REHEARSE_ASSERT_EQ(scheduled(e.job, *e.slot, per_slot), before + 1);

    // A fresh failure is answered by one retry: it is no longer fresh.
    REHEARSE_ASSERT(!fresh(e.job, *e.slot, per_slot));
  } else if (e.type == "retry_exhausted" || e.type == "failed_permanent") {
    fresh_failure_.erase(e.job);
    fresh_slot_failure_.erase(key);
  }
}

bool RetryCount::fresh(const std::string& job, TimeMs slot, bool per_slot) const {
  return per_slot ? fresh_slot_failure_.count({job, slot}) != 0 : fresh_failure_.count(job) != 0;
}

int RetryCount::scheduled(const std::string& job, TimeMs slot, bool per_slot) const {
  if (per_slot) {
    const auto it = slot_scheduled_.find({job, slot});
    return it == slot_scheduled_.end() ? 0 : it->second;
  }
  const auto it = episode_scheduled_.find(job);
  return it == episode_scheduled_.end() ? 0 : it->second;
}

}  // namespace rehearse::sim
