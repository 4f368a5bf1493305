#include "sim/check/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "model/agent_roles.hpp"
#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"
#include "sim/check/draw.hpp"
#include "sim/check/policy_draws.hpp"
#include "sim/fault_kinds.hpp"
#include "sim/rng.hpp"
#include "sim/scenario.hpp"
#include "sim/world.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace {

// ------------------------------------------------------------ the world

// What a drawn job may name: the services, targets and issues declared.
struct JobWorld {
  TimeMs start_ms = 0;
  bool model_api = false;
  bool brokerage = false;
  std::vector<std::string> targets;
  std::vector<std::string> issues;
  std::vector<std::string> user_services;
};

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
int weekday_of(TimeMs t) { return static_cast<int>(((t / kDayMs) % 7 + 4) % 7); }

// -------------------------------------------------------------- schedules

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

// ---------------------------------------------------------------- policies

// The core's backoff types that its parser accepts inside `form`, a policy
// whose backoff type is the placeholder "?" (the parser is the table).
std::vector<std::string> accepted_backoff_types(json form) {
  std::vector<std::string> out;
  for (int i = 0; i <= static_cast<int>(BackoffKind::polynomial); ++i) {
    const std::string name = to_string(static_cast<BackoffKind>(i));
    form["backoff"]["type"] = name;
    if (parse_retry_policy(form)) out.push_back(name);
  }
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
  switch (rng.next_below(3)) {
    case 0: return rng.next_in(1, 59);
    case 1: return rng.next_in(60, 600);
    default: return rng.next_in(600, 1800);
  }
}

// Narrowed classes (a third of the time) and a budget scope (half the time).
void draw_policy_options(Rng& rng, json& policy) {
  if (rng.next_bool(1.0 / 3)) policy["retryable_classes"] = pick_subset(rng, failure_class_names());
  if (rng.next_bool(0.5)) {
    policy["budget"] =
        to_string(rng.next_bool(0.5) ? BudgetScope::per_slot : BudgetScope::per_episode);
  }
}

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

// The loader's own keys of a job kind ("job_<kind>" in scenario_known_keys()).
const std::vector<std::string>& kind_keys(JobKind kind) {
  return scenario_known_keys().at(std::string("job_") + to_string(kind));
}

// The kind's own keys drawn into `job` (replacing what was there); false when
// one of them cannot be drawn in this world.
bool draw_kind_keys(JobKind kind, Rng& rng, const JobWorld& w, json& job) {
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

// ------------------------------------------------------------ whole worlds

// Every generated world starts in the week of this Monday.
constexpr const char* kWorldWeek = "2026-12-07T00:00:00Z";

std::vector<std::string> numbered(const std::string& prefix, std::int64_t n) {
  std::vector<std::string> out;
  for (std::int64_t i = 1; i <= n; ++i) out.push_back(fmt::format("{}-{}", prefix, i));
  return out;
}

std::string agent_id(Role role) { return fmt::format("agent-{}", to_string(role)); }

// The services: the messenger always (notifications go there), the others
// some of the time; an orchestrator with 1..3 issues and every role staffed.
json draw_services(Rng& rng) {
  json s{{"messenger", {{"targets", numbered("team", rng.next_in(1, 3))}}}};
  if (rng.next_bool(0.7)) s["model-api"] = json::object();
  if (rng.next_bool(0.5)) s["brokerage"] = json::object();
  if (rng.next_bool(0.35)) {
    json issues = json::array();
    for (const std::string& id : numbered("ISS", rng.next_in(1, 3))) {
      issues.push_back({{"id", id}, {"status", pick(rng, issue_status_names())}});
    }
    json agents = json::array();
    for (const Role role : kAllRoles) {
      agents.push_back({{"id", agent_id(role)}, {"role", to_string(role)}});
    }
    s["orchestrator"] = {{"issues", issues}, {"agents", agents}};
  }
  if (rng.next_bool(0.4)) {
    for (const std::string& name : numbered("api", rng.next_in(1, 2))) s[name] = json::object();
  }
  return s;
}

// The job kinds of the loader's table (in its order) that this build runs.
std::vector<JobKind> runnable_kinds() {
  std::vector<JobKind> out;
  for (int i = 0;; ++i) {
    const auto kind = static_cast<JobKind>(i);
    if (scenario_known_keys().count(std::string("job_") + to_string(kind)) == 0) break;
    if (world_supports(kind)) out.push_back(kind);
  }
  return out;
}

// One new job of `kind`, or nullopt when the world lacks what it names.
std::optional<json> new_job(JobKind kind, std::size_t index, Rng& rng, const JobWorld& w) {
  json job{{"id", fmt::format("job-{}", index)},
           {"kind", to_string(kind)},
           {"schedule", draw_schedule(rng, w.start_ms)},
           {"retry_policy", draw_retry_policy(rng)}};
  if (!draw_kind_keys(kind, rng, w, job)) return std::nullopt;
  // Retrying a publish job is safe with a key (docs/semantics.md §2).
  if (default_side_effects(kind) == SideEffectKind::publish) {
    job["idempotency_key"] = "{job}:{slot}";
  }
  return job;
}

// A job whose kind has items (reconcile) is drawn at most once: two jobs
// over the same issue would be two items the monitors cannot tell apart.
bool has_items(JobKind kind) {
  const auto& keys = kind_keys(kind);
  return std::find(keys.begin(), keys.end(), "items") != keys.end();
}

// The kinds whose keys this world can draw (tried on a copy of the generator).
std::vector<JobKind> drawable_kinds(const Rng& rng, const JobWorld& w) {
  std::vector<JobKind> out;
  for (const JobKind kind : runnable_kinds()) {
    Rng scratch = rng;
    json job = json::object();
    if (draw_kind_keys(kind, scratch, w, job)) out.push_back(kind);
  }
  return out;
}

// 1..5 jobs: a group job 3 times in 5 and a reconcile job whenever the world
// has an orchestrator (first, when they are drawn), then 1..3 of the kinds
// the world can draw (one with items at most once).
json draw_jobs(Rng& rng, const JobWorld& w) {
  json jobs = json::array();
  const std::vector<JobKind> kinds = drawable_kinds(rng, w);
  std::vector<JobKind> wanted;
  if (rng.next_bool(0.6)) wanted.push_back(JobKind::group);
  wanted.push_back(JobKind::reconcile);
  for (auto n = rng.next_in(1, 3); n > 0; --n) wanted.push_back(pick(rng, kinds));
  bool items_drawn = false;
  for (const JobKind kind : wanted) {
    if (has_items(kind) && items_drawn) continue;
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    if (auto job = new_job(kind, jobs.size() + 1, rng, w)) {
      items_drawn = items_drawn || has_items(kind);
      jobs.push_back(std::move(*job));
    }
  }
  return jobs;
}

// The environment a reconcile job reads its agents from.
json draw_environment(const json& services) {
  json env = json::object();
  if (!services.contains("orchestrator")) return env;
  for (const Role role : kAllRoles) env[role_env_var(role)] = agent_id(role);
  return env;
}

}  // namespace

// ------------------------------------------------ placed faults (worlds)

namespace {

struct Placed {
  const Scenario& world;
  Rng& rng;
  json& faults;
};

// The first firings of a job's schedule after start (at most n, inside the span).
std::vector<TimeMs> firings(const Scenario& s, const JobSpec& job, int n) {
  std::vector<TimeMs> out;
  auto cron = CronSchedule::parse(job.schedule);
  if (!cron) return out;
  TimeMs t = s.start_ms;
  while (static_cast<int>(out.size()) < n) {
    auto next = cron->next_after(t);
    if (!next || *next >= s.until_ms) break;
    out.push_back(*next);
    t = *next;
  }
  return out;
}

// The lasting service fault kinds of the table whose only needed key is the
// service (quota, HTTP errors, timeouts...), with the services they may name.
std::vector<std::pair<std::string, std::vector<std::string>>> outage_kinds(const Scenario& s) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const FaultKindSpec& kind : fault_kinds()) {
    const auto parsed = parse_fault_kind(kind.name);
    if (!kind.lasting || kind.applies_to != FaultTarget::service) continue;
    if (!parsed || !world_supports(*parsed)) continue;
    std::vector<std::string> services;
    bool simple = true;
    for (const FaultKeySpec& key : kind.keys) {
      if (key.type != FaultKeyType::service) {
        simple = simple && !key.required;
        continue;
      }
      for (const std::string& name : key.names) {
        const auto service = parse_service_kind(name);
        if (service && s.services.has(*service)) services.push_back(name);
      }
      if (key.user_services) {
        for (const auto& [name, u] : s.services.user) services.push_back(name);
      }
    }
    if (simple && !services.empty()) out.emplace_back(kind.name, services);
  }
  return out;
}

json window(const std::string& kind, TimeMs at, DurationMs for_ms, const char* note) {
  return {
      {"at", format_instant(at)}, {"kind", kind}, {"for", format_duration(for_ms)}, {"note", note}};
}

// An outage of one service that recovers and comes back: two windows of the
// same kind, a gap of 10..90 minutes between them.
void place_relapse(Placed& p) {
  const auto kinds = outage_kinds(p.world);
  if (kinds.empty()) return;
  const auto& [kind, services] = pick(p.rng, kinds);
  const std::string service = pick(p.rng, services);
  const DurationMs span = p.world.until_ms - p.world.start_ms;
  const TimeMs first =
      p.world.start_ms +
      p.rng.next_in(5, std::max<std::int64_t>(6, span / kMinuteMs / 3)) * kMinuteMs;
  const DurationMs d1 = p.rng.next_in(2, 40) * kMinuteMs;
  const TimeMs second = first + d1 + p.rng.next_in(10, 90) * kMinuteMs;
  const DurationMs d2 = p.rng.next_in(2, 40) * kMinuteMs;
  if (second + d2 >= p.world.until_ms) return;
  for (const auto& [at, d] : {std::pair{first, d1}, std::pair{second, d2}}) {
    json f = window(kind, at, d, "generated: an outage that recovers and comes back");
    f["service"] = service;
    p.faults.push_back(std::move(f));
  }
}

// A token whose lifetime ends within 5 s of a later request of a fetch job,
// and (half the time) the brokerage failing that request's calls (503) from
// 50 ms after it, when the token reissued for it is in hand (the reissue is
// the request's first call), then revoking that token 1..10 s later, before
// the retry presents it.
void place_token_edge(Placed& p, json& brokerage) {
  const auto fetch = std::find_if(p.world.jobs.begin(), p.world.jobs.end(),
                                  [](const JobSpec& j) { return j.kind == JobKind::fetch; });
  if (fetch == p.world.jobs.end()) return;
  const std::vector<TimeMs> slots = firings(p.world, *fetch, 4);
  if (slots.size() < 2) return;
  const TimeMs near = slots[1 + p.rng.next_below(slots.size() - 1)];
  const DurationMs lifetime = near - slots[0] + p.rng.next_in(-5000, 5000);
  brokerage["token_lifetime"] = format_duration(std::max<DurationMs>(kSecondMs, lifetime));
  if (!p.rng.next_bool(0.5)) return;
  json failing = window("http_errors", near + 50, 2 * kSecondMs,
                        "generated: the request at the token's end fails after its reissue");
  failing["service"] = "brokerage";
  failing["status"] = 503;
  p.faults.push_back(std::move(failing));
  p.faults.push_back({{"at", format_instant(near + p.rng.next_in(3, 10) * kSecondMs)},
                      {"kind", "token_revoked"},
                      {"note", "generated: revoked between the reissue and the retry"}});
}

// The messenger refusing the first delivery of a job that posts: half the
// time with its outage page (503), else with a text-only error
// (`ConnectionError: HTTP <status>`, sim/messenger.cpp) whose status the
// worker can only read from the words.
void place_refusal(Placed& p) {
  static const std::vector<int> kTextOnly = {401, 403, 429, 500};
  for (const JobSpec& job : p.world.jobs) {
    if (job.targets.empty()) continue;
    const std::vector<TimeMs> slots = firings(p.world, job, 1);
    if (slots.empty()) return;
    // A slot near the end leaves the refusal less time: it ends by `until`.
    const DurationMs d = std::min(p.rng.next_in(1, 10) * kMinuteMs, p.world.until_ms - slots[0]);
    json f = window("messenger_down", slots[0], d, "generated: the messenger refuses a delivery");
    f["targets"] = job.targets;
    if (p.rng.next_bool(0.5)) f["status"] = pick(p.rng, kTextOnly);
    p.faults.push_back(std::move(f));
    return;
  }
}

// A publish job writes its post with the model API (model/publish_job.hpp),
// which the loader does not require: without it every run fails with a
// network error and the job never settles, a configuration mistake rather
// than the core's. A generated world declares it.
void declare_model_api_for_publish(json& doc) {
  for (const json& job : doc["jobs"]) {
    if (job["kind"] == to_string(JobKind::publish) && !doc["services"].contains("model-api")) {
      doc["services"]["model-api"] = json::object();
    }
  }
}

// Concurrency; one world in three starts a standby worker on the same state
// directory, and one in four runs the worker over the durable disk queue
// (each from a stream of its own, so the other draws of a seed stay what they
// were before worlds had them).
json draw_queue(std::uint64_t seed, Rng& rng) {
  json queue{{"concurrency", rng.next_bool(0.75) ? 1 : rng.next_in(2, 3)}};
  Rng workers = Rng(seed).derive("workers");
  if (workers.next_bool(1.0 / 3.0)) queue["workers"] = 2;
  if (Rng(seed).derive("queue-store").next_bool(1.0 / 4.0)) queue["store"] = "disk";
  return queue;
}

// A slow token issuer one world in three with a brokerage (from a stream of
// its own): the requests of a run then wait on one issuance.
void draw_issuer_latency(std::uint64_t seed, json& services) {
  if (!services.contains("brokerage")) return;
  Rng rng = Rng(seed).derive("rehearse/check/issuer");
  if (!rng.next_bool(1.0 / 3.0)) return;
  services["brokerage"]["issue_latency"] = format_duration(rng.next_in(1, 30) * kSecondMs);
}

// One world in six names an environment override for one of its jobs: an
// empty value or one that is no cron (a config error for that job, never a
// fallback to its default: docs/semantics.md §3), or another schedule.
void draw_schedule_override(std::uint64_t seed, TimeMs start_ms, json& doc) {
  Rng rng = Rng(seed).derive("rehearse/check/schedule-env");
  json& jobs = doc["jobs"];
  if (!rng.next_bool(1.0 / 6.0) || !jobs.is_array() || jobs.empty()) return;
  const std::size_t i = rng.next_below(jobs.size());
  const std::string name = fmt::format("JOB_{}_CRON", i + 1);
  std::string value;
  switch (rng.next_below(3)) {
    case 0: break;
    case 1: value = "61 * * * *"; break;
    default: value = draw_schedule(rng, start_ms);
  }
  jobs[i]["schedule_env"] = name;
  doc["env"][name] = value;
}

// Half the reconcile jobs of a world with two issues or more take every
// issue as an item, one per cycle (from a stream of its own): a batch that
// leaves due items for the next cycle is where a fairness bug hides.
void narrow_batches(std::uint64_t seed, const json& services, json& jobs) {
  if (!services.contains("orchestrator")) return;
  const json& issues = services["orchestrator"]["issues"];
  Rng rng = Rng(seed).derive("rehearse/check/batches");
  for (json& job : jobs) {
    if (job.value("kind", std::string()) != to_string(JobKind::reconcile)) continue;
    if (issues.size() < 2 || !rng.next_bool(0.5)) continue;
    json items = json::array();
    for (const json& issue : issues) items.push_back({{"issue", issue["id"]}});
    job["items"] = std::move(items);
    job["batch_size"] = 1;
  }
}

// Role names as the incident's settings had them, old and new mixed (from a
// stream of their own): each agent of an orchestrator is listed under its
// role's name or, half the time, under a legacy name of that role; and one
// orchestrator in four gets a name that is wrong: the developer under a name
// no role has, or the lead under the developer's role (every handoff is then
// a config error).
void draw_role_names(std::uint64_t seed, json& services) {
  if (!services.contains("orchestrator")) return;
  Rng rng = Rng(seed).derive("rehearse/check/role-names");
  static const std::map<std::string, std::vector<std::string>> kLegacy{
      {"lead", {"ceo", "chief", "manager"}},
      {"dev", {"engineer", "developer", "coder", "builder"}},
      {"ops", {"sre", "devops", "operator"}},
      {"planning", {"pm", "planner", "product", "strategist"}}};
  json& agents = services["orchestrator"]["agents"];
  for (json& agent : agents) {
    const auto legacy = kLegacy.find(agent["role"].get<std::string>());
    if (legacy != kLegacy.end() && rng.next_bool(0.5)) agent["role"] = pick(rng, legacy->second);
  }
  if (!rng.next_bool(1.0 / 4.0)) return;
  const bool lead_as_dev = rng.next_bool(0.5);
  for (json& agent : agents) {
    if (lead_as_dev && agent["id"] == agent_id(Role::lead)) agent["role"] = "developer";
    if (!lead_as_dev && agent["id"] == agent_id(Role::dev)) agent["role"] = "frontend";
  }
}

json base_world(std::uint64_t seed, Rng& rng) {
  const TimeMs start =
      *parse_instant(kWorldWeek) + rng.next_in(0, 6) * kDayMs + rng.next_in(0, 23) * kHourMs;
  json services = draw_services(rng);
  draw_issuer_latency(seed, services);
  draw_role_names(seed, services);
  json doc{{"format", kScenarioFormat},
           {"scenario", kGeneratedWorldName},
           {"description", fmt::format("A world generated by rehearse check from seed {}", seed)},
           {"start", format_instant(start)},
           {"until", format_instant(start + rng.next_in(2, 12) * kHourMs)},
           {"seed", seed},
           {"env", draw_environment(services)},
           {"queue", draw_queue(seed, rng)},
           {"services", services},
           {"faults", json::array()}};
  JobWorld w;
  w.start_ms = start;
  w.model_api = services.contains("model-api");
  w.brokerage = services.contains("brokerage");
  w.targets = services["messenger"]["targets"].get<std::vector<std::string>>();
  if (services.contains("orchestrator")) {
    for (const json& issue : services["orchestrator"]["issues"]) w.issues.push_back(issue["id"]);
  }
  for (const auto& [name, value] : services.items()) {
    if (!parse_service_kind(name)) w.user_services.push_back(name);
  }
  doc["jobs"] = draw_jobs(rng, w);
  vary_policy_forms(doc["jobs"], seed);
  narrow_batches(seed, doc["services"], doc["jobs"]);
  draw_schedule_override(seed, start, doc);
  declare_model_api_for_publish(doc);
  return doc;
}

// A job the loader flags for retrying side effects without saying why that
// is safe (docs/semantics.md §2: a publish job whose drawn policy retries)
// gets the idempotency key a generated publish job has: the search looks for
// the core's mistakes, not for a configuration the loader already warns of.
void add_missing_idempotency_keys(json& doc) {
  const ScenarioCheck check = check_scenario_json(doc.dump(), "<random jobs>");
  for (const ScenarioFlag& flag : check.flags) {
    const auto at = flag.where.rfind("/jobs/");
    if (flag.kind != FlagKind::side_effects || at == std::string::npos) continue;
    const std::size_t i = std::stoul(flag.where.substr(at + 6));
    if (i < doc["jobs"].size()) doc["jobs"][i]["idempotency_key"] = "{job}:{slot}";
  }
}

// The service a run of the job calls first, when the world declares one that
// can refuse it.
std::optional<std::string> first_called_service(const Scenario& world, const JobSpec& job) {
  const auto builtin = [&](ServiceKind kind) -> std::optional<std::string> {
    if (!world.services.has(kind)) return std::nullopt;
    return std::string(to_string(kind));
  };
  switch (job.kind) {
    case JobKind::call:
      if (!job.calls.empty()) return job.calls.front().service;
      return std::nullopt;
    case JobKind::group:
      if (std::none_of(job.tasks.begin(), job.tasks.end(),
                       [](const GroupTask& t) { return t.model_calls > 0; })) {
        return std::nullopt;
      }
      return builtin(ServiceKind::model_api);
    case JobKind::publish: return builtin(ServiceKind::model_api);
    case JobKind::fetch: return builtin(ServiceKind::brokerage);
    case JobKind::reconcile: return std::nullopt;
  }
  return std::nullopt;
}

// A permanent refusal (400, 404, 410, 422: validation or not_found, never
// retried by default) from the first service a job calls, at one of its
// first slots: the failure classes the swarm's uniform statuses seldom draw.
void place_permanent_refusal(Placed& p) {
  static const std::vector<int> kPermanent = {400, 404, 410, 422};
  for (const JobSpec& job : p.world.jobs) {
    const std::optional<std::string> service = first_called_service(p.world, job);
    if (!service) continue;
    const std::vector<TimeMs> slots = firings(p.world, job, 2);
    if (slots.empty()) return;
    const TimeMs at = pick(p.rng, slots) - kSecondMs;
    const DurationMs d = std::min(p.rng.next_in(1, 10) * kMinuteMs, p.world.until_ms - at);
    json f = window("http_errors", at, d, "generated: the service refuses the request for good");
    f["service"] = *service;
    f["status"] = pick(p.rng, kPermanent);
    p.faults.push_back(std::move(f));
    return;
  }
}

// With a standby worker: the acting worker goes down a few minutes into the
// first placed outage, while a retry is likely waiting, so the standby takes
// over a queue that holds one (docs/worker.md).
void place_takeover(Placed& p) {
  if (p.world.queue.workers < 2 || p.faults.empty()) return;
  const auto outage = parse_instant(p.faults.front().value("at", std::string()));
  if (!outage) return;
  const TimeMs at = *outage + p.rng.next_in(1, 5) * kMinuteMs;
  const DurationMs down = p.rng.next_in(5, 30) * kMinuteMs;
  if (at + down > p.world.until_ms) return;
  p.faults.push_back({{"at", format_instant(at)},
                      {"kind", "restart"},
                      {"worker", 1},
                      {"down_for", format_duration(down)},
                      {"note", "generated: the acting worker goes down, the standby takes over"}});
}

// A long orchestrator outage (503 to every call for 3 to 6 hours, from a
// reconcile job's first firing): an item failing at every due attempt backs
// off 1, 2, 4 ... 32 minutes and then reaches the 1 h cap, where a cap that
// only stops the doubling would show.
void place_long_orchestrator_outage(Placed& p) {
  const auto reconcile =
      std::find_if(p.world.jobs.begin(), p.world.jobs.end(),
                   [](const JobSpec& j) { return j.kind == JobKind::reconcile; });
  if (reconcile == p.world.jobs.end()) return;
  const std::vector<TimeMs> slots = firings(p.world, *reconcile, 1);
  if (slots.empty()) return;
  const TimeMs at = slots[0] - kSecondMs;
  const DurationMs d =
      std::min(p.rng.next_in(3 * 60, 6 * 60) * kMinuteMs, p.world.until_ms - kSecondMs - at);
  if (d <= 0) return;
  json f = window("http_errors", at, d, "generated: the orchestrator is down for hours");
  f["service"] = "orchestrator";
  f["status"] = 503;
  p.faults.push_back(std::move(f));
}

}  // namespace

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
  return derive_case(generate_world(seed), seed, o, choice,
                     fmt::format("a world generated from seed {}", seed));
}

}  // namespace rehearse::sim
