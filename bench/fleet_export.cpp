// fleet_export JOBS SPAN_MS OUT.json: runs the benchmark fleet once in the
// real world and writes what bench/simpy_fleet.py needs to run the identical
// workload: per job its schedule as (first slot, period) relative to start,
// its calls per run, its policy as the core resolved it (retries, backoff,
// budget scope) and which of its runs failed, keyed as run_finished names a
// run: (slot, retry or regular, attempt) with how long it held its worker,
// plus our run and retry counts.
//
// The failures are taken from our run because the services' failures are
// draws from our generator; SimPy replays them instead of drawing its own,
// so equal counts mean the two models schedule, retry and give up alike.
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "bench/fleet_workload.hpp"
#include "model/cron.hpp"
#include "model/retry_policy.hpp"
#include "sim/monitors/monitored_run.hpp"

namespace {

using namespace rehearse;
using nlohmann::json;

// A failed run: (slot, retry?, attempt), as run_finished names it, and how
// long it held its worker (run_started to run_finished: a job with several
// calls may fail at any of them).
using FailedRun = std::tuple<TimeMs, bool, std::int64_t, DurationMs>;

// First slot at or after start and the period, checked to be constant.
std::pair<TimeMs, DurationMs> periodic(const std::string& cron, TimeMs start) {
  const auto schedule = CronSchedule::parse(cron);
  const TimeMs first = *schedule->next_after(start - 1);
  const TimeMs second = *schedule->next_after(first);
  const TimeMs third = *schedule->next_after(second);
  if (third - second != second - first) throw std::runtime_error("not periodic: " + cron);
  return {first - start, second - first};
}

json policy_json(const sim::JobSpec& job) {
  const auto schedule = CronSchedule::parse(job.schedule);
  const auto policy = parse_retry_policy(*job.retry_policy, schedule_facts(*schedule));
  if (!policy) throw std::runtime_error(job.id + ": " + policy.error().describe());
  const Backoff& b = policy->backoff;
  if (b.jitter != 0.0 || b.full_jitter || b.additive_steps != 0 || b.max_delay_ms != 0 ||
      (b.kind != BackoffKind::fixed && b.kind != BackoffKind::exponential)) {
    throw std::runtime_error(job.id + ": the SimPy peer models fixed and exponential backoff only");
  }
  return {{"max_retries", policy->max_retries},
          {"backoff", to_string(b.kind)},
          {"delay_ms", b.delay_ms},
          {"factor", b.factor},
          {"budget", to_string(policy->budget)}};
}

// Our run, with what the peer replays: each job's failed runs.
struct Exported {
  std::map<std::string, std::vector<FailedRun>> failed;
  std::int64_t runs = 0;
  std::int64_t retries = 0;
};

Exported run_ours(const sim::Scenario& scenario) {
  Exported out;
  std::map<std::string, TimeMs> started;  // one run per job at a time
  sim::RunOptions options;
  options.trace_sink = [&](const sim::TraceEvent& e, std::size_t) {
    if (e.type == "run_started") {
      started[e.job] = e.t;
      ++out.runs;
      if (e.str("kind") == "retry") ++out.retries;
    } else if (e.type == "run_finished" && e.str("outcome") == "failure") {
      out.failed[e.job].emplace_back(*e.slot, e.str("kind") == "retry", e.num("attempt"),
                                     e.t - started.at(e.job));
    }
  };
  auto result = sim::run_scenario(scenario, options);
  if (!result) throw std::runtime_error(result.error().describe());
  return out;
}

json export_document(const sim::Scenario& scenario, Exported& ours) {
  json jobs = json::array();
  for (const sim::JobSpec& job : scenario.jobs) {
    const auto [first, period] = periodic(job.schedule, scenario.start_ms);
    json failures = json::array();
    for (const auto& [slot, retry, attempt, held_ms] : ours.failed[job.id]) {
      failures.push_back({slot - scenario.start_ms, retry ? 1 : 0, attempt, held_ms});
    }
    jobs.push_back({{"id", job.id},
                    {"first_ms", first},
                    {"period_ms", period},
                    {"calls", job.calls.size()},
                    {"policy", policy_json(job)},
                    {"failures", failures}});
  }
  return {{"span_ms", scenario.until_ms - scenario.start_ms},
          {"concurrency", scenario.queue.concurrency},
          {"latency_ms", sim::kDefaultServiceLatencyMs},
          {"jobs", jobs},
          {"ours", {{"runs", ours.runs}, {"retries", ours.retries}}}};
}

// Written beside the target and renamed: never a half-written export.
void write_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

// A positive integer argument, or std::invalid_argument / std::out_of_range.
std::int64_t positive(const char* text) {
  std::size_t used = 0;
  const std::int64_t v = std::stoll(text, &used);
  if (used != std::strlen(text) || v <= 0) throw std::invalid_argument(text);
  return v;
}

}  // namespace

// Exit 0: written; 2: bad arguments, a fleet the peer cannot model (a cron
// that is not periodic, a backoff other than fixed or exponential, a policy
// the core rejects) or an unwritable file, with the reason on stderr.
int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fleet_export JOBS SPAN_MS OUT.json\n");
    return 2;
  }
  std::int64_t jobs = 0;
  std::int64_t span_ms = 0;
  try {
    jobs = positive(argv[1]);
    span_ms = positive(argv[2]);
  } catch (const std::exception&) {
    std::fprintf(stderr, "fleet_export: JOBS and SPAN_MS must be positive integers (got %s %s)\n",
                 argv[1], argv[2]);
    return 2;
  }
  try {
    const sim::Scenario scenario = bench::fleet_scenario(jobs, span_ms);
    Exported ours = run_ours(scenario);
    write_whole(argv[3], export_document(scenario, ours).dump());
    std::printf("fleet_export: %zu jobs, %lld runs, %lld retries -> %s\n", scenario.jobs.size(),
                static_cast<long long>(ours.runs), static_cast<long long>(ours.retries), argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleet_export: %s\n", e.what());
    return 2;
  }
  return 0;
}
