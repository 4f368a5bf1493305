// DeliveryLedger: the durable send guard and slot-complete marker of group
// jobs, per (job, slot) (docs/semantics.md §6, docs/group-jobs.md).
//
// Runs over any Disk (PosixDisk in production, the simulated disk in sim/).
// One file per job in the ledger directory, `<job>.ledger.json` (the job id
// percent-encoded where it is not a plain file-name character), rewritten
// atomically on every change: temp file, fsync, rename, fsync of the
// directory, all under the directory's lock file `delivery_ledger.lock`.
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
// Failure model. A missing file means nothing recorded. A file that is
// present but unparsable, schema-invalid, inconsistent or fails its checksum
// is CORRUPT: every operation on that job fails with ErrorCode::corrupt and the
// file is never replaced, so a run fails visibly instead of risking a duplicate
// delivery (a lost guard) or a silent skip (a forged marker).
//
// Bounds (DeliveryLedgerOptions; defaults below). Completed slots: the
// completed_slots_kept (256) most recently completed
// (by marked_at) are kept, older ones are pruned on the next write; a re-run of
// a slot comes soon after it completes (a stalled run, a queue that had not
// recorded the success yet), never hundreds of completions later. Open slots
// (not yet marked) are never pruned, since dropping one could cause a second
// delivery; more than open_slots_max (1024) of them is refused with an
// error. Every update rewrites the job's file, so these bounds also bound the
// cost of one update.
#pragma once

#include <cstddef>
#include <optional>
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
  bool empty() const noexcept {
    return !outbox && delivered_to.empty() && !guard_at && !marked_at;
  }
  bool operator==(const DeliverySlot&) const = default;
};

struct DeliveryLedgerOptions {
  std::size_t completed_slots_kept = 256;
  std::size_t open_slots_max = 1024;
};

class DeliveryLedger {
 public:
  static constexpr std::size_t kTargetsMax = 1000;
  static constexpr const char* kLockName = "delivery_ledger.lock";
  static constexpr const char* kFileSuffix = ".ledger.json";
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
  std::string path_for(const std::string& job_id) const;
  std::string lock_path() const;

  // The file-name form of a job id: letters, digits, '_', '-', '.' and '@'
  // stay, every other byte becomes %XX.
  static std::string encode_job_id(std::string_view job_id);

 private:
  DeliveryLedger(Disk& disk, std::string dir, DeliveryLedgerOptions options)
      : disk_(&disk), dir_(std::move(dir)), options_(options) {}

  struct JobFile {
    std::string job_id;
    std::vector<DeliverySlot> slots;  // ascending by slot
  };
  template <typename Mutate>
  Status update(const std::string& job_id, TimeMs slot, Mutate mutate);
  Result<JobFile> load(const std::string& job_id);
  Status store(const JobFile& file);

  Disk* disk_;
  std::string dir_;
  DeliveryLedgerOptions options_;
};

// The file format, exposed for tests and tools (docs/group-jobs.md).
std::string encode_ledger(const std::string& job_id, const std::vector<DeliverySlot>& slots);
// Strict: unknown keys, bad instants, unsorted slots, a marker without a
// guard, a checksum mismatch... are errors (ErrorCode::corrupt).
Result<std::vector<DeliverySlot>> decode_ledger(std::string_view bytes, const std::string& job_id);
// Consistency of a set of records (what decode and every write check). The
// open-slot bound is checked on writes only (a file written under a larger
// bound still reads).
Status check_slot_records(const std::vector<DeliverySlot>& slots);

}  // namespace rehearse
