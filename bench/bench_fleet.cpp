// The fleet workload (docs/performance.md, "Workloads"): the benchmark fleet
// at 1e3, 1e4 and 1e5 jobs over 30 simulated days, the real core, every
// monitor on, no trace file. Beside each size, in the same binary and run,
// the hold model of a bare std::priority_queue at the same pending count (one
// pending event per job), the baseline of the "0.2x the bare heap" target.
//
// Counters per size: job_exec_per_s (runs started, regular and retry, per CPU
// second), events_per_s (simulator events per CPU second), sim_s_per_wall_s
// (simulated seconds per wall second), resident_bytes_per_job (peak resident
// set after the run minus before, per job; sizes run in ascending order so
// the peak is this size's), runs and retries (the counts SimPy must equal).
//
// REHEARSE_BENCH_SIZES="1000,10000" and REHEARSE_BENCH_DAYS=30 override the
// sizes and the span (bench/run-ratios passes them).
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <queue>
#include <vector>

#include "bench/fleet_workload.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/monitors/monitored_run.hpp"

namespace {

using namespace rehearse;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void bench_fleet(benchmark::State& state, std::int64_t jobs, DurationMs span_ms) {
  for (auto _ : state) {
    const std::int64_t rss_before = bench::peak_resident_bytes();
    const sim::Scenario scenario = bench::fleet_scenario(jobs, span_ms);
    std::int64_t runs = 0;
    std::int64_t retries = 0;
    sim::RunOptions options;
    options.keep_trace = false;  // streamed to the monitors and the hash, as `run` does
    options.trace_sink = [&](const sim::TraceEvent& e, std::size_t) {
      if (e.type != "run_started") return;
      ++runs;
      if (e.str("kind") == "retry") ++retries;
    };
    const double cpu0 = cpu_seconds();
    const auto wall0 = std::chrono::steady_clock::now();
    auto result = sim::run_scenario(scenario, options);
    const double cpu = cpu_seconds() - cpu0;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    if (!result) {
      state.SkipWithError(result.error().describe().c_str());
      return;
    }
    state.SetIterationTime(cpu);
    state.counters["runs"] = static_cast<double>(runs);
    state.counters["retries"] = static_cast<double>(retries);
    state.counters["events"] = static_cast<double>(result->events_executed);
    state.counters["job_exec_per_s"] = static_cast<double>(runs) / cpu;
    state.counters["events_per_s"] = static_cast<double>(result->events_executed) / cpu;
    state.counters["sim_s_per_wall_s"] = static_cast<double>(span_ms) / 1000.0 / wall;
    state.counters["resident_bytes_per_job"] =
        static_cast<double>(bench::peak_resident_bytes() - rss_before) / static_cast<double>(jobs);
    state.counters["violations"] = static_cast<double>(result->violations.size());
  }
}

struct BareKey {
  TimeMs time;
  std::uint64_t seq;
};
struct Later {
  bool operator()(const BareKey& a, const BareKey& b) const noexcept {
    return a.time > b.time || (a.time == b.time && a.seq > b.seq);
  }
};

// The bare heap's hold rate at `pending` events (as bench_event_queue).
void bench_bare_heap_hold(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  std::priority_queue<BareKey, std::vector<BareKey>, Later> queue;
  sim::Rng rng(20240601);
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < pending; ++i) {
    queue.push({static_cast<TimeMs>(rng.next_below(1000)), ++seq});
  }
  for (auto _ : state) {
    const BareKey top = queue.top();
    queue.pop();
    queue.push({top.time + static_cast<TimeMs>(1 + rng.next_below(1000)), ++seq});
    benchmark::DoNotOptimize(seq);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  const auto sizes = rehearse::bench::env_sizes("REHEARSE_BENCH_SIZES", {1000, 10000, 100000});
  const rehearse::DurationMs span =
      rehearse::bench::env_int("REHEARSE_BENCH_DAYS", 30) * rehearse::kDayMs +
      rehearse::bench::env_int("REHEARSE_BENCH_HOURS", 0) * rehearse::kHourMs;
  for (const auto n : sizes) {
    benchmark::RegisterBenchmark("bare_heap_hold", bench_bare_heap_hold)->Arg(n);
    benchmark::RegisterBenchmark(("fleet/" + std::to_string(n)).c_str(),
                                 [n, span](benchmark::State& s) { bench_fleet(s, n, span); })
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kSecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
