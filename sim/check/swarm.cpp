#include "sim/check/swarm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "model/assert.hpp"
#include "model/time.hpp"
#include "sim/check/draw.hpp"
#include "sim/check/generate.hpp"
#include "sim/check/liveness.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/world.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace {

// What the base world declares: what a drawn key may name.
struct Declared {
  TimeMs start_ms = 0;
  TimeMs until_ms = 0;
  std::vector<std::string> services;  // built-in and the user's own, by name
  std::vector<std::string> user_services;
  std::vector<std::string> rate_limited;  // user services whose capacity has a rate
  bool orchestrator = false;
  bool messenger = false;
  std::string instance;
  std::vector<std::string> issues;
  std::vector<std::string> agents;
  std::vector<std::string> targets;
  std::vector<std::string> file_jobs;  // jobs with a durable file of their own
  int workers = 1;
};

Declared declared_of(const Scenario& s) {
  Declared d;
  d.start_ms = s.start_ms;
  d.until_ms = s.until_ms;
  d.workers = s.queue.workers;
  for (ServiceKind kind : {ServiceKind::model_api, ServiceKind::orchestrator,
                           ServiceKind::brokerage, ServiceKind::messenger}) {
    if (s.services.has(kind)) d.services.emplace_back(to_string(kind));
  }
  for (const auto& [name, service] : s.services.user) {
    d.user_services.push_back(name);
    if (service.capacity && service.capacity->limits_rate()) d.rate_limited.push_back(name);
  }
  if (const auto& o = s.services.orchestrator) {
    d.orchestrator = true;
    d.instance = o->instance;
    for (const OrchestratorIssue& issue : o->issues) d.issues.push_back(issue.id);
    for (const OrchestratorAgent& agent : o->agents) d.agents.push_back(agent.id);
  }
  for (const JobSpec& job : s.jobs) {
    // A fleet's jobs are drawn again from the case's seed: only listed jobs keep their kind.
    if (job_keeps_file(job.kind) && !job.from_fleet) d.file_jobs.push_back(job.id);
  }
  if (const auto& m = s.services.messenger) {
    d.messenger = true;
    d.targets = m->targets;
  }
  // A loaded scenario: until after start (draw_fault draws inside the span).
  REHEARSE_ASSERT_LT(d.start_ms, d.until_ms);
  return d;
}

// The services a `service` key may name in this world.
std::vector<std::string> service_candidates(const FaultKeySpec& key, const Declared& d) {
  std::vector<std::string> out;
  for (const std::string& name : key.names) {
    if (std::find(d.services.begin(), d.services.end(), name) != d.services.end()) {
      out.push_back(name);
    }
  }
  if (key.user_services) out.insert(out.end(), d.user_services.begin(), d.user_services.end());
  // A subset of what the key names and the user declared.
  REHEARSE_ASSERT_LE(out.size(), key.names.size() + d.user_services.size());
  return out;
}

// Whether the world has what a value of this key must name.
bool key_drawable(const FaultKeySpec& key, const Declared& d) {
  switch (key.type) {
    case FaultKeyType::service: return !service_candidates(key, d).empty();
    case FaultKeyType::issue:
    case FaultKeyType::issue_list: return !d.issues.empty();
    case FaultKeyType::agent: return !d.agents.empty();
    case FaultKeyType::new_instance: return d.orchestrator;
    case FaultKeyType::targets: return !d.targets.empty();
    case FaultKeyType::job: return !d.file_jobs.empty();
    case FaultKeyType::rate_limited: return !d.rate_limited.empty();
    case FaultKeyType::name: return !key.names.empty();
    default: return true;
  }
}

// A rate: 1 half the time (every call hit), else one of 0.05 .. 0.95.
double draw_rate(Rng& rng) {
  if (rng.next_bool(0.5)) return 1.0;
  const double rate = static_cast<double>(rng.next_in(1, 19)) / 20.0;
  REHEARSE_ASSERT(rate > 0.0 && rate < 1.0);  // a rate of 0 would be no fault at all
  return rate;
}

// A duration on a rough log scale: seconds, minutes, a quarter to two hours,
// or hours; whole seconds, at least 1 s, at most `cap`.
DurationMs draw_duration(Rng& rng, DurationMs cap) {
  static const std::pair<DurationMs, DurationMs> kScales[] = {{kSecondMs, kMinuteMs},
                                                              {kMinuteMs, 15 * kMinuteMs},
                                                              {15 * kMinuteMs, 2 * kHourMs},
                                                              {2 * kHourMs, 12 * kHourMs}};
  const auto& [lo, hi] = kScales[rng.next_below(std::size(kScales))];
  const DurationMs d = rng.next_in(lo / kSecondMs, hi / kSecondMs) * kSecondMs;
  REHEARSE_ASSERT_GE(d, lo);
  REHEARSE_ASSERT_LE(d, hi);
  return std::max<DurationMs>(kSecondMs, std::min(d, cap));
}

// One value of `key` for a fault at `at_ms`, drawn by the key's type; nullopt:
// leave the key out (its default, or the run's own draw).
std::optional<json> draw_value(const FaultKeySpec& key, Rng& rng, const Declared& d, TimeMs at_ms,
                               int& instances_made) {
  // draw_fault placed the fault inside the span.
  REHEARSE_ASSERT_GE(at_ms, d.start_ms);
  REHEARSE_ASSERT_LE(at_ms, d.until_ms);
  switch (key.type) {
    case FaultKeyType::service: return pick(rng, service_candidates(key, d));
    case FaultKeyType::down_time: {
      const DurationMs room = d.until_ms - at_ms;
      const DurationMs cap = std::min<DurationMs>(room, 30 * kMinuteMs);
      if (cap <= 0) return format_duration(0);
      const DurationMs down = rng.next_in(0, cap / kSecondMs) * kSecondMs;
      // The process is back before `until` (the loader refuses a later one).
      REHEARSE_ASSERT_LE(down, room);
      return format_duration(down);
    }
    case FaultKeyType::integer:
      if (!key.names.empty()) return std::stoi(pick(rng, key.names));
      return rng.next_in(key.min, key.max);
    case FaultKeyType::worker: {                // 0: the key left out, the machine
      if (d.workers <= 1) return std::nullopt;  // no draw: one-worker worlds keep their seeds
      const std::int64_t w = rng.next_in(0, d.workers);
      return w == 0 ? std::nullopt : std::optional<json>(w);
    }
    case FaultKeyType::rate: return draw_rate(rng);
    case FaultKeyType::name: return pick(rng, key.names);
    case FaultKeyType::issue: return pick(rng, d.issues);
    case FaultKeyType::issue_list: return pick_subset(rng, d.issues);
    case FaultKeyType::agent: return pick(rng, d.agents);
    case FaultKeyType::new_instance:
      return fmt::format("{}-swarm-{}", d.instance, ++instances_made);
    case FaultKeyType::targets: return pick_subset(rng, d.targets);
    case FaultKeyType::job: return pick(rng, d.file_jobs);
    case FaultKeyType::rate_limited: return pick(rng, d.rate_limited);
    // Exact damage needs the file's size when the fault fires, which only
    // the run knows: left to the run's generator (it varies with the seed).
    case FaultKeyType::cut:
    case FaultKeyType::flips: return std::nullopt;
    case FaultKeyType::step: {  // back or forward, as NTP or a resumed machine steps it
      const DurationMs by = draw_duration(rng, 3 * kHourMs);
      return (rng.next_bool(0.5) ? "-" : "+") + format_duration(by);
    }
  }
  return std::nullopt;
}

// Whether a kind can be drawn in this world at all.
bool kind_applicable(const FaultKindSpec& kind, const Declared& d) {
  const auto parsed = parse_fault_kind(kind.name);
  if (!parsed || !world_supports(*parsed)) return false;
  if (kind.applies_to == FaultTarget::orchestrator && !d.orchestrator) return false;
  if (kind.applies_to == FaultTarget::messenger && !d.messenger) return false;
  for (const FaultKeySpec& key : kind.keys) {
    const bool needed = key.required || key.type == FaultKeyType::service;
    if (needed && !key_drawable(key, d)) return false;
  }
  return true;
}

// One fault of `kind`: `at` inside the span (a lasting one leaves at least a
// second before `until`), `for` for a lasting kind, then each key: required
// ones and `service` always, the other optional ones half the time.
json draw_fault(const FaultKindSpec& kind, Rng& rng, const Declared& d, int& instances_made) {
  const DurationMs span = d.until_ms - d.start_ms;
  const DurationMs last_start = kind.lasting ? std::max<DurationMs>(0, span - kSecondMs) : span;
  const TimeMs at = d.start_ms + rng.next_in(0, last_start / kSecondMs) * kSecondMs;
  // Inside the span, as the loader requires of every fault.
  REHEARSE_ASSERT_GE(at, d.start_ms);
  REHEARSE_ASSERT_LE(at, d.until_ms);
  json fault{{"at", format_instant(at)}, {"kind", kind.name}};
  if (kind.lasting) {
    const DurationMs lasts = draw_duration(rng, d.until_ms - at);
    // Over by `until` (when the span leaves the second a lasting fault needs).
    const TimeMs latest_end = std::max(d.until_ms, at + kSecondMs);
    REHEARSE_ASSERT_LE(at + lasts, latest_end);
    fault["for"] = format_duration(lasts);
  }
  for (const FaultKeySpec& key : kind.keys) {
    const bool always = key.required || key.type == FaultKeyType::service;
    if (!always && !rng.next_bool(0.5)) continue;
    if (!key_drawable(key, d)) continue;
    if (auto value = draw_value(key, rng, d, at, instances_made)) {
      fault[std::string(key.name)] = std::move(*value);
    }
  }
  fault["note"] = "swarm";
  return fault;
}

// The base's own faults, each kept with probability 1/2 (or all). A lasting
// one without `for` (to the end of the run) is pinned to the base's `until`,
// so that extending the span does not lengthen it.
json kept_base_faults(const json& base, const Scenario& typed, Rng& rng,
                      const SwarmOptions& options, SwarmChoice& c) {
  json kept = json::array();
  const auto it = base.find("faults");
  if (it == base.end() || !it->is_array()) return kept;
  for (std::size_t i = 0; i < it->size(); ++i) {
    ++c.base_faults;
    if (options.drop_base_faults && !rng.next_bool(0.5)) continue;
    json fault = (*it)[i];
    if (i < typed.faults.size() && fault_has_duration(typed.faults[i].kind) &&
        !fault.contains("for")) {
      fault["for"] = format_duration(typed.until_ms - typed.faults[i].at_ms);
    }
    kept.push_back(std::move(fault));
    ++c.base_faults_kept;
  }
  REHEARSE_ASSERT_EQ(kept.size(), c.base_faults_kept);
  REHEARSE_ASSERT_LE(c.base_faults_kept, c.base_faults);
  return kept;
}

// The settle window: `until` moved so that the settle bound follows the last
// fault's end (never earlier than the base's own `until`).
Status extend_for_settling(json& derived, SwarmChoice& c) {
  auto typed = load_scenario_json(derived.dump(), "<derived>");
  if (!typed) return typed.error();
  const TimeMs last = last_fault_end_ms(*typed);
  const DurationMs bound = settle_bound_ms(*typed, last);
  REHEARSE_ASSERT_GE(bound, 0);
  c.settle_ms = bound;
  derived["until"] = format_instant(std::max(typed->until_ms, last + bound));
  return {};
}

// Swarm: each applicable kind on with probability 1/2; each kind on gets
// 1..max_instances faults.
// A kind added to the table after the swarm's seeds were published draws
// from a stream of its own (derived, not consumed), so every earlier kind's
// faults for a seed stay what they were: a printed replay line keeps meaning
// the same case.
bool draws_own_stream(const FaultKindSpec& kind) {
  return kind.applies_to == FaultTarget::job_file || kind.name == std::string_view("clock_step") ||
         kind.name == std::string_view("capacity");
}

void add_swarm_faults(json& faults, Rng& rng, const Declared& d, const SwarmOptions& options,
                      SwarmChoice& c) {
  int instances_made = 0;
  std::vector<std::pair<const FaultKindSpec*, Rng*>> on;
  std::vector<Rng> own;
  own.reserve(fault_kinds().size());
  for (const FaultKindSpec& kind : fault_kinds()) {
    if (!kind_applicable(kind, d)) continue;
    if (kind.applies_to == FaultTarget::job_file && !options.damage_job_files) continue;
    if (kind.name == std::string_view("clock_step") && !options.step_clocks) continue;
    Rng* from = &rng;
    if (draws_own_stream(kind)) {
      from = &own.emplace_back(rng.derive(fmt::format("rehearse/check/swarm/{}", kind.name)));
    }
    const bool is_on = from->next_bool(0.5);
    (is_on ? c.kinds_on : c.kinds_off).emplace_back(kind.name);
    if (is_on) on.emplace_back(&kind, from);
  }
  // Each applicable kind was either switched on or left off, once.
  REHEARSE_ASSERT_EQ(on.size(), c.kinds_on.size());
  REHEARSE_ASSERT_LE(c.kinds_on.size() + c.kinds_off.size(), fault_kinds().size());
  for (const auto& [kind, from] : on) {
    const auto n = from->next_in(1, std::max(1, options.max_instances));
    for (std::int64_t i = 0; i < n; ++i) {
      faults.push_back(draw_fault(*kind, *from, d, instances_made));
      ++c.faults_added;
    }
  }
}

std::string describe_choice(const std::string& origin, std::uint64_t seed, const SwarmChoice& c) {
  REHEARSE_ASSERT_LE(c.base_faults_kept, c.base_faults);  // kept_base_faults keeps a subset
  std::string on;
  for (const std::string& k : c.kinds_on) on += (on.empty() ? "" : ", ") + k;
  std::string settle;
  if (c.settle_ms > 0) {
    settle = fmt::format(" The span ends at least {} (the settle bound) after the last fault.",
                         format_duration(c.settle_ms));
  }
  return fmt::format(
      "Derived by `rehearse check` from {} with seed {}: fault kinds on: {}; {} swarm fault{} "
      "added, {} of the base's {} fault{} kept.{}{}",
      origin, seed, on.empty() ? "none" : on, c.faults_added, c.faults_added == 1 ? "" : "s",
      c.base_faults_kept, c.base_faults, c.base_faults == 1 ? "" : "s", settle,
      c.jobs_randomized ? " Jobs randomized (--random-jobs): new schedules, retry policies and "
                          "kind keys for the listed jobs (a fleet block keeps its distributions)."
                        : "");
}

}  // namespace

Result<json> derive_case(const json& given_base, std::uint64_t seed, const SwarmOptions& options,
                         SwarmChoice* choice, const std::string& origin) {
  json base_scenario = given_base;
  if (options.random_jobs) {
    auto randomized = randomize_jobs(given_base, seed);
    if (!randomized) return randomized.error();
    base_scenario = std::move(*randomized);
  }
  auto base = load_scenario_json(base_scenario.dump(), origin.empty() ? "<base>" : origin);
  if (!base) return base.error();
  const Declared declared = declared_of(*base);
  Rng rng = Rng(seed).derive(kSwarmStream);
  SwarmChoice c;
  c.jobs_randomized = options.random_jobs;
  json derived = base_scenario;
  json faults = kept_base_faults(base_scenario, *base, rng, options, c);
  add_swarm_faults(faults, rng, declared, options, c);
  // The case's faults: the base's kept ones, then the drawn ones.
  REHEARSE_ASSERT_EQ(faults.size(), c.base_faults_kept + c.faults_added);
  REHEARSE_ASSERT_GE(c.faults_added, c.kinds_on.size());
  derived["faults"] = std::move(faults);
  derived["seed"] = seed;
  derived.erase("expect");
  if (!base->expect.violations.empty())
    derived["expect"] = {{"violations", base->expect.violations}};
  if (options.settle) {
    if (Status s = extend_for_settling(derived, c); !s.ok()) return s.error();
  }
  derived["description"] = describe_choice(origin.empty() ? base->name : origin, seed, c);
  if (choice != nullptr) *choice = std::move(c);
  return derived;
}

}  // namespace rehearse::sim
