// item_queries_bounded (docs/semantics.md §8, §10): a reconcile item is never
// queried after its 404, and config attempts are at most hourly. Reads the
// orchestrator's calls and replies (`status`, `body_class`: the issue's
// status), the world's reading of the pipeline stores (`durable_stage`) and
// the orchestrator's agent and instance events:
// - after an orchestrator 404 for an item, any further orchestrator call for
//   it fires;
// - a reply refusing a request about an item (a 4xx but 404, 408, 410,
//   429: 400, 401, 403, 422, ...), or a
//   get_issue answer whose status needs a handoff to a later stage than the
//   item's durable one (own table: in_progress -> BUILDING, in_review ->
//   REVIEWING) while the lead agent (AGENT_LEAD_ID) is missing from the
//   agent list the job's cycle got answered (a list_agents 200 since its
//   last list_agents call: a list lost to a network error hides the missing
//   lead), is a config error; a get_issue for the item less than 1 h after
//   it fires. The item's first query after an `instance_changed` in a cycle
//   whose agent list was answered (the core learns the instance from it) is
//   allowed inside the hour: a validation, whose answer is no config attempt and
//   leaves the hour where it was (the core validates only an item it is not
//   due to try).
// - A lookup that may be a validation (the item's first answer from the
//   orchestrator instance: the store's first cycle, or the first after a
//   migration, in a cycle whose agent list was answered) validates every item,
//   due or not, and only a due one is tried: such a lookup's blocked handoff
//   is a config attempt only once the item's durable record after it carries
//   a reconcile error (the attempt's deferral on disk). Otherwise it was a
//   lookup, and the item's next answer is its attempt.
// - after a transient reply about an item (5xx, 408, 429, a transport
//   error), its next query waits the item's backoff: 1 min, doubling with each
//   transient failure in a row, at most 1 h (a crash forgets the count: the
//   backoff may not have been durable).
// The at-least-once window: a 404 or config error binds once the item's
// durable record was written after it (`durable_stage`); when the acting
// worker goes down before that, the answer may be lost with it, and the
// item may be asked again (docs/monitors.md).
// And after a migration, stored ids first (migration_check.hpp); the cap of
// an item's wait and the batch's order (item_schedule.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/item_schedule.hpp"
#include "sim/monitors/migration_check.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class ItemQueriesBounded final : public Monitor {
 public:
  static constexpr const char* kName = "item_queries_bounded";
  static constexpr const char* kSummary =
      "each reconcile item is asked about at most as often as its stage and backoff allow";
  static std::vector<std::string> reads() {
    return {"service_call",         "service_reply",    "durable_stage", "agent_removed",
            "agent_restored",       "instance_changed", "process_boot",  "process_crash",
            "disk_process_crashed", "disk_crash",       "disk_lock",     "queue_intent",
            "durable_schedule",     "job_file_damaged"};
  }

  ItemQueriesBounded(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // items.<id>.queries (get_issue calls) and .reason (the durable reconcile error).
  void tally(nlohmann::json& tallies) const override;

 private:
  struct ItemWatch {
    std::optional<TimeMs> not_found_at;
    std::int64_t gone_status = 404;  // the 404 or 410 that ended the item
    // From the orchestrator's own answers: the reply that showed a config
    // error (a refusal, or a handoff needed while the lead agent is missing).
    std::optional<TimeMs> config_error_at;
    // The item's durable record was written since that 404 / config error
    // (`durable_stage`): until then a crash may take the answer with it.
    bool not_found_durable = false;
    bool config_error_durable = false;
    // The orchestrator instance has not answered about the item yet (the
    // store's first cycle, or a migration since): its next query may be a
    // validation only.
    bool validation_allowed = true;
    // A definitive answer about the item reached a cycle that knew the
    // instance: the core holds a validated id for it. An item refused before
    // any such answer is not validated while its deferral runs.
    bool validated = false;
    bool validating = false;     // its last query was a validation inside a deferral
    bool may_be_lookup = false;  // its last query may be a validation (see the header)
    // A blocked handoff shown to a query that may be a lookup: a config
    // attempt once the item's durable record shows a reconcile error.
    std::optional<TimeMs> blocked_handoff_at;
    // Transient replies (5xx, 408, 429, transport errors) in a row about the
    // item, and the last one's instant: its backoff starts there.
    int transient_in_row = 0;
    TimeMs transient_at = 0;
    std::int64_t queries = 0;
    std::string reason;  // the item's durable reconcile error
  };

  void on_durable_stage(const TraceEvent& e);
  void check_transient_backoff(const TraceEvent& e, std::size_t i, const ItemWatch& w,
                               Violations& out) const;
  void check_config_attempts(const TraceEvent& e, std::size_t i, Violations& out);
  void on_item_query(const TraceEvent& e, std::size_t i, ItemWatch& w, Violations& out);
  void on_item_reply(const TraceEvent& e, ItemWatch& w);
  void check_after_not_found(const TraceEvent& e, std::size_t i, Violations& out);
  void forget_answers_not_yet_durable();

  MonitorContext& context_;

  std::map<std::string, ItemWatch> items_;
  std::map<std::string, std::string> stages_;  // item -> its durable stage
  std::string lead_prefix_;    // AGENT_LEAD_ID's first 8 characters (events carry those)
  bool lead_present_ = false;  // the lead agent is in the orchestrator's list now
  // job -> its last list_agents call was answered 200 (the core saw the list)
  std::map<std::string, bool> agent_list_answered_;
  MigrationCheck migration_;
  ItemSchedule schedule_;
};

}  // namespace rehearse::sim
