// Swarm throughput: seed-runs per second of the bundled scenarios
// (scenarios/*.json) on 1 and 2 threads. Threads only run whole runs side by
// side, each run its own World (as sim/report/tune.cpp does); nothing is shared
// inside a run. Target: 2 threads at least 1.7x 1 thread.
// REHEARSE_BENCH_SWARM_SEEDS (default 4) seeds per scenario per round.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "bench/fleet_workload.hpp"
#include "sim/monitors/monitored_run.hpp"

namespace {

using namespace rehearse;

const std::vector<sim::Scenario>& bundled() {
  static const std::vector<sim::Scenario> scenarios = [] {
    std::vector<std::string> paths;
    for (const auto& e : std::filesystem::directory_iterator(bench::source_dir() + "/scenarios")) {
      if (e.path().extension() == ".json") paths.push_back(e.path().string());
    }
    std::sort(paths.begin(), paths.end());
    std::vector<sim::Scenario> out;
    for (const auto& p : paths) {
      auto s = sim::load_scenario_file(p);
      if (s) out.push_back(std::move(*s));
    }
    return out;
  }();
  return scenarios;
}

void bench_swarm(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  const auto seeds = static_cast<std::size_t>(bench::env_int("REHEARSE_BENCH_SWARM_SEEDS", 4));
  const auto& scenarios = bundled();
  const std::size_t total = scenarios.size() * seeds;
  std::int64_t runs = 0;
  for (auto _ : state) {
    std::atomic<std::size_t> next{0};
    std::atomic<std::int64_t> done{0};
    const auto worker = [&] {
      for (std::size_t i = next++; i < total; i = next++) {
        sim::RunOptions options;
        options.seed = 1 + i % seeds;
        auto result = sim::run_scenario(scenarios[i / seeds], options);
        if (result) ++done;
      }
    };
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
    runs += done.load();
  }
  state.counters["seed_runs_per_s"] =
      benchmark::Counter(static_cast<double>(runs), benchmark::Counter::kIsRate);
  state.counters["scenarios"] = static_cast<double>(scenarios.size());
}
BENCHMARK(bench_swarm)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kSecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
