// The part of state_durable that judges a job's own damaged file (a delivery
// ledger, a pipeline file) from world facts: runs taken after a process read
// the damage make no call for the job, and the bytes stay.
#include <gtest/gtest.h>

#include <string>

#include "sim/monitors/job_file_watch.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

class Facts {
 public:
  std::size_t add(std::string type, std::string job, json data, std::string service = {}) {
    TraceEvent e;
    e.t = static_cast<TimeMs>(events_.size()) * 1000;
    e.type = std::move(type);
    e.job = std::move(job);
    e.service = std::move(service);
    e.data = std::move(data);
    events_.push_back(std::move(e));
    return events_.size() - 1;
  }
  Violations judge() const {
    JobFileWatch watch("state_durable");
    Violations out;
    for (std::size_t i = 0; i < events_.size(); ++i) watch.observe(events_[i], i, out);
    return out;
  }

 private:
  std::vector<TraceEvent> events_;
};

const char* kLedger = "/srv/ledger/report.ledger.journal";

// The ledger of job `report` damaged, then read by process 1.
Facts damaged_and_read() {
  Facts f;
  f.add("job_file_damaged", "report", {{"path", kLedger}, {"mode", "garbage"}, {"applied", true}});
  f.add("queue_take", "report", {{"process", 1}, {"id", 1}});
  f.add("disk_read", "", {{"path", kLedger}, {"process", 1}});
  return f;
}

TEST(JobFileWatch, FiresWhenALaterRunCallsTheModelApi) {
  Facts f = damaged_and_read();
  f.add("queue_take", "report", {{"process", 1}, {"id", 2}});
  const auto bad = f.add("service_call", "report", {{"operation", "generate"}}, "model-api");
  const Violations v = f.judge();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].event_index, bad);
  EXPECT_NE(v[0].message.find("model-api"), std::string::npos) << v[0].message;
}

TEST(JobFileWatch, FiresWhenALaterRunSendsItsDelivery) {
  Facts f = damaged_and_read();
  f.add("queue_take", "report", {{"process", 1}, {"id", 2}});
  const auto bad =
      f.add("message_delivered", "report", {{"kind", "delivery"}, {"target", "team"}}, "messenger");
  const Violations v = f.judge();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].event_index, bad);
}

TEST(JobFileWatch, FiresWhenTheDamagedFileIsReplaced) {
  Facts f = damaged_and_read();
  const auto bad =
      f.add("disk_rename", "",
            {{"from", "/srv/ledger/report.ledger.tmp"}, {"to", kLedger}, {"process", 1}});
  const Violations v = f.judge();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].event_index, bad);
}

TEST(JobFileWatch, ARelativeStoreDirectoryNamesTheSameFile) {
  Facts f;
  f.add("job_file_damaged", "loop",
        {{"path", "pipeline-loop/pipeline.json"}, {"mode", "schema"}, {"applied", true}});
  f.add("disk_read", "", {{"path", "/pipeline-loop/pipeline.json"}, {"process", 1}});
  f.add("queue_take", "loop", {{"process", 1}, {"id", 3}});
  const auto bad = f.add("service_call", "loop", {{"operation", "get_issue"}}, "orchestrator");
  const Violations v = f.judge();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].event_index, bad);
}

// Near misses: the run that first reads the damage made its calls before the
// read; a notification of the failure is allowed; another job is free; a
// process booted after a crash has not read the damage yet; the world could
// not damage the file.
TEST(JobFileWatch, NearMissesHoldTheirCalls) {
  Facts f;
  f.add("job_file_damaged", "report", {{"path", kLedger}, {"mode", "garbage"}, {"applied", true}});
  f.add("queue_take", "report", {{"process", 1}, {"id", 1}});
  f.add("service_call", "report", {{"operation", "generate"}}, "model-api");
  f.add("disk_read", "", {{"path", kLedger}, {"process", 1}});
  f.add("queue_take", "report", {{"process", 1}, {"id", 2}});
  f.add("message_delivered", "report",
        {{"kind", "notification"}, {"event", "retry_scheduled"}, {"target", "team"}}, "messenger");
  f.add("service_call", "other", {{"operation", "generate"}}, "model-api");
  f.add("process_crash", "", {{"pid", 1}});
  f.add("queue_take", "report", {{"process", 1}, {"id", 3}});
  f.add("service_call", "report", {{"operation", "generate"}}, "model-api");
  f.add("job_file_damaged", "late", {{"path", "/srv/ledger/late.ledger.json"}, {"applied", false}});
  f.add("disk_write", "", {{"path", "/srv/ledger/late.ledger.json"}, {"process", 1}});
  EXPECT_TRUE(f.judge().empty());
}

}  // namespace
}  // namespace rehearse::sim
