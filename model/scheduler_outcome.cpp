// A scheduler run and its outcome: the job's runner called, the retry
// machine's transition computed from the outcome, then the durable steps in
// their crash-safe order (intent on the queue entry, state write, queue
// finish with the retry, cancels and outbox), the notifications sent from
// the outbox, and the intent's encoding that a boot replays.
#include "model/scheduler.hpp"

#include <fmt/format.h>

#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/scheduler_detail.hpp"
#include "model/state_codec.hpp"

namespace rehearse {

using nlohmann::json;
using scheduler_detail::kOpFinish;
using scheduler_detail::kOpStallFail;
using scheduler_detail::kOpStallRerun;

namespace {

LogLevel level_of(NotificationEvent event) {
  switch (event) {
    case NotificationEvent::retry_scheduled: return LogLevel::warning;
    case NotificationEvent::recovered: return LogLevel::info;
    case NotificationEvent::retry_exhausted:
    case NotificationEvent::failed_permanent:
    case NotificationEvent::policy_invalid:
    case NotificationEvent::state_corrupt: return LogLevel::error;
  }
  return LogLevel::error;
}

Error intent_error(std::string message) {
  return make_error(ErrorCode::schema_error, std::move(message), "queue intent");
}

}  // namespace

Task<void> Scheduler::execute(QueueEntry entry) {
  const ScheduledJob& job = *find_job(entry.spec.job_id);
  const RunRef ref{entry.spec.slot, entry.spec.kind};
  const TimeMs started_at = clock_.now();
  if (!begin_run(job, entry, started_at)) co_return;
  ++runs_started_;
  const std::string budget = budget_name(job);
  // The start delay against the entry's ready time (for a regular run, its
  // slot): how long it queued behind other runs (concurrency) or downtime.
  log_.info("run_started", {{"job_id", job.id},
                            {"slot", format_instant(ref.slot)},
                            {"kind", to_string(ref.kind)},
                            {"attempt", entry.spec.attempt},
                            {"queue_id", entry.id},
                            {"ready_at", format_instant(entry.spec.ready_at)},
                            {"start_delay_ms", started_at - entry.spec.ready_at},
                            {"slot_lateness_ms", started_at - ref.slot}});
  RunContext context;
  context.job_id = job.id;
  context.slot = ref.slot;
  context.attempt = entry.spec.attempt;
  context.is_retry = ref.kind == RunKind::retry;
  RunOutcome outcome = co_await job.runner->run(context);
  if (halted()) co_return;
  const TimeMs finished_at = clock_.now();
  LogFields finished{{"job_id", job.id},
                     {"slot", format_instant(ref.slot)},
                     {"kind", to_string(ref.kind)},
                     {"attempt", entry.spec.attempt},
                     {"outcome", to_string(outcome.kind)},
                     {"duration_ms", finished_at - started_at}};
  if (outcome.failed()) {
    finished.push_back({"failure_class", to_string(outcome.failure_class)});
    finished.push_back({"error", outcome.error});
  }
  log_.write(outcome.failed() ? LogLevel::warning : LogLevel::info, "run_finished", finished);

  std::optional<TimeMs> retried_at;
  auto compute = [&]() {
    const TimeMs now = clock_.now();
    const JobState& before = state_of(job.id);
    const PolicyOrError& policy = effective_policy(job);
    const FailureContext failure{outcome.retry_after_ms,
                                 policy.ok() && !budget.empty() &&
                                     !budgets_.allows(policy->retry_budget, now)};
    Transition t = outcome.failed() ? on_run_failed(policy, before, ref, outcome.failure_class,
                                                    outcome.error, now, &random_, failure)
                                    : on_run_succeeded(policy, before, ref, now);
    retried_at = t.scheduled_retry ? std::optional<TimeMs>(now) : std::nullopt;
    Effects fx;
    fx.op = kOpFinish;
    fx.state = t.state;
    if (t.scheduled_retry) {
      const auto record = t.state.slots.find(t.scheduled_retry->slot);
      REHEARSE_ASSERT(record != t.state.slots.end());
      QueueEntrySpec retry;
      retry.job_id = job.id;
      retry.slot = t.scheduled_retry->slot;
      retry.kind = RunKind::retry;
      retry.attempt = record->second.retry_count + 1;
      retry.ready_at = t.scheduled_retry->at;
      fx.adds.push_back(retry);
    }
    for (const RetryRef& r : t.cancelled_retries) fx.cancels.push_back(RetryCancel{job.id, r.slot});
    fx.notifications = std::move(t.notifications);
    if (corrupt_) {
      for (Notification& n : fx.notifications) {
        if (n.event == NotificationEvent::failed_permanent) {
          n.detail = "state store corrupt: no retries are scheduled (fail closed)";
        }
      }
    }
    return fx;
  };
  std::vector<OutboxMessage> messages = commit_entry(entry, compute);
  if (halted()) co_return;
  // The budget counts a retry the queue now holds (none in fail-closed mode).
  if (retried_at && !corrupt_ && !budget.empty()) budgets_.note_retry(budget, *retried_at);
  // The job is free again once the queue has the outcome; its notifications
  // are sent after, so their latency does not hold the worker.
  busy_.erase(job.id);
  alarm_.notify();
  if (!messages.empty()) co_await send_outbox(std::move(messages));
}

// ---- durable plumbing -------------------------------------------------------

Status Scheduler::persist(const std::string& job_id, const JobState& next) {
  if (corrupt_) {
    set_state(job_id, next);  // in memory only: nothing replaces the corrupt file
    return {};
  }
  Status s = store_.update(job_id, [&next](JobState& stored) { stored = next; });
  report_store_damage();
  if (s.ok()) {
    set_state(job_id, next);
    return s;
  }
  if (s.error().code == ErrorCode::corrupt) {
    enter_corrupt_mode(s.error());
    return s;  // the caller recomputes fail-closed where it matters
  }
  halt(s.error());
  return s;
}

std::vector<OutboxMessage> Scheduler::commit_entry(const QueueEntry& entry,
                                                   const std::function<Effects()>& compute) {
  // Two rounds at most: the store may turn out corrupt at the state write,
  // and then the transition is recomputed fail-closed (no retry).
  for (int round = 0; round < 2; ++round) {
    Effects fx = compute();
    const bool write_state = !corrupt_;
    if (!write_state) {
      set_state(entry.spec.job_id, *fx.state);
      fx.state.reset();
      fx.adds.clear();
    }
    if (Status s = queue_.set_intent(entry.id, encode_intent(fx)); !s.ok()) {
      halt(s.error());
      return {};
    }
    if (write_state) {
      if (Status s = persist(entry.spec.job_id, *fx.state); !s.ok()) {
        if (corrupt_) continue;
        return {};  // halted
      }
    }
    return apply_effects(entry, fx);
  }
  REHEARSE_UNREACHABLE();
}

std::vector<OutboxMessage> Scheduler::apply_effects(const QueueEntry& entry,
                                                    const Effects& effects) {
  if (effects.op == kOpStallRerun) {
    if (Status s = queue_.requeue(entry.id); !s.ok()) halt(s.error());
    return {};
  }
  QueueFinish finish;
  if (!corrupt_) finish.adds = effects.adds;
  finish.cancels = effects.cancels;
  finish.outbox = outbox_messages(effects.notifications);
  std::vector<OutboxMessage> messages = finish.outbox;
  auto ids = queue_.finish(entry.id, std::move(finish));
  if (!ids.ok()) {
    halt(std::move(ids).error());
    return {};
  }
  REHEARSE_ASSERT_EQ(ids->size(), messages.size());  // the port's contract
  for (std::size_t i = 0; i < messages.size(); ++i) messages[i].id = (*ids)[i];
  // The retries this finish dropped are said as the other paths that drop
  // them say it: a reader of the log must see a pending retry end.
  for (const RetryCancel& c : effects.cancels) {
    log_.info("retry_superseded", {{"job_id", c.job_id},
                                   {"slot", format_instant(c.slot)},
                                   {"superseded_by", format_instant(entry.spec.slot)}});
  }
  for (const Notification& n : effects.notifications) log_notification(n);
  return messages;
}

std::vector<OutboxMessage> Scheduler::outbox_messages(
    const std::vector<Notification>& notifications) const {
  std::vector<OutboxMessage> out;
  for (const Notification& n : notifications) {
    std::vector<std::string> targets;
    const ScheduledJob* job = find_job(n.job_id);
    if (job != nullptr && !job->notify_target.empty()) {
      targets.push_back(job->notify_target);
    } else if (!options_.ops_target.empty()) {
      targets.push_back(options_.ops_target);
    } else {
      // Store-wide news with no ops target: every job's target hears it.
      std::set<std::string> all;
      for (const ScheduledJob& j : jobs_) {
        if (!j.notify_target.empty()) all.insert(j.notify_target);
      }
      targets.assign(all.begin(), all.end());
    }
    const std::string payload = to_json(n).dump();
    for (std::string& target : targets) out.push_back(OutboxMessage{0, std::move(target), payload});
  }
  return out;
}

std::vector<OutboxMessage> Scheduler::outbox_first(const std::vector<Notification>& notifications) {
  std::vector<OutboxMessage> messages = outbox_messages(notifications);
  for (OutboxMessage& m : messages) {
    auto id = queue_.outbox_add(m.target, m.payload);
    if (!id.ok()) {
      halt(std::move(id).error());
      return {};
    }
    m.id = *id;
  }
  return messages;
}

Task<void> Scheduler::send_outbox(std::vector<OutboxMessage> messages) {
  for (OutboxMessage& m : messages) {
    if (halted()) co_return;
    json payload = json::parse(m.payload, nullptr, /*allow_exceptions=*/false);
    if (payload.is_discarded()) payload = json::object();
    const std::string event = payload.contains("event") && payload.at("event").is_string()
                                  ? payload.at("event").get<std::string>()
                                  : "";
    const std::string job_id = payload.contains("job_id") && payload.at("job_id").is_string()
                                   ? payload.at("job_id").get<std::string>()
                                   : "";
    Status sent = co_await notifier_.send(m.target, std::move(payload));
    if (!sent.ok()) {
      // Logged, not retried: the state and the log keep the failure visible.
      log_.warning("notification_failed", {{"job_id", job_id},
                                           {"event", event},
                                           {"target", m.target},
                                           {"error", sent.error().describe()}});
    }
    if (halted()) co_return;
    auto removed = queue_.outbox_remove(m.id);
    if (!removed.ok()) {
      halt(std::move(removed).error());
      co_return;
    }
  }
}

void Scheduler::log_notification(const Notification& n) {
  LogFields fields{{"job_id", n.job_id},
                   {"failure_class",
                    n.failure_class ? json(to_string(*n.failure_class)) : json(nullptr)},
                   {"attempt", n.attempt},
                   {"next_action", to_string(n.next_action)},
                   {"at", format_instant(n.at)}};
  if (n.slot) fields.push_back({"slot", format_instant(*n.slot)});
  if (n.next_retry_at) fields.push_back({"next_retry_at", format_instant(*n.next_retry_at)});
  if (!n.detail.empty()) fields.push_back({"detail", n.detail});
  log_.write(level_of(n.event), to_string(n.event), fields);
}

void Scheduler::enter_corrupt_mode(const Error& why) {
  if (corrupt_) return;
  corrupt_ = true;
  if (corrupt_notified_) return;
  corrupt_notified_ = true;  // once per boot
  Notification n;
  n.event = NotificationEvent::state_corrupt;
  n.job_id = "";
  n.attempt = 0;
  n.next_action = NextAction::manual_review;
  n.at = clock_.now();
  n.detail = fmt::format("{}: {}", store_.dir(), why.describe());
  std::vector<OutboxMessage> messages = outbox_first({n});
  if (halted()) return;
  log_notification(n);
  deferred_outbox_.insert(deferred_outbox_.end(), messages.begin(), messages.end());
  alarm_.notify();
}

std::string Scheduler::encode_intent(const Effects& fx) const {
  json j = json::object();
  j["op"] = fx.op;
  j["state"] = fx.state ? encode_job(*fx.state) : json(nullptr);
  json adds = json::array();
  for (const QueueEntrySpec& a : fx.adds) {
    adds.push_back({{"job_id", a.job_id},
                    {"slot", a.slot},
                    {"kind", to_string(a.kind)},
                    {"attempt", a.attempt},
                    {"ready_at", a.ready_at}});
  }
  j["adds"] = std::move(adds);
  json cancels = json::array();
  for (const RetryCancel& c : fx.cancels)
    cancels.push_back({{"job_id", c.job_id}, {"slot", c.slot}});
  j["cancels"] = std::move(cancels);
  json notes = json::array();
  for (const Notification& n : fx.notifications) notes.push_back(to_json(n));
  j["notifications"] = std::move(notes);
  return j.dump();
}

Result<Scheduler::Effects> Scheduler::decode_intent(const std::string& text) const {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return intent_error("not a JSON object");
  Effects fx;
  if (!j.contains("op") || !j.at("op").is_string()) return intent_error("missing op");
  fx.op = j.at("op").get<std::string>();
  if (fx.op != kOpFinish && fx.op != kOpStallRerun && fx.op != kOpStallFail) {
    return intent_error("unknown op " + fx.op);
  }
  if (j.contains("state") && !j.at("state").is_null()) {
    auto state = decode_job(j.at("state"), "/state");
    if (!state.ok()) return std::move(state).error();
    fx.state = std::move(*state);
  }
  auto int_of = [](const json& o, const char* key) -> std::optional<std::int64_t> {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_number_integer()) return std::nullopt;
    return o.at(key).get<std::int64_t>();
  };
  auto str_of = [](const json& o, const char* key) -> std::optional<std::string> {
    if (!o.is_object() || !o.contains(key) || !o.at(key).is_string()) return std::nullopt;
    return o.at(key).get<std::string>();
  };
  if (j.contains("adds") && j.at("adds").is_array()) {
    for (const json& a : j.at("adds")) {
      const auto job_id = str_of(a, "job_id");
      const auto kind = str_of(a, "kind");
      const auto slot = int_of(a, "slot");
      const auto attempt = int_of(a, "attempt");
      const auto ready_at = int_of(a, "ready_at");
      if (!job_id || !kind || !slot || !attempt || !ready_at) return intent_error("bad add");
      QueueEntrySpec spec;
      spec.job_id = *job_id;
      spec.kind = *kind == "retry" ? RunKind::retry : RunKind::regular;
      spec.slot = *slot;
      spec.attempt = static_cast<int>(*attempt);
      spec.ready_at = *ready_at;
      fx.adds.push_back(std::move(spec));
    }
  }
  if (j.contains("cancels") && j.at("cancels").is_array()) {
    for (const json& c : j.at("cancels")) {
      const auto job_id = str_of(c, "job_id");
      const auto slot = int_of(c, "slot");
      if (!job_id || !slot) return intent_error("bad cancel");
      fx.cancels.push_back(RetryCancel{*job_id, *slot});
    }
  }
  if (j.contains("notifications") && j.at("notifications").is_array()) {
    for (const json& n : j.at("notifications")) {
      auto note = notification_from_json(n);
      if (!note.ok()) return std::move(note).error();
      fx.notifications.push_back(std::move(*note));
    }
  }
  return fx;
}

}  // namespace rehearse
