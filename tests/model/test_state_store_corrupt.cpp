// Goal: the state store fails closed on a corrupt file: it reports it, keeps
// it byte for byte, refuses every write and never shows an empty or invented
// state, and picks up an operator's repair without a restart.
// Method: StateStore over the real PosixDisk in a fresh temporary directory
// per test; damaged snapshots and journals are written by the test, one kind
// of damage per case; RapidCheck properties damage snapshots and journals at
// random.
#include "model/state_store.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <map>

#include "model/posix_disk.hpp"
#include "tests/model/job_state_gen.hpp"
#include "tests/model/state_store_fixtures.hpp"
#include "tests/support/property.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::store_test {
namespace {

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
}  // namespace rehearse::store_test
