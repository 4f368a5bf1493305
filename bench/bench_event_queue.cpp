// The hold model (Jones, "An empirical comparison of priority-queue and
// event-set implementations", CACM 1986): a queue kept at a fixed number of
// pending events; each step pops the earliest event and pushes one back at its
// time plus a random increment. This is the simulator's steady state.
//
// Compared in the same binary and run: our EventQueue (4-ary heap of packed
// 16-byte keys, payloads apart, lazy cancel, carrying a payload) against a
// bare std::priority_queue of the same (time, seq) keys without payloads.
// Both draw increments from the same seeded xoshiro256** stream. The summary
// printed at the end gives, per size, bare time / our time (above 1: ours is
// faster), from the fastest of five repetitions' CPU times.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <queue>
#include <string>
#include <vector>

#include "sim/kernel/event_queue.hpp"
#include "sim/kernel/rng.hpp"

namespace {

using rehearse::TimeMs;
using rehearse::sim::EventQueue;
using rehearse::sim::Rng;

constexpr std::uint64_t kIncrementMaxMs = 1000;
constexpr std::uint64_t kSeed = 20240601;

void bench_hold_event_queue(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  EventQueue<std::uint64_t> queue(pending + 1);
  Rng rng(kSeed);
  for (std::size_t i = 0; i < pending; ++i) {
    queue.push(static_cast<TimeMs>(rng.next_below(kIncrementMaxMs)), i);
  }
  for (auto _ : state) {
    auto event = queue.pop();
    const auto increment = static_cast<TimeMs>(1 + rng.next_below(kIncrementMaxMs));
    benchmark::DoNotOptimize(queue.push(event->time + increment, event->payload));
  }
  state.SetItemsProcessed(state.iterations());
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

void bench_hold_priority_queue(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  std::vector<BareKey> storage;
  storage.reserve(pending + 1);
  std::priority_queue<BareKey, std::vector<BareKey>, Later> queue(Later{}, std::move(storage));
  Rng rng(kSeed);
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < pending; ++i) {
    queue.push({static_cast<TimeMs>(rng.next_below(kIncrementMaxMs)), ++seq});
  }
  for (auto _ : state) {
    const BareKey top = queue.top();
    queue.pop();
    const auto increment = static_cast<TimeMs>(1 + rng.next_below(kIncrementMaxMs));
    queue.push({top.time + increment, ++seq});
    benchmark::DoNotOptimize(seq);
  }
  state.SetItemsProcessed(state.iterations());
}

// Five repetitions per size; the summary uses the fastest (least disturbed)
// CPU time of each, because the machines we run on are shared.
void hold_sizes(benchmark::internal::Benchmark* b) {
  for (const std::int64_t pending : {1'000, 10'000, 100'000, 1'000'000}) b->Arg(pending);
  b->Repetitions(5);
  b->ReportAggregatesOnly(true);
  b->ComputeStatistics("min", [](const std::vector<double>& v) {
    return *std::min_element(v.begin(), v.end());
  });
}

BENCHMARK(bench_hold_event_queue)->Apply(hold_sizes);
BENCHMARK(bench_hold_priority_queue)->Apply(hold_sizes);

// Prints the usual console output, then one line per size with the ratio.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Aggregate || run.aggregate_name != "min") continue;
      const std::string name = run.run_name.function_name;
      const long size = std::stol(run.run_name.args);
      // CPU nanoseconds per pop+push step (the default time unit is ns).
      const double ns = run.GetAdjustedCPUTime();
      if (name == "bench_hold_event_queue") ours_ns_[size] = ns;
      if (name == "bench_hold_priority_queue") bare_ns_[size] = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nhold model, fastest of 5 repetitions, CPU ns per pop+push\n");
    std::printf("(ratio = priority_queue / EventQueue; above 1: EventQueue is faster)\n");
    std::printf("%10s %14s %14s %8s\n", "pending", "EventQueue", "priority_queue", "ratio");
    for (const auto& [size, ours] : ours_ns_) {
      const auto bare = bare_ns_.find(size);
      if (bare == bare_ns_.end()) continue;
      std::printf("%10ld %14.1f %14.1f %8.2f\n", size, ours, bare->second, bare->second / ours);
    }
  }

 private:
  std::map<long, double> ours_ns_;
  std::map<long, double> bare_ns_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
