#include "model/delivery_ledger.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

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

std::string checksum_of(const nlohmann::json& slots) {
  return fmt::format("fnv1a64:{:016x}", fnv1a64(slots.dump()));
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
    j["outbox"] = nlohmann::json{{"at", format_instant(r.outbox_at.value_or(0))},
                                 {"items", *r.outbox}};
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
        std::adjacent_find(r.delivered_to.begin(), r.delivered_to.end()) !=
            r.delivered_to.end()) {
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

std::string encode_ledger(const std::string& job_id, const std::vector<DeliverySlot>& slots) {
  nlohmann::json list = nlohmann::json::array();
  for (const DeliverySlot& r : slots) list.push_back(slot_to_json(r));
  nlohmann::json doc = nlohmann::json::object();
  doc["format"] = DeliveryLedger::kFormat;
  doc["job_id"] = job_id;
  doc["checksum"] = checksum_of(list);
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
      doc.at("checksum").get<std::string>() != checksum_of(doc.at("slots"))) {
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

Result<DeliveryLedger::JobFile> DeliveryLedger::load(const std::string& job_id) {
  JobFile file;
  file.job_id = job_id;
  const std::string path = path_for(job_id);
  auto bytes = disk_->read_file(path);
  if (!bytes.ok()) return std::move(bytes).error();
  if (!bytes->has_value()) return file;  // nothing recorded yet
  auto slots = decode_ledger(**bytes, job_id);
  if (!slots.ok()) {
    Error e = std::move(slots).error();
    e.where = path + (e.where.size() > job_id.size() ? e.where.substr(job_id.size()) : "");
    return e;
  }
  file.slots = std::move(slots).value();
  return file;
}

Status DeliveryLedger::store(const JobFile& file) {
  // Checked before writing, and decode checks again after reading it back.
  if (auto s = check_slot_records(file.slots); !s.ok()) {
    Error e = std::move(s).error();
    if (e.code == ErrorCode::corrupt) e.code = ErrorCode::internal;  // our own bug
    return e;
  }
  const auto open = std::count_if(file.slots.begin(), file.slots.end(),
                                  [](const DeliverySlot& r) { return !r.marked_at; });
  if (static_cast<std::size_t>(open) > options_.open_slots_max) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("more than {} open slots for job '{}': refused rather than "
                                  "forgetting one (a forgotten open slot could be delivered twice)",
                                  options_.open_slots_max, file.job_id),
                      path_for(file.job_id));
  }
  const std::string path = path_for(file.job_id);
  const std::string temp = path + kTempSuffix;
  const std::string bytes = encode_ledger(file.job_id, file.slots);
  if (auto s = disk_->write_file(temp, bytes); !s.ok()) return s;
  if (auto s = disk_->fsync_file(temp); !s.ok()) return s;
  if (auto s = disk_->rename_file(temp, path); !s.ok()) return s;
  return disk_->fsync_dir(dir_);
}

Result<DeliverySlot> DeliveryLedger::read(const std::string& job_id, TimeMs slot) {
  auto records = read_job(job_id);
  if (!records.ok()) return std::move(records).error();
  for (DeliverySlot& r : *records) {
    if (r.slot == slot) return std::move(r);
  }
  DeliverySlot empty;
  empty.slot = slot;
  return empty;
}

Result<std::vector<DeliverySlot>> DeliveryLedger::read_job(const std::string& job_id) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = disk_->lock_exclusive(lock_path());
  if (!held.ok()) return std::move(held).error();
  auto file = load(job_id);
  if (!file.ok()) return std::move(file).error();
  return std::move(file->slots);
}

template <typename Mutate>
Status DeliveryLedger::update(const std::string& job_id, TimeMs slot, Mutate mutate) {
  if (job_id.empty()) return make_error(ErrorCode::invalid_argument, "job id is empty");
  auto held = disk_->lock_exclusive(lock_path());
  if (!held.ok()) return std::move(held).error();
  auto loaded = load(job_id);
  if (!loaded.ok()) return std::move(loaded).error();
  JobFile file = std::move(loaded).value();
  auto it = std::lower_bound(file.slots.begin(), file.slots.end(), slot,
                             [](const DeliverySlot& r, TimeMs t) { return r.slot < t; });
  if (it == file.slots.end() || it->slot != slot) {
    DeliverySlot fresh;
    fresh.slot = slot;
    it = file.slots.insert(it, std::move(fresh));
  }
  const DeliverySlot before = *it;
  if (auto s = mutate(*it); !s.ok()) return s;
  if (*it == before) return {};  // nothing changed: no write
  if (it->marked_at) {
    // Prune the oldest completed slots (by completion time, then slot).
    std::vector<std::pair<TimeMs, TimeMs>> completed;
    for (const DeliverySlot& r : file.slots) {
      if (r.marked_at) completed.emplace_back(*r.marked_at, r.slot);
    }
    if (completed.size() > options_.completed_slots_kept) {
      std::sort(completed.begin(), completed.end());
      const std::size_t drop = completed.size() - options_.completed_slots_kept;
      std::vector<TimeMs> dropped;
      for (std::size_t i = 0; i < drop; ++i) dropped.push_back(completed[i].second);
      std::sort(dropped.begin(), dropped.end());
      std::erase_if(file.slots, [&](const DeliverySlot& r) {
        return r.marked_at && std::binary_search(dropped.begin(), dropped.end(), r.slot);
      });
    }
  }
  return store(file);
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
    r.delivered_to.insert(
        std::lower_bound(r.delivered_to.begin(), r.delivered_to.end(), target), target);
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
