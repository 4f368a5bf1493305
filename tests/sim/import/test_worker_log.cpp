// Goal: the worker's JSON log (docs/log-format.md, format 1) is read back
// line by line, and what it cannot be trusted with is refused with the file,
// the line and what was expected: a line cut short, a format number this
// reader does not know, an envelope key missing or of the wrong type, a
// clock that goes back (accepted only when asked, and then reported). From
// the lines, the evidence follows each slot as the simulator's slot tracker
// does and places a call job's calls by its services' latencies.
// Method: hand-written lines in the adapter's shape, each expectation
// derived by hand from them.
#include <gtest/gtest.h>

#include <string>

#include "sim/import/log_evidence.hpp"
#include "sim/import/worker_log.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::sim;

std::string line(const std::string& t, const std::string& event, const std::string& fields,
                 const std::string& level = "info") {
  return R"({"log":1,"t":")" + t + R"(","level":")" + level + R"(","event":")" + event +
         R"(","fields":)" + fields + "}\n";
}

const std::string kConfigured = line(
    "2026-11-30T00:00:00Z", "job_configured",
    R"({"job_id":"sync","kind":"call","schedule":"0 * * * *","effective_schedule":"0 * * * *",)"
    R"("retry_policy":{"max":2,"backoff_sec":60},"targets":[],"params":{"calls":[)"
    R"({"service":"billing","method":"GET","path":"/a"},{"service":"ledger","method":"POST","path":"/b"}]}})");
const std::string kBoot = line("2026-11-30T00:00:00Z", "scheduler_boot",
                               R"({"at":"2026-11-30T00:00:00Z","jobs":1,"concurrency":1})");

std::string run_lines(const std::string& hour, bool fail) {
  const std::string slot = "2026-11-30T" + hour + ":00:00Z";
  std::string out = line(slot, "slot_due", R"({"job_id":"sync","slot":")" + slot + R"("})");
  out += line(slot, "run_started",
              R"({"job_id":"sync","slot":")" + slot + R"(","kind":"regular","attempt":1})");
  const std::string end = "2026-11-30T" + hour + ":00:00.300Z";
  if (fail) {
    out +=
        line(end, "call_failed",
             R"({"job_id":"sync","slot":")" + slot + R"(","attempt":1,"request_id":"sync/)" + slot +
                 R"(/a1/c1","service":"ledger","failure_class":"provider_5xx","status":503})",
             "warning");
    out += line(end, "run_finished",
                R"({"job_id":"sync","slot":")" + slot +
                    R"(","kind":"regular","attempt":1,"outcome":"failure","duration_ms":300})");
    out += line(end, "retry_scheduled", R"({"job_id":"sync","slot":")" + slot + R"(","attempt":1})",
                "warning");
  } else {
    out += line(end, "run_finished",
                R"({"job_id":"sync","slot":")" + slot +
                    R"(","kind":"regular","attempt":1,"outcome":"success","duration_ms":300})");
  }
  return out;
}

TEST(WorkerLog, ReadsEveryLineWithItsPlace) {
  const auto read = read_worker_log(kConfigured + "\n" + kBoot, "w.log", {});
  ASSERT_TRUE(read.ok()) << read.error().describe();
  ASSERT_EQ(read->records.size(), 2u);
  EXPECT_EQ(read->records[0].event, "job_configured");
  EXPECT_EQ(read->records[1].line, 3);  // the blank line counts
  EXPECT_EQ(read->records[1].where(), "w.log:3");
  EXPECT_EQ(read->records[1].fields.value("jobs", 0), 1);
}

TEST(WorkerLog, RefusesWhatItCannotTrust) {
  const auto refused = [](const std::string& text) {
    const auto read = read_worker_log(text, "w.log", {});
    EXPECT_FALSE(read.ok());
    return read.ok() ? std::string() : read.error().describe();
  };
  const std::string cut = kConfigured.substr(0, 60);
  EXPECT_NE(refused(kBoot + cut).find("w.log:2: the line ends inside its JSON object"),
            std::string::npos);
  EXPECT_NE(refused("hello\n").find("w.log:1: not JSON at column 1"), std::string::npos);
  std::string two = kBoot;
  two.replace(two.find("\"log\":1"), 7, "\"log\":2");
  EXPECT_NE(refused(two).find("w.log:1:/log: unknown log format 2; this reader knows format 1"),
            std::string::npos);
  EXPECT_NE(
      refused(R"({"log":1,"level":"info","event":"x","fields":{}})").find("w.log:1:/t: missing"),
      std::string::npos);
  EXPECT_NE(refused(R"({"log":1,"t":"yesterday","level":"info","event":"x","fields":{}})")
                .find("expected an ISO-8601 UTC instant"),
            std::string::npos);
  EXPECT_NE(refused(
                R"({"log":1,"t":"2026-11-30T00:00:00Z","level":"loud","event":"x","fields":{}})")
                .find("w.log:1:/level"),
            std::string::npos);
  EXPECT_NE(refused(R"({"log":1,"t":"2026-11-30T00:00:00Z","level":"info","event":"x","fields":3})")
                .find("w.log:1:/fields"),
            std::string::npos);
  EXPECT_NE(refused("[1,2]\n").find("expected a log object"), std::string::npos);
}

TEST(WorkerLog, AClockGoingBackIsRefusedUnlessAccepted) {
  const std::string later = line("2026-11-30T01:00:00Z", "x", "{}");
  const std::string earlier = line("2026-11-30T00:30:00Z", "x", "{}");
  const auto refused = read_worker_log(later + earlier, "w.log", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().describe().find(
                "w.log:2:/t: the clock goes back from 2026-11-30T01:00:00Z (line 1) to "
                "2026-11-30T00:30:00Z"),
            std::string::npos);
  const auto accepted = read_worker_log(later + earlier, "w.log", {true});
  ASSERT_TRUE(accepted.ok());
  ASSERT_EQ(accepted->steps_back.size(), 1u);
  EXPECT_EQ(accepted->steps_back[0].where, "w.log:2");
}

TEST(LogEvidence, FollowsSlotsAndPlacesCallsByLatency) {
  const auto read =
      read_worker_log(kConfigured + kBoot + run_lines("01", false) + run_lines("02", true), "w.log",
                      {});
  ASSERT_TRUE(read.ok()) << read.error().describe();
  // billing's latency is declared; ledger's follows from the runs: 300 - 100.
  const LogEvidence e = read_log_evidence(*read, {{"billing", 100}});
  EXPECT_EQ(e.latency.at("ledger"), 200);
  ASSERT_EQ(e.jobs.size(), 1u);
  EXPECT_EQ(e.jobs[0].id(), "sync");
  const ObservedJob& job = e.observed.at("sync");
  EXPECT_EQ(job.runs, 2);
  ASSERT_EQ(job.slots.size(), 2u);
  EXPECT_EQ(job.slots.begin()->second.state, "delivered");
  EXPECT_EQ(job.slots.rbegin()->second.state, "retry_pending");
  EXPECT_EQ(job.slots.rbegin()->second.notifications.at("retry_scheduled"), 1);
  EXPECT_EQ(job.final_status, "retrying");
  // Four calls: two that succeeded at 01:00, billing ok and ledger 503 at 02:00.
  ASSERT_EQ(e.calls.size(), 4u);
  const CallObservation& failed = e.calls[3];
  EXPECT_EQ(failed.service, "ledger");
  EXPECT_EQ(failed.outcome, CallOutcome::http_error);
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(failed.start_ms, e.calls[2].start_ms + 100);  // after billing's 100 ms
  EXPECT_EQ(failed.where, "w.log:" + std::to_string(read->records.size() - 2));
}

}  // namespace
