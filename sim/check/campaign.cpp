#include "sim/check/campaign.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

Error shard_error(std::string_view text) {
  return make_error(ErrorCode::invalid_argument,
                    fmt::format("--shard: expected K/N with 1 <= K <= N <= {} (e.g. 2/4), got '{}'",
                                kShardCountMax, text));
}

// A decimal number in [1, kShardCountMax], all of `text`.
bool read_part(std::string_view text, std::uint32_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && out >= 1 && out <= kShardCountMax;
}

}  // namespace

Result<Shard> parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  if (slash == std::string_view::npos) return shard_error(text);
  Shard shard;
  if (!read_part(text.substr(0, slash), shard.index) ||
      !read_part(text.substr(slash + 1), shard.count) || shard.index > shard.count) {
    return shard_error(text);
  }
  // read_part bounded both parts: a shard that parses is one shard_seeds takes.
  REHEARSE_ASSERT_GE(shard.index, 1u);
  REHEARSE_ASSERT_LE(shard.count, kShardCountMax);
  return shard;
}

std::string to_string(Shard shard) {
  // Every shard written out was parsed or built as one of N (1 <= K <= N).
  REHEARSE_ASSERT_GE(shard.index, 1u);
  REHEARSE_ASSERT_LE(shard.index, shard.count);
  return fmt::format("{}/{}", shard.index, shard.count);
}

SeedRange shard_seeds(SeedRange whole, Shard shard) {
  // parse_shard is the only way in for a user's K/N, so a shard out of range
  // here was built wrong by the caller.
  REHEARSE_ASSERT_GE(shard.index, 1u);
  REHEARSE_ASSERT_LE(shard.index, shard.count);
  const std::uint64_t n = shard.count;
  const std::uint64_t k = shard.index - 1;  // 0-based
  const std::uint64_t base = whole.count / n;
  const std::uint64_t larger = whole.count % n;  // the first `larger` blocks hold base + 1
  const std::uint64_t offset = k * base + std::min(k, larger);
  const SeedRange out{whole.first + offset, base + (k < larger ? 1 : 0)};
  // The blocks partition `whole`: the first starts at its start, each lies
  // inside it, and the last ends where it ends (so none is lost or doubled).
  REHEARSE_ASSERT_LE(offset + out.count, whole.count);
  if (k == 0) REHEARSE_ASSERT_EQ(offset, 0u);
  if (k + 1 == n) REHEARSE_ASSERT_EQ(offset + out.count, whole.count);
  return out;
}

std::vector<CheckCase> campaign_cases(std::size_t scenarios, SeedRange seeds) {
  std::vector<CheckCase> cases;
  cases.reserve(scenarios * seeds.count);
  for (std::size_t s = 0; s < scenarios; ++s) {
    for (std::uint64_t i = 0; i < seeds.count; ++i) cases.push_back({s, seeds.first + i});
  }
  REHEARSE_ASSERT_EQ(cases.size(), scenarios * seeds.count);
  // The global order ends with the last scenario's last seed.
  if (!cases.empty()) REHEARSE_ASSERT_EQ(cases.back().scenario + 1, scenarios);
  return cases;
}

namespace {

// One case on the current thread; an exception becomes an error record.
TimedRecord run_timed(const CheckCase& c, const CaseFunction& run_case) {
  const auto started = std::chrono::steady_clock::now();
  TimedRecord out;
  try {
    out.record = run_case(c);
  } catch (const std::exception& e) {
    out.record.seed = c.seed;
    out.record.verdict = CaseVerdict::error;
    out.record.message = std::string("internal error: ") + e.what();
  }
  out.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  REHEARSE_ASSERT_GE(out.wall_ms, 0.0);  // a steady clock never goes back
  return out;
}

// What the workers and the calling thread share: the next index to take and
// how many are done (no state of any run).
struct Pool {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t done = 0;
};

void work(Pool& pool, const std::vector<CheckCase>& cases, const CaseFunction& run_case,
          std::vector<TimedRecord>& results) {
  for (std::size_t i = pool.next++; i < cases.size(); i = pool.next++) {
    results[i] = run_timed(cases[i], run_case);
    std::lock_guard<std::mutex> lock(pool.mutex);
    // Each index is taken once, so no case is counted twice.
    REHEARSE_ASSERT_LT(pool.done, cases.size());
    if (++pool.done == cases.size()) pool.all_done.notify_one();
  }
}

// The calling thread waits for the workers, reporting progress on the way.
void wait_reporting(Pool& pool, std::size_t total, const CampaignOptions& options) {
  std::unique_lock<std::mutex> lock(pool.mutex);
  while (pool.done < total) {
    const bool finished =
        pool.all_done.wait_for(lock, options.progress_every, [&] { return pool.done == total; });
    if (finished || !options.progress) continue;
    const std::size_t done = pool.done;
    lock.unlock();
    options.progress(done, total);
    lock.lock();
  }
  REHEARSE_ASSERT_EQ(pool.done, total);  // the workers never count past the total
}

}  // namespace

std::vector<TimedRecord> run_campaign(const std::vector<CheckCase>& cases,
                                      const CaseFunction& run_case,
                                      const CampaignOptions& options) {
  std::vector<TimedRecord> results(cases.size());
  Pool pool;
  const auto workers = static_cast<std::size_t>(std::max(1, options.threads));
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (std::size_t t = 0; t < std::min(workers, std::max<std::size_t>(1, cases.size())); ++t) {
    threads.emplace_back([&] { work(pool, cases, run_case, results); });
  }
  wait_reporting(pool, cases.size(), options);
  for (std::thread& t : threads) t.join();
  // Every case ran exactly once (the counter handed each index out once).
  REHEARSE_ASSERT_EQ(pool.done, cases.size());
  REHEARSE_ASSERT_GE(pool.next.load(), cases.size());
  if (options.progress) options.progress(cases.size(), cases.size());
  return results;
}

CampaignCounts count_verdicts(const std::vector<TimedRecord>& records) {
  CampaignCounts counts;
  counts.cases = records.size();
  for (const TimedRecord& r : records) {
    switch (r.record.verdict) {
      case CaseVerdict::pass: ++counts.passed; break;
      case CaseVerdict::fail: ++counts.failed; break;
      case CaseVerdict::error: ++counts.errors; break;
    }
  }
  REHEARSE_ASSERT_EQ(counts.passed + counts.failed + counts.errors, counts.cases);
  return counts;
}

}  // namespace rehearse::sim
