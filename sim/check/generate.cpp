// The generators' job draws (schedules, retry policies, each kind's keys) and the
// entry points; whole worlds and their placed faults are in generate_world.cpp.
#include "sim/check/generate_detail.hpp"

namespace rehearse::sim {

namespace generate_detail {

namespace {

// ------------------------------------------------------------ the world

JobWorld job_world_of(const Scenario& s) {
  JobWorld w;
  w.start_ms = s.start_ms;
  w.model_api = s.services.model_api.has_value();
  w.brokerage = s.services.brokerage.has_value();
  if (s.services.messenger) w.targets = s.services.messenger->targets;
  if (s.services.orchestrator) {
    for (const OrchestratorIssue& issue : s.services.orchestrator->issues) {
      w.issues.push_back(issue.id);
    }
  }
  for (const auto& [name, service] : s.services.user) w.user_services.push_back(name);
  return w;
}

// 0 = Sunday, as cron counts weekdays (1970-01-01 was a Thursday).
int weekday_of(TimeMs t) {
  REHEARSE_ASSERT_GE(t, 0);  // generated worlds start after the epoch
  const int day = static_cast<int>(((t / kDayMs) % 7 + 4) % 7);
  REHEARSE_ASSERT(day >= 0 && day <= 6);
  return day;
}

// -------------------------------------------------------------- schedules

}  // namespace

// From every few minutes to weekly. Two classes are low-frequency by the
// literal rule of docs/semantics.md §3 (one fixed weekday): a weekly slot, and
// every few minutes on one weekday (the rule misjudges it on purpose). The
// weekday is the start's or the next day's, so the slots fall in the span.
std::string draw_schedule(Rng& rng, TimeMs start_ms) {
  static const std::vector<int> kMinuteSteps{2, 5, 10, 15, 20, 30};
  static const std::vector<int> kHourSteps{2, 3, 4, 6, 12};
  const int minute = static_cast<int>(rng.next_in(0, 59));
  const int hour = static_cast<int>(rng.next_in(0, 23));
  const int weekday = weekday_of(start_ms + rng.next_in(0, 1) * kDayMs);
  switch (rng.next_below(6)) {
    case 0: return fmt::format("*/{} * * * *", pick(rng, kMinuteSteps));
    case 1: return fmt::format("{} * * * *", minute);
    case 2: return fmt::format("{} */{} * * *", minute, pick(rng, kHourSteps));
    case 3: return fmt::format("{} {} * * *", minute, hour);
    case 4: return fmt::format("{} {} * * {}", minute, hour, weekday);
    default: return fmt::format("*/{} * * * {}", pick(rng, kMinuteSteps), weekday);
  }
}

namespace {

// ---------------------------------------------------------------- policies

// The core's backoff types that its parser accepts inside `form`, a policy
// whose backoff type is the placeholder "?" (the parser is the table).
std::vector<std::string> accepted_backoff_types(json form) {
  std::vector<std::string> out;
  for (int i = 0; i <= static_cast<int>(BackoffKind::expression); ++i) {
    const std::string name = to_string(static_cast<BackoffKind>(i));
    form["backoff"]["type"] = name;
    if (parse_retry_policy(form)) out.push_back(name);
  }
  // The fixed backoff is every form's: pick() needs at least one.
  REHEARSE_ASSERT(!out.empty());
  return out;
}

const std::vector<std::string>& per_job_backoff_types() {
  static const std::vector<std::string> kTypes =
      accepted_backoff_types({{"max", 1}, {"backoff", {{"type", "?"}, {"delay", "1s"}}}});
  return kTypes;
}

const std::vector<std::string>& bullmq_backoff_types() {
  static const std::vector<std::string> kTypes =
      accepted_backoff_types({{"attempts", 2}, {"backoff", {{"type", "?"}, {"delay", 1000}}}});
  return kTypes;
}

std::vector<std::string> failure_class_names() {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kFailureClassCount; ++i) {
    out.emplace_back(to_string(static_cast<FailureClass>(i)));
  }
  return out;
}

// A backoff delay in whole seconds on a rough log scale: seconds, minutes,
// up to half an hour.
std::int64_t draw_delay_s(Rng& rng) {
  std::int64_t s = 0;
  switch (rng.next_below(3)) {
    case 0: s = rng.next_in(1, 59); break;
    case 1: s = rng.next_in(60, 600); break;
    default: s = rng.next_in(600, 1800); break;
  }
  REHEARSE_ASSERT(s >= 1 && s <= 1800);
  return s;
}

// Narrowed classes (a third of the time) and a budget scope (half the time).
void draw_policy_options(Rng& rng, json& policy) {
  if (rng.next_bool(1.0 / 3)) policy["retryable_classes"] = pick_subset(rng, failure_class_names());
  if (rng.next_bool(0.5)) {
    policy["budget"] =
        to_string(rng.next_bool(0.5) ? BudgetScope::per_slot : BudgetScope::per_episode);
  }
}

}  // namespace

// One policy in a shape the core's parser accepts (docs/semantics.md §2):
// "auto", the per-job form (backoff_sec, or a backoff object), the BullMQ form
// (a number, or a backoff object with jitter some of the time), and the
// per-job policy that never retries (with its required reason).
json draw_retry_policy(Rng& rng) {
  const std::int64_t delay_s = draw_delay_s(rng);
  const std::int64_t retries = rng.next_in(1, 4);
  json policy;
  switch (rng.next_below(6)) {
    case 0: return "auto";
    case 1: policy = {{"max", retries}, {"backoff_sec", delay_s}}; break;
    case 2:
      policy = {{"max", retries},
                {"backoff",
                 {{"type", pick(rng, per_job_backoff_types())},
                  {"delay", format_duration(delay_s * kSecondMs)}}}};
      break;
    case 3: policy = {{"attempts", retries + 1}, {"backoff", delay_s * kSecondMs}}; break;
    case 4:
      policy = {{"attempts", retries + 1},
                {"backoff",
                 {{"type", pick(rng, bullmq_backoff_types())}, {"delay", delay_s * kSecondMs}}}};
      if (rng.next_bool(0.5))
        policy["backoff"]["jitter"] = static_cast<double>(rng.next_in(1, 10)) / 10.0;
      break;
    default:
      return {{"max", 0}, {"retryable_classes", json::array()}, {"reason", "drawn: never retried"}};
  }
  draw_policy_options(rng, policy);
  return policy;
}

namespace {

// ------------------------------------------------------------ job keys

// A drawer of one job key: the value, json() to leave the key out, or nullopt
// when this world has nothing the key could name (the kind cannot be drawn).
// `old` is the job being randomized (empty when drawing a new one).
using KeyDrawer = std::function<std::optional<json>(Rng&, const JobWorld&, const json& old)>;

json draw_tasks(Rng& rng, const JobWorld& w) {
  static const std::vector<TaskOutput> kOutputs{TaskOutput::summary, TaskOutput::preview,
                                                TaskOutput::skip};
  json tasks = json::array();
  const auto n = rng.next_in(1, 3);
  for (std::int64_t i = 1; i <= n; ++i) {
    const TaskOutput produces = pick(rng, kOutputs);
    const std::int64_t calls = w.model_api ? rng.next_in(0, 3) : 0;
    tasks.push_back({{"id", fmt::format("task-{}", i)},
                     {"produces", to_string(produces)},
                     {"model_calls", calls}});
  }
  return tasks;
}

json draw_calls(Rng& rng, const JobWorld& w) {
  static const std::vector<std::string> kMethods{"GET", "POST", "PUT", "DELETE"};
  json calls = json::array();
  const auto n = rng.next_in(1, 3);
  for (std::int64_t i = 0; i < n; ++i) {
    calls.push_back({{"service", pick(rng, w.user_services)},
                     {"method", pick(rng, kMethods)},
                     {"path", fmt::format("/r{}", rng.next_in(1, 9))}});
  }
  return calls;
}

// Items name issues: a randomized job keeps its own (they are what the world
// declares for it); a new one takes a subset of the declared issues.
json draw_items(Rng& rng, const JobWorld& w) {
  json items = json::array();
  for (const json& issue : pick_subset(rng, w.issues)) {
    items.push_back({{"issue", issue}, {"stage", pick(rng, stage_names())}});
  }
  return items;
}

const std::map<std::string, KeyDrawer, std::less<>>& key_drawers() {
  static const std::map<std::string, KeyDrawer, std::less<>> kDrawers{
      {"tasks",
       [](Rng& rng, const JobWorld& w, const json&) -> std::optional<json> {
         return draw_tasks(rng, w);
       }},
      {"targets",
       [](Rng& rng, const JobWorld& w, const json&) -> std::optional<json> {
         if (w.targets.empty()) return std::nullopt;
         return pick_subset(rng, w.targets);
       }},
      {"service",
       [](Rng&, const JobWorld& w, const json&) -> std::optional<json> {
         if (!w.brokerage) return std::nullopt;
         return json(to_string(ServiceKind::brokerage));
       }},
      {"requests",
       [](Rng& rng, const JobWorld&, const json&) -> std::optional<json> {
         return rng.next_in(1, 4);
       }},
      {"parallel",
       [](Rng& rng, const JobWorld&, const json&) -> std::optional<json> {
         return rng.next_bool(0.5);
       }},
      {"items",
       [](Rng& rng, const JobWorld& w, const json& old) -> std::optional<json> {
         if (old.contains("items")) return old.at("items");
         if (w.issues.empty()) return std::nullopt;
         return draw_items(rng, w);
       }},
      {"batch_size",
       [](Rng& rng, const JobWorld&, const json&) -> std::optional<json> {
         if (rng.next_bool(0.5)) return json();
         return rng.next_in(1, 3);
       }},
      {"calls",
       [](Rng& rng, const JobWorld& w, const json&) -> std::optional<json> {
         if (w.user_services.empty()) return std::nullopt;
         return draw_calls(rng, w);
       }},
  };
  return kDrawers;
}

}  // namespace

// The own keys of a job kind (its entry in the job kind table).
const std::vector<std::string>& kind_keys(JobKind kind) { return job_kind_def(kind).keys; }

// The kind's own keys drawn into `job` (replacing what was there); false when
// one of them cannot be drawn in this world. A kind with its own draw draws
// them all; the others draw each key with the drawer of its name.
bool draw_kind_keys(JobKind kind, Rng& rng, const JobWorld& w, json& job) {
  if (const auto& draw = job_kind_def(kind).draw) {
    std::optional<json> own = draw(rng, w);
    if (!own) return false;
    REHEARSE_ASSERT(own->is_object());
    for (const std::string& key : kind_keys(kind)) job.erase(key);
    job.update(*own);
    return true;
  }
  const json old = job;
  for (const std::string& key : kind_keys(kind)) {
    const auto drawer = key_drawers().find(key);
    if (drawer == key_drawers().end()) continue;  // a key no drawer knows: left as it is
    std::optional<json> value = drawer->second(rng, w, old);
    if (!value) return false;
    if (value->is_null()) {
      job.erase(key);
    } else {
      job[key] = std::move(*value);
    }
  }
  return true;
}

namespace {

// ------------------------------------------------------------ random jobs

// One base job with a new schedule, policy and kind keys (id, kind, the
// environment override, side effects, idempotency key and note kept).
json randomized_job(const json& job, JobKind kind, Rng& rng, const JobWorld& w) {
  json out = job;
  out["schedule"] = draw_schedule(rng, w.start_ms);
  out["retry_policy"] = draw_retry_policy(rng);
  json drawn = out;
  if (draw_kind_keys(kind, rng, w, drawn)) out = std::move(drawn);
  return out;
}

}  // namespace

}  // namespace generate_detail

using namespace generate_detail;

// ------------------------------------------------------------ entry points

bool job_key_drawable(std::string_view name) { return key_drawers().count(name) != 0; }

Result<json> randomize_jobs(const json& base_scenario, std::uint64_t seed) {
  auto base = load_scenario_json(base_scenario.dump(), "<base>");
  if (!base) return base.error();
  const JobWorld w = job_world_of(*base);
  Rng rng = Rng(seed).derive(kRandomJobsStream);
  json out = base_scenario;
  const auto jobs = out.find("jobs");
  if (jobs == out.end() || !jobs->is_array()) return out;
  for (std::size_t i = 0; i < jobs->size() && i < base->jobs.size(); ++i) {
    (*jobs)[i] = randomized_job((*jobs)[i], base->jobs[i].kind, rng, w);
  }
  vary_policy_forms(*jobs, seed);
  add_missing_idempotency_keys(out);
  if (auto check = load_scenario_json(out.dump(), "<random jobs>"); !check) return check.error();
  return out;
}

json generate_world(std::uint64_t seed) {
  Rng rng = Rng(seed).derive(kWorldStream);
  json doc = base_world(seed, rng);
  auto typed = load_scenario_json(doc.dump(), "<world>");
  if (!typed) return doc;  // derive_case reports the loader's message (a bug here)
  json faults = json::array();
  Placed p{*typed, rng, faults};
  if (rng.next_bool(0.6)) place_relapse(p);
  if (doc["services"].contains("brokerage")) place_token_edge(p, doc["services"]["brokerage"]);
  if (rng.next_bool(0.5)) place_refusal(p);
  // From a stream of their own, so the placements above stay what they were.
  Rng more = Rng(seed).derive("rehearse/check/world-placed");
  Placed q{*typed, more, faults};
  if (more.next_bool(0.5)) place_permanent_refusal(q);
  place_takeover(q);
  Rng longer = Rng(seed).derive("rehearse/check/world-long-outage");
  Placed r{*typed, longer, faults};
  if (longer.next_bool(0.25)) place_long_orchestrator_outage(r);
  doc["faults"] = std::move(faults);
  return doc;
}

Result<json> derive_world_case(std::uint64_t seed, const SwarmOptions& options,
                               SwarmChoice* choice) {
  SwarmOptions o = options;
  o.drop_base_faults = false;  // the placed faults already vary with the seed
  o.random_jobs = false;       // the jobs are drawn already
  o.damage_job_files = true;
  o.step_clocks = true;
  return derive_case(generate_world(seed), seed, o, choice,
                     fmt::format("a world generated from seed {}", seed));
}

}  // namespace rehearse::sim
