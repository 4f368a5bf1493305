// Goal: the StateStore (model/state_store.hpp) keeps its guarantees when the
// machine or the process dies at ANY disk operation: every update acknowledged
// before the crash is there after a reopen, the one in flight is wholly there
// or wholly absent, the store is never corrupt and never empty, and it goes on
// working. Torn writes of the snapshot temp file and of the journal tail lose
// nothing acknowledged. A corrupted live snapshot fails closed: reported,
// kept byte for byte, every write refused, nothing reset. And the store class
// is the same over PosixDisk and SimDisk: one suite, both disks, identical
// bytes on both.
// Method: a fixed workload of increments of several jobs' counters, with a
// small journal bound so that it compacts several times, runs on SimDisk.
// Crash-anywhere: a baseline counts the disk operations N of open + workload;
// then for every k in 0..N, a fresh disk fail-stops the process at operation
// k, the disk crashes (power loss, and separately a crash of the process
// alone), a new store object opens the directory and the state is compared
// with the model of the acknowledged prefix; then the rest of the workload
// runs and, after one more power loss, the final state must be exact. Torn
// writes are armed before every update in turn, with drawn prefix lengths.
// The number of crash points covered is printed, recorded and asserted. A
// last sweep runs the store inside a simulated process and crashes it at
// every event of the Simulator (sweep_crash_points) with power loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/posix_disk.hpp"
#include "model/state_store.hpp"
#include "model/task.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/world/sim_disk.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::sim {
namespace {

using Jobs = std::map<std::string, JobState>;

const std::string kStateDir = "/srv/state";
constexpr int kUpdates = 40;
constexpr std::uint64_t kJournalRecordsMax = 6;  // compacts after every 6th record

StoreOptions small_journal() {
  StoreOptions options;
  options.journal_records_max = kJournalRecordsMax;
  return options;  // full durability: the default
}

// The workload: update i touches one of four jobs (unevenly, so the journal
// holds repeated and fresh jobs) and changes its counter and more fields.
std::string job_of(int i) { return fmt::format("job-{}", (i * 7 + i / 5) % 4); }
void apply_update(JobState& s, int i) {
  ++s.retry_count;
  s.updated_at = 1'700'000'000'000 + TimeMs{i} * 60'000;
  s.last_error = fmt::format("attempt {} failed", i);
}
Status do_update(StateStore& store, int i) {
  return store.update(job_of(i), [i](JobState& s) { apply_update(s, i); });
}

// The model: the state after the first m updates, computed without a store.
Jobs expected_after(int m) {
  Jobs jobs;
  for (int i = 0; i < m; ++i) {
    auto [it, fresh] = jobs.try_emplace(job_of(i));
    if (fresh) it->second.job_id = job_of(i);
    apply_update(it->second, i);
  }
  return jobs;
}

// SimDisk is not movable (the Disk port is not): worlds hold it by pointer.
std::unique_ptr<SimDisk> fresh_disk(std::uint64_t seed = 0) {
  auto disk = std::make_unique<SimDisk>(nullptr, Rng(seed));
  REHEARSE_ASSERT(disk->make_dirs("/srv").ok());
  return disk;
}

std::string snapshot_path() { return kStateDir + "/" + StateStore::kSnapshotName; }
std::string journal_path() { return kStateDir + "/" + StateStore::kJournalName; }

// What one crashed run left behind.
struct CrashedRun {
  int acked = 0;  // updates that returned ok
  bool opened = false;
  bool fault_fired = false;
};

// Opens the store and runs updates from `first` until one fails (the process
// died) or the workload ends.
CrashedRun run_until_death(SimDisk& disk, int first = 0) {
  CrashedRun run;
  run.acked = first;
  auto store = StateStore::open(disk, kStateDir, small_journal());
  if (!store.ok()) return run;
  run.opened = true;
  for (int i = first; i < kUpdates; ++i) {
    if (!do_update(*store, i).ok()) break;
    run.acked = i + 1;
  }
  return run;  // the store object dies with the process
}

enum class CrashKind { power_loss, process_only };
const char* name_of(CrashKind kind) {
  return kind == CrashKind::power_loss ? "power loss" : "process crash";
}

void crash(SimDisk& disk, CrashKind kind) {
  if (kind == CrashKind::power_loss) {
    disk.crash();
  } else {
    disk.process_crashed(0);
  }
}

// After a crash: reopen, check the allowed states, finish the workload, lose
// power once more, and check the exact end state. Returns how many updates
// the recovered state held (acked or acked + 1), or an error.
Result<int> recover_and_finish(SimDisk& disk, int acked, bool expect_no_torn_tail) {
  auto store = StateStore::open(disk, kStateDir, small_journal());
  if (!store.ok())
    return make_error(ErrorCode::internal, "reopen failed: " + store.error().describe());
  const StoreHealth health = store->health();
  if (!health.ok()) {
    return make_error(ErrorCode::internal,
                      "the store is corrupt after a crash: " + health.error->describe());
  }
  if (expect_no_torn_tail && health.torn_tail) {
    return make_error(ErrorCode::internal, "a torn tail without a torn write");
  }
  auto all = store->read_all();
  if (!all.ok()) return make_error(ErrorCode::internal, "read_all: " + all.error().describe());
  int held = -1;
  if (*all == expected_after(acked)) {
    held = acked;
  } else if (acked < kUpdates && *all == expected_after(acked + 1)) {
    held = acked + 1;  // the in-flight update, wholly there
  } else {
    return make_error(ErrorCode::internal,
                      fmt::format("recovered {} jobs at sequence {}: neither the {} acknowledged "
                                  "updates nor those plus the one in flight",
                                  all->size(), store->sequence(), acked));
  }
  if (store->sequence() != static_cast<std::uint64_t>(held)) {
    return make_error(ErrorCode::internal,
                      fmt::format("sequence {} for {} updates", store->sequence(), held));
  }
  if (acked > 0 && all->empty()) return make_error(ErrorCode::internal, "an empty state");
  for (int i = held; i < kUpdates; ++i) {
    if (auto s = do_update(*store, i); !s.ok()) {
      return make_error(ErrorCode::internal, fmt::format("update {} after recovery failed: {}", i,
                                                         s.error().describe()));
    }
  }
  if (store->health().torn_tail) {
    return make_error(ErrorCode::internal, "the next write did not remove the torn tail");
  }
  disk.crash();  // everything acknowledged since is durable: nothing may go
  auto final_store = StateStore::open(disk, kStateDir, small_journal());
  if (!final_store.ok() || !final_store->health().ok()) {
    return make_error(ErrorCode::internal, "final reopen failed or corrupt");
  }
  auto final_state = final_store->read_all();
  if (!final_state.ok() || *final_state != expected_after(kUpdates) ||
      final_store->sequence() != static_cast<std::uint64_t>(kUpdates)) {
    return make_error(ErrorCode::internal, "the finished workload is not exact after a crash");
  }
  return held;
}

// --- crash anywhere ---------------------------------------------------------------

TEST(StoreCrash, BaselineWorkloadCompactsSeveralTimes) {
  const auto disk_owner = fresh_disk();
  SimDisk& disk = *disk_owner;
  const CrashedRun run = run_until_death(disk);
  ASSERT_TRUE(run.opened);
  ASSERT_EQ(run.acked, kUpdates);
  // 40 records with a bound of 6: compactions after records 6, 12, ..., 36,
  // each a snapshot and a journal written via temp + rename.
  EXPECT_GE(disk.counters().renames, 2u * 6u);
  disk.crash();
  auto store = StateStore::open(disk, kStateDir, small_journal());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*store->read_all(), expected_after(kUpdates));
  EXPECT_EQ(
      disk.durable_listing(kStateDir),
      (std::vector<std::string>{"retry_state.journal", "retry_state.json", "retry_state.lock"}))
      << "no temp file is left durable";
}

TEST(StoreCrash, FailStopAtEveryDiskOperationLosesNothingAcknowledged) {
  std::uint64_t baseline_ops = 0;
  {
    const auto disk_owner = fresh_disk();
    SimDisk& disk = *disk_owner;
    const CrashedRun run = run_until_death(disk);
    ASSERT_EQ(run.acked, kUpdates);
    baseline_ops = disk.operations();
  }
  ASSERT_GT(baseline_ops, 200u) << "the workload must reach many disk operations";
  std::uint64_t points = 0;
  std::map<std::string, int> outcomes;
  for (const CrashKind kind : {CrashKind::power_loss, CrashKind::process_only}) {
    for (std::uint64_t k = 0; k <= baseline_ops; ++k) {
      const auto disk_owner = fresh_disk();
      SimDisk& disk = *disk_owner;
      disk.fail_stop_after(k);
      const CrashedRun run = run_until_death(disk);
      const bool fired = disk.counters().fail_stops == 1;
      ASSERT_EQ(fired, k < baseline_ops) << "k=" << k;
      disk.cancel_fail_stop();
      crash(disk, kind);
      auto held = recover_and_finish(disk, run.acked, true);
      ASSERT_TRUE(held.ok()) << name_of(kind) << " after disk operation " << k << " (acked "
                             << run.acked << "): " << held.error().describe();
      ++outcomes[fmt::format("{}: in-flight update {}", name_of(kind),
                             *held > run.acked ? "present" : "absent")];
      ++points;
    }
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "crash points covered: " << points << " (" << baseline_ops
            << " disk operations, 2 crash kinds)" << std::endl;
  RecordProperty("crash_points", static_cast<int>(points));
  EXPECT_EQ(points, 2 * (baseline_ops + 1));
  // Both outcomes of an in-flight update must occur, or the sweep never cut
  // one between its append and its fsync.
  EXPECT_GT(outcomes["power loss: in-flight update absent"], 0);
  EXPECT_GT(outcomes["process crash: in-flight update present"], 0);
}

// Regression (the fix is in StateStore::full_load): a process died between
// renaming a new journal into place and syncing the directory; its successor (a
// crash of the process alone keeps the page cache) loaded the new journal,
// appended and acknowledged updates to it, and a later power loss brought back
// the OLD journal entry: the acknowledged updates were gone, silently (a
// healthy store at an older sequence). A load now makes what it read durable
// before the store builds on it.
TEST(StoreCrash, DeathBetweenJournalRenameAndDirectorySyncLosesNothingLater) {
  // Find the disk operation index of every journal rename in the workload.
  std::vector<std::uint64_t> renames;
  {
    Trace trace;
    SimDisk disk(&trace, Rng(0));
    ASSERT_TRUE(disk.make_dirs("/srv").ok());
    trace.add_listener([&](const TraceEvent& e, std::size_t) {
      if (e.type == "disk_rename" && e.str("to") == journal_path()) {
        renames.push_back(disk.operations());  // this rename is operation number operations()
      }
    });
    ASSERT_EQ(run_until_death(disk).acked, kUpdates);
  }
  ASSERT_GE(renames.size(), 6u) << "the first journal and one per compaction";
  for (const std::uint64_t rename_ops : renames) {
    const auto disk_owner = fresh_disk();
    SimDisk& disk = *disk_owner;
    disk.fail_stop_after(rename_ops);  // dies at the directory sync right after the rename
    const CrashedRun run = run_until_death(disk);
    ASSERT_EQ(disk.counters().fail_stops, 1u);
    disk.process_crashed(0);
    auto held = recover_and_finish(disk, run.acked, true);
    ASSERT_TRUE(held.ok()) << "death after operation " << rename_ops << ": "
                           << held.error().describe();
  }
}

// --- torn writes ----------------------------------------------------------------------

// Arms a torn write of paths starting with `prefix` before update `before`
// (-1: before open), then crashes and recovers. Returns whether it fired.
bool torn_run(const std::string& prefix, int before, std::uint64_t seed, TornKind torn_kind,
              CrashKind crash_kind, std::map<std::string, int>& outcomes) {
  const auto disk_owner = fresh_disk(seed);
  SimDisk& disk = *disk_owner;
  CrashedRun run;
  {
    auto store = StateStore::open(disk, kStateDir, small_journal());
    REHEARSE_ASSERT(store.ok());
    for (int i = 0; i < kUpdates; ++i) {
      if (i == before) disk.arm_torn_write(prefix, std::nullopt, torn_kind);
      if (!do_update(*store, i).ok()) break;
      run.acked = i + 1;
    }
  }
  const bool fired = disk.counters().torn_writes == 1;
  disk.disarm_torn_write();
  crash(disk, crash_kind);
  auto held = recover_and_finish(disk, run.acked, false);
  EXPECT_TRUE(held.ok()) << "torn write of " << prefix << " armed before update " << before << " ("
                         << to_string(torn_kind) << ", seed " << seed << ", " << name_of(crash_kind)
                         << "): " << (held.ok() ? std::string() : held.error().describe());
  if (held.ok() && fired) {
    ++outcomes[fmt::format("{}: in-flight update {}", name_of(crash_kind),
                           *held > run.acked ? "present" : "absent")];
  }
  return fired;
}

TEST(StoreCrash, TornSnapshotTempFileLosesNothingAcknowledged) {
  int fired = 0;
  std::map<std::string, int> outcomes;
  for (const CrashKind crash_kind : {CrashKind::power_loss, CrashKind::process_only}) {
    for (const TornKind torn_kind : {TornKind::prefix, TornKind::prefix_garbage}) {
      for (int before = 0; before < kUpdates; ++before) {
        fired += torn_run(snapshot_path() + StateStore::kTempSuffix, before,
                          static_cast<std::uint64_t>(before), torn_kind, crash_kind, outcomes);
      }
    }
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "torn snapshot writes covered: " << fired << std::endl;
  RecordProperty("torn_snapshot_points", fired);
  // Every arm before the last compaction fires (the tear hits the next one).
  EXPECT_GE(fired, 4 * 30);
  // A torn compaction follows an acknowledged update: nothing is in flight.
  EXPECT_EQ(outcomes["power loss: in-flight update present"], 0);
}

TEST(StoreCrash, TornJournalTailLosesNothingAcknowledged) {
  int fired = 0;
  std::map<std::string, int> outcomes;
  for (const CrashKind crash_kind : {CrashKind::power_loss, CrashKind::process_only}) {
    for (const TornKind torn_kind : {TornKind::prefix, TornKind::prefix_garbage}) {
      for (int before = 0; before < kUpdates; ++before) {
        fired += torn_run(journal_path(), before, 1000 + static_cast<std::uint64_t>(before),
                          torn_kind, crash_kind, outcomes);
      }
    }
  }
  for (const auto& [what, n] : outcomes) std::cout << "  " << what << ": " << n << "\n";
  std::cout << "torn journal writes covered: " << fired << std::endl;
  RecordProperty("torn_journal_points", fired);
  EXPECT_EQ(fired, 4 * kUpdates);
  // A torn record is never taken for a whole one.
  EXPECT_EQ(outcomes["power loss: in-flight update present"], 0);
  EXPECT_EQ(outcomes["process crash: in-flight update present"], 0);
}

TEST(StoreCrash, TornJournalTailIsReportedThenRemovedByTheNextWrite) {
  const auto disk_owner = fresh_disk();
  SimDisk& disk = *disk_owner;
  {
    auto store = StateStore::open(disk, kStateDir, small_journal());
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(do_update(*store, i).ok());
    disk.arm_torn_write(journal_path(), 20);
    ASSERT_FALSE(do_update(*store, 3).ok());
  }
  disk.crash();
  const auto torn_bytes = disk.live_content(journal_path());
  ASSERT_TRUE(torn_bytes.has_value());
  auto store = StateStore::open(disk, kStateDir, small_journal());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->health().ok());
  ASSERT_TRUE(store->health().torn_tail);
  EXPECT_EQ(store->health().torn_tail->length, 20u);
  EXPECT_EQ(*store->read_all(), expected_after(3));
  ASSERT_TRUE(do_update(*store, 3).ok());
  EXPECT_FALSE(store->health().torn_tail);
  disk.crash();
  auto reopened = StateStore::open(disk, kStateDir, small_journal());
  ASSERT_TRUE(reopened.ok());
  EXPECT_FALSE(reopened->health().torn_tail);
  EXPECT_EQ(*reopened->read_all(), expected_after(4));
}

// --- a corrupted live snapshot fails closed ------------------------------------------------------

void expect_fails_closed(SimDisk& disk, const std::string& damaged) {
  const auto listing_before = disk.durable_listing(kStateDir);
  for (int restart = 0; restart < 2; ++restart) {
    auto store = StateStore::open(disk, kStateDir, small_journal());
    ASSERT_TRUE(store.ok()) << "a corrupt store still opens, to report itself";
    const StoreHealth health = store->health();
    ASSERT_EQ(health.kind, HealthKind::corrupt);
    ASSERT_TRUE(health.error);
    EXPECT_EQ(health.error->code, ErrorCode::corrupt);
    EXPECT_NE(health.error->where.find("retry_state.json"), std::string::npos)
        << health.error->where;
    auto one = store->read("job-0");
    ASSERT_FALSE(one.ok()) << "never a fresh (reset) job";
    EXPECT_EQ(one.error().code, ErrorCode::corrupt);
    auto all = store->read_all();
    ASSERT_FALSE(all.ok()) << "never an empty state";
    EXPECT_EQ(all.error().code, ErrorCode::corrupt);
    for (int i = 0; i < 20; ++i) {
      const Status s = do_update(*store, i);
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.error().code, ErrorCode::corrupt);
    }
    EXPECT_FALSE(store->compact().ok());
    // The bad bytes are kept, in the page cache and on the medium, and no
    // file was added or replaced beside them.
    EXPECT_EQ(disk.live_content(snapshot_path()), damaged);
    EXPECT_EQ(disk.durable_content(snapshot_path()), damaged);
    EXPECT_EQ(disk.durable_listing(kStateDir), listing_before);
    disk.crash();  // and a restart does not heal it
  }
}

TEST(StoreCrash, CorruptedLiveSnapshotFailsClosedAndIsKept) {
  for (const CorruptionKind kind : {CorruptionKind::flip_bytes, CorruptionKind::truncate,
                                    CorruptionKind::empty, CorruptionKind::garbage}) {
    SCOPED_TRACE(to_string(kind));
    const auto disk_owner = fresh_disk(77);
    SimDisk& disk = *disk_owner;
    ASSERT_EQ(run_until_death(disk).acked, kUpdates);
    ASSERT_TRUE(disk.durable_content(snapshot_path()).has_value());
    Corruption corruption;
    corruption.kind = kind;
    // A flip of a structural byte (the opening brace): a flip inside a value
    // can leave valid JSON (see UndetectedSnapshotFlipsAreCounted).
    if (kind == CorruptionKind::flip_bytes) corruption.offset = 0;
    ASSERT_TRUE(disk.corrupt(snapshot_path(), corruption).ok());
    const auto damaged = disk.live_content(snapshot_path());
    ASSERT_TRUE(damaged.has_value());
    expect_fails_closed(disk, *damaged);
    EXPECT_GT(disk.counters().writes, 0u);
  }
}

// A write checks every byte of the journal before appending (damage behind a
// running store is never appended to), unless the journal's stamp is the one
// it had when this store last checked or appended to it: then an update reads
// the last record alone, so its cost does not grow with the journal. Damage
// moves the stamp, and the next write finds it.
TEST(StoreJournalStamp, AnUnchangedJournalIsNotReadWholeAgainAndDamageStillIs) {
  const auto disk_owner = fresh_disk();
  SimDisk& disk = *disk_owner;
  StoreOptions options;
  options.journal_records_max = 10'000;
  options.journal_bytes_max = 100'000'000;
  auto store = StateStore::open(disk, kStateDir, options);
  ASSERT_TRUE(store.ok());
  const auto increment = [](JobState& s) { ++s.retry_count; };
  std::uint64_t read_by_last = 0;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t before = disk.counters().bytes_read;
    ASSERT_TRUE(store->update(fmt::format("job-{}", i % 7), increment).ok());
    read_by_last = disk.counters().bytes_read - before;
  }
  const std::uint64_t journal_bytes = disk.live_content(journal_path())->size();
  EXPECT_GT(journal_bytes, 20'000u);
  EXPECT_LT(read_by_last, 1'000u) << "the 200th update read " << read_by_last << " of "
                                  << journal_bytes << " journal bytes";

  // A byte of the first record flipped behind the store: the next write
  // reads it all, finds it, and fails closed.
  Corruption flip;
  flip.offset = disk.live_content(journal_path())->find('\n') + 20;
  flip.xor_mask = 0x01;
  ASSERT_TRUE(disk.corrupt(journal_path(), flip).ok());
  const auto damaged = disk.live_content(journal_path());
  const Status st = store->update("job-0", increment);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::corrupt);
  EXPECT_EQ(disk.live_content(journal_path()), damaged) << "kept as it was";
}

// A fold checks that the snapshot it replaces still decodes (damage is kept,
// never written over), unless the snapshot's stamp is the one it had when
// this store last decoded or wrote it: then the fold does not read it again.
// Damage moves the stamp, and the next fold finds it.
TEST(StoreSnapshotStamp, AFoldSkipsTheSnapshotItWroteAndStillFindsDamage) {
  const auto disk_owner = fresh_disk();
  SimDisk& disk = *disk_owner;
  StoreOptions options;
  options.journal_records_max = 50;  // 50 jobs: a fold every 50 records
  options.journal_bytes_max = 1;
  auto store = StateStore::open(disk, kStateDir, options);
  ASSERT_TRUE(store.ok());
  const auto increment = [](JobState& s) { ++s.retry_count; };
  std::uint64_t most_read = 0;
  for (int i = 0; i < 200; ++i) {
    const std::uint64_t before = disk.counters().bytes_read;
    ASSERT_TRUE(store->update(fmt::format("job-{:02}", i % 50), increment).ok());
    if (i >= 100) most_read = std::max(most_read, disk.counters().bytes_read - before);
  }
  ASSERT_TRUE(store->health().compaction_error == std::nullopt);
  const std::uint64_t snapshot_bytes = disk.live_content(snapshot_path())->size();
  EXPECT_GT(snapshot_bytes, 5'000u);
  EXPECT_LT(most_read, snapshot_bytes / 2) << "an update (folds included) read " << most_read
                                           << " bytes; the snapshot has " << snapshot_bytes;

  // The opening brace of the snapshot flipped behind the store: the next
  // fold reads it, finds it, and fails closed, keeping the damaged file.
  Corruption flip;
  flip.offset = 0;
  flip.xor_mask = 0x01;
  ASSERT_TRUE(disk.corrupt(snapshot_path(), flip).ok());
  const auto damaged = disk.live_content(snapshot_path());
  bool refused = false;
  for (int i = 0; i < 60 && !refused; ++i) {
    refused = !store->update(fmt::format("job-{:02}", i % 50), increment).ok();
  }
  EXPECT_TRUE(refused) << "a fold wrote over a damaged snapshot";
  EXPECT_EQ(store->health().kind, HealthKind::corrupt);
  EXPECT_EQ(disk.live_content(snapshot_path()), damaged) << "kept as it was";
}

TEST(StoreCrash, UndetectedSnapshotFlipsAreCounted) {
  // The snapshot carries no checksum (the journal's records do): a flipped
  // byte inside a value can decode as a different valid state. This measures
  // how often, flipping every byte of a small snapshot with one mask, and
  // checks the cases that matter most: never an empty state, never a store
  // that silently lost a job.
  const auto base_owner = fresh_disk();
  SimDisk& base = *base_owner;
  ASSERT_EQ(run_until_death(base).acked, kUpdates);
  auto snapshot = base.durable_content(snapshot_path());
  ASSERT_TRUE(snapshot.has_value());
  const auto original = decode_state(*snapshot);
  ASSERT_TRUE(original.ok());
  int detected = 0;
  int undetected = 0;
  for (std::size_t at = 0; at < snapshot->size(); ++at) {
    std::string bytes = *snapshot;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    auto decoded = decode_state(bytes);
    if (!decoded.ok()) {
      ++detected;
      continue;
    }
    ++undetected;
    EXPECT_EQ(decoded->jobs.size(), original->jobs.size()) << "flip at " << at;
  }
  std::cout << "snapshot byte flips (mask 0x01): " << detected << " detected, " << undetected
            << " decode as another valid state" << std::endl;
  RecordProperty("snapshot_flips_undetected", undetected);
  EXPECT_GT(detected, 0);
}

// --- the store inside a simulated process, crashed at every event
// --------------------------------------

struct SweepWorld {
  static constexpr int kTarget = 12;
};

// Reads the durable count on every boot and increments it to the target, one
// update per simulated second: a crash at any suspension point (with power
// loss) must neither lose an acknowledged increment nor count one twice.
Task<void> counting_process(Simulator& sim, SimDisk& disk) {
  auto store = StateStore::open(disk, kStateDir, small_journal());
  REHEARSE_ASSERT(store.ok());
  for (;;) {
    auto job = store->read("counter");
    REHEARSE_ASSERT(job.ok());
    if (job->retry_count >= SweepWorld::kTarget) co_return;
    const Status s = store->update("counter", [](JobState& st) { ++st.retry_count; });
    REHEARSE_ASSERT(s.ok());
    co_await sim.clock().sleep_for(1000);
  }
}

TEST(StoreCrash, SimulatedProcessCrashedAtEveryEventKeepsEveryIncrement) {
  const CrashSweepScenario scenario = [](std::optional<std::uint64_t> crash_after) {
    Simulator sim;
    SimDisk disk(nullptr, sim.rng().derive("disk"));
    REHEARSE_ASSERT(disk.make_dirs("/srv").ok());
    bind_to_simulator(disk, sim, SimDiskBinding{ProcessCrashEffect::power_loss, 500});
    const ProcessId p = sim.add_process("counter", [&disk](Simulator& s, ProcessId self) {
      s.spawn(self, counting_process(s, disk), "count");
    });
    sim.boot(p);
    if (crash_after) sim.plan_crash(CrashPlan{p, *crash_after, 500});
    const RunResult r = sim.run();
    CrashSweepRun out;
    out.events_executed = r.events_executed;
    out.crash_fired = sim.crash_plan_fired();
    if (!r.ok()) {
      out.verdict = make_error(ErrorCode::internal, r.message);
      return out;
    }
    disk.crash();
    auto store = StateStore::open(disk, kStateDir, small_journal());
    if (!store.ok() || !store->health().ok()) {
      out.verdict = make_error(ErrorCode::internal, "store unusable after the run");
      return out;
    }
    auto job = store->read("counter");
    if (!job.ok() || job->retry_count != SweepWorld::kTarget) {
      out.verdict = make_error(ErrorCode::internal,
                               fmt::format("count {} != {}", job.ok() ? job->retry_count : -1,
                                           SweepWorld::kTarget));
    }
    return out;
  };
  auto report = sweep_crash_points(scenario);
  ASSERT_TRUE(report.ok()) << report.error().describe();
  for (const auto& f : report->failures) {
    ADD_FAILURE() << "crash after event " << f.crash_after_events << ": " << f.error.describe();
  }
  std::cout << "crash points covered: " << report->points << " (simulator events)" << std::endl;
  RecordProperty("event_crash_points", static_cast<int>(report->points));
  EXPECT_GE(report->points, static_cast<std::uint64_t>(SweepWorld::kTarget));
}

// --- the same store on PosixDisk and SimDisk
// ---------------------------------------------------------

using testsupport::TempDir;

struct PosixWorld {
  static constexpr const char* kName = "PosixDisk";
  TempDir temp;
  PosixDisk disk;
  std::string dir() const { return temp.path() + "/state"; }
};

struct SimWorld {
  static constexpr const char* kName = "SimDisk";
  std::unique_ptr<SimDisk> owner = fresh_disk();
  SimDisk& disk = *owner;
  std::string dir() const { return kStateDir; }
};

template <typename World>
class StoreOnEveryDisk : public ::testing::Test {
 protected:
  World world;
  Disk& disk() { return world.disk; }
  std::string dir() const { return world.dir(); }
  std::string file(const char* name) const { return dir() + "/" + name; }
  Result<StateStore> open() { return StateStore::open(disk(), dir(), small_journal()); }
  std::optional<std::string> bytes(const char* name) {
    auto r = disk().read_file(file(name));
    REHEARSE_ASSERT(r.ok());
    return *r;
  }
};

using Worlds = ::testing::Types<PosixWorld, SimWorld>;
TYPED_TEST_SUITE(StoreOnEveryDisk, Worlds);

TYPED_TEST(StoreOnEveryDisk, FreshStartThenCountersSurviveAReopen) {
  {
    auto store = this->open();
    ASSERT_TRUE(store.ok()) << TypeParam::kName;
    EXPECT_TRUE(store->read_all()->empty());
    for (int i = 0; i < kUpdates; ++i) ASSERT_TRUE(do_update(*store, i).ok());
  }
  auto store = this->open();
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*store->read_all(), expected_after(kUpdates));
  EXPECT_EQ(store->sequence(), static_cast<std::uint64_t>(kUpdates));
  auto names = this->disk().list_dir(this->dir());
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"retry_state.journal", "retry_state.json",
                                              "retry_state.lock"}));
}

TYPED_TEST(StoreOnEveryDisk, CorruptSnapshotFailsClosedAndIsKept) {
  {
    auto store = this->open();
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(do_update(*store, i).ok());  // compacted once
  }
  ASSERT_TRUE(this->disk().write_file(this->file("retry_state.json"), "{\"format\":1,").ok());
  auto store = this->open();
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(store->health().kind, HealthKind::corrupt);
  EXPECT_FALSE(store->read_all().ok());
  EXPECT_EQ(do_update(*store, 8).error().code, ErrorCode::corrupt);
  EXPECT_EQ(this->bytes("retry_state.json"), "{\"format\":1,");
}

TYPED_TEST(StoreOnEveryDisk, TornJournalTailIsDroppedAndRemoved) {
  {
    auto store = this->open();
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(do_update(*store, i).ok());
  }
  JobState next = expected_after(4).at(job_of(3));
  const std::string record = encode_journal_record(4, next);
  ASSERT_TRUE(
      this->disk()
          .append_file(this->file("retry_state.journal"), record.substr(0, record.size() / 3))
          .ok());
  auto store = this->open();
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE(store->health().torn_tail);
  EXPECT_EQ(*store->read_all(), expected_after(3));
  ASSERT_TRUE(do_update(*store, 3).ok());
  EXPECT_FALSE(store->health().torn_tail);
  auto reopened = this->open();
  EXPECT_EQ(*reopened->read_all(), expected_after(4));
}

TYPED_TEST(StoreOnEveryDisk, TwoStoreObjectsFollowEachOther) {
  auto first = this->open();
  auto second = this->open();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  for (int i = 0; i < kUpdates; ++i) {
    StateStore& writer = (i / 3) % 2 ? *first : *second;
    ASSERT_TRUE(do_update(writer, i).ok()) << i;
  }
  EXPECT_EQ(*first->read_all(), expected_after(kUpdates));
  EXPECT_EQ(*second->read_all(), expected_after(kUpdates));
  // The lock is held only during an operation: it is free now.
  auto lock = this->disk().lock_exclusive(this->file("retry_state.lock"));
  EXPECT_TRUE(lock.ok());
}

TEST(StoreOnBothDisks, TheSameWorkloadWritesTheSameBytes) {
  PosixWorld posix;
  SimWorld sim;
  for (Disk* disk : {static_cast<Disk*>(&posix.disk), static_cast<Disk*>(&sim.disk)}) {
    const std::string dir = disk == &posix.disk ? posix.dir() : sim.dir();
    auto store = StateStore::open(*disk, dir, small_journal());
    ASSERT_TRUE(store.ok());
    for (int i = 0; i < kUpdates - 3; ++i) ASSERT_TRUE(do_update(*store, i).ok());
  }
  for (const char* name : {StateStore::kSnapshotName, StateStore::kJournalName}) {
    auto on_posix = posix.disk.read_file(posix.dir() + "/" + name);
    auto on_sim = sim.disk.read_file(sim.dir() + "/" + name);
    ASSERT_TRUE(on_posix.ok());
    ASSERT_TRUE(on_sim.ok());
    ASSERT_TRUE(on_posix->has_value()) << name;
    EXPECT_EQ(**on_posix, **on_sim) << name;
  }
  EXPECT_EQ(*posix.disk.list_dir(posix.dir()), *sim.disk.list_dir(sim.dir()));
}

// --- a 100k-job fleet on the simulated disk
// ----------------------------------------------------------

TEST(StoreCrash, FleetOf100kJobsIsUsableOnSimDisk) {
  constexpr int kJobs = 100'000;
  constexpr int kUpdatesFleet = 500;
  const auto id_of = [](int i) { return fmt::format("job-{:06}", i); };
  const auto disk_owner = fresh_disk();
  SimDisk& disk = *disk_owner;
  {
    StateDocument fleet;
    for (int i = 0; i < kJobs; ++i) {
      JobState s;
      s.job_id = id_of(i);
      s.retry_limit = 2;
      fleet.jobs.emplace(s.job_id, s);
    }
    ASSERT_TRUE(disk.put_durable(snapshot_path(), encode_state(fleet)).ok());
  }
  auto store = StateStore::open(disk, kStateDir);  // default bounds, full durability
  ASSERT_TRUE(store.ok());
  const SimDiskCounters before = disk.counters();
  for (int i = 0; i < kUpdatesFleet; ++i) {
    ASSERT_TRUE(
        store->update(id_of((i * 7919) % kJobs), [](JobState& s) { ++s.retry_count; }).ok());
  }
  const SimDiskCounters& after = disk.counters();
  EXPECT_EQ(after.appends - before.appends, static_cast<std::uint64_t>(kUpdatesFleet));
  EXPECT_EQ(after.writes - before.writes, 1u) << "only the new journal's header";
  EXPECT_LT((after.bytes_synced - before.bytes_synced) / kUpdatesFleet, 1024u)
      << "an fsync makes only the appended record durable";
  disk.crash();
  auto reopened = StateStore::open(disk, kStateDir);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->read(id_of(0))->retry_count, 1);
  EXPECT_EQ(reopened->read_all()->size(), static_cast<std::size_t>(kJobs));
  EXPECT_EQ(reopened->sequence(), static_cast<std::uint64_t>(kUpdatesFleet));
}

}  // namespace
}  // namespace rehearse::sim
