// The campaign runner of `rehearse check`: which cases a run (or one shard of
// it) holds, and running them on a pool of threads with the results in case
// order (docs/check-ci.md).
//
// Parallelism is only BETWEEN cases: each case (one scenario, one seed) runs
// entirely on one thread through the case function, which shares nothing
// with the others; the results are stored by case index, so the records and
// their order are the same for any thread count. Nothing here reads the
// wall clock except the progress pacing, which is outside every run.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"
#include "sim/check/case_record.hpp"

namespace rehearse::sim {

// --shard K/N: the K-th of N parts of the seed range (1 <= K <= N).
struct Shard {
  std::uint32_t index = 1;  // K
  std::uint32_t count = 1;  // N
  bool operator==(const Shard&) const = default;
};
inline constexpr std::uint32_t kShardCountMax = 100000;

// "K/N" with decimal K and N, 1 <= K <= N <= kShardCountMax; an error says
// what was expected and what was given.
Result<Shard> parse_shard(std::string_view text);
std::string to_string(Shard shard);  // "K/N"

// The seeds first, first + 1, ..., first + count - 1.
struct SeedRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  bool operator==(const SeedRange&) const = default;
  bool contains(std::uint64_t seed) const { return seed - first < count; }
};

// The seeds of shard K/N: the K-th of N contiguous blocks, in order. The first
// (count mod N) blocks hold one seed more than the others, so the blocks
// differ in size by at most one; their union is `whole` and they are
// disjoint. Contiguous (not strided) so that a shard is itself an ordinary
// seed range (`--first-seed`, `--seeds`) that can be re-run without --shard.
SeedRange shard_seeds(SeedRange whole, Shard shard);

// One case: the index of a scenario in the run's list and a seed.
struct CheckCase {
  std::size_t scenario = 0;
  std::uint64_t seed = 0;
  bool operator==(const CheckCase&) const = default;
};

// The cases of `scenarios` scenarios over `seeds`, in the one global order:
// scenario by scenario (in the order given), seeds ascending within each.
std::vector<CheckCase> campaign_cases(std::size_t scenarios, SeedRange seeds);

// A record with the wall time its case took (for JUnit and JSON Lines; never
// part of a verdict).
struct TimedRecord {
  CaseRecord record;
  double wall_ms = 0;
};

using CaseFunction = std::function<CaseRecord(const CheckCase&)>;
// Cases done and the total; called from the calling thread only.
using CampaignProgress = std::function<void(std::size_t done, std::size_t total)>;

struct CampaignOptions {
  int threads = 1;            // worker threads (at least one is used)
  CampaignProgress progress;  // optional; called about every `progress_every`, and at the end
  std::chrono::milliseconds progress_every{1000};
};

// Runs every case once through `run_case` on `threads` worker threads that
// take case indices from one atomic counter; the result of case i is element
// i. A case function that throws gives an `error` record for that case (its
// seed and the exception's text); the others still run.
std::vector<TimedRecord> run_campaign(const std::vector<CheckCase>& cases,
                                      const CaseFunction& run_case, const CampaignOptions& options);

// Verdict counts of a list of records.
struct CampaignCounts {
  std::size_t cases = 0;
  std::size_t passed = 0;
  std::size_t failed = 0;
  std::size_t errors = 0;
  bool operator==(const CampaignCounts&) const = default;
};
CampaignCounts count_verdicts(const std::vector<TimedRecord>& records);

}  // namespace rehearse::sim
