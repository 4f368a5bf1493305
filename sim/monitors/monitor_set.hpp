// Invariant monitors (docs/semantics.md §10): independent witnesses.
//
// A monitor that asked the core whether the core was right would prove
// nothing, so these read only the trace (docs/trace-events.md lists every
// event they use; docs/monitors.md which monitor reads what) and judge with
// their own, simpler logic: a brute-force minute-by-minute cron matcher, a
// table of what each policy form allows, a record of sends, guard writes,
// replies and deferrals. Nothing here calls model/cron, model/retry_policy,
// model/retry_machine or classify.
//
// Layout (docs/monitors.md "Where each monitor lives"): one class per
// invariant under sim/monitors/ (the Monitor interface in monitor.hpp:
// observe, finish, tally; the registry in registry.cpp, in §10's order, from
// which invariant_names() and invariant_specs() follow), the shared trackers
// beside them (job_table, process_tracker, run_facts, slot_tracker,
// retry_count, call_counts; context.hpp bundles them) and the witnesses'
// own cron matcher and policy reading (witness_cron, witness_policy).
// MonitorSet, here, is the facade: it builds the shared trackers and one
// monitor per registry entry, routes each event only to the monitors whose
// `reads` contain its type (a derived fact by the type it is read from,
// fact_source()), keeps the trackers up to date after the monitors judged
// the event, collects the violations in the order of invariant_names() and
// merges the tallies.
//
// Use: MonitorSet set(scenario); set.add_secret(token) as tokens are issued;
// set.observe(event, index) for every recorded event in order (the first
// violation the event shows is returned); set.observe_text(...) for log lines
// and reports; set.finish(until) for the end checks; set.tallies() for the
// summary. A check the monitors cannot make (a cron syntax the matcher does
// not know, a policy form they do not read) is skipped loudly: it is listed
// under tallies()["unchecked"], never passed silently.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/deterministic.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/registry.hpp"
#include "sim/monitors/slot_tracker.hpp"
#include "sim/monitors/witness_cron.hpp"
#include "sim/monitors/witness_policy.hpp"
#include "sim/world/run_observer.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

struct MonitorContext;
class RunFacts;
class NoSecretLeak;
class StateDurable;

class MonitorSet final : public RunObserver {
 public:
  // Jobs, their schedule (+ env override), their retry_policy JSON.
  explicit MonitorSet(const Scenario& scenario);
  // The monitors of `registry` instead of monitor_registry() (tests: a
  // recording monitor checks what it is handed).
  MonitorSet(const Scenario& scenario, const std::vector<MonitorFactory>& registry);
  ~MonitorSet() override;
  MonitorSet(MonitorSet&&) noexcept;
  MonitorSet& operator=(MonitorSet&&) noexcept;

  // Token values as issued; full agent ids are added from the scenario.
  void add_secret(std::string value) override;
  // A directory the world keeps a locked store in (the state store, the
  // delivery ledger, a pipeline store): its files change only under a lock
  // taken in it (state_durable). Directories where a lock is taken are added
  // on their own.
  void add_locked_store(std::string dir) override;
  // Per event (call for every recorded event, in order). Returns the first
  // violation this event shows.
  std::optional<Violation> observe(const TraceEvent& event, std::size_t index) override;
  // Also checks free text that is not a trace event (log lines, the report) for secrets.
  std::optional<Violation> observe_text(std::string_view text, std::size_t index,
                                        TimeMs t) override;
  // (end) checks after the run stopped at `until` (nothing_lost, ...). In-flight
  // slots are not violations.
  std::vector<Violation> finish(TimeMs until_ms) override;
  // Counts the monitors gathered, for the summary table and expect checks
  // (slots delivered/skipped/failed/in flight, retries, exhausted,
  // notifications per event, runs, calls per job / per service, item
  // queries...). docs/monitors.md shows the shape.
  nlohmann::json tallies() const override;
  // tallies()["jobs"][job]["slots"]: [{slot, outcome, attempts, attempt_at,
  // notifications}] in time order (outcome: delivered, skipped, failed,
  // exhausted, in_flight, superseded, coalesced).
  nlohmann::json slot_list(const std::string& job) const;

  // Every violation seen so far (observe, observe_text and finish), in order.
  const std::vector<Violation>& violations() const noexcept override { return all_; }
  const WitnessPolicy* policy_of(const std::string& job) const;
  // Every slot the tracker knows, by (job, slot).
  std::vector<SlotRecord> slot_records() const;

 private:
  void dispatch(const TraceEvent& event, std::size_t index, Violations& out);
  std::optional<Violation> report(Violations out);

  std::unique_ptr<MonitorContext> context_;         // the shared trackers
  std::unique_ptr<RunFacts> facts_;                 // runs and notifications from world records
  std::vector<std::unique_ptr<Monitor>> monitors_;  // in registry order
  // Event type -> the monitors whose reads contain it, in registry order.
  std::map<std::string, std::vector<Monitor*>, std::less<>> routes_;
  std::vector<Monitor*> every_event_;  // reads "*": every event's JSON line
  // Every type some monitor or shared tracker reads; the rest reaches only
  // the "*" monitors.
  std::set<std::string, std::less<>> subscribed_;
  NoSecretLeak* secrets_ = nullptr;  // no_secret_leak, when registered
  StateDurable* locks_ = nullptr;    // state_durable, when registered
  std::vector<Violation> all_;
};

}  // namespace rehearse::sim
