// Goal: the state store's journal: a torn last record is dropped, reported
// and removed by the next write, a damaged journal is copied aside before it
// is replaced, damage before the last record is found before the next write;
// the journal compacts into a snapshot past its bound, in proportion to the
// snapshot, never over a snapshot damaged since the load, and a crash between
// snapshot and new journal applies nothing twice.
// Method: StateStore over the real PosixDisk in a fresh temporary directory
// per test; torn tails and cut journals are written by the test, and the
// journal's records are counted by decoding the file.
#include "model/state_store.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "model/posix_disk.hpp"
#include "tests/model/state_store_fixtures.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::store_test {
namespace {

// --- Torn journal tail -----------------------------------------------------

TEST(StateStoreJournal, TornLastRecordIsDroppedReportedAndRemovedByTheNextWrite) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  }
  // A crash in the middle of the fifth append: half a record at the end.
  JobState five;
  five.job_id = "a";
  five.retry_count = 5;
  const std::string record = encode_journal_record(5, five);
  ASSERT_TRUE(
      disk.append_file(dir.file("retry_state.journal"), record.substr(0, record.size() / 2)).ok());

  auto store = open_ok(disk, dir.path());
  StoreHealth health = store.health();
  EXPECT_TRUE(health.ok());
  ASSERT_TRUE(health.torn_tail);
  EXPECT_EQ(health.torn_tail->line, 6u);
  EXPECT_EQ(health.torn_tail->length, record.size() / 2);
  EXPECT_EQ(health.torn_tails_dropped, 1u);
  EXPECT_EQ(store.read("a")->retry_count, 4);  // the unacknowledged update is gone

  ASSERT_TRUE(store.update("a", increment).ok());
  EXPECT_FALSE(store.health().torn_tail);
  auto reopened = open_ok(disk, dir.path());
  EXPECT_FALSE(reopened.health().torn_tail);
  EXPECT_EQ(reopened.health().torn_tails_dropped, 0u);
  EXPECT_EQ(reopened.read("a")->retry_count, 5);
  EXPECT_EQ(reopened.sequence(), 5u);
}

// --- Compaction ----------------------------------------------------------------
// The damaged journal is kept, as a copy beside it named in the
// health report, before the next write replaces it.
TEST(StateStoreJournal, ATornTailsJournalIsCopiedBeforeTheNextWriteReplacesIt) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  }
  const std::string journal_path = dir.file("retry_state.journal");
  const std::string intact = **disk.read_file(journal_path);
  ASSERT_TRUE(disk.append_file(journal_path, "3 120 {\"job_id\"").ok());
  const std::string damaged = **disk.read_file(journal_path);

  auto store = open_ok(disk, dir.path());
  const StoreHealth health = store.health();
  ASSERT_TRUE(health.torn_tail);
  const std::string copy = journal_path + ".damaged-0-" + std::to_string(intact.size()) +
                           fmt::format("-{:08x}", crc32c(damaged));
  EXPECT_EQ(health.damaged_copy, copy);
  EXPECT_EQ(**disk.read_file(copy), damaged);
  ASSERT_TRUE(store.update("a", increment).ok());  // compacts: the journal is replaced
  EXPECT_NE(**disk.read_file(journal_path), damaged);
  EXPECT_EQ(**disk.read_file(copy), damaged);  // the evidence stays
  // Opening again does not copy again (the copy is the first one).
  auto reopened = open_ok(disk, dir.path());
  EXPECT_EQ(reopened.read("a")->retry_count, 3);
}

// Two different damages that leave a torn tail at the same offset of the
// same journal generation keep two copies: the second is never taken for
// the first one's (else the second damaged journal would go uncopied and be
// replaced).
TEST(StateStoreJournal, TwoDamagesAtTheSameOffsetKeepTwoCopies) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  }
  const std::string journal_path = dir.file("retry_state.journal");
  const std::string intact = **disk.read_file(journal_path);
  std::vector<std::string> copies;
  for (const char* torn : {"3 120 {\"job_id\"", "3 120 {\"job_id\":\"b"}) {
    ASSERT_TRUE(disk.write_file(journal_path, intact + torn).ok());
    const std::string damaged = **disk.read_file(journal_path);
    auto store = open_ok(disk, dir.path());
    ASSERT_TRUE(store.health().torn_tail);
    copies.push_back(store.health().damaged_copy);
    EXPECT_EQ(**disk.read_file(copies.back()), damaged);
  }
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_NE(copies[0], copies[1]);
}

// A journal cut behind a running store. The store used to
// append at the end of the cut file, turning a truncation into corruption it
// wrote itself; now it checks that the journal still ends where it last
// wrote it, and fails closed, keeping the file, for as long as it does not.
TEST(StateStoreJournal, AJournalCutBehindTheStoreMakesItCorruptAndKeepsTheFile) {
  TempDir dir;
  PosixDisk disk;
  auto store = open_ok(disk, dir.path());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  const std::string journal_path = dir.file("retry_state.journal");
  const std::string whole = **disk.read_file(journal_path);
  for (const std::size_t cut : {whole.size() - 1, whole.size() - 200, std::size_t{60}}) {
    SCOPED_TRACE(cut);
    ASSERT_TRUE(disk.write_file(journal_path, whole.substr(0, cut)).ok());
    const Status s = store.update("a", increment);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::corrupt);
    EXPECT_NE(s.error().message.find("cut behind the store"), std::string::npos)
        << s.error().message;
    EXPECT_FALSE(store.health().ok());
    // Later operations re-check the files and stay corrupt.
    EXPECT_EQ(store.read("a").error().code, ErrorCode::corrupt);
    EXPECT_EQ(store.update("a", increment).error().code, ErrorCode::corrupt);
    EXPECT_EQ(**disk.read_file(journal_path), whole.substr(0, cut));
  }
  // A record changed in place (same size) is caught by the checksum.
  std::string flipped = whole;
  flipped[whole.size() - 3] = flipped[whole.size() - 3] == '0' ? '1' : '0';
  ASSERT_TRUE(disk.write_file(journal_path, flipped).ok());
  EXPECT_EQ(store.update("a", increment).error().code, ErrorCode::corrupt);
  EXPECT_EQ(**disk.read_file(journal_path), flipped);
  // The operator puts the journal back: picked up without a restart.
  ASSERT_TRUE(disk.write_file(journal_path, whole).ok());
  ASSERT_TRUE(store.update("a", increment).ok());
  EXPECT_TRUE(store.health().ok());
  EXPECT_EQ(store.read("a")->retry_count, 4);
}

// Damage before the last record a running store saw (a byte
// flipped in an earlier record, as the swarm's state_corrupted fault does).
// The store used to check only its last record, append after the damage and
// then compact it away; now every write first checks the whole journal
// against the checksum of what it saw, fails closed and keeps the file byte
// for byte until an operator repairs it. A second store that followed the
// first one's writes (the checksum carried through refresh) does the same.
TEST(StateStoreJournal, DamageBeforeTheLastRecordIsFoundBeforeTheNextWrite) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.journal_records_max = 4;  // the next update would also compact
  auto store = open_ok(disk, dir.path(), options);
  auto other = open_ok(disk, dir.path(), options);
  ASSERT_TRUE(store.update("a", increment).ok());
  ASSERT_TRUE(other.update("b", increment).ok());
  ASSERT_TRUE(store.update("a", increment).ok());
  ASSERT_EQ(other.read("a")->retry_count, 2);  // other follows the journal
  const std::string journal_path = dir.file("retry_state.journal");
  const std::string whole = **disk.read_file(journal_path);
  std::string flipped = whole;
  flipped[whole.find('\n') + 20] ^= 0x01;  // inside the first record
  ASSERT_TRUE(disk.write_file(journal_path, flipped).ok());
  const auto before = listing(disk, dir.path());
  for (StateStore* s : {&store, &other}) {
    const Status st = s->update("a", increment);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::corrupt);
    EXPECT_NE(st.error().where.find("retry_state.journal:2"), std::string::npos)
        << st.error().where;
    EXPECT_FALSE(s->health().ok());
    EXPECT_EQ(s->read("a").error().code, ErrorCode::corrupt);
    EXPECT_FALSE(s->compact().ok());
  }
  EXPECT_EQ(**disk.read_file(journal_path), flipped);
  EXPECT_EQ(listing(disk, dir.path()), before);
  // The operator puts the journal back: picked up without a restart.
  ASSERT_TRUE(disk.write_file(journal_path, whole).ok());
  ASSERT_TRUE(store.update("a", increment).ok());
  EXPECT_TRUE(store.health().ok());
  EXPECT_EQ(other.read("a")->retry_count, 3);
  EXPECT_EQ(other.read("b")->retry_count, 1);
}

TEST(StateStoreJournal, CompactsIntoASnapshotPastTheBound) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.journal_records_max = 5;
  auto store = open_ok(disk, dir.path(), options);
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(store.update(i % 2 ? "odd" : "even", increment).ok());
    EXPECT_LT(journal_records(disk, dir), 5u);
  }
  auto snapshot = decode_state(read_bytes(disk, dir.file("retry_state.json")));
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->journal_seq, 10u);  // compacted after updates 5 and 10
  EXPECT_EQ(snapshot->jobs.at("even").retry_count, 5);
  EXPECT_EQ(journal_records(disk, dir), 2u);
  // No temp file is left behind.
  EXPECT_EQ(
      listing(disk, dir.path()),
      (std::vector<std::string>{"retry_state.journal", "retry_state.json", "retry_state.lock"}));
  auto reopened = open_ok(disk, dir.path(), options);
  EXPECT_EQ(*reopened.read_all(), *store.read_all());
  EXPECT_EQ(reopened.read("even")->retry_count, 6);
  EXPECT_EQ(reopened.read("odd")->retry_count, 6);
}

// A fold rewrites every job: with more jobs than journal_records_max the
// journal grows to as many records as there are jobs first, so an update
// costs amortised O(1) however large the fleet.
TEST(StateStoreJournal, FoldsInProportionToTheSnapshot) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.journal_records_max = 5;
  auto store = open_ok(disk, dir.path(), options);
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(store.update(fmt::format("job-{}", i), increment).ok());
  }
  // The fixed bound of 5 folded once, at 5 records (5 jobs); since then the
  // journal waits for as many records as jobs (the old rule folded every 5).
  auto snapshot = decode_state(read_bytes(disk, dir.file("retry_state.json")));
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->journal_seq, 5u);
  EXPECT_EQ(journal_records(disk, dir), 35u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store.update("job-1", increment).ok());
  EXPECT_EQ(decode_state(read_bytes(disk, dir.file("retry_state.json")))->journal_seq, 5u);
  ASSERT_TRUE(store.update("job-1", increment).ok());  // the 40th record: fold
  EXPECT_EQ(decode_state(read_bytes(disk, dir.file("retry_state.json")))->journal_seq, 45u);
  EXPECT_EQ(journal_records(disk, dir), 0u);
  auto reopened = open_ok(disk, dir.path(), options);
  EXPECT_EQ(*reopened.read_all(), *store.read_all());
  EXPECT_EQ(reopened.read("job-1")->retry_count, 6);
}

// The snapshot damaged while a store runs (refresh follows only the journal):
// the compaction that would replace it finds the damage, fails closed and
// keeps the damaged bytes; the update itself was durable and is not lost.
TEST(StateStoreJournal, CompactionNeverOverwritesASnapshotDamagedSinceTheLoad) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.journal_records_max = 5;
  auto store = open_ok(disk, dir.path(), options);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(store.update("job", increment).ok());
  ASSERT_TRUE(store.health().ok());
  const std::string garbage = "{\"not\": \"a state file\"";
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), garbage).ok());
  // Appends continue (the journal is healthy) until the bound asks for a
  // compaction, which must refuse.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(store.update("job", increment).ok());
  EXPECT_EQ(read_bytes(disk, dir.file("retry_state.json")), garbage);
  EXPECT_FALSE(store.health().ok());
  auto read = store.read("job");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code, ErrorCode::corrupt);
  EXPECT_NE(read.error().where.find("retry_state.json"), std::string::npos);
  EXPECT_FALSE(store.compact().ok());
  EXPECT_EQ(read_bytes(disk, dir.file("retry_state.json")), garbage);
}

TEST(StateStoreJournal, CrashBetweenSnapshotAndNewJournalAppliesNothingTwice) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  }
  // Compaction step 1 done (snapshot at seq 3), step 2 not: the old journal
  // (base 0, records 1..3) is still there.
  StateDocument d;
  d.journal_seq = 3;
  JobState a;
  a.job_id = "a";
  a.retry_count = 3;
  d.jobs["a"] = a;
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), encode_state(d)).ok());
  auto store = open_ok(disk, dir.path());
  EXPECT_EQ(store.read("a")->retry_count, 3);
  ASSERT_TRUE(store.update("a", increment).ok());
  auto reopened = open_ok(disk, dir.path());
  EXPECT_EQ(reopened.read("a")->retry_count, 4);
  EXPECT_EQ(reopened.sequence(), 4u);
}

// A snapshot at sequence 7 folded in the journal's records up to 7, so a
// journal that continues an older snapshot and ends at record 1 was cut:
// acknowledged records are gone, and any after them too. It fails closed
// (it used to be compacted over silently).
TEST(StateStoreJournal, SnapshotAheadOfAShortJournalIsCorruptAndKept) {
  TempDir dir;
  PosixDisk disk;
  StateDocument d;
  d.journal_seq = 7;
  JobState a;
  a.job_id = "a";
  a.retry_count = 7;
  d.jobs["a"] = a;
  JobState stale = a;
  stale.retry_count = 1;
  const std::string journal = encode_journal_header(0) + encode_journal_record(1, stale);
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), encode_state(d)).ok());
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.journal"), journal).ok());
  auto store = open_ok(disk, dir.path());
  ASSERT_FALSE(store.health().ok());
  EXPECT_NE(store.health().error->message.find("cut from the journal"), std::string::npos)
      << store.health().error->message;
  EXPECT_EQ(store.update("a", increment).error().code, ErrorCode::corrupt);
  EXPECT_EQ(**disk.read_file(dir.file("retry_state.journal")), journal);
  EXPECT_EQ(**disk.read_file(dir.file("retry_state.json")), encode_state(d));
}

// A journal that starts at the snapshot's sequence (a compaction's new
// journal) is not short: it may hold no record yet.
TEST(StateStoreJournal, JournalStartingAtTheSnapshotsSequenceLoads) {
  TempDir dir;
  PosixDisk disk;
  StateDocument d;
  d.journal_seq = 7;
  JobState a;
  a.job_id = "a";
  a.retry_count = 7;
  d.jobs["a"] = a;
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), encode_state(d)).ok());
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.journal"), encode_journal_header(7)).ok());
  auto store = open_ok(disk, dir.path());
  ASSERT_TRUE(store.health().ok());
  ASSERT_TRUE(store.update("a", increment).ok());
  auto reopened = open_ok(disk, dir.path());
  EXPECT_EQ(reopened.read("a")->retry_count, 8);
  EXPECT_EQ(reopened.sequence(), 8u);
}

TEST(StateStoreJournal, JournalOnlyStoreWithoutSnapshotLoads) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    ASSERT_TRUE(store.update("a", increment).ok());
  }
  EXPECT_FALSE(disk.read_file(dir.file("retry_state.json"))->has_value());
  auto store = open_ok(disk, dir.path());
  EXPECT_EQ(store.read("a")->retry_count, 1);
}

}  // namespace
}  // namespace rehearse::store_test
