// Goal: SimDisk honours every durability rule of the Disk port
// (model/disk.hpp) exactly as documented in docs/sim-disk.md — unsynced bytes
// and unsynced directory entries (creates, renames, removes, new directories)
// are lost by a power loss, synced ones kept, reads see the page cache — and
// its faults do what they say: torn writes leave a prefix on the medium and
// kill the writer, corruption damages the bytes durably, fail-stop kills a
// process at an exact operation, locks exclude like flock and die with their
// holder. Every effect is in the trace, without file contents.
// Method: one rule per unit test on a bare SimDisk (no simulator, no trace
// unless the test is about the trace); a RapidCheck property runs random
// operation sequences with crashes, torn writes and process restarts on
// SimDisk and on a deliberately simple model of the rules written here (one
// directory of named files, each name pointing at a file object with a live
// and a durable content), and compares every read, listing and crash
// outcome; a last test binds the disk to a Simulator and checks that a torn
// write crashes the issuing process at the same instant.
#include "sim/world/sim_disk.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/task.hpp"
#include "sim/kernel/simulator.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

using Names = std::vector<std::string>;

std::optional<std::string> read(SimDisk& disk, const std::string& path) {
  auto r = disk.read_file(path);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

Names listing(SimDisk& disk, const std::string& dir) {
  auto r = disk.list_dir(dir);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

// A disk with a durable directory /d to work in.
SimDisk& with_dir(SimDisk& disk) {
  REHEARSE_ASSERT(disk.make_dirs("/d").ok());
  return disk;
}

// --- file bytes -------------------------------------------------------------

TEST(SimDiskDurability, ReadsSeeUnsyncedBytesUntilACrash) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "hello").ok());
  ASSERT_TRUE(disk.append_file("/d/f", " world").ok());
  EXPECT_EQ(read(disk, "/d/f"), "hello world");
  auto range = disk.read_range("/d/f", 6, 3);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, "wor");
  EXPECT_EQ(disk.live_content("/d/f"), "hello world");
  EXPECT_EQ(disk.durable_content("/d/f"), std::nullopt) << "its entry is not durable yet";
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), std::nullopt) << "a new file whose entry was never synced";
  EXPECT_EQ(listing(disk, "/d"), Names{});
}

TEST(SimDiskDurability, SyncedEntryWithUnsyncedBytesComesBackEmpty) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "data").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());  // the name, not the bytes
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "") << "the ext4 zero-length file after a crash";
}

TEST(SimDiskDurability, FsyncedBytesAndEntrySurvive) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "v1").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_EQ(disk.durable_content("/d/f"), "v1");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "v1");
  EXPECT_EQ(listing(disk, "/d"), Names{"f"});
}

// A reader that skips re-reading durable bytes it has read relies on this:
// the identity changes with every change of the durable bytes, and only then.
TEST(SimDiskDurability, TheDurableIdentityChangesExactlyWhenTheDurableBytesDo) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "v1").ok());
  EXPECT_EQ(disk.durable_identity("/d/f"), std::nullopt) << "no durable entry yet";
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  const auto first = disk.durable_identity("/d/f");
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(disk.append_file("/d/f", "+").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_EQ(disk.durable_identity("/d/f"), first) << "unsynced bytes are not durable";
  disk.crash();
  EXPECT_EQ(disk.durable_identity("/d/f"), first) << "a crash leaves the medium as it was";
  ASSERT_TRUE(disk.append_file("/d/f", "+").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  const auto synced = disk.durable_identity("/d/f");
  EXPECT_NE(synced, first);
  ASSERT_TRUE(disk.corrupt("/d/f", CorruptionKind::flip_bytes).ok());
  EXPECT_NE(disk.durable_identity("/d/f"), synced) << "damage on the medium";
  // A rename over it names another file.
  ASSERT_TRUE(disk.write_file("/d/g", "v1+").ok());
  ASSERT_TRUE(disk.fsync_file("/d/g").ok());
  ASSERT_TRUE(disk.rename_file("/d/g", "/d/f").ok());
  const auto before_sync = disk.durable_identity("/d/f");
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_NE(disk.durable_identity("/d/f"), before_sync);
}

TEST(SimDiskDurability, AppendsAfterTheLastFsyncAreLost) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.append_file("/d/j", "r1\n").ok());
  ASSERT_TRUE(disk.fsync_file("/d/j").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  ASSERT_TRUE(disk.append_file("/d/j", "r2\n").ok());
  ASSERT_TRUE(disk.fsync_file("/d/j").ok());
  ASSERT_TRUE(disk.append_file("/d/j", "r3\n").ok());  // never synced
  EXPECT_EQ(read(disk, "/d/j"), "r1\nr2\nr3\n");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/j"), "r1\nr2\n");
  EXPECT_EQ(disk.counters().bytes_synced, 6u) << "fsync copies only the new bytes";
}

TEST(SimDiskDurability, RewriteWithoutFsyncKeepsTheOldBytes) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/f", "old content").ok());
  ASSERT_TRUE(disk.write_file("/d/f", "new").ok());
  EXPECT_EQ(read(disk, "/d/f"), "new");
  EXPECT_EQ(disk.durable_content("/d/f"), "old content");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "old content");
  // And an fsync after a shrinking rewrite makes the short content durable.
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "x");
}

// --- directory entries -----------------------------------------------------------

TEST(SimDiskDurability, RenameWithoutFsyncDirIsUndoneByACrash) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.fsync_file("/d/state.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  EXPECT_EQ(read(disk, "/d/state"), "new");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
  EXPECT_EQ(disk.durable_content("/d/state"), "old");
  disk.crash();
  // The old name and content survive; the temp file's entry never was durable.
  EXPECT_EQ(read(disk, "/d/state"), "old");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
}

TEST(SimDiskDurability, RenameFollowedByFsyncDirIsKept) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.fsync_file("/d/state.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/state"), "new");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
}

TEST(SimDiskDurability, RenameOfUnsyncedBytesWithFsyncDirGivesAnEmptyFile) {
  // The classic forgotten fsync before rename: the name is durable, the bytes
  // are not.
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/state"), "");
}

TEST(SimDiskDurability, RemoveIsDurableOnlyAfterFsyncDir) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/a", "A").ok());
  ASSERT_TRUE(disk.put_durable("/d/b", "B").ok());
  auto removed = disk.remove_file("/d/a");
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_EQ(read(disk, "/d/a"), std::nullopt);
  disk.crash();
  EXPECT_EQ(read(disk, "/d/a"), "A") << "the unlink was not durable";
  ASSERT_TRUE(*disk.remove_file("/d/a"));
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/a"), std::nullopt);
  EXPECT_EQ(listing(disk, "/d"), Names{"b"});
  auto again = disk.remove_file("/d/a");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(SimDiskDurability, NewDirectoryAndItsContentVanishWithoutFsyncOfTheParent) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.create_dir("/d/s").ok());
  ASSERT_TRUE(disk.write_file("/d/s/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/s/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d/s").ok());  // the file is durable in s, s is not in d
  EXPECT_EQ(disk.durable_content("/d/s/f"), std::nullopt);
  disk.crash();
  EXPECT_EQ(listing(disk, "/d"), Names{});
  EXPECT_EQ(read(disk, "/d/s/f"), std::nullopt);
  EXPECT_FALSE(disk.list_dir("/d/s").ok());
  // With the parent synced too, everything is there.
  ASSERT_TRUE(disk.create_dir("/d/s").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  ASSERT_TRUE(disk.write_file("/d/s/f", "y").ok());
  ASSERT_TRUE(disk.fsync_file("/d/s/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d/s").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/s/f"), "y");
}

TEST(SimDiskDurability, FsyncFileOfADirectorySyncsItsEntriesAsFsyncOfItsDescriptorWould) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_file("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "x");
}

TEST(SimDiskDurability, RelativePathsLiveUnderTheRelativeRoot) {
  SimDisk disk;
  ASSERT_TRUE(disk.create_dir("state").ok());
  ASSERT_TRUE(disk.fsync_dir(".").ok());
  ASSERT_TRUE(disk.write_file("./state//f", "x").ok());  // normalised to state/f
  ASSERT_TRUE(disk.fsync_file("state/f").ok());
  ASSERT_TRUE(disk.fsync_dir("state/").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "state/f"), "x");
  EXPECT_EQ(listing(disk, "."), Names{"state"});
  EXPECT_EQ(listing(disk, "/"), Names{}) << "the absolute root is a separate tree";
}

// --- errors mirror the operating system ----------------------------------------------

TEST(SimDiskErrors, MissingIsAValueUnreadableIsAnIoError) {
  SimDisk disk;
  with_dir(disk);
  EXPECT_EQ(read(disk, "/d/missing"), std::nullopt);
  EXPECT_EQ(read(disk, "/nowhere/missing"), std::nullopt);
  auto range = disk.read_range("/d/missing", 0, 10);
  ASSERT_TRUE(range.ok());
  EXPECT_FALSE(range->has_value());
  auto dir_read = disk.read_file("/d");
  ASSERT_FALSE(dir_read.ok());
  EXPECT_EQ(dir_read.error().code, ErrorCode::io_error);
  EXPECT_EQ(dir_read.error().where, "/d");
  ASSERT_TRUE(disk.write_file("/d/f", "abc").ok());
  auto past = disk.read_range("/d/f", 99, kReadToEnd);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(**past, "");
  auto not_dir = disk.read_file("/d/f/x");
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.error().message.find("Not a directory"), std::string::npos);
}

TEST(SimDiskErrors, WritesIntoMissingDirectoriesAndOntoDirectoriesFail) {
  SimDisk disk;
  with_dir(disk);
  const Status w = disk.write_file("/nowhere/f", "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::io_error);
  EXPECT_NE(w.error().message.find("No such file"), std::string::npos);
  EXPECT_FALSE(disk.append_file("/d", "x").ok());
  EXPECT_FALSE(disk.fsync_file("/d/missing").ok());
  EXPECT_FALSE(disk.fsync_dir("/nowhere").ok());
  EXPECT_FALSE(disk.rename_file("/d/missing", "/d/x").ok());
  EXPECT_FALSE(disk.create_dir("/nowhere/x").ok());
  EXPECT_FALSE(disk.list_dir("/nowhere").ok());
  EXPECT_FALSE(disk.remove_file("/d").ok());
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  EXPECT_FALSE(disk.create_dir("/d/f").ok());
  EXPECT_TRUE(disk.create_dir("/d").ok()) << "an existing directory is not an error";
  EXPECT_FALSE(disk.rename_file("/d/f", "/d").ok());
}

TEST(SimDiskErrors, ListingIsSortedBytewise) {
  SimDisk disk;
  with_dir(disk);
  for (const char* name : {"b", "a", "B", "\xc3\xa9", "a.tmp"}) {
    ASSERT_TRUE(disk.write_file(std::string("/d/") + name, "").ok());
  }
  EXPECT_EQ(listing(disk, "/d"), (Names{"B", "a", "a.tmp", "b", "\xc3\xa9"}));
}

// --- torn writes ---------------------------------------------------------------------------

TEST(SimDiskTorn, TornAppendLeavesAPrefixOnTheMediumAndKillsTheWriter) {
  std::vector<DiskOwner> deaths;
  SimDisk disk(nullptr, Rng(7), SimDiskHooks{{}, {}, [&](DiskOwner o) { deaths.push_back(o); }});
  with_dir(disk);
  ASSERT_TRUE(disk.append_file("/d/j", "head\n").ok());
  ASSERT_TRUE(disk.fsync_file("/d/j").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.arm_torn_write("/d/j", 3);
  const Status torn = disk.append_file("/d/j", "record\n");
  ASSERT_FALSE(torn.ok());
  EXPECT_EQ(torn.error().code, ErrorCode::io_error);
  EXPECT_FALSE(disk.torn_write_armed()) << "one-shot";
  EXPECT_EQ(deaths, std::vector<DiskOwner>{0});
  EXPECT_TRUE(disk.is_dead(0));
  // The dead process can do nothing until it is crashed.
  EXPECT_FALSE(disk.read_file("/d/j").ok());
  EXPECT_FALSE(disk.append_file("/d/j", "more").ok());
  EXPECT_EQ(disk.counters().refused, 2u);
  EXPECT_EQ(disk.live_content("/d/j"), "head\nrec");
  EXPECT_EQ(disk.durable_content("/d/j"), "head\nrec") << "the prefix reached the medium";
  disk.crash();
  EXPECT_FALSE(disk.is_dead(0));
  EXPECT_EQ(read(disk, "/d/j"), "head\nrec");
}

TEST(SimDiskTorn, TornRewriteTruncatesThenKeepsAPrefix) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/s.tmp", "an older temp file").ok());
  disk.arm_torn_write("/d/s.tmp", 4);
  ASSERT_FALSE(disk.write_file("/d/s.tmp", "{\"format\":1}").ok());
  EXPECT_EQ(disk.live_content("/d/s.tmp"), "{\"fo");
  disk.process_crashed(0);  // the process alone: the page cache stays
  EXPECT_EQ(read(disk, "/d/s.tmp"), "{\"fo");
}

TEST(SimDiskTorn, OnlyMatchingPathsAreTornAndDrawnPrefixesAreStrictlyShorter) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    SimDisk disk(nullptr, Rng(seed));
    with_dir(disk);
    disk.arm_torn_write("/d/journal");
    ASSERT_TRUE(disk.append_file("/d/other", "0123456789").ok()) << "not a match";
    ASSERT_TRUE(disk.torn_write_armed());
    ASSERT_FALSE(disk.append_file("/d/journal", "0123456789").ok());
    const auto left = disk.live_content("/d/journal");
    ASSERT_TRUE(left.has_value());
    EXPECT_LT(left->size(), 10u);
    EXPECT_EQ(*left, std::string("0123456789").substr(0, left->size()));
  }
}

TEST(SimDiskTorn, PrefixThenGarbageStaysWithinTheWriteLength) {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    SimDisk disk(nullptr, Rng(seed));
    with_dir(disk);
    disk.arm_torn_write("/d/j", 5, TornKind::prefix_garbage);
    ASSERT_FALSE(disk.append_file("/d/j", "0123456789").ok());
    const auto left = disk.live_content("/d/j");
    ASSERT_TRUE(left.has_value());
    EXPECT_GT(left->size(), 5u);
    EXPECT_LE(left->size(), 10u);
    EXPECT_EQ(left->substr(0, 5), "01234");
  }
}

// --- fail-stop -------------------------------------------------------------------------------

TEST(SimDiskFailStop, TheProcessDiesAtExactlyTheNextOperationAfterN) {
  DiskOwner who = 1;
  std::vector<DiskOwner> deaths;
  SimDisk disk(nullptr, Rng(1),
               SimDiskHooks{[&] { return who; }, {}, [&](DiskOwner o) { deaths.push_back(o); }});
  with_dir(disk);
  disk.fail_stop_after(3, 1);
  const std::uint64_t before = disk.operations();
  ASSERT_TRUE(disk.write_file("/d/f", "a").ok());
  who = 2;  // another process's operations do not count for process 1
  ASSERT_TRUE(disk.write_file("/d/g", "b").ok());
  who = 1;
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.append_file("/d/f", "b").ok());
  EXPECT_TRUE(deaths.empty());
  const Status fourth = disk.rename_file("/d/f", "/d/h");
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(deaths, std::vector<DiskOwner>{1});
  EXPECT_EQ(disk.operations() - before, 4u) << "the refused operation did not happen";
  EXPECT_FALSE(disk.read_file("/d/h").ok()) << "process 1 is dead: refused";
  who = 2;
  EXPECT_EQ(read(disk, "/d/f"), "ab") << "process 2 lives on";
  EXPECT_EQ(read(disk, "/d/h"), std::nullopt);
  disk.process_crashed(1);
  who = 1;
  EXPECT_EQ(read(disk, "/d/f"), "ab") << "a process crash loses nothing";
  EXPECT_EQ(disk.counters().fail_stops, 1u);
}

TEST(SimDiskFailStop, ZeroMeansTheVeryNextOperation) {
  SimDisk disk;
  with_dir(disk);
  disk.fail_stop_after(0);
  EXPECT_FALSE(disk.list_dir("/d").ok());
  EXPECT_TRUE(disk.is_dead(0));
  EXPECT_FALSE(disk.fail_stop_armed());
}

// --- corruption -------------------------------------------------------------------------------

TEST(SimDiskCorrupt, EachKindDamagesTheBytesDurably) {
  const std::string original = "{\"format\":1,\"journal_seq\":3,\"jobs\":{}}\n";
  for (const CorruptionKind kind : {CorruptionKind::flip_bytes, CorruptionKind::truncate,
                                    CorruptionKind::empty, CorruptionKind::garbage}) {
    SimDisk disk(nullptr, Rng(42));
    ASSERT_TRUE(disk.put_durable("/d/s", original).ok());
    ASSERT_TRUE(disk.corrupt("/d/s", kind).ok()) << to_string(kind);
    const auto damaged = read(disk, "/d/s");
    ASSERT_TRUE(damaged.has_value());
    EXPECT_NE(*damaged, original) << to_string(kind);
    switch (kind) {
      case CorruptionKind::flip_bytes: {
        ASSERT_EQ(damaged->size(), original.size());
        int differing = 0;
        for (std::size_t i = 0; i < original.size(); ++i) differing += (*damaged)[i] != original[i];
        EXPECT_EQ(differing, 1);
        break;
      }
      case CorruptionKind::truncate:
        EXPECT_LT(damaged->size(), original.size());
        EXPECT_EQ(*damaged, original.substr(0, damaged->size()));
        break;
      case CorruptionKind::empty: EXPECT_EQ(*damaged, ""); break;
      case CorruptionKind::garbage: EXPECT_EQ(damaged->size(), original.size()); break;
    }
    disk.crash();
    EXPECT_EQ(read(disk, "/d/s"), damaged) << "the damage is on the medium";
    EXPECT_EQ(disk.counters().corruptions, 1u);
  }
}

TEST(SimDiskCorrupt, ExplicitCorruptionIsExactAndDrawnCorruptionIsDeterministic) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/s", "abcdef").ok());
  Corruption flip;
  flip.kind = CorruptionKind::flip_bytes;
  flip.offset = 1;
  flip.count = 2;
  flip.xor_mask = 0x20;
  ASSERT_TRUE(disk.corrupt("/d/s", flip).ok());
  EXPECT_EQ(read(disk, "/d/s"), "aBCdef");
  Corruption cut;
  cut.kind = CorruptionKind::truncate;
  cut.offset = 4;
  ASSERT_TRUE(disk.corrupt("/d/s", cut).ok());
  EXPECT_EQ(read(disk, "/d/s"), "aBCd");
  Corruption tail;
  tail.kind = CorruptionKind::garbage;
  tail.offset = 2;
  ASSERT_TRUE(disk.corrupt("/d/s", tail).ok());
  EXPECT_EQ(read(disk, "/d/s")->substr(0, 2), "aB");

  const auto drawn = [](std::uint64_t seed) {
    SimDisk d(nullptr, Rng(seed));
    REHEARSE_ASSERT(d.put_durable("/d/s", std::string(64, 'x')).ok());
    Corruption c;
    c.count = 5;
    REHEARSE_ASSERT(d.corrupt("/d/s", c).ok());
    return *d.live_content("/d/s");
  };
  EXPECT_EQ(drawn(9), drawn(9));
  EXPECT_NE(drawn(9), drawn(10));
}

TEST(SimDiskCorrupt, ImpossibleCorruptionsAreRefused) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/empty", "").ok());
  EXPECT_EQ(disk.corrupt("/d/missing", CorruptionKind::flip_bytes).error().code,
            ErrorCode::not_found);
  EXPECT_EQ(disk.corrupt("/d/empty", CorruptionKind::flip_bytes).error().code,
            ErrorCode::invalid_argument);
  EXPECT_EQ(disk.corrupt("/d/empty", CorruptionKind::empty).error().code,
            ErrorCode::invalid_argument);
  ASSERT_TRUE(disk.corrupt("/d/empty", CorruptionKind::garbage).ok()) << "garbage can grow it";
  EXPECT_FALSE(read(disk, "/d/empty")->empty());
}

// --- locks -----------------------------------------------------------------------------------

TEST(SimDiskLocks, OneHolderAtATimeAndReleaseOnDestruction) {
  DiskOwner who = 1;
  SimDisk disk(nullptr, Rng(0), SimDiskHooks{[&] { return who; }, {}, {}});
  with_dir(disk);
  auto first = disk.lock_exclusive("/d/lock");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(disk.is_locked("/d/lock"));
  EXPECT_EQ(listing(disk, "/d"), Names{"lock"}) << "the lock file is created";
  // Not re-entrant, and another process cannot take it either: busy, since
  // a simulation cannot block.
  auto nested = disk.lock_exclusive("/d/lock");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, ErrorCode::busy);
  who = 2;
  auto other = disk.lock_exclusive("/d/lock");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, ErrorCode::busy);
  EXPECT_TRUE(disk.lock_exclusive("/d/other-lock").ok()) << "a different path is free";
  first->reset();
  EXPECT_FALSE(disk.is_locked("/d/lock"));
  auto second = disk.lock_exclusive("/d/lock");
  EXPECT_TRUE(second.ok());
  EXPECT_EQ(disk.counters().locks_busy, 2u);
}

TEST(SimDiskLocks, ACrashReleasesLocksAndStaleHandlesReleaseNothing) {
  DiskOwner who = 1;
  SimDisk disk(nullptr, Rng(0), SimDiskHooks{[&] { return who; }, {}, {}});
  with_dir(disk);
  auto held_by_1 = disk.lock_exclusive("/d/lock");
  ASSERT_TRUE(held_by_1.ok());
  who = 2;
  auto held_by_2 = disk.lock_exclusive("/d/lock2");
  ASSERT_TRUE(held_by_2.ok());
  disk.process_crashed(1);  // releases process 1's lock only
  EXPECT_FALSE(disk.is_locked("/d/lock"));
  EXPECT_TRUE(disk.is_locked("/d/lock2"));
  auto taken_by_2 = disk.lock_exclusive("/d/lock");
  ASSERT_TRUE(taken_by_2.ok());
  held_by_1->reset();  // the dead incarnation's handle goes away late
  EXPECT_TRUE(disk.is_locked("/d/lock")) << "a stale handle must not free the new holder's lock";
  disk.crash();
  EXPECT_FALSE(disk.is_locked("/d/lock"));
  EXPECT_FALSE(disk.is_locked("/d/lock2"));
}

TEST(SimDiskLocks, ADeadProcessLosesItsLocksAtOnce) {
  DiskOwner who = 1;
  SimDisk disk(nullptr, Rng(0), SimDiskHooks{[&] { return who; }, {}, {}});
  with_dir(disk);
  auto held = disk.lock_exclusive("/d/lock");
  ASSERT_TRUE(held.ok());
  disk.fail_stop_after(0, 1);
  EXPECT_FALSE(disk.append_file("/d/j", "x").ok());
  EXPECT_FALSE(disk.is_locked("/d/lock"));
  who = 2;
  EXPECT_TRUE(disk.lock_exclusive("/d/lock").ok());
}

TEST(SimDiskLocks, AHandleOutlivingTheDiskIsHarmless) {
  DiskLockHandle handle;
  {
    SimDisk disk;
    with_dir(disk);
    auto held = disk.lock_exclusive("/d/lock");
    ASSERT_TRUE(held.ok());
    handle = std::move(*held);
  }
  handle.reset();  // must not touch the destroyed disk (ASan would see it)
  SUCCEED();
}

// --- trace and counters --------------------------------------------------------------------------

TEST(SimDiskTrace, EveryMutationAndFaultIsTracedWithSizesNotContents) {
  Trace trace;
  TimeMs t = 1000;
  SimDisk disk(&trace, Rng(3), SimDiskHooks{[] { return DiskOwner{4}; }, [&] { return t; }, {}});
  with_dir(disk);
  const std::string secret = "token=abcdef";
  ASSERT_TRUE(disk.create_dir("/d/s").ok());
  ASSERT_TRUE(disk.write_file("/d/s/f.tmp", secret).ok());
  ASSERT_TRUE(disk.fsync_file("/d/s/f.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/d/s/f.tmp", "/d/s/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d/s").ok());
  t = 2000;
  ASSERT_TRUE(disk.append_file("/d/s/f", secret).ok());
  ASSERT_TRUE(disk.remove_file("/d/s/f").ok());
  ASSERT_TRUE(disk.read_file("/d/s/f").ok());  // reads are not traced
  ASSERT_TRUE(disk.write_file("/d/s/g", secret).ok());
  ASSERT_TRUE(disk.corrupt("/d/s/g", CorruptionKind::truncate).ok());
  disk.arm_torn_write("/d/s/g", 2);
  EXPECT_FALSE(disk.append_file("/d/s/g", secret).ok());
  disk.process_crashed(4);
  disk.fail_stop_after(0);
  EXPECT_FALSE(disk.fsync_dir("/d").ok());
  disk.crash();

  std::vector<std::string> types;
  for (const TraceEvent& e : trace.events()) {
    types.push_back(e.type);
    EXPECT_EQ(to_json_line(e).find("abcdef"), std::string::npos) << "no contents in the trace";
  }
  EXPECT_EQ(types,
            (Names{"disk_create_dir", "disk_write", "disk_fsync", "disk_rename", "disk_fsync_dir",
                   "disk_append", "disk_remove", "disk_write", "disk_corrupted", "disk_torn_write",
                   "disk_process_crashed", "disk_fail_stop", "disk_crash"}));
  const auto& e = trace.events();
  EXPECT_EQ(e[1].t, 1000);
  EXPECT_EQ(e[1].str("path"), "/d/s/f.tmp");
  EXPECT_EQ(e[1].num("bytes"), 12);
  EXPECT_EQ(e[1].num("process"), 4);
  EXPECT_EQ(e[3].str("from"), "/d/s/f.tmp");
  EXPECT_EQ(e[3].str("to"), "/d/s/f");
  EXPECT_EQ(e[4].num("entries"), 1);
  EXPECT_EQ(e[5].t, 2000);
  EXPECT_EQ(e[5].num("size"), 24);
  EXPECT_EQ(e[8].str("kind"), "truncate");
  EXPECT_EQ(e[8].num("bytes_before"), 12);
  EXPECT_EQ(e[9].num("bytes"), 12);
  EXPECT_EQ(e[9].num("persisted"), 2);
  EXPECT_EQ(e[9].str("operation"), "append");
  EXPECT_EQ(e[11].str("operation"), "fsync_dir");
  EXPECT_GE(e[12].num("unsynced_files"), 1);

  const SimDiskCounters& c = disk.counters();
  EXPECT_EQ(c.writes, 2u);
  EXPECT_EQ(c.appends, 2u);  // the torn one included
  EXPECT_EQ(c.fsyncs, 1u);
  EXPECT_EQ(c.renames, 1u);
  EXPECT_EQ(c.fsync_dirs, 1u);  // the fail-stopped one never ran
  EXPECT_EQ(c.removes, 1u);
  EXPECT_EQ(c.read_files, 1u);
  EXPECT_EQ(c.torn_writes, 1u);
  EXPECT_EQ(c.fail_stops, 1u);
  EXPECT_EQ(c.crashes, 1u);
  EXPECT_EQ(c.process_crashes, 1u);
}

// Who read a damaged file is a world fact for state_durable: a watched path's
// first read by each process is traced (read_file and read_range alike),
// again after that process crashes or the path is watched anew (a new
// damage); other paths' reads, and reads of a missing file, are not.
TEST(SimDiskTrace, AWatchedFileIsTracedAtItsFirstReadPerProcessAndDamage) {
  Trace trace;
  DiskOwner who = 1;
  SimDisk disk(&trace, Rng(3), SimDiskHooks{[&] { return who; }, [] { return TimeMs{7}; }, {}});
  with_dir(disk);
  ASSERT_TRUE(disk.put_durable("/d/jobs_state.json", "garbage").ok());
  ASSERT_TRUE(disk.put_durable("/d/other", "x").ok());
  disk.watch_reads("/d/gone");  // never there: nothing to read
  disk.watch_reads("/d/./jobs_state.json");
  const auto reads = [&] {
    std::vector<std::pair<DiskOwner, std::string>> out;
    for (const TraceEvent& e : trace.events()) {
      if (e.type == "disk_read") out.emplace_back(e.num("process"), e.str("path"));
    }
    return out;
  };
  const std::pair<DiskOwner, std::string> one{1, "/d/jobs_state.json"};
  const std::pair<DiskOwner, std::string> two{2, "/d/jobs_state.json"};
  ASSERT_TRUE(disk.read_file("/d/other").ok());
  ASSERT_TRUE(disk.read_file("/d/gone").ok());
  EXPECT_TRUE(reads().empty());
  ASSERT_TRUE(disk.read_range("/d/jobs_state.json", 3, 100).ok());
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());  // the same process again
  EXPECT_EQ(reads(), (std::vector{one}));
  EXPECT_EQ(trace.events().back().num("offset"), 3);
  EXPECT_EQ(trace.events().back().num("bytes"), 4);
  who = 2;
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());
  EXPECT_EQ(reads(), (std::vector{one, two}));
  disk.process_crashed(1);  // a new incarnation of process 1
  who = 1;
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());
  who = 2;
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());  // not crashed: seen
  EXPECT_EQ(reads(), (std::vector{one, two, one}));
  disk.watch_reads("/d/jobs_state.json");  // damaged again
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());
  disk.crash();  // every process starts anew
  ASSERT_TRUE(disk.read_file("/d/jobs_state.json").ok());
  EXPECT_EQ(reads(), (std::vector{one, two, one, two, two}));
  EXPECT_EQ(disk.counters().read_files, 8u);  // a traced read is an ordinary read
}

// --- the simulator binding ----------------------------------------------------------------------

// Coroutine bodies are free functions: their parameters live in the frame,
// whereas a lambda's captures would die with the boot function's closure.
Task<void> torn_writer(Simulator& s, SimDisk& disk, std::vector<bool>& write_ok) {
  co_await s.clock().sleep_for(10);
  write_ok.push_back(disk.append_file("/d/j", "0123456789").ok());
  // Still running synchronously after the death: refused.
  write_ok.push_back(disk.append_file("/d/j", "x").ok());
  co_await s.clock().sleep_for(1);  // never resumed in the torn incarnation: the crash comes first
  write_ok.push_back(true);
}

TEST(SimDiskBinding, ATornWriteCrashesTheWriterNowAndItReboots) {
  Simulator sim({.start_ms = 5000});
  Trace trace;
  SimDisk disk(&trace, sim.rng().derive("disk"));
  bind_to_simulator(disk, sim, SimDiskBinding{ProcessCrashEffect::power_loss, 100});
  ASSERT_TRUE(disk.make_dirs("/d").ok());
  int boots = 0;
  std::vector<bool> write_ok;
  const ProcessId p = sim.add_process("writer", [&](Simulator& s, ProcessId self) {
    ++boots;
    s.spawn(self, torn_writer(s, disk, write_ok));
  });
  sim.boot(p);
  disk.arm_torn_write("/d/j", 4);
  const RunResult r = sim.run_until(6000);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(sim.crash_count(p), 1u);
  EXPECT_EQ(boots, 2);
  // First incarnation: torn, refused, cut; second: two good appends and the
  // line after the sleep.
  EXPECT_EQ(write_ok, (std::vector<bool>{false, false, true, true, true}));
  // The torn prefix reached the medium, but the file's entry never did (no
  // fsync_dir): the power loss took the whole file.
  EXPECT_EQ(disk.live_content("/d/j"), "0123456789x");
  bool crashed_at_once = false;
  for (const TraceEvent& e : trace.events()) {
    if (e.type == "disk_crash") crashed_at_once = e.t == 5010;
  }
  EXPECT_TRUE(crashed_at_once) << "the power loss came at the torn write's instant";
}

Task<void> unsynced_writer(Simulator& s, SimDisk& disk) {
  const Status w = disk.write_file("/d/f", "unsynced");
  REHEARSE_ASSERT(w.ok());
  co_await s.clock().sleep_for(1000);
}

TEST(SimDiskBinding, ProcessOnlyCrashKeepsThePageCache) {
  Simulator sim;
  SimDisk disk(nullptr, sim.rng().derive("disk"));
  bind_to_simulator(disk, sim, SimDiskBinding{ProcessCrashEffect::process_only, std::nullopt});
  ASSERT_TRUE(disk.make_dirs("/d").ok());
  const ProcessId p = sim.add_process("writer", [&](Simulator& s, ProcessId self) {
    s.spawn(self, unsynced_writer(s, disk));
  });
  sim.boot(p);
  sim.schedule_crash(p, 10);
  ASSERT_TRUE(sim.run().ok());
  EXPECT_EQ(sim.crash_count(p), 1u);
  EXPECT_EQ(disk.counters().process_crashes, 1u);
  EXPECT_EQ(disk.counters().crashes, 0u);
  EXPECT_EQ(read(disk, "/d/f"), "unsynced");
}

// --- property: SimDisk agrees with a simple model of the rules
// -------------------------------------

// The rules restated as plainly as possible: one directory; a name points at a
// file object; each object has live and durable bytes; the directory has live
// and durable name tables. A dead process changes nothing.
struct ModelDisk {
  struct File {
    std::string live;
    std::string durable;
  };
  std::map<int, File> files;
  std::map<std::string, int> live_names;
  std::map<std::string, int> durable_names;
  int next_id = 1;
  bool dead = false;

  File& open(const std::string& name) {
    if (!live_names.count(name)) live_names[name] = next_id++;
    return files[live_names[name]];
  }
  void crash() {
    live_names = durable_names;
    for (auto& [id, f] : files) f.live = f.durable;
    dead = false;
  }
};

struct Op {
  enum Kind { write, append, fsync, rename, remove, fsync_dir, read, crash, torn, restart };
  Kind kind = write;
  std::string a;
  std::string b;
  std::string bytes;
  std::uint64_t keep = 0;
};

rc::Gen<Op> gen_op() {
  const auto name = rc::gen::element<std::string>("a", "b", "c");
  return rc::gen::apply(
      [](int kind, std::string a, std::string b, std::string bytes, std::uint64_t keep) {
        Op op;
        op.kind = static_cast<Op::Kind>(kind);
        op.a = std::move(a);
        op.b = std::move(b);
        op.bytes = std::move(bytes);
        op.keep = keep;
        return op;
      },
      rc::gen::weightedElement<int>({{4, Op::write},
                                     {4, Op::append},
                                     {4, Op::fsync},
                                     {3, Op::rename},
                                     {2, Op::remove},
                                     {3, Op::fsync_dir},
                                     {2, Op::read},
                                     {2, Op::crash},
                                     {1, Op::torn},
                                     {1, Op::restart}}),
      name, name, rc::gen::container<std::string>(rc::gen::inRange('a', 'z')),
      rc::gen::inRange<std::uint64_t>(0, 8));
}

REHEARSE_PROP(SimDiskProps, CrashOutcomesMatchTheModel, ()) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  SimDisk disk(nullptr, Rng(0));
  RC_ASSERT(disk.make_dirs("/d").ok());
  ModelDisk model;
  const auto path = [](const std::string& name) { return "/d/" + name; };

  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::write:
      case Op::append: {
        const Status s = op.kind == Op::write ? disk.write_file(path(op.a), op.bytes)
                                              : disk.append_file(path(op.a), op.bytes);
        RC_ASSERT(s.ok() == !model.dead);
        if (model.dead) break;
        auto& f = model.open(op.a);
        f.live = op.kind == Op::write ? op.bytes : f.live + op.bytes;
        break;
      }
      case Op::fsync: {
        const Status s = disk.fsync_file(path(op.a));
        const bool exists = model.live_names.count(op.a) != 0;
        RC_ASSERT(s.ok() == (!model.dead && exists));
        if (s.ok()) {
          auto& f = model.files[model.live_names[op.a]];
          f.durable = f.live;
        }
        break;
      }
      case Op::rename: {
        const Status s = disk.rename_file(path(op.a), path(op.b));
        const bool exists = model.live_names.count(op.a) != 0;
        RC_ASSERT(s.ok() == (!model.dead && exists));
        if (s.ok() && op.a != op.b) {
          model.live_names[op.b] = model.live_names[op.a];
          model.live_names.erase(op.a);
        }
        break;
      }
      case Op::remove: {
        auto r = disk.remove_file(path(op.a));
        RC_ASSERT(r.ok() == !model.dead);
        if (r.ok()) {
          RC_ASSERT(*r == (model.live_names.erase(op.a) == 1));
        }
        break;
      }
      case Op::fsync_dir: {
        const Status s = disk.fsync_dir("/d");
        RC_ASSERT(s.ok() == !model.dead);
        if (s.ok()) model.durable_names = model.live_names;
        break;
      }
      case Op::read: break;  // every step is compared below
      case Op::crash:
        disk.crash();
        model.crash();
        break;
      case Op::torn: {
        // A torn append of op.bytes keeping op.keep bytes (clamped below the
        // length), flushed to the medium, and the writer dies.
        disk.arm_torn_write(path(op.a), op.keep);
        const Status s = disk.append_file(path(op.a), op.bytes);
        RC_ASSERT(!s.ok());
        if (model.dead) {
          disk.disarm_torn_write();  // a dead process never reaches the write
          break;
        }
        auto& f = model.open(op.a);
        const std::size_t keep =
            op.bytes.empty()
                ? 0
                : static_cast<std::size_t>(std::min<std::uint64_t>(op.keep, op.bytes.size() - 1));
        f.live += op.bytes.substr(0, keep);
        f.durable = f.live;
        model.dead = true;
        break;
      }
      case Op::restart:
        disk.process_crashed(0);
        model.dead = false;
        break;
    }
    // Whatever just happened, the disk shows what the model says, now and
    // after a power loss (read through the inspection API, which changes
    // nothing).
    RC_ASSERT(disk.is_dead(0) == model.dead);
    for (const std::string name : {"a", "b", "c"}) {
      const auto live_it = model.live_names.find(name);
      const std::optional<std::string> live =
          live_it == model.live_names.end() ? std::nullopt
                                            : std::optional(model.files[live_it->second].live);
      RC_ASSERT(disk.live_content(path(name)) == live);
      const auto durable_it = model.durable_names.find(name);
      const std::optional<std::string> durable =
          durable_it == model.durable_names.end()
              ? std::nullopt
              : std::optional(model.files[durable_it->second].durable);
      RC_ASSERT(disk.durable_content(path(name)) == durable);
    }
    if (!model.dead) {
      Names names;
      for (const auto& [name, id] : model.live_names) names.push_back(name);
      auto listed = disk.list_dir("/d");
      RC_ASSERT(listed.ok());
      RC_ASSERT(*listed == names);
    }
  }
  disk.crash();
  model.crash();
  for (const std::string name : {"a", "b", "c"}) {
    auto r = disk.read_file(path(name));
    RC_ASSERT(r.ok());
    const auto it = model.live_names.find(name);
    RC_ASSERT(r->has_value() == (it != model.live_names.end()));
    if (it != model.live_names.end()) RC_ASSERT(**r == model.files[it->second].live);
  }
}

}  // namespace
}  // namespace rehearse::sim
