#include "model/delivery_ledger.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <system_error>
#include <utility>
#include "model/assert.hpp"

#include <fmt/format.h>

#include "model/state_codec.hpp"  // crc32c

namespace rehearse {

namespace {

// 64-bit FNV-1a over the canonical dump of the slots: a file that still parses
// after a bit flip or a hand edit is caught here, not trusted.
std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

Error corrupt(std::string message, std::string where) {
  return make_error(ErrorCode::corrupt,
                    "delivery ledger is corrupt and fails closed (the file is kept untouched; "
                    "repair or remove it): " +
                        std::move(message),
                    std::move(where));
}

nlohmann::json slot_to_json(const DeliverySlot& r) {
  nlohmann::json j = nlohmann::json::object();
  j["slot"] = format_instant(r.slot);
  if (r.outbox) {
    j["outbox"] =
        nlohmann::json{{"at", format_instant(r.outbox_at.value_or(0))}, {"items", *r.outbox}};
  }
  if (!r.delivered_to.empty()) j["delivered_to"] = r.delivered_to;
  if (r.guard_at) j["guard_at"] = format_instant(*r.guard_at);
  if (r.marked_at) j["marked_at"] = format_instant(*r.marked_at);
  if (r.verdict) j["verdict"] = to_string(*r.verdict);
  return j;
}

Result<TimeMs> instant_field(const nlohmann::json& object, const char* key,
                             const std::string& where) {
  const auto& v = object.at(key);
  if (!v.is_string()) return corrupt(fmt::format("'{}' is not an instant string", key), where);
  auto t = parse_instant(v.get<std::string>());
  if (!t.ok()) return corrupt(fmt::format("'{}': {}", key, t.error().message), where);
  return *t;
}

Result<DeliverySlot> slot_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) return corrupt("a slot record is not an object", where);
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (key != "slot" && key != "outbox" && key != "delivered_to" && key != "guard_at" &&
        key != "marked_at" && key != "verdict") {
      return corrupt(fmt::format("unknown key '{}' in a slot record", key), where);
    }
  }
  if (!j.contains("slot")) return corrupt("a slot record has no 'slot'", where);
  DeliverySlot r;
  auto slot = instant_field(j, "slot", where);
  if (!slot.ok()) return std::move(slot).error();
  r.slot = *slot;
  const std::string here = where + "/" + format_instant(r.slot);
  if (j.contains("outbox")) {
    const auto& o = j.at("outbox");
    if (!o.is_object() || o.size() != 2 || !o.contains("at") || !o.contains("items") ||
        !o.at("items").is_array()) {
      return corrupt("'outbox' must be {\"at\": INSTANT, \"items\": [...]}", here);
    }
    auto at = instant_field(o, "at", here);
    if (!at.ok()) return std::move(at).error();
    r.outbox_at = *at;
    r.outbox = o.at("items");
  }
  if (j.contains("delivered_to")) {
    const auto& d = j.at("delivered_to");
    if (!d.is_array() || d.empty()) {
      return corrupt("'delivered_to' must be a non-empty array of target names", here);
    }
    for (const auto& t : d) {
      if (!t.is_string() || t.get<std::string>().empty()) {
        return corrupt("'delivered_to' holds something other than a target name", here);
      }
      r.delivered_to.push_back(t.get<std::string>());
    }
  }
  if (j.contains("guard_at")) {
    auto t = instant_field(j, "guard_at", here);
    if (!t.ok()) return std::move(t).error();
    r.guard_at = *t;
  }
  if (j.contains("marked_at")) {
    auto t = instant_field(j, "marked_at", here);
    if (!t.ok()) return std::move(t).error();
    r.marked_at = *t;
  }
  if (j.contains("verdict")) {
    const auto& v = j.at("verdict");
    const auto verdict = v.is_string() ? parse_slot_verdict(v.get<std::string>()) : std::nullopt;
    if (!verdict) return corrupt("'verdict' must be \"delivered\" or \"skipped\"", here);
    r.verdict = *verdict;
  }
  return r;
}

std::string parent_dir(const std::string& dir) {
  const auto pos = dir.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return dir.substr(0, pos);
}

}  // namespace

const char* to_string(SlotVerdict verdict) noexcept {
  switch (verdict) {
    case SlotVerdict::delivered: return "delivered";
    case SlotVerdict::skipped: return "skipped";
  }
  return "delivered";
}

std::optional<SlotVerdict> parse_slot_verdict(std::string_view name) noexcept {
  if (name == "delivered") return SlotVerdict::delivered;
  if (name == "skipped") return SlotVerdict::skipped;
  return std::nullopt;
}

bool DeliverySlot::has_delivered_to(std::string_view target) const {
  return std::binary_search(delivered_to.begin(), delivered_to.end(), target);
}

Status check_slot_records(const std::vector<DeliverySlot>& slots) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const DeliverySlot& r = slots[i];
    const std::string where = format_instant(r.slot);
    auto bad = [&](const char* why) { return make_error(ErrorCode::corrupt, why, where); };
    if (i > 0 && slots[i - 1].slot >= r.slot) return bad("slots are not strictly ascending");
    if (r.empty()) return bad("a slot record records nothing");
    if (r.outbox.has_value() != r.outbox_at.has_value()) return bad("outbox without its time");
    if (r.outbox && !r.outbox->is_array()) return bad("outbox items are not an array");
    if (!std::is_sorted(r.delivered_to.begin(), r.delivered_to.end()) ||
        std::adjacent_find(r.delivered_to.begin(), r.delivered_to.end()) != r.delivered_to.end()) {
      return bad("delivered_to is not sorted and unique");
    }
    if (r.delivered_to.size() > DeliveryLedger::kTargetsMax) return bad("too many targets");
    if (!r.delivered_to.empty() && !r.outbox && !r.marked_at) {
      return bad("a delivery recorded for an open slot without an outbox");
    }
    if (r.marked_at.has_value() != r.verdict.has_value()) return bad("marker without verdict");
    if (r.marked_at && !r.guard_at) return bad("slot marked complete without its send guard");
    if (r.marked_at && r.outbox) return bad("a completed slot still holds an outbox");
    if (r.verdict == SlotVerdict::skipped && !r.delivered_to.empty()) {
      return bad("a skipped slot records deliveries");
    }
  }
  return {};
}

std::string ledger_checksum(const nlohmann::json& slots) {
  return fmt::format("fnv1a64:{:016x}", fnv1a64(slots.dump()));
}

std::string encode_ledger(const std::string& job_id, const std::vector<DeliverySlot>& slots) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeliverySlot& r : slots) list.push_back(slot_to_json(r));
  nlohmann::json doc = nlohmann::json::object();
  doc["format"] = DeliveryLedger::kFormat;
  doc["job_id"] = job_id;
  doc["checksum"] = ledger_checksum(list);
  doc["slots"] = std::move(list);
  return doc.dump(1) + "\n";
}

Result<std::vector<DeliverySlot>> decode_ledger(std::string_view bytes, const std::string& job_id) {
  const std::string where = job_id;
  if (bytes.empty()) return corrupt("the file is empty", where);
  nlohmann::json doc = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return corrupt("the file is not valid JSON", where);
  if (!doc.is_object()) return corrupt("the document is not an object", where);
  for (const auto& [key, value] : doc.items()) {
    (void)value;
    if (key != "format" && key != "job_id" && key != "checksum" && key != "slots") {
      return corrupt(fmt::format("unknown key '{}'", key), where);
    }
  }
  if (!doc.contains("format") || !doc.at("format").is_number_integer() ||
      doc.at("format").get<std::int64_t>() != DeliveryLedger::kFormat) {
    return corrupt("'format' must be 1", where);
  }
  if (!doc.contains("job_id") || !doc.at("job_id").is_string() ||
      doc.at("job_id").get<std::string>() != job_id) {
    return corrupt(fmt::format("'job_id' is not '{}'", job_id), where);
  }
  if (!doc.contains("slots") || !doc.at("slots").is_array()) {
    return corrupt("'slots' must be an array", where);
  }
  if (!doc.contains("checksum") || !doc.at("checksum").is_string() ||
      doc.at("checksum").get<std::string>() != ledger_checksum(doc.at("slots"))) {
    return corrupt("checksum mismatch (the slots were altered after they were written)", where);
  }
  std::vector<DeliverySlot> slots;
  for (const auto& j : doc.at("slots")) {
    auto r = slot_from_json(j, where);
    if (!r.ok()) return std::move(r).error();
    slots.push_back(std::move(r).value());
  }
  if (auto s = check_slot_records(slots); !s.ok()) {
    return corrupt(s.error().message, where + "/" + s.error().where);
  }
  return slots;
}

std::string DeliveryLedger::encode_job_id(std::string_view job_id) {
  std::string out;
  for (const char c : job_id) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '_' || c == '-' || c == '.' || c == '@';
    if (plain) {
      out.push_back(c);
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned>(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

std::string DeliveryLedger::path_for(const std::string& job_id) const {
  return join_path(dir_, encode_job_id(job_id) + kFileSuffix);
}

std::string DeliveryLedger::lock_path() const { return join_path(dir_, kLockName); }

Result<DeliveryLedger> DeliveryLedger::open(Disk& disk, std::string dir,
                                            DeliveryLedgerOptions options) {
  if (dir.empty()) return make_error(ErrorCode::invalid_argument, "ledger directory is empty");
  if (options.completed_slots_kept < 1 || options.open_slots_max < 1) {
    return make_error(ErrorCode::invalid_argument, "ledger bounds must be at least 1");
  }
  if (auto s = disk.create_dir(dir); !s.ok()) return std::move(s).error();
  if (auto s = disk.fsync_dir(parent_dir(dir)); !s.ok()) return std::move(s).error();
  return DeliveryLedger(disk, std::move(dir), options);
}

// ---- the journal ---------------------------------------------------------------

namespace {

constexpr const char* kJournalKey = "delivery_ledger_journal";

// "<crc 8 hex> <json>": one record, without its newline.
Result<DeliverySlot> decode_record_line(std::string_view line, const std::string& where) {
  if (line.size() < 10 || line[8] != ' ') return corrupt("a journal line is not framed", where);
  std::uint32_t crc = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + 8, crc, 16);
  if (ec != std::errc() || end != line.data() + 8) {
    return corrupt("a journal line has no checksum", where);
  }
  const std::string_view body = line.substr(9);
  if (crc32c(body) != crc) return corrupt("a journal record fails its checksum", where);
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return corrupt("a journal record is not valid JSON", where);
  auto record = slot_from_json(j, where);
  if (!record.ok()) return record;
  if (auto s = check_slot_records({*record}); !s.ok()) {
    return corrupt(s.error().message, where + "/" + s.error().where);
  }
  return record;
}

Result<std::uint64_t> decode_journal_header(std::string_view line, const std::string& job_id) {
  const nlohmann::json h = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (h.is_discarded() || !h.is_object() || h.size() != 3 || !h.contains(kJournalKey) ||
      h.at(kJournalKey) != 1 || !h.contains("generation") ||
      !h.at("generation").is_number_unsigned() || !h.contains("job_id") ||
      h.at("job_id") != job_id) {
    return corrupt(fmt::format("the journal header is not that of job '{}'", job_id),
                   job_id + ":1");
  }
  return h.at("generation").get<std::uint64_t>();
}

}  // namespace

std::string encode_ledger_record(const DeliverySlot& slot) {
  const std::string body =
      slot_to_json(slot).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return fmt::format("{:08x} {}\n", crc32c(body), body);
}

std::string encode_ledger_journal_header(const std::string& job_id, std::uint64_t generation) {
  const nlohmann::json h = {{kJournalKey, 1}, {"generation", generation}, {"job_id", job_id}};
  return h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<LedgerJournal> decode_ledger_journal(std::string_view bytes, const std::string& job_id) {
  // The header comes with the first record in one atomic write: never torn.
  const std::size_t header_end = bytes.find('\n');
  if (header_end == std::string_view::npos) {
    return corrupt("the journal has no header line", job_id + ":1");
  }
  auto generation = decode_journal_header(bytes.substr(0, header_end), job_id);
  if (!generation.ok()) return std::move(generation).error();
  LedgerJournal journal;
  journal.generation = *generation;
  std::uint64_t offset = header_end + 1;
  journal.valid_end = offset;
  for (std::size_t line = 2; offset < bytes.size(); ++line) {
    const std::size_t end = bytes.find('\n', offset);
    const bool last = end == std::string_view::npos || end + 1 == bytes.size();
    const std::string_view text =
        end == std::string_view::npos ? bytes.substr(offset) : bytes.substr(offset, end - offset);
    auto record = decode_record_line(text, fmt::format("{}:{}", job_id, line));
    if (end == std::string_view::npos || !record.ok()) {
      if (last) {  // a crash mid-append: never acknowledged
        journal.torn = true;
        break;
      }
      return std::move(record).error();
    }
    journal.records.push_back(std::move(record).value());
    journal.offsets.push_back(offset);
    offset = end + 1;
    journal.valid_end = offset;
  }
  return journal;
}

// ---- the ledger ----------------------------------------------------------------

std::string DeliveryLedger::journal_path_for(const std::string& job_id) const {
  return join_path(dir_, encode_job_id(job_id) + kJournalSuffix);
}

namespace {

// The error's location on the file it came from ("job:3" -> "path:3").
Error located(Error e, const std::string& job_id, const std::string& path) {
  e.where = path + (e.where.size() > job_id.size() ? e.where.substr(job_id.size()) : "");
  return e;
}

void apply_record(std::map<TimeMs, DeliverySlot>& slots,
                  std::set<std::pair<TimeMs, TimeMs>>& completed, DeliverySlot record) {
  const auto it = slots.find(record.slot);
  if (it != slots.end() && it->second.marked_at) {
    completed.erase({*it->second.marked_at, record.slot});
  }
  if (record.marked_at) completed.emplace(*record.marked_at, record.slot);
  const TimeMs slot = record.slot;
  slots.insert_or_assign(slot, std::move(record));
}

}  // namespace

// Snapshot, then the journal's records on top (the last record of a slot
// wins), each file with every check of its format.
Result<DeliveryLedger::JobCache> DeliveryLedger::load(const std::string& job_id) {
  JobCache c;
  const std::string path = path_for(job_id);
  auto snapshot = disk_->read_file(path);
  if (!snapshot.ok()) return std::move(snapshot).error();
  if (snapshot->has_value()) {
    auto slots = decode_ledger(**snapshot, job_id);
    if (!slots.ok()) return located(std::move(slots).error(), job_id, path);
    for (DeliverySlot& r : *slots) apply_record(c.slots, c.completed, std::move(r));
    c.snapshot_size = (*snapshot)->size();
    c.snapshot_head = (*snapshot)->substr(0, kHeadBytes);
  }
  const std::string journal_path = journal_path_for(job_id);
  auto journal = disk_->read_file(journal_path);
  if (!journal.ok()) return std::move(journal).error();
  if (auto s = make_durable(snapshot->has_value(), journal->has_value(), job_id); !s.ok()) {
    return s.error();
  }
  if (!journal->has_value()) return c;
  if (!snapshot->has_value()) {
    return corrupt("the journal continues a snapshot that is missing (records may be lost)",
                   journal_path);
  }
  auto scan = decode_ledger_journal(**journal, job_id);
  if (!scan.ok()) return located(std::move(scan).error(), job_id, journal_path);
  for (DeliverySlot& r : scan->records) apply_record(c.slots, c.completed, std::move(r));
  // Replayed records can bring back completed slots pruned since they were
  // written: pruned again, the records are those the writer held (the kept
  // set is the most recent completions, which only grows more recent).
  prune(c);
  std::vector<DeliverySlot> all;
  for (const auto& [slot, r] : c.slots) all.push_back(r);
  if (auto s = check_slot_records(all); !s.ok()) {
    return corrupt(s.error().message, journal_path + "#" + s.error().where);
  }
  c.journal = true;
  c.generation = scan->generation;
  c.journal_end = scan->valid_end;
  c.last_offset = scan->offsets.empty() ? 0 : scan->offsets.back();
  c.last_crc =
      crc32c(std::string_view(**journal).substr(c.last_offset, c.journal_end - c.last_offset));
  c.torn = scan->torn;
  return c;
}

// What a load reads may exist only in the page cache (a process that died
// between a rename and the directory's fsync, or between an append and its
// fsync): building on it and acknowledging would let a later power loss take
// acknowledged records back, so what was read is made durable first (as the
// state store does).
Status DeliveryLedger::make_durable(bool snapshot, bool journal, const std::string& job_id) {
  if (snapshot) {
    if (auto s = disk_->fsync_file(path_for(job_id)); !s.ok()) return s;
  }
  if (journal) {
    if (auto s = disk_->fsync_file(journal_path_for(job_id)); !s.ok()) return s;
  }
  if (snapshot || journal) return disk_->fsync_dir(dir_);
  return {};
}

// Whether the job's files are still the ones the cache was made from (a few
// bytes read, whatever the files' size).
Result<bool> DeliveryLedger::unchanged(const std::string& job_id, const JobCache& c) {
  if (c.torn) return false;
  const std::string path = path_for(job_id);
  auto head = disk_->read_range(path, 0, kHeadBytes);
  if (!head.ok()) return std::move(head).error();
  if (head->has_value() != (c.snapshot_size != 0)) return false;
  if (head->has_value()) {
    if (**head != c.snapshot_head) return false;
    auto last = disk_->read_range(path, c.snapshot_size - 1, 2);
    if (!last.ok()) return std::move(last).error();
    if (!last->has_value() || (*last)->size() != 1) return false;
  }
  const std::string journal_path = journal_path_for(job_id);
  const std::uint64_t tail = c.journal ? c.journal_end - c.last_offset : 0;
  auto end = disk_->read_range(journal_path, c.last_offset, tail + 1);
  if (!end.ok()) return std::move(end).error();
  if (!c.journal) return !end->has_value();
  return end->has_value() && (*end)->size() == tail && crc32c(**end) == c.last_crc;
}

Result<DeliveryLedger::JobCache*> DeliveryLedger::current(const std::string& job_id) {
  if (const auto it = cache_.find(job_id); it != cache_.end()) {
    auto same = unchanged(job_id, it->second);
    if (!same.ok()) return std::move(same).error();
    if (*same) return &it->second;
    cache_.erase(it);
  }
  auto loaded = load(job_id);
  if (!loaded.ok()) return std::move(loaded).error();
  return &cache_.insert_or_assign(job_id, std::move(loaded).value()).first->second;
}

void DeliveryLedger::prune(JobCache& c) const {
  // The oldest completed slots (by completion time, then slot) go first.
  while (c.completed.size() > options_.completed_slots_kept) {
    const TimeMs slot = c.completed.begin()->second;
    c.completed.erase(c.completed.begin());
    c.slots.erase(slot);
  }
  REHEARSE_ASSERT_LE(c.completed.size(), options_.completed_slots_kept);
}

Status DeliveryLedger::check_bounds(const std::string& job_id, const JobCache& c,
                                    const DeliverySlot& changed) const {
  // Checked before writing, and decoded again right after encoding.
  if (auto s = check_slot_records({changed}); !s.ok()) {
    Error e = std::move(s).error();
    if (e.code == ErrorCode::corrupt) e.code = ErrorCode::internal;  // our own bug
    return e;
  }
  const auto it = c.slots.find(changed.slot);
  const bool was_open = it != c.slots.end() && !it->second.marked_at;
  const std::size_t open =
      c.slots.size() - c.completed.size() - (was_open ? 1 : 0) + (changed.marked_at ? 0 : 1);
  if (open > options_.open_slots_max) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("more than {} open slots for job '{}': refused rather than "
                                  "forgetting one (a forgotten open slot could be delivered twice)",
                                  options_.open_slots_max, job_id),
                      path_for(job_id));
  }
  return {};
}

Status DeliveryLedger::write_atomically(const std::string& path, std::string_view bytes) {
  const std::string temp = path + kTempSuffix;
  if (auto s = disk_->write_file(temp, bytes); !s.ok()) return s;
  // Read back before the step that makes it count (the rename and the
  // directory's fsync stay the last operations, the point of durability).
  auto back = disk_->read_file(temp);
  if (!back.ok()) return std::move(back).error();
  if (!back->has_value() || **back != bytes) {
    return make_error(ErrorCode::io_error, "the file read back differs from what was written",
                      temp);
  }
  if (auto s = disk_->fsync_file(temp); !s.ok()) return s;
  if (auto s = disk_->rename_file(temp, path); !s.ok()) return s;
  return disk_->fsync_dir(dir_);
}

// The snapshot becomes the cache's records. The one it replaces must still
// decode: a damaged snapshot is kept for an operator, never written over.
Status DeliveryLedger::write_snapshot(const std::string& job_id, JobCache& c) {
  const std::string path = path_for(job_id);
  if (c.snapshot_size != 0) {
    auto on_disk = disk_->read_file(path);
    if (!on_disk.ok()) return std::move(on_disk).error();
    if (!on_disk->has_value()) return corrupt("the snapshot went missing", path);
    auto decoded = decode_ledger(**on_disk, job_id);
    if (!decoded.ok()) return located(std::move(decoded).error(), job_id, path);
  }
  std::vector<DeliverySlot> all;
  all.reserve(c.slots.size());
  for (const auto& [slot, r] : c.slots) all.push_back(r);
  const std::string bytes = encode_ledger(job_id, all);
  if (auto s = write_atomically(path, bytes); !s.ok()) return s;
  c.snapshot_size = bytes.size();
  c.snapshot_head = bytes.substr(0, kHeadBytes);
  return {};
}

Status DeliveryLedger::start_journal(const std::string& job_id, JobCache& c,
                                     std::string_view record) {
  const std::string header = encode_ledger_journal_header(job_id, c.generation + 1);
  if (auto s = write_atomically(journal_path_for(job_id), header + std::string(record)); !s.ok()) {
    return s;
  }
  c.journal = true;
  c.generation += 1;
  c.last_offset = header.size();
  c.journal_end = header.size() + record.size();
  c.last_crc = crc32c(record);
  c.torn = false;
  return {};
}

Status DeliveryLedger::append_record(const std::string& job_id, JobCache& c,
                                     std::string_view record) {
  REHEARSE_ASSERT(!record.empty() && record.back() == '\n');  // one whole line
  const std::string path = journal_path_for(job_id);
  if (auto s = disk_->append_file(path, record); !s.ok()) return s;
  // Read back before the fsync, which stays the point of durability.
  auto back = disk_->read_range(path, c.journal_end, record.size() + 1);
  if (!back.ok()) return std::move(back).error();
  if (!back->has_value() || **back != record) {
    return make_error(ErrorCode::io_error,
                      "the journal read back differs from the record just appended", path);
  }
  if (auto s = disk_->fsync_file(path); !s.ok()) return s;
  c.last_offset = c.journal_end;
  c.journal_end += record.size();
  c.last_crc = crc32c(record);
  REHEARSE_ASSERT_EQ(c.journal_end - c.last_offset, record.size());
  return {};
}

// One changed record to disk: the first write of a job is its snapshot; later
// ones go to the journal, folded first when it has outgrown the snapshot (or
// holds a torn line).
Status DeliveryLedger::write_change(const std::string& job_id, JobCache& c,
                                    const DeliverySlot& changed) {
  const std::string record = encode_ledger_record(changed);
  // Read back before writing: the cache keeps exactly what a restart decodes
  // (text that was not UTF-8 is stored replaced).
  auto stored = decode_record_line(std::string_view(record).substr(0, record.size() - 1), job_id);
  if (!stored.ok()) {
    return make_error(ErrorCode::internal,
                      "a ledger record does not decode back: " + stored.error().message,
                      journal_path_for(job_id));
  }
  const std::uint64_t fold_at = std::max(c.snapshot_size, options_.journal_bytes_min);
  Status written;
  if (c.snapshot_size == 0 && !c.journal) {
    apply_record(c.slots, c.completed, *stored);
    prune(c);
    return write_snapshot(job_id, c);
  }
  if (c.torn || (c.journal && c.journal_end + record.size() > fold_at)) {
    written = write_snapshot(job_id, c);  // the records before the change
    if (written.ok()) written = start_journal(job_id, c, record);
  } else if (!c.journal) {
    written = start_journal(job_id, c, record);
  } else {
    written = append_record(job_id, c, record);
  }
  if (!written.ok()) return written;
  apply_record(c.slots, c.completed, std::move(stored).value());
  prune(c);
  return {};
}

Result<DeliverySlot> DeliveryLedger::read(const std::string& job_id, TimeMs slot) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = disk_->lock_exclusive(lock_path());
  if (!held.ok()) return std::move(held).error();
  auto c = current(job_id);
  if (!c.ok()) return std::move(c).error();
  if (const auto it = (*c)->slots.find(slot); it != (*c)->slots.end()) return it->second;
  DeliverySlot empty;
  empty.slot = slot;
  return empty;
}

Result<std::vector<DeliverySlot>> DeliveryLedger::read_job(const std::string& job_id) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = disk_->lock_exclusive(lock_path());
  if (!held.ok()) return std::move(held).error();
  auto c = current(job_id);
  if (!c.ok()) return std::move(c).error();
  std::vector<DeliverySlot> all;
  all.reserve((*c)->slots.size());
  for (const auto& [slot, r] : (*c)->slots) all.push_back(r);
  return all;
}

template <typename Mutate>
Status DeliveryLedger::update(const std::string& job_id, TimeMs slot, Mutate mutate) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = disk_->lock_exclusive(lock_path());
  if (!held.ok()) return std::move(held).error();
  auto cached = current(job_id);
  if (!cached.ok()) return std::move(cached).error();
  JobCache& c = **cached;
  DeliverySlot before;
  before.slot = slot;
  if (const auto it = c.slots.find(slot); it != c.slots.end()) before = it->second;
  DeliverySlot after = before;
  if (auto s = mutate(after); !s.ok()) return s;
  if (after == before) return {};  // nothing changed: no write
  if (auto s = check_bounds(job_id, c, after); !s.ok()) return s;
  Status written = write_change(job_id, c, after);
  if (!written.ok()) cache_.erase(job_id);  // the files may be anything now: load again
  return written;
}

Status DeliveryLedger::write_outbox(const std::string& job_id, TimeMs slot, nlohmann::json items,
                                    TimeMs at) {
  if (!items.is_array()) return make_error(ErrorCode::invalid_argument, "outbox is not an array");
  return update(job_id, slot, [&](DeliverySlot& r) -> Status {
    if (r.guard_at || r.marked_at) {
      return make_error(ErrorCode::invalid_argument,
                        "the slot's send guard is already consumed: nothing more to send",
                        format_instant(slot));
    }
    if (r.outbox) {
      return make_error(ErrorCode::invalid_argument,
                        "the slot already has an outbox: resume it instead", format_instant(slot));
    }
    r.outbox = std::move(items);
    r.outbox_at = at;
    return {};
  });
}

Status DeliveryLedger::record_delivery(const std::string& job_id, TimeMs slot,
                                       const std::string& target, TimeMs at) {
  (void)at;  // the target list is what matters; the trace has the time
  if (target.empty()) return make_error(ErrorCode::invalid_argument, "target is empty");
  return update(job_id, slot, [&](DeliverySlot& r) -> Status {
    if (r.has_delivered_to(target)) return {};
    if (r.marked_at) {
      return make_error(ErrorCode::invalid_argument, "the slot is already complete",
                        format_instant(slot));
    }
    if (!r.outbox) {
      return make_error(ErrorCode::invalid_argument, "no outbox: nothing was to be delivered",
                        format_instant(slot));
    }
    r.delivered_to.insert(std::lower_bound(r.delivered_to.begin(), r.delivered_to.end(), target),
                          target);
    return {};
  });
}

Status DeliveryLedger::consume_guard(const std::string& job_id, TimeMs slot, TimeMs at) {
  return update(job_id, slot, [&](DeliverySlot& r) -> Status {
    if (!r.guard_at) r.guard_at = at;
    return {};
  });
}

Status DeliveryLedger::mark_complete(const std::string& job_id, TimeMs slot, SlotVerdict verdict,
                                     TimeMs at) {
  return update(job_id, slot, [&](DeliverySlot& r) -> Status {
    if (r.marked_at) return {};
    if (!r.guard_at) {
      return make_error(ErrorCode::invalid_argument,
                        "a slot is marked complete only after its send guard is consumed",
                        format_instant(slot));
    }
    if (verdict == SlotVerdict::skipped && !r.delivered_to.empty()) {
      return make_error(ErrorCode::invalid_argument, "a slot with deliveries cannot be skipped",
                        format_instant(slot));
    }
    r.marked_at = at;
    r.verdict = verdict;
    r.outbox.reset();
    r.outbox_at.reset();
    return {};
  });
}

}  // namespace rehearse
