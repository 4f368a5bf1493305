// no_duplicate_delivery (docs/semantics.md §5, §10): a slot's deliverable
// reaches each target once, but for the at-least-once window. Reads the
// messenger's deliveries (`message_delivered`), the delivery ledger as the
// world read it from the disk (`durable_delivery`), the queue's takes and
// runs' ends (run_facts.hpp), boots and crashes:
// - its own count per (job, slot, target): a second delivery is allowed only
//   once per crash that fell between a delivery and the moment the ledger
//   durably held it (counted in `duplicate_deliveries_in_window`);
// - a send guard or slot marker that became durable during a run that then
//   failed fires. Failure notices may repeat (`failure_notices`);
// - a model-api call for a slot the ledger durably marks complete (a
//   completed slot is never re-entered), or whose decided delivery the ledger
//   holds (a retry resends the stored outbox, it does not generate again).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class NoDuplicateDelivery final : public Monitor {
 public:
  static constexpr const char* kName = "no_duplicate_delivery";
  static constexpr const char* kSummary = "no target receives the same slot's delivery twice";
  static std::vector<std::string> reads() {
    return {"message_delivered", "durable_delivery",     "queue_take",   "queue_intent",
            "queue_done",        "durable_job_state",    "process_boot", "process_crash",
            "disk_lock",         "disk_process_crashed", "disk_crash",   "service_call"};
  }

  NoDuplicateDelivery(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // duplicate_deliveries_in_window, failure_notices.
  void tally(nlohmann::json& tallies) const override;

 private:
  struct SendWatch {  // per (job, slot, target)
    std::int64_t delivered = 0;
    bool window_open = false;
    std::int64_t window_cuts = 0;  // crashes inside the window: duplicates allowed
    std::int64_t duplicates_in_window = 0;
  };
  struct GuardWatch {      // per (job, slot)
    bool in_run = false;   // the current run consumed the guard or set the marker
    bool durable = false;  // the ledger durably holds the guard (or the marker)
    bool marked = false;   // the ledger durably holds the slot-complete marker
    bool outbox = false;   // the ledger durably holds the slot's decided delivery
  };

  void on_delivered(const TraceEvent& e, std::size_t i, Violations& out);
  void note_ledger(const TraceEvent& e);
  void check_not_reentered(const TraceEvent& e, std::size_t i, Violations& out) const;

  MonitorContext& context_;
  std::map<std::tuple<std::string, TimeMs, std::string>, SendWatch> sends_;
  std::map<std::pair<std::string, TimeMs>, GuardWatch> guards_;
  std::int64_t failure_notices_ = 0;
};

}  // namespace rehearse::sim
