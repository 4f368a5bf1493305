// Goal: a BullMQ job export (docs/bullmq-export.md) is read as jobs and their
// attempts from the queue's event stream, a malformed one is refused with the
// file and the JSON pointer, and a job that ran becomes a call job whose
// policy is its own BullMQ options, its slot the minute of its first attempt
// and its expectations the observed attempts.
// Method: an export in the exporter's shape, written by hand as BullMQ 5
// records a job failing three times with 429 and then completing (a fixed
// 2 s backoff): a failure it retries writes `delayed`, not `failed`, and its
// message is only in the job's stacktrace; every expected value derived by
// hand from it.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/import/bullmq_scenario.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::sim;
using nlohmann::json;

constexpr TimeMs kAdded = 1'796'000'023'456;  // 2026-11-30T00:53:43.456Z

json event(TimeMs at, const std::string& kind, json fields = json::object()) {
  return {{"id", std::to_string(at) + "-0"},
          {"at", at},
          {"event", kind},
          {"jobId", "1"},
          {"fields", std::move(fields)}};
}

// Attempts at +20 ms, then 2 s after each failure (plus BullMQ's 8 ms timer).
json incident() {
  json events = json::array({event(kAdded, "added"), event(kAdded + 1, "waiting")});
  TimeMs t = kAdded + 20;
  for (int i = 0; i < 3; ++i) {
    events.push_back(event(t, "active"));
    events.push_back(event(t + 105, "delayed", {{"delay", std::to_string(t + 2105)}}));
    events.push_back(event(t + 2113, "waiting", {{"prev", "delayed"}}));
    t += 105 + 2000 + 8;
  }
  events.push_back(event(t, "active"));
  events.push_back(event(t + 104, "completed"));
  json job = {{"id", "1"},
              {"name", "sync"},
              {"opts", {{"attempts", 5}, {"backoff", {{"type", "fixed"}, {"delay", 2000}}}}},
              {"timestamp", kAdded},
              {"attemptsMade", 4},
              {"failedReason", "HTTP 429 Too Many Requests"},
              {"stacktrace",
               json::array({"Error: HTTP 429 Too Many Requests\n    at w.mjs:87:17",
                            "Error: HTTP 429 Too Many Requests\n    at w.mjs:87:17",
                            "Error: HTTP 503 Service Unavailable\n    at w.mjs:87:17"})},
              {"state", "completed"}};
  return {{"format", "rehearse-bullmq-export"},
          {"version", 1},
          {"queues",
           json::array(
               {{{"name", "partner-sync"}, {"jobs", json::array({job})}, {"events", events}}})}};
}

TEST(BullmqExport, ReadsEachAttemptFromTheEventStream) {
  const auto read = read_bullmq_export(incident().dump(), "x.json");
  ASSERT_TRUE(read.ok()) << read.error().describe();
  ASSERT_EQ(read->jobs.size(), 1u);
  const BullmqJob& job = read->jobs[0];
  EXPECT_EQ(job.queue, "partner-sync");
  ASSERT_EQ(job.attempts.size(), 4u);
  EXPECT_EQ(job.attempts[0].start_ms, kAdded + 20);
  EXPECT_TRUE(job.attempts[0].failed);
  EXPECT_EQ(job.attempts[0].failed_reason, "HTTP 429 Too Many Requests");
  EXPECT_EQ(job.attempts[1].start_ms, kAdded + 20 + 2113);
  EXPECT_EQ(job.attempts[2].failed_reason, "HTTP 503 Service Unavailable");  // its stacktrace entry
  EXPECT_FALSE(job.attempts[3].failed);
  EXPECT_EQ(job.attempts[3].where, "x.json:/queues/0/events/12");
}

TEST(BullmqExport, RefusesAMalformedExportNamingTheRecord) {
  const auto refused = [](const json& doc) {
    const auto read = read_bullmq_export(doc.dump(), "x.json");
    EXPECT_FALSE(read.ok());
    return read.ok() ? std::string() : read.error().describe();
  };
  json no_opts = incident();
  no_opts["queues"][0]["jobs"][0].erase("opts");
  EXPECT_NE(refused(no_opts).find("x.json:/queues/0/jobs/0/opts: expected the job's options"),
            std::string::npos);
  json wrong = incident();
  wrong["format"] = "bull-board";
  EXPECT_NE(refused(wrong).find("x.json:/format"), std::string::npos);
  json later = incident();
  later["version"] = 2;
  EXPECT_NE(refused(later).find("x.json:/version"), std::string::npos);
  json bad_at = incident();
  bad_at["queues"][0]["events"][3]["at"] = "soon";
  EXPECT_NE(refused(bad_at).find("x.json:/queues/0/events/3/at"), std::string::npos);
  EXPECT_FALSE(read_bullmq_export("{\"format\":", "x.json").ok());
}

TEST(BullmqImport, AJobBecomesACallJobAtTheMinuteOfItsFirstAttempt) {
  const auto read = read_bullmq_export(incident().dump(), "x.json");
  ASSERT_TRUE(read.ok());
  const auto got = import_bullmq({"x.json", "partner-incident"}, *read);
  ASSERT_TRUE(got.ok()) << got.error().describe();
  const auto& s = got->scenario;
  EXPECT_EQ(s["scenario"], "partner-incident");
  const auto& job = s["jobs"][0];
  EXPECT_EQ(job["id"], "sync-1");
  EXPECT_EQ(job["schedule"], "53 0 30 11 *");  // 00:53 on 30 November
  EXPECT_EQ(job["retry_policy"]["bullmq"]["attempts"], 5);
  EXPECT_EQ(s["services"]["partner-sync"]["latency"], "104ms");  // the shortest attempt
  const auto& slot = s["expect"]["jobs"]["sync-1"]["slots"][0];
  EXPECT_EQ(slot["slot"], "2026-11-30T00:53:00Z");
  EXPECT_EQ(slot["outcome"], "delivered");
  EXPECT_EQ(slot["attempt_at"],
            nlohmann::ordered_json::array({"+0ms", "+2s113ms", "+4s226ms", "+6s339ms"}));
  // Two windows: 429s from the first attempt (nothing before it) to the
  // middle of (second failure at 2s113ms, the 503 at 4s226ms], then the 503
  // to the middle of (4s226ms, the success at 6s339ms].
  ASSERT_EQ(got->faults.size(), 2u);
  EXPECT_EQ(got->faults[0]["status"], 429);
  EXPECT_EQ(got->faults[0]["at"], "2026-11-30T00:53:00Z");
  EXPECT_EQ(got->faults[0]["for"], "3s170ms");
  EXPECT_EQ(got->faults[1]["status"], 503);
  EXPECT_EQ(got->faults[1]["at"], "2026-11-30T00:53:03.170Z");
  EXPECT_EQ(got->faults[1]["for"], "2s113ms");
}

}  // namespace
