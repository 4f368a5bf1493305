// Goal: the trace at fleet scale. A streamed trace (RunOptions::keep_trace off)
// hashes, counts and judges a run exactly as a kept one; the direct line writer
// gives the bytes the ordered-JSON document gave (so every trace hash stays
// what it was); running out of memory in the run loop ends the run with a
// report of what it reached.
// Method: the former serializer is kept here as the reference and compared
// with to_json_line() on hand-made and generated events; every bundled
// scenario runs kept and streamed; a progress callback throws std::bad_alloc.
#include <gtest/gtest.h>

#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/kernel/memory_reserve.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/expect.hpp"
#include "sim/world/scenario.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

// The serializer the trace used before the direct writer: an ordered
// document dumped compactly, invalid UTF-8 replaced.
std::string reference_line(const TraceEvent& e) {
  nlohmann::ordered_json line;
  line["t"] = format_instant(e.t);
  line["seq"] = e.seq;
  line["type"] = e.type;
  if (!e.job.empty()) line["job"] = e.job;
  if (e.slot) line["slot"] = format_instant(*e.slot);
  if (!e.item.empty()) line["item"] = e.item;
  if (!e.service.empty()) line["service"] = e.service;
  for (auto it = e.data.begin(); it != e.data.end(); ++it) line[it.key()] = it.value();
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

TraceEvent event_with(json data) {
  TraceEvent e;
  e.t = 1'796'000'000'123;
  e.seq = 42;
  e.type = "run_finished";
  e.data = std::move(data);
  return e;
}

TEST(TraceLine, MatchesTheOrderedDocumentOnAwkwardValues) {
  std::vector<TraceEvent> events;
  events.push_back(event_with(json::object()));
  events.push_back(
      event_with({{"text", "quote \" backslash \\ tab \t nl \n cr \r bell \x07 del \x7f"}}));
  events.push_back(event_with({{"utf8", "\xE2\x9A\xA0\xEF\xB8\x8F caf\xC3\xA9"}}));
  events.push_back(event_with({{"invalid", std::string("bad \xC3\x28 and \xFF end")}}));
  events.push_back(event_with({{"n", -9'223'372'036'854'775'807LL - 1},
                               {"u", 18'446'744'073'709'551'615ULL},
                               {"f", 0.1},
                               {"e", 1e300},
                               {"z", nullptr},
                               {"b", true}}));
  events.push_back(
      event_with({{"nested",
                   {{"a", json::array({1, "two", json::object(), json::array(), nullptr})},
                    {"k\"ey", {{"x", false}}}}}}));
  TraceEvent full = event_with({{"attempt", 3}, {"zeta", "last"}, {"alpha", "first"}});
  full.job = "job/\"quoted\"";
  full.slot = 1'796'000'000'000;
  full.item = "ISSUE-7";
  full.service = "model-api";
  events.push_back(full);
  // Data fields named like the leading keys take their place (or follow the
  // data order when the leading key is absent).
  TraceEvent clash = event_with({{"job", "from-data"}, {"service", 7}, {"t", "data-t"}});
  clash.job = "from-event";
  events.push_back(clash);
  TraceEvent absent = event_with({{"item", "from-data"}, {"slot", 1}});
  events.push_back(absent);
  for (const TraceEvent& e : events) EXPECT_EQ(to_json_line(e), reference_line(e));
}

REHEARSE_PROP(TraceLineProp, MatchesTheOrderedDocumentOnGeneratedText, ()) {
  const auto text = *rc::gen::arbitrary<std::string>();
  const auto key = *rc::gen::arbitrary<std::string>();
  TraceEvent e = event_with({{key, text}, {"n", *rc::gen::arbitrary<std::int64_t>()}});
  e.job = *rc::gen::arbitrary<std::string>();
  e.t = *rc::gen::inRange<TimeMs>(0, 253'402'300'799'999);
  RC_ASSERT(to_json_line(e) == reference_line(e));
}

std::vector<std::filesystem::path> bundled_scenarios() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(REHEARSE_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Streamed and kept runs of every bundled scenario agree on everything but
// the kept events; the kept events hash to the run's hash.
TEST(TraceStream, StreamedRunsHashCountAndJudgeLikeKeptOnes) {
  for (const auto& path : bundled_scenarios()) {
    SCOPED_TRACE(path.string());
    auto scenario = load_scenario_file(path.string());
    ASSERT_TRUE(scenario.ok()) << scenario.error().describe();
    auto kept = run_scenario(*scenario);
    RunOptions streaming;
    streaming.keep_trace = false;
    auto streamed = run_scenario(*scenario, streaming);
    ASSERT_TRUE(kept.ok());
    ASSERT_TRUE(streamed.ok());
    EXPECT_EQ(streamed->trace_hash, kept->trace_hash);
    EXPECT_EQ(streamed->trace.size(), kept->trace.size());
    // Expectations counted from the services' own events keep the trace.
    EXPECT_EQ(streamed->trace.events().empty(), !expectations_need_trace(scenario->expect));
    EXPECT_EQ(kept->trace.events().size(), kept->trace.size());
    EXPECT_EQ(hex64(fnv1a64(kept->trace.to_jsonl())), kept->trace_hash);
    EXPECT_EQ(streamed->tallies, kept->tallies);
    EXPECT_EQ(streamed->violation_counts, kept->violation_counts);
    EXPECT_EQ(streamed->messenger_calls, kept->messenger_calls);
    EXPECT_EQ(streamed->events_executed, kept->events_executed);
  }
}

// Out of memory in the run loop ends the run where it was and reports the
// run so far (docs/run.md): simulated time reached, events, violations and
// tallies, and an error that says so; never a bare exception.
TEST(TraceStream, OutOfMemoryInTheRunLoopReportsTheRunSoFar) {
  auto scenario =
      load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/weekly-quota-2h.json");
  ASSERT_TRUE(scenario.ok());
  int calls = 0;
  RunOptions options;
  options.progress_every_events = 10;
  options.progress = [&calls](const RunProgress&) {
    if (++calls == 3) throw std::bad_alloc();
  };
  auto run = run_scenario(*scenario, options);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->out_of_memory);
  EXPECT_EQ(run->events_executed, 30u);
  EXPECT_GT(run->end_ms, scenario->start_ms);
  EXPECT_LT(run->end_ms, scenario->until_ms);
  EXPECT_TRUE(run->trace.events().empty());
  ASSERT_EQ(run->errors.size(), 1u);
  EXPECT_NE(run->errors.front().find("out of memory at " + format_instant(run->end_ms)),
            std::string::npos)
      << run->errors.front();
  EXPECT_NE(run->errors.front().find("after 30 events"), std::string::npos);
  EXPECT_TRUE(run->tallies.contains("jobs")) << run->tallies.dump();
  // The events were let go, not their count and hash: both are those of the
  // same run after 30 events.
  RunOptions marked;
  marked.record_marks = true;
  auto whole = run_scenario(*scenario, marked);
  ASSERT_TRUE(whole.ok());
  ASSERT_GT(whole->run_marks.size(), 30u);
  const RunMark& at30 = whole->run_marks[30];
  EXPECT_EQ(run->trace_hash, hex64(at30.trace_hash));
  EXPECT_NE(run->errors.front().find(fmt::format("and {} trace events", at30.trace_events)),
            std::string::npos)
      << run->errors.front();
}

// An allocation the memory reserve served (sim/kernel/memory_reserve.hpp) ends the
// run at the next event boundary, the event complete, as out of memory; the
// next run takes the reserve back and runs to the end. The handler is called
// as operator new would call it on a failed allocation.
TEST(TraceStream, AnAllocationTheReserveServedEndsTheRunAtTheNextEvent) {
  auto scenario =
      load_scenario_file(std::string(REHEARSE_SOURCE_DIR) + "/scenarios/weekly-quota-2h.json");
  ASSERT_TRUE(scenario.ok());
  ASSERT_TRUE(arm_memory_reserve(std::size_t{1} << 20));
  int calls = 0;
  RunOptions options;
  options.progress_every_events = 10;
  options.progress = [&calls](const RunProgress&) {
    if (++calls == 3) std::get_new_handler()();  // served: nothing thrown here
  };
  auto run = run_scenario(*scenario, options);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->out_of_memory);
  EXPECT_EQ(run->events_executed, 31u) << "the event after the one that was served";
  ASSERT_EQ(run->errors.size(), 1u);
  EXPECT_NE(run->errors.front().find("after 31 events"), std::string::npos) << run->errors.front();
  EXPECT_TRUE(memory_reserve_spent());

  auto next = run_scenario(*scenario);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->out_of_memory);
  EXPECT_EQ(next->outcome, RunOutcome::completed);
  EXPECT_FALSE(memory_reserve_spent());
  disarm_memory_reserve();
}

TEST(MemoryReserve, ServesOneFailureThenFailsUntilRearmed) {
  ASSERT_TRUE(arm_memory_reserve(std::size_t{1} << 20));
  ASSERT_NE(std::get_new_handler(), nullptr);
  EXPECT_FALSE(memory_reserve_spent());
  std::get_new_handler()();  // the first failure: the reserve goes
  EXPECT_TRUE(memory_reserve_spent());
  EXPECT_THROW(std::get_new_handler()(), std::bad_alloc);  // nothing left to give
  EXPECT_TRUE(rearm_memory_reserve());
  EXPECT_FALSE(memory_reserve_spent());
  std::get_new_handler()();
  EXPECT_TRUE(memory_reserve_spent());
  disarm_memory_reserve();
  EXPECT_EQ(std::get_new_handler(), nullptr);
  EXPECT_FALSE(memory_reserve_spent());
}

}  // namespace
}  // namespace rehearse::sim
