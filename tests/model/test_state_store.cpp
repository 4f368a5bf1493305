// Goal: the state store keeps counters across restarts, fails closed on a
// corrupt file (reports it, keeps it byte for byte, refuses every write, never
// shows an empty state), recovers a torn last journal record, compacts its
// journal, follows other store objects' writes, and keeps an update for one
// job of a 100k fleet an append rather than a snapshot rewrite.
// Method: StateStore over the real PosixDisk in a fresh temporary directory
// per test; damaged files are written by the test; a counting Disk wrapper
// (forwarding to PosixDisk) measures the disk writes of the fleet test;
// RapidCheck properties damage snapshots and journals at random.
#include "model/state_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <map>

#include <fmt/format.h>

#include "model/posix_disk.hpp"
#include "tests/model/job_state_gen.hpp"
#include "tests/support/property.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse {
namespace {

using testsupport::TempDir;

// Counts every call and the bytes written per path; forwards to PosixDisk.
class CountingDisk final : public Disk {
 public:
  std::map<std::string, int> calls;
  std::map<std::string, std::uint64_t> bytes_written;  // by path
  std::uint64_t bytes_read = 0;

  void reset() {
    calls.clear();
    bytes_written.clear();
    bytes_read = 0;
  }
  std::uint64_t total_written() const {
    std::uint64_t total = 0;
    for (const auto& [path, n] : bytes_written) total += n;
    return total;
  }

  Result<std::optional<std::string>> read_file(const std::string& path) override {
    ++calls["read_file"];
    auto r = real_.read_file(path);
    if (r.ok() && r->has_value()) bytes_read += (*r)->size();
    return r;
  }
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length_max) override {
    ++calls["read_range"];
    auto r = real_.read_range(path, offset, length_max);
    if (r.ok() && r->has_value()) bytes_read += (*r)->size();
    return r;
  }
  Status write_file(const std::string& path, std::string_view bytes) override {
    ++calls["write_file"];
    bytes_written[path] += bytes.size();
    return real_.write_file(path, bytes);
  }
  Status append_file(const std::string& path, std::string_view bytes) override {
    ++calls["append_file"];
    bytes_written[path] += bytes.size();
    return real_.append_file(path, bytes);
  }
  Status fsync_file(const std::string& path) override {
    ++calls["fsync_file"];
    return real_.fsync_file(path);
  }
  Status rename_file(const std::string& from, const std::string& to) override {
    ++calls["rename_file"];
    return real_.rename_file(from, to);
  }
  Status fsync_dir(const std::string& dir) override {
    ++calls["fsync_dir"];
    return real_.fsync_dir(dir);
  }
  Result<bool> remove_file(const std::string& path) override {
    ++calls["remove_file"];
    return real_.remove_file(path);
  }
  Status create_dir(const std::string& dir) override {
    ++calls["create_dir"];
    return real_.create_dir(dir);
  }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override {
    ++calls["list_dir"];
    return real_.list_dir(dir);
  }
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override {
    ++calls["lock_exclusive"];
    return real_.lock_exclusive(path);
  }

 private:
  PosixDisk real_;
};

std::string read_bytes(PosixDisk& disk, const std::string& path) {
  auto r = disk.read_file(path);
  REHEARSE_ASSERT(r.ok());
  REHEARSE_ASSERT(r->has_value());
  return **r;
}

std::vector<std::string> listing(PosixDisk& disk, const std::string& dir) {
  auto r = disk.list_dir(dir);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

StateStore open_ok(Disk& disk, const std::string& dir, StoreOptions options = {}) {
  auto store = StateStore::open(disk, dir, options);
  REHEARSE_ASSERT(store.ok());
  return std::move(store).value();
}

void increment(JobState& s) { ++s.retry_count; }

// --- PosixDisk: the port's contract on the real file system ----------------

TEST(PosixDisk, MissingIsAValueAndFailuresAreIoErrors) {
  TempDir dir;
  PosixDisk disk;
  auto missing = disk.read_file(dir.file("nope"));
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  EXPECT_FALSE(disk.read_range(dir.file("nope"), 0, 10)->has_value());
  EXPECT_FALSE(*disk.remove_file(dir.file("nope")));
  auto is_dir = disk.read_file(dir.path());  // a directory is not a file
  ASSERT_FALSE(is_dir.ok());
  EXPECT_EQ(is_dir.error().code, ErrorCode::io_error);
  EXPECT_EQ(is_dir.error().where, dir.path());
  auto no_parent = disk.write_file(dir.file("no/such/dir"), "x");
  ASSERT_FALSE(no_parent.ok());
  EXPECT_NE(no_parent.error().message.find("No such file or directory"), std::string::npos);
  ASSERT_TRUE(disk.write_file(dir.file("plain"), "x").ok());
  auto store_under_file = StateStore::open(disk, dir.file("plain"));
  ASSERT_FALSE(store_under_file.ok());
  EXPECT_EQ(store_under_file.error().code, ErrorCode::io_error);
}

// A stamp vouches for a file only once its change time is safely in the
// past: a file changed just now, in the kernel's coarse clock tick, could
// change again without its stamp moving, so the caller must read it.
TEST(PosixDisk, NoStampForAMissingFileOrOneChangedJustNow) {
  TempDir dir;
  PosixDisk disk;
  EXPECT_EQ(disk.stamp(dir.file("nope")), std::nullopt);
  ASSERT_TRUE(disk.write_file(dir.file("f"), "x").ok());
  EXPECT_EQ(disk.stamp(dir.file("f")), std::nullopt);
  ASSERT_TRUE(disk.append_file(dir.file("f"), "y").ok());
  EXPECT_EQ(disk.stamp(dir.file("f")), std::nullopt);
}

TEST(PosixDisk, WritesAppendsRangesRenamesAndListings) {
  TempDir dir;
  PosixDisk disk;
  const std::string a = dir.file("a");
  ASSERT_TRUE(disk.write_file(a, "hello").ok());
  ASSERT_TRUE(disk.append_file(a, " world").ok());
  ASSERT_TRUE(disk.fsync_file(a).ok());
  EXPECT_EQ(read_bytes(disk, a), "hello world");
  EXPECT_EQ(**disk.read_range(a, 6, 3), "wor");
  EXPECT_EQ(**disk.read_range(a, 6, kReadToEnd), "world");
  EXPECT_EQ(**disk.read_range(a, 100, 3), "");
  ASSERT_TRUE(disk.write_file(a, "new").ok());  // truncates
  EXPECT_EQ(read_bytes(disk, a), "new");
  ASSERT_TRUE(disk.append_file(dir.file("c"), "created").ok());  // append creates
  ASSERT_TRUE(disk.write_file(dir.file("b.tmp"), "replacement").ok());
  ASSERT_TRUE(disk.rename_file(dir.file("b.tmp"), a).ok());
  ASSERT_TRUE(disk.fsync_dir(dir.path()).ok());
  EXPECT_EQ(read_bytes(disk, a), "replacement");
  ASSERT_TRUE(disk.create_dir(dir.file("sub")).ok());
  ASSERT_TRUE(disk.create_dir(dir.file("sub")).ok());  // existing is fine
  EXPECT_FALSE(disk.create_dir(dir.file("c")).ok());   // a file is not a directory
  EXPECT_EQ(listing(disk, dir.path()), (std::vector<std::string>{"a", "c", "sub"}));
  EXPECT_TRUE(*disk.remove_file(dir.file("c")));
  EXPECT_EQ(listing(disk, dir.path()), (std::vector<std::string>{"a", "sub"}));
}

TEST(PosixDisk, LockIsExclusiveAcrossDescriptorsAndReleasedOnDestruction) {
  TempDir dir;
  PosixDisk disk;
  const std::string lock_path = dir.file("x.lock");
  auto held = disk.lock_exclusive(lock_path);
  ASSERT_TRUE(held.ok());
  // Another descriptor in this process cannot take it while it is held
  // (probed without blocking, straight through flock).
  const auto try_lock = [&] {
    const int fd = ::open(lock_path.c_str(), O_RDWR);
    REHEARSE_ASSERT(fd >= 0);
    const bool got = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    ::close(fd);
    return got;
  };
  EXPECT_FALSE(try_lock());
  held->reset();
  EXPECT_TRUE(try_lock());
  auto again = disk.lock_exclusive(lock_path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(read_bytes(disk, lock_path), "");  // the lock file holds no data
}

// --- Fresh start, restart ----------------------------------------------------

TEST(StateStore, MissingFilesAreAFreshStart) {
  TempDir dir;
  PosixDisk disk;
  auto store = StateStore::open(disk, dir.path() + "/state");  // created on open
  ASSERT_TRUE(store.ok()) << store.error().describe();
  EXPECT_TRUE(store->health().ok());
  auto job = store->read("weekly-summary");
  ASSERT_TRUE(job.ok());
  JobState fresh;
  fresh.job_id = "weekly-summary";
  EXPECT_EQ(*job, fresh);
  auto all = store->read_all();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
  // Reading writes nothing but the lock file.
  EXPECT_EQ(listing(disk, dir.path() + "/state"), std::vector<std::string>{"retry_state.lock"});
}

TEST(StateStore, CountersSurviveARestart) {
  TempDir dir;
  PosixDisk disk;
  {
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.update("a", increment).ok());
    ASSERT_TRUE(store
                    .update("b",
                            [](JobState& s) {
                              s.retry_status = RetryStatus::retrying;
                              s.failure_class = FailureClass::rate_limit;
                              s.retry_limit = 2;
                              s.next_retry_at = 1000;
                            })
                    .ok());
  }  // the process "restarts": nothing survives but the files
  auto store = open_ok(disk, dir.path());
  EXPECT_EQ(store.read("a")->retry_count, 3);
  auto b = store.read("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->retry_status, RetryStatus::retrying);
  EXPECT_EQ(b->failure_class, FailureClass::rate_limit);
  EXPECT_EQ(b->next_retry_at, 1000);
  EXPECT_EQ(store.sequence(), 4u);
}

TEST(StateStore, UnchangedUpdateWritesNothing) {
  TempDir dir;
  CountingDisk disk;
  auto store = open_ok(disk, dir.path());
  ASSERT_TRUE(store.update("a", increment).ok());
  disk.reset();
  ASSERT_TRUE(store.update("a", [](JobState&) {}).ok());
  ASSERT_TRUE(store.update("never-written", [](JobState&) {}).ok());
  EXPECT_EQ(disk.total_written(), 0u);
  EXPECT_EQ(store.sequence(), 1u);
}

TEST(StateStore, InvalidUpdatesAreRefusedAndNothingIsWritten) {
  TempDir dir;
  CountingDisk disk;
  auto store = open_ok(disk, dir.path());
  ASSERT_TRUE(store.update("a", increment).ok());
  disk.reset();
  auto negative = store.update("a", [](JobState& s) { s.retry_count = -1; });
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(negative.error().where, "/retry_count");
  auto renamed = store.update("a", [](JobState& s) { s.job_id = "b"; });
  ASSERT_FALSE(renamed.ok());
  EXPECT_EQ(renamed.error().code, ErrorCode::invalid_argument);
  EXPECT_FALSE(store.update("", increment).ok());
  EXPECT_EQ(disk.total_written(), 0u);
  EXPECT_EQ(store.read("a")->retry_count, 1);
}

// --- Corruption fails closed -----------------------------------------------

void expect_corrupt_and_kept(const std::string& dir, const char* name, const std::string& bytes,
                             const char* where_part) {
  PosixDisk disk;
  ASSERT_TRUE(disk.write_file(dir + "/" + name, bytes).ok());
  const auto before = listing(disk, dir);
  auto store = StateStore::open(disk, dir);
  ASSERT_TRUE(store.ok()) << "a corrupt store still opens, to report itself";
  const StoreHealth health = store->health();
  EXPECT_EQ(health.kind, HealthKind::corrupt);
  ASSERT_TRUE(health.error);
  EXPECT_EQ(health.error->code, ErrorCode::corrupt);
  EXPECT_NE(health.error->where.find(where_part), std::string::npos) << health.error->where;
  // Reads are errors, never an empty state.
  auto job = store->read("a");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, ErrorCode::corrupt);
  auto all = store->read_all();
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.error().code, ErrorCode::corrupt);
  // Every write is refused, however often it is tried.
  for (int i = 0; i < 100; ++i) {
    auto s = store->update("a", increment);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::corrupt);
  }
  EXPECT_FALSE(store->compact().ok());
  // The bad file is kept byte for byte and nothing was added beside it
  // (the lock file holds no data).
  EXPECT_EQ(read_bytes(disk, dir + "/" + name), bytes);
  auto after = listing(disk, dir);
  std::erase(after, std::string("retry_state.lock"));
  auto expected = before;
  std::erase(expected, std::string("retry_state.lock"));
  EXPECT_EQ(after, expected);
  // A restart does not heal it either.
  auto again = StateStore::open(disk, dir);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->health().kind, HealthKind::corrupt);
  EXPECT_EQ(read_bytes(disk, dir + "/" + name), bytes);
}

TEST(StateStoreCorrupt, EmptySnapshot) {
  TempDir dir;
  expect_corrupt_and_kept(dir.path(), "retry_state.json", "", "retry_state.json:1:1");
}

TEST(StateStoreCorrupt, UnparsableSnapshot) {
  TempDir dir;
  expect_corrupt_and_kept(dir.path(), "retry_state.json",
                          "{\"format\":1,\"jobs\":{\"a\":", "retry_state.json:1:");
}

TEST(StateStoreCorrupt, SchemaInvalidSnapshot) {
  TempDir dir;
  expect_corrupt_and_kept(
      dir.path(), "retry_state.json",
      "{\"format\":1,\"journal_seq\":0,\"jobs\":{},\"reset_everything\":true}\n",
      "retry_state.json#/reset_everything");
}

TEST(StateStoreCorrupt, BadJournalRecordBeforeTheTail) {
  TempDir dir;
  {
    PosixDisk disk;
    auto store = open_ok(disk, dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store.update("a", increment).ok());
  }
  PosixDisk disk;
  std::string journal = read_bytes(disk, dir.file("retry_state.journal"));
  const std::size_t second = journal.find('\n', journal.find('\n') + 1) + 1;  // record 2
  journal[second + 40] ^= 0x20;
  expect_corrupt_and_kept(dir.path(), "retry_state.journal", journal, "retry_state.journal:3");
}

TEST(StateStoreCorrupt, EmptyJournal) {
  TempDir dir;
  expect_corrupt_and_kept(dir.path(), "retry_state.journal", "", "retry_state.journal:1");
}

TEST(StateStoreCorrupt, JournalWithoutItsSnapshot) {
  TempDir dir;
  expect_corrupt_and_kept(dir.path(), "retry_state.journal", encode_journal_header(12),
                          "retry_state.journal:1");
}

TEST(StateStoreCorrupt, JournalNewerThanItsSnapshot) {
  TempDir dir;
  PosixDisk disk;
  StateDocument d;
  d.journal_seq = 3;
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), encode_state(d)).ok());
  expect_corrupt_and_kept(dir.path(), "retry_state.journal", encode_journal_header(5),
                          "retry_state.journal:1");
}

TEST(StateStoreCorrupt, OperatorRepairIsPickedUpWithoutRestart) {
  TempDir dir;
  PosixDisk disk;
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), "garbage").ok());
  auto store = open_ok(disk, dir.path());
  ASSERT_EQ(store.health().kind, HealthKind::corrupt);
  ASSERT_FALSE(store.update("a", increment).ok());
  // The operator restores a good snapshot.
  StateDocument d;
  d.journal_seq = 9;
  JobState a;
  a.job_id = "a";
  a.retry_count = 5;
  d.jobs["a"] = a;
  ASSERT_TRUE(disk.write_file(dir.file("retry_state.json"), encode_state(d)).ok());
  ASSERT_TRUE(store.update("a", increment).ok());
  EXPECT_TRUE(store.health().ok());
  EXPECT_EQ(store.read("a")->retry_count, 6);
  EXPECT_EQ(store.sequence(), 10u);
}

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

std::size_t journal_records(PosixDisk& disk, const TempDir& dir) {
  auto scan = decode_journal(read_bytes(disk, dir.file("retry_state.journal")));
  REHEARSE_ASSERT(scan.ok());
  return scan->records.size();
}

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

// --- Several store objects on one directory -------------------------------

TEST(StateStoreShared, StoresFollowEachOthersWritesAndCompactions) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.journal_records_max = 3;
  auto first = open_ok(disk, dir.path(), options);
  auto second = open_ok(disk, dir.path(), options);
  int expected = 0;
  for (int round = 0; round < 10; ++round) {
    // Alternate writers, so each one continues from the other's journal,
    // snapshot or freshly started journal (same base, or a new one).
    StateStore& writer = round % 2 ? first : second;
    StateStore& reader = round % 2 ? second : first;
    for (int i = 0; i < round % 4 + 1; ++i) {
      ASSERT_TRUE(writer.update("shared", increment).ok());
      ++expected;
    }
    if (round == 6) {
      ASSERT_TRUE(writer.compact().ok());
    }
    auto seen = reader.read("shared");
    ASSERT_TRUE(seen.ok());
    EXPECT_EQ(seen->retry_count, expected) << "round " << round;
    EXPECT_EQ(reader.sequence(), writer.sequence());
  }
}

// --- A 100k-job fleet: an update is an append, not a rewrite -----------------

TEST(StateStoreFleet, UpdatesOfOneJobInA100kFleetAreAppends) {
  TempDir dir;
  constexpr int kJobs = 100'000;
  constexpr int kInserts = 1'000;
  constexpr int kUpdates = 300;
  const auto id_of = [](int i) { return fmt::format("job-{:06}", i); };
  const std::string snapshot_path = dir.file("retry_state.json");
  {
    // The fleet's snapshot is built with the codec directly: 100k single
    // inserts would spend minutes of an unoptimised build in JSON, and the
    // inserts below go through the store anyway.
    StateDocument fleet;
    fleet.journal_seq = 0;
    for (int i = 0; i < kJobs; ++i) {
      JobState s;
      s.job_id = id_of(i);
      s.retry_limit = 2;
      s.next_run_at = 1'700'000'000'000;
      fleet.jobs.emplace(s.job_id, s);
    }
    PosixDisk posix;
    ASSERT_TRUE(posix.write_file(snapshot_path, encode_state(fleet)).ok());
  }
  CountingDisk disk;
  // The default, fully durable store: each insert or update of one job is one
  // journal append plus its fsync, whatever the fleet's size.
  auto store = open_ok(disk, dir.path());
  disk.reset();
  for (int i = 0; i < kInserts; ++i) {
    ASSERT_TRUE(store.update(id_of(kJobs + i), [](JobState& s) { s.retry_limit = 3; }).ok());
  }
  for (int i = 0; i < kUpdates; ++i) {
    ASSERT_TRUE(store.update(id_of((i * 7919) % kJobs), increment).ok());
  }
  constexpr int kWrites = kInserts + kUpdates;
  EXPECT_EQ(disk.calls["append_file"], kWrites);
  EXPECT_EQ(disk.calls["fsync_file"], kWrites + 1);  // + the new journal's header (temp file)
  EXPECT_EQ(disk.calls["write_file"], 1);            // that header, and no snapshot rewrite
  EXPECT_EQ(disk.calls["read_file"], 0);             // nor a re-read of the snapshot
  EXPECT_EQ(disk.bytes_written.count(snapshot_path), 0u);
  EXPECT_EQ(disk.bytes_written.count(snapshot_path + ".tmp"), 0u);
  EXPECT_LT(disk.total_written() / kWrites, 1024u) << "bytes written per update";

  // Every insert and update is in the journal, in order, for the next
  // start (compaction and reopening are shown at small scale above; at 100k
  // they only cost time in an unoptimised build).
  PosixDisk posix;
  const std::string journal_bytes = read_bytes(posix, dir.file("retry_state.journal"));
  // An update reads the journal it appends to (checked whole before every
  // write: bounded by the fold), never the snapshot.
  EXPECT_LT(disk.bytes_read / kWrites, journal_bytes.size() + 4096) << "bytes read per update";
  auto journal = decode_journal(journal_bytes);
  ASSERT_TRUE(journal.ok()) << journal.error().describe();
  ASSERT_EQ(journal->records.size(), static_cast<std::size_t>(kWrites));
  EXPECT_EQ(journal->records.front().state.job_id, id_of(kJobs));
  EXPECT_EQ(journal->records.back().seq, static_cast<std::uint64_t>(kWrites));
  EXPECT_EQ(store.read(id_of(0))->retry_count, 1);
  EXPECT_EQ(store.read_all()->size(), static_cast<std::size_t>(kJobs + kInserts));
}

// --- Properties: damage never shows an empty or invented state ------------

REHEARSE_PROP(StateStoreProps, DamagedSnapshotFailsClosedOrKeepsEveryJob, ()) {
  const auto states =
      *rc::gen::container<std::vector<JobState>>(static_cast<std::size_t>(*rc::gen::inRange(1, 8)),
                                                 testing::gen_job_state(false));
  TempDir dir;
  PosixDisk disk;
  StateDocument d;
  for (const auto& s : states) d.jobs[s.job_id] = s;
  std::string bytes = encode_state(d);
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  if (*rc::gen::arbitrary<bool>()) {
    bytes.resize(at);
  } else {
    bytes[at] = static_cast<char>(bytes[at] ^ *rc::gen::inRange(1, 256));
  }
  RC_ASSERT(disk.write_file(dir.file("retry_state.json"), bytes).ok());
  auto store = StateStore::open(disk, dir.path(), StoreOptions{});
  RC_ASSERT(store.ok());
  auto all = store->read_all();
  if (store->health().ok()) {
    RC_ASSERT(all.ok());
    RC_ASSERT(all->size() == d.jobs.size());
  } else {
    RC_ASSERT(!all.ok());
    RC_ASSERT(all.error().code == ErrorCode::corrupt);
    RC_ASSERT(!store->update("x", increment).ok());
    RC_ASSERT(read_bytes(disk, dir.file("retry_state.json")) == bytes);
  }
}

REHEARSE_PROP(StateStoreProps, DamagedJournalShowsAnAcknowledgedPrefixOrFailsClosed, ()) {
  TempDir dir;
  PosixDisk disk;
  StoreOptions options;
  options.durability = Durability::no_sync;  // the property is about content, not fsync
  const auto updates = *rc::gen::inRange(1, 8);
  std::vector<std::map<std::string, JobState>> history;  // state after each update
  {
    auto store = open_ok(disk, dir.path(), options);
    history.push_back({});
    for (int i = 0; i < updates; ++i) {
      const std::string id = *rc::gen::element<std::string>("a", "b", "c");
      RC_ASSERT(store.update(id, [](JobState& s) { ++s.retry_count; }).ok());
      history.push_back(*store.read_all());
    }
  }
  const std::string path = dir.file("retry_state.journal");
  std::string bytes = read_bytes(disk, path);
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  const bool truncate = *rc::gen::arbitrary<bool>();
  if (truncate) {
    bytes.resize(at);
  } else {
    bytes[at] = static_cast<char>(bytes[at] ^ *rc::gen::inRange(1, 256));
  }
  RC_ASSERT(disk.write_file(path, bytes).ok());
  auto store = StateStore::open(disk, dir.path(), options);
  RC_ASSERT(store.ok());
  auto all = store->read_all();
  if (!store->health().ok()) {
    RC_ASSERT(!all.ok());
    RC_ASSERT(read_bytes(disk, path) == bytes);
    return;
  }
  // Healthy: exactly the state after some prefix of the updates.
  RC_ASSERT(all.ok());
  const auto seq = store->sequence();
  RC_ASSERT(seq <= static_cast<std::uint64_t>(updates));
  RC_ASSERT(*all == history.at(seq));
  if (!truncate) {
    // A changed byte costs at most the last record, and that is reported.
    RC_ASSERT(seq + 1 == static_cast<std::uint64_t>(updates));
    RC_ASSERT(store->health().torn_tail.has_value());
  }
  // (A cut exactly at a record boundary looks like fewer updates: see
  // docs/state-file.md, "What the journal cannot detect".)
}

}  // namespace
}  // namespace rehearse
