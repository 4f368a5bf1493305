// Part of item_queries_bounded (docs/semantics.md §8 "After a migration, check
// stored ids first"; docs/reconcile.md "One cycle"): the first cycle of a
// reconcile job that learns a new orchestrator instance (its `list_agents`
// answered 200 after an `instance_changed`) asks (`get_issue`) every item of
// the job whose record holds an earlier instance's answer, unless the item is
// terminal or backing off from a transient failure. Judged at the run's intent
// (`queue_intent`: every change of the cycle is on disk by then).
//
// What the record holds comes from the world's own facts, not the pipeline
// file's bookkeeping: a definitive answer about the item (a 2xx or a refusal
// to its get_issue or its handoff, in a cycle whose agent list was answered)
// is recorded once its run reached its intent with no crash between; a
// transient answer (5xx, 408, 429, a transport error), or any answer in a
// cycle without an agent list (a handoff it calls for backs off), may leave
// the item backing off until a definitive answer is recorded. A cycle cut by a crash is not judged
// (its validations may be on disk already), and a crash keeps a cut run's transient answers (the
// item may be backing off) but forgets its definitive ones (the item may not be).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "sim/monitors/monitor.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

class MigrationCheck {
 public:
  MigrationCheck(const char* invariant, const Scenario& scenario);

  // `list_answered`: the job's last list_agents was answered 200;
  // `went_down`: the event takes the acting worker down.
  void observe(const TraceEvent& e, std::size_t i, bool list_answered, bool went_down,
               Violations& out);

 private:
  using Key = std::pair<std::string, std::string>;  // (job, issue)
  struct ItemRecord {
    bool answered = false;  // an answer with the instance is on disk
    bool backing_off = false;
    bool terminal = false;
  };
  struct Cycle {
    std::set<std::string> required;
    std::set<std::string> asked;
  };

  void on_reply(const TraceEvent& e, bool list_answered);
  void on_intent(const TraceEvent& e, std::size_t i, Violations& out);
  void on_crash();
  void arm(const std::string& job);

  const char* invariant_;
  std::map<std::string, std::set<std::string>> items_of_;  // job -> its issues
  std::map<Key, ItemRecord> records_;
  // job -> its run's answers not yet recorded: issue -> definitive (true) or
  // transient (false), the last one
  std::map<std::string, std::map<std::string, bool>> pending_;
  std::set<std::string> migrated_;       // jobs whose next answered cycle meets a new instance
  std::map<std::string, Cycle> cycles_;  // job -> its first cycle on the new instance
};

}  // namespace rehearse::sim
