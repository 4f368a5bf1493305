// StateStore: the persistent per-job state (docs/semantics.md §5).
//
// Runs over any Disk (PosixDisk in production, the simulated disk in sim/):
// the class never knows which. Layout in one directory (docs/state-file.md):
//   retry_state.json     snapshot: every job's state as of journal_seq
//   retry_state.journal  append-only journal of whole-job records after it
//   retry_state.lock     lock file (never holds data)
//
// Guarantees:
//  - every operation (reads included) runs under the exclusive lock, so a
//    read-modify-write by update() never loses a concurrent update, across
//    processes and across store objects in one process;
//  - an update is one framed, checksummed journal append (plus fsync), so a
//    100k-job fleet does not rewrite its snapshot per update; the journal is
//    folded into a new snapshot (temp file, fsync, rename, fsync of the
//    directory) once it passes a bound;
//  - missing files mean a fresh start; a snapshot or journal that is present
//    but empty, unparsable or schema-invalid makes the store CORRUPT: reads
//    and writes fail with ErrorCode::corrupt, nothing is written or replaced,
//    and health() says why, until an operator repairs the files (every
//    operation re-checks, so a repair is picked up without a restart);
//  - a torn last journal record (a crash mid-append, or a journal cut short)
//    is dropped and reported in health(); a copy of the damaged journal is
//    kept beside it (health().damaged_copy) before the next write removes
//    the tail;
//  - before every operation the store checks that the journal still ends
//    where it last saw it end (size, and the checksum of its last record): a
//    journal that shrank or changed behind it makes the store CORRUPT, never
//    a silent append after a cut;
//  - before every write (update, compact) it also checks every byte of the
//    journal it is about to append to or replace against the checksum of
//    what it last saw there: damage anywhere in the journal, done behind a
//    running store, makes the store CORRUPT before anything is written.
//
// A StateStore object is not thread-safe (the core is single-threaded); use
// one object per thread or process. The exact file formats and recovery
// rules are in docs/state-file.md.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "model/disk.hpp"
#include "model/job_state.hpp"
#include "model/result.hpp"
#include "model/state_codec.hpp"

namespace rehearse {

enum class Durability : unsigned char {
  // Every acknowledged write survives a crash of the machine: fsync of the
  // journal after each append, of temp files before their rename, and of the
  // directory after each rename. The default.
  full,
  // No fsync at all: writes survive a crash of the process (the operating
  // system has them) but not of the machine. Atomic rename and the lock are
  // unchanged. For throwaway stores and fast tests only.
  no_sync,
};
const char* to_string(Durability d) noexcept;

struct StoreOptions {
  // Fold the journal into a new snapshot once it holds this many records or
  // bytes, or, when the snapshot is larger, as many records as the store
  // holds jobs or as many bytes as the snapshot has: each fold rewrites every
  // job, so folding in proportion keeps an update's cost amortised O(1) at
  // any fleet size, and recovery reads at most about twice the snapshot.
  std::uint64_t journal_records_max = 4096;
  std::uint64_t journal_bytes_max = std::uint64_t{4} << 20;
  Durability durability = Durability::full;
};

enum class HealthKind : unsigned char { ok, corrupt };
const char* to_string(HealthKind k) noexcept;

struct StoreHealth {
  HealthKind kind = HealthKind::ok;
  // Why the store is corrupt (ErrorCode::corrupt, where = file and location).
  std::optional<Error> error;
  // A torn last journal record seen at the last load and not yet removed.
  std::optional<TornTail> torn_tail;
  // The copy of the damaged journal kept beside it when a torn tail was
  // found (written before anything can replace the journal), or empty.
  std::string damaged_copy;
  // The last full load found neither file: a fresh start (first use, or an
  // operator who moved the files away), not a state that lost records.
  bool fresh_start = false;
  // Distinct torn tails this store object has noticed (each one reported).
  std::uint64_t torn_tails_dropped = 0;
  // A compaction that failed after its update had been made durable (the
  // update stands; the next write tries to compact again).
  std::optional<Error> compaction_error;

  bool ok() const noexcept { return kind == HealthKind::ok; }
};

// What the scheduler and the worker use of a retry state store: a port, so
// that a decorator can stand between them and the store that owns the files
// (WorkerOptions::store_decorator). StateStore below is the implementation.
class JobStateStore {
 public:
  virtual ~JobStateStore() = default;
  virtual Result<JobState> read(const std::string& job_id) = 0;
  virtual Result<std::map<std::string, JobState>> read_all() = 0;
  virtual Status update(const std::string& job_id,
                        const std::function<void(JobState&)>& mutate) = 0;
  virtual StoreHealth health() const = 0;
  virtual const std::string& dir() const noexcept = 0;
  virtual std::string journal_path() const = 0;
};

class StateStore final : public JobStateStore {
 public:
  static constexpr const char* kSnapshotName = "retry_state.json";
  static constexpr const char* kJournalName = "retry_state.journal";
  static constexpr const char* kLockName = "retry_state.lock";
  static constexpr const char* kTempSuffix = ".tmp";
  // A damaged journal's copy: <journal>.damaged-<base>-<tail offset>-<CRC-32C
  // of the damaged journal, 8 hex digits>.
  static constexpr const char* kDamagedInfix = ".damaged-";

  // Creates the directory if missing, takes the lock and loads the state.
  // Succeeds on a corrupt store (health() reports it, every read and write
  // fails closed); fails only when the disk itself fails.
  static Result<StateStore> open(Disk& disk, std::string dir, StoreOptions options = {});

  // The job's state; a job never written yet is a fresh JobState with that id.
  Result<JobState> read(const std::string& job_id) override;
  // Every stored job, keyed by id.
  Result<std::map<std::string, JobState>> read_all() override;

  // Locked read-modify-write of one job: mutate sees the current state (fresh
  // if none) and changes it in place. The result is validated (ids cannot
  // change, counts are non-negative, instants in range...) and appended to
  // the journal; nothing is written when mutate changes nothing. Returns ok
  // once the record is durable (per StoreOptions::durability). On an
  // io_error the update may or may not have reached the disk (as with any
  // storage system): re-read before deciding to repeat it. mutate must not
  // call back into a store on the same directory (the lock is not
  // re-entrant).
  Status update(const std::string& job_id, const std::function<void(JobState&)>& mutate) override;

  // Folds the journal into a new snapshot now.
  Status compact();

  StoreHealth health() const override;

  // The sequence number of the last update this object has seen.
  std::uint64_t sequence() const noexcept { return seq_; }
  const std::string& dir() const noexcept override { return dir_; }
  std::string snapshot_path() const;
  std::string journal_path() const override;
  std::string lock_path() const;

 private:
  StateStore(Disk& disk, std::string dir, StoreOptions options);

  Result<DiskLockHandle> lock();
  // How much of the journal refresh() re-checks: from the last record seen
  // (reads), or every byte of it (writes, which must not append to damage).
  enum class Check : unsigned char { from_last_record, whole_journal };
  // Brings the cache up to date with the files (under the lock). A whole
  // journal check is skipped when the journal's stamp (Disk::stamp) is the
  // one it had when this store last checked it or appended to it.
  Status refresh(Check check = Check::from_last_record);
  Status follow_journal(Check check);
  std::optional<Error> journal_changed_before(std::string_view journal) const;
  Status full_load();
  Status mark_corrupt(const std::string& path, Error cause);
  Status write_atomically(const std::string& path, std::string_view bytes);
  Status start_journal(std::uint64_t base_seq);
  Status compact_locked();
  Status check_snapshot_before_fold();
  bool journal_due_for_fold() const noexcept;
  bool sync() const noexcept { return options_.durability == Durability::full; }
  void note_torn_tail(const std::optional<TornTail>& tail);
  Status keep_damaged_copy(std::string_view journal, std::uint64_t base, const TornTail& tail);
  void remember_last_record(std::uint64_t offset, std::string_view bytes);
  std::optional<Error> journal_moved_back(std::string_view bytes_from_last_record,
                                          std::uint64_t file_size_known) const;

  Disk* disk_;
  std::string dir_;
  StoreOptions options_;

  // Cache of the files as of the last refresh (valid while loaded_).
  bool loaded_ = false;
  std::map<std::string, JobState> jobs_;
  std::uint64_t seq_ = 0;                      // last update folded into jobs_
  std::optional<std::uint64_t> journal_base_;  // nullopt: no journal file
  std::uint64_t journal_end_ = 0;              // offset after the last intact record
  std::uint64_t journal_line_ = 0;             // line number of the next record
  std::uint64_t journal_records_ = 0;          // intact records in the journal file
  std::uint64_t journal_last_seq_ = 0;         // seq of its last record (base if none)
  std::uint32_t journal_crc_ = 0;              // CRC-32C of its bytes up to journal_end_
  std::uint64_t snapshot_bytes_ = 0;           // size of the snapshot last read or written
  // The journal's stamp once this store had checked every byte of it (or
  // appended to a journal so checked); nullopt: check it all at the next write.
  std::optional<FileStamp> journal_checked_;
  // The snapshot's stamp when this store last decoded it whole or wrote it;
  // a fold skips re-reading a snapshot whose stamp is still this one.
  std::optional<FileStamp> snapshot_checked_;
  // Where this store last saw the journal end: the offset of its last record
  // (0: the header) and the CRC-32C of that record's bytes (up to
  // journal_end_). Checked before every operation; kept across a corrupt
  // verdict, so a full load of a journal that shrank stays corrupt.
  struct JournalEnd {
    std::uint64_t base = 0;
    std::uint64_t last_offset = 0;
    std::uint64_t end = 0;
    std::uint32_t crc = 0;
  };
  std::optional<JournalEnd> seen_end_;
  std::string damaged_copy_;
  bool fresh_start_ = false;
  std::optional<TornTail> torn_tail_;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> last_torn_seen_;  // (base, offset)
  std::uint64_t torn_tails_dropped_ = 0;
  std::optional<Error> corrupt_;
  std::optional<Error> compaction_error_;
};

}  // namespace rehearse
