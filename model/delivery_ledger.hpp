// DeliveryLedger: the durable send guard and slot-complete marker of group
// jobs, per (job, slot) (docs/semantics.md §6, docs/group-jobs.md).
//
// Runs over any Disk (PosixDisk in production, the simulated disk in sim/).
// Per job, in the ledger directory (the job id percent-encoded where it is
// not a plain file-name character), all under the directory's lock file
// `delivery_ledger.lock`:
//   <job>.ledger.json     the snapshot: every record as of the last fold
//                         (format 1, checksummed; a ledger written before the
//                         journal existed is a snapshot alone and reads as is)
//   <job>.ledger.journal  the records changed since, one framed, checksummed
//                         line per change (the whole record of one slot),
//                         appended and fsynced
// so an update costs the size of the change, not of the job's history. The
// first write of a job writes its snapshot (temp file, fsync, rename, fsync
// of the directory); later ones append to the journal. Once the journal holds
// more bytes than the snapshot (and journal_bytes_min), it is folded BEFORE
// the change: the snapshot is rewritten with the current records, then a new
// journal starts with the change, each file atomically. A crash between the
// two leaves the new snapshot and the old journal, whose records replay onto
// it to the same records (each record is a slot's whole state, the last one
// of a slot wins, and pruning is redone on load), so no step can lose or
// invent a record. The format is in docs/group-jobs.md.
//
// Per slot the ledger keeps, in the order a run writes them:
//   outbox        the items of the delivery the run decided to send, written
//                 before the first send, so that a retry after a partial or
//                 failed delivery resends the same content to the targets that
//                 still miss it instead of generating it again;
//   delivered_to  each target that accepted the delivery, recorded right after
//                 it did (a per-target send guard: a retry never sends to a
//                 recorded target again);
//   guard_at      the slot's send guard, consumed once every target has the
//                 delivery (or at once for a skipped slot);
//   marked_at     the slot-complete marker with its verdict (delivered or
//                 skipped); the outbox is dropped then.
// A marker never exists without the guard (checked on read and on write).
//
// Failure model. Missing files mean nothing recorded. A snapshot or journal
// that is present but unparsable, schema-invalid, inconsistent or fails its
// checksum is CORRUPT: every operation on that job fails with
// ErrorCode::corrupt and no file is replaced, so a run fails visibly instead
// of risking a duplicate delivery (a lost guard) or a silent skip (a forged
// marker). The one exception is a torn LAST journal line (a crash mid-append:
// no newline, or a checksum that fails): that change was never acknowledged,
// so it is dropped, and the next write folds the journal, which removes it.
// Every record written is decoded back before it is written (what a restart
// will read is what was meant), and the fold checks that the snapshot it
// replaces still decodes.
//
// Cache. A ledger object keeps each job's records in memory and, before every
// operation, checks that the files are still the ones it last saw: the
// snapshot's size and first bytes, and the journal's end (its last record's
// bytes and checksum, and nothing after them). Anything else (another
// process wrote, an operator repaired or damaged a file) makes it load the
// job's files again with every check above. Damage in the middle of a
// snapshot that keeps its size and first bytes is found at the next full
// load or fold, not before (as for the state store's snapshot).
//
// Bounds (DeliveryLedgerOptions; defaults below). Completed slots: the
// completed_slots_kept (256) most recently completed
// (by marked_at) are kept, older ones are pruned on the next write; a re-run of
// a slot comes soon after it completes (a stalled run, a queue that had not
// recorded the success yet), never hundreds of completions later. Open slots
// (not yet marked) are never pruned, since dropping one could cause a second
// delivery; more than open_slots_max (1024) of them is refused with an
// error. These bounds also bound a snapshot, hence the cost of a fold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/disk.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse {

enum class SlotVerdict : unsigned char { delivered, skipped };
const char* to_string(SlotVerdict verdict) noexcept;
std::optional<SlotVerdict> parse_slot_verdict(std::string_view name) noexcept;

// Named apart from the retry machine's per-slot record (model/job_state.hpp
// `SlotRecord`): both describe a slot, from two sides, and both are linked into
// one program.
struct DeliverySlot {
  TimeMs slot = 0;
  // Items of the delivery decided for this slot (a JSON array), while the
  // slot is open.
  std::optional<nlohmann::json> outbox;
  std::optional<TimeMs> outbox_at;
  std::vector<std::string> delivered_to;  // sorted, unique
  std::optional<TimeMs> guard_at;
  std::optional<TimeMs> marked_at;
  std::optional<SlotVerdict> verdict;  // set with marked_at

  bool guard_consumed() const noexcept { return guard_at.has_value(); }
  bool complete() const noexcept { return marked_at.has_value(); }
  bool has_delivered_to(std::string_view target) const;
  bool empty() const noexcept { return !outbox && delivered_to.empty() && !guard_at && !marked_at; }
  bool operator==(const DeliverySlot&) const = default;
};

struct DeliveryLedgerOptions {
  std::size_t completed_slots_kept = 256;
  std::size_t open_slots_max = 1024;
  // The journal is folded into the snapshot once it holds more bytes than
  // the snapshot and than this: each fold costs about what the appends since
  // the last one did.
  std::uint64_t journal_bytes_min = 4096;
};

class DeliveryLedger {
 public:
  static constexpr std::size_t kTargetsMax = 1000;
  static constexpr const char* kLockName = "delivery_ledger.lock";
  static constexpr const char* kFileSuffix = ".ledger.json";
  static constexpr const char* kJournalSuffix = ".ledger.journal";
  static constexpr const char* kTempSuffix = ".tmp";
  static constexpr int kFormat = 1;

  // Creates the directory if missing (and makes its entry durable).
  static Result<DeliveryLedger> open(Disk& disk, std::string dir,
                                     DeliveryLedgerOptions options = {});

  // The slot's record; an empty record when nothing was recorded.
  Result<DeliverySlot> read(const std::string& job_id, TimeMs slot);
  // Every record of the job, by slot.
  Result<std::vector<DeliverySlot>> read_job(const std::string& job_id);

  // Writes the slot's outbox (a JSON array of items). Refused when the slot
  // already has an outbox or its guard is consumed (a run must resume the
  // existing outbox instead).
  Status write_outbox(const std::string& job_id, TimeMs slot, nlohmann::json items, TimeMs at);
  // Records that `target` accepted the slot's delivery (idempotent).
  Status record_delivery(const std::string& job_id, TimeMs slot, const std::string& target,
                         TimeMs at);
  // Consumes the slot's send guard (idempotent: the first time is kept).
  Status consume_guard(const std::string& job_id, TimeMs slot, TimeMs at);
  // Marks the slot complete; requires the guard. Drops the outbox and prunes
  // old completed slots. Marking a marked slot again keeps the first marker.
  Status mark_complete(const std::string& job_id, TimeMs slot, SlotVerdict verdict, TimeMs at);

  const std::string& dir() const noexcept { return dir_; }
  const DeliveryLedgerOptions& options() const noexcept { return options_; }
  std::string path_for(const std::string& job_id) const;  // the snapshot
  std::string journal_path_for(const std::string& job_id) const;
  std::string lock_path() const;

  // The file-name form of a job id: letters, digits, '_', '-', '.' and '@'
  // stay, every other byte becomes %XX.
  static std::string encode_job_id(std::string_view job_id);

 private:
  DeliveryLedger(Disk& disk, std::string dir, DeliveryLedgerOptions options)
      : disk_(&disk), dir_(std::move(dir)), options_(options) {}

  // One job's records and what this object last saw of its files.
  struct JobCache {
    std::map<TimeMs, DeliverySlot> slots;
    std::set<std::pair<TimeMs, TimeMs>> completed;  // (marked_at, slot), for pruning
    std::uint64_t snapshot_size = 0;                // 0: no snapshot
    std::string snapshot_head;                      // its first kHeadBytes bytes
    bool journal = false;                           // a journal file exists
    std::uint64_t generation = 0;                   // the journal header's
    std::uint64_t journal_end = 0;                  // after the last intact record
    std::uint64_t last_offset = 0;                  // the last record (0: the header)
    std::uint32_t last_crc = 0;                     // crc32c of [last_offset, journal_end)
    bool torn = false;                              // a torn line follows journal_end
  };
  static constexpr std::uint64_t kHeadBytes = 96;

  template <typename Mutate>
  Status update(const std::string& job_id, TimeMs slot, Mutate mutate);
  Result<JobCache*> current(const std::string& job_id);
  Result<bool> unchanged(const std::string& job_id, const JobCache& cache);
  Result<JobCache> load(const std::string& job_id);
  Status make_durable(bool snapshot, bool journal, const std::string& job_id);
  Status check_bounds(const std::string& job_id, const JobCache& cache,
                      const DeliverySlot& changed) const;
  Status write_change(const std::string& job_id, JobCache& cache, const DeliverySlot& changed);
  Status write_snapshot(const std::string& job_id, JobCache& cache);
  Status start_journal(const std::string& job_id, JobCache& cache, std::string_view record);
  Status append_record(const std::string& job_id, JobCache& cache, std::string_view record);
  Status write_atomically(const std::string& path, std::string_view bytes);
  void prune(JobCache& cache) const;

  Disk* disk_;
  std::string dir_;
  DeliveryLedgerOptions options_;
  std::map<std::string, JobCache> cache_;  // by job id
};

// The file format, exposed for tests and tools (docs/group-jobs.md).
std::string encode_ledger(const std::string& job_id, const std::vector<DeliverySlot>& slots);
// The snapshot's "checksum" for its "slots" array (FNV-1a 64 of the array's
// canonical dump, as "fnv1a64:<16 hex>").
std::string ledger_checksum(const nlohmann::json& slots);
// Strict: unknown keys, bad instants, unsorted slots, a marker without a
// guard, a checksum mismatch... are errors (ErrorCode::corrupt).
Result<std::vector<DeliverySlot>> decode_ledger(std::string_view bytes, const std::string& job_id);
// One journal line: "<crc32c of the JSON, 8 hex> <the slot's record as
// compact JSON>\n", and the journal's first line, which names the job.
std::string encode_ledger_record(const DeliverySlot& slot);
std::string encode_ledger_journal_header(const std::string& job_id, std::uint64_t generation);
struct LedgerJournal {
  std::uint64_t generation = 0;
  std::vector<DeliverySlot> records;   // in file order (a slot may repeat: the last wins)
  std::vector<std::uint64_t> offsets;  // of each record
  std::uint64_t valid_end = 0;         // after the last intact record
  bool torn = false;                   // a torn last line was dropped
};
// Strict but for a torn last line (dropped, reported in `torn`).
Result<LedgerJournal> decode_ledger_journal(std::string_view bytes, const std::string& job_id);
// Consistency of a set of records (what decode and every write check). The
// open-slot bound is checked on writes only (a file written under a larger
// bound still reads).
Status check_slot_records(const std::vector<DeliverySlot>& slots);

}  // namespace rehearse
