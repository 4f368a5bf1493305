// Shared tracker: runs and notifications as facts of the world.
//
// A run is the queue's take of an entry (`queue_take`) until the queue
// finishes it (`queue_done`). The monitors see it as a `run_started` (at the
// take's index and time) and a `run_finished` when it finished with its
// intent written (`queue_intent`); the outcome is what the run left in the
// durable state store, as the world read it (`durable_job_state`: the job's
// row mirrors its last run; `ok` is a success, anything else a failure). The
// class of a failed fetch or call run is the monitors' own reading of the
// replies the world recorded during the run (`service_reply`, reply_class.hpp:
// when several requests failed, the row's class if it is one of theirs, else
// the first; none: unknown). That of a failed group run is the group rule
// (group_failure_class) over its tasks' model-API replies, where no task
// produced a deliverable and one failed; otherwise (a delivery refused, no
// task reply failed, a policy the monitors do not read) and for the other
// kinds, the row's `failure_class`. A reconcile run's class is that of its
// cycle's `list_agents` answer when the list got no 200 (docs/reconcile.md: the
// run fails with the list's class after visiting the items; a run whose row
// says ok then swallowed it, as a fetch run's failed request), else `unknown`
// (the only other way a cycle fails is its store; item failures never fail a
// run). A publish run's is its model-api request's when that failed, else
// the messenger's first refusal of its delivery (by the text rule), else
// `unknown` (its ledger: docs/group-jobs.md); a run whose row says ok after a
// failed model-api request swallowed it.
// While the store refuses writes the outcome is what the run's finish carries
// (a failure notice, a retry queued: a failure), judged at the next event. A retry taken and
// finished without an intent while the store refuses writes was dropped (`retry_dropped`); a run
// cut by a crash before its intent started and never finished; one cut after its intent is
// finished by that intent, which the next boot replays (docs/scheduler.md): its facts come at
// the replay's `queue_done`. A pending retry the queue cancels is superseded
// (`retry_superseded`). A notification is the message the core committed to send, as the outbox
// holds it (`outbox_add`), read once per notification, under its event's name. The core's own log
// lines of these names are not read.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"
#include "sim/monitors/process_tracker.hpp"
#include "sim/monitors/reply_class.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// The event type a monitor must read to be handed `type`: `type` itself for
// a raw event; for a fact derived here, the world record it is read from
// (run_started: queue_take; run_finished, retry_dropped: queue_done;
// retry_superseded: queue_cancel; a notification: outbox_add).
std::string_view fact_source(std::string_view type);

// A derived fact and the index of the event it stands for.
struct Fact {
  TraceEvent event;
  std::size_t index = 0;
};

class RunFacts {
 public:
  // `scenario`: its fetch and call jobs, whose failed runs are classified
  // from their replies (reply_class.hpp).
  // `jobs`: a group's tasks and policy (its failed runs' class).
  RunFacts(const ProcessTracker& process, const JobTable& jobs, const Scenario& scenario);

  // First, for every event: the finish of a run left pending by the previous
  // event, decided by this one (see above).
  std::optional<Fact> settle_pending(const TraceEvent& event);
  // At the end: the finish still pending, if any.
  std::optional<Fact> flush_pending();
  // The run facts an event of the queue (or a crash) shows, in order.
  std::vector<Fact> runs_of(const TraceEvent& event, std::size_t index);
  // The notification an `outbox_add` commits, the first time it is added.
  std::optional<TraceEvent> notification_of(const TraceEvent& event);

 private:
  struct OpenRun {
    std::string job;
    TimeMs slot = 0;
    std::string kind;
    std::int64_t attempt = 0;
    std::size_t take_index = 0;
    TimeMs take_t = 0;
    bool intent = false;
    TimeMs intent_t = 0;  // when the intent was written: the run's end
    // The job's durable state changed after the intent: the run's own final
    // row (a row at its take, the retry taken, says nothing of its outcome).
    bool wrote = false;
    // A reconcile run: the class of its last `list_agents` answer when that
    // was no success (nullopt: none, or a 200).
    std::optional<std::string> list_failure = std::nullopt;
  };
  struct PendingFinish {
    OpenRun run;
    std::size_t index = 0;
    TimeMs t = 0;
    std::optional<std::string> failure_class;  // set: a failure
    std::string replies_class;  // a fetch or call run's class of its replies ("" none)
  };
  struct DurableRow {
    std::optional<std::string> retry_status;
    std::optional<std::string> failure_class;
  };
  static DurableRow durable_row_of(const nlohmann::json& facts);
  void on_done(const TraceEvent& e, std::size_t i, std::vector<Fact>& out);
  std::string failure_class_of(const OpenRun& run, const DurableRow& facts) const;
  std::optional<std::string> group_class_of(const OpenRun& run) const;
  std::string publish_class_of(const OpenRun& run) const;
  void note_agent_list(const TraceEvent& service_reply);
  // The class the world's replies give a failed run of `run`'s job ("" when
  // its kind takes the row's): its replies', its group rule's or its list's.
  std::string replies_class_of(const OpenRun& run) const;

  const ProcessTracker& process_;
  const JobTable& jobs_;
  std::optional<PendingFinish> pending_finish_;
  std::map<std::uint64_t, OpenRun> open_runs_;      // by queue entry id
  std::map<std::string, DurableRow> durable_rows_;  // job -> its durable row
  RunReplies replies_;                              // the replies of the runs in progress
  std::set<std::string> reply_classified_;          // fetch and call jobs
  std::set<std::string> reconcile_jobs_;
  std::set<std::string> publish_jobs_;
  std::set<std::string> notices_seen_;
};

}  // namespace rehearse::sim
