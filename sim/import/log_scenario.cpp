#include "sim/import/log_scenario.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

using ojson = nlohmann::ordered_json;

// The slot tracker's state as a slot expectation's outcome
// (docs/scenario-format.md, `expect`).
std::string outcome_of(const std::string& state) {
  if (state == "delivered" || state == "skipped" || state == "exhausted" || state == "superseded" ||
      state == "coalesced")
    return state;
  if (state == "failed" || state == "failed_permanent" || state == "retry_dropped") return "failed";
  return "in_flight";
}

ojson counts(const std::map<std::string, int>& by_event) {
  ojson out = ojson::object();
  for (const char* ev : {"retry_scheduled", "retry_exhausted", "failed_permanent", "recovered"}) {
    const auto it = by_event.find(ev);
    out[ev] = it == by_event.end() ? 0 : it->second;
  }
  for (const auto& [ev, n] : by_event) out[ev] = n;
  return out;
}

ojson slot_json(TimeMs slot, const ObservedSlot& s, bool with_instants) {
  ojson o;
  o["slot"] = format_instant(slot);
  o["outcome"] = outcome_of(s.state);
  o["attempts"] = s.attempt_at.size();
  if (with_instants && !s.attempt_at.empty()) {
    ojson at = ojson::array();
    for (TimeMs t : s.attempt_at) at.push_back(format_instant(t));
    o["attempt_at"] = std::move(at);
  }
  ojson notes = ojson::object();
  for (const auto& [ev, n] : s.notifications) notes[ev] = n;
  o["notifications"] = std::move(notes);
  return o;
}

ojson job_expectation(const ObservedJob* job, bool with_instants) {
  ojson o;
  o["runs"] = job ? job->runs : 0;
  o["retries"] = job ? job->retry_attempts.size() : 0;
  o["notifications"] = counts(job ? job->notifications : std::map<std::string, int>{});
  if (job && !job->final_status.empty()) o["final_status"] = job->final_status;
  ojson slots = ojson::array();
  if (job) {
    for (const auto& [t, s] : job->slots) slots.push_back(slot_json(t, s, with_instants));
  }
  o["slots"] = std::move(slots);
  return o;
}

std::vector<std::string> job_ids(const ojson& scenario) {
  std::vector<std::string> out;
  for (const ojson& j : scenario.value("jobs", ojson::array())) {
    if (j.is_object() && j.contains("id") && j["id"].is_string()) out.push_back(j["id"]);
  }
  return out;
}

// A job of the scenario as the log configured it: the keys the core read.
ojson job_of(const ConfiguredJob& c) {
  const ojson& f = c.fields;
  ojson j;
  j["id"] = c.id();
  j["kind"] = c.kind();
  j["schedule"] = f.value("schedule", "");
  if (f.contains("schedule_env")) j["schedule_env"] = f["schedule_env"];
  if (f.contains("schedule_tz")) j["tz"] = f["schedule_tz"];
  if (f.contains("retry_policy") && !f["retry_policy"].is_null())
    j["retry_policy"] = f["retry_policy"];
  const ojson params = f.value("params", ojson::object());
  for (const auto& [key, value] : params.items()) j[key] = value;
  return j;
}

// The base's job takes the log's configuration where the two differ, each
// difference noted: the schedule and the policy, and a call job's calls (the
// other kinds' parameters are the core's reading of the job, not its keys).
void apply_configuration(ojson& job, const ConfiguredJob& c, std::vector<std::string>& notes) {
  const ojson logged = job_of(c);
  for (const auto& [key, value] : logged.items()) {
    static const std::set<std::string> kKeys{"schedule", "schedule_env", "tz", "retry_policy"};
    if (kKeys.count(key) == 0 && !(c.kind() == "call" && key == "calls")) continue;
    // Compared as values: the log writes an object's keys in its own order.
    if (job.contains(key) && nlohmann::json(job[key]) == nlohmann::json(value)) continue;
    notes.push_back(fmt::format(
        "job '{}': {} {} in the scenario, {} in the log [{}]: the log's "
        "imported",
        c.id(), key, job.contains(key) ? job[key].dump() : "absent", value.dump(), c.where));
    job[key] = value;
  }
}

void configure_base_jobs(ojson& base, const LogEvidence& evidence, std::vector<std::string>& notes,
                         std::vector<Ambiguity>& ambiguities) {
  if (!base.contains("jobs") || !base["jobs"].is_array()) base["jobs"] = ojson::array();
  ojson& jobs = base["jobs"];
  const auto fleet = base.find("fleet");
  const std::string fleet_prefix =
      fleet != base.end() && fleet->is_object() ? fleet->value("id_prefix", "fleet") + "-" : "";
  for (const ConfiguredJob& c : evidence.jobs) {
    auto it = std::find_if(jobs.begin(), jobs.end(),
                           [&](const ojson& j) { return j.value("id", "") == c.id(); });
    if (it != jobs.end()) {
      apply_configuration(*it, c, notes);
    } else if (!fleet_prefix.empty() && c.id().rfind(fleet_prefix, 0) == 0) {
      continue;  // one of the scenario's generated jobs
    } else {
      ambiguities.push_back(
          {"", evidence.first_t,
           fmt::format("the log's {} job '{}' is not in the scenario", c.kind(), c.id()),
           "not imported (add it to the --into scenario)", c.where});
    }
  }
}

// Without --into: a `call` job's world is its services, which the log names.
Result<ojson> world_of(const LogEvidence& evidence, const LogImportInput& input) {
  ojson base;
  base["format"] = 1;
  base["scenario"] = input.name.empty() ? "imported" : input.name;
  base["description"] = "Rebuilt from the worker's log by rehearse import.";
  base["start"] = format_instant(evidence.first_t);
  base["until"] = format_instant(evidence.last_t + 1);
  ojson env = ojson::object(), services = ojson::object(), jobs = ojson::array();
  for (const ConfiguredJob& c : evidence.jobs) {
    if (c.kind() != "call") {
      return make_error(ErrorCode::schema_error,
                        fmt::format("job '{}' is a {} job: the services and state it works on "
                                    "are not in the log; expected --into SCENARIO to supply them",
                                    c.id(), c.kind()),
                        c.where);
    }
    const std::string effective = c.fields.value("effective_schedule", "");
    if (c.fields.contains("schedule_env") && effective != c.fields.value("schedule", ""))
      env[c.fields["schedule_env"].get<std::string>()] = effective;
    for (const ojson& call :
         c.fields.value("params", ojson::object()).value("calls", ojson::array()))
      services[call.value("service", "")] = ojson::object();
    jobs.push_back(job_of(c));
  }
  for (auto& [name, decl] : services.items()) {
    if (const auto it = evidence.latency.find(name); it != evidence.latency.end())
      decl["latency"] = format_duration(it->second);
    if (const auto it = evidence.timeout.find(name); it != evidence.timeout.end())
      decl["timeout"] = format_duration(it->second);
  }
  if (!env.empty()) base["env"] = std::move(env);
  base["services"] = std::move(services);
  base["jobs"] = std::move(jobs);
  base["faults"] = ojson::array();
  return base;
}

// Each boot after the first: the process stopped after the last line before
// it and came back at the boot. The log cannot tell a crash from a stop.
void add_restarts(ojson& base, const LogEvidence& evidence, std::vector<std::string>& notes) {
  for (std::size_t i = 0; i + 1 < evidence.boots.size(); ++i) {
    const TimeMs down = std::min(evidence.last_before_boot[i] + 1, evidence.boots[i + 1]);
    ojson f;
    f["at"] = format_instant(down);
    f["kind"] = "restart";
    f["down_for"] = format_duration(evidence.boots[i + 1] - down);
    f["note"] = fmt::format(
        "inferred: the worker booted again at {}; its last line before was "
        "at {}",
        format_instant(evidence.boots[i + 1]), format_instant(evidence.last_before_boot[i]));
    base["faults"].push_back(std::move(f));
  }
  if (evidence.boots.size() > 1)
    notes.push_back(
        fmt::format("{} restart(s) inferred from the boots", evidence.boots.size() - 1));
}

// Failures the base's declared capacity gives (its refusal status; a timeout
// in line when it limits concurrency) are the world's, not an outage's: they
// are not made faults, which would answer them twice.
std::vector<CallObservation> outside_capacity(const std::vector<CallObservation>& calls,
                                              const ojson& base,
                                              std::vector<Ambiguity>& ambiguities) {
  std::map<std::string, ojson> capacity;
  const ojson services = base.value("services", ojson::object());
  for (const auto& [name, decl] : services.items()) {
    if (decl.is_object() && decl.contains("capacity")) capacity[name] = decl["capacity"];
  }
  std::vector<CallObservation> out;
  std::map<std::string, int> dropped;
  for (const CallObservation& c : calls) {
    const auto it = capacity.find(c.service);
    const bool refused = it != capacity.end() && c.outcome == CallOutcome::http_error &&
                         c.status == it->second.value("status", 429);
    const bool in_line = it != capacity.end() && c.outcome == CallOutcome::timeout &&
                         it->second.contains("concurrency");
    if (refused || in_line) {
      ++dropped[c.service];
    } else {
      out.push_back(c);
    }
  }
  for (const auto& [service, n] : dropped) {
    ambiguities.push_back(
        {service, 0,
         fmt::format("{} failed call{} to {} answered as the scenario's capacity for it refuses: "
                     "its refusals, or an outage answering the same; the calls cannot tell",
                     n, n == 1 ? "" : "s", service),
         "left to the capacity: not made faults", ""});
  }
  return out;
}

// A policy that draws its delays at random: the replay draws its own (from
// the scenario's seed), so the observed retry instants may not come again.
void note_random_delays(const LogEvidence& evidence, std::vector<Ambiguity>& out) {
  for (const ConfiguredJob& c : evidence.jobs) {
    const std::string policy = c.fields.value("retry_policy", ojson()).dump();
    const bool random = policy.find("jitter") != std::string::npos ||
                        policy.find("decorrelated") != std::string::npos ||
                        policy.find("sidekiq") != std::string::npos;
    if (!random) continue;
    out.push_back({"", evidence.first_t,
                   fmt::format("job '{}' draws its retry delays at random; the draws the worker "
                               "made are not in the log",
                               c.id()),
                   "expected at the observed instants; the replay's draws (the scenario's "
                   "seed) may differ",
                   c.where});
  }
}

// Without a world to explain them, refusals that said when to come back are a
// rate limit's: a fault window replays the refusals, not the Retry-After.
void note_rate_limits(const std::vector<CallObservation>& calls, std::vector<Ambiguity>& out) {
  std::set<std::string> seen;
  for (const CallObservation& c : calls) {
    if (!c.retry_after || !seen.insert(c.service).second) continue;
    out.push_back({c.service, c.start_ms,
                   "refusals carried Retry-After: a rate limit (a capacity), which the log "
                   "cannot size",
                   "fault windows without Retry-After (declare the service's capacity with "
                   "--into)",
                   c.where});
  }
}

}  // namespace

nlohmann::ordered_json observed_expectations(const LogEvidence& evidence,
                                             const nlohmann::ordered_json& scenario,
                                             bool with_instants) {
  ojson expect;
  ojson jobs = ojson::object();
  for (const std::string& id : job_ids(scenario)) {
    const auto it = evidence.observed.find(id);
    jobs[id] =
        job_expectation(it == evidence.observed.end() ? nullptr : &it->second, with_instants);
  }
  expect["jobs"] = std::move(jobs);
  expect["notifications"] = counts(evidence.notifications);
  const ojson base = scenario.value("expect", ojson::object());
  expect["violations"] = base.value("violations", ojson::array());
  return expect;
}

Result<ImportResult> import_worker_log(const LogImportInput& input, const LogEvidence& evidence) {
  std::vector<std::string> notes;
  std::vector<Ambiguity> ambiguities = evidence.ambiguities;
  note_random_delays(evidence, ambiguities);
  ojson base;
  if (input.base) {
    base = *input.base;
    const bool listed = base.contains("jobs");
    configure_base_jobs(base, evidence, notes, ambiguities);
    if (!listed && base["jobs"].empty()) base.erase("jobs");  // a fleet's jobs only
  } else {
    auto world = world_of(evidence, input);
    if (!world) return std::move(world).error();
    base = std::move(*world);
    add_restarts(base, evidence, notes);
  }
  // A stepped clock (seen going back, or a step the scenario makes) stamps
  // the log in the worker's time, not true time: no run instants expected.
  bool stepped = input.clock_stepped;
  for (const ojson& f : base.value("faults", ojson::array()))
    stepped = stepped || (f.is_object() && f.value("kind", "") == "clock_step");
  if (stepped && !input.clock_stepped)
    notes.push_back(
        "the scenario steps the worker's clock: the log's stamps are not true time, "
        "so the runs' start instants are not expected");
  base["expect"] = observed_expectations(evidence, base, !stepped);
  if (input.state) expect_end_states(base, *input.state, notes);
  std::vector<CallObservation> calls = evidence.calls;
  if (input.base) {
    calls = outside_capacity(calls, base, ambiguities);
  } else {
    note_rate_limits(calls, ambiguities);
  }
  InferredWindows inferred = infer_fault_windows(std::move(calls));
  inferred.ambiguities.insert(inferred.ambiguities.begin(), ambiguities.begin(), ambiguities.end());
  ImportInput windows{std::move(base), input.base ? input.base_path : input.logs.front(),
                      input.logs, input.name};
  auto result = import_windows(windows, inferred);
  if (!result) return result;
  ojson& all_notes = result->scenario["notes"];
  for (const std::string& n : notes) all_notes.push_back(n);
  all_notes.push_back(fmt::format(
      "expect: what the log observed ({} lines): every slot's outcome, runs and notifications",
      evidence.lines));
  return result;
}

}  // namespace rehearse::sim
