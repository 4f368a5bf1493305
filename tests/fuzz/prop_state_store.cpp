// The state store's loader and incremental refresh after arbitrary appends
// (docs/fuzzing.md, target `state_store`). Input: store options and a few
// updates (valid job states drawn from the bytes), then two chunks of bytes
// appended to the journal behind the store's back, each followed by a read.
//  - every read either fails as corrupt, exactly when the snapshot or the
//    journal on disk does not decode, or succeeds with exactly the jobs the
//    decoders give (snapshot, then journal records after its sequence);
//  - no committed record is lost: a committed job reads back as committed
//    unless an appended intact record for it follows (a job committed in the
//    default state may be absent: that is how the store keeps it);
//  - the same holds for a store opened afresh, and an update after the reads
//    succeeds and is read back by a fresh store.
#include <map>
#include <optional>
#include <string>

#include "model/state_codec.hpp"
#include "model/state_store.hpp"
#include "tests/fuzz/job_state_bytes.hpp"
#include "tests/fuzz/mem_disk.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

using Jobs = std::map<std::string, JobState>;
constexpr const char* kDir = "store";

// What the decoders say the files hold; nullopt when either is refused.
// `appended` gets the ids of intact records after sequence `committed_seq`.
std::optional<Jobs> decoded_files(MemDisk& disk, std::uint64_t committed_seq,
                                  std::map<std::string, bool>& appended) {
  StateDocument doc;
  const auto snapshot = disk.files.find(join_path(kDir, StateStore::kSnapshotName));
  if (snapshot != disk.files.end()) {
    Result<StateDocument> decoded = decode_state(snapshot->second);
    if (!decoded.ok()) return std::nullopt;
    doc = std::move(*decoded);
  }
  const auto journal = disk.files.find(join_path(kDir, StateStore::kJournalName));
  if (journal != disk.files.end()) {
    Result<JournalScan> scan = decode_journal(journal->second);
    if (!scan.ok()) return std::nullopt;
    for (JournalRecord& r : scan->records) {
      if (r.seq > committed_seq) appended[r.state.job_id] = true;
      if (r.seq > doc.journal_seq) doc.jobs.insert_or_assign(r.state.job_id, std::move(r.state));
    }
  }
  return doc.jobs;
}

// What the store reads for a job it holds nothing of: an update to exactly
// this state writes nothing (StateStore::update, "nothing to write").
JobState fresh_state(const std::string& id) {
  JobState state;
  state.job_id = id;
  return state;
}

void check_read(StateStore& store, MemDisk& disk, const Jobs& committed,
                std::uint64_t committed_seq, const char* who) {
  std::map<std::string, bool> appended;
  const std::optional<Jobs> expected = decoded_files(disk, committed_seq, appended);
  const Result<Jobs> all = store.read_all();
  if (!expected) {
    REHEARSE_FUZZ_CHECK(!all.ok() && all.error().code == ErrorCode::corrupt,
                        std::string(who) + ": files the decoders refuse were read");
    REHEARSE_FUZZ_CHECK(!store.health().ok(), who);
    return;
  }
  REHEARSE_FUZZ_CHECK(all.ok(), std::string(who) + ": " + all.error().describe());
  REHEARSE_FUZZ_CHECK(*all == *expected, std::string(who) + ": jobs differ from the files");
  for (const auto& [id, state] : committed) {
    if (appended.count(id) != 0) continue;
    const auto it = all->find(id);
    if (it == all->end() && state == fresh_state(id)) continue;  // stored as absence
    REHEARSE_FUZZ_CHECK(it != all->end() && it->second == state, std::string(who) + ": lost " + id);
  }
}

StoreOptions options_from(Input& in) {
  StoreOptions options;
  options.durability = Durability::no_sync;
  options.journal_records_max = 1 + in.byte() % 8;
  return options;
}

}  // namespace

void check_state_store(std::string_view input) {
  Input in(input);
  MemDisk disk;
  const StoreOptions options = options_from(in);
  Result<StateStore> store = StateStore::open(disk, kDir, options);
  REHEARSE_FUZZ_CHECK(store.ok(), store.error().describe());
  Jobs committed;
  for (std::uint8_t n = in.byte() % 6; n > 0; --n) {
    const std::string id = std::string("job-") + static_cast<char>('a' + in.byte() % 3);
    const JobState next = job_state_from(in, id);
    const Status s = store->update(id, [&next](JobState& state) { state = next; });
    REHEARSE_FUZZ_CHECK(s.ok(), s.error().describe());
    committed[id] = next;
  }
  const std::uint64_t committed_seq = store->sequence();
  const std::string journal = store->journal_path();
  const std::string_view first = in.take(in.byte());
  (void)disk.append_file(journal, first);
  check_read(*store, disk, committed, committed_seq, "same store, first append");
  (void)disk.append_file(journal, in.rest());
  check_read(*store, disk, committed, committed_seq, "same store, second append");
  Result<StateStore> fresh = StateStore::open(disk, kDir, options);
  REHEARSE_FUZZ_CHECK(fresh.ok(), fresh.error().describe());
  check_read(*fresh, disk, committed, committed_seq, "fresh store");
  if (!fresh->health().ok()) return;
  JobState last = job_state_from(in, "job-z");
  last.retry_count = 7;
  const Status s = fresh->update("job-z", [&last](JobState& state) { state = last; });
  REHEARSE_FUZZ_CHECK(s.ok(), s.error().describe());
  Result<StateStore> reader = StateStore::open(disk, kDir, options);
  const Result<Jobs> all = reader->read_all();
  REHEARSE_FUZZ_CHECK(all.ok() && all->count("job-z") == 1 && all->at("job-z") == last,
                      "the update after the appends was not read back");
}

}  // namespace rehearse::fuzz
