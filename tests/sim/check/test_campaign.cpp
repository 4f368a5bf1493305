// The campaign runner of `rehearse check` (sim/check/campaign.hpp): shards
// split the seed range exactly, the records do not depend on the thread
// count, JSON Lines files round-trip, merging refuses files that are not the
// shards of one run, and the progress line keeps to its pace.
#include "sim/check/campaign.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "sim/check/campaign_file.hpp"
#include "sim/check/progress.hpp"

namespace rehearse::sim {
namespace {

// ---- --shard K/N ----

TEST(Shard, ParsesKOfN) {
  const auto s = parse_shard("2/4");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (Shard{2, 4}));
  EXPECT_EQ(to_string(*s), "2/4");
  EXPECT_EQ(*parse_shard("1/1"), (Shard{1, 1}));
  EXPECT_EQ(*parse_shard("100000/100000"), (Shard{100000, 100000}));
}

TEST(Shard, RefusesWhatIsNotKOfN) {
  for (const char* bad : {"", "/", "1", "0/4", "5/4", "1/0", "-1/4", "1/-4", "a/4", "1/4x", " 1/4",
                          "1/4/4", "1.0/4", "100001/100001", "99999999999999999999/1"}) {
    const auto s = parse_shard(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().message.find("expected K/N"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find(std::string("'") + bad + "'"), std::string::npos);
  }
}

// For every N in 1..8 and every seed count 0..50 (and a range ending at the
// top of the seed space): the shards in order are contiguous blocks whose
// union is exactly the whole range, disjoint, sizes differing by at most one.
TEST(Shard, SplitsTheSeedRangeExactlyDisjointAndBalanced) {
  for (const std::uint64_t first :
       {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{18446744073709551615ULL - 50}}) {
    for (std::uint32_t n = 1; n <= 8; ++n) {
      for (std::uint64_t count = 0; count <= 50; ++count) {
        const SeedRange whole{first, count};
        std::multiset<std::uint64_t> seen;
        std::uint64_t smallest = count, largest = 0, next = first;
        for (std::uint32_t k = 1; k <= n; ++k) {
          const SeedRange part = shard_seeds(whole, Shard{k, n});
          EXPECT_EQ(part.first, next) << "contiguous, in order: " << k << "/" << n;
          for (std::uint64_t i = 0; i < part.count; ++i) seen.insert(part.first + i);
          next = part.first + part.count;
          smallest = std::min(smallest, part.count);
          largest = std::max(largest, part.count);
        }
        ASSERT_EQ(seen.size(), count) << n << " shards of " << count;
        for (std::uint64_t i = 0; i < count; ++i) {
          EXPECT_EQ(seen.count(first + i), 1u) << "seed " << first + i << " in " << n << " shards";
        }
        EXPECT_LE(largest - smallest, 1u) << n << " shards of " << count;
      }
    }
  }
}

TEST(Shard, CasesAreScenarioMajorSeedsAscending) {
  const auto cases = campaign_cases(2, SeedRange{5, 3});
  const std::vector<CheckCase> expected{{0, 5}, {0, 6}, {0, 7}, {1, 5}, {1, 6}, {1, 7}};
  EXPECT_EQ(cases, expected);
  EXPECT_TRUE(campaign_cases(3, SeedRange{0, 0}).empty());
}

// ---- threads ----

// A fake case: its record depends on the case alone; its cost varies with the
// seed so that cases finish out of order on more than one thread.
CaseRecord fake_case(const CheckCase& c) {
  const auto started_on = std::this_thread::get_id();
  std::this_thread::sleep_for(std::chrono::microseconds((c.seed * 7919) % 2000));
  CaseRecord r;
  r.scenario = "s" + std::to_string(c.scenario);
  r.path = "scenarios/s" + std::to_string(c.scenario) + ".json";
  r.seed = c.seed;
  r.verdict = c.seed % 7 == 3 ? CaseVerdict::fail : CaseVerdict::pass;
  if (r.verdict == CaseVerdict::fail) r.violations = {"retries_bounded"};
  r.trace_hash = std::to_string(c.seed * 31 + c.scenario);
  r.events = c.seed + 100 * c.scenario;
  // The whole case ran on one thread.
  r.message = std::this_thread::get_id() == started_on ? "" : "moved threads";
  return r;
}

std::vector<CaseRecord> records_of(const std::vector<TimedRecord>& timed) {
  std::vector<CaseRecord> out;
  for (const TimedRecord& t : timed) out.push_back(t.record);
  return out;
}

TEST(Campaign, TheRecordsAreTheSameForAnyThreadCount) {
  const auto cases = campaign_cases(3, SeedRange{10, 40});
  CampaignOptions one;
  const auto expected = records_of(run_campaign(cases, fake_case, one));
  ASSERT_EQ(expected.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(expected[i], fake_case(cases[i])) << "case " << i << " in its place";
  }
  for (int threads : {2, 3, 8, 64}) {
    CampaignOptions options;
    options.threads = threads;
    EXPECT_EQ(records_of(run_campaign(cases, fake_case, options)), expected) << threads;
  }
}

TEST(Campaign, EachCaseRunsExactlyOnceAndOnSeveralThreads) {
  const auto cases = campaign_cases(1, SeedRange{0, 200});
  std::mutex mutex;
  std::map<std::uint64_t, int> runs;
  std::set<std::thread::id> threads;
  auto counting = [&](const CheckCase& c) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(mutex);
    ++runs[c.seed];
    threads.insert(std::this_thread::get_id());
    return CaseRecord{};
  };
  CampaignOptions options;
  options.threads = 4;
  run_campaign(cases, counting, options);
  ASSERT_EQ(runs.size(), 200u);
  for (const auto& [seed, n] : runs) EXPECT_EQ(n, 1) << seed;
  EXPECT_GT(threads.size(), 1u) << "four workers share the cases";
}

TEST(Campaign, AThrowingCaseIsAnErrorRecordAndTheOthersRun) {
  const auto cases = campaign_cases(1, SeedRange{0, 5});
  auto throwing = [](const CheckCase& c) {
    if (c.seed == 2) throw std::runtime_error("boom");
    CaseRecord r;
    r.seed = c.seed;
    return r;
  };
  const auto out = run_campaign(cases, throwing, CampaignOptions{2, {}, {}});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[2].record.verdict, CaseVerdict::error);
  EXPECT_EQ(out[2].record.seed, 2u);
  EXPECT_EQ(out[2].record.message, "internal error: boom");
  EXPECT_EQ(count_verdicts(out), (CampaignCounts{5, 4, 0, 1}));
}

TEST(Campaign, ProgressIsReportedFromTheCallingThreadAndEndsComplete) {
  const auto cases = campaign_cases(1, SeedRange{0, 30});
  std::vector<std::pair<std::size_t, std::size_t>> seen;
  const auto caller = std::this_thread::get_id();
  bool elsewhere = false;
  CampaignOptions options;
  options.threads = 2;
  options.progress_every = std::chrono::milliseconds(1);
  options.progress = [&](std::size_t done, std::size_t total) {
    elsewhere = elsewhere || std::this_thread::get_id() != caller;
    seen.emplace_back(done, total);
  };
  auto slow = [](const CheckCase&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return CaseRecord{};
  };
  run_campaign(cases, slow, options);
  ASSERT_FALSE(seen.empty());
  EXPECT_FALSE(elsewhere);
  EXPECT_EQ(seen.back(), (std::pair<std::size_t, std::size_t>{30, 30}));
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_LE(seen[i - 1].first, seen[i].first);
}

// ---- progress line ----

TEST(Progress, FormatsCountsRateAndTimeLeft) {
  EXPECT_EQ(format_progress("check", 0, 8000, 0),
            "check: 0/8000 cases (0.0%), 0.0 seeds/s, ETA --");
  EXPECT_EQ(format_progress("check", 2000, 8000, 10),
            "check: 2000/8000 cases (25.0%), 200.0 seeds/s, ETA 30s");
  EXPECT_EQ(format_progress("check", 100, 8000, 10),
            "check: 100/8000 cases (1.2%), 10.0 seeds/s, ETA 13m10s");
  EXPECT_EQ(format_duration_s(3 * 3600 + 7 * 60 + 5), "3h07m");
}

// What a progress line writes for `updates` updates (done = 1..updates of
// `updates`) against a fake clock stepping 0.1 s per update, then finish.
std::string progress_text(const std::string& label, ProgressStyle style, std::size_t updates,
                          const char* noun = nullptr) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  if (out == nullptr) return "open_memstream failed";
  auto now = std::chrono::steady_clock::time_point{};
  {
    ProgressLine line(out, label, style, [&] { return now; });
    if (noun != nullptr) line.set_nouns(noun, noun);
    for (std::size_t done = 1; done <= updates; ++done) {
      now += std::chrono::milliseconds(100);
      line.update(done, updates);
    }
    line.finish(updates, updates);
  }
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

// Ten updates a second come in, one line a second goes out, each starting
// with '\r'; finish ends the line.
TEST(Progress, RewritesTheLineAtMostOnceASecond) {
  const std::string text = progress_text("check", ProgressStyle::in_place, 50);
  std::size_t lines = 0;
  for (char c : text) lines += c == '\r' ? 1 : 0;
  EXPECT_EQ(lines, 5u + 1u) << text;  // 5 s of updates (one per second) and the final line
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one newline, at the end";
  EXPECT_NE(text.find("check: 50/50 cases (100.0%)"), std::string::npos) << text;
}

// Off a terminal 65 s of updates give a line of its own every ten seconds
// (no '\r', which a CI log would run together), and finish adds the last
// state.
TEST(Progress, WritesALineEveryTenSecondsOffATerminal) {
  const std::string text = progress_text("tune", ProgressStyle::lines, 650, "runs");
  std::size_t newlines = 0;
  for (char c : text) newlines += c == '\n' ? 1 : 0;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(newlines, 7u + 1u) << text;  // at 0.1 s, 10.1 s, ..., 60.1 s, and the final line
  EXPECT_NE(text.find("tune: 650/650 runs (100.0%), 10.0 runs/s"), std::string::npos) << text;
}

// ---- JSON Lines ----

CampaignHeader header_of(Shard shard, std::uint64_t seeds = 10) {
  CampaignHeader h;
  h.scenarios = {"scenarios/s0.json", "scenarios/s1.json"};
  h.first_seed = 100;
  h.seeds = seeds;
  h.shard = shard;
  h.options = {{"random_jobs", true}};
  return h;
}

// The records of one shard as the fake case gives them.
std::vector<TimedRecord> shard_records(const CampaignHeader& h) {
  std::vector<TimedRecord> out;
  for (const CheckCase& c : campaign_cases(h.scenarios.size(), h.shard_range())) {
    out.push_back({fake_case(c), 1.5});
  }
  return out;
}

TEST(CampaignFile, RoundTripsHeaderRecordsAndSummary) {
  const CampaignHeader h = header_of(Shard{2, 3});
  auto records = shard_records(h);
  records[1].record.message = "quote \" backslash \\ newline \n tab \t unicode \xc3\xa9";
  const std::string text = campaign_jsonl(h, records, 1, 250.5);
  const auto back = parse_campaign_jsonl(text, "s.jsonl");
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->header, h);
  ASSERT_EQ(back->records.size(), records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(back->records[i].record, records[i].record);
    EXPECT_EQ(back->records[i].wall_ms, records[i].wall_ms);
    EXPECT_EQ(back->lines[i], i + 2);
  }
  EXPECT_EQ(back->summary, (CampaignSummary{count_verdicts(records), 1, 250.5}));
  EXPECT_EQ(campaign_jsonl(back->header, back->records, back->summary.exit_code,
                           back->summary.wall_ms),
            text);
}

TEST(CampaignFile, TheHeaderLineHasTheDocumentedKeys) {
  const std::string text = campaign_jsonl(header_of(Shard{1, 4}), {}, 0);
  const auto header = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(header, nlohmann::json::parse(
                        R"({"type":"header","format":1,"command":"check",
                            "scenarios":["scenarios/s0.json","scenarios/s1.json"],
                            "first_seed":100,"seeds":10,"shard":"1/4","options":{"random_jobs":true}})"));
}

// Every way a file can be cut short or damaged names path:line:column and
// what was expected there.
TEST(CampaignFile, RefusesDamagedFilesNamingTheLine) {
  const CampaignHeader h = header_of(Shard{1, 1}, 2);
  const std::string good = campaign_jsonl(h, shard_records(h), 1);
  const auto line_start = [&](int n) {
    std::size_t at = 0;
    for (int i = 1; i < n; ++i) at = good.find('\n', at) + 1;
    return at;
  };
  struct Damage {
    std::string text;
    std::string where;
    std::string expected;
  };
  const std::vector<Damage> damages{
      {good.substr(0, line_start(4) + 20), "f:4:", "expected one complete JSON object"},
      {good.substr(0, line_start(6)), "f:6:1",
       "expected the summary line: the file ends after line 5"},
      {"", "f:1:1", "expected the header line"},
      {good.substr(line_start(2)), "f:1:1", "expected the header line first"},
      {good + "{\"type\":\"case\"}\n", "f:7:1", "expected nothing after the summary line"},
      {good.substr(0, line_start(3)) + "\n" + good.substr(line_start(3)), "f:3:1", "empty line"},
      {good.substr(0, line_start(3)) + good.substr(line_start(4)), "f:5:1",
       "the summary says 4 cases"},
      {good.substr(0, line_start(2)) + "{\"type\":\"case\",\"seed\":1}\n" +
           good.substr(line_start(2)),
       "f:2:1", "case: /scenario: expected a string"},
      {good.substr(0, line_start(2)) + "[1]\n" + good.substr(line_start(2)), "f:2:1",
       "expected a JSON object"},
  };
  for (const Damage& d : damages) {
    const auto r = parse_campaign_jsonl(d.text, "f");
    ASSERT_FALSE(r.ok()) << d.expected;
    EXPECT_EQ(r.error().where.rfind(d.where, 0), 0u) << r.error().describe();
    EXPECT_NE(r.error().message.find(d.expected), std::string::npos) << r.error().describe();
  }
  std::string bad_header = good;
  bad_header.replace(bad_header.find("\"shard\":\"1/1\""), 13, "\"shard\":\"2/1\"");
  const auto r = parse_campaign_jsonl(bad_header, "f");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().describe(), "f:1:1: header: expected \"shard\": \"K/N\" with 1 <= K <= N");
}

// ---- merge ----

std::vector<CampaignFile> shard_files(std::uint32_t n, std::uint64_t seeds = 10) {
  std::vector<CampaignFile> files;
  for (std::uint32_t k = 1; k <= n; ++k) {
    const CampaignHeader h = header_of(Shard{k, n}, seeds);
    const auto records = shard_records(h);
    const int exit_code = count_verdicts(records).failed > 0 ? 1 : 0;
    auto f = parse_campaign_jsonl(campaign_jsonl(h, records, exit_code),
                                  "shard" + std::to_string(k) + ".jsonl");
    EXPECT_TRUE(f.ok());
    files.push_back(*f);
  }
  return files;
}

TEST(Merge, ShardsInAnyOrderGiveTheWholeRun) {
  const CampaignHeader whole = header_of(Shard{1, 1});
  const auto single = shard_records(whole);
  for (std::uint32_t n : {1u, 3u, 4u, 12u}) {
    auto files = shard_files(n);
    std::reverse(files.begin(), files.end());
    const auto merged = merge_campaign_files(files);
    ASSERT_TRUE(merged.ok()) << merged.error().describe();
    EXPECT_EQ(merged->header, whole);
    EXPECT_EQ(records_of(merged->records), records_of(single)) << n;
    EXPECT_EQ(merged->exit_code, 1);
  }
}

void expect_refused(const std::vector<CampaignFile>& files, const std::string& where,
                    const std::string& expected) {
  const auto merged = merge_campaign_files(files);
  ASSERT_FALSE(merged.ok()) << expected;
  EXPECT_EQ(merged.error().where, where) << merged.error().describe();
  EXPECT_NE(merged.error().message.find(expected), std::string::npos) << merged.error().describe();
}

TEST(Merge, RefusesAMissingShard) {
  auto files = shard_files(4);
  files.erase(files.begin() + 2);
  expect_refused(files, "", "shard 3/4 (seeds 106..107) is missing");
}

TEST(Merge, RefusesADuplicateShard) {
  auto files = shard_files(4);
  files.push_back(files[1]);
  files.back().path = "copy.jsonl";
  expect_refused(files, "copy.jsonl:1:1", "shard 2/4 again: shard2.jsonl is that shard already");
}

TEST(Merge, RefusesShardsOfAnotherRun) {
  const std::vector<std::pair<std::function<void(CampaignHeader&)>, std::string>> changes{
      {[](CampaignHeader& h) { h.command = "run"; }, "command 'run', not 'check'"},
      {[](CampaignHeader& h) { h.scenarios.pop_back(); }, "scenarios [\"scenarios/s0.json\"]"},
      {[](CampaignHeader& h) { h.first_seed = 0; }, "seeds 0+10, not 100+10"},
      {[](CampaignHeader& h) { h.seeds = 11; }, "seeds 100+11, not 100+10"},
      {[](CampaignHeader& h) {
         h.shard = Shard{2, 3};
       },
       "shard 2/3, not of 4 shards"},
      {[](CampaignHeader& h) { h.options["random_jobs"] = false; }, "options"},
  };
  for (const auto& [change, expected] : changes) {
    auto files = shard_files(4);
    change(files[2].header);
    expect_refused(files, "shard3.jsonl:1:1", expected);
  }
}

TEST(Merge, RefusesACaseTwiceAMissingCaseAndASeedOfAnotherShard) {
  auto twice = shard_files(2);
  twice[1].records[1] = twice[1].records[0];
  expect_refused(twice, "shard2.jsonl:3:1",
                 "the case of 'scenarios/s0.json' seed 105 again (first at shard2.jsonl:2)");

  auto missing = shard_files(2);
  missing[1].records.erase(missing[1].records.begin() + 7);
  missing[1].lines.erase(missing[1].lines.begin() + 7);
  expect_refused(missing, "shard2.jsonl:12:1",
                 "the case of 'scenarios/s1.json' seed 107 is missing: expected shard 2/2 to hold "
                 "seeds 105..109");

  auto elsewhere = shard_files(2);
  elsewhere[0].records[0].record.seed = 105;
  expect_refused(elsewhere, "shard1.jsonl:2:1",
                 "seed 105: expected a seed of shard 1/2 (seeds 100..104)");

  auto stranger = shard_files(2);
  stranger[0].records[3].record.path = "scenarios/other.json";
  expect_refused(stranger, "shard1.jsonl:5:1",
                 "case of 'scenarios/other.json': expected one of the header's scenarios");
}

TEST(Merge, TheExitCodeIsTheWorstOfTheShards) {
  auto files = shard_files(3, 3);  // seed 101 fails: exit code 1 in shard 2
  EXPECT_EQ(files[0].summary.exit_code, 0);
  EXPECT_EQ(files[1].summary.exit_code, 1);
  files[2].summary.exit_code = 3;
  const auto merged = merge_campaign_files(files);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->exit_code, 3);
}

TEST(Merge, MoreShardsThanSeedsLeavesSomeEmpty) {
  const auto merged = merge_campaign_files(shard_files(5, 3));
  ASSERT_TRUE(merged.ok()) << merged.error().describe();
  EXPECT_EQ(merged->records.size(), 6u);
}

}  // namespace
}  // namespace rehearse::sim
