#include "sim/world/world_facts.hpp"

#include <array>
#include <charconv>

#include "model/assert.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

// The file names of docs/state-file.md (the world's copy, not the core's constants).
constexpr const char* kSnapshotFile = "retry_state.json";
constexpr const char* kJournalFile = "retry_state.journal";

const json& member(const json& o, const char* key) {
  REHEARSE_ASSERT(key != nullptr);
  static const json kNull;
  if (!o.is_object()) return kNull;
  const auto it = o.find(key);
  return it == o.end() ? kNull : *it;
}

json slot_facts(const json& r) {
  return {
      {"retry_status", member(r, "retry_status")},   {"retry_count", member(r, "retry_count")},
      {"failure_class", member(r, "failure_class")}, {"next_retry_at", member(r, "next_retry_at")},
      {"next_action", member(r, "next_action")},     {"stalled_count", member(r, "stalled_count")}};
}

std::optional<std::uint64_t> read_decimal(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || (s.size() > 1 && s.front() == '0')) return std::nullopt;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// A journal frame's "<seq> <length> " prefix: the numbers and the position
// of the second space.
struct FramePrefix {
  std::uint64_t seq;
  std::uint64_t length;
  std::size_t sp2;
};
std::optional<FramePrefix> read_frame_prefix(std::string_view bytes) {
  const auto sp1 = bytes.find(' ');
  if (sp1 == std::string_view::npos) return std::nullopt;
  const auto sp2 = bytes.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return std::nullopt;
  const auto seq = read_decimal(bytes.substr(0, sp1));
  const auto length = read_decimal(bytes.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!seq || !length) return std::nullopt;
  return FramePrefix{*seq, *length, sp2};
}

// One journal line without its newline: "<seq> <length> <payload> <crc32c>".
// The payload when the frame and its checksum hold.
std::optional<std::pair<std::uint64_t, std::string_view>> read_record(std::string_view line) {
  const auto prefix = read_frame_prefix(line);
  if (!prefix) return std::nullopt;
  const auto [seq, length, sp2] = *prefix;
  if (sp2 + 1 + length + 9 != line.size()) return std::nullopt;
  const std::size_t crc_at = sp2 + 1 + length;
  if (line[crc_at] != ' ') return std::nullopt;
  std::uint32_t crc = 0;
  const auto hex = line.substr(crc_at + 1);
  const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), crc, 16);
  if (ec != std::errc() || end != hex.data() + hex.size()) return std::nullopt;
  if (witness_crc32c(line.substr(0, crc_at)) != crc) return std::nullopt;
  return std::make_pair(seq, line.substr(sp2 + 1, length));
}

}  // namespace

std::uint32_t witness_crc32c(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> kTable = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    // The reflected Castagnoli polynomial is the entry of the top bit alone.
    REHEARSE_ASSERT_EQ(t[128], 0x82F63B78u);
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes)
    crc = kTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

namespace {

std::string string_field(const json& o, const char* key) {
  REHEARSE_ASSERT(o.is_object());  // callers check the item is an object first
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::vector<PipelineItemFacts> pipeline_item_facts(const std::string& bytes) {
  std::vector<PipelineItemFacts> out;
  const json doc = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("items") || !doc.at("items").is_array()) return out;
  for (const json& item : doc.at("items")) {
    if (!item.is_object() || !item.contains("issue") || !item.contains("stage") ||
        !item.at("issue").is_string() || !item.at("stage").is_string()) {
      continue;
    }
    out.push_back({item.at("issue").get<std::string>(), item.at("stage").get<std::string>(),
                   string_field(item, "reconcile_error"), string_field(item, "next_attempt_at"),
                   string_field(item, "updated_at")});
  }
  REHEARSE_ASSERT_LE(out.size(), doc.at("items").size());  // at most one fact per item
  return out;
}

bool is_job_record(const json& record) {
  return record.is_object() && member(record, "job_id").is_string();
}

json job_state_facts(const json& record) {
  if (!is_job_record(record)) return nullptr;
  json slots = json::object();
  if (const json& s = member(record, "slots"); s.is_object()) {
    for (const auto& [key, r] : s.items()) slots[key] = slot_facts(r);
  }
  const json& policy_error = member(record, "policy_error");
  return {{"retry_status", member(record, "retry_status")},
          {"retry_count", member(record, "retry_count")},
          {"failure_class", member(record, "failure_class")},
          {"next_action", member(record, "next_action")},
          {"next_run_at", member(record, "next_run_at")},
          {"next_retry_at", member(record, "next_retry_at")},
          {"last_slot", member(record, "last_slot")},
          {"coalesced_slots", member(record, "coalesced_slots")},
          {"misfire_runs", member(record, "misfire_runs")},
          {"policy_invalid", policy_error.is_string() && !policy_error.get<std::string>().empty()},
          {"slots", std::move(slots)}};
}

DurableStateReader::DurableStateReader(std::string dir) : dir_(std::move(dir)) {
  REHEARSE_ASSERT(!dir_.empty());  // the store's directory: its files are dir_ + "/" + name
}

std::string DurableStateReader::journal_path() const { return dir_ + "/" + kJournalFile; }

// The snapshot's jobs, then the journal's records after its journal_seq.
// False (nothing changed) when the snapshot is present but unreadable. The
// snapshot is parsed again only when its durable bytes changed or a journal
// record was applied over it since it was read.
bool DurableStateReader::load_all(const SimDisk& disk) {
  const auto snapshot = disk.durable_identity(dir_ + "/" + kSnapshotFile);
  const bool same_snapshot = snapshot_read_.has_value() && snapshot == snapshot_read_;
  if (!(readable_ && same_snapshot && !journal_applied_)) {
    if (!parse_snapshot(disk)) {
      snapshot_read_.reset();
      return false;
    }
    snapshot_read_ = snapshot;
    journal_applied_ = false;
  }
  read_journal(disk);
  // Without a header nothing of the journal was read.
  REHEARSE_ASSERT(!header_.empty() || offset_ == 0);
  return true;
}

// The snapshot's jobs (none without a snapshot) replace what was read
// since the last changed().
bool DurableStateReader::parse_snapshot(const SimDisk& disk) {
  ++snapshot_parses_;
  json doc;
  std::vector<std::pair<std::string, json>> jobs;
  if (const std::string* snap = disk.durable_view(dir_ + "/" + kSnapshotFile)) {
    doc = parse_snapshot_jobs(*snap, jobs);
    if (!member(doc, "jobs").is_object() || !member(doc, "journal_seq").is_number_unsigned()) {
      return false;
    }
  }
  pending_.clear();
  snapshot_seq_ = doc.is_null() ? 0 : doc.at("journal_seq").get<std::uint64_t>();
  for (auto& [id, facts] : jobs) note(id, std::move(facts));
  REHEARSE_ASSERT_LE(pending_.size(), jobs.size());  // at most one pending change per job read
  return true;
}

// The snapshot document without its job records: each job object under the
// top-level "jobs" is turned into its facts (into `jobs`, in file order; a
// later duplicate key replaces an earlier one as it does in a parsed tree)
// and dropped as soon as it is read, so the whole tree of a large snapshot
// never exists at once (it was the peak of a 100,000-job run's memory).
json DurableStateReader::parse_snapshot_jobs(const std::string& text,
                                             std::vector<std::pair<std::string, json>>& jobs) {
  std::string top_key;
  std::string job_key;
  const json::parser_callback_t keep = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) {
      top_key = parsed.get<std::string>();
      if (top_key == "jobs") jobs.clear();  // the last "jobs" member is the one a tree keeps
    } else if (event == json::parse_event_t::key && depth == 2) {
      job_key = parsed.get<std::string>();
    } else if (event == json::parse_event_t::object_end && depth == 2 && top_key == "jobs") {
      json facts = job_state_facts(parsed);
      if (!facts.is_null()) jobs.emplace_back(job_key, std::move(facts));
      return false;
    }
    return true;
  };
  json doc = json::parse(text, keep, /*allow_exceptions=*/false);
  if (doc.is_discarded()) jobs.clear();
  return doc;
}

// A job's facts as read now: pending when they differ from held_.
void DurableStateReader::note(const std::string& id, json facts) {
  std::string text = facts.dump();
  const auto held = held_.find(id);
  if (held != held_.end() && held->second == text) {
    pending_.erase(id);
    return;
  }
  pending_[id] = {std::move(facts), std::move(text)};
}

// The journal from its header on, over the jobs read before it.
void DurableStateReader::read_journal(const SimDisk& disk) {
  header_.clear();
  offset_ = 0;
  const std::string* journal = disk.durable_view(journal_path());
  if (journal == nullptr) return;
  const auto nl = journal->find('\n');
  if (nl == std::string::npos || journal->rfind("#rehearse-journal ", 0) != 0) return;
  header_ = journal->substr(0, nl + 1);
  offset_ = nl + 1;
  read_journal_from(*journal, offset_);
}

// Whole records from `from` on, until the first that is not intact (a torn
// tail is not durable state). Returns whether any record was read.
bool DurableStateReader::read_journal_from(const std::string& bytes, std::size_t from) {
  // Callers resume after a header or a whole record of these very bytes.
  REHEARSE_ASSERT_LE(from, bytes.size());
  bool any = false;
  std::size_t at = from;
  while (at < bytes.size()) {
    const auto nl = bytes.find('\n', at);
    if (nl == std::string::npos) break;
    const auto record = read_record(std::string_view(bytes).substr(at, nl - at));
    if (!record) break;
    const json payload = json::parse(record->second, nullptr, /*allow_exceptions=*/false);
    if (!is_job_record(payload)) break;
    // A record the snapshot already holds is read (it must be intact for the
    // records after it to count) but not turned into facts.
    if (record->first > snapshot_seq_) {
      const std::string id = payload.at("job_id").get<std::string>();
      note(id, job_state_facts(payload));
      journal_applied_ = true;
    }
    at = nl + 1;
    any = true;
  }
  REHEARSE_ASSERT(from <= at && at <= bytes.size());
  offset_ = at;
  return any;
}

std::vector<std::pair<std::string, json>> DurableStateReader::changed(const SimDisk& disk,
                                                                      bool full) {
  const std::string* journal = full ? nullptr : disk.durable_view(journal_path());
  const bool incremental = readable_ && journal != nullptr && !header_.empty() &&
                           journal->size() >= offset_ && journal->rfind(header_, 0) == 0;
  if (incremental) {
    // The offset only moves on from the end of the header it was read after.
    REHEARSE_ASSERT_GE(offset_, header_.size());
    read_journal_from(*journal, offset_);
  } else {
    readable_ = load_all(disk);
  }
  std::vector<std::pair<std::string, json>> out;
  if (!readable_) return out;
  out.reserve(pending_.size());
  for (auto& [id, facts] : pending_) {
    held_[id] = std::move(facts.second);
    out.emplace_back(id, std::move(facts.first));
  }
  pending_.clear();
  return out;
}

std::vector<TraceEvent> DurableStateReader::events_after(const SimDisk& disk,
                                                         const std::string& disk_event_type,
                                                         const std::string& path, TimeMs now) {
  std::vector<std::pair<std::string, json>> jobs;
  if (disk_event_type == "disk_fsync" && path == journal_path()) {
    jobs = changed(disk, /*full=*/false);
  } else if (disk_event_type == "disk_fsync_dir" && path == dir_) {
    jobs = changed(disk, /*full=*/true);
  }
  std::vector<TraceEvent> out;
  for (auto& [id, facts] : jobs) {
    TraceEvent e;
    e.t = now;
    e.type = "durable_job_state";
    e.job = id;
    e.data = std::move(facts);
    out.push_back(std::move(e));
  }
  return out;
}

// --------------------------------------------------------------- torn tails

namespace {

// The size of the record a "<seq> <length> " prefix announces (frame, payload,
// checksum and newline), when the bytes begin with such a prefix.
std::optional<std::uint64_t> announced_record_size(std::string_view bytes) {
  const auto prefix = read_frame_prefix(bytes);
  if (!prefix || prefix->length > bytes.size()) return std::nullopt;
  return prefix->sp2 + 1 + prefix->length + 1 + 8 + 1;
}

// Whether an intact record starts at `at` (a whole line whose frame and
// checksum hold).
bool intact_record_at(std::string_view bytes, std::size_t at) {
  REHEARSE_ASSERT_LT(at, bytes.size());  // callers look only inside the bytes
  const auto nl = bytes.find('\n', at);
  return nl != std::string_view::npos && read_record(bytes.substr(at, nl - at)).has_value();
}

bool is_torn(std::string_view tail) {
  REHEARSE_ASSERT(!tail.empty());  // journal_tail: a tail has at least one byte
  for (auto nl = tail.find('\n'); nl != std::string_view::npos; nl = tail.find('\n', nl + 1)) {
    if (nl + 1 < tail.size() && intact_record_at(tail, nl + 1)) return false;
  }
  const auto announced = announced_record_size(tail);
  return !announced || tail.size() <= *announced;
}

std::string crc_hex(std::string_view bytes) {
  char out[9];
  static constexpr char kHex[] = "0123456789abcdef";
  std::uint32_t v = witness_crc32c(bytes);
  for (int i = 7; i >= 0; --i, v >>= 4) out[i] = kHex[v & 0xFu];
  REHEARSE_ASSERT_EQ(v, 0u);  // eight hex digits hold every bit of a crc32c
  out[8] = '\0';
  return out;
}

}  // namespace

std::optional<JournalTail> journal_tail(std::string_view bytes) {
  const auto header_end = bytes.find('\n');
  if (header_end == std::string_view::npos || bytes.rfind("#rehearse-journal ", 0) != 0) {
    return std::nullopt;
  }
  std::size_t at = header_end + 1;
  while (at < bytes.size() && intact_record_at(bytes, at)) at = bytes.find('\n', at) + 1;
  // An intact record ends with a newline, so the scan never wraps back to 0.
  REHEARSE_ASSERT_GT(at, header_end);
  if (at >= bytes.size()) return std::nullopt;
  return JournalTail{at, bytes.size() - at, is_torn(bytes.substr(at))};
}

bool journal_records_whole(std::string_view bytes) {
  return bytes.rfind("#rehearse-journal ", 0) == 0 && bytes.find('\n') != std::string_view::npos &&
         !journal_tail(bytes).has_value();
}

JournalTailWatch::JournalTailWatch(std::string dir)
    : dir_(std::move(dir)), journal_(dir_ + "/" + kJournalFile) {
  REHEARSE_ASSERT(!dir_.empty());  // the store's directory: its files are dir_ + "/" + name
}

std::vector<TraceEvent> JournalTailWatch::events_after(const SimDisk& disk, const TraceEvent& e,
                                                       TimeMs now) {
  std::vector<TraceEvent> out;
  const std::string& type = e.type;
  const bool crash_or_boot =
      type == "disk_crash" || type == "disk_process_crashed" || type == "process_boot";
  const bool damage =
      type == "disk_torn_write" || type == "disk_corrupted" || type == "store_corrupt_injected";
  const bool change = type == "disk_write" || type == "disk_append" || type == "disk_remove" ||
                      type == "disk_rename";
  const bool sync = type == "disk_fsync" || type == "disk_fsync_dir";
  if (!crash_or_boot && !damage && !(damaged_ && (change || sync))) return out;  // most events
  const std::string path = e.str("path");
  if (crash_or_boot || (damage && path == journal_)) {
    // The world changed the bytes (or a process will read them afresh).
    look_for_tail(disk, now, out);
    look_for_copies(disk, now, out);
    return out;
  }
  if (!damaged_) return out;
  const bool journal_changed =
      (change && type != "disk_rename" && path == journal_) ||
      (type == "disk_rename" && (e.str("to") == journal_ || e.str("from") == journal_));
  if (journal_changed) check_gone(disk, now, out);
  const bool in_dir = path.size() > dir_.size() && path.compare(0, dir_.size(), dir_) == 0 &&
                      path[dir_.size()] == '/';
  if (damaged_ &&
      ((type == "disk_fsync_dir" && path == dir_) || (type == "disk_fsync" && in_dir))) {
    look_for_copies(disk, now, out);
  }
  return out;
}

// A new reading of the journal; the same damage found again records nothing.
void JournalTailWatch::look_for_tail(const SimDisk& disk, TimeMs now,
                                     std::vector<TraceEvent>& out) {
  const std::optional<std::string> bytes = disk.live_content(journal_);
  const std::optional<JournalTail> tail = bytes ? journal_tail(*bytes) : std::nullopt;
  if (!tail) {
    damaged_.reset();
    return;
  }
  // The tail runs from its offset to the end of the journal.
  REHEARSE_ASSERT_EQ(tail->offset + tail->length, bytes->size());
  REHEARSE_ASSERT_GT(tail->length, 0u);
  if (damaged_ && damaged_->bytes == *bytes) return;
  damaged_ = Damaged{*bytes, *tail, crc_hex(*bytes), {}};
  out.push_back(fact("journal_tail_found", now));
}

void JournalTailWatch::look_for_copies(const SimDisk& disk, TimeMs now,
                                       std::vector<TraceEvent>& out) {
  if (!damaged_) return;
  for (const std::string& copy : durable_copies(disk)) {
    if (!damaged_->kept.insert(copy).second) continue;
    TraceEvent e = fact("journal_tail_kept", now);
    e.data["copy"] = copy;
    out.push_back(std::move(e));
  }
}

void JournalTailWatch::check_gone(const SimDisk& disk, TimeMs now, std::vector<TraceEvent>& out) {
  REHEARSE_ASSERT(damaged_.has_value());  // only a damage found can be gone
  const std::optional<std::string> live = disk.live_content(journal_);
  if (live && live->rfind(damaged_->bytes, 0) == 0) return;  // still there (maybe grown)
  TraceEvent e = fact("journal_tail_gone", now);
  e.data["kept_as"] = durable_copies(disk);
  out.push_back(std::move(e));
  damaged_.reset();
}

std::vector<std::string> JournalTailWatch::durable_copies(const SimDisk& disk) const {
  REHEARSE_ASSERT(damaged_.has_value());  // copies of a damage found
  std::vector<std::string> copies;
  for (const std::string& name : disk.durable_listing(dir_)) {
    const std::string path = dir_ + "/" + name;
    if (path == journal_) continue;
    const std::string* bytes = disk.durable_view(path);
    if (bytes != nullptr && *bytes == damaged_->bytes) copies.push_back(path);
  }
  return copies;
}

TraceEvent JournalTailWatch::fact(const char* type, TimeMs now) const {
  REHEARSE_ASSERT(damaged_.has_value());  // every fact is about the damage found
  TraceEvent e;
  e.t = now;
  e.type = type;
  e.data = {{"path", journal_},
            {"offset", damaged_->tail.offset},
            {"length", damaged_->tail.length},
            {"torn", damaged_->tail.torn},
            {"digest", damaged_->digest}};
  return e;
}

namespace {

// One slot record of a ledger (snapshot or journal) reduced to its facts.
void add_ledger_slot(const json& r, std::map<std::string, json>& slots) {
  if (!member(r, "slot").is_string()) return;
  const json& to = member(r, "delivered_to");
  slots[r.at("slot").get<std::string>()] = {{"delivered_to", to.is_array() ? to : json::array()},
                                            {"guard", !member(r, "guard_at").is_null()},
                                            {"verdict", member(r, "verdict")},
                                            {"outbox", !member(r, "outbox").is_null()}};
}

}  // namespace

std::optional<std::pair<std::string, std::map<std::string, json>>> ledger_facts(
    std::string_view bytes) {
  const json doc = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (!member(doc, "job_id").is_string() || !member(doc, "slots").is_array()) return std::nullopt;
  std::map<std::string, json> slots;
  for (const json& r : doc.at("slots")) add_ledger_slot(r, slots);
  REHEARSE_ASSERT_LE(slots.size(), doc.at("slots").size());
  return std::make_pair(doc.at("job_id").get<std::string>(), std::move(slots));
}

std::optional<std::pair<std::string, std::map<std::string, json>>> ledger_journal_facts(
    std::string_view bytes) {
  const std::size_t header_end = bytes.find('\n');
  if (header_end == std::string_view::npos) return std::nullopt;
  const json header = json::parse(bytes.substr(0, header_end), nullptr, false);
  if (!member(header, "job_id").is_string()) return std::nullopt;
  std::map<std::string, json> slots;
  std::size_t at = header_end + 1;
  while (at < bytes.size()) {
    const std::size_t end = bytes.find('\n', at);
    if (end == std::string_view::npos) break;  // a torn last line
    const std::string_view line = bytes.substr(at, end - at);
    at = end + 1;
    if (line.size() < 10 || line[8] != ' ') break;
    std::uint32_t crc = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + 8, crc, 16);
    if (ec != std::errc{} || p != line.data() + 8) break;
    const std::string_view body = line.substr(9);
    if (witness_crc32c(body) != crc) break;
    const json record = json::parse(body, nullptr, false);
    if (record.is_discarded()) break;
    add_ledger_slot(record, slots);
  }
  REHEARSE_ASSERT_LE(at, bytes.size());  // each record read ends with its newline
  return std::make_pair(header.at("job_id").get<std::string>(), std::move(slots));
}

namespace {

// The `id` of each object of `list`; false when one has none.
bool ids_of(const json& list, std::vector<std::uint64_t>& out) {
  if (!list.is_array()) return false;
  const std::size_t before = out.size();
  for (const json& item : list) {
    const json& id = member(item, "id");
    if (!id.is_number_unsigned()) return false;
    out.push_back(id.get<std::uint64_t>());
  }
  REHEARSE_ASSERT_EQ(out.size() - before, list.size());  // one id per object
  return true;
}

}  // namespace

std::optional<QueueFileFacts> queue_file_facts(std::string_view bytes) {
  const std::size_t newline = bytes.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  const std::string_view text = bytes.substr(0, newline);
  const std::string_view check = bytes.substr(newline + 1);
  constexpr std::string_view kPrefix = "crc32c=";
  if (check.size() != kPrefix.size() + 9 || check.substr(0, kPrefix.size()) != kPrefix ||
      check.back() != '\n') {
    return std::nullopt;
  }
  std::uint32_t crc = 0;
  const char* digits = check.data() + kPrefix.size();
  const auto [end, ec] = std::from_chars(digits, digits + 8, crc, 16);
  if (ec != std::errc{} || end != digits + 8 || witness_crc32c(text) != crc) return std::nullopt;
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  QueueFileFacts facts;
  if (!ids_of(member(doc, "entries"), facts.entries) ||
      !ids_of(member(doc, "outbox"), facts.outbox)) {
    return std::nullopt;
  }
  return facts;
}

}  // namespace rehearse::sim
