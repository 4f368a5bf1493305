// Goal: the world records the durable state itself, read from the simulated
// disk's bytes with readers of its own (sim/world/world_facts.hpp), so the monitors
// can judge what was written instead of what the core logged.
// Method: the readers on hand-made bytes (a torn or altered journal record is
// not durable state); and a weekly group job whose first two runs fail and
// whose third delivers: the state store's facts follow each outcome
// (`durable_job_state`), the ledger's guard and delivery are recorded
// (`durable_delivery`), each at the instant it became durable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/monitors/monitored_run.hpp"
#include "sim/world/sim_disk.hpp"
#include "sim/world/world_facts.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

json record(const std::string& job, int count, const std::string& status) {
  return {{"job_id", job},
          {"retry_status", status},
          {"retry_count", count},
          {"failure_class", count > 0 ? json("timeout") : json(nullptr)},
          {"next_action", "none"},
          {"next_run_at", nullptr},
          {"next_retry_at", nullptr},
          {"last_slot", nullptr},
          {"policy_error", ""},
          {"slots", json::object()}};
}

std::string frame(std::uint64_t seq, const json& payload) {
  const std::string body = payload.dump();
  const std::string head = std::to_string(seq) + " " + std::to_string(body.size()) + " " + body;
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", witness_crc32c(head));
  return head + " " + crc + "\n";
}

TEST(WorldFacts, Crc32cHasItsCheckValue) { EXPECT_EQ(witness_crc32c("123456789"), 0xE3069283u); }

TEST(WorldFacts, TheStateReaderFollowsTheJournalAndSkipsATornOrAlteredRecord) {
  SimDisk disk;
  ASSERT_TRUE(disk.create_dir("/s").ok());
  const std::string header = "#rehearse-journal format=1 base=0 crc32c=00000000\n";
  std::string journal = header + frame(1, record("a", 1, "retrying"));
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal).ok());
  DurableStateReader reader("/s");
  auto changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].first, "a");
  EXPECT_EQ(changed[0].second.at("retry_count"), 1);
  EXPECT_EQ(changed[0].second.at("retry_status"), "retrying");
  EXPECT_EQ(changed[0].second.at("policy_invalid"), false);
  // A record whose checksum does not hold (one byte altered) is not read,
  // nor is a record cut short.
  std::string altered = frame(2, record("a", 2, "retrying"));
  altered[altered.find("retrying")] = 'R';
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal + altered).ok());
  EXPECT_TRUE(reader.changed(disk, false).empty());
  const std::string whole = frame(2, record("a", 2, "retrying"));
  ASSERT_TRUE(
      disk.put_durable("/s/retry_state.journal", journal + whole.substr(0, whole.size() - 3)).ok());
  EXPECT_TRUE(reader.changed(disk, false).empty());
  // Once whole, it is read (and only the change is reported).
  journal += whole + frame(3, record("b", 0, "ok"));
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal).ok());
  changed = reader.changed(disk, false);
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].second.at("retry_count"), 2);
  EXPECT_EQ(changed[1].first, "b");
}

TEST(WorldFacts, TheSnapshotHoldsWhatTheJournalDoesNotRepeat) {
  SimDisk disk;
  ASSERT_TRUE(disk.create_dir("/s").ok());
  const json snap = {
      {"format", 1}, {"journal_seq", 2}, {"jobs", {{"a", record("a", 2, "retrying")}}}};
  ASSERT_TRUE(disk.put_durable("/s/retry_state.json", snap.dump()).ok());
  // Record 2 is folded into the snapshot already: not applied again.
  const std::string journal =
      "#rehearse-journal format=1 base=1 crc32c=00000000\n" + frame(2, record("a", 1, "retrying"));
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal).ok());
  DurableStateReader reader("/s");
  const auto changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].second.at("retry_count"), 2);
  // An unreadable snapshot records nothing.
  ASSERT_TRUE(disk.put_durable("/s/retry_state.json", "{\"jobs\":").ok());
  DurableStateReader fresh("/s");
  EXPECT_TRUE(fresh.changed(disk, true).empty());
}

json snapshot(std::uint64_t seq, const std::vector<json>& records) {
  json jobs = json::object();
  for (const json& r : records) jobs[r.at("job_id").get<std::string>()] = r;
  return {{"format", 1}, {"journal_seq", seq}, {"jobs", jobs}};
}

std::string journal_header(std::uint64_t base) {
  return "#rehearse-journal format=1 base=" + std::to_string(base) + " crc32c=00000000\n";
}

// A compaction syncs the directory twice (the new snapshot, then the new
// journal): the second full read finds the snapshot it parsed and no journal
// record applied over it, and reads the journal alone. Anything else parses
// the snapshot again: new bytes in it, or a journal record that had changed
// what was read from it.
TEST(WorldFacts, AFullReadParsesTheSnapshotAgainOnlyWhenItOrTheJournalOverItChanged) {
  SimDisk disk;
  ASSERT_TRUE(disk.create_dir("/s").ok());
  ASSERT_TRUE(
      disk.put_durable("/s/retry_state.json", snapshot(2, {record("a", 2, "retrying")}).dump())
          .ok());
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal",
                               journal_header(2) + frame(3, record("a", 3, "retrying")))
                  .ok());
  DurableStateReader reader("/s");
  auto changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].second.at("retry_count"), 3);
  EXPECT_EQ(reader.snapshot_parses(), 1u);

  // The journal restarted over the same snapshot: record 3 is gone from the
  // durable state, so `a` is back at 2; that needs the snapshot again.
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal_header(2)).ok());
  changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].second.at("retry_count"), 2);
  EXPECT_EQ(reader.snapshot_parses(), 2u);

  // A compaction: the snapshot first (a full read, a new parse), then the
  // new journal (a full read that reuses it).
  ASSERT_TRUE(
      disk.put_durable("/s/retry_state.json",
                       snapshot(3, {record("a", 2, "retrying"), record("b", 0, "ok")}).dump())
          .ok());
  changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].first, "b");
  EXPECT_EQ(reader.snapshot_parses(), 3u);
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal",
                               journal_header(3) + frame(4, record("b", 1, "retrying")))
                  .ok());
  changed = reader.changed(disk, true);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].second.at("retry_count"), 1);
  EXPECT_EQ(reader.snapshot_parses(), 3u) << "the same snapshot bytes, nothing applied over them";

  // The snapshot's bytes damaged in place (same file): read again.
  ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", journal_header(3)).ok());
  ASSERT_TRUE(reader.changed(disk, true).size() == 1u);  // b back to 0: a parse
  EXPECT_EQ(reader.snapshot_parses(), 4u);
  ASSERT_TRUE(disk.corrupt("/s/retry_state.json", CorruptionKind::empty).ok());
  EXPECT_TRUE(reader.changed(disk, true).empty()) << "an unreadable snapshot records nothing";
  EXPECT_EQ(reader.snapshot_parses(), 5u);
}

// The snapshot is read job by job (its tree is never built whole): the facts
// must be those of the whole document as a JSON tree reads it. A later
// duplicate job id, or a later duplicate "jobs" member, replaces the earlier
// one; a job that is not an object has no facts; "jobs" that is no object,
// or a document that does not parse, makes the snapshot unreadable.
TEST(WorldFacts, TheSnapshotReadJobByJobGivesTheFactsOfTheWholeDocument) {
  const std::string a1 = record("a", 1, "retrying").dump();
  const std::string a2 = record("a", 2, "retrying").dump();
  const std::string b0 = record("b", 0, "ok").dump();
  const auto read = [](const std::string& text) {
    SimDisk disk;
    EXPECT_TRUE(disk.create_dir("/s").ok());
    EXPECT_TRUE(disk.put_durable("/s/retry_state.json", text).ok());
    DurableStateReader reader("/s");
    json out = json::object();
    for (auto& [id, facts] : reader.changed(disk, true)) out[id] = facts.at("retry_count");
    return out;
  };
  EXPECT_EQ(read(R"({"journal_seq":1,"jobs":{"a":)" + a1 + R"(,"b":)" + b0 + "}}"),
            json({{"a", 1}, {"b", 0}}));
  EXPECT_EQ(read(R"({"jobs":{"a":)" + a1 + R"(,"a":)" + a2 + R"(},"journal_seq":1})"),
            json({{"a", 2}}));
  EXPECT_EQ(read(R"({"jobs":{"b":)" + b0 + R"(},"meta":{"x":{"y":1}},"jobs":{"a":)" + a1 +
                 R"(},"journal_seq":1})"),
            json({{"a", 1}}));
  EXPECT_EQ(read(R"({"journal_seq":1,"jobs":{"a":[1],"b":)" + b0 + "}}"), json({{"b", 0}}));
  EXPECT_EQ(read(R"({"journal_seq":1,"jobs":[)" + a1 + "]}"), json::object());
  EXPECT_EQ(read(R"({"journal_seq":1,"jobs":{"a":)" + a1 + "}"), json::object());
}

TEST(WorldFacts, TheLedgerReaderGivesGuardDeliveriesAndVerdictPerSlot) {
  const json doc = {{"format", 1},
                    {"job_id", "g"},
                    {"checksum", "x"},
                    {"slots",
                     {{{"slot", "2026-12-04T17:00:00Z"},
                       {"delivered_to", {"team"}},
                       {"guard_at", "2026-12-04T17:00:05Z"},
                       {"marked_at", "2026-12-04T17:00:06Z"},
                       {"verdict", "delivered"}}}}};
  const auto facts = ledger_facts(doc.dump());
  ASSERT_TRUE(facts.has_value());
  EXPECT_EQ(facts->first, "g");
  const json& s = facts->second.at("2026-12-04T17:00:00Z");
  EXPECT_EQ(s.at("delivered_to"), json({"team"}));
  EXPECT_EQ(s.at("guard"), true);
  EXPECT_EQ(s.at("verdict"), "delivered");
  EXPECT_FALSE(ledger_facts("not json").has_value());
}

const char* const kHeader = "#rehearse-journal format=1 base=0 crc32c=00000000\n";

TEST(WorldFacts, AJournalTailIsTornOnlyWhenOneInterruptedAppendCanExplainIt) {
  const std::string one = frame(1, record("a", 1, "retrying"));
  const std::string two = frame(2, record("a", 2, "retrying"));
  const std::string head = kHeader + one;
  EXPECT_FALSE(journal_tail(head + two).has_value());        // whole records only
  EXPECT_FALSE(journal_tail("#rehearse-jour").has_value());  // no header: nothing to tell
  // The last record cut short: torn, from its first byte to the end.
  auto tail = journal_tail(head + two.substr(0, 20));
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->offset, head.size());
  EXPECT_EQ(tail->length, 20u);
  EXPECT_TRUE(tail->torn);
  // A whole last line whose checksum fails: torn too.
  std::string altered = two;
  altered[altered.find("retrying")] = 'R';
  tail = journal_tail(head + altered);
  ASSERT_TRUE(tail.has_value());
  EXPECT_TRUE(tail->torn);
  // A bad record followed by an intact one: corrupt, not torn.
  tail = journal_tail(head + altered + frame(3, record("b", 0, "ok")));
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->offset, head.size());
  EXPECT_FALSE(tail->torn);
  // More bytes than the record its prefix announces: not one append.
  tail = journal_tail(head + altered + std::string(40, 'x'));
  ASSERT_TRUE(tail.has_value());
  EXPECT_FALSE(tail->torn);
}

// The world's tail witness on a disk driven by hand: found, kept, gone.
class TailWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(disk.create_dir("/s").ok());
    damaged = kHeader + frame(1, record("a", 1, "retrying")) + "2 300 {\"job_i";
    ASSERT_TRUE(disk.put_durable("/s/retry_state.journal", damaged).ok());
  }
  std::vector<TraceEvent> after(const std::string& type, nlohmann::json data = json::object()) {
    TraceEvent e;
    e.type = type;
    e.data = std::move(data);
    return watch.events_after(disk, e, 5);
  }
  SimDisk disk;
  JournalTailWatch watch{"/s"};
  std::string damaged;
};

TEST_F(TailWatchTest, ADroppedTailWithACopyKeptNamesTheCopy) {
  auto found = after("process_boot");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].type, "journal_tail_found");
  EXPECT_EQ(found[0].str("path"), "/s/retry_state.journal");
  EXPECT_TRUE(found[0].flag("torn"));
  EXPECT_EQ(found[0].num("length"), 13);
  EXPECT_TRUE(after("process_boot").empty());  // the same damage is found once
  // The copy: written, fsynced, renamed, the directory fsynced.
  ASSERT_TRUE(disk.write_file("/s/copy.tmp", damaged).ok());
  ASSERT_TRUE(disk.fsync_file("/s/copy.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/s/copy.tmp", "/s/copy").ok());
  EXPECT_TRUE(after("disk_rename", {{"from", "/s/copy.tmp"}, {"to", "/s/copy"}}).empty());
  ASSERT_TRUE(disk.fsync_dir("/s").ok());
  auto kept = after("disk_fsync_dir", {{"path", "/s"}});
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].type, "journal_tail_kept");
  EXPECT_EQ(kept[0].str("copy"), "/s/copy");
  // An append after the tail leaves the damaged bytes in place: not gone.
  ASSERT_TRUE(disk.append_file("/s/retry_state.journal", "x").ok());
  EXPECT_TRUE(after("disk_append", {{"path", "/s/retry_state.journal"}}).empty());
  // A new journal renamed over it: gone, the copy kept.
  ASSERT_TRUE(disk.write_file("/s/j.tmp", kHeader).ok());
  ASSERT_TRUE(disk.rename_file("/s/j.tmp", "/s/retry_state.journal").ok());
  auto gone = after("disk_rename", {{"from", "/s/j.tmp"}, {"to", "/s/retry_state.journal"}});
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].type, "journal_tail_gone");
  EXPECT_EQ(gone[0].data.at("kept_as"), json({"/s/copy"}));
}

TEST_F(TailWatchTest, ATailDroppedWithoutACopyKeepsNothing) {
  ASSERT_EQ(after("disk_crash").size(), 1u);
  // A copy that is not durable (no fsync of its bytes, no directory fsync)
  // is not a kept copy.
  ASSERT_TRUE(disk.write_file("/s/copy", damaged).ok());
  ASSERT_TRUE(disk.write_file("/s/retry_state.journal", kHeader).ok());
  auto gone = after("disk_write", {{"path", "/s/retry_state.journal"}});
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].type, "journal_tail_gone");
  EXPECT_EQ(gone[0].data.at("kept_as"), json::array());
  EXPECT_TRUE(after("disk_write", {{"path", "/s/retry_state.journal"}}).empty());
}

// A weekly group job, quota out for 40 minutes from 16:59:30: 17:00 fails,
// the 30-minute retry at 17:30 fails, the 60-minute one at 18:30 delivers.
TEST(WorldFacts, ARunRecordsTheDurableStateAndTheLedgerAsTheyBecomeDurable) {
  auto loaded = load_scenario_json(R"({
    "format": 1, "scenario": "facts", "start": "2026-12-04T16:00:00Z",
    "until": "2026-12-04T20:00:00Z",
    "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
    "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
              "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
    "faults": [{"at": "2026-12-04T16:59:30Z", "for": "40m", "kind": "quota_exhausted"}]
  })",
                                   "facts.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  auto run = run_scenario(*loaded);
  ASSERT_TRUE(run.ok()) << run.error().describe();
  std::vector<std::string> states;  // "<instant> <status> <count> <class>"
  std::vector<std::string> ledger;  // "<instant> guard=<b> to=<n> verdict=<v>"
  for (const TraceEvent& e : run->trace.events()) {
    ASSERT_TRUE(e.type != "durable_job_state" || e.source == EventSource::world);
    if (e.type == "durable_job_state" && e.job == "weekly") {
      const json& cls = e.data.at("failure_class");
      states.push_back(format_instant(e.t) + " " + e.str("retry_status") + " " +
                       std::to_string(e.num("retry_count")) + " " +
                       (cls.is_string() ? cls.get<std::string>() : "-"));
    }
    if (e.type == "durable_delivery" && e.job == "weekly") {
      const json& v = e.data.at("verdict");
      ledger.push_back(format_instant(e.t) + " guard=" + (e.flag("guard") ? "1" : "0") +
                       " to=" + std::to_string(e.data.at("delivered_to").size()) +
                       " verdict=" + (v.is_string() ? v.get<std::string>() : "-"));
    }
  }
  ASSERT_GE(states.size(), 3u);
  const auto seen = [&](const char* minute, const char* facts) {
    return std::any_of(states.begin(), states.end(), [&](const std::string& s) {
      return s.rfind(minute, 0) == 0 && s.find(facts) != std::string::npos;
    });
  };
  EXPECT_TRUE(seen("2026-12-04T17:00", "retrying 1 rate_limit"))
      << ::testing::PrintToString(states);
  EXPECT_TRUE(seen("2026-12-04T17:30", "retrying 2 rate_limit"))
      << ::testing::PrintToString(states);
  EXPECT_EQ(states.back().substr(states.back().find(' ') + 1), "ok 0 -");
  ASSERT_FALSE(ledger.empty());
  EXPECT_EQ(ledger.back().substr(ledger.back().find(' ') + 1), "guard=1 to=1 verdict=delivered");
  EXPECT_EQ(ledger.back().rfind("2026-12-04T18:30", 0), 0u);
}

}  // namespace
}  // namespace rehearse::sim
