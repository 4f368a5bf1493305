// SimDisk: the Disk port (model/disk.hpp) on the simulated world.
//
// An in-memory file system that keeps, per file, the bytes a reader sees now
// (the page cache) apart from the bytes that would survive a power loss (the
// medium), and, per directory, the live entries apart from the durable ones.
// The same StateStore class runs over PosixDisk and over this; the point is
// that every durability rule of the port is enforced here as strictly as
// POSIX allows, so a core that forgets an fsync loses data in simulation.
//
// Durability model (docs/sim-disk.md):
//   - write_file / append_file change the live bytes only; fsync_file(path)
//     makes the file's live bytes durable (all of them, as fsync(2) does);
//   - a directory entry (create, rename, remove, create_dir, and the entry of
//     a lock file) changes the live namespace only; fsync_dir(dir) makes the
//     live entries of that directory durable (all of them);
//   - crash() is a power loss: every directory becomes its durable entries,
//     every file its durable bytes, a directory whose own entry was not
//     durable disappears with everything under it, a file whose entry is
//     durable but whose bytes never were is empty (the ext4 "zero-length file
//     after a crash" case). A rename that no fsync_dir followed is undone: the
//     old name and content survive. Every lock is released and every dead
//     process may use the disk again;
//   - process_crashed(owner) is a crash of one process alone: nothing is lost
//     (the operating system keeps the page cache), its locks are released.
// Reads see the live bytes until a crash. Every operation is synchronous.
//
// Processes. SimDisk knows only an integer owner per operation, from a hook
// (SimDiskHooks::current_owner; owner 0 when unset). bind_to_simulator()
// wires the hooks to a Simulator: the owner is the current process, and a
// process a fault kills is crashed by a world event at the current instant.
//
// Faults (only here, never in model/):
//   - corrupt(path, ...): flip bytes, truncate, empty or garbage, from the
//     disk's generator or explicit; the damage reaches the medium (it
//     survives a crash);
//   - arm_torn_write(prefix): the next write/append to a matching path
//     leaves only a prefix of its bytes (optionally followed by garbage up to
//     its length), that prefix reaches the medium (writeback flushed the
//     file's pages), and the issuing process DIES there: the call returns an
//     io_error, every later operation of that process fails with io_error,
//     and the on_death hook asks the world to crash it;
//   - fail_stop_after(n): the process dies at its (n+1)-th next operation,
//     which does not happen (the crash-anywhere enumerator for synchronous
//     code between two suspension points).
// Locks behave as flock: one holder per path; a second attempt while held
// (by any owner, the same one included) is ErrorCode::busy, because a
// single-threaded simulation cannot block; a dead or crashed holder's locks
// are released.
//
// Trace (optional: nullptr for unit tests). Every mutating operation and
// every fault is a TraceEvent with path and byte counts, never contents:
// disk_write, disk_append, disk_fsync, disk_rename, disk_fsync_dir,
// disk_remove, disk_create_dir, disk_torn_write, disk_fail_stop,
// disk_corrupted, disk_crash, disk_process_crashed (fields in
// docs/sim-disk.md). Reads are traced only for the paths the world asks to
// watch (watch_reads: the files its faults damaged), once per process and
// damage: disk_read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/disk.hpp"
#include "model/time.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

class Simulator;

// The simulated process on whose behalf an operation runs (a ProcessId when
// bound to a Simulator; 0 = the world / a unit test).
using DiskOwner = std::uint32_t;

// What SimDisk asks of the world around it. Every member may be empty.
struct SimDiskHooks {
  // Who issues the current operation (empty: always 0).
  std::function<DiskOwner()> current_owner;
  // The virtual time stamped on trace events (empty: 0).
  std::function<TimeMs()> now;
  // A fault killed `owner` inside one of its operations: the world should
  // crash that process (at the current instant; the call comes from inside
  // the dying process's execution, so it must be scheduled, not done). Until
  // then every operation of `owner` fails.
  std::function<void(DiskOwner)> on_death;
};

enum class CorruptionKind : unsigned char {
  flip_bytes,  // XOR `count` bytes with non-zero masks
  truncate,    // keep a strict prefix
  empty,       // zero bytes
  garbage,     // replace the bytes from an offset to the end by random ones
};
const char* to_string(CorruptionKind kind) noexcept;

// An explicit corruption; unset fields are drawn from the disk's generator.
struct Corruption {
  CorruptionKind kind = CorruptionKind::flip_bytes;
  // flip_bytes: the first byte flipped (then the next count-1 ones), drawn
  // positions otherwise; truncate: the length kept (< size); garbage: where
  // the garbage starts (0 when drawn: the whole file). Ignored by empty.
  std::optional<std::uint64_t> offset;
  std::uint64_t count = 1;               // flip_bytes: bytes flipped
  std::optional<std::uint8_t> xor_mask;  // flip_bytes: non-zero; drawn per byte if unset
};

enum class TornKind : unsigned char {
  prefix,          // only the first bytes reach the file
  prefix_garbage,  // the first bytes, then garbage up to the full length
};
const char* to_string(TornKind kind) noexcept;

struct TornWrite {
  std::string path_prefix;  // matches paths that start with it (after normalisation)
  // Bytes of the write that persist, clamped below its length; drawn in
  // [0, length) when unset.
  std::optional<std::uint64_t> prefix_bytes;
  TornKind kind = TornKind::prefix;
};

struct SimDiskCounters {
  std::uint64_t read_files = 0;
  std::uint64_t read_ranges = 0;
  std::uint64_t writes = 0;
  std::uint64_t appends = 0;
  std::uint64_t fsyncs = 0;
  std::uint64_t renames = 0;
  std::uint64_t fsync_dirs = 0;
  std::uint64_t removes = 0;
  std::uint64_t create_dirs = 0;
  std::uint64_t list_dirs = 0;
  std::uint64_t locks = 0;
  std::uint64_t locks_busy = 0;  // lock attempts refused as busy
  std::uint64_t refused = 0;     // operations of a dead process (not performed)
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;  // write + append payloads (torn ones: what persisted)
  std::uint64_t bytes_synced = 0;   // bytes made durable by fsync_file
  std::uint64_t torn_writes = 0;
  std::uint64_t fail_stops = 0;
  std::uint64_t corruptions = 0;
  std::uint64_t crashes = 0;
  std::uint64_t process_crashes = 0;
};

class SimDisk final : public Disk {
 public:
  SimDisk();
  explicit SimDisk(Trace* trace, Rng rng = Rng(0), SimDiskHooks hooks = {});
  ~SimDisk() override;

  void set_hooks(SimDiskHooks hooks) { hooks_ = std::move(hooks); }
  void set_trace(Trace* trace) noexcept { trace_ = trace; }

  // --- the Disk port ---
  Result<std::optional<std::string>> read_file(const std::string& path) override;
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length_max) override;
  Status write_file(const std::string& path, std::string_view bytes) override;
  Status append_file(const std::string& path, std::string_view bytes) override;
  Status fsync_file(const std::string& path) override;
  Status rename_file(const std::string& from, const std::string& to) override;
  Status fsync_dir(const std::string& dir) override;
  Result<bool> remove_file(const std::string& path) override;
  Status create_dir(const std::string& dir) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override;
  // (inode, version of the page-cache bytes): exact, every change of the
  // bytes by anyone (a write, a tear, a corruption, a crash dropping unsynced
  // bytes) moves it. An inspection, like stat(2) here: not an operation
  // (not counted, traced or failed; a crash sweep's points are unchanged).
  std::optional<FileStamp> stamp(const std::string& path) override;

  // --- world setup (not port operations: immediate, durable, not traced,
  // never refused or counted) ---
  // Creates the directory and its missing parents. "/" and "." always exist.
  Status make_dirs(const std::string& dir);
  // Creates or replaces a file with durable bytes and a durable entry.
  Status put_durable(const std::string& path, std::string_view bytes);

  // --- faults ---
  // Power loss (see the header comment).
  void crash();
  // The world crashed process `owner` alone: its locks are released and it
  // may use the disk again (a new incarnation); no data is lost.
  void process_crashed(DiskOwner owner);
  // Damages the file's bytes, live and durable alike. not_found when the
  // file does not exist, invalid_argument when the kind cannot change it
  // (flip or truncate of an empty file, an offset past the end).
  Status corrupt(const std::string& path, CorruptionKind kind);
  Status corrupt(const std::string& path, const Corruption& corruption);
  // One-shot; a new arm replaces an armed one.
  void arm_torn_write(TornWrite torn);
  void arm_torn_write(std::string path_prefix,
                      std::optional<std::uint64_t> prefix_bytes = std::nullopt,
                      TornKind kind = TornKind::prefix);
  void disarm_torn_write() noexcept { torn_.reset(); }
  // From now on, the first read (read_file or read_range of the existing
  // file) of `path` by each process is traced as `disk_read`, and again after
  // that process crashes (a new incarnation) or the path is watched anew (a
  // new damage): who read the damaged bytes, as a world fact.
  void watch_reads(const std::string& path);
  bool torn_write_armed() const noexcept { return torn_.has_value(); }
  // The next n operations of `owner` (of anyone when unset) run; the one
  // after fails and kills its issuer. One-shot; a new call replaces it.
  void fail_stop_after(std::uint64_t n, std::optional<DiskOwner> owner = std::nullopt);
  // The process holding the lock on `path` now, if any.
  std::optional<DiskOwner> lock_holder(const std::string& path) const;
  void cancel_fail_stop() noexcept { fail_stop_.reset(); }
  bool fail_stop_armed() const noexcept { return fail_stop_.has_value(); }
  bool is_dead(DiskOwner owner) const { return dead_.count(owner) != 0; }

  // --- inspection (not operations) ---
  // The bytes a reader sees now / would see after a crash now (nullopt: no
  // such file then).
  std::optional<std::string> live_content(const std::string& path) const;
  std::optional<std::string> durable_content(const std::string& path) const;
  // The durable bytes without a copy (null when durable_content would be
  // empty); valid until the next operation on the disk.
  const std::string* durable_view(const std::string& path) const;
  // Which durable bytes those are: equal identities mean byte-identical
  // durable content (every change to a file's durable bytes, by a sync, a
  // torn write or a corruption, gives it a new version; inodes are never
  // reused). Lets a reader skip re-reading a file it has read (nullopt: no
  // such file after a crash now).
  struct DurableIdentity {
    std::uint64_t inode = 0;
    std::uint64_t version = 0;
    bool operator==(const DurableIdentity&) const = default;
  };
  std::optional<DurableIdentity> durable_identity(const std::string& path) const;
  // Durable names of a directory (what list_dir would give after a crash).
  std::vector<std::string> durable_listing(const std::string& dir) const;
  bool is_locked(const std::string& path) const;
  // Port operations performed so far (refused ones excluded): the index
  // fail_stop_after counts in.
  std::uint64_t operations() const noexcept { return operations_; }
  const SimDiskCounters& counters() const noexcept { return counters_; }
  // Live bytes held by all files (a memory gauge for fleet-sized tests).
  std::uint64_t live_bytes() const;

 private:
  struct Entry {
    bool dir = false;
    std::uint64_t inode = 0;  // files only
    bool operator==(const Entry&) const = default;
  };
  using Entries = std::map<std::string, Entry, std::less<>>;
  struct Directory {
    Entries live;
    Entries durable;
    // Names whose live entry may differ from the durable one: every other
    // name is the same in both. fsync_dir syncs these alone, so its cost is
    // that of the changes since the last sync, not of the directory.
    std::set<std::string, std::less<>> dirty;
  };
  struct Inode {
    std::string data;     // page cache: what reads see
    std::string durable;  // on the medium
    // durable is a prefix of data (only appends since the last sync), so an
    // fsync copies just the new bytes: a 4 MiB journal fsynced per append
    // stays linear.
    bool durable_is_prefix = true;
    std::uint64_t durable_version = 0;  // bumped at every change of `durable`
    std::uint64_t data_version = 0;     // bumped at every change of `data`
    std::uint32_t refs = 0;             // entries (live and durable) naming it
  };
  struct FailStop {
    std::uint64_t remaining = 0;
    std::optional<DiskOwner> owner;
  };
  struct Located {
    std::string path;    // normalised
    std::string parent;  // normalised parent directory
    std::string name;
  };
  class Lock;
  struct LockTable;

  DiskOwner owner() const;
  TimeMs now() const;
  Status admit(const char* operation, const std::string& path);
  void kill(DiskOwner who);
  void record(const char* type, nlohmann::json data);

  Result<Located> locate(const std::string& path) const;
  Directory* find_dir(const std::string& normalised);
  const Directory* find_dir(const std::string& normalised) const;
  const Entry* find_live(const Located& at) const;
  Inode& inode(std::uint64_t id);
  // The durable entry's inode id of a file (nullopt: none after a crash now).
  std::optional<std::uint64_t> durable_inode(const std::string& path) const;
  std::uint64_t new_inode();
  void link(const Entry& e);
  void unlink(const Entry& e);
  void set_entry(Entries& entries, const std::string& name, Entry e);
  void erase_entry(Entries& entries, const std::string& name);
  void set_live(Directory& d, const std::string& name, Entry e);
  void erase_live(Directory& d, const std::string& name);
  void sync_dir(Directory& d);
  Result<Inode*> open_for_write(const Located& at, const char* operation);
  Status tear(const Located& at, Inode& file, std::string_view bytes, bool append);
  Result<std::string> read_impl(const std::string& path, const char* operation,
                                std::uint64_t offset, std::uint64_t length_max, bool& missing);
  void note_read(const std::string& normalised, std::uint64_t offset, std::uint64_t bytes);

  Trace* trace_ = nullptr;
  Rng rng_;
  SimDiskHooks hooks_;
  std::map<std::string, Directory, std::less<>> dirs_;  // by normalised path
  std::map<std::uint64_t, Inode> inodes_;
  std::uint64_t next_inode_ = 1;
  std::shared_ptr<LockTable> locks_;
  std::set<DiskOwner> dead_;
  std::optional<TornWrite> torn_;
  std::optional<FailStop> fail_stop_;
  std::set<std::string, std::less<>> read_watched_;           // normalised paths
  std::set<std::pair<DiskOwner, std::string>> reads_traced_;  // since the last damage or crash
  std::uint64_t operations_ = 0;
  SimDiskCounters counters_;
};

// How a crash of a bound process affects the disk.
enum class ProcessCrashEffect : unsigned char {
  // The process alone dies: the page cache survives (process_crashed).
  process_only,
  // The machine loses power with it: unsynced data is lost (crash()). Meant
  // for worlds with one process on the disk, or whose world crashes every
  // process of the machine together.
  power_loss,
};

struct SimDiskBinding {
  ProcessCrashEffect crash_effect = ProcessCrashEffect::power_loss;
  // When a fault kills a process: it is crashed now and booted again this
  // much later (never, when unset).
  std::optional<DurationMs> reboot_after_ms;
};

// Wires the disk's hooks to the simulator: owner = the current process, trace
// time = now(), a death = sim.schedule_crash(owner, now, reboot_after) (a
// death of the world, owner 0, is only recorded), and a process listener that
// tells the disk of every crash. Both must outlive the run.
void bind_to_simulator(SimDisk& disk, Simulator& simulator, SimDiskBinding binding = {});

}  // namespace rehearse::sim
