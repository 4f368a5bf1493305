#include "model/state_store.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace rehearse {

namespace {

// The header is one short line; this bound only has to exceed it.
constexpr std::uint64_t kJournalHeaderReadMax = 256;

std::string parent_dir(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const auto slash = d.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return d.substr(0, slash);
}

// Joins a file path and a codec location into one `where`:
// "path:3:14" (JSON syntax), "path#/jobs/a" (JSON pointer),
// "path:7" / "path:7#/retry_count" (journal line).
std::string locate(const std::string& path, const std::string& where) {
  if (where.empty()) return path;
  if (where.front() == '/') return path + "#" + where;
  if (where.rfind("line ", 0) == 0) return path + ":" + where.substr(5);
  return path + ":" + where;
}

// Rule 4 of docs/state-file.md, and the cut it can see: a journal that
// continues an older snapshot must reach at least the snapshot's sequence
// (the snapshot was folded from it), or records were cut from its end.
Status check_journal_against_snapshot(const JournalScan& scan, bool have_snapshot,
                                      std::uint64_t snapshot_seq) {
  if (!have_snapshot && scan.base_seq != 0) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("the journal continues a snapshot at sequence {}, but {} is "
                                  "missing",
                                  scan.base_seq, StateStore::kSnapshotName),
                      "line 1");
  }
  if (scan.base_seq > snapshot_seq) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("the journal continues a snapshot at sequence {}, but {} is at "
                                  "sequence {} (older)",
                                  scan.base_seq, StateStore::kSnapshotName, snapshot_seq),
                      "line 1");
  }
  const std::uint64_t last = scan.records.empty() ? scan.base_seq : scan.records.back().seq;
  if (have_snapshot && scan.base_seq < snapshot_seq && last < snapshot_seq) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("the journal ends at record {}, but {} folded in its records up "
                                  "to {}: acknowledged records were cut from the journal (and any "
                                  "after them are lost)",
                                  last, StateStore::kSnapshotName, snapshot_seq),
                      fmt::format("line {}", 2 + scan.records.size()));
  }
  return {};
}

}  // namespace

const char* to_string(Durability d) noexcept {
  switch (d) {
    case Durability::full: return "full";
    case Durability::no_sync: return "no_sync";
  }
  return "?";
}

const char* to_string(HealthKind k) noexcept {
  switch (k) {
    case HealthKind::ok: return "ok";
    case HealthKind::corrupt: return "corrupt";
  }
  return "?";
}

StateStore::StateStore(Disk& disk, std::string dir, StoreOptions options)
    : disk_(&disk), dir_(std::move(dir)), options_(options) {}

std::string StateStore::snapshot_path() const { return join_path(dir_, kSnapshotName); }
std::string StateStore::journal_path() const { return join_path(dir_, kJournalName); }
std::string StateStore::lock_path() const { return join_path(dir_, kLockName); }

Result<StateStore> StateStore::open(Disk& disk, std::string dir, StoreOptions options) {
  if (dir.empty()) return make_error(ErrorCode::invalid_argument, "state directory is empty");
  if (options.journal_records_max < 1 || options.journal_bytes_max < 1) {
    return make_error(ErrorCode::invalid_argument, "journal bounds must be at least 1");
  }
  StateStore store(disk, std::move(dir), options);
  if (auto s = disk.create_dir(store.dir_); !s.ok()) return s.error();
  if (store.sync()) {
    // The directory entry itself must be durable before anything in it is.
    if (auto s = disk.fsync_dir(parent_dir(store.dir_)); !s.ok()) return s.error();
  }
  auto held = store.lock();
  if (!held.ok()) return std::move(held).error();
  const Status loaded = store.full_load();
  if (!loaded.ok() && !store.corrupt_) return loaded.error();  // the disk failed
  return store;
}

Result<DiskLockHandle> StateStore::lock() { return disk_->lock_exclusive(lock_path()); }

Status StateStore::mark_corrupt(const std::string& path, Error cause) {
  loaded_ = false;
  Error e = make_error(ErrorCode::corrupt,
                       fmt::format("state store is corrupt and fails closed (the file is kept "
                                   "untouched and no write replaces it until an operator "
                                   "repairs it): {}",
                                   cause.message),
                       locate(path, cause.where));
  corrupt_ = e;
  return e;
}

void StateStore::note_torn_tail(const std::optional<TornTail>& tail) {
  torn_tail_ = tail;
  if (!tail) return;
  const std::pair<std::uint64_t, std::uint64_t> key{journal_base_.value_or(0), tail->offset};
  if (last_torn_seen_ != key) {
    last_torn_seen_ = key;
    ++torn_tails_dropped_;
  }
}

void StateStore::remember_last_record(std::uint64_t offset, std::string_view bytes) {
  seen_end_ = JournalEnd{journal_base_.value_or(0), offset, offset + bytes.size(), crc32c(bytes)};
}

std::optional<Error> StateStore::journal_moved_back(std::string_view from_last,
                                                    std::uint64_t file_size) const {
  REHEARSE_ASSERT(seen_end_.has_value());
  const JournalEnd& seen = *seen_end_;
  const std::uint64_t length = seen.end - seen.last_offset;
  const std::string where = fmt::format("line {}", journal_line_ > 2 ? journal_line_ - 1 : 1);
  if (from_last.size() < length) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("the journal is {} bytes long, but this store last saw it end at "
                                  "byte {} (record {}): it was cut behind the store, and an append "
                                  "now would follow a hole",
                                  file_size, seen.end, journal_last_seq_),
                      where);
  }
  if (crc32c(from_last.substr(0, length)) != seen.crc) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("the journal's last record as this store saw it (bytes {}..{}, "
                                  "record {}) changed behind the store",
                                  seen.last_offset, seen.end, journal_last_seq_),
                      where);
  }
  return std::nullopt;
}

// Damage before the last record this store saw (journal_moved_back checks
// that one): every byte up to where the journal ended must still have the
// CRC-32C the store computed as it read and appended them. `journal` is the
// whole file, which journal_moved_back found at least that long.
std::optional<Error> StateStore::journal_changed_before(std::string_view journal) const {
  REHEARSE_ASSERT(journal.size() >= journal_end_);
  const std::uint32_t now = crc32c(journal.substr(0, journal_end_));
  if (now == journal_crc_) return std::nullopt;
  // Name the damage where the codec can locate it, as a full load would.
  auto scan = decode_journal(journal);
  if (!scan.ok()) return std::move(scan).error();
  return make_error(
      ErrorCode::corrupt,
      fmt::format("the journal's bytes 0..{} changed behind the store (CRC-32C {:08x}, "
                  "it saw {:08x}): an append now would follow damaged records",
                  journal_end_, now, journal_crc_),
      "line 1");
}

Status StateStore::keep_damaged_copy(std::string_view journal, std::uint64_t base,
                                     const TornTail& tail) {
  // The CRC-32C of the damaged bytes in the name: two damages that leave a
  // tail at the same offset of the same journal generation are two copies,
  // never one kept in place of the other (the second damage would go uncopied).
  const std::string copy = fmt::format("{}{}{}-{}-{:08x}", journal_path(), kDamagedInfix, base,
                                       tail.offset, crc32c(journal));
  auto present = disk_->read_range(copy, 0, 0);
  if (!present.ok()) return present.error();
  if (!present->has_value()) {
    if (auto s = write_atomically(copy, journal); !s.ok()) return s;
  }
  damaged_copy_ = copy;
  return {};
}

Status StateStore::full_load() {
  loaded_ = false;
  auto snapshot = disk_->read_file(snapshot_path());
  if (!snapshot.ok()) return snapshot.error();
  StateDocument document;
  const bool have_snapshot = snapshot->has_value();
  snapshot_bytes_ = have_snapshot ? (*snapshot)->size() : 0;
  snapshot_checked_.reset();
  if (have_snapshot) {
    auto decoded = decode_state(**snapshot);
    if (!decoded.ok()) return mark_corrupt(snapshot_path(), std::move(decoded).error());
    document = std::move(*decoded);
    snapshot_checked_ = disk_->stamp(snapshot_path());
  }
  auto journal = disk_->read_file(journal_path());
  if (!journal.ok()) return journal.error();

  std::uint64_t seq = document.journal_seq;
  journal_base_.reset();
  journal_end_ = 0;
  journal_line_ = 0;
  journal_records_ = 0;
  journal_last_seq_ = 0;
  std::optional<TornTail> tail;
  if (!journal->has_value()) seen_end_.reset();  // removed: an operator's repair
  if (journal->has_value()) {
    const std::string_view bytes = **journal;
    auto scan = decode_journal(bytes);
    if (!scan.ok()) return mark_corrupt(journal_path(), std::move(scan).error());
    if (seen_end_ && seen_end_->base == scan->base_seq) {
      // The journal this store followed: it must still hold what we saw.
      const std::string_view from_last =
          bytes.size() > seen_end_->last_offset ? bytes.substr(seen_end_->last_offset) : "";
      if (auto moved = journal_moved_back(from_last, bytes.size())) {
        return mark_corrupt(journal_path(), *moved);
      }
    }
    if (auto s = check_journal_against_snapshot(*scan, have_snapshot, document.journal_seq);
        !s.ok()) {
      return mark_corrupt(journal_path(), s.error());
    }
    if (scan->torn_tail) {
      // Keep the evidence before anything can replace the journal.
      if (auto s = keep_damaged_copy(bytes, scan->base_seq, *scan->torn_tail); !s.ok()) return s;
    }
    // Records the snapshot already holds (a crash between writing a new
    // snapshot and starting a new journal) are skipped, not applied twice.
    for (auto& record : scan->records) {
      if (record.seq <= document.journal_seq) continue;
      std::string id = record.state.job_id;
      document.jobs.insert_or_assign(std::move(id), std::move(record.state));
    }
    journal_base_ = scan->base_seq;
    journal_end_ = scan->valid_end;
    journal_crc_ = crc32c(bytes.substr(0, journal_end_));
    journal_line_ = 2 + scan->records.size();
    journal_records_ = scan->records.size();
    journal_last_seq_ = scan->records.empty() ? scan->base_seq : scan->records.back().seq;
    seq = std::max(seq, journal_last_seq_);
    const std::uint64_t last_offset = scan->records.empty() ? 0 : scan->records.back().offset;
    remember_last_record(last_offset, bytes.substr(last_offset, journal_end_ - last_offset));
    tail = std::move(scan->torn_tail);
  }
  fresh_start_ = !have_snapshot && !journal->has_value();
  if (sync() && (have_snapshot || journal->has_value())) {
    // What a load reads may exist only in the page cache: a process that
    // died between a write and its fsync, or between a rename and the
    // directory's fsync, leaves bytes and names the kernel has and the disk
    // may not. Appending to such a journal (or acknowledging updates on top
    // of such a state) would let a later power loss take back acknowledged
    // updates, so everything this load saw is made durable before use.
    if (have_snapshot) {
      if (auto s = disk_->fsync_file(snapshot_path()); !s.ok()) return s;
    }
    if (journal->has_value()) {
      if (auto s = disk_->fsync_file(journal_path()); !s.ok()) return s;
    }
    if (auto s = disk_->fsync_dir(dir_); !s.ok()) return s;
  }
  jobs_ = std::move(document.jobs);
  seq_ = seq;
  corrupt_.reset();
  note_torn_tail(tail);
  loaded_ = true;
  return {};
}

Status StateStore::refresh(Check check) {
  if (check == Check::whole_journal && loaded_ && !corrupt_ && journal_checked_ &&
      disk_->stamp(journal_path()) == journal_checked_) {
    return follow_journal(Check::from_last_record);  // nobody changed it since
  }
  journal_checked_.reset();
  Status s = follow_journal(check);
  if (s.ok() && check == Check::whole_journal && loaded_ && !corrupt_) {
    journal_checked_ = disk_->stamp(journal_path());
  }
  return s;
}

Status StateStore::follow_journal(Check check) {
  if (!loaded_ || corrupt_) return full_load();
  // Follow the journal from where we stopped. Anything unexpected (another
  // process compacted, a record we cannot continue from) falls back to a
  // full load, which applies the strict recovery rules from the start.
  auto head = disk_->read_range(journal_path(), 0, kJournalHeaderReadMax);
  if (!head.ok()) return head.error();
  if (!head->has_value()) {
    // Still no journal: no store has written since our load (every write
    // starts one), so the snapshot is the one we hold. A journal that has
    // gone away since is someone's repair: start over.
    return journal_base_ ? full_load() : Status{};
  }
  if (!journal_base_) return full_load();
  auto header = decode_journal_header(**head);
  if (!header.ok() || header->base_seq != *journal_base_) return full_load();
  // Same base: the same journal file, or one a compaction at the same
  // sequence started afresh; either way its records continue ours. Read from
  // our last record (a write: from the start): it must still be there,
  // whole, before anything follows.
  REHEARSE_ASSERT(seen_end_ && seen_end_->end == journal_end_);
  const std::uint64_t from = check == Check::whole_journal ? 0 : seen_end_->last_offset;
  auto rest = disk_->read_range(journal_path(), from, kReadToEnd);
  if (!rest.ok()) return rest.error();
  if (!rest->has_value()) return full_load();
  const std::string_view read = **rest;
  const std::uint64_t skip = seen_end_->last_offset - from;
  const std::string_view from_last = read.size() > skip ? read.substr(skip) : std::string_view();
  if (auto moved = journal_moved_back(from_last, from + read.size())) {
    return mark_corrupt(journal_path(), *moved);
  }
  if (check == Check::whole_journal) {
    if (auto changed = journal_changed_before(read)) return mark_corrupt(journal_path(), *changed);
  }
  const std::string_view after = read.substr(journal_end_ - from);
  if (after.empty()) {
    note_torn_tail(std::nullopt);
    return {};
  }
  auto scan = decode_journal_region(after, journal_end_, journal_line_, journal_last_seq_ + 1);
  if (!scan.ok()) return full_load();
  if (scan->torn_tail && (!torn_tail_ || torn_tail_->offset != scan->torn_tail->offset)) {
    return full_load();  // a new torn tail: its copy is kept there
  }
  for (auto& record : scan->records) {
    journal_last_seq_ = record.seq;
    if (record.seq <= seq_) continue;
    std::string id = record.state.job_id;
    jobs_.insert_or_assign(std::move(id), std::move(record.state));
    seq_ = record.seq;
  }
  if (!scan->records.empty()) {
    const JournalRecord& last = scan->records.back();
    remember_last_record(last.offset,
                         after.substr(last.offset - journal_end_, last.end - last.offset));
  }
  journal_records_ += scan->records.size();
  journal_line_ += scan->records.size();
  journal_crc_ = crc32c(after.substr(0, scan->valid_end - journal_end_), journal_crc_);
  journal_end_ = scan->valid_end;
  note_torn_tail(scan->torn_tail);
  return {};
}

Status StateStore::write_atomically(const std::string& path, std::string_view bytes) {
  const std::string temp = path + kTempSuffix;
  if (auto s = disk_->write_file(temp, bytes); !s.ok()) return s;
  if (sync()) {
    if (auto s = disk_->fsync_file(temp); !s.ok()) return s;
  }
  if (auto s = disk_->rename_file(temp, path); !s.ok()) return s;
  if (sync()) {
    if (auto s = disk_->fsync_dir(dir_); !s.ok()) return s;
  }
  return {};
}

Status StateStore::start_journal(std::uint64_t base_seq) {
  loaded_ = false;  // until the new journal is in place, the cache may be wrong
  const std::string header = encode_journal_header(base_seq);
  if (auto s = write_atomically(journal_path(), header); !s.ok()) return s;
  journal_base_ = base_seq;
  journal_end_ = header.size();
  journal_crc_ = crc32c(header);
  journal_line_ = 2;
  journal_records_ = 0;
  journal_last_seq_ = base_seq;
  remember_last_record(0, header);
  torn_tail_.reset();
  loaded_ = true;
  return {};
}

Status StateStore::compact_locked() {
  REHEARSE_ASSERT(loaded_ && !corrupt_);
  if (auto s = check_snapshot_before_fold(); !s.ok()) return s;
  StateDocument document;
  document.journal_seq = seq_;
  document.jobs = jobs_;
  const std::string bytes = encode_state(document);
  loaded_ = false;
  // Snapshot first: until the new journal replaces the old one, recovery
  // reads the new snapshot and skips the old journal's records it holds.
  if (auto s = write_atomically(snapshot_path(), bytes); !s.ok()) return s;
  snapshot_bytes_ = bytes.size();
  snapshot_checked_ = disk_->stamp(snapshot_path());
  return start_journal(seq_);
}

// refresh() follows the journal only, so the snapshot on disk may have been
// damaged since our last full load. It is about to be replaced: it must
// still decode, or the store fails closed and keeps the damaged file for an
// operator instead of silently writing over it (docs/semantics.md §5). A
// snapshot whose stamp is the one this store decoded or wrote is not read
// again (a disk that cannot vouch gives no stamp: then it is read).
Status StateStore::check_snapshot_before_fold() {
  if (snapshot_checked_ && disk_->stamp(snapshot_path()) == snapshot_checked_) return {};
  snapshot_checked_.reset();
  auto on_disk = disk_->read_file(snapshot_path());
  if (!on_disk.ok()) return on_disk.error();
  if (on_disk->has_value()) {
    auto decoded = decode_state(**on_disk);
    if (!decoded.ok()) return mark_corrupt(snapshot_path(), std::move(decoded).error());
  }
  return {};
}

Result<JobState> StateStore::read(const std::string& job_id) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = lock();
  if (!held.ok()) return std::move(held).error();
  if (auto s = refresh(); !s.ok()) return s.error();
  const auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    JobState fresh;
    fresh.job_id = job_id;
    return fresh;
  }
  return it->second;
}

Result<std::map<std::string, JobState>> StateStore::read_all() {
  auto held = lock();
  if (!held.ok()) return std::move(held).error();
  if (auto s = refresh(); !s.ok()) return s.error();
  return jobs_;
}

Status StateStore::update(const std::string& job_id, const std::function<void(JobState&)>& mutate) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = lock();
  if (!held.ok()) return std::move(held).error();
  if (auto s = refresh(Check::whole_journal); !s.ok()) return s;

  JobState current;
  current.job_id = job_id;
  if (const auto it = jobs_.find(job_id); it != jobs_.end()) current = it->second;
  JobState next = current;
  mutate(next);
  if (next.job_id != job_id) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("an update of job \"{}\" must not change its id to \"{}\"",
                                  job_id, next.job_id),
                      "/job_id");
  }
  if (auto s = validate_job_state(next); !s.ok()) {
    Error e = s.error();
    e.message = fmt::format("refusing to store job \"{}\": {}", job_id, e.message);
    return e;
  }
  if (next == current) return {};  // nothing to write

  const std::uint64_t seq = seq_ + 1;
  const std::string record = encode_journal_record(seq, next);
  // Read the record back before writing it: what the cache keeps is exactly
  // what a restart will decode (text that was not UTF-8 is stored replaced).
  auto check = decode_journal_region(record, 0, 1, seq);
  REHEARSE_ASSERT(check.ok());
  REHEARSE_ASSERT(check->records.size() == 1);
  REHEARSE_ASSERT(!check->torn_tail);
  JobState stored = std::move(check->records.front().state);
  REHEARSE_ASSERT(stored.job_id == job_id);

  // Appending needs a journal whose last record is ours and holds no torn
  // tail; otherwise fold everything into a snapshot and start a clean one.
  if (!journal_base_ && !torn_tail_) {
    if (auto s = start_journal(seq_); !s.ok()) return s;
  } else if (!journal_base_ || torn_tail_ || journal_last_seq_ != seq_) {
    if (auto s = compact_locked(); !s.ok()) return s;
  }

  loaded_ = false;  // if the append fails half-way, the next operation reloads
  if (auto s = disk_->append_file(journal_path(), record); !s.ok()) return s;
  if (sync()) {
    if (auto s = disk_->fsync_file(journal_path()); !s.ok()) return s;
  }
  loaded_ = true;
  // Checked whole by the refresh above (or written here), then appended to.
  journal_checked_ = disk_->stamp(journal_path());
  jobs_.insert_or_assign(job_id, std::move(stored));
  seq_ = seq;
  journal_last_seq_ = seq;
  remember_last_record(journal_end_, record);
  journal_crc_ = crc32c(record, journal_crc_);
  journal_end_ += record.size();
  ++journal_line_;
  ++journal_records_;

  if (journal_due_for_fold()) {
    // The update is durable already; a failed compaction must not make the
    // caller repeat it (a repeated increment would count twice).
    if (auto s = compact_locked(); !s.ok()) {
      compaction_error_ = s.error();
    } else {
      compaction_error_.reset();
    }
  }
  return {};
}

// The fold bounds of StoreOptions: the fixed ones, or the snapshot's own
// size when that is larger (a fold rewrites every job).
bool StateStore::journal_due_for_fold() const noexcept {
  const std::uint64_t jobs = jobs_.size();
  return journal_records_ >= std::max(options_.journal_records_max, jobs) ||
         journal_end_ >= std::max(options_.journal_bytes_max, snapshot_bytes_);
}

Status StateStore::compact() {
  auto held = lock();
  if (!held.ok()) return std::move(held).error();
  if (auto s = refresh(Check::whole_journal); !s.ok()) return s;
  auto s = compact_locked();
  if (s.ok()) compaction_error_.reset();
  return s;
}

StoreHealth StateStore::health() const {
  StoreHealth h;
  h.kind = corrupt_ ? HealthKind::corrupt : HealthKind::ok;
  h.error = corrupt_;
  h.torn_tail = torn_tail_;
  h.damaged_copy = damaged_copy_;
  h.fresh_start = fresh_start_;
  h.torn_tails_dropped = torn_tails_dropped_;
  h.compaction_error = compaction_error_;
  return h;
}

}  // namespace rehearse
