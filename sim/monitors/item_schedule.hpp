// Part of item_queries_bounded (docs/semantics.md §8; docs/reconcile.md "One
// cycle" and "Decisions"): when a reconcile item is next tried, judged from
// the pipeline store's durable bytes as the world reads them
// (`durable_schedule`: the item's `next_attempt_at` and `updated_at`;
// `durable_stage`) and the orchestrator's calls and replies:
// - the cap: an item's durable next attempt is at most 1 h after the
//   orchestrator's last answer about it (the longest transient backoff and
//   the config deferral are both 1 h, counted from the answer);
// - the batch: a cycle of a job (from its `list_agents` answer, the instant
//   the core picks its due items, to its run's `queue_intent`) asks every item
//   the durable file showed due then (non-terminal, next attempt at or before
//   that instant), unless `batch_size` items were asked in the cycle that had
//   been visited no later than it (least recently visited first: earliest
//   `updated_at`). A cycle cut by a crash, and a job whose pipeline file the
//   world damaged, are not judged.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "model/time.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/monitors/wall_clock.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

class ItemSchedule {
 public:
  // `clock`: the machine's clock, on which the core's item times are read.
  ItemSchedule(const char* invariant, const Scenario& scenario, const WallClockTable& clock);

  // `went_down`: the event takes the acting worker down.
  void observe(const TraceEvent& e, std::size_t i, bool went_down, Violations& out);

 private:
  using Key = std::pair<std::string, std::string>;  // (job, issue)
  struct Durable {
    std::optional<TimeMs> next_attempt_at;
    std::optional<TimeMs> updated_at;
    bool terminal = false;
  };
  struct Cycle {
    TimeMs at = 0;  // the list_agents answer: when the core picks the due items
    std::map<std::string, Durable> items;  // issue -> its durable record then
    std::set<std::string> asked;
  };

  void on_schedule(const TraceEvent& e, std::size_t i, Violations& out);
  void open_cycle(const std::string& job, TimeMs at);
  void judge_cycle(const TraceEvent& e, std::size_t i, Violations& out);
  std::size_t asked_no_later(const Cycle& cycle, const Durable& item) const;

  const char* invariant_;
  const WallClockTable& clock_;
  std::map<std::string, std::optional<int>> batch_size_;  // reconcile job -> its batch_size
  std::set<std::string> damaged_;                         // jobs whose pipeline file was damaged
  std::map<Key, Durable> durable_;
  std::map<std::string, TimeMs> last_answer_;  // issue -> the orchestrator's last reply about it
  std::map<std::string, Cycle> cycles_;        // job -> its open cycle
};

}  // namespace rehearse::sim
