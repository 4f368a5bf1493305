#include "sim/monitors/run_facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

bool is_notification(const std::string& type) {
  const auto& names = notification_event_names();
  return std::find(names.begin(), names.end(), type) != names.end();
}

template <typename Run>
TraceEvent run_event(const Run& r, const char* type, TimeMs t) {
  TraceEvent x;
  x.t = t;
  x.type = type;
  x.job = r.job;
  x.slot = r.slot;
  x.data = {{"kind", r.kind}, {"attempt", r.attempt}};
  return x;
}

}  // namespace

std::string_view fact_source(std::string_view type) {
  if (type == "run_started") return "queue_take";
  if (type == "run_finished" || type == "retry_dropped") return "queue_done";
  if (type == "retry_superseded") return "queue_cancel";
  if (is_notification(std::string(type))) return "outbox_add";
  return type;
}

RunFacts::RunFacts(const ProcessTracker& process, const JobTable& jobs, const Scenario& scenario)
    : process_(process), jobs_(jobs) {
  for (const JobSpec& job : scenario.jobs) {
    if (job.kind == JobKind::fetch || job.kind == JobKind::call) reply_classified_.insert(job.id);
    if (job.kind == JobKind::reconcile) reconcile_jobs_.insert(job.id);
    if (job.kind == JobKind::publish) publish_jobs_.insert(job.id);
  }
  // A job has one kind: no job is in two of the sets.
  REHEARSE_ASSERT_LE(reply_classified_.size() + reconcile_jobs_.size() + publish_jobs_.size(),
                     scenario.jobs.size());
}

std::optional<Fact> RunFacts::settle_pending(const TraceEvent& e) {
  if (!pending_finish_) return std::nullopt;
  // Left by on_done for a run whose intent was written but no readable row.
  REHEARSE_ASSERT(pending_finish_->run.intent && !pending_finish_->run.wrote);
  // The finish's own cancels (a superseded retry) come before its notices:
  // the outcome is still to come.
  if (e.type == "queue_cancel" && e.job == pending_finish_->run.job) return std::nullopt;
  if (e.job == pending_finish_->run.job && !pending_finish_->failure_class) {
    const std::string event = e.type == "outbox_add" ? e.str("event") : std::string();
    const bool failure_notice =
        event == "retry_scheduled" || event == "retry_exhausted" || event == "failed_permanent";
    if (failure_notice) {
      pending_finish_->failure_class = e.str("failure_class", "unknown");
    } else if (e.type == "queue_add" && e.str("kind") == "retry") {
      pending_finish_->failure_class = "unknown";
    }
  }
  return flush_pending();
}

std::optional<Fact> RunFacts::flush_pending() {
  if (!pending_finish_) return std::nullopt;
  const PendingFinish p = *pending_finish_;
  // Left by on_done at the run's queue_done, after its take.
  REHEARSE_ASSERT_LT(p.run.take_index, p.index);
  pending_finish_.reset();
  TraceEvent done = run_event(p.run, "run_finished", p.t);
  done.data["outcome"] = p.failure_class ? "failure" : "success";
  if (p.failure_class) {
    done.data["failure_class"] = p.replies_class.empty() ? *p.failure_class : p.replies_class;
  }
  return Fact{std::move(done), p.index};
}

// The two fields of a job's durable facts a run's finish reads (each only
// when it is a string), instead of the whole facts document per job.
RunFacts::DurableRow RunFacts::durable_row_of(const json& facts) {
  DurableRow row;
  if (!facts.is_object()) return row;
  if (const auto it = facts.find("retry_status"); it != facts.end() && it->is_string()) {
    row.retry_status = it->get<std::string>();
  }
  if (const auto it = facts.find("failure_class"); it != facts.end() && it->is_string()) {
    row.failure_class = it->get<std::string>();
  }
  return row;
}

std::vector<Fact> RunFacts::runs_of(const TraceEvent& e, std::size_t i) {
  std::vector<Fact> out;
  if (e.type == "durable_job_state") {
    durable_rows_[e.job] = durable_row_of(e.data);
    for (auto& [id, r] : open_runs_) r.wrote = r.wrote || (r.intent && r.job == e.job);
  } else if (e.type == "service_reply") {
    replies_.observe(e);
    note_agent_list(e);
  } else if (e.type == "message_refused") {
    replies_.observe_refusal(e);
  } else if (e.type == "queue_take" && e.slot) {
    open_runs_[static_cast<std::uint64_t>(e.num("id"))] =
        OpenRun{e.job, *e.slot, e.str("kind"), e.num("attempt"), i, e.t, false};
    replies_.begin(e.job, *e.slot);
  } else if (e.type == "queue_intent") {
    const auto it = open_runs_.find(static_cast<std::uint64_t>(e.num("id")));
    if (it != open_runs_.end()) {
      // The run was opened by an earlier event (its queue_take).
      REHEARSE_ASSERT_LT(it->second.take_index, i);
      it->second.intent = true;

      it->second.intent_t = e.t;
    }
  } else if (e.type == "queue_done") {
    on_done(e, i, out);
  } else if (e.type == "queue_cancel" && e.slot) {
    const OpenRun cancelled{e.job, *e.slot, "retry", e.num("attempt")};
    out.push_back({run_event(cancelled, "retry_superseded", e.t), i});
  } else if (process_.takes_down(e)) {
    // A run cut before its intent never finishes; one with its intent
    // written is finished by the intent's replay at the next boot (its
    // queue_done), so it stays open.
    for (auto it = open_runs_.begin(); it != open_runs_.end();) {
      if (it->second.intent) {
        ++it;
        continue;
      }
      REHEARSE_ASSERT_LT(it->second.take_index, i);
      out.push_back(
          {run_event(it->second, "run_started", it->second.take_t), it->second.take_index});
      replies_.end(it->second.job, it->second.slot);
      it = open_runs_.erase(it);
    }
  }
  // A fact is about this event or an earlier one, never a later one.
  for (const Fact& fact : out) REHEARSE_ASSERT_LE(fact.index, i);
  return out;
}

void RunFacts::on_done(const TraceEvent& e, std::size_t i, std::vector<Fact>& out) {
  const auto it = open_runs_.find(static_cast<std::uint64_t>(e.num("id")));
  if (it == open_runs_.end()) return;
  const OpenRun r = it->second;
  open_runs_.erase(it);
  // The run was opened by an earlier event (its queue_take).
  REHEARSE_ASSERT_LT(r.take_index, i);
  const bool refused = process_.store_refused();
  if (r.intent && !r.wrote && (refused || process_.store_damaged())) {
    // The store refuses writes, or its files are damaged so that the world
    // cannot read the row the run wrote (a snapshot damaged behind the
    // running store, which follows its journal): the outcome is what the run's finish
    // carries (a failure notice, a retry), judged after it (settle_pending).
    out.push_back({run_event(r, "run_started", r.take_t), r.take_index});
    // MonitorSet settles the last finish before it reads the next event, and
    // a queue_done is no queue_cancel: nothing is pending here.
    REHEARSE_ASSERT(!pending_finish_.has_value());
    pending_finish_ = PendingFinish{r, i, e.t, std::nullopt, replies_class_of(r)};
  } else if (r.intent) {
    out.push_back({run_event(r, "run_started", r.take_t), r.take_index});
    // The run ended when its intent was written (the same instant, unless a
    // crash fell in between and the boot replayed it).
    TraceEvent done = run_event(r, "run_finished", r.intent_t);
    const auto row = durable_rows_.find(r.job);
    const DurableRow facts = row == durable_rows_.end() ? DurableRow{} : row->second;
    const bool ok = !facts.retry_status || *facts.retry_status == "ok";
    done.data["outcome"] = ok ? "success" : "failure";
    if (!ok) done.data["failure_class"] = failure_class_of(r, facts);
    // A fetch or call run whose own request's last answer was a failure has
    // failed, whatever its row says (nothing_lost judges the swallowed one);
    // so has a reconcile run whose agent list got no 200.
    const bool own_requests = reply_classified_.count(r.job) + publish_jobs_.count(r.job) != 0;
    if (ok && own_requests) {
      if (auto failed = replies_.own_request_failure(r.job, r.slot)) {
        done.data["request_failed"] = *failed;
      }
    } else if (ok && r.list_failure) {
      done.data["request_failed"] = *r.list_failure;
    }
    out.push_back({std::move(done), i});
  } else if (r.kind == "retry" && refused) {
    out.push_back({run_event(r, "retry_dropped", e.t), i});
  }
  replies_.end(r.job, r.slot);
}

// The class of a failed run (see the header): the replies' for a fetch or
// call job, the group rule's for a group run whose tasks failed, else the
// durable row's (`facts`).
std::string RunFacts::failure_class_of(const OpenRun& r, const DurableRow& facts) const {
  const std::string written = facts.failure_class.value_or("unknown");
  if (const auto group = group_class_of(r)) return *group;
  if (reconcile_jobs_.count(r.job) != 0) return r.list_failure.value_or("unknown");
  if (publish_jobs_.count(r.job) != 0) return publish_class_of(r);
  if (reply_classified_.count(r.job) == 0) return written;
  const std::vector<std::string> seen = replies_.failed_classes(r.job, r.slot);
  if (seen.empty()) return "unknown";
  return std::find(seen.begin(), seen.end(), written) != seen.end() ? written : seen.front();
}

std::string RunFacts::replies_class_of(const OpenRun& r) const {
  if (reply_classified_.count(r.job) + reconcile_jobs_.count(r.job) + publish_jobs_.count(r.job) !=
      0) {
    return failure_class_of(r, DurableRow{});
  }
  return group_class_of(r).value_or("");
}

// A failed publish run: its model-api request failed, or (its post in hand)
// the messenger refused the delivery, or its ledger failed it closed.
std::string RunFacts::publish_class_of(const OpenRun& r) const {
  // failure_class_of asks only for a publish job's run.
  REHEARSE_ASSERT_EQ(publish_jobs_.count(r.job), 1u);
  const std::vector<std::string> failed = replies_.failed_classes(r.job, r.slot);
  if (!failed.empty()) return failed.front();
  const std::vector<std::string> refused = replies_.group_tasks(r.job, r.slot).delivery_refusals;
  return refused.empty() ? "unknown" : refused.front();
}

// The agent list a reconcile run's cycle got (its job and slot headers): the
// last answer decides, a 200 clears an earlier failure.
void RunFacts::note_agent_list(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "service_reply");
  if (e.service != "orchestrator" || e.str("operation") != "list_agents" || !e.slot) return;
  for (auto& [id, r] : open_runs_) {
    if (r.job != e.job || r.slot != *e.slot || reconcile_jobs_.count(r.job) == 0) continue;
    r.list_failure = reply_failure_class(reply_facts_of(e));
  }
}

// A failed group run's class from its tasks' model-API replies, or, for a run
// that failed at the delivery (a task produced a deliverable, or a delivery
// resumed from the stored outbox), from the messenger's first refusal of it.
// nullopt (the row's class) for a job that is no group or whose policy the
// monitors do not read, and a run with neither a failed task nor a refused
// delivery (a damaged ledger). "Retryable" is the classes of the job's
// policy as the monitors read it, whatever its count (an invalid policy:
// §1's default classes, as the core does).
std::optional<std::string> RunFacts::group_class_of(const OpenRun& r) const {
  const MonitoredJob* job = jobs_.find(r.job);
  if (job == nullptr || job->tasks.empty() || !job->policy_judged) return std::nullopt;
  const bool scripted_deliverable =
      std::any_of(job->tasks.begin(), job->tasks.end(), [](const MonitoredJob::Task& t) {
        return t.model_calls == 0 && t.produces != "skip";
      });
  const GroupTaskReplies tasks = replies_.group_tasks(r.job, r.slot);
  const bool failed_at_delivery = scripted_deliverable || tasks.deliverable || tasks.failed.empty();
  if (failed_at_delivery && !tasks.delivery_refusals.empty()) {
    // The first refusal decides (docs/group-jobs.md), as the messenger worded it.
    return tasks.delivery_refusals.front();
  }
  if (scripted_deliverable || tasks.deliverable || tasks.failed.empty()) return std::nullopt;
  const WitnessPolicy& policy = job->policy;
  const std::string chosen = group_failure_class(tasks.failed, [&policy](const std::string& cls) {
    if (!policy.valid) return retried_by_default(cls);
    return policy.all_classes || policy.classes.count(cls) != 0;
  });
  // Some task failed: the rule picks one of their classes.
  REHEARSE_ASSERT(!chosen.empty());
  return chosen;
}

std::optional<TraceEvent> RunFacts::notification_of(const TraceEvent& e) {
  if (e.type != "outbox_add") return std::nullopt;
  const std::string event = e.str("event");
  if (!is_notification(event)) return std::nullopt;
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}", event, e.job, slot_text(e.slot), e.num("attempt"), e.str("at"));
  if (!notices_seen_.insert(key).second) return std::nullopt;
  TraceEvent n = e;
  n.type = event;
  // A notification's fact is read back from its outbox_add (fact_source).
  REHEARSE_ASSERT_EQ(fact_source(n.type), "outbox_add");
  n.service.clear();
  return n;
}

}  // namespace rehearse::sim
