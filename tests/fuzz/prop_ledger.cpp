// The delivery ledger's decoder and the ledger over a file of arbitrary
// content (docs/fuzzing.md, target `ledger`). Input: one byte choosing an
// operation, one byte saying whether to re-seal the file's checksum (so that
// mutations reach past the checksum into the slot checks), then the file.
//  - decode refuses with ErrorCode::corrupt only; an accepted file has
//    consistent records (check_slot_records), ascending slots, and
//    decode(encode(slots)) == slots with encoding a fixed point;
//  - the ledger reads what the decoder reads; on a refused file every
//    operation fails as corrupt and the file is left byte for byte; on an
//    accepted one an operation either fails and leaves the file, or succeeds,
//    leaves a file that decodes, and its effect is read back.
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "tests/fuzz/mem_disk.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

constexpr const char* kJob = "job-1";
constexpr TimeMs kNow = 32'503'680'000'000;  // 3000-01-01: after every fuzzed marker

// FNV-1a 64, as the ledger's checksum uses it.
std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::string resealed(std::string_view bytes) {
  nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("slots")) return std::string(bytes);
  doc["checksum"] = fmt::format("fnv1a64:{:016x}", fnv1a64(doc["slots"].dump()));
  return doc.dump(1) + "\n";
}

void check_decoded(const std::vector<DeliverySlot>& slots) {
  REHEARSE_FUZZ_CHECK(check_slot_records(slots).ok(), check_slot_records(slots).error().describe());
  for (std::size_t i = 1; i < slots.size(); ++i) {
    REHEARSE_FUZZ_CHECK(slots[i - 1].slot < slots[i].slot, "slots out of order");
  }
  for (const DeliverySlot& s : slots) {
    REHEARSE_FUZZ_CHECK(!s.complete() || s.guard_consumed(), "a marker without its guard");
  }
  const std::string encoded = encode_ledger(kJob, slots);
  const Result<std::vector<DeliverySlot>> back = decode_ledger(encoded, kJob);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == slots, encoded);
  REHEARSE_FUZZ_CHECK(encode_ledger(kJob, *back) == encoded, encoded);
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

}  // namespace

void check_ledger(std::string_view input) {
  Input in(input);
  const std::uint8_t op = in.byte();
  const bool reseal = (in.byte() & 1U) != 0;
  const std::string bytes = reseal ? resealed(in.rest()) : std::string(in.rest());
  const Result<std::vector<DeliverySlot>> decoded = decode_ledger(bytes, kJob);
  if (decoded.ok()) {
    check_decoded(*decoded);
  } else {
    REHEARSE_FUZZ_CHECK(decoded.error().code == ErrorCode::corrupt, decoded.error().describe());
  }
  MemDisk disk;
  Result<DeliveryLedger> ledger = DeliveryLedger::open(disk, "ledger");
  REHEARSE_FUZZ_CHECK(ledger.ok(), ledger.error().describe());
  const std::string path = ledger->path_for(kJob);
  disk.files[path] = bytes;
  const Result<std::vector<DeliverySlot>> read = ledger->read_job(kJob);
  REHEARSE_FUZZ_CHECK(read.ok() == decoded.ok(), "the ledger and the decoder disagree");
  if (read.ok()) REHEARSE_FUZZ_CHECK(*read == *decoded, "the ledger read other slots");
  const TimeMs slot = decoded.ok() && !decoded->empty() && (op & 4U) != 0
                          ? decoded->front().slot
                          : TimeMs{1'700'000'000'000};
  const Status s = apply(*ledger, op, slot);
  if (!decoded.ok()) {
    REHEARSE_FUZZ_CHECK(!s.ok() && s.error().code == ErrorCode::corrupt, "wrote over a corrupt file");
  }
  if (!s.ok()) {
    REHEARSE_FUZZ_CHECK(disk.files[path] == bytes, "a failed operation changed the file");
    return;
  }
  REHEARSE_FUZZ_CHECK(decode_ledger(disk.files[path], kJob).ok(), "wrote a file it cannot read");
  check_effect(*ledger, op, slot);
}

}  // namespace rehearse::fuzz
