// The jobs as the monitors read them from the scenario, once: the effective
// schedule (with its environment override) in the monitors' own cron matcher,
// the policy in their own reading, whether the job delivers, a group's tasks.
// Checks the monitors cannot make are listed here as unchecked (tallies()
// ["unchecked"]), never passed silently.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/monitors/witness_cron.hpp"
#include "sim/monitors/witness_policy.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

struct MonitoredJob {
  std::string id;
  // group and publish jobs: a successful run must have delivered (or marked
  // the slot skipped); a success without any delivery is a lost slot.
  bool delivers = false;
  WitnessPolicy policy;
  // False for a policy the monitors do not read (another system's form, an
  // "auto" on a schedule they cannot read): its retries are not judged.
  bool policy_judged = true;
  std::optional<WitnessCron> cron;
  // An environment override set but empty, or no valid cron by the
  // documented grammar (cron_grammar.hpp): a config error, never a fallback,
  // so the job has no schedule and must never run (schedule_kept fires on
  // any queue entry for it). `never_runs_why` says which.
  bool never_runs = false;
  std::string never_runs_why;
  // A group's tasks, as the scenario scripts them (nothing_lost's verdict).
  struct Task {
    std::string id;
    std::string produces;  // summary, preview, skip
    int model_calls = 1;
  };
  std::vector<Task> tasks;
  // The tracker keeps the job's slot-by-slot history (when each run started,
  // the notifications per slot: tallies()["jobs"][id]["slots"]) for a listed
  // job and for a fleet job whose expect names its slots; a fleet job's
  // finished slots are otherwise kept as compact records (SlotTracker).
  bool slot_history = true;
};

class JobTable {
 public:
  explicit JobTable(const Scenario& scenario);

  const MonitoredJob* find(const std::string& id) const;
  const std::map<std::string, MonitoredJob>& all() const noexcept { return jobs_; }
  // [{"invariant", "subject", "why"}] in scenario order.
  const nlohmann::json& unchecked() const noexcept { return unchecked_; }

 private:
  void unchecked(std::string invariant, std::string subject, std::string why);

  std::map<std::string, MonitoredJob> jobs_;
  nlohmann::json unchecked_ = nlohmann::json::array();
};

}  // namespace rehearse::sim
