// Goal: SimDisk's faults do what docs/sim-disk.md says: torn writes leave a
// prefix on the medium and kill the writer, corruption damages the bytes
// durably, fail-stop kills a process at an exact operation, locks exclude like
// flock and die with their holder. Every effect is in the trace, without file
// contents; bound to a Simulator, a torn write crashes the issuing process at
// the same instant.
// Method: one fault per unit test on a bare SimDisk, the trace read where the
// test is about it; the last tests bind the disk to a Simulator.
#include "sim/world/sim_disk.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/task.hpp"
#include "sim/kernel/simulator.hpp"
#include "tests/sim/world/sim_disk_fixtures.hpp"

namespace rehearse::sim::disk_test {
namespace {

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

}  // namespace
}  // namespace rehearse::sim::disk_test
