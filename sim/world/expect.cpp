#include "sim/world/expect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "model/assert.hpp"
#include "model/job_state.hpp"
#include "model/notification.hpp"
#include "model/retry_policy.hpp"
#include "model/state_codec.hpp"
#include "model/worker.hpp"
#include "sim/world/service_load.hpp"
#include "sim/world/world_runners.hpp"

namespace rehearse::sim {

using nlohmann::json;

std::string ExpectFailure::describe() const {
  REHEARSE_ASSERT(!pointer.empty());  // every failure names where in the scenario it is
  return fmt::format("expect {}: expected {}, got {}", pointer, expected, got);
}

std::int64_t tally_count(const json& tallies, const std::vector<std::string>& path) {
  REHEARSE_ASSERT(!path.empty());  // a count lives below the root, never at it
  const json* at = &tallies;
  for (const std::string& key : path) {
    if (!at->is_object()) return 0;
    const auto it = at->find(key);
    if (it == at->end()) return 0;
    at = &*it;
  }
  return at->is_number_integer() ? at->get<std::int64_t>() : 0;
}

std::string short_duration(DurationMs ms) {
  if (ms == 0) return "0s";
  return format_duration(ms);
}

bool expectations_need_trace(const Expectations& expect) {
  const bool messages = std::any_of(expect.jobs.begin(), expect.jobs.end(),
                                    [](const auto& job) { return !job.second.messages.empty(); });
  const bool not_found =
      std::any_of(expect.items.begin(), expect.items.end(),
                  [](const auto& item) { return item.second.not_found.has_value(); });
  const bool load =
      std::any_of(expect.user_services.begin(), expect.user_services.end(), [](const auto& s) {
        return s.second.metastable.has_value() || s.second.drained_within.has_value();
      });
  return messages || not_found || load;
}

std::int64_t messenger_calls(const ScenarioRunResult& run) {
  if (run.trace.keep() == TraceKeep::none) {
    REHEARSE_ASSERT_GE(run.messenger_calls, 0);  // a counter that only grows from 0
    return run.messenger_calls;                  // counted as it ran
  }
  const auto& events = run.trace.events();
  return std::count_if(events.begin(), events.end(), [](const TraceEvent& e) {
    return e.service == to_string(ServiceKind::messenger) &&
           (e.type == "message_delivered" || e.type == "message_refused");
  });
}

namespace {

const json* tally_node(const json& root, const std::vector<std::string>& path) {
  REHEARSE_ASSERT(!path.empty());
  const json* at = &root;
  for (const std::string& key : path) {
    if (!at->is_object()) return nullptr;
    const auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string tally_text(const json& root, const std::vector<std::string>& path) {
  const json* at = tally_node(root, path);
  return at != nullptr && at->is_string() ? at->get<std::string>() : std::string();
}

// One mismatch of names or instants (strings on both sides).
void check_text(std::vector<ExpectFailure>& out, const std::string& pointer,
                const std::string& expected, const std::string& got) {
  REHEARSE_ASSERT(!pointer.empty());
  if (expected != got) out.push_back({pointer, expected, got, expected, got});
}

void check_count(std::vector<ExpectFailure>& out, const std::string& pointer,
                 const std::optional<std::int64_t>& expected, std::int64_t got) {
  REHEARSE_ASSERT(!pointer.empty());
  if (expected && *expected != got) {
    out.push_back({pointer, std::to_string(*expected), std::to_string(got), *expected, got});
  }
}

void check_notifications(std::vector<ExpectFailure>& out, const std::string& pointer,
                         const std::map<NotificationEvent, std::int64_t>& expected,
                         const json& tallies, const std::vector<std::string>& path) {
  const std::size_t failures_before = out.size();
  for (const auto& [event, count] : expected) {
    std::vector<std::string> at = path;
    at.emplace_back(to_string(event));
    check_count(out, pointer + "/" + to_string(event), count, tally_count(tallies, at));
  }
  REHEARSE_ASSERT_LE(out.size() - failures_before, expected.size());  // one failure per count
}

const FinalJobState* final_state_of(const ScenarioRunResult& run, const std::string& job) {
  for (const FinalJobState& f : run.final_states) {
    if (f.job_id == job) return &f;
  }
  return nullptr;
}

std::string instant_or_null(const std::optional<TimeMs>& t) {
  return t ? format_instant(*t) : std::string("null");
}

void check_final_status(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                        const std::string& job, const std::string& p, RetryStatus expected) {
  REHEARSE_ASSERT(!job.empty());  // expect.jobs is keyed by declared job ids
  // The durable store is the authority; when it cannot be read (a corrupt
  // store fails closed), the monitors' view of the last status event stands
  // in, and the report says so.
  std::string got;
  const FinalJobState* f = final_state_of(run, job);
  if (f != nullptr && f->state) {
    got = to_string(f->state->retry_status);
  } else {
    const std::string seen = tally_text(run.tallies, {"jobs", job, "final_status"});
    got = fmt::format("{} (store unreadable: {}; status from the trace)",
                      seen.empty() ? "unknown" : seen,
                      run.store_error.empty() ? "no state" : run.store_error);
    if (seen == to_string(expected)) got.clear();
  }
  if (!got.empty()) check_text(out, p + "/final_status", to_string(expected), got);
}

// expect.jobs.<id>.state: the durable state as the store holds it at the end.
void check_state(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                 const std::string& job, const std::string& p, const StateExpectation& x) {
  // "unreadable" stands alone: the loader refuses it with any field.
  REHEARSE_ASSERT(!x.unreadable || (!x.retry_status && !x.next_action && !x.next_run_at &&
                                    !x.next_retry_at && !x.retry_count && !x.failure_class));
  const FinalJobState* f = final_state_of(run, job);
  if (x.unreadable) {
    if (f != nullptr && f->state) {
      const std::string got =
          fmt::format("readable (retry_status {})", to_string(f->state->retry_status));
      out.push_back({p, "unreadable", got, "unreadable", got});
    }
    return;
  }
  if (f == nullptr || !f->state) {
    const std::string why = run.store_error.empty() ? "no state for the job" : run.store_error;
    out.push_back({p, "the job's durable state", "store unreadable: " + why, "state", why});
    return;
  }
  const JobState& s = *f->state;
  if (x.retry_status) {
    check_text(out, p + "/retry_status", to_string(*x.retry_status), to_string(s.retry_status));
  }
  if (x.next_action) {
    check_text(out, p + "/next_action", to_string(*x.next_action), to_string(s.next_action));
  }
  if (x.next_run_at) {
    check_text(out, p + "/next_run_at", instant_or_null(*x.next_run_at),
               instant_or_null(s.next_run_at));
  }
  if (x.next_retry_at) {
    check_text(out, p + "/next_retry_at", instant_or_null(*x.next_retry_at),
               instant_or_null(s.next_retry_at));
  }
  check_count(out, p + "/retry_count", x.retry_count, s.retry_count);
  if (x.failure_class) {
    const auto name = [](const std::optional<FailureClass>& c) {
      return c ? std::string(to_string(*c)) : std::string("null");
    };
    check_text(out, p + "/failure_class", name(*x.failure_class), name(s.failure_class));
  }
}

// "none", "proportional" (BullMQ), "full" (Step Functions FULL, Celery),
// "additive" (Sidekiq), "decorrelated" (rehearse's own): a backoff's jitter,
// as expect.policy names it.
std::string jitter_kind(const Backoff& b) {
  if (b.decorrelated) return "decorrelated";
  if (b.jitter > 0.0) return "proportional";
  if (b.full_jitter) return "full";
  if (b.additive_steps > 0) return "additive";
  return "none";
}

// The shape of the conversion: factor, cap, jitter kind, deadline, retriers.
void check_policy_shape(std::vector<ExpectFailure>& out, const std::string& p,
                        const PolicyExpectation& x, const RetryPolicy& policy) {
  const Backoff& b = policy.backoff;
  if (x.factor && *x.factor != b.factor) {
    out.push_back({p + "/factor", fmt::format("{}", *x.factor), fmt::format("{}", b.factor),
                   *x.factor, b.factor});
  }
  const auto duration = [&](const char* key, const std::optional<DurationMs>& want,
                            DurationMs got) {
    if (!want || *want == got) return;
    const auto text = [](DurationMs d) { return d == 0 ? std::string("none") : short_duration(d); };
    out.push_back({p + "/" + key, text(*want), text(got), *want, got});
  };
  duration("cap", x.cap_ms, b.max_delay_ms);
  duration("deadline", x.deadline_ms, policy.deadline_ms);
  if (x.jitter) check_text(out, p + "/jitter", *x.jitter, jitter_kind(b));
  const auto retriers = static_cast<std::int64_t>(std::max<std::size_t>(1, policy.rules.size()));
  check_count(out, p + "/retriers", x.retriers, retriers);
}

// expect.jobs.<id>.policy: what the worker derives from the job's
// configuration and the environment (what "auto" chose).
void check_policy(std::vector<ExpectFailure>& out, const Scenario& scenario, const std::string& job,
                  const std::string& p, const PolicyExpectation& x) {
  const JobSpec* spec = scenario.find_job(job);
  if (spec == nullptr) return;
  const JobPlan plan = plan_job(job_config_of(*spec), scenario.env);
  if (!plan.schedule.ok() || !plan.policy.ok()) {
    const std::string why = !plan.schedule.ok()
                                ? "no usable schedule: " + plan.schedule.error().message
                                : "invalid policy: " + plan.policy.error().message;
    out.push_back({p, "a valid policy", why, "valid", why});
    return;
  }
  const RetryPolicy& policy = *plan.policy;
  check_count(out, p + "/max_retries", x.max_retries, policy.max_retries);
  if (x.backoff) {
    check_text(out, p + "/backoff", to_string(*x.backoff), to_string(policy.backoff.kind));
  }
  if (x.delay_ms && *x.delay_ms != policy.backoff.delay_ms) {
    out.push_back({p + "/delay", short_duration(*x.delay_ms),
                   short_duration(policy.backoff.delay_ms), *x.delay_ms, policy.backoff.delay_ms});
  }
  if (x.budget) check_text(out, p + "/budget", to_string(*x.budget), to_string(policy.budget));
  check_policy_shape(out, p, x, policy);
}

// Bounds on the largest start lateness of the job's regular slots.
void check_lateness(std::vector<ExpectFailure>& out, const json& t, const std::string& job,
                    const std::string& p, const LatenessExpectation& x) {
  // The loader reads both as durations >= 0 and refuses at_least above at_most.
  REHEARSE_ASSERT(!x.at_least_ms || *x.at_least_ms >= 0);
  REHEARSE_ASSERT(!x.at_least_ms || !x.at_most_ms || *x.at_least_ms <= *x.at_most_ms);
  const std::int64_t got = tally_count(t, {"jobs", job, "max_delay_ms"});
  if (x.at_least_ms && got < *x.at_least_ms) {
    out.push_back({p + "/at_least", "at least " + short_duration(*x.at_least_ms),
                   short_duration(got), *x.at_least_ms, got});
  }
  if (x.at_most_ms && got > *x.at_most_ms) {
    out.push_back({p + "/at_most", "at most " + short_duration(*x.at_most_ms), short_duration(got),
                   *x.at_most_ms, got});
  }
}

// expect.jobs.<id>.messages: the messenger's own record of the job's sends.
void check_messages(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                    const std::string& job, const std::string& p,
                    const std::map<std::string, MessageExpectation>& expected) {
  REHEARSE_ASSERT(!expected.empty());  // check_job calls it for listed messages only
  // The loader requires the messenger for messages, and a run keeps its trace then.
  REHEARSE_ASSERT(run.trace.keep() != TraceKeep::none);
  std::map<std::pair<std::string, std::string>, std::int64_t> got;  // (target, kind)
  for (const TraceEvent& e : run.trace.events()) {
    if (e.job != job || e.service != to_string(ServiceKind::messenger)) continue;
    if (e.type == "message_delivered") ++got[{e.str("target"), e.str("kind")}];
    if (e.type == "message_refused") ++got[{e.str("target"), "refused"}];
  }
  for (const auto& [target, x] : expected) {
    const std::string tp = p + "/" + json_pointer_token(target);
    const auto count = [&, target = target](const char* kind) {
      const auto it = got.find({target, kind});
      return it == got.end() ? 0 : it->second;
    };
    check_count(out, tp + "/delivery", x.delivery, count("delivery"));
    check_count(out, tp + "/failure_notice", x.failure_notice, count("failure_notice"));
    check_count(out, tp + "/notification", x.notification, count("notification"));
    check_count(out, tp + "/refused", x.refused, count("refused"));
  }
}

std::optional<TimeMs> instant_of(const json& v) {
  if (!v.is_string()) return std::nullopt;
  auto t = parse_instant(v.get<std::string>());
  if (!t) return std::nullopt;
  return *t;
}

// One listed slot against the tracker's entry for it.
void check_slot(std::vector<ExpectFailure>& out, const SlotExpectation& x, const json& got) {
  const std::string& p = x.pointer;
  REHEARSE_ASSERT_GE(x.tolerance_ms, 0);  // the loader reads it as a duration of at least 0
  if (x.outcome) check_text(out, p + "/outcome", to_string(*x.outcome), got.value("outcome", ""));
  check_count(out, p + "/attempts", x.attempts, got.value("attempts", std::int64_t{0}));
  if (x.attempt_at) {
    const json& at = got.at("attempt_at");
    if (at.size() != x.attempt_at->size()) {
      out.push_back({p + "/attempt_at", fmt::format("{} attempts", x.attempt_at->size()),
                     fmt::format("{} attempts ({})", at.size(), at.dump()), x.attempt_at->size(),
                     at});
    } else {
      for (std::size_t k = 0; k < at.size(); ++k) {
        const TimeMs want = (*x.attempt_at)[k];
        const std::optional<TimeMs> seen = instant_of(at[k]);
        if (seen && std::llabs(*seen - want) <= x.tolerance_ms) continue;
        out.push_back(
            {fmt::format("{}/attempt_at/{}", p, k),
             fmt::format("{} (within {})", format_instant(want), short_duration(x.tolerance_ms)),
             at[k].dump(), format_instant(want), at[k]});
      }
    }
  }
  check_notifications(out, p + "/notifications", x.notifications, got, {"notifications"});
}

// expect.jobs.<id>.slots: the list names every slot the run had.
void check_slots(std::vector<ExpectFailure>& out, const json& t, const std::string& job,
                 const std::string& p, const std::vector<SlotExpectation>& expected) {
  // The loader keeps the listed slots in strict time order, each once.
  REHEARSE_ASSERT(std::adjacent_find(expected.begin(), expected.end(),
                                     [](const SlotExpectation& a, const SlotExpectation& b) {
                                       return a.slot >= b.slot;
                                     }) == expected.end());
  std::map<TimeMs, const json*> seen;
  if (const json* list = tally_node(t, {"jobs", job, "slots"});
      list != nullptr && list->is_array()) {
    for (const json& s : *list) {
      if (auto at = instant_of(s.value("slot", json()))) seen[*at] = &s;
    }
  }
  for (const SlotExpectation& x : expected) {
    const auto it = seen.find(x.slot);
    if (it == seen.end()) {
      out.push_back({x.pointer + "/slot", "a slot at " + format_instant(x.slot), "no such slot",
                     format_instant(x.slot), nullptr});
      continue;
    }
    check_slot(out, x, *it->second);
    seen.erase(it);
  }
  for (const auto& [slot, s] : seen) {
    out.push_back({p, "no slot at " + format_instant(slot),
                   fmt::format("a slot at {} ({})", format_instant(slot), s->value("outcome", "?")),
                   nullptr, format_instant(slot)});
  }
}

void check_job(std::vector<ExpectFailure>& out, const Scenario& scenario,
               const ScenarioRunResult& run, const std::string& job, const JobExpectation& x) {
  const json& t = run.tallies;
  const std::string p = "/expect/jobs/" + json_pointer_token(job);
  check_count(out, p + "/delivered_slots", x.delivered_slots,
              tally_count(t, {"jobs", job, "delivered_slots"}));
  check_count(out, p + "/skipped_slots", x.skipped_slots,
              tally_count(t, {"jobs", job, "skipped_slots"}));
  check_count(out, p + "/failed_slots", x.failed_slots,
              tally_count(t, {"jobs", job, "failed_slots"}));
  check_count(out, p + "/in_flight_slots", x.in_flight_slots,
              tally_count(t, {"jobs", job, "in_flight_slots"}));
  check_count(out, p + "/retries", x.retries, tally_count(t, {"jobs", job, "retries"}));
  check_count(out, p + "/runs", x.runs, tally_count(t, {"jobs", job, "runs"}));
  check_count(out, p + "/calls", x.calls, tally_count(t, {"jobs", job, "calls"}));
  check_notifications(out, p + "/notifications", x.notifications, t,
                      {"jobs", job, "notifications"});
  if (x.max_delay_ms) {
    const std::int64_t got = tally_count(t, {"jobs", job, "max_delay_ms"});
    if (got > *x.max_delay_ms) {
      out.push_back({p + "/max_delay", "at most " + short_duration(*x.max_delay_ms),
                     short_duration(got), *x.max_delay_ms, got});
    }
  }
  if (x.final_status) check_final_status(out, run, job, p, *x.final_status);
  if (x.state) check_state(out, run, job, p + "/state", *x.state);
  if (x.policy) check_policy(out, scenario, job, p + "/policy", *x.policy);
  if (x.slots) check_slots(out, t, job, p + "/slots", *x.slots);
  if (!x.messages.empty()) check_messages(out, run, job, p + "/messages", x.messages);
  if (x.lateness) check_lateness(out, t, job, p + "/lateness", *x.lateness);
}

// Orchestrator 404 answers to requests about `item` (the service's own record).
std::int64_t not_found_answers(const ScenarioRunResult& run, const std::string& item) {
  const auto& events = run.trace.events();
  return std::count_if(events.begin(), events.end(), [&](const TraceEvent& e) {
    return e.type == "service_reply" && e.item == item &&
           e.service == to_string(ServiceKind::orchestrator) && e.num("status") == 404;
  });
}

void check_item(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                const std::string& item, const ItemExpectation& x) {
  const json& t = run.tallies;
  const std::string p = "/expect/items/" + json_pointer_token(item);
  // The item's pipeline store is the authority; the monitors' view of the
  // trace stands in when the store could not be read back.
  const FinalItemState* durable = nullptr;
  for (const FinalItemState& f : run.final_items) {
    if (f.issue == item) durable = &f;
  }
  if (x.stage) {
    const std::string got =
        durable != nullptr ? durable->stage : tally_text(t, {"items", item, "stage"});
    check_text(out, p + "/stage", *x.stage, got.empty() ? "none" : got);
  }
  if (x.reason_contains) {
    const std::string got =
        durable != nullptr ? durable->reconcile_error : tally_text(t, {"items", item, "reason"});
    if (got.find(*x.reason_contains) == std::string::npos) {
      out.push_back({p + "/reason_contains", "a reason containing \"" + *x.reason_contains + "\"",
                     got.empty() ? "no reason recorded" : "\"" + got + "\"", *x.reason_contains,
                     got});
    }
  }
  check_count(out, p + "/queries", x.queries, tally_count(t, {"items", item, "queries"}));
  check_count(out, p + "/not_found", x.not_found, not_found_answers(run, item));
}

// `name`: a built-in service's name or a user service's.
void check_service(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                   const std::string& name, const ServiceExpectation& x) {
  const json& t = run.tallies;
  const std::string p = "/expect/services/" + json_pointer_token(name);
  const std::int64_t calls = name == to_string(ServiceKind::messenger)
                                 ? messenger_calls(run)
                                 : tally_count(t, {"services", name, "calls"});
  check_count(out, p + "/calls", x.calls, calls);
  check_count(out, p + "/token_issues", x.token_issues,
              tally_count(t, {"services", name, "token_issues"}));
}

// A user service's fleet load, computed from the world's events
// (sim/world/service_load.hpp): whether it stayed above capacity an hour
// after its last fault ended, and how soon its failures stopped.
void check_service_load(std::vector<ExpectFailure>& out, const Scenario& scenario,
                        const ScenarioRunResult& run, const std::string& name,
                        const ServiceExpectation& x) {
  if (!x.metastable && !x.drained_within) return;
  const std::string p = "/expect/services/" + json_pointer_token(name);
  if (run.trace.keep() != TraceKeep::all) return;  // expectations_need_trace kept it
  const auto loads = service_load(scenario, run.trace.events(), run.start_ms, run.end_ms);
  const auto it = std::find_if(loads.begin(), loads.end(),
                               [&name](const ServiceLoad& l) { return l.service == name; });
  REHEARSE_ASSERT(it != loads.end());  // every user service has its load
  if (x.metastable) {
    const std::string got = !it->metastable_judged() ? "not judged (no capacity, no fault, or the "
                                                       "run ends within an hour of it)"
                            : it->metastable         ? "true"
                                                     : "false";
    check_text(out, p + "/metastable", *x.metastable ? "true" : "false", got);
  }
  if (x.drained_within) {
    const bool drained = it->drain_ms && *it->drain_ms <= *x.drained_within;
    check_text(out, p + "/drained_within", "within " + format_duration(*x.drained_within),
               drained        ? "within " + format_duration(*x.drained_within)
               : it->drain_ms ? "after " + format_duration(*it->drain_ms)
                              : "never (failing at the run's end)");
  }
}

void check_damaged_files(std::vector<ExpectFailure>& out, const ScenarioRunResult& run,
                         const std::map<StateFile, DamagedFileOutcome>& expected) {
  const std::size_t failures_before = out.size();
  for (const auto& [file, outcome] : expected) {
    const std::string p = fmt::format("/expect/damaged_files/{}", to_string(file));
    const std::string want = outcome == DamagedFileOutcome::kept ? "kept" : "changed";
    const auto it = std::find_if(run.damaged_files.begin(), run.damaged_files.end(),
                                 [file = file](const DamagedFile& d) { return d.file == file; });
    if (it == run.damaged_files.end()) {
      check_text(out, p, want, "never damaged (the fault applied nothing)");
      continue;
    }
    check_text(out, p, want, it->kept ? "kept" : "changed (" + it->path + ")");
  }
  REHEARSE_ASSERT_LE(out.size() - failures_before, expected.size());  // one failure per file
}

}  // namespace

std::vector<ExpectFailure> check_expectations(const Scenario& scenario,
                                              const ScenarioRunResult& run) {
  std::vector<ExpectFailure> out;
  const Expectations& e = scenario.expect;
  for (const auto& [job, x] : e.jobs) check_job(out, scenario, run, job, x);
  for (const auto& [item, x] : e.items) check_item(out, run, item, x);
  for (const auto& [kind, x] : e.services) check_service(out, run, to_string(kind), x);
  for (const auto& [name, x] : e.user_services) {
    check_service(out, run, name, x);
    check_service_load(out, scenario, run, name, x);
  }
  check_notifications(out, "/expect/notifications", e.notifications, run.tallies,
                      {"notifications"});
  check_damaged_files(out, run, e.damaged_files);
  // A failure is a mismatch: what it says was expected differs from what it got.
  for (const ExpectFailure& f : out) REHEARSE_ASSERT(f.expected != f.got);
  return out;
}

}  // namespace rehearse::sim
