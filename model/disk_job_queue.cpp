#include "model/disk_job_queue.hpp"

#include <fmt/format.h>

#include <utility>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/state_codec.hpp"

namespace rehearse {
namespace {

using nlohmann::json;
using Content = DiskJobQueue::Content;

constexpr std::string_view kCrcPrefix = "crc32c=";

std::string parent_of(const std::string& dir) {
  const auto slash = dir.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return dir.substr(0, slash);
}

Error not_found(std::uint64_t id) {
  return make_error(ErrorCode::not_found, fmt::format("no queue entry {}", id), "queue");
}

// --- the operations on a Content (pure; the caller persists the result) ----

std::uint64_t add_to(Content& c, const QueueEntrySpec& spec, bool& added) {
  const std::string key = queue_key(spec);
  for (const auto& [id, e] : c.entries) {
    if (queue_key(e.spec) == key) {
      added = false;
      return id;
    }
  }
  QueueEntry entry;
  entry.id = c.next_id++;
  entry.spec = spec;
  const bool fresh = c.entries.emplace(entry.id, entry).second;
  REHEARSE_ASSERT(fresh);  // ids are never reused (next_id only grows)
  added = true;
  return entry.id;
}

std::size_t cancel_in(Content& c, const std::string& job_id, TimeMs slot) {
  std::size_t dropped = 0;
  for (auto it = c.entries.begin(); it != c.entries.end();) {
    const QueueEntry& e = it->second;
    if (e.state == QueueEntryState::waiting && e.spec.kind == RunKind::retry &&
        e.spec.job_id == job_id && e.spec.slot == slot) {
      it = c.entries.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

std::uint64_t outbox_add_to(Content& c, std::string target, std::string payload) {
  OutboxMessage m{c.next_outbox_id++, std::move(target), std::move(payload)};
  const std::uint64_t id = m.id;
  const bool fresh = c.outbox.emplace(id, std::move(m)).second;
  REHEARSE_ASSERT(fresh);
  REHEARSE_ASSERT_LT(id, c.next_outbox_id);
  return id;
}

// --- the document -------------------------------------------------------------

json entry_json(const QueueEntry& e) {
  json j{{"id", e.id},
         {"job", e.spec.job_id},
         {"slot", e.spec.slot},
         {"kind", to_string(e.spec.kind)},
         {"attempt", e.spec.attempt},
         {"ready_at", e.spec.ready_at},
         {"state", to_string(e.state)}};
  if (!e.intent.empty()) j["intent"] = e.intent;
  return j;
}

QueueEntry entry_of(const json& j) {
  QueueEntry e;
  e.id = j.at("id").get<std::uint64_t>();
  e.spec.job_id = j.at("job").get<std::string>();
  e.spec.slot = j.at("slot").get<TimeMs>();
  const std::string kind = j.at("kind").get<std::string>();
  if (kind != "regular" && kind != "retry") throw std::invalid_argument("kind " + kind);
  e.spec.kind = kind == "retry" ? RunKind::retry : RunKind::regular;
  e.spec.attempt = j.at("attempt").get<int>();
  e.spec.ready_at = j.at("ready_at").get<TimeMs>();
  const std::string state = j.at("state").get<std::string>();
  if (state != "waiting" && state != "active") throw std::invalid_argument("state " + state);
  e.state = state == "active" ? QueueEntryState::active : QueueEntryState::waiting;
  e.intent = j.value("intent", std::string());
  return e;
}

}  // namespace

std::string DiskJobQueue::encode(const Content& content) {
  json entries = json::array();
  for (const auto& [id, e] : content.entries) entries.push_back(entry_json(e));
  json outbox = json::array();
  for (const auto& [id, m] : content.outbox) {
    outbox.push_back({{"id", m.id}, {"target", m.target}, {"payload", m.payload}});
  }
  const json body{{"format", kFormat},
                  {"next_id", content.next_id},
                  {"next_outbox_id", content.next_outbox_id},
                  {"entries", std::move(entries)},
                  {"outbox", std::move(outbox)}};
  const std::string text = body.dump();
  // The framing: the document is one line, the checksum line follows it.
  REHEARSE_ASSERT_EQ(text.find('\n'), std::string::npos);
  return fmt::format("{}\n{}{:08x}\n", text, kCrcPrefix, crc32c(text));
}

Result<Content> DiskJobQueue::decode(std::string_view bytes) {
  const auto newline = bytes.find('\n');
  if (newline == std::string_view::npos) {
    return make_error(ErrorCode::corrupt, "the queue file has no checksum line");
  }
  const std::string_view text = bytes.substr(0, newline);
  const std::string expected = fmt::format("{}{:08x}\n", kCrcPrefix, crc32c(text));
  if (bytes.substr(newline + 1) != expected) {
    return make_error(ErrorCode::corrupt,
                      "the queue file's checksum line does not match its content (expected " +
                          expected.substr(0, expected.size() - 1) + ")");
  }
  try {
    const json body = json::parse(text);
    if (body.at("format").get<int>() != kFormat) {
      return make_error(ErrorCode::corrupt, fmt::format("the queue file's format is {}, not {}",
                                                        body.at("format").dump(), kFormat));
    }
    Content c;
    c.next_id = body.at("next_id").get<std::uint64_t>();
    c.next_outbox_id = body.at("next_outbox_id").get<std::uint64_t>();
    for (const json& j : body.at("entries")) {
      QueueEntry e = entry_of(j);
      if (e.id >= c.next_id) throw std::invalid_argument("an entry id not below next_id");
      c.entries.emplace(e.id, std::move(e));
    }
    for (const json& j : body.at("outbox")) {
      OutboxMessage m{j.at("id").get<std::uint64_t>(), j.at("target").get<std::string>(),
                      j.at("payload").get<std::string>()};
      if (m.id >= c.next_outbox_id) throw std::invalid_argument("an outbox id not below next");
      c.outbox.emplace(m.id, std::move(m));
    }
    return c;
  } catch (const std::exception& e) {
    return make_error(ErrorCode::corrupt,
                      std::string("the queue file does not hold a queue: ") + e.what());
  }
}

std::string DiskJobQueue::path() const { return join_path(dir_, kFileName); }

Result<DiskJobQueue> DiskJobQueue::open(Disk& disk, std::string dir) {
  if (dir.empty()) return make_error(ErrorCode::invalid_argument, "queue directory is empty");
  DiskJobQueue queue(disk, std::move(dir));
  if (auto s = disk.create_dir(queue.dir_); !s.ok()) return s.error();
  if (auto s = disk.fsync_dir(parent_of(queue.dir_)); !s.ok()) return s.error();
  auto lock = disk.lock_exclusive(join_path(queue.dir_, kLockName));
  if (!lock.ok()) return std::move(lock).error();
  queue.lock_ = std::move(lock).value();
  if (Status s = queue.load(); !s.ok()) return s.error();
  return queue;
}

Status DiskJobQueue::load() {
  auto bytes = disk_->read_file(path());
  if (!bytes.ok()) return bytes.error();
  if (!bytes->has_value()) return {};  // a fresh queue
  auto content = decode(**bytes);
  if (!content.ok()) {
    Error error = std::move(content).error();
    error.where = path();
    return error;
  }
  // What is handed out from here on must survive a power loss.
  if (auto s = disk_->fsync_file(path()); !s.ok()) return s;
  if (auto s = disk_->fsync_dir(dir_); !s.ok()) return s;
  content_ = std::move(content).value();
  return {};
}

Status DiskJobQueue::usable() const {
  if (broken_) {
    return make_error(ErrorCode::io_error,
                      "the queue failed earlier and must be reopened: " + broken_->describe(),
                      path());
  }
  return {};
}

Status DiskJobQueue::persist(Content next) {
  const std::string temp = path() + kTempSuffix;
  Status s = disk_->write_file(temp, encode(next));
  if (s.ok()) s = disk_->fsync_file(temp);
  if (s.ok()) s = disk_->rename_file(temp, path());
  if (s.ok()) s = disk_->fsync_dir(dir_);
  if (!s.ok()) {
    broken_ = s.error();
    return s;
  }
  content_ = std::move(next);
  return {};
}

Result<QueueAddResult> DiskJobQueue::add(QueueEntrySpec spec) {
  if (Status s = usable(); !s.ok()) return s.error();
  Content next = content_;
  QueueAddResult out;
  out.id = add_to(next, spec, out.added);
  if (!out.added) return out;  // nothing changes
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return out;
}

Result<std::optional<QueueEntry>> DiskJobQueue::take_next(TimeMs now,
                                                          const std::set<std::string>& busy_jobs) {
  if (Status s = usable(); !s.ok()) return s.error();
  const QueueEntry* best = nullptr;
  for (const auto& [id, e] : content_.entries) {
    if (e.state != QueueEntryState::waiting || e.spec.ready_at > now) continue;
    if (busy_jobs.count(e.spec.job_id) != 0) continue;
    if (best == nullptr || e.spec.ready_at < best->spec.ready_at) best = &e;
  }
  if (best == nullptr) return std::optional<QueueEntry>{};
  Content next = content_;
  QueueEntry& taken = next.entries.at(best->id);
  taken.state = QueueEntryState::active;
  taken.intent.clear();
  const QueueEntry out = taken;
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return std::optional<QueueEntry>{out};
}

Result<std::optional<TimeMs>> DiskJobQueue::next_ready_at(const std::set<std::string>& busy_jobs) {
  if (Status s = usable(); !s.ok()) return s.error();
  std::optional<TimeMs> best;
  for (const auto& [id, e] : content_.entries) {
    if (e.state != QueueEntryState::waiting || busy_jobs.count(e.spec.job_id) != 0) continue;
    if (!best || e.spec.ready_at < *best) best = e.spec.ready_at;
  }
  return best;
}

Status DiskJobQueue::set_intent(std::uint64_t id, std::string intent) {
  if (Status s = usable(); !s.ok()) return s;
  auto it = content_.entries.find(id);
  if (it == content_.entries.end()) return not_found(id);
  if (it->second.state != QueueEntryState::active) {
    return make_error(ErrorCode::invalid_argument, fmt::format("queue entry {} is not active", id),
                      "queue");
  }
  Content next = content_;
  next.entries.at(id).intent = std::move(intent);
  return persist(std::move(next));
}

Result<std::vector<std::uint64_t>> DiskJobQueue::finish(std::uint64_t id, QueueFinish finish) {
  if (Status s = usable(); !s.ok()) return s.error();
  if (content_.entries.count(id) == 0) return not_found(id);
  Content next = content_;
  next.entries.erase(id);
  for (const RetryCancel& c : finish.cancels) cancel_in(next, c.job_id, c.slot);
  for (const QueueEntrySpec& spec : finish.adds) {
    bool added = false;
    add_to(next, spec, added);
  }
  std::vector<std::uint64_t> ids;
  ids.reserve(finish.outbox.size());
  for (OutboxMessage& m : finish.outbox) {
    ids.push_back(outbox_add_to(next, std::move(m.target), std::move(m.payload)));
  }
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return ids;
}

Status DiskJobQueue::requeue(std::uint64_t id) {
  if (Status s = usable(); !s.ok()) return s;
  if (content_.entries.count(id) == 0) return not_found(id);
  Content next = content_;
  QueueEntry& e = next.entries.at(id);
  e.state = QueueEntryState::waiting;
  e.intent.clear();
  return persist(std::move(next));
}

Result<std::vector<QueueEntry>> DiskJobQueue::list() {
  if (Status s = usable(); !s.ok()) return s.error();
  std::vector<QueueEntry> out;
  for (const auto& [id, e] : content_.entries) out.push_back(e);
  return out;
}

Result<std::vector<QueueEntry>> DiskJobQueue::list_active() {
  if (Status s = usable(); !s.ok()) return s.error();
  std::vector<QueueEntry> out;
  for (const auto& [id, e] : content_.entries) {
    if (e.state == QueueEntryState::active) out.push_back(e);
  }
  return out;
}

Result<std::size_t> DiskJobQueue::cancel_retries(const std::string& job_id, TimeMs slot) {
  if (Status s = usable(); !s.ok()) return s.error();
  Content next = content_;
  const std::size_t dropped = cancel_in(next, job_id, slot);
  if (dropped == 0) return dropped;
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return dropped;
}

Result<std::uint64_t> DiskJobQueue::outbox_add(std::string target, std::string payload) {
  if (Status s = usable(); !s.ok()) return s.error();
  Content next = content_;
  const std::uint64_t id = outbox_add_to(next, std::move(target), std::move(payload));
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return id;
}

Result<std::vector<OutboxMessage>> DiskJobQueue::outbox_list() {
  if (Status s = usable(); !s.ok()) return s.error();
  std::vector<OutboxMessage> out;
  for (const auto& [id, m] : content_.outbox) out.push_back(m);
  return out;
}

Result<bool> DiskJobQueue::outbox_remove(std::uint64_t id) {
  if (Status s = usable(); !s.ok()) return s.error();
  if (content_.outbox.count(id) == 0) return false;
  Content next = content_;
  next.outbox.erase(id);
  if (Status s = persist(std::move(next)); !s.ok()) return s.error();
  return true;
}

}  // namespace rehearse
