// RapidCheck generators of scenario documents (sim/testing/generators.hpp).
#include "sim/testing/generators.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "model/agent_roles.hpp"
#include "model/assert.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/job_kind_table.hpp"
#include "sim/world/world.hpp"

namespace rehearse::testing {

using nlohmann::json;
using sim::FaultKeySpec;
using sim::FaultKeyType;
using sim::FaultKindSpec;
using sim::FaultTarget;

namespace {

// ------------------------------------------------------------ small parts

std::string seconds(std::int64_t s) {
  REHEARSE_ASSERT_GE(s, 0);  // offsets from start and durations: never negative
  return format_duration(s * kSecondMs);
}
std::string offset(std::int64_t s) { return "+" + seconds(s); }

// A non-empty subset of `names`, in their order. Shrinks towards one name,
// the first.
rc::Gen<json> subset_of(const std::vector<std::string>& names) {
  REHEARSE_ASSERT(!names.empty());  // the callers check has_choices, or plan one name at least
  const int n = static_cast<int>(names.size());
  return rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, n),
                                     rc::gen::container<std::vector<bool>>(
                                         names.size(), rc::gen::arbitrary<bool>())),
                      [names](const std::tuple<int, std::vector<bool>>& chosen) {
                        const auto& [first, mask] = chosen;
                        REHEARSE_ASSERT_EQ(mask.size(), names.size());  // a fixed-count container
                        json out = json::array();
                        for (std::size_t i = 0; i < names.size(); ++i) {
                          if (mask[i] || static_cast<int>(i) == first) out.push_back(names[i]);
                        }
                        // Non-empty: the first chosen name is always in.
                        REHEARSE_ASSERT_GE(out.size(), 1u);
                        REHEARSE_ASSERT_LE(out.size(), names.size());
                        return out;
                      });
}

rc::Gen<json> one_of_names(const std::vector<std::string>& names) {
  REHEARSE_ASSERT(!names.empty());  // key_value is called for keys with choices only
  return rc::gen::map(rc::gen::elementOf(names), [](const std::string& s) { return json(s); });
}

// ---------------------------------------------------- one generator per key type

// What a fault being generated may use: the scenario's targets, the limits,
// and where the fault is (whole seconds after start; the span in seconds).
struct FaultContext {
  FaultTargets targets;
  FaultLimits limits;
  std::int64_t at_s = 0;
  std::int64_t span_s = 0;
};

// A service key's choices: the built-ins it may name that are declared, then
// (when it takes them) the user's own services.
std::vector<std::string> service_choices(const FaultKeySpec& key, const FaultTargets& t) {
  std::vector<std::string> out;
  for (const std::string& name : key.names) {
    if (std::find(t.services.begin(), t.services.end(), name) != t.services.end()) {
      out.push_back(name);
    }
  }
  if (key.user_services) out.insert(out.end(), t.user_services.begin(), t.user_services.end());
  return out;
}

// A name key's choices, its default first (so it shrinks towards the default).
std::vector<std::string> name_choices(const FaultKeySpec& key) {
  std::vector<std::string> out = key.names;
  if (key.default_value.is_string()) {
    const auto it = std::find(out.begin(), out.end(), key.default_value.get<std::string>());
    if (it != out.end()) std::rotate(out.begin(), it, it + 1);
  }
  REHEARSE_ASSERT_EQ(out.size(), key.names.size());  // reordered, none lost
  return out;
}

std::vector<std::string> other_instances(const FaultTargets& t) {
  std::vector<std::string> out;
  for (const char* id : {"orchestrator-2", "orchestrator-3"}) {
    if (t.instance != id) out.emplace_back(id);
  }
  // A takeover names an instance other than the running one.
  REHEARSE_ASSERT(!out.empty());
  REHEARSE_ASSERT(std::find(out.begin(), out.end(), t.instance) == out.end());
  return out;
}

// Whether the key has anything to choose from in this scenario.
bool has_choices(const FaultKeySpec& key, const FaultTargets& t) {
  switch (key.type) {
    case FaultKeyType::service: return !service_choices(key, t).empty();
    case FaultKeyType::issue:
    case FaultKeyType::issue_list: return !t.issues.empty();
    case FaultKeyType::agent: return !t.agents.empty();
    case FaultKeyType::new_instance: return t.orchestrator;
    case FaultKeyType::targets: return t.messenger && !t.targets.empty();
    case FaultKeyType::worker: return t.workers > 1;  // one worker: left out (the machine)
    case FaultKeyType::job: return !t.file_jobs.empty();
    case FaultKeyType::rate_limited: return !t.rate_limited.empty();
    default: return true;
  }
}

// The time the worker is down: ends by `until`, at most the limit.
rc::Gen<json> down_time(const FaultContext& c) {
  REHEARSE_ASSERT_LE(c.at_s, c.span_s);  // fault_of_kind draws `at` inside the span
  const std::int64_t most = std::min(c.span_s - c.at_s, c.limits.max_duration_ms / kSecondMs);
  return rc::gen::map(rc::gen::inRange<std::int64_t>(0, most + 1),
                      [](std::int64_t s) { return json(seconds(s)); });
}

// A value for the key (the key has choices). Ranges and names are the table's.
rc::Gen<json> key_value(const FaultKeySpec& key, const FaultContext& c) {
  const FaultTargets& t = c.targets;
  switch (key.type) {
    case FaultKeyType::service: return one_of_names(service_choices(key, t));
    case FaultKeyType::down_time: return down_time(c);
    case FaultKeyType::integer:
      REHEARSE_ASSERT_LE(key.min, key.max);  // the table's range is not empty
      return rc::gen::map(rc::gen::inRange<std::int64_t>(key.min, key.max + 1),
                          [](std::int64_t v) { return json(v); });
    case FaultKeyType::rate:  // 1 (every call hit) down to 0.01; shrinks towards 1
      return rc::gen::map(rc::gen::inRange(0, 100),
                          [](int k) { return json(static_cast<double>(100 - k) / 100.0); });
    case FaultKeyType::name: return one_of_names(name_choices(key));
    case FaultKeyType::issue: return one_of_names(t.issues);
    case FaultKeyType::issue_list: return subset_of(t.issues);
    case FaultKeyType::agent: return one_of_names(t.agents);
    case FaultKeyType::new_instance: return one_of_names(other_instances(t));
    case FaultKeyType::targets: return subset_of(t.targets);
    case FaultKeyType::job: return one_of_names(t.file_jobs);
    case FaultKeyType::rate_limited: return one_of_names(t.rate_limited);
    case FaultKeyType::worker:
      return rc::gen::map(rc::gen::inRange(1, t.workers + 1), [](int v) { return json(v); });
    case FaultKeyType::step:  // -3h .. +3h in whole seconds, never 0; shrinks towards -1s
      return rc::gen::map(rc::gen::inRange(1, 2 * 3 * 3600 + 1), [](int k) {
        const int s = k <= 3 * 3600 ? -k : k - 3 * 3600;
        return json((s < 0 ? "-" : "+") + format_duration(std::int64_t{s < 0 ? -s : s} * 1000));
      });
    case FaultKeyType::cut:
      return rc::gen::map(rc::gen::inRange(0, 4097), [](int v) { return json(v); });
    case FaultKeyType::flips:
      return rc::gen::map(rc::gen::nonEmpty(
                              rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 512))),
                          [](const std::vector<int>& offsets) {
                            const std::set<int> unique(offsets.begin(), offsets.end());
                            return json(std::vector<int>(unique.begin(), unique.end()));
                          });
  }
  return rc::gen::just(json());
}

// Key types that belong to one value of another key (as the loader reads
// them): `cut` to mode truncated, `flips` to mode flip.
bool allowed_with(const FaultKeySpec& key, const json& fault) {
  const std::string mode = fault.value("mode", "");
  if (key.type == FaultKeyType::cut) return mode == "truncated";
  if (key.type == FaultKeyType::flips) return mode == "flip";
  return true;
}

// The key's entry: its value, or null (left out). A required key and a
// service (written out, so the fault names what it hits) always have one;
// an optional key shrinks towards absent.
rc::Gen<json> key_entry(const FaultKeySpec& key, const json& fault, const FaultContext& c) {
  if (!allowed_with(key, fault) || !has_choices(key, c.targets)) return rc::gen::just(json());
  rc::Gen<json> value = key_value(key, c);
  if (key.required || key.type == FaultKeyType::service) return value;
  return rc::gen::mapcat(rc::gen::arbitrary<bool>(),
                         [value](bool present) { return present ? value : rc::gen::just(json()); });
}

// The kind's keys from the i-th on, in the table's reading order (a key may
// depend on one read before it).
rc::Gen<json> keys_from(const FaultKindSpec& kind, std::size_t i, const json& fault,
                        const FaultContext& c) {
  REHEARSE_ASSERT_LE(i, kind.keys.size());
  if (i == kind.keys.size()) return rc::gen::just(fault);
  const FaultKeySpec& key = kind.keys[i];
  return rc::gen::mapcat(key_entry(key, fault, c), [&kind, i, fault, c, &key](const json& value) {
    json next = fault;
    if (!value.is_null()) next[std::string(key.name)] = value;
    return keys_from(kind, i + 1, next, c);
  });
}

// A lasting fault's `for`: at least 1 s, ends by `until`, at most the limit.
rc::Gen<json> with_for(const json& fault, const FaultContext& c) {
  // A lasting fault starts at least a second before `until` (fault_of_kind).
  REHEARSE_ASSERT_LT(c.at_s, c.span_s);
  const std::int64_t most = std::min(c.span_s - c.at_s, c.limits.max_duration_ms / kSecondMs);
  return rc::gen::map(rc::gen::inRange<std::int64_t>(1, std::max<std::int64_t>(most, 1) + 1),
                      [fault](std::int64_t s) {
                        json out = fault;
                        out["for"] = seconds(s);
                        return out;
                      });
}

rc::Gen<json> fault_of_kind(const FaultKindSpec& kind, const FaultTargets& t,
                            const FaultLimits& limits) {
  const std::int64_t span_s = (t.until_ms - t.start_ms) / kSecondMs;
  const std::int64_t last_at = kind.lasting ? span_s - 1 : span_s;
  // applicable_fault_kinds leaves out lasting kinds when the span is under a second.
  if (kind.lasting) REHEARSE_ASSERT_GE(last_at, 0);
  return rc::gen::mapcat(rc::gen::inRange<std::int64_t>(0, last_at + 1), [&kind, t, limits, span_s](
                                                                             std::int64_t at_s) {
    const FaultContext c{t, limits, at_s, span_s};
    const json fault{{"at", offset(at_s)}, {"kind", kind.name}};
    rc::Gen<json> keyed = keys_from(kind, 0, fault, c);
    if (!kind.lasting) return keyed;
    return rc::gen::mapcat(keyed, [c](const json& f) { return with_for(f, c); });
  });
}

bool target_declared(FaultTarget target, const FaultTargets& t) {
  switch (target) {
    case FaultTarget::orchestrator: return t.orchestrator;
    case FaultTarget::messenger: return t.messenger;
    default: return true;  // a service kind: its service key decides
  }
}

}  // namespace

FaultTargets fault_targets(const sim::Scenario& scenario) {
  FaultTargets t;
  t.start_ms = scenario.start_ms;
  t.until_ms = scenario.until_ms;
  t.workers = scenario.queue.workers;
  const sim::ServiceDecls& s = scenario.services;
  for (const sim::ServiceKind kind : {sim::ServiceKind::model_api, sim::ServiceKind::orchestrator,
                                      sim::ServiceKind::brokerage, sim::ServiceKind::messenger}) {
    if (s.has(kind)) t.services.emplace_back(sim::to_string(kind));
  }
  for (const auto& [name, service] : s.user) {
    t.user_services.push_back(name);
    if (service.capacity && service.capacity->limits_rate()) t.rate_limited.push_back(name);
  }
  if (s.orchestrator) {
    t.orchestrator = true;
    t.instance = s.orchestrator->instance;
    for (const auto& issue : s.orchestrator->issues) t.issues.push_back(issue.id);
    for (const auto& agent : s.orchestrator->agents) t.agents.push_back(agent.id);
  }
  if (s.messenger) {
    t.messenger = true;
    t.targets = s.messenger->targets;
  }
  for (const sim::JobSpec& job : scenario.jobs) {
    // A fleet's jobs are drawn again from the case's seed: only listed jobs keep their kind.
    if (sim::job_keeps_file(job.kind) && !job.from_fleet) t.file_jobs.push_back(job.id);
  }
  // The loader's guarantees for a scenario it accepted.
  REHEARSE_ASSERT_LE(t.start_ms, t.until_ms);
  REHEARSE_ASSERT_GE(t.workers, 1);
  return t;
}

namespace gen {

std::vector<std::string> applicable_fault_kinds(const FaultTargets& targets,
                                                const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  const bool has_span = targets.until_ms - targets.start_ms >= kSecondMs;
  for (std::size_t i = 0; i < sim::fault_kinds().size(); ++i) {
    const FaultKindSpec& kind = sim::fault_kinds()[i];
    if (!sim::world_supports(static_cast<sim::FaultKind>(i))) continue;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), kind.name) == allowed.end()) {
      continue;
    }
    if (kind.lasting && !has_span) continue;
    if (!target_declared(kind.applies_to, targets)) continue;
    const bool keys_ok = std::all_of(kind.keys.begin(), kind.keys.end(), [&](const auto& key) {
      return !(key.required || key.type == FaultKeyType::service) || has_choices(key, targets);
    });
    if (keys_ok) out.emplace_back(kind.name);
  }
  REHEARSE_ASSERT_LE(out.size(), sim::fault_kinds().size());
  if (!allowed.empty()) {
    for (const std::string& name : out) {
      REHEARSE_ASSERT(std::find(allowed.begin(), allowed.end(), name) != allowed.end());
    }
  }
  return out;
}

rc::Gen<json> fault(const FaultTargets& targets, const FaultLimits& limits) {
  const std::vector<std::string> kinds = applicable_fault_kinds(targets, limits.kinds);
  if (kinds.empty()) throw std::invalid_argument("no fault kind applies to this scenario");
  return rc::gen::mapcat(rc::gen::elementOf(kinds), [targets, limits](const std::string& name) {
    REHEARSE_ASSERT(sim::find_fault_kind(name) != nullptr);  // a name of the table
    return fault_of_kind(*sim::find_fault_kind(name), targets, limits);
  });
}

rc::Gen<json> fault_schedule(const FaultTargets& targets, const FaultLimits& limits) {
  const rc::Gen<json> one = fault(targets, limits);
  const int most = static_cast<int>(limits.max_faults);
  return rc::gen::withSize([one, most](int size) {
    return rc::gen::map(rc::gen::resize(std::min(size, most),
                                        rc::gen::container<std::vector<json>>(one)),
                        [most](const std::vector<json>& faults) {
                          // 0..max_faults faults (a container is at most its size long).
                          const int limit = std::max(most, 0);
                          REHEARSE_ASSERT_LE(faults.size(), limit);
                          return json(faults);
                        });
  });
}

rc::Gen<json> fault_schedule(const sim::Scenario& scenario, const FaultLimits& limits) {
  return fault_schedule(fault_targets(scenario), limits);
}

rc::Gen<json> with_faults(const json& scenario_doc, const FaultLimits& limits) {
  auto loaded = sim::load_scenario_json(scenario_doc.dump(), "<document>");
  if (!loaded) {
    throw std::invalid_argument("with_faults: the document does not load: " +
                                loaded.error().describe());
  }
  json base = scenario_doc;
  base.erase("expect");
  if (!base.contains("faults")) base["faults"] = json::array();
  return rc::gen::map(fault_schedule(*loaded, limits), [base](const json& faults) {
    json out = base;
    for (const json& f : faults) out["faults"].push_back(f);
    // The document's own faults stay, the generated ones come after them.
    REHEARSE_ASSERT_EQ(out["faults"].size(), base["faults"].size() + faults.size());
    return out;
  });
}

}  // namespace gen
}  // namespace rehearse::testing

namespace rehearse::testing {

// ------------------------------------------------------------ whole scenarios

namespace {

// Every generated scenario starts here (a Monday, 00:00 UTC).
constexpr const char* kGeneratedStart = "2026-12-07T00:00:00Z";

// The world a generated scenario's jobs draw from: how much of each thing
// exists. Services are declared from what the jobs use.
struct WorldPlan {
  int span_hours = 1;
  std::vector<std::string> targets;         // messenger targets
  std::vector<std::string> issue_statuses;  // one per orchestrator issue
  std::vector<std::string> user_services;
  int concurrency = 1;
  int token_hours = 24;
  std::uint32_t seed = 1;
};

std::vector<std::string> numbered(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(fmt::format("{}-{}", prefix, i));
  return out;
}

std::vector<std::string> issue_ids(const WorldPlan& w) {
  return numbered("ISS", static_cast<int>(w.issue_statuses.size()));
}

rc::Gen<WorldPlan> world_plan(const ScenarioLimits& limits) {
  return rc::gen::map(
      rc::gen::tuple(rc::gen::inRange(1, limits.max_span_hours + 1), rc::gen::inRange(1, 4),
                     rc::gen::nonEmpty(
                         rc::gen::resize(3, rc::gen::container<std::vector<std::string>>(
                                                rc::gen::elementOf(sim::issue_status_names())))),
                     rc::gen::inRange(1, 3), rc::gen::inRange(1, 4), rc::gen::inRange(1, 25),
                     rc::gen::arbitrary<std::uint32_t>()),
      [](const auto& t) {
        WorldPlan w;
        w.span_hours = std::get<0>(t);
        w.targets = numbered("team", std::get<1>(t));
        w.issue_statuses = std::get<2>(t);
        if (w.issue_statuses.size() > 3) w.issue_statuses.resize(3);
        w.user_services = numbered("api", std::get<3>(t));
        w.concurrency = std::get<4>(t);
        w.token_hours = std::get<5>(t);
        w.seed = std::get<6>(t);
        return w;
      });
}

// A group job's tasks: 1..3, each producing something with 0..2 model calls.
rc::Gen<json> group_tasks() {
  const rc::Gen<json> task = rc::gen::map(
      rc::gen::tuple(rc::gen::elementOf(std::vector<std::string>{"summary", "preview", "skip"}),
                     rc::gen::inRange(0, 3)),
      [](const std::tuple<std::string, int>& t) {
        json out{{"produces", std::get<0>(t)}};
        if (std::get<0>(t) != "skip") out["model_calls"] = std::get<1>(t);
        return out;
      });
  return rc::gen::map(
      rc::gen::tuple(task, rc::gen::resize(2, rc::gen::container<std::vector<json>>(task))),
      [](const std::tuple<json, std::vector<json>>& t) {
        std::vector<json> tasks{std::get<0>(t)};
        tasks.insert(tasks.end(), std::get<1>(t).begin(), std::get<1>(t).end());
        for (std::size_t i = 0; i < tasks.size(); ++i)
          tasks[i]["id"] = fmt::format("task-{}", i + 1);
        REHEARSE_ASSERT_LE(tasks.size(), 3u);  // 1..3 tasks: one, and up to two more
        return json(tasks);
      });
}

rc::Gen<json> call_list(const WorldPlan& w) {
  REHEARSE_ASSERT(!w.user_services.empty());  // world_plan plans one at least
  const rc::Gen<json> call =
      rc::gen::map(rc::gen::tuple(rc::gen::elementOf(w.user_services),
                                  rc::gen::elementOf(std::vector<std::string>{
                                      "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}),
                                  rc::gen::inRange(1, 10)),
                   [](const std::tuple<std::string, std::string, int>& t) {
                     return json{{"service", std::get<0>(t)},
                                 {"method", std::get<1>(t)},
                                 {"path", fmt::format("/r{}", std::get<2>(t))}};
                   });
  return rc::gen::map(
      rc::gen::tuple(call, rc::gen::resize(2, rc::gen::container<std::vector<json>>(call))),
      [](const std::tuple<json, std::vector<json>>& t) {
        json out = json::array({std::get<0>(t)});
        for (const json& c : std::get<1>(t)) out.push_back(c);
        REHEARSE_ASSERT_LE(out.size(), 3u);  // one call, and up to two more
        return out;
      });
}

// Items name the plan's issues by position ("ISS-1"); jobs() renames them per
// job ("ISS-2-1": job 2's first issue), since one issue in two reconcile jobs
// would be two items the monitors cannot tell apart.
rc::Gen<json> reconcile_keys(const WorldPlan& w) {
  const std::vector<std::string> issues = issue_ids(w);
  return rc::gen::map(rc::gen::tuple(subset_of(issues),
                                     rc::gen::container<std::vector<std::string>>(
                                         issues.size(), rc::gen::elementOf(sim::stage_names())),
                                     rc::gen::inRange(0, 4)),
                      [](const std::tuple<json, std::vector<std::string>, int>& t) {
                        // A stage for every issue the subset can hold.
                        REHEARSE_ASSERT_LE(std::get<0>(t).size(), std::get<1>(t).size());
                        json items = json::array();
                        std::size_t i = 0;
                        for (const json& issue : std::get<0>(t)) {
                          items.push_back({{"issue", issue}, {"stage", std::get<1>(t)[i++]}});
                        }
                        json out{{"items", items}};
                        if (std::get<2>(t) > 0)
                          out["batch_size"] = std::get<2>(t);  // 0: every due item
                        return out;
                      });
}

// What the plan's worlds offer a kind that draws its own keys: every built-in
// service is declared for it (services_for) and the plan's user services.
sim::JobDrawWorld draw_world(const WorldPlan& w) {
  sim::JobDrawWorld out;
  out.start_ms = *parse_instant(kGeneratedStart);
  out.model_api = true;
  out.brokerage = true;
  out.targets = w.targets;
  out.user_services = w.user_services;
  return out;
}

// A kind added to the job kind table draws its own keys, from a seed the
// property shrinks; a world it cannot use is not drawn.
rc::Gen<json> own_draw(sim::JobKind kind, const WorldPlan& w) {
  using Drawn = std::optional<json>;
  const sim::JobDrawWorld world = draw_world(w);
  const rc::Gen<Drawn> drawn =
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [kind, world](std::uint64_t seed) {
        sim::Rng rng(seed);
        return sim::job_kind_def(kind).draw(rng, world);
      });
  return rc::gen::map(rc::gen::suchThat(drawn, [](const Drawn& d) { return d.has_value(); }),
                      [](const Drawn& d) { return *d; });
}

// Whether a job is of a kind the world's own services do not know.
bool added_kind(const json& job) {
  const auto kind = sim::find_job_kind_named(job.at("kind").get<std::string>());
  return kind && static_cast<std::size_t>(*kind) > static_cast<std::size_t>(sim::JobKind::call);
}

// The keys of one job kind, besides the common ones (docs/scenario-format.md).
rc::Gen<json> kind_keys(sim::JobKind kind, const WorldPlan& w) {
  switch (kind) {
    case sim::JobKind::group:
      return rc::gen::map(rc::gen::tuple(group_tasks(), subset_of(w.targets)),
                          [](const std::tuple<json, json>& t) {
                            return json{{"tasks", std::get<0>(t)}, {"targets", std::get<1>(t)}};
                          });
    case sim::JobKind::fetch:
      return rc::gen::map(rc::gen::tuple(rc::gen::inRange(1, 4), rc::gen::arbitrary<bool>()),
                          [](const std::tuple<int, bool>& t) {
                            return json{{"requests", std::get<0>(t)}, {"parallel", std::get<1>(t)}};
                          });
    case sim::JobKind::reconcile: return reconcile_keys(w);
    case sim::JobKind::publish:
      return rc::gen::map(subset_of(w.targets), [](const json& targets) {
        return json{{"targets", targets}, {"idempotency_key", "{job}:{slot}"}};
      });
    case sim::JobKind::call:
      return rc::gen::map(call_list(w), [](const json& calls) { return json{{"calls", calls}}; });
    default: return own_draw(kind, w);
  }
}

// The kinds this build's world runs (of `allowed`, when not empty).
std::vector<sim::JobKind> job_kinds(const std::vector<std::string>& allowed) {
  std::vector<sim::JobKind> out;
  for (const sim::JobKind kind : sim::all_job_kinds()) {
    const bool wanted = allowed.empty() || std::find(allowed.begin(), allowed.end(),
                                                     sim::to_string(kind)) != allowed.end();
    const bool drawable = kind <= sim::JobKind::call || sim::job_kind_def(kind).draw;
    if (wanted && drawable && sim::world_supports(kind)) out.push_back(kind);
  }
  if (out.empty()) throw std::invalid_argument("gen::scenario: no job kind to draw from");
  return out;
}

rc::Gen<json> job(const WorldPlan& w, const std::vector<sim::JobKind>& kinds) {
  return rc::gen::mapcat(
      rc::gen::tuple(rc::gen::elementOf(kinds), gen::cron_schedule(), gen::retry_policy()),
      [w](const std::tuple<sim::JobKind, std::string, json>& t) {
        const json common{{"kind", sim::to_string(std::get<0>(t))},
                          {"schedule", std::get<1>(t)},
                          {"retry_policy", std::get<2>(t)}};
        return rc::gen::map(kind_keys(std::get<0>(t), w), [common](const json& own) {
          json out = common;
          out.update(own);
          return out;
        });
      });
}

// 1..max_jobs jobs; extra jobs shrink away.
rc::Gen<std::vector<json>> jobs(const WorldPlan& w, const ScenarioLimits& limits) {
  const int extra = static_cast<int>(limits.max_jobs) - 1;
  const std::size_t most = 1 + static_cast<std::size_t>(std::max(extra, 0));
  const rc::Gen<json> one = job(w, job_kinds(limits.job_kinds));
  return rc::gen::map(
      rc::gen::tuple(one, rc::gen::resize(std::max(extra, 0),
                                          rc::gen::container<std::vector<json>>(one))),
      [most](const std::tuple<json, std::vector<json>>& t) {
        std::vector<json> out{std::get<0>(t)};
        out.insert(out.end(), std::get<1>(t).begin(), std::get<1>(t).end());
        REHEARSE_ASSERT_LE(out.size(), most);  // 1..max_jobs jobs
        for (std::size_t i = 0; i < out.size(); ++i) {
          out[i]["id"] = fmt::format("job-{}", i + 1);
          if (!out[i].contains("items")) continue;
          for (json& item : out[i]["items"]) {
            // reconcile_keys names the plan's issues "ISS-k"; renamed here once.
            REHEARSE_ASSERT_EQ(item.at("issue").get<std::string>().rfind("ISS-", 0), 0u);
            const std::string k = item.at("issue").get<std::string>().substr(4);  // "ISS-k"
            item["issue"] = fmt::format("ISS-{}-{}", i + 1, k);
          }
        }
        return out;
      });
}

std::string agent_id(Role role) { return fmt::format("agent-{}", to_string(role)); }

bool uses(const std::vector<json>& jobs, sim::JobKind kind) {
  return std::any_of(jobs.begin(), jobs.end(),
                     [&](const json& j) { return j.at("kind") == sim::to_string(kind); });
}

// The services the jobs use (the messenger always: notifications go there).
json services_for(const WorldPlan& w, const std::vector<json>& jobs) {
  json s{{"messenger", {{"targets", w.targets}}}};
  // Group tasks and publish runs ask the model (a publish job for its post).
  if (uses(jobs, sim::JobKind::group) || uses(jobs, sim::JobKind::publish)) {
    s["model-api"] = json::object();
  }
  if (uses(jobs, sim::JobKind::fetch)) {
    s["brokerage"] = {{"token_lifetime", fmt::format("{}h", w.token_hours)}};
  }
  if (uses(jobs, sim::JobKind::reconcile)) {
    json issues = json::array();  // every reconcile job's own, with the plan's statuses
    for (const json& j : jobs) {
      for (const json& item : j.value("items", json::array())) {
        const std::string id = item.at("issue");
        const std::size_t k = std::stoul(id.substr(id.rfind('-') + 1)) - 1;
        REHEARSE_ASSERT_LT(k, w.issue_statuses.size());  // an issue of the plan
        issues.push_back({{"id", id}, {"status", w.issue_statuses[k]}});
      }
    }
    json agents = json::array();  // every role staffed; agent faults take them away
    for (const Role role : kAllRoles) {
      agents.push_back({{"id", agent_id(role)}, {"role", to_string(role)}});
    }
    s["orchestrator"] = {{"issues", issues}, {"agents", agents}};
  }
  const bool added = std::any_of(jobs.begin(), jobs.end(), added_kind);
  if (uses(jobs, sim::JobKind::call) || added) {
    for (const std::string& name : w.user_services) s[name] = json::object();
    // The first one limits its rate (loosely: its calls are rarely refused),
    // so that a lowered rate (fault kind `capacity`) has a service to act on.
    s[w.user_services.front()]["capacity"] = {{"rate", 600}, {"per", "1m"}};
  }
  if (added) {  // what draw_world offers such a kind
    if (!s.contains("model-api")) s["model-api"] = json::object();
    if (!s.contains("brokerage"))
      s["brokerage"] = {{"token_lifetime", fmt::format("{}h", w.token_hours)}};
  }
  return s;
}

// The environment the reconcile job reads its agents from (none without one).
json environment(const std::vector<json>& jobs) {
  json env = json::object();
  if (!uses(jobs, sim::JobKind::reconcile)) return env;
  for (const Role role : kAllRoles) env[role_env_var(role)] = agent_id(role);
  return env;
}

json scenario_doc(const WorldPlan& w, const std::vector<json>& jobs) {
  REHEARSE_ASSERT_GE(w.span_hours, 1);  // until lies after start
  REHEARSE_ASSERT(!jobs.empty());       // jobs() draws one at least
  const TimeMs start = *parse_instant(kGeneratedStart);
  return json{{"format", sim::kScenarioFormat},
              {"scenario", "generated"},
              {"description", "generated by rehearse::testing::gen::scenario()"},
              {"start", kGeneratedStart},
              {"until", format_instant(start + w.span_hours * kHourMs)},
              {"seed", w.seed},
              {"env", environment(jobs)},
              {"queue", {{"concurrency", w.concurrency}}},
              {"services", services_for(w, jobs)},
              {"jobs", jobs},
              {"faults", json::array()}};
}

}  // namespace

namespace gen {

rc::Gen<std::string> cron_schedule() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::inRange(0, 60), [](int m) { return fmt::format("{} * * * *", m); }),
      rc::gen::map(rc::gen::elementOf(std::vector<int>{5, 10, 15, 20, 30}),
                   [](int k) { return fmt::format("*/{} * * * *", k); }),
      rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 60),
                                  rc::gen::elementOf(std::vector<int>{2, 3, 4, 6, 12})),
                   [](const std::tuple<int, int>& t) {
                     return fmt::format("{} */{} * * *", std::get<0>(t), std::get<1>(t));
                   }),
      rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 60), rc::gen::inRange(0, 24)),
                   [](const std::tuple<int, int>& t) {
                     return fmt::format("{} {} * * *", std::get<0>(t), std::get<1>(t));
                   }));
}

rc::Gen<json> retry_policy() {
  using Parts =
      std::tuple<int, std::string, int, std::string>;  // retries, backoff, delay s, budget
  const auto parts = [](std::vector<std::string> backoffs) {
    return rc::gen::tuple(
        rc::gen::inRange(1, 5), rc::gen::elementOf(std::move(backoffs)), rc::gen::inRange(1, 1801),
        rc::gen::elementOf(std::vector<std::string>{"", "per_slot", "per_episode"}));
  };
  const auto with_budget = [](json policy, const std::string& budget) {
    if (!budget.empty()) policy["budget"] = budget;
    return policy;
  };
  return rc::gen::oneOf(
      rc::gen::just(json("auto")),
      rc::gen::map(parts({"fixed"}),
                   [with_budget](const Parts& p) {
                     return with_budget({{"max", std::get<0>(p)}, {"backoff_sec", std::get<2>(p)}},
                                        std::get<3>(p));
                   }),
      rc::gen::map(parts({"fixed", "exponential", "linear"}),
                   [with_budget](const Parts& p) {
                     return with_budget(
                         {{"max", std::get<0>(p)},
                          {"backoff",
                           {{"type", std::get<1>(p)}, {"delay", seconds(std::get<2>(p))}}}},
                         std::get<3>(p));
                   }),
      rc::gen::map(parts({"fixed", "exponential"}), [with_budget](const Parts& p) {
        return with_budget(
            {{"attempts", std::get<0>(p) + 1},
             {"backoff", {{"type", std::get<1>(p)}, {"delay", std::get<2>(p) * 1000}}}},
            std::get<3>(p));
      }));
}

rc::Gen<json> scenario(const ScenarioLimits& limits) {
  return rc::gen::mapcat(world_plan(limits), [limits](const WorldPlan& w) {
    return rc::gen::mapcat(jobs(w, limits), [limits, w](const std::vector<json>& js) {
      const json doc = scenario_doc(w, js);
      auto loaded = sim::load_scenario_json(doc.dump(), "generated");
      if (!loaded) {
        throw std::logic_error("gen::scenario built a document that does not load: " +
                               loaded.error().describe() + "\n" + doc.dump(2));
      }
      return rc::gen::map(fault_schedule(*loaded, limits.faults), [doc](const json& faults) {
        json out = doc;
        out["faults"] = faults;
        return out;
      });
    });
  });
}

}  // namespace gen
}  // namespace rehearse::testing
