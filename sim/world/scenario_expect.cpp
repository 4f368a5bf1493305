// The loader's `expect` block: what a run must show per job, item, service,
// notification, violation and damaged file.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

std::map<NotificationEvent, std::int64_t> Loader::load_event_counts(const json& v,
                                                                    const std::string& pointer) {
  std::map<NotificationEvent, std::int64_t> out;
  if (!expect_object(v, pointer, "notification counts by event")) return out;
  const auto& events = notification_event_names();
  for (const auto& [name, count] : v.items()) {
    const std::string at = child(pointer, name);
    const auto event = parse_notification_event(name);
    if (!event) {
      std::string message =
          fmt::format("unknown notification event '{}' (expected one of: {})", name, join(events));
      if (const auto near = closest(name, events))
        message += fmt::format("; did you mean '{}'?", *near);
      value_error(at, std::move(message));
      continue;
    }
    if (auto n = read_count(count, at)) out[*event] = *n;
  }
  REHEARSE_ASSERT_LE(out.size(), events.size());  // one count per known event
  return out;
}

void Loader::load_job_expectation(const json& v, const std::string& pointer, const std::string& job,
                                  JobExpectation& out) {
  if (!expect_object(v, pointer, "a job expectation")) return;
  check_keys(v, pointer, keys_of("job_expectation"));
  const auto count = [&](std::string_view key, std::optional<std::int64_t>& slot) {
    if (const json* c = field(v, key)) slot = read_count(*c, child(pointer, key));
  };
  count("delivered_slots", out.delivered_slots);
  count("skipped_slots", out.skipped_slots);
  count("failed_slots", out.failed_slots);
  count("in_flight_slots", out.in_flight_slots);
  count("retries", out.retries);
  count("runs", out.runs);
  count("calls", out.calls);
  if (const json* s = field(v, "final_status")) {
    const std::vector<std::string> names{"ok", "retrying", "retry_exhausted", "failed"};
    if (auto i = read_name(*s, child(pointer, "final_status"), names, "final status")) {
      out.final_status = parse_retry_status(names[*i]);
      REHEARSE_ASSERT(out.final_status.has_value());  // the names are the core's own
    }
  }
  if (const json* n = field(v, "notifications")) {
    out.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  if (const json* d = field(v, "max_delay")) {
    out.max_delay_ms = read_duration(*d, child(pointer, "max_delay"), 0);
  }
  load_later_job_expectation(v, pointer, job, out);
}

// expect.items: per reconcile item, stage, reason, queries, 404 answers.
void Loader::load_item_expectations(const json& items, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "items");
  if (expect_object(items, at, "expectations by issue id")) {
    for (const auto& [issue, body] : items.items()) {
      const std::string ip = child(at, issue);
      if (jobs_ok_ &&
          !check_reference(issue, ip, item_issues_, "item", "the items of any reconcile job")) {
        continue;
      }
      if (!expect_object(body, ip, "an item expectation")) continue;
      check_keys(body, ip, keys_of("item_expectation"));
      ItemExpectation& item = expect.items[issue];
      if (const json* s = field(body, "stage")) {
        if (auto k = read_name(*s, child(ip, "stage"), stage_names(), "stage")) {
          item.stage = stage_names()[*k];
        }
      }
      if (const json* r = field(body, "reason_contains")) {
        item.reason_contains = read_string(*r, child(ip, "reason_contains"));
      }
      if (const json* q = field(body, "queries"))
        item.queries = read_count(*q, child(ip, "queries"));
      if (const json* n = field(body, "not_found")) {
        item.not_found = read_count(*n, child(ip, "not_found"));
      }
    }
    REHEARSE_ASSERT_LE(expect.items.size(), items.size());  // read once: one per issue key
  }
}

// expect.services: calls per service (token issues for the brokerage).
// A service of the user's own: its calls and its fleet load.
void Loader::load_user_service_expectation(const json& body, const std::string& pointer,
                                           ServiceExpectation& service) {
  check_keys(body, pointer, keys_of("user_service_expectation"),
             {{"token_issues", "applies to the 'brokerage' service only"}});
  if (const json* c = field(body, "calls")) service.calls = read_count(*c, child(pointer, "calls"));
  if (const json* m = field(body, "metastable")) {
    service.metastable = read_bool(*m, child(pointer, "metastable"));
  }
  if (const json* d = field(body, "drained_within")) {
    service.drained_within = read_duration(*d, child(pointer, "drained_within"), 0);
  }
}

void Loader::load_service_expectations(const json& services, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "services");
  if (expect_object(services, at, "expectations by service")) {
    std::vector<std::string> names = keys_of("expect_services");
    names.insert(names.end(), user_services_.begin(), user_services_.end());
    check_keys(services, at, names);
    for (const auto& [name, body] : services.items()) {
      const auto kind = parse_service_kind(name);
      const std::string sp = child(at, name);
      if (!kind && user_services_.count(name) != 0 &&
          expect_object(body, sp, "a service expectation")) {
        load_user_service_expectation(body, sp, expect.user_services[name]);
      }
      if (!kind) continue;
      if (!require_service(*kind, sp, "this expectation")) continue;
      if (!expect_object(body, sp, "a service expectation")) continue;
      const bool brokerage = *kind == ServiceKind::brokerage;
      std::map<std::string, std::string> elsewhere;
      if (!brokerage) elsewhere["token_issues"] = "applies to the 'brokerage' service only";
      check_keys(body, sp, keys_of(brokerage ? "brokerage_expectation" : "service_expectation"),
                 elsewhere);
      ServiceExpectation& service = expect.services[*kind];
      if (const json* c = field(body, "calls")) service.calls = read_count(*c, child(sp, "calls"));
      if (brokerage) {
        if (const json* t = field(body, "token_issues")) {
          service.token_issues = read_count(*t, child(sp, "token_issues"));
        }
      }
    }
    // Read once: one expectation per service key, built-in or the user's own.
    REHEARSE_ASSERT_LE(expect.services.size() + expect.user_services.size(), services.size());
  }
}

// expect.violations: invariant names, each at most once.
void Loader::load_expected_violations(const json& list, const std::string& pointer) {
  Expectations& expect = scenario_.expect;
  const std::string at = child(pointer, "violations");
  if (expect_array(list, at, "a list of invariant names", false)) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string vp = child(at, i);
      auto k = read_name(list[i], vp, invariant_names(), "invariant");
      if (!k) continue;
      const std::string& name = invariant_names()[*k];
      if (std::find(expect.violations.begin(), expect.violations.end(), name) !=
          expect.violations.end()) {
        value_error(vp, fmt::format("duplicate invariant '{}'", name));
        continue;
      }
      expect.violations.push_back(name);
    }
  }
  REHEARSE_ASSERT_LE(expect.violations.size(), invariant_names().size());  // each at most once
}

void Loader::load_expect(const json& v, const std::string& pointer) {
  // The one `expect` block of the document.
  REHEARSE_ASSERT(scenario_.expect.jobs.empty() && scenario_.expect.violations.empty());
  if (!expect_object(v, pointer, "expectations")) return;
  check_keys(v, pointer, keys_of("expect"));
  Expectations& expect = scenario_.expect;
  if (const json* jobs = field(v, "jobs")) {
    const std::string at = child(pointer, "jobs");
    if (expect_object(*jobs, at, "expectations by job id")) {
      for (const auto& [id, body] : jobs->items()) {
        const std::string jp = child(at, id);
        // Only meaningful when every job parsed; otherwise the job may exist
        // with an error of its own, already reported.
        if (jobs_ok_ && !check_reference(id, jp, job_ids_, "job", "/jobs")) continue;
        load_job_expectation(body, jp, id, expect.jobs[id]);
      }
    }
  }
  if (const json* items = field(v, "items")) load_item_expectations(*items, pointer);
  if (const json* services = field(v, "services")) load_service_expectations(*services, pointer);
  if (const json* n = field(v, "notifications")) {
    expect.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  if (const json* list = field(v, "violations")) load_expected_violations(*list, pointer);
  if (const json* d = field(v, "damaged_files"))
    load_damaged_files(*d, child(pointer, "damaged_files"));
}

// ------------------------------------------- expect: the later job keys

// The keys added to format 1 after its first release: state, policy, slots,
// messages, lateness (docs/scenario-format.md, `expect`). Absent: not checked.
void Loader::load_later_job_expectation(const json& v, const std::string& pointer,
                                        const std::string& job, JobExpectation& out) {
  if (const json* s = field(v, "state")) {
    out.state = load_state_expectation(*s, child(pointer, "state"));
  }
  if (const json* p = field(v, "policy")) {
    out.policy = load_policy_expectation(*p, child(pointer, "policy"));
  }
  if (const json* l = field(v, "slots")) {
    out.slots = load_slot_expectations(*l, child(pointer, "slots"));
  }
  if (const json* m = field(v, "messages")) {
    out.messages = load_message_expectations(*m, child(pointer, "messages"), job);
  }
  if (const json* l = field(v, "lateness")) {
    out.lateness = load_lateness(*l, child(pointer, "lateness"));
  }
}

std::optional<std::optional<TimeMs>> Loader::read_instant_or_null(const json& v,
                                                                  const std::string& pointer) {
  if (v.is_null()) return std::optional<TimeMs>();
  if (auto t = read_instant(v, pointer)) return std::optional<TimeMs>(*t);
  return std::nullopt;
}

std::optional<StateExpectation> Loader::load_state_expectation(const json& v,
                                                               const std::string& pointer) {
  StateExpectation out;
  if (v.is_string() && v.get<std::string>() == "unreadable") {
    out.unreadable = true;
    return out;
  }
  if (!expect_object(v, pointer, "the job's final state (or \"unreadable\")")) return std::nullopt;
  check_keys(v, pointer, keys_of("state_expectation"));
  if (const json* s = field(v, "retry_status")) {
    const std::vector<std::string> names{"ok", "retrying", "retry_exhausted", "failed"};
    if (auto i = read_name(*s, child(pointer, "retry_status"), names, "retry status")) {
      out.retry_status = parse_retry_status(names[*i]);
      REHEARSE_ASSERT(out.retry_status.has_value());  // the names are the core's own
    }
  }
  if (const json* a = field(v, "next_action")) {
    const std::vector<std::string> names{"none", "retry", "wait_next_run", "manual_review"};
    if (auto i = read_name(*a, child(pointer, "next_action"), names, "next action")) {
      out.next_action = parse_next_action(names[*i]);
      REHEARSE_ASSERT(out.next_action.has_value());
    }
  }
  if (const json* t = field(v, "next_run_at")) {
    out.next_run_at = read_instant_or_null(*t, child(pointer, "next_run_at"));
  }
  if (const json* t = field(v, "next_retry_at")) {
    out.next_retry_at = read_instant_or_null(*t, child(pointer, "next_retry_at"));
  }
  if (const json* c = field(v, "retry_count")) {
    out.retry_count = read_count(*c, child(pointer, "retry_count"));
  }
  if (const json* f = field(v, "failure_class")) {
    if (f->is_null()) {
      out.failure_class = std::optional<FailureClass>();
    } else {
      std::vector<std::string> names;
      for (const FailureClass c : all_failure_classes()) names.emplace_back(to_string(c));
      if (auto i =
              read_name(*f, child(pointer, "failure_class"), names, "failure class (or null)")) {
        out.failure_class = std::optional<FailureClass>(all_failure_classes()[*i]);
      }
    }
  }
  return out;
}

// factor, cap ("none" or a duration), jitter, deadline ("none" or a
// duration), retriers.
void Loader::load_policy_shape(const json& v, const std::string& pointer, PolicyExpectation& out) {
  if (const json* f = field(v, "factor")) {
    if (f->is_number() && f->get<double>() >= 1.0 && f->get<double>() <= 1000.0) {
      out.factor = f->get<double>();
    } else {
      value_error(child(pointer, "factor"), "expected the growth per retry: a number from 1");
    }
  }
  const auto none_or_duration = [&](const char* key) -> std::optional<DurationMs> {
    const json* d = field(v, key);
    if (d == nullptr) return std::nullopt;
    if (d->is_string() && *d == "none") return DurationMs{0};
    return read_duration(*d, child(pointer, key), 1);
  };
  out.cap_ms = none_or_duration("cap");
  out.deadline_ms = none_or_duration("deadline");
  if (const json* j = field(v, "jitter")) {
    const std::vector<std::string> names{"none", "proportional", "full", "additive",
                                         "decorrelated"};
    if (auto i = read_name(*j, child(pointer, "jitter"), names, "jitter kind")) {
      out.jitter = names[*i];
    }
  }
  if (const json* r = field(v, "retriers")) {
    out.retriers = read_int(*r, child(pointer, "retriers"), 1, 32, "a count of retriers");
  }
}

std::optional<PolicyExpectation> Loader::load_policy_expectation(const json& v,
                                                                 const std::string& pointer) {
  if (!expect_object(v, pointer, "the policy the job runs with")) return std::nullopt;
  check_keys(v, pointer, keys_of("policy_expectation"));
  PolicyExpectation out;
  if (const json* m = field(v, "max_retries")) {
    out.max_retries = m->is_string() && *m == "unlimited"
                          ? std::optional<std::int64_t>(kRetriesUnlimited)
                          : read_int(*m, child(pointer, "max_retries"), 0, kRetryCountMax,
                                     "a retry count (or \"unlimited\")");
  }
  load_policy_shape(v, pointer, out);
  if (const json* b = field(v, "backoff")) {
    // Every curve a policy can have, polynomial (Sidekiq's) included: the
    // core's parse_backoff_kind reads only what a per-job policy may name.
    const std::vector<std::string> names{"fixed", "exponential", "linear", "polynomial",
                                         "expression"};
    if (auto i = read_name(*b, child(pointer, "backoff"), names, "backoff")) {
      out.backoff = static_cast<BackoffKind>(*i);
      REHEARSE_ASSERT(names[*i] == to_string(*out.backoff));  // names in BackoffKind order
    }
  }
  if (const json* d = field(v, "delay")) {
    out.delay_ms = read_duration(*d, child(pointer, "delay"), 0);
  }
  if (const json* b = field(v, "budget")) {
    const std::vector<std::string> names{"per_slot", "per_episode"};
    if (auto i = read_name(*b, child(pointer, "budget"), names, "budget scope")) {
      out.budget = parse_budget_scope(names[*i]);
      REHEARSE_ASSERT(out.budget.has_value());
    }
  }
  return out;
}

// Every slot of the job, in time order, each at most once.
std::optional<std::vector<SlotExpectation>> Loader::load_slot_expectations(
    const json& v, const std::string& pointer) {
  if (!expect_array(v, pointer, "a list of slots", false)) return std::nullopt;
  std::vector<SlotExpectation> out;
  bool good = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = child(pointer, i);
    auto slot = load_slot_expectation(v[i], at);
    if (!slot) {
      good = false;
      continue;
    }
    if (!out.empty() && slot->slot <= out.back().slot) {
      value_error(at + "/slot",
                  fmt::format("slot {} is not after the previous one ({}): list each "
                              "slot once, in time order",
                              format_instant(slot->slot), format_instant(out.back().slot)));
      good = false;
      continue;
    }
    out.push_back(std::move(*slot));
  }
  if (!good) return std::nullopt;
  REHEARSE_ASSERT_EQ(out.size(), v.size());  // every entry read, in time order
  return out;
}

std::optional<SlotExpectation> Loader::load_slot_expectation(const json& v,
                                                             const std::string& pointer) {
  if (!expect_object(v, pointer, "a slot expectation")) return std::nullopt;
  check_keys(v, pointer, keys_of("slot_expectation"));
  SlotExpectation out;
  out.pointer = pointer;
  const json* s = require(v, pointer, "slot", "the slot's instant");
  if (s == nullptr) return std::nullopt;
  auto slot = read_instant(*s, child(pointer, "slot"));
  if (!slot) return std::nullopt;
  out.slot = *slot;
  if (const json* o = field(v, "outcome")) {
    if (auto i = read_name(*o, child(pointer, "outcome"), slot_outcome_names(), "slot outcome")) {
      out.outcome = static_cast<SlotOutcome>(*i);
    }
  }
  if (const json* a = field(v, "attempts")) {
    out.attempts = read_count(*a, child(pointer, "attempts"));
  }
  if (const json* t = field(v, "tolerance")) {
    if (auto d = read_duration(*t, child(pointer, "tolerance"), 0)) out.tolerance_ms = *d;
  }
  if (const json* list = field(v, "attempt_at")) {
    const std::string at = child(pointer, "attempt_at");
    if (expect_array(*list, at, "a list of attempt instants", false)) {
      std::vector<TimeMs> instants;
      for (std::size_t k = 0; k < list->size(); ++k) {
        if (auto t = read_attempt_instant((*list)[k], child(at, k), out.slot)) {
          instants.push_back(*t);
        }
      }
      if (instants.size() == list->size()) out.attempt_at = std::move(instants);
      if (out.attempts && *out.attempts != static_cast<std::int64_t>(list->size())) {
        value_error(at, fmt::format("{} attempt instants for {} attempts: give one per attempt",
                                    list->size(), *out.attempts));
      }
    }
  }
  if (const json* n = field(v, "notifications")) {
    out.notifications = load_event_counts(*n, child(pointer, "notifications"));
  }
  REHEARSE_ASSERT_GE(out.tolerance_ms, 0);  // read as a duration of at least 0
  return out;
}

// An INSTANT, or "+DURATION": that long after the slot's instant.
std::optional<TimeMs> Loader::read_attempt_instant(const json& v, const std::string& pointer,
                                                   TimeMs slot) {
  auto s = read_string(v, pointer, "an ISO-8601 UTC instant or an offset from the slot (\"+30m\")");
  if (!s) return std::nullopt;
  if (!s->empty() && s->front() == '+') {
    auto d = parse_duration(std::string_view(*s).substr(1));
    if (!d) {
      value_error(pointer, fmt::format("invalid offset \"{}\": {}", *s, d.error().message));
      return std::nullopt;
    }
    REHEARSE_ASSERT_GE(*d, 0);  // parse_duration reads digits only: the check below relies on it
    if (*d > kMaxInstantMs - slot) {
      value_error(pointer, fmt::format("offset \"{}\" is too large", *s));
      return std::nullopt;
    }
    return slot + *d;
  }
  auto t = parse_instant(*s);
  if (!t) {
    value_error(pointer, t.error().message + " (or an offset from the slot such as \"+30m\")");
    return std::nullopt;
  }
  return *t;
}

std::map<std::string, MessageExpectation> Loader::load_message_expectations(
    const json& v, const std::string& pointer, const std::string& job) {
  std::map<std::string, MessageExpectation> out;
  if (!expect_object(v, pointer, "message counts by messenger target")) return out;
  if (!require_service(ServiceKind::messenger, pointer, "job '" + job + "' messages")) return out;
  for (const auto& [target, body] : v.items()) {
    const std::string tp = child(pointer, target);
    if (!check_reference(target, tp, target_names_, "target", "/services/messenger/targets")) {
      continue;
    }
    if (!expect_object(body, tp, "message counts by kind")) continue;
    check_keys(body, tp, keys_of("message_expectation"));
    MessageExpectation& m = out[target];
    const auto count = [&, &body = body](std::string_view key, std::optional<std::int64_t>& slot) {
      if (const json* c = field(body, key)) slot = read_count(*c, child(tp, key));
    };
    count("delivery", m.delivery);
    count("failure_notice", m.failure_notice);
    count("notification", m.notification);
    count("refused", m.refused);
  }
  REHEARSE_ASSERT_LE(out.size(), target_names_.size());  // declared targets only, each once
  return out;
}

std::optional<LatenessExpectation> Loader::load_lateness(const json& v,
                                                         const std::string& pointer) {
  if (!expect_object(v, pointer, "bounds on the largest lateness")) return std::nullopt;
  check_keys(v, pointer, keys_of("lateness_expectation"));
  LatenessExpectation out;
  if (const json* d = field(v, "at_least")) {
    out.at_least_ms = read_duration(*d, child(pointer, "at_least"), 0);
  }
  if (const json* d = field(v, "at_most")) {
    out.at_most_ms = read_duration(*d, child(pointer, "at_most"), 0);
  }
  if (out.at_least_ms && out.at_most_ms && *out.at_least_ms > *out.at_most_ms) {
    value_error(pointer,
                fmt::format("at_least ({}) is above at_most ({})",
                            format_duration(*out.at_least_ms), format_duration(*out.at_most_ms)));
    return std::nullopt;
  }
  return out;
}

// expect.damaged_files: state file -> "kept" | "changed"; the file must be
// one a state_corrupted fault damages.
void Loader::load_damaged_files(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "damaged state files by name")) return;
  std::vector<std::string> files;
  for (int i = 0; i <= static_cast<int>(StateFile::jobs_state); ++i) {
    files.emplace_back(to_string(static_cast<StateFile>(i)));
  }
  for (const auto& [name, body] : v.items()) {
    const std::string at = child(pointer, name);
    const auto it = std::find(files.begin(), files.end(), name);
    if (it == files.end()) {
      std::string message =
          fmt::format("unknown state file '{}' (expected one of: {})", name, join(files));
      if (const auto near = closest(name, files)) {
        message += fmt::format("; did you mean '{}'?", *near);
      }
      value_error(at, std::move(message));
      continue;
    }
    const auto file = static_cast<StateFile>(it - files.begin());
    const bool damaged =
        std::any_of(scenario_.faults.begin(), scenario_.faults.end(), [&](const FaultSpec& f) {
          return f.kind == FaultKind::state_corrupted && f.file == file;
        });
    if (!damaged) {
      reference_error(at, fmt::format("no state_corrupted fault damages '{}'", name));
      continue;
    }
    const std::vector<std::string> outcomes{"kept", "changed"};
    if (auto i = read_name(body, at, outcomes, "damaged file outcome")) {
      scenario_.expect.damaged_files[file] = static_cast<DamagedFileOutcome>(*i);
    }
  }
  REHEARSE_ASSERT_LE(scenario_.expect.damaged_files.size(), files.size());
}

}  // namespace rehearse::sim::scenario_detail
