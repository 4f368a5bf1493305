// The world's own readers of the durable files the core keeps (the monitors
// judge what the simulated world records, never the core's words).
//
// After the simulated disk made bytes durable (an fsync, or a directory fsync
// that makes a rename durable), the world reads the durable bytes with these
// minimal readers and records what changed as trace events of its own
// (docs/trace-events.md): `durable_job_state` (the state store) and
// `durable_delivery` (the delivery ledger), as it already does for the
// pipeline store (`durable_stage`). They are NOT the core's codecs
// (model/state_codec, model/delivery_ledger): a codec that misread a field
// would otherwise hide its own bug. They read only the fields the monitors
// use, check the journal's frames and CRC-32C themselves, and record nothing
// for bytes they cannot read (a damaged store is state_durable's business).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim {

// CRC-32C (Castagnoli), the journal's frame checksum (docs/state-file.md).
std::uint32_t witness_crc32c(std::string_view bytes);

// A job record of the state store reduced to the facts the monitors use:
// retry_status, retry_count, failure_class, next_action, next_run_at,
// next_retry_at, last_slot, policy_invalid (bool), and `slots` (per_slot
// budgets: slot instant -> retry_status, retry_count, failure_class,
// next_retry_at, next_action, stalled_count). Null when `record` is not an
// object with a string `job_id`.
nlohmann::json job_state_facts(const nlohmann::json& record);
// Whether `record` is an object with a string `job_id` (what has facts).
bool is_job_record(const nlohmann::json& record);

// An item of a pipeline store's durable file (model/pipeline_store.hpp) as
// the world reads it: `issue` and `stage` (both required), the reconcile
// error (empty when none) and, as written, the two instants a cycle's batch
// is chosen by (`next_attempt_at`, `updated_at`; empty when absent).
struct PipelineItemFacts {
  std::string issue;
  std::string stage;
  std::string error;
  std::string next_attempt_at;
  std::string updated_at;
};
// The items of a durable pipeline file, in file order; nothing for bytes that
// do not parse (the core fails such a cycle closed).
std::vector<PipelineItemFacts> pipeline_item_facts(const std::string& bytes);

// The state store directory (snapshot + journal) as the world reads it.
class DurableStateReader {
 public:
  explicit DurableStateReader(std::string dir);

  // The durable journal grew (an fsync of it): read only its new records when
  // it still starts with the header read before, otherwise everything.
  // `full`: read the snapshot and the journal again (a directory fsync made a
  // rename durable: a compaction or a new journal). Returns the jobs whose
  // facts changed since the last call, in job-id order.
  std::vector<std::pair<std::string, nlohmann::json>> changed(const SimDisk& disk, bool full);

  // The `durable_job_state` events a disk event calls for (the journal's
  // fsync: its new records; the directory's fsync: everything), at `now`.
  std::vector<TraceEvent> events_after(const SimDisk& disk, const std::string& disk_event_type,
                                       const std::string& path, TimeMs now);

  const std::string& dir() const noexcept { return dir_; }
  std::string journal_path() const;
  // How many times the snapshot was parsed (a cost gauge for tests).
  std::uint64_t snapshot_parses() const noexcept { return snapshot_parses_; }

 private:
  bool load_all(const SimDisk& disk);
  bool parse_snapshot(const SimDisk& disk);
  static nlohmann::json parse_snapshot_jobs(
      const std::string& text, std::vector<std::pair<std::string, nlohmann::json>>& jobs);
  void read_journal(const SimDisk& disk);
  bool read_journal_from(const std::string& bytes, std::size_t from);

  void note(const std::string& id, nlohmann::json facts);

  std::string dir_;
  // Per job, its facts as last recorded, as compact JSON text (a few hundred
  // bytes, where a JSON tree takes kilobytes): between two changed() calls,
  // also what the durable files hold for every job not in pending_.
  std::map<std::string, std::string> held_;
  // Jobs read since the last changed() whose facts differ from held_, with
  // their facts and that text: changed() reports these alone (O(change),
  // not O(fleet)).
  std::map<std::string, std::pair<nlohmann::json, std::string>> pending_;
  std::uint64_t snapshot_seq_ = 0;
  std::string header_;      // the journal header line read last ("" none)
  std::size_t offset_ = 0;  // journal bytes read (after the last whole record)
  bool readable_ = false;   // the last full read succeeded
  // The snapshot bytes last parsed, and whether a journal record has been
  // applied over them since: when neither changed, a full read need not parse
  // the snapshot again (a compaction syncs the directory twice: once for
  // the new snapshot, once for the new journal; the second read is the
  // journal's alone).
  std::optional<SimDisk::DurableIdentity> snapshot_read_;
  bool journal_applied_ = false;
  std::uint64_t snapshot_parses_ = 0;
};

// The tail of a state journal (docs/state-file.md, rule 6) as the world reads
// it: the bytes from the first record that is not intact (no newline, a
// malformed frame, a checksum that fails) to the end of the file. `torn`
// when it can be one interrupted append: no intact record starts after a
// newline inside it, and when it begins with an intact "<seq> <length> "
// prefix it is no longer than the record that prefix announces; otherwise
// the journal is corrupt (a bad record before the tail).
struct JournalTail {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool torn = false;
};
// Nullopt when the bytes after the header are whole records, or when the
// header line itself is missing or cut (no record can be told apart).
std::optional<JournalTail> journal_tail(std::string_view bytes);
// A journal header line followed only by whole records: what a cut at a
// record boundary leaves (records lost that no reader of the file can see).
bool journal_records_whole(std::string_view bytes);

// The world's witness of torn journal tails in one state store directory
// (docs/trace-events.md): it follows the journal the store reads (the live
// bytes) and the files the store keeps beside it (the durable ones), and records
//   - `journal_tail_found` when the journal has a tail after its last intact
//     record (looked for after a torn write, a corruption, a crash, a boot);
//   - `journal_tail_kept` when a durable file of the directory (name and
//     bytes) is a byte-for-byte copy of that damaged journal;
//   - `journal_tail_gone` when the journal no longer begins with the damaged
//     bytes (replaced, rewritten or removed by a process), with `kept_as`,
//     the durable copies present at that instant.
// A crash or a corruption that changes the journal starts a new reading: the
// world, not a process, changed the bytes.
class JournalTailWatch {
 public:
  explicit JournalTailWatch(std::string dir);

  // The events a trace event calls for (disk events, `store_corrupt_injected`,
  // `process_boot`), at `now`.
  std::vector<TraceEvent> events_after(const SimDisk& disk, const TraceEvent& event, TimeMs now);

  const std::string& journal_path() const noexcept { return journal_; }
  // The journal holds a torn tail the world found and no process has kept
  // a copy of (the core's report of it): no process has seen it yet.
  bool unreported_tail() const noexcept { return damaged_ && damaged_->kept.empty(); }

 private:
  struct Damaged {
    std::string bytes;  // the whole journal as it was found
    JournalTail tail;
    std::string digest;          // CRC-32C of bytes, 8 hex digits
    std::set<std::string> kept;  // copies recorded so far
  };
  void look_for_tail(const SimDisk& disk, TimeMs now, std::vector<TraceEvent>& out);
  void look_for_copies(const SimDisk& disk, TimeMs now, std::vector<TraceEvent>& out);
  void check_gone(const SimDisk& disk, TimeMs now, std::vector<TraceEvent>& out);
  std::vector<std::string> durable_copies(const SimDisk& disk) const;
  TraceEvent fact(const char* type, TimeMs now) const;

  std::string dir_;
  std::string journal_;
  std::optional<Damaged> damaged_;
};

// One job's delivery ledger file (`<job>.ledger.json`) reduced to the facts
// the monitors use, per slot (ISO instant): `delivered_to` (targets whose
// delivery is recorded), `guard` (the send guard consumed), `verdict` (the
// slot-complete marker's, or null), `outbox` (a decided delivery is held).
// Empty when the bytes are not such a file.
std::optional<std::pair<std::string, std::map<std::string, nlohmann::json>>> ledger_facts(
    std::string_view bytes);

// The same facts from a ledger journal (`<job>.ledger.journal`: a header line
// naming the job, then one line per change, "<crc32c, 8 hex> <the slot's whole
// record as JSON>"), later lines winning. A line whose checksum fails (a torn
// append) ends the reading: nothing after it was acknowledged.
std::optional<std::pair<std::string, std::map<std::string, nlohmann::json>>> ledger_journal_facts(
    std::string_view bytes);

// The job queue's file (`queue.json` of DiskJobQueue, docs/worker.md "The
// durable queue on a disk") as the world reads it: the ids of the entries and
// of the outbox messages its document holds, read only when the line after
// the document is its CRC-32C (`crc32c=<8 hex>`). Nullopt for bytes that are
// not such a file. Not the core's codec (DiskJobQueue::decode).
struct QueueFileFacts {
  std::vector<std::uint64_t> entries;  // in file order
  std::vector<std::uint64_t> outbox;
};
std::optional<QueueFileFacts> queue_file_facts(std::string_view bytes);

}  // namespace rehearse::sim
