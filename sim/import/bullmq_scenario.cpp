#include "sim/import/bullmq_scenario.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

using ojson = nlohmann::ordered_json;

constexpr DurationMs kMinute = 60'000;
constexpr DurationMs kDefaultLatencyMs = 100;

// A job that ran, placed: its evidence moved back by `shift_ms`.
struct PlacedJob {
  const BullmqJob* job = nullptr;
  std::string id;  // the scenario's job id
  TimeMs slot = 0;
  DurationMs shift_ms = 0;
};

// The scenario's id: letters, digits, '_' and '-' ("sync-42").
std::string job_id_of(const BullmqJob& job) {
  std::string out = (job.name.empty() ? "job" : job.name) + "-" + job.id;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  }
  return out;
}

// What came back: the HTTP status the reason names, a timeout, or a
// network failure; otherwise an ambiguity (the reason is free text).
CallObservation call_of(const PlacedJob& p, const BullmqAttempt& a,
                        std::vector<Ambiguity>& ambiguities) {
  CallObservation c;
  c.service = p.job->queue;
  c.start_ms = a.start_ms - p.shift_ms;
  c.end_ms = a.end_ms.value_or(a.start_ms) - p.shift_ms;
  c.where = a.where;
  if (!a.failed) return c;
  static const std::regex kStatus(R"(\b([45][0-9][0-9])\b)");
  std::smatch m;
  std::string lower = a.failed_reason;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (std::regex_search(a.failed_reason, m, kStatus)) {
    c.outcome = CallOutcome::http_error;
    c.status = std::stoi(m[1].str());
  } else if (lower.find("timeout") != std::string::npos ||
             lower.find("timed out") != std::string::npos) {
    c.outcome = CallOutcome::timeout;
  } else {
    c.outcome = CallOutcome::network_error;
    c.error = lower.find("econnrefused") != std::string::npos ? "connection_refused"
              : lower.find("enotfound") != std::string::npos  ? "dns"
              : lower.find("epipe") != std::string::npos      ? "broken_pipe"
                                                              : "connection_reset";
    if (lower.find("econn") == std::string::npos && c.error == "connection_reset") {
      ambiguities.push_back({c.service, c.start_ms,
                             fmt::format("failedReason \"{}\" names no HTTP status and no known "
                                         "network failure",
                                         a.failed_reason),
                             "read as connection_reset", a.where});
    }
  }
  return c;
}

std::string outcome_of(const BullmqJob& job) {
  if (job.attempts.empty() || !job.attempts.back().end_ms) return "in_flight";
  if (!job.attempts.back().failed) return "delivered";
  const int allowed = job.opts.value("attempts", 1);
  return job.attempts_made >= allowed ? "exhausted" : "in_flight";
}

ojson expectation_of(const PlacedJob& p) {
  ojson at = ojson::array();
  for (const BullmqAttempt& a : p.job->attempts)
    at.push_back("+" + format_duration(a.start_ms - p.shift_ms - p.slot));
  ojson slot;
  slot["slot"] = format_instant(p.slot);
  slot["outcome"] = outcome_of(*p.job);
  slot["attempts"] = p.job->attempts.size();
  slot["attempt_at"] = std::move(at);
  slot["tolerance"] = format_duration(kBullmqAttemptTolerance);
  ojson job;
  job["runs"] = p.job->attempts.size();
  job["retries"] = p.job->attempts.empty() ? 0 : p.job->attempts.size() - 1;
  job["slots"] = ojson::array({slot});
  return job;
}

ojson scenario_job(const PlacedJob& p) {
  const CivilTime t = to_civil(p.slot);
  ojson policy = ojson::object();
  policy["attempts"] = p.job->opts.value("attempts", 1);
  if (p.job->opts.contains("backoff")) policy["backoff"] = p.job->opts["backoff"];
  ojson j;
  j["id"] = p.id;
  j["kind"] = "call";
  j["schedule"] = fmt::format("{} {} {} {} *", t.minute, t.hour, t.date.day, t.date.month);
  j["retry_policy"] = {{"bullmq", policy}};
  j["calls"] =
      ojson::array({{{"service", p.job->queue}, {"method", "POST"}, {"path", "/" + p.job->name}}});
  j["note"] = fmt::format("BullMQ job {} of queue {} [{}]", p.job->id, p.job->queue, p.job->where);
  return j;
}

// Jobs that ran, each at the minute of its first attempt; the others noted.
std::vector<PlacedJob> place_jobs(const BullmqExport& jobs, std::vector<Ambiguity>& ambiguities,
                                  std::vector<std::string>& notes) {
  std::vector<PlacedJob> out;
  for (const BullmqJob& job : jobs.jobs) {
    if (job.opts.contains("repeat")) {
      ambiguities.push_back({job.queue, job.timestamp_ms,
                             fmt::format("job {} is repeatable: each repetition is a job of its "
                                         "own, which this import does not join into a schedule",
                                         job.id),
                             "not imported", job.where});
      continue;
    }
    if (job.attempts.empty()) {
      notes.push_back(fmt::format("BullMQ job {} of {} never ran (state {}): not imported", job.id,
                                  job.queue, job.state));
      continue;
    }
    PlacedJob p;
    p.job = &job;
    p.id = job_id_of(job);
    const TimeMs first = job.attempts.front().start_ms;
    p.slot = first - first % kMinute;
    p.shift_ms = first - p.slot;
    out.push_back(p);
  }
  return out;
}

// Each queue's service: its latency, the shortest attempt that answered.
ojson services_of(const std::vector<PlacedJob>& placed) {
  std::map<std::string, DurationMs> latency;
  for (const PlacedJob& p : placed) {
    for (const BullmqAttempt& a : p.job->attempts) {
      if (!a.end_ms) continue;
      const DurationMs took = *a.end_ms - a.start_ms;
      auto [it, fresh] = latency.emplace(p.job->queue, took);
      if (!fresh) it->second = std::min(it->second, took);
    }
  }
  ojson services = ojson::object();
  for (const PlacedJob& p : placed) {
    const auto it = latency.find(p.job->queue);
    services[p.job->queue] = {
        {"latency", format_duration(it == latency.end() ? kDefaultLatencyMs : it->second)}};
  }
  return services;
}

ojson base_of(const BullmqImportInput& input, const std::vector<PlacedJob>& placed) {
  TimeMs start = placed.front().slot, until = start;
  ojson jobs = ojson::array(), expect_jobs = ojson::object();
  for (const PlacedJob& p : placed) {
    start = std::min(start, p.slot);
    for (const BullmqAttempt& a : p.job->attempts)
      until = std::max(until, a.end_ms.value_or(a.start_ms) - p.shift_ms);
    jobs.push_back(scenario_job(p));
    expect_jobs[p.id] = expectation_of(p);
  }
  ojson base;
  base["format"] = 1;
  base["scenario"] = input.name.empty() ? "bullmq-incident" : input.name;
  base["description"] = "Rebuilt from a BullMQ job export by rehearse import.";
  base["start"] = format_instant(start - kMinute);
  base["until"] = format_instant(until + 1000);
  base["services"] = services_of(placed);
  base["jobs"] = std::move(jobs);
  base["faults"] = ojson::array();
  base["expect"] = {{"jobs", std::move(expect_jobs)}, {"violations", ojson::array()}};
  return base;
}

}  // namespace

Result<ImportResult> import_bullmq(const BullmqImportInput& input, const BullmqExport& jobs) {
  std::vector<Ambiguity> ambiguities;
  std::vector<std::string> notes;
  const std::vector<PlacedJob> placed = place_jobs(jobs, ambiguities, notes);
  if (placed.empty()) {
    return make_error(ErrorCode::schema_error,
                      "no job of the export ran (no `active` entry in its queue's event "
                      "stream): nothing to replay",
                      input.path);
  }
  std::vector<CallObservation> calls;
  std::map<std::string, DurationMs> shifts;
  for (const PlacedJob& p : placed) {
    for (const BullmqAttempt& a : p.job->attempts) calls.push_back(call_of(p, a, ambiguities));
    auto [it, fresh] = shifts.emplace(p.job->queue, p.shift_ms);
    if (!fresh && it->second != p.shift_ms) {
      ambiguities.push_back({p.job->queue, p.slot,
                             "jobs of one queue were moved to their minutes by different "
                             "amounts, so their calls' order may not be the observed one",
                             "each job moved by its own amount", p.job->where});
    }
    notes.push_back(
        fmt::format("BullMQ job {} of {}: its evidence moved back by {} to the slot "
                    "{}",
                    p.job->id, p.job->queue, format_duration(p.shift_ms), format_instant(p.slot)));
  }
  InferredWindows inferred = infer_fault_windows(std::move(calls));
  inferred.ambiguities.insert(inferred.ambiguities.begin(), ambiguities.begin(), ambiguities.end());
  ImportInput windows{base_of(input, placed), input.path, {input.path}, input.name};
  auto result = import_windows(windows, inferred);
  if (!result) return result;
  for (const std::string& n : notes) result->scenario["notes"].push_back(n);
  return result;
}

}  // namespace rehearse::sim
