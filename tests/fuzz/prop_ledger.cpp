// The delivery ledger's decoders and the ledger over files of arbitrary
// content (docs/fuzzing.md, target `ledger`). Input: one byte choosing an
// operation, one flags byte (bit 0: re-seal the checksums, so that mutations
// reach past them into the record checks; bit 1: no snapshot file when a
// journal is given), then the snapshot, and optionally, each after a NUL
// byte, the journal and bytes appended to the journal later.
//  - the snapshot decoder refuses with ErrorCode::corrupt only; an accepted
//    snapshot has consistent records (check_slot_records), ascending slots,
//    and decode(encode(slots)) == slots with encoding a fixed point;
//  - the journal decoder refuses with corrupt only, at a position (the job's
//    line number: the header, or a line that is not the last); an accepted
//    journal has its records at ascending offsets, each a whole line, and a
//    torn tail exactly when its valid end is not the file's end, which holds
//    no newline but a final one; header + re-encoded records decode to the
//    same generation and records, and re-encode to the same bytes;
//  - the ledger reads what replaying the decoded files gives (snapshot, then
//    the journal's records, the last of a slot winning, completed slots pruned
//    beyond the bound; corrupt when a file is refused or the journal has no
//    snapshot), first, and again after arbitrary bytes are appended to the
//    journal behind its back (its cache must notice), as a fresh ledger does;
//  - an operation on refused files fails as corrupt and leaves both files
//    byte for byte; on accepted ones it either fails and leaves them, or
//    succeeds, leaves files that read back, its effect, and every other open
//    slot unchanged.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/state_codec.hpp"  // crc32c
#include "tests/fuzz/mem_disk.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

using Slots = std::vector<DeliverySlot>;
constexpr const char* kJob = "job-1";
constexpr TimeMs kNow = 32'503'680'000'000;  // 3000-01-01: after every fuzzed marker

// The ledger's files as the input gives them (nullopt: no such file).
struct Files {
  std::optional<std::string> snapshot;
  std::optional<std::string> journal;
  std::string appended;
};

std::string resealed_snapshot(std::string_view bytes) {
  nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("slots")) return std::string(bytes);
  doc["checksum"] = ledger_checksum(doc["slots"]);
  return doc.dump(1) + "\n";
}

// Every framed line ("<8 hex> <body>") gets the crc32c of its body.
std::string resealed_journal(std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const std::size_t end = bytes.find('\n');
    std::string_view line = bytes.substr(0, end);
    if (line.size() >= 10 && line[8] == ' ') {
      out += fmt::format("{:08x}", crc32c(line.substr(9)));
      line.remove_prefix(8);
    }
    out += line;
    if (end == std::string_view::npos) break;
    out += '\n';
    bytes.remove_prefix(end + 1);
  }
  return out;
}

// The parts of `rest` between NUL bytes: the snapshot, then (if there is a
// NUL) the journal, then (if there is another) the bytes appended later.
Files files_from(std::uint8_t flags, std::string_view rest) {
  const bool reseal = (flags & 1U) != 0;
  std::vector<std::string_view> parts;
  for (std::size_t nul = rest.find('\0'); parts.size() < 2 && nul != std::string_view::npos;
       nul = rest.find('\0')) {
    parts.push_back(rest.substr(0, nul));
    rest.remove_prefix(nul + 1);
  }
  parts.push_back(rest);
  Files f;
  f.snapshot = reseal ? resealed_snapshot(parts[0]) : std::string(parts[0]);
  if (parts.size() > 1) {
    f.journal = reseal ? resealed_journal(parts[1]) : std::string(parts[1]);
    if ((flags & 2U) != 0) f.snapshot.reset();
  }
  if (parts.size() > 2) f.appended = std::string(parts[2]);
  return f;
}

void check_snapshot(const Slots& slots) {
  REHEARSE_FUZZ_CHECK(check_slot_records(slots).ok(), check_slot_records(slots).error().describe());
  for (std::size_t i = 1; i < slots.size(); ++i) {
    REHEARSE_FUZZ_CHECK(slots[i - 1].slot < slots[i].slot, "slots out of order");
  }
  for (const DeliverySlot& s : slots) {
    REHEARSE_FUZZ_CHECK(!s.complete() || s.guard_consumed(), "a marker without its guard");
  }
  const std::string encoded = encode_ledger(kJob, slots);
  const Result<Slots> back = decode_ledger(encoded, kJob);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == slots, encoded);
  REHEARSE_FUZZ_CHECK(encode_ledger(kJob, *back) == encoded, encoded);
}

// A refusal names the job and a line: the header's, or one with a line after it.
void check_journal_refusal(const Error& e, std::string_view bytes) {
  REHEARSE_FUZZ_CHECK(e.code == ErrorCode::corrupt, e.describe());
  const std::string prefix = std::string(kJob) + ":";
  REHEARSE_FUZZ_CHECK(e.where.compare(0, prefix.size(), prefix) == 0, e.describe());
  const std::string number = e.where.substr(prefix.size(), e.where.find('/') - prefix.size());
  REHEARSE_FUZZ_CHECK(!number.empty() && number.size() < 10 &&
                          number.find_first_not_of("0123456789") == std::string::npos,
                      e.describe());
  const std::size_t line = std::stoul(number);
  std::size_t start = 0;  // of that line
  for (std::size_t i = 1; i < line && start != std::string_view::npos; ++i) {
    start = bytes.find('\n', start);
    if (start != std::string_view::npos) ++start;
  }
  REHEARSE_FUZZ_CHECK(line >= 1 && start != std::string_view::npos && start <= bytes.size(),
                      e.describe() + ": no such line");
  if (line == 1) return;
  const std::size_t end = bytes.find('\n', start);
  REHEARSE_FUZZ_CHECK(end != std::string_view::npos && end + 1 < bytes.size(),
                      e.describe() + ": the last line is torn, not refused");
}

void check_journal_layout(const LedgerJournal& j, std::string_view bytes) {
  REHEARSE_FUZZ_CHECK(j.records.size() == j.offsets.size(), "records and offsets differ");
  std::size_t next = bytes.find('\n') + 1;  // after the header
  for (std::size_t i = 0; i < j.offsets.size(); ++i) {
    REHEARSE_FUZZ_CHECK(j.offsets[i] == next, fmt::format("record {} is not where one ends", i));
    const std::size_t end = bytes.find('\n', next);
    REHEARSE_FUZZ_CHECK(end != std::string_view::npos, "a record without its newline");
    REHEARSE_FUZZ_CHECK(check_slot_records({j.records[i]}).ok(), "an inconsistent record");
    next = end + 1;
  }
  REHEARSE_FUZZ_CHECK(j.valid_end == next, "the valid end is not after the last record");
  REHEARSE_FUZZ_CHECK(j.torn == (j.valid_end != bytes.size()), "torn but nothing dropped");
  const std::string_view tail = bytes.substr(j.valid_end);
  REHEARSE_FUZZ_CHECK(tail.find('\n') == std::string_view::npos ||
                          tail.find('\n') + 1 == tail.size(),
                      "more than the last line dropped");
}

void check_journal(const Result<LedgerJournal>& decoded, std::string_view bytes) {
  if (!decoded.ok()) return check_journal_refusal(decoded.error(), bytes);
  check_journal_layout(*decoded, bytes);
  std::string encoded = encode_ledger_journal_header(kJob, decoded->generation);
  for (const DeliverySlot& r : decoded->records) encoded += encode_ledger_record(r);
  const Result<LedgerJournal> back = decode_ledger_journal(encoded, kJob);
  REHEARSE_FUZZ_CHECK(back.ok() && back->generation == decoded->generation &&
                          back->records == decoded->records && !back->torn &&
                          back->valid_end == encoded.size(),
                      encoded);
  std::string again = encode_ledger_journal_header(kJob, back->generation);
  for (const DeliverySlot& r : back->records) again += encode_ledger_record(r);
  REHEARSE_FUZZ_CHECK(again == encoded, encoded);
}

// What the ledger must read from the files: the documented replay
// (docs/group-jobs.md); nullopt when it must fail as corrupt.
std::optional<Slots> replayed(const Files& f, std::size_t completed_kept) {
  if (f.journal && !f.snapshot) return std::nullopt;
  std::map<TimeMs, DeliverySlot> slots;
  if (f.snapshot) {
    Result<Slots> snapshot = decode_ledger(*f.snapshot, kJob);
    if (!snapshot.ok()) return std::nullopt;
    for (DeliverySlot& r : *snapshot) slots.insert_or_assign(r.slot, std::move(r));
  }
  Result<LedgerJournal> journal = decode_ledger_journal(*f.journal, kJob);
  if (!journal.ok()) return std::nullopt;
  for (DeliverySlot& r : journal->records) slots.insert_or_assign(r.slot, std::move(r));
  std::map<std::pair<TimeMs, TimeMs>, TimeMs> completed;  // (marked_at, slot) -> slot
  for (const auto& [slot, r] : slots) {
    if (r.marked_at) completed.emplace(std::pair(*r.marked_at, slot), slot);
  }
  while (completed.size() > completed_kept) {
    slots.erase(completed.begin()->second);
    completed.erase(completed.begin());
  }
  Slots all;
  for (auto& [slot, r] : slots) all.push_back(std::move(r));
  if (!check_slot_records(all).ok()) return std::nullopt;
  return all;
}

std::optional<Slots> expected_read(const Files& f, std::size_t completed_kept) {
  if (f.journal) return replayed(f, completed_kept);
  if (!f.snapshot) return Slots();
  Result<Slots> snapshot = decode_ledger(*f.snapshot, kJob);
  if (!snapshot.ok()) return std::nullopt;
  return std::move(*snapshot);
}

void check_read(DeliveryLedger& ledger, const std::optional<Slots>& expected, const char* who) {
  const Result<Slots> read = ledger.read_job(kJob);
  if (!expected) {
    REHEARSE_FUZZ_CHECK(!read.ok() && read.error().code == ErrorCode::corrupt,
                        std::string(who) + ": read files it must refuse");
    return;
  }
  REHEARSE_FUZZ_CHECK(read.ok(), std::string(who) + ": " + read.error().describe());
  REHEARSE_FUZZ_CHECK(*read == *expected,
                      std::string(who) + ": read other slots than the files hold");
}

// One operation on slot `slot`; its effect when it succeeds.
Status apply(DeliveryLedger& ledger, std::uint8_t op, TimeMs slot) {
  switch (op % 4) {
    case 0: return ledger.write_outbox(kJob, slot, nlohmann::json::array({"item"}), kNow);
    case 1: return ledger.record_delivery(kJob, slot, "target-1", kNow);
    case 2: return ledger.consume_guard(kJob, slot, kNow);
    default: return ledger.mark_complete(kJob, slot, SlotVerdict::delivered, kNow);
  }
}

void check_effect(DeliveryLedger& ledger, std::uint8_t op, TimeMs slot) {
  const Result<DeliverySlot> record = ledger.read(kJob, slot);
  REHEARSE_FUZZ_CHECK(record.ok(), record.error().describe());
  switch (op % 4) {
    case 0: REHEARSE_FUZZ_CHECK(record->outbox.has_value(), "outbox not written"); break;
    case 1: REHEARSE_FUZZ_CHECK(record->has_delivered_to("target-1"), "delivery lost"); break;
    case 2: REHEARSE_FUZZ_CHECK(record->guard_consumed(), "guard not consumed"); break;
    default: REHEARSE_FUZZ_CHECK(record->complete(), "slot not marked"); break;
  }
}

void put(MemDisk& disk, const std::string& path, const std::optional<std::string>& bytes) {
  if (bytes) disk.files[path] = *bytes;
}

// The operation after the reads; `before` is what the files held (nullopt: refused).
void check_operation(DeliveryLedger& ledger, MemDisk& disk, std::uint8_t op,
                     const std::optional<Slots>& before) {
  const TimeMs slot = before && !before->empty() && (op & 4U) != 0 ? before->front().slot
                                                                   : TimeMs{1'700'000'000'000};
  const std::map<std::string, std::string> files = disk.files;
  const Status s = apply(ledger, op, slot);
  if (!before) {
    REHEARSE_FUZZ_CHECK(!s.ok() && s.error().code == ErrorCode::corrupt,
                        "wrote over a corrupt file");
  }
  if (!s.ok()) {
    REHEARSE_FUZZ_CHECK(disk.files == files, "a failed operation changed the files");
    return;
  }
  Result<DeliveryLedger> fresh = DeliveryLedger::open(disk, ledger.dir());
  REHEARSE_FUZZ_CHECK(fresh.ok(), fresh.error().describe());
  const Result<Slots> after = fresh->read_job(kJob);
  REHEARSE_FUZZ_CHECK(after.ok(), "wrote files it cannot read: " + after.error().describe());
  const Result<Slots> own = ledger.read_job(kJob);
  REHEARSE_FUZZ_CHECK(own.ok() && *own == *after, "the ledger and a fresh one read other slots");
  check_effect(*fresh, op, slot);
  for (const DeliverySlot& r : *before) {
    if (r.slot == slot || r.complete()) continue;
    const Result<DeliverySlot> now = fresh->read(kJob, r.slot);
    REHEARSE_FUZZ_CHECK(now.ok() && *now == r, "an open slot changed: " + format_instant(r.slot));
  }
}

void check_ledger_files(std::uint8_t op, Files f) {
  MemDisk disk;
  Result<DeliveryLedger> ledger = DeliveryLedger::open(disk, "ledger");
  REHEARSE_FUZZ_CHECK(ledger.ok(), ledger.error().describe());
  const std::string journal_path = ledger->journal_path_for(kJob);
  put(disk, ledger->path_for(kJob), f.snapshot);
  put(disk, journal_path, f.journal);
  const std::size_t kept = ledger->options().completed_slots_kept;
  check_read(*ledger, expected_read(f, kept), "the ledger");
  if (!f.appended.empty()) {
    disk.files[journal_path] += f.appended;
    f.journal = f.journal.value_or(std::string()) + f.appended;
    check_journal(decode_ledger_journal(*f.journal, kJob), *f.journal);
    check_read(*ledger, expected_read(f, kept), "the ledger after an append");
  }
  Result<DeliveryLedger> fresh = DeliveryLedger::open(disk, "ledger");
  REHEARSE_FUZZ_CHECK(fresh.ok(), fresh.error().describe());
  const std::optional<Slots> expected = expected_read(f, kept);
  check_read(*fresh, expected, "a fresh ledger");
  check_operation(*ledger, disk, op, expected);
}

}  // namespace

void check_ledger(std::string_view input) {
  Input in(input);
  const std::uint8_t op = in.byte();
  const std::uint8_t flags = in.byte();
  const Files f = files_from(flags, in.rest());
  const Result<Slots> snapshot = decode_ledger(f.snapshot.value_or(std::string()), kJob);
  if (snapshot.ok()) {
    check_snapshot(*snapshot);
  } else {
    REHEARSE_FUZZ_CHECK(snapshot.error().code == ErrorCode::corrupt, snapshot.error().describe());
  }
  if (f.journal) check_journal(decode_ledger_journal(*f.journal, kJob), *f.journal);
  check_ledger_files(op, f);
}

}  // namespace rehearse::fuzz
