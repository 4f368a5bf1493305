// Micro benchmarks of the core's per-run decisions (docs/performance.md):
// next_after on typical and pathological crons, failure classification
// (structured and from message text), and retry policy parsing and decisions.
// These have no baseline of their own: they show where a run's time is not.
#include <benchmark/benchmark.h>

#include <string>

#include <nlohmann/json.hpp>

#include "model/cron.hpp"
#include "model/failure.hpp"
#include "model/retry_machine.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"

namespace {

using namespace rehearse;

const TimeMs kFrom = *parse_instant("2026-12-07T09:13:27Z");

void bench_next_after(benchmark::State& state, const char* expression) {
  const auto cron = CronSchedule::parse(expression);
  TimeMs t = kFrom;
  for (auto _ : state) {
    auto next = cron->next_after(t);
    benchmark::DoNotOptimize(next);
  }
}

// Typical: every minute, every 5 minutes, hourly, daily, weekly.
BENCHMARK_CAPTURE(bench_next_after, every_minute, "* * * * *");
BENCHMARK_CAPTURE(bench_next_after, every_5_min, "*/5 * * * *");
BENCHMARK_CAPTURE(bench_next_after, hourly, "7 * * * *");
BENCHMARK_CAPTURE(bench_next_after, daily, "45 14 * * *");
BENCHMARK_CAPTURE(bench_next_after, weekly, "30 6 * * 1");
// Pathological: a leap day (years away), the 31st of February-free months on
// a weekday (day-of-month OR day-of-week), the last minute of the year.
BENCHMARK_CAPTURE(bench_next_after, leap_day, "0 0 29 2 *");
BENCHMARK_CAPTURE(bench_next_after, dom_or_dow, "0 0 31 * 1");
BENCHMARK_CAPTURE(bench_next_after, year_end, "59 23 31 12 *");

void bench_classify_status(benchmark::State& state) {
  FailureInfo failure;
  failure.http_status = 429;
  failure.message = "HTTP 429 Too Many Requests";
  for (auto _ : state) benchmark::DoNotOptimize(classify(failure));
}
BENCHMARK(bench_classify_status);

void bench_classify_message(benchmark::State& state) {
  FailureInfo failure;
  failure.message =
      "You exceeded your current quota: usage limit reached; the limit resets at "
      "2026-12-07T12:00:00Z";
  for (auto _ : state) benchmark::DoNotOptimize(classify(failure));
}
BENCHMARK(bench_classify_message);

void bench_parse_policy(benchmark::State& state) {
  const auto policy = nlohmann::json::parse(
      R"({"attempts": 4, "backoff": {"type": "exponential", "delay": 30000}})");
  for (auto _ : state) {
    auto parsed = parse_retry_policy(policy);
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(bench_parse_policy);

void bench_decide_failure(benchmark::State& state) {
  const PolicyOrError policy = parse_retry_policy(nlohmann::json::parse(
      R"({"attempts": 4, "backoff": {"type": "exponential", "delay": 30000}})"));
  int count = 0;
  for (auto _ : state) {
    auto decision = decide_failure(policy, count, FailureClass::rate_limit, nullptr, FailureAt{});
    benchmark::DoNotOptimize(decision);
    count = (count + 1) & 3;
  }
}
BENCHMARK(bench_decide_failure);

}  // namespace

BENCHMARK_MAIN();
