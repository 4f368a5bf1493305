// Goal: the delivery ledger's snapshot + journal format (model/delivery_ledger.hpp)
// keeps its guarantees when the machine or the process dies at ANY disk
// operation: every change acknowledged before the crash is there after a
// reopen, the one in flight is wholly there or wholly absent, the ledger is
// never corrupt, and it goes on working; torn journal appends lose nothing
// acknowledged; a ledger file written before the journal existed (a snapshot
// alone) still reads and takes new changes; an update costs the change, not
// the job's history (bytes written per update stay flat as the history grows).
// Method: a fixed workload of ledger changes over three jobs (outbox,
// deliveries, guard, marker per slot, small bounds so that the journal is
// folded and completed slots pruned several times) runs on SimDisk. The model
// of the first m changes is the same workload run on a disk that never
// fails. Crash-anywhere: a baseline counts the disk operations N; for every k
// in 0..N a fresh disk fail-stops the process at operation k, the disk
// crashes (power loss, and separately the process alone), a new ledger object
// reads every job, which must equal the model of the acknowledged prefix (or
// that plus the change in flight); then the rest of the workload runs and,
// after one more power loss, the end state must be exact.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim {
namespace {

const std::string kDir = "/srv/ledger";
constexpr TimeMs kStart = 1'796'000'000'000;
constexpr DeliveryLedgerOptions kBounds{
    .completed_slots_kept = 3, .open_slots_max = 16, .journal_bytes_min = 0};
const std::vector<std::string> kJobs = {"alpha", "beta/2", "gamma"};

// Change i of the workload: slot s of job j goes through outbox, two
// deliveries, guard and marker (every fifth slot is skipped instead).
struct Change {
  std::string job;
  TimeMs slot = 0;
  int step = 0;
};
std::vector<Change> workload() {
  std::vector<Change> out;
  for (int s = 0; s < 8; ++s) {
    for (std::size_t j = 0; j < kJobs.size(); ++j) {
      const TimeMs slot = kStart + s * kHourMs;
      const bool skipped = (s + static_cast<int>(j)) % 5 == 0;
      for (int step = 0; step < 5; ++step) {
        if (skipped && step < 3) continue;
        out.push_back({kJobs[j], slot, skipped ? step + 10 : step});
      }
    }
  }
  return out;
}
const std::vector<Change> kWork = workload();

Status apply(DeliveryLedger& ledger, const Change& c) {
  const TimeMs at = c.slot + c.step;
  switch (c.step) {
    case 0:
      return ledger.write_outbox(c.job, c.slot, nlohmann::json::array({"summary", c.job}), at);
    case 1: return ledger.record_delivery(c.job, c.slot, "team-chat", at);
    case 2: return ledger.record_delivery(c.job, c.slot, "ops-mail", at);
    case 3: return ledger.consume_guard(c.job, c.slot, at);
    case 4: return ledger.mark_complete(c.job, c.slot, SlotVerdict::delivered, at);
    case 13: return ledger.consume_guard(c.job, c.slot, at);
    default: return ledger.mark_complete(c.job, c.slot, SlotVerdict::skipped, at);
  }
}

std::unique_ptr<SimDisk> fresh_disk() {
  auto disk = std::make_unique<SimDisk>(nullptr, Rng(7));
  REHEARSE_ASSERT(disk->make_dirs("/srv").ok());
  return disk;
}

using Records = std::map<std::string, std::vector<DeliverySlot>>;

Result<Records> read_all(DeliveryLedger& ledger) {
  Records all;
  for (const std::string& job : kJobs) {
    auto records = ledger.read_job(job);
    if (!records.ok()) return std::move(records).error();
    all[job] = std::move(records).value();
  }
  return all;
}

// The records after the first m changes, on a disk that never fails.
Records expected_after(std::size_t m) {
  static std::map<std::size_t, Records> memo;
  if (const auto it = memo.find(m); it != memo.end()) return it->second;
  const auto disk = fresh_disk();
  DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, kBounds);
  for (std::size_t i = 0; i < m; ++i) REHEARSE_ASSERT(apply(ledger, kWork[i]).ok());
  return memo[m] = *read_all(ledger);
}

// Opens the ledger and applies changes from `first` until one fails (the
// process died) or the workload ends; returns how many were acknowledged.
std::size_t run_until_death(SimDisk& disk, std::size_t first = 0) {
  auto ledger = DeliveryLedger::open(disk, kDir, kBounds);
  if (!ledger.ok()) return first;
  std::size_t acked = first;
  for (std::size_t i = first; i < kWork.size(); ++i) {
    if (!apply(*ledger, kWork[i]).ok()) break;
    acked = i + 1;
  }
  return acked;
}

// After a crash: the acknowledged prefix (or it plus the change in flight),
// then the rest of the workload, one more power loss, and the exact end.
Result<std::size_t> recover_and_finish(SimDisk& disk, std::size_t acked) {
  auto ledger = DeliveryLedger::open(disk, kDir, kBounds);
  if (!ledger.ok()) return make_error(ErrorCode::internal, "reopen: " + ledger.error().describe());
  auto all = read_all(*ledger);
  if (!all.ok()) return make_error(ErrorCode::internal, "read: " + all.error().describe());
  std::size_t held = 0;
  if (*all == expected_after(acked)) {
    held = acked;
  } else if (acked < kWork.size() && *all == expected_after(acked + 1)) {
    held = acked + 1;
  } else {
    return make_error(ErrorCode::internal,
                      fmt::format("neither the {} acknowledged changes nor those plus the one in "
                                  "flight",
                                  acked));
  }
  for (std::size_t i = held; i < kWork.size(); ++i) {
    if (auto s = apply(*ledger, kWork[i]); !s.ok()) {
      return make_error(ErrorCode::internal,
                        fmt::format("change {} after recovery: {}", i, s.error().describe()));
    }
  }
  disk.crash();
  auto final_ledger = DeliveryLedger::open(disk, kDir, kBounds);
  if (!final_ledger.ok()) return make_error(ErrorCode::internal, "final reopen failed");
  auto final_records = read_all(*final_ledger);
  if (!final_records.ok() || *final_records != expected_after(kWork.size())) {
    return make_error(ErrorCode::internal, "the finished workload is not exact after a crash");
  }
  return held;
}

TEST(LedgerCrash, BaselineFoldsAndPrunesAndLeavesNoTempFile) {
  const auto disk = fresh_disk();
  ASSERT_EQ(run_until_death(*disk), kWork.size());
  disk->crash();
  DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, kBounds);
  const Records all = *read_all(ledger);
  EXPECT_EQ(all, expected_after(kWork.size()));
  for (const auto& [job, records] : all) EXPECT_EQ(records.size(), kBounds.completed_slots_kept);
  // Folds rewrote snapshots and started journals: more renames than jobs.
  EXPECT_GT(disk->counters().renames, 3u * kJobs.size());
  EXPECT_GT(disk->counters().appends, kWork.size() / 3);
  EXPECT_EQ(disk->durable_listing(kDir),
            (std::vector<std::string>{"alpha.ledger.journal", "alpha.ledger.json",
                                      "beta%2F2.ledger.journal", "beta%2F2.ledger.json",
                                      "delivery_ledger.lock", "gamma.ledger.journal",
                                      "gamma.ledger.json"}));
}

TEST(LedgerCrash, FailStopAtEveryDiskOperationLosesNothingAcknowledged) {
  std::uint64_t baseline_ops = 0;
  {
    const auto disk = fresh_disk();
    ASSERT_EQ(run_until_death(*disk), kWork.size());
    baseline_ops = disk->operations();
  }
  ASSERT_GT(baseline_ops, 300u);
  std::map<std::string, int> outcomes;
  std::uint64_t points = 0;
  for (const bool power_loss : {true, false}) {
    for (std::uint64_t k = 0; k <= baseline_ops; ++k) {
      const auto disk = fresh_disk();
      disk->fail_stop_after(k);
      const std::size_t acked = run_until_death(*disk);
      disk->cancel_fail_stop();
      if (power_loss) {
        disk->crash();
      } else {
        disk->process_crashed(0);
      }
      auto held = recover_and_finish(*disk, acked);
      ASSERT_TRUE(held.ok()) << (power_loss ? "power loss" : "process crash")
                             << " after disk operation " << k << " (acked " << acked
                             << "): " << held.error().describe();
      ++outcomes[fmt::format("{}: in-flight change {}", power_loss ? "power loss" : "process",
                             *held > acked ? "present" : "absent")];
      ++points;
    }
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "crash points covered: " << points << std::endl;
  RecordProperty("crash_points", static_cast<int>(points));
  EXPECT_GT(outcomes["power loss: in-flight change absent"], 0);
  EXPECT_GT(outcomes["process: in-flight change present"], 0);
}

TEST(LedgerCrash, TornJournalAppendsLoseNothingAcknowledged) {
  for (std::size_t before = 0; before < kWork.size(); ++before) {
    for (const std::uint64_t prefix : {std::uint64_t{0}, std::uint64_t{9}, std::uint64_t{40}}) {
      const auto torn_disk = fresh_disk();
      std::size_t acked = 0;
      {
        DeliveryLedger ledger = *DeliveryLedger::open(*torn_disk, kDir, kBounds);
        for (std::size_t i = 0; i < kWork.size(); ++i) {
          if (i == before) {
            torn_disk->arm_torn_write(kDir + "/" + DeliveryLedger::encode_job_id(kWork[i].job) +
                                          ".ledger.journal",
                                      prefix);
          }
          if (!apply(ledger, kWork[i]).ok()) break;
          acked = i + 1;
          torn_disk->disarm_torn_write();
        }
      }
      torn_disk->disarm_torn_write();
      torn_disk->crash();
      auto held = recover_and_finish(*torn_disk, acked);
      ASSERT_TRUE(held.ok()) << "torn at change " << before << " (prefix " << prefix
                             << "): " << held.error().describe();
    }
  }
}

// A ledger file from before the journal (one snapshot per job, rewritten on
// every change) reads as it is, and the next change goes to a new journal.
TEST(LedgerFormat, ASnapshotWithoutJournalStillReadsAndTakesChanges) {
  const auto disk = fresh_disk();
  DeliverySlot done{kStart,     std::nullopt, std::nullopt,          {"team-chat"},
                    kStart + 1, kStart + 2,   SlotVerdict::delivered};
  ASSERT_TRUE(disk->put_durable(kDir + "/alpha.ledger.json", encode_ledger("alpha", {done})).ok());
  DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, kBounds);
  EXPECT_EQ(*ledger.read_job("alpha"), std::vector<DeliverySlot>{done});
  ASSERT_TRUE(ledger.consume_guard("alpha", kStart + kHourMs, kStart + kHourMs).ok());
  EXPECT_TRUE(disk->live_content(kDir + "/alpha.ledger.journal").has_value());
  DeliveryLedger again = *DeliveryLedger::open(*disk, kDir, kBounds);
  const auto records = *again.read_job("alpha");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], done);
  EXPECT_EQ(records[1].guard_at, kStart + kHourMs);
}

// A journal whose snapshot is gone fails closed: its records alone could
// miss a guard the snapshot held (a second delivery).
TEST(LedgerFormat, AJournalWithoutItsSnapshotIsCorrupt) {
  const auto disk = fresh_disk();
  {
    DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, kBounds);
    ASSERT_TRUE(ledger.consume_guard("alpha", kStart, kStart).ok());
    ASSERT_TRUE(ledger.consume_guard("alpha", kStart + kHourMs, kStart).ok());
  }
  ASSERT_TRUE(*disk->remove_file(kDir + "/alpha.ledger.json"));
  DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, kBounds);
  const auto read = ledger.read_job("alpha");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::corrupt);
  EXPECT_NE(read.error().where.find("alpha.ledger.journal"), std::string::npos);
}

// The cost of an update is the change: once a job has a long history, the
// bytes written per change stay flat (appends, and folds whose cost is
// spread over the appends since the last one), where a whole-file rewrite
// grows with the history.
TEST(LedgerFormat, BytesWrittenPerChangeDoNotGrowWithHistory) {
  const auto disk = fresh_disk();
  DeliveryLedger ledger = *DeliveryLedger::open(*disk, kDir, {.completed_slots_kept = 256});
  auto run_slots = [&](int from, int to) {
    const std::uint64_t before = disk->counters().bytes_written;
    for (int s = from; s < to; ++s) {
      const TimeMs slot = kStart + s * kHourMs;
      EXPECT_TRUE(ledger.write_outbox("alpha", slot, nlohmann::json::array({"x"}), slot).ok());
      EXPECT_TRUE(ledger.record_delivery("alpha", slot, "team-chat", slot).ok());
      EXPECT_TRUE(ledger.consume_guard("alpha", slot, slot).ok());
      EXPECT_TRUE(ledger.mark_complete("alpha", slot, SlotVerdict::delivered, slot).ok());
    }
    return (disk->counters().bytes_written - before) / static_cast<std::uint64_t>(to - from);
  };
  run_slots(0, 250);  // a history of 250 completed slots
  const std::uint64_t late = run_slots(250, 500);
  // A whole-file rewrite would write ~4 x 250 records (~150 KB) per slot.
  EXPECT_LT(late, 4096u) << late << " bytes written per slot";
}

}  // namespace
}  // namespace rehearse::sim
