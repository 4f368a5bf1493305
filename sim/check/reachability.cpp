#include "sim/check/reachability.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "model/assert.hpp"
#include "model/failure.hpp"
#include "model/time_zone.hpp"
#include "model/worker_lock.hpp"
#include "sim/monitors/handoff_roles.hpp"
#include "sim/monitors/reply_class.hpp"
#include "sim/monitors/stage_rank.hpp"
#include "sim/monitors/witness_systems.hpp"
#include "sim/world/fault_kinds.hpp"

namespace rehearse::sim {

namespace {

// The situations, each read from the world's records by the observer below.
const std::vector<ReachabilityPoint>& situations() {
  static const std::vector<ReachabilityPoint> kPoints{
      {"retry:capped", "a retry queued at its policy's cap, the uncapped curve being longer"},
      {"retry:jittered", "a retry queued off its curve by the policy's jitter"},
      {"retry:exhausted", "a budget spent: the outbox received retry_exhausted"},
      {"retry:failed_permanent", "a failure not retried: the outbox received failed_permanent"},
      {"retry:recovered", "a slot recovered by a retry: the outbox received recovered"},
      {"retry:superseded", "a pending retry cancelled by the next regular slot (queue_cancel)"},
      {"slot:coalesced", "a late run folded missed firings (the durable row's coalesced slots)"},
      {"slot:stalled", "a run cut by a crash ran again (a durable slot record's stalled_count)"},
      {"schedule:zoned", "a job whose schedule is read in a time zone ran to its end (queue_done)"},
      {"policy:deadline", "a retry queued for a job whose policy has a deadline"},
      {"retry:deadline_ended",
       "a chain without a count limit ended by its deadline (the outbox received "
       "retry_exhausted)"},
      {"policy:retriers", "a retry queued for a job whose policy has several retriers"},
      {"policy:retry_in", "a retry queued for a job whose Sidekiq policy has a retry_in block"},
      {"policy:retry_after",
       "a retry queued for a job whose policy honours Retry-After, after a refusal that "
       "carried one (service_reply)"},
      {"policy:retry_budget", "a retry queued for a job whose policy names a retry budget"},
      {"policy:decorrelated_jitter",
       "a later retry (the second or after) queued for a job whose policy draws decorrelated "
       "jitter"},
      {"service:capacity_refused", "a service refused a request beyond its rate limit"},
      {"policy:native_text",
       "a retry queued for a job whose policy the scenario gave as its system's own text"},
      {"dst:gap",
       "a zoned job handed out a slot on the local day of a spring-forward transition of its "
       "zone inside the span"},
      {"dst:fold",
       "a zoned job handed out a slot on the local day of a fall-back transition of its zone "
       "inside the span"},
      {"reconcile:batch_left_items",
       "a reconcile run with batch_size left a non-terminal item unasked for the next cycle"},
      {"reconcile:item_waiting",
       "an item's durable record holds a reconcile error (backoff or "
       "config deferral)"},
      {"reconcile:item_closed", "an item closed as DESIGN_FAILED (its issue gone)"},
      {"reconcile:issue_gone_410", "the orchestrator answered 410 Gone about an item"},
      {"reconcile:backoff_at_cap",
       "an item's seventh transient failure in a row: its backoff at the 1 h cap"},
      {"reconcile:validated_after_migration",
       "an item asked in the first cycle whose agent list showed a new orchestrator instance"},
      {"reconcile:legacy_role_handoff",
       "a handoff accepted while the lead or the receiving agent was listed under a legacy "
       "role name"},
      {"reconcile:role_refused",
       "an item's durable record holds a reconcile error while the lead or another named "
       "agent is listed under a role name that is not theirs"},
      {"worker:restart", "a worker process booted again after a crash"},
      {"queue:disk_reopened", "a worker reopened the durable disk queue after a crash"},
      {"worker:takeover", "another process took the worker lock of the state directory"},
      {"worker:takeover_retry_pending", "a takeover while a retry waited in the queue"},
      {"token:refresh", "a token reissued before its expiry"},
      {"token:reissue_after_401", "a token reissued after a request's first 401"},
      {"token:slow_issuer", "a token issued by an issuer a second or more slow"},
      {"store:corrupt_reported", "a damaged store reported: the outbox received state_corrupt"},
      {"store:torn_tail_kept", "a torn journal tail kept as a durable copy"},
      {"messenger:refused", "the messenger refused a send"},
  };
  return kPoints;
}

std::vector<std::string> policy_forms() {
  std::vector<std::string> forms{"per_job", "bullmq", "auto"};
  for (const WitnessSystem& s : witness_systems()) {
    if (s.name != "bullmq") forms.emplace_back(s.name);
  }
  return forms;
}

std::vector<ReachabilityPoint> all_points() {
  std::vector<ReachabilityPoint> out = situations();
  for (const JobKind kind : all_job_kinds()) {
    out.push_back({fmt::format("job:{}", to_string(kind)),
                   fmt::format("a {} job ran to its end (queue_done)", to_string(kind))});
  }
  for (const std::string& form : policy_forms()) {
    out.push_back({"policy:" + form,
                   fmt::format("a retry queued for a job whose policy is in the {} form", form)});
  }
  out.push_back(
      {"policy:invalid", "a job whose policy the core refuses announced it (policy_invalid)"});
  for (const FaultKindSpec& kind : fault_kinds()) {
    out.push_back({fmt::format("fault:{}", kind.name),
                   fmt::format("a {} fault took effect (fault_start)", kind.name)});
  }
  for (std::size_t i = 0; i < kFailureClassCount; ++i) {
    const char* name = to_string(static_cast<FailureClass>(i));
    out.push_back({fmt::format("class:{}", name),
                   fmt::format("a job's durable row recorded a {} failure", name)});
  }
  // Point names are keys (reached() looks them up, coverage reports them): each once.
  std::vector<std::string> names;
  for (const ReachabilityPoint& p : out) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  REHEARSE_ASSERT(std::adjacent_find(names.begin(), names.end()) == names.end());
  return out;
}

const nlohmann::json* field(const TraceEvent& e, const char* key) {
  const auto it = e.data.find(key);
  return it == e.data.end() ? nullptr : &*it;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The local midnight at or before local reading `local` (ms since 1970 as
// if it were UTC).
TimeMs local_midnight(TimeMs local) {
  const TimeMs into_day = ((local % kDayMs) + kDayMs) % kDayMs;
  return local - into_day;
}

}  // namespace

const std::vector<ReachabilityPoint>& reachability_points() {
  static const std::vector<ReachabilityPoint> kAll = all_points();
  return kAll;
}

ReachabilityObserver::ReachabilityObserver(const Scenario& scenario)
    : scenario_(scenario), jobs_(scenario) {
  for (const JobSpec& job : scenario.jobs) {
    for (const ReconcileItem& item : job.items) stages_[item.issue] = item.stage;
  }
  note_listed_roles();
  note_transition_days();
}

// For each job whose effective schedule is read in a zone (its `tz` or a
// CRON_TZ= prefix, as the monitors read it), the local days of its zone's
// changes of offset in (start, until]: from the local midnight before the
// readings the change skips or repeats (under the old offset) to the next
// one (under the new).
void ReachabilityObserver::note_transition_days() {
  for (const auto& [id, job] : jobs_.all()) {
    if (!job.cron || job.cron->zone_name().empty()) continue;
    const auto zone = TimeZone::locate(job.cron->zone_name());
    if (!zone) continue;  // the monitors' matcher read it; the model's database lacks it
    std::vector<TransitionDay>& days = transition_days_[id];
    TimeMs t = scenario_.start_ms;
    while (const auto turn = zone->next_transition(t, scenario_.until_ms)) {
      // The day of the first reading the change skips (a gap) or repeats (a fold).
      const TimeMs midnight =
          local_midnight(turn->at + std::min(turn->offset_before, turn->offset_after));
      days.push_back({midnight - turn->offset_before, midnight + kDayMs - turn->offset_after,
                      turn->offset_after > turn->offset_before});
      // The day holds its transition (at its end for a gap that ends at midnight).
      REHEARSE_ASSERT(days.back().begin <= turn->at && turn->at <= days.back().end);
      t = turn->at;
    }
  }
}

// A regular slot handed out by a zoned job on the day of one of its zone's
// transitions.
void ReachabilityObserver::on_regular_slot(const TraceEvent& e) {
  REHEARSE_ASSERT(e.type == "queue_add" && e.slot.has_value());
  const auto days = transition_days_.find(e.job);
  if (days == transition_days_.end()) return;
  for (const TransitionDay& day : days->second) {
    if (*e.slot >= day.begin && *e.slot < day.end) reach(day.gap ? "dst:gap" : "dst:fold");
  }
}

// The agents listed under a legacy role name, and whether an agent the
// environment names for a role is listed under a name that maps elsewhere
// (the monitors' own table of role names).
void ReachabilityObserver::note_listed_roles() {
  if (!scenario_.services.orchestrator) return;
  for (const OrchestratorAgent& agent : scenario_.services.orchestrator->agents) {
    const std::optional<std::string> role = witness_role_of(agent.role);
    const bool legacy = role && *role != agent.role;
    if (legacy) legacy_agents_.insert(agent.id.substr(0, 8));
    const std::optional<std::string> named = env_role_of(scenario_, agent.id);
    if (named && role != named) roles_mixed_ = true;
    if (legacy && named == "lead") lead_legacy_ = true;
  }
  // A lead listed under a legacy name is one of the legacy agents.
  REHEARSE_ASSERT(!lead_legacy_ || !legacy_agents_.empty());
}

void ReachabilityObserver::observe(const TraceEvent& e) {
  if (e.source != EventSource::world) return;
  const std::string& t = e.type;
  if (t.rfind("queue_", 0) == 0) on_queue(e);
  if (t == "outbox_add") {
    const std::string event = e.str("event");
    if (event == "retry_exhausted") reach("retry:exhausted");
    if (event == "retry_exhausted") on_exhausted(e);
    if (event == "failed_permanent") reach("retry:failed_permanent");
    if (event == "recovered") reach("retry:recovered");
    if (event == "state_corrupt") reach("store:corrupt_reported");
    if (event == "policy_invalid") reach("policy:invalid");
  } else if (t == "fault_start") {
    reach("fault:" + e.str("kind"));
  } else if (t == "durable_job_state") {
    on_durable(e);
  } else if (t == "durable_stage" || t == "service_call" || t == "service_reply" ||
             t == "instance_changed") {
    if (t == "service_reply") on_reply(e);
    on_reconcile(e);
  } else if (t == "issue_assigned" && (lead_legacy_ || legacy_agents_.count(e.str("agent")) != 0)) {
    reach("reconcile:legacy_role_handoff");
  } else if (t == "process_boot" && e.num("boots") >= 2) {
    reach("worker:restart");
  } else if (t == "queue_reopened" && booted_once_) {
    reach("queue:disk_reopened");
  } else if (t == "queue_reopened") {
    booted_once_ = true;
  } else if (t == "disk_lock") {
    on_worker_lock(e);
  } else if (t == "token_issued") {
    const std::string reason = e.str("reason");
    if (reason == "refresh") reach("token:refresh");
    if (reason == "after_401") reach("token:reissue_after_401");
    const auto& b = scenario_.services.brokerage;
    if (b && b->issue_latency_ms.value_or(b->timing.latency_ms) >= kSecondMs) {
      reach("token:slow_issuer");
    }
  } else if (t == "journal_tail_kept") {
    reach("store:torn_tail_kept");
  } else if (t == "message_refused") {
    reach("messenger:refused");
  }
}

void ReachabilityObserver::on_queue(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type.rfind("queue_", 0), 0u);  // observe routes queue_* here
  const auto id = static_cast<std::uint64_t>(e.num("id"));
  if (e.type == "queue_add" && e.str("kind") == "retry" && e.flag("added")) {
    waiting_retries_.insert(id);
    on_retry_added(e);
    return;
  }
  if (e.type == "queue_take" || e.type == "queue_cancel" || e.type == "queue_done") {
    waiting_retries_.erase(id);
  }
  if (e.type == "queue_cancel") reach("retry:superseded");
  if (e.type == "queue_add" && e.str("kind") == "regular" && e.slot) on_regular_slot(e);
  const JobSpec* job = scenario_.find_job(e.job);
  if (job == nullptr) return;
  if (e.type == "queue_done") reach(fmt::format("job:{}", to_string(job->kind)));
  const MonitoredJob* read = jobs_.find(e.job);
  if (e.type == "queue_done" && read != nullptr && read->cron && !read->cron->zone_name().empty()) {
    reach("schedule:zoned");
  }
  if (job->kind != JobKind::reconcile || !job->batch_size) return;
  if (e.type == "queue_take") reconcile_runs_[e.job] = ReconcileRun{};
  if (e.type != "queue_done") return;
  const auto run = reconcile_runs_.find(e.job);
  if (run == reconcile_runs_.end()) return;
  for (const ReconcileItem& item : job->items) {
    if (!terminal_stage(stages_[item.issue]) && run->second.asked.count(item.issue) == 0) {
      reach("reconcile:batch_left_items");
    }
  }
  reconcile_runs_.erase(run);
}

// The number of the retry a queue_add announces: per (job, slot) under
// per_slot, per job since its last `ok` row under per_episode.
int ReachabilityObserver::retry_number(const TraceEvent& e, const WitnessPolicy& policy) {
  const int n = policy.per_slot ? ++per_slot_[{e.job, e.slot.value_or(0)}] : ++per_episode_[e.job];
  REHEARSE_ASSERT_GE(n, 1);  // retries are numbered from 1
  return n;
}

// Deadlines, several retriers, Sidekiq blocks and text read by the loader.
void ReachabilityObserver::note_policy_shape(const TraceEvent& e, const WitnessPolicy& p) {
  if (p.deadline_ms > 0) reach("policy:deadline");
  if (!p.rules.empty()) reach("policy:retriers");
  if (p.honors_retry_after && last_retry_after_[e.job]) reach("policy:retry_after");
  if (!p.budget.name.empty()) reach("policy:retry_budget");
  if (p.delays.jitter == WitnessDelays::Jitter::decorrelated && retry_number(e, p) > 1) {
    reach("policy:decorrelated_jitter");
  }
  if (p.delays.curve == WitnessDelays::Curve::block) reach("policy:retry_in");
  const JobSpec* spec = scenario_.find_job(e.job);
  if (spec != nullptr && spec->policy_from_text) reach("policy:native_text");
}

void ReachabilityObserver::on_exhausted(const TraceEvent& e) {
  const MonitoredJob* job = jobs_.find(e.job);
  if (job == nullptr || !job->policy.valid) return;
  if (job->policy.deadline_ms > 0 && job->policy.retries_max == kWitnessUnlimited) {
    reach("retry:deadline_ended");
  }
}

// Capacity's refusals, and the Retry-After each job's last reply carried. (A
// request timed out in line needs runs that overlap, which a generated
// world's one acting worker does not make: the unit and CLI tests show it.)
void ReachabilityObserver::on_reply(const TraceEvent& e) {
  const std::string capacity = e.str("capacity");
  if (capacity == "refused") reach("service:capacity_refused");
  if (!e.job.empty()) last_retry_after_[e.job] = !e.str("retry_after").empty();
}

void ReachabilityObserver::on_retry_added(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "queue_add");
  const MonitoredJob* job = jobs_.find(e.job);
  if (job == nullptr || !job->policy.valid) return;
  const WitnessPolicy& p = job->policy;
  reach("policy:" + p.form);
  note_policy_shape(e, p);
  const int n = retry_number(e, p);
  const auto ready = parse_instant(e.str("ready_at"));
  if (!ready) return;
  const DurationMs delay = *ready - e.t;
  const DurationMs base = p.base_delay_ms(n);
  if (p.delays.cap_ms) {
    WitnessDelays uncapped = p.delays;
    uncapped.cap_ms.reset();
    if (uncapped.base_ms(n) > *p.delays.cap_ms && delay >= p.min_delay_ms(n)) {
      reach("retry:capped");
    }
  }
  if (p.delays.jitter != WitnessDelays::Jitter::none && std::llabs(delay - base) > 1) {
    reach("retry:jittered");
  }
}

void ReachabilityObserver::on_durable(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "durable_job_state");
  const std::string cls = e.str("failure_class");
  if (!cls.empty()) reach("class:" + cls);
  if (e.str("retry_status") == "ok") per_episode_.erase(e.job);
  const nlohmann::json* coalesced = field(e, "coalesced_slots");
  const bool folded = coalesced != nullptr &&
                      ((coalesced->is_array() && !coalesced->empty()) ||
                       (coalesced->is_number_integer() && coalesced->get<std::int64_t>() > 0));
  if (folded) reach("slot:coalesced");
  const nlohmann::json* slots = field(e, "slots");
  if (slots == nullptr || !slots->is_object()) return;
  for (const auto& [slot, record] : slots->items()) {
    if (record.is_object() && record.value("stalled_count", 0) > 0) reach("slot:stalled");
  }
}

void ReachabilityObserver::on_reconcile(const TraceEvent& e) {
  // observe routes only these types here.
  REHEARSE_ASSERT(e.type == "durable_stage" || e.type == "service_call" ||
                  e.type == "service_reply" || e.type == "instance_changed");
  if (e.type == "instance_changed") {
    for (const JobSpec& job : scenario_.jobs) {
      if (job.kind == JobKind::reconcile) migrated_.insert(job.id);
    }
    return;
  }
  if (e.str("operation") == "list_agents") {
    // The first cycle on a new instance runs from its list's answer to the
    // job's next list call.
    if (e.type == "service_call") first_cycle_.erase(e.job);
    if (e.type == "service_reply" && e.num("status", 0) == 200 && migrated_.erase(e.job) > 0) {
      first_cycle_.insert(e.job);
    }
    return;
  }
  if (e.type == "service_reply") {
    on_item_reply(e);
    return;
  }
  if (e.type == "service_call") {
    if (first_cycle_.count(e.job) != 0 && e.str("operation") == "get_issue") {
      reach("reconcile:validated_after_migration");
    }
    const auto run = reconcile_runs_.find(e.job);
    if (run != reconcile_runs_.end() && e.str("operation") == "get_issue") {
      run->second.asked.insert(e.item);
    }
    return;
  }
  const std::string stage = e.str("stage");
  stages_[e.item] = stage;
  if (stage == "DESIGN_FAILED") reach("reconcile:item_closed");
  if (!terminal_stage(stage) && !e.str("error").empty()) reach("reconcile:item_waiting");
  if (!terminal_stage(stage) && !e.str("error").empty() && roles_mixed_) {
    reach("reconcile:role_refused");
  }
}

// The orchestrator's answer about an item: a 410, and a run of transient
// answers long enough for the backoff's cap (1, 2, 4 ... 32 min, then 1 h).
void ReachabilityObserver::on_item_reply(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "service_reply");
  if (e.item.empty() || e.service != "orchestrator") return;
  const std::int64_t status = e.num("status", 0);
  if (status == 410) reach("reconcile:issue_gone_410");
  const bool transient = item_answer(e) == ItemAnswer::transient;
  int& in_row = transient_in_row_[e.item];
  in_row = transient ? in_row + 1 : 0;
  if (in_row >= 7) reach("reconcile:backoff_at_cap");
}

void ReachabilityObserver::on_worker_lock(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "disk_lock");
  if (!ends_with(e.str("path"), std::string("/") + kWorkerLockName)) return;
  const std::string holder = e.data.contains("process") ? e.data.at("process").dump() : "";
  if (lock_holder_ && *lock_holder_ != holder) {
    reach("worker:takeover");
    if (!waiting_retries_.empty()) reach("worker:takeover_retry_pending");
  }
  lock_holder_ = holder;
}

std::vector<std::string> ReachabilityObserver::reached() const {
  std::vector<std::string> out;
  for (const ReachabilityPoint& p : reachability_points()) {
    if (reached_.count(p.name) != 0) out.push_back(p.name);
  }
  REHEARSE_ASSERT_LE(out.size(), reached_.size());
  return out;
}

}  // namespace rehearse::sim
