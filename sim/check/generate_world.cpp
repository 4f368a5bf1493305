// A whole generated world: its services, jobs and environment, and the faults
// placed where they bite (relapses, token edges, refusals, takeovers, outages).
#include "sim/check/generate_detail.hpp"

namespace rehearse::sim::generate_detail {

namespace {

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
  for (const JobKind kind : all_job_kinds()) {
    if (world_supports(kind)) out.push_back(kind);
  }
  return out;
}

// One new job of `kind`, or nullopt when the world lacks what it names.
std::optional<json> new_job(JobKind kind, std::size_t index, Rng& rng, const JobWorld& w) {
  REHEARSE_ASSERT_GE(index, 1u);  // ids count from job-1
  REHEARSE_ASSERT(world_supports(kind));
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
  REHEARSE_ASSERT_LE(jobs.size(), wanted.size());  // at most one job per wanted kind
  return jobs;
}

// The environment a reconcile job reads its agents from.
json draw_environment(const json& services) {
  json env = json::object();
  if (!services.contains("orchestrator")) return env;
  for (const Role role : kAllRoles) env[role_env_var(role)] = agent_id(role);
  return env;
}

// ------------------------------------------------ placed faults (worlds)

// The first firings of a job's schedule after start (at most n, inside the span).
std::vector<TimeMs> firings(const Scenario& s, const JobSpec& job, int n) {
  std::vector<TimeMs> out;
  // In the job's zone: a zoned job's slots are not its UTC readings.
  auto cron = CronSchedule::parse(job.schedule, job.tz);
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

}  // namespace

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
// (`ConnectionError: HTTP <status>`, sim/world/messenger.cpp) whose status the
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

namespace {

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

// Three services of the user's own in four get a capacity (from a stream of their
// own): a rate limit, a line for the servers, or both; refusals with 429 or
// 503, with or without a Retry-After, sometimes counted against the bucket. Call jobs then meet
// refusals that no fault scripted, and the swarm may lower the rate (fault kind `capacity`).
void draw_capacities(std::uint64_t seed, json& services) {
  Rng rng = Rng(seed).derive("rehearse/check/capacity");
  for (auto& [name, body] : services.items()) {
    if (parse_service_kind(name) || !rng.next_bool(0.75)) continue;
    json capacity = json::object();
    const auto limits = rng.next_below(3);  // 0: rate, 1: concurrency, 2: both
    if (limits != 1) {
      // Tight enough for a job's own calls or a neighbour's to meet it.
      capacity["rate"] = rng.next_in(1, 3);
      capacity["per"] = pick(rng, std::vector<std::string>{"1m", "10m", "1h"});
      if (rng.next_bool(0.5)) capacity["burst"] = rng.next_in(1, 2);
      if (rng.next_bool(0.5)) capacity["status"] = 503;
      const auto hint = rng.next_below(4);  // 0: none, 1: fixed, 2 and 3: auto
      if (hint == 1) capacity["retry_after"] = format_duration(rng.next_in(1, 120) * kSecondMs);
      if (hint >= 2) capacity["retry_after"] = "auto";
      if (rng.next_bool(0.25)) capacity["refusals_count"] = true;
    }
    if (limits != 0) capacity["concurrency"] = rng.next_in(1, 3);
    body["capacity"] = std::move(capacity);
  }
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

// ------------------------------------------------------------ time zones

// The zones a zoned world reads schedules in: both hemispheres (Santiago and
// Lord Howe change in the southern autumn and spring, Santiago at local
// midnight), a 30-minute shift (Lord Howe), a half-hour offset that never
// changes (Kolkata), and UTC named as a zone.
const std::vector<std::string>& world_zones() {
  static const std::vector<std::string> kZones{"Europe/Berlin",    "America/New_York",
                                               "America/Santiago", "Australia/Lord_Howe",
                                               "Asia/Kolkata",     "UTC"};
  return kZones;
}

struct WorldZone {
  std::string name;
  // The change of offset the start was moved before: the gap or fold the
  // world is built to meet.
  std::optional<ZoneTransition> turn;
};

// One world in four is zoned (from a stream of its own, so that the other
// draws of a seed stay what they were); half of those start 1..3 hours
// before their zone's next change of offset, since a gap or a fold months
// after the span is never met.
std::optional<WorldZone> draw_world_zone(Rng& zones, TimeMs& start) {
  if (!zones.next_bool(0.25)) return std::nullopt;
  WorldZone z{pick(zones, world_zones()), std::nullopt};
  if (!zones.next_bool(0.5)) return z;
  const auto tz = TimeZone::locate(z.name);
  if (!tz) return std::nullopt;  // a system without the zone: the world stays in UTC
  z.turn = tz->next_transition(start, start + 366 * kDayMs);
  if (z.turn) start = z.turn->at - zones.next_in(1, 3) * kHourMs;
  return z;
}

// A schedule with a wall-clock match inside the readings the transition
// skips or repeats: a fixed hour (shifted in a gap, once in a fold), a `*`
// hour (no run for a missing hour, two in a repeated one) or steps within
// the hour (several matches in one gap run once), docs/semantics.md §3.
std::string transition_schedule(Rng& rng, const ZoneTransition& turn) {
  static const std::vector<int> kSteps{10, 15, 20, 30};
  const TimeMs from = turn.at + std::min(turn.offset_before, turn.offset_after);
  const TimeMs to = turn.at + std::max(turn.offset_before, turn.offset_after);
  REHEARSE_ASSERT_GE(to - from, kMinuteMs);  // a change of offset of a minute or more
  const TimeMs local = from + rng.next_in(0, (to - from) / kMinuteMs - 1) * kMinuteMs;
  REHEARSE_ASSERT_GE(local, 0);  // generated worlds start after the epoch
  const auto hour = (local / kHourMs) % 24;
  const auto minute = (local / kMinuteMs) % 60;
  switch (rng.next_below(3)) {
    case 0: return fmt::format("{} {} * * *", minute, hour);
    case 1: return fmt::format("{} * * * *", minute);
    default: return fmt::format("*/{} {} * * *", pick(rng, kSteps), hour);
  }
}

// Every job of a zoned world reads its schedule in the world's zone, or one
// job in four in another zone of the list (two zones in one world); with the
// start moved before a transition, half the jobs in that zone fire in the
// readings it skips or repeats.
void draw_job_zones(Rng& zones, const WorldZone& z, json& jobs) {
  for (json& job : jobs) {
    const std::string name = zones.next_bool(0.75) ? z.name : pick(zones, world_zones());
    job["tz"] = name;
    if (z.turn && name == z.name && zones.next_bool(0.5)) {
      job["schedule"] = transition_schedule(zones, *z.turn);
    }
  }
}

}  // namespace

json base_world(std::uint64_t seed, Rng& rng) {
  TimeMs start =
      *parse_instant(kWorldWeek) + rng.next_in(0, 6) * kDayMs + rng.next_in(0, 23) * kHourMs;
  Rng zones = Rng(seed).derive("rehearse/check/zones");
  const std::optional<WorldZone> zone = draw_world_zone(zones, start);
  json services = draw_services(rng);
  draw_issuer_latency(seed, services);
  draw_capacities(seed, services);
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
  if (zone) draw_job_zones(zones, *zone, doc["jobs"]);
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

namespace {

// The service a run of the job calls first, when the world declares one that
// can refuse it.
std::optional<std::string> first_called_service(const Scenario& world, const JobSpec& job) {
  const std::vector<std::string> called = job_kind_def(job.kind).services(job);
  if (called.empty()) return std::nullopt;
  const std::optional<ServiceKind> builtin = parse_service_kind(called.front());
  if (builtin && !world.services.has(*builtin)) return std::nullopt;
  return called.front();
}

}  // namespace

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

}  // namespace rehearse::sim::generate_detail
