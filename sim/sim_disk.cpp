#include "sim/sim_disk.hpp"

#include <functional>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "sim/simulator.hpp"

namespace rehearse::sim {

namespace {

// Messages mirror the operating system's (PosixDisk's) so that a reader of a
// failure does not care which disk produced it.
constexpr const char* kNoEntry = "No such file or directory";
constexpr const char* kIsDir = "Is a directory";
constexpr const char* kNotDir = "Not a directory";

Error os_error(const char* operation, const std::string& path, std::string_view reason) {
  return make_error(ErrorCode::io_error, fmt::format("{} failed: {}", operation, reason), path);
}

bool is_root(std::string_view path) { return path == "/" || path == "."; }

// Collapses repeated '/', drops "." components and a trailing '/'. ".." is
// kept as a name (the disk has no links to resolve it through). "" and "./"
// are ".", the relative root; "/" is the absolute root.
std::string normalise(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::string out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const std::size_t start = i;
    while (i < path.size() && path[i] != '/') ++i;
    const std::string_view part = path.substr(start, i - start);
    if (part.empty() || part == ".") continue;
    if (!out.empty() || absolute) out.push_back('/');
    out.append(part);
  }
  if (out.empty()) return absolute ? "/" : ".";
  return out;
}

// Why an operation finds no directory to work in: the parent is missing
// (ENOENT) or is a file (ENOTDIR).
Error missing_parent(const char* operation, const std::string& path, bool parent_is_file) {
  return os_error(operation, path, parent_is_file ? kNotDir : kNoEntry);
}

// Parent and name of a normalised path that is not a root.
std::pair<std::string, std::string> split(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

const char* to_string(CorruptionKind kind) noexcept {
  switch (kind) {
    case CorruptionKind::flip_bytes: return "flip_bytes";
    case CorruptionKind::truncate: return "truncate";
    case CorruptionKind::empty: return "empty";
    case CorruptionKind::garbage: return "garbage";
  }
  return "?";
}

const char* to_string(TornKind kind) noexcept {
  switch (kind) {
    case TornKind::prefix: return "prefix";
    case TornKind::prefix_garbage: return "prefix_garbage";
  }
  return "?";
}

// --- locks -------------------------------------------------------------------

// Shared with the handles, so a handle that outlives the disk (or a lock a
// crash already released and someone else took) releases nothing it should not.
struct SimDisk::LockTable {
  struct Held {
    DiskOwner owner = 0;
    std::uint64_t token = 0;
  };
  std::map<std::string, Held, std::less<>> held;
  std::uint64_t next_token = 1;
  // Records the release of a lock (disk_unlock); emptied when the disk goes,
  // so a handle that outlives it records nothing.
  std::function<void(const std::string& path, DiskOwner owner)> on_release;

  std::size_t release_owner(DiskOwner owner) {
    return std::erase_if(held, [owner](const auto& kv) { return kv.second.owner == owner; });
  }
};

class SimDisk::Lock final : public DiskLock {
 public:
  Lock(std::weak_ptr<LockTable> table, std::string path, std::uint64_t token)
      : table_(std::move(table)), path_(std::move(path)), token_(token) {}
  ~Lock() override {
    const auto table = table_.lock();
    if (!table) return;
    const auto it = table->held.find(path_);
    if (it == table->held.end() || it->second.token != token_) return;
    const DiskOwner owner = it->second.owner;
    table->held.erase(it);
    if (table->on_release) table->on_release(path_, owner);
  }

 private:
  std::weak_ptr<LockTable> table_;
  std::string path_;
  std::uint64_t token_;
};

// --- construction and hooks --------------------------------------------------

SimDisk::SimDisk() : SimDisk(nullptr) {}

SimDisk::SimDisk(Trace* trace, Rng rng, SimDiskHooks hooks)
    : trace_(trace), rng_(rng), hooks_(std::move(hooks)), locks_(std::make_shared<LockTable>()) {
  dirs_.emplace("/", Directory{});
  dirs_.emplace(".", Directory{});
  locks_->on_release = [this](const std::string& path, DiskOwner holder) {
    record("disk_unlock", {{"path", path}, {"process", holder}});
  };
}

SimDisk::~SimDisk() { locks_->on_release = nullptr; }

DiskOwner SimDisk::owner() const { return hooks_.current_owner ? hooks_.current_owner() : 0; }
TimeMs SimDisk::now() const { return hooks_.now ? hooks_.now() : 0; }

void SimDisk::record(const char* type, nlohmann::json data) {
  if (trace_ == nullptr) return;
  TraceEvent e;
  e.t = now();
  e.type = type;
  e.data = std::move(data);
  trace_->record(std::move(e));
}

// Every port operation passes here first: a dead process is refused, and the
// fail-stop countdown decides whether this operation happens at all.
Status SimDisk::admit(const char* operation, const std::string& path) {
  const DiskOwner who = owner();
  if (dead_.count(who) != 0) {
    ++counters_.refused;
    return make_error(ErrorCode::io_error,
                      fmt::format("{} refused: simulated process {} is dead (a disk fault killed "
                                  "it) and must be crashed before it uses the disk again",
                                  operation, who),
                      path);
  }
  if (fail_stop_ && (!fail_stop_->owner || *fail_stop_->owner == who)) {
    if (fail_stop_->remaining == 0) {
      fail_stop_.reset();
      ++counters_.fail_stops;
      if (trace_ != nullptr) {
        record("disk_fail_stop", {{"path", path},
                                  {"operation", operation},
                                  {"operation_index", operations_},
                                  {"process", who}});
      }
      kill(who);
      return os_error(operation, path, "the process died before the operation (fail-stop)");
    }
    --fail_stop_->remaining;
  }
  ++operations_;
  return {};
}

void SimDisk::kill(DiskOwner who) {
  dead_.insert(who);
  // The kernel drops a dead process's flocks at once, whenever the simulator
  // gets round to destroying its frames.
  locks_->release_owner(who);
  if (hooks_.on_death) hooks_.on_death(who);
}

// --- namespace ----------------------------------------------------------------

Result<SimDisk::Located> SimDisk::locate(const std::string& path) const {
  if (path.empty()) return os_error("open", path, kNoEntry);
  Located at;
  at.path = normalise(path);
  if (!is_root(at.path)) {
    auto [parent, name] = split(at.path);
    at.parent = std::move(parent);
    at.name = std::move(name);
  }
  return at;
}

SimDisk::Directory* SimDisk::find_dir(const std::string& normalised) {
  const auto it = dirs_.find(normalised);
  return it == dirs_.end() ? nullptr : &it->second;
}

const SimDisk::Directory* SimDisk::find_dir(const std::string& normalised) const {
  const auto it = dirs_.find(normalised);
  return it == dirs_.end() ? nullptr : &it->second;
}

const SimDisk::Entry* SimDisk::find_live(const Located& at) const {
  if (at.name.empty()) return nullptr;
  const Directory* d = find_dir(at.parent);
  if (d == nullptr) return nullptr;
  const auto it = d->live.find(at.name);
  return it == d->live.end() ? nullptr : &it->second;
}

SimDisk::Inode& SimDisk::inode(std::uint64_t id) {
  const auto it = inodes_.find(id);
  REHEARSE_ASSERT(it != inodes_.end());
  return it->second;
}

std::uint64_t SimDisk::new_inode() {
  const std::uint64_t id = next_inode_++;
  inodes_.emplace(id, Inode{});
  return id;
}

void SimDisk::link(const Entry& e) {
  if (!e.dir) ++inode(e.inode).refs;
}

void SimDisk::unlink(const Entry& e) {
  if (e.dir) return;
  Inode& file = inode(e.inode);
  REHEARSE_ASSERT(file.refs > 0);
  if (--file.refs == 0) inodes_.erase(e.inode);
}

void SimDisk::set_entry(Entries& entries, const std::string& name, Entry e) {
  link(e);  // before the unlink below, so an entry set to itself keeps its inode
  const auto it = entries.find(name);
  if (it == entries.end()) {
    entries.emplace(name, e);
    return;
  }
  const Entry old = it->second;
  it->second = e;
  unlink(old);
}

void SimDisk::erase_entry(Entries& entries, const std::string& name) {
  const auto it = entries.find(name);
  if (it == entries.end()) return;
  const Entry old = it->second;
  entries.erase(it);
  unlink(old);
}

void SimDisk::set_live(Directory& d, const std::string& name, Entry e) {
  set_entry(d.live, name, e);
  d.dirty.insert(name);
}

void SimDisk::erase_live(Directory& d, const std::string& name) {
  erase_entry(d.live, name);
  d.dirty.insert(name);
}

// The durable entries become the live ones: only the names changed since the
// last sync are looked at (the others are the same in both).
void SimDisk::sync_dir(Directory& d) {
  for (const std::string& name : d.dirty) {
    const auto live = d.live.find(name);
    if (live == d.live.end()) {
      erase_entry(d.durable, name);
    } else {
      set_entry(d.durable, name, live->second);
    }
  }
  d.dirty.clear();
}

Result<SimDisk::Inode*> SimDisk::open_for_write(const Located& at, const char* operation) {
  if (at.name.empty()) return os_error(operation, at.path, kIsDir);
  Directory* d = find_dir(at.parent);
  if (d == nullptr) {
    const auto parent = locate(at.parent);
    return missing_parent(operation, at.path, parent.ok() && find_live(*parent) != nullptr);
  }
  const auto it = d->live.find(at.name);
  if (it != d->live.end()) {
    if (it->second.dir) return os_error(operation, at.path, kIsDir);
    return &inode(it->second.inode);
  }
  const std::uint64_t id = new_inode();
  set_live(*d, at.name, Entry{false, id});
  return &inode(id);
}

// --- the Disk port -------------------------------------------------------------

Result<std::string> SimDisk::read_impl(const std::string& path, const char* operation,
                                       std::uint64_t offset, std::uint64_t length_max,
                                       bool& missing) {
  missing = false;
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  if (at->name.empty()) return os_error(operation, path, kIsDir);
  const Entry* e = find_live(*at);
  if (e == nullptr) {
    if (find_dir(at->parent) == nullptr) {
      const auto parent = locate(at->parent);
      if (parent.ok() && find_live(*parent) != nullptr) {
        return missing_parent(operation, path, true);
      }
    }
    missing = true;
    return std::string{};
  }
  if (e->dir) return os_error(operation, path, kIsDir);
  const std::string& data = inode(e->inode).data;
  const std::uint64_t n = offset >= data.size() ? 0 : std::min(data.size() - offset, length_max);
  note_read(at->path, offset, n);
  if (n == 0) return std::string{};
  counters_.bytes_read += n;
  return data.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
}

void SimDisk::watch_reads(const std::string& path) {
  auto at = locate(path);
  if (!at.ok()) return;
  read_watched_.insert(at->path);
  std::erase_if(reads_traced_, [&](const auto& read) { return read.second == at->path; });
}

// The first read of a watched file by this process since it was last damaged
// or the process last crashed.
void SimDisk::note_read(const std::string& normalised, std::uint64_t offset, std::uint64_t bytes) {
  if (read_watched_.count(normalised) == 0) return;
  const DiskOwner who = owner();
  if (!reads_traced_.emplace(who, normalised).second) return;
  record("disk_read",
         {{"path", normalised}, {"offset", offset}, {"bytes", bytes}, {"process", who}});
}

Result<std::optional<std::string>> SimDisk::read_file(const std::string& path) {
  if (auto s = admit("read", path); !s.ok()) return s.error();
  ++counters_.read_files;
  bool missing = false;
  auto bytes = read_impl(path, "open for reading", 0, kReadToEnd, missing);
  if (!bytes.ok()) return std::move(bytes).error();
  if (missing) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(*bytes)};
}

Result<std::optional<std::string>> SimDisk::read_range(const std::string& path,
                                                       std::uint64_t offset,
                                                       std::uint64_t length_max) {
  if (auto s = admit("read", path); !s.ok()) return s.error();
  ++counters_.read_ranges;
  bool missing = false;
  auto bytes = read_impl(path, "open for reading", offset, length_max, missing);
  if (!bytes.ok()) return std::move(bytes).error();
  if (missing) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(*bytes)};
}

// A torn write: the prefix (and maybe garbage) reaches the file and the
// medium, the rest never does, and the issuing process is dead.
Status SimDisk::tear(const Located& at, Inode& file, std::string_view bytes, bool append) {
  const TornWrite torn = *torn_;
  torn_.reset();
  const std::uint64_t length = bytes.size();
  std::uint64_t keep = 0;
  if (length > 0) {
    keep = torn.prefix_bytes ? std::min(*torn.prefix_bytes, length - 1) : rng_.next_below(length);
  }
  std::string persisted(bytes.substr(0, static_cast<std::size_t>(keep)));
  std::uint64_t garbage = 0;
  if (torn.kind == TornKind::prefix_garbage && keep < length) {
    garbage = 1 + rng_.next_below(length - keep);
    for (std::uint64_t i = 0; i < garbage; ++i) {
      persisted.push_back(static_cast<char>(rng_.next_below(256)));
    }
  }
  if (!append) file.data.clear();
  file.data.append(persisted);
  ++file.data_version;
  // Writeback flushed the file's pages mid-write: what reached the file is on
  // the medium too, so a power loss keeps the tear (and anything written to
  // the file before it, as a real flush would).
  file.durable = file.data;
  file.durable_is_prefix = true;
  ++file.durable_version;
  ++counters_.torn_writes;
  counters_.bytes_written += persisted.size();
  const DiskOwner who = owner();
  if (trace_ != nullptr) {
    record("disk_torn_write", {{"path", at.path},
                               {"operation", append ? "append" : "write"},
                               {"bytes", length},
                               {"persisted", keep},
                               {"garbage", garbage},
                               {"process", who}});
  }
  kill(who);
  return os_error(append ? "append" : "write", at.path,
                  "the process died in the middle of the write (torn write)");
}

Status SimDisk::write_file(const std::string& path, std::string_view bytes) {
  if (auto s = admit("write", path); !s.ok()) return s;
  ++counters_.writes;
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  const bool created = find_live(*at) == nullptr;
  auto file = open_for_write(*at, "open for writing");
  if (!file.ok()) return std::move(file).error();
  Inode& f = **file;
  if (torn_ && at->path.rfind(torn_->path_prefix, 0) == 0) return tear(*at, f, bytes, false);
  f.data.assign(bytes);
  ++f.data_version;
  f.durable_is_prefix =
      f.durable.size() <= f.data.size() && f.data.compare(0, f.durable.size(), f.durable) == 0;
  counters_.bytes_written += bytes.size();
  if (trace_ != nullptr) {
    record(
        "disk_write",
        {{"path", at->path}, {"bytes", bytes.size()}, {"created", created}, {"process", owner()}});
  }
  return {};
}

Status SimDisk::append_file(const std::string& path, std::string_view bytes) {
  if (auto s = admit("append", path); !s.ok()) return s;
  ++counters_.appends;
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  const bool created = find_live(*at) == nullptr;
  auto file = open_for_write(*at, "open for appending");
  if (!file.ok()) return std::move(file).error();
  Inode& f = **file;
  if (torn_ && at->path.rfind(torn_->path_prefix, 0) == 0) return tear(*at, f, bytes, true);
  f.data.append(bytes);
  ++f.data_version;
  counters_.bytes_written += bytes.size();
  if (trace_ != nullptr) {
    record("disk_append", {{"path", at->path},
                           {"bytes", bytes.size()},
                           {"size", f.data.size()},
                           {"created", created},
                           {"process", owner()}});
  }
  return {};
}

Status SimDisk::fsync_file(const std::string& path) {
  if (auto s = admit("fsync", path); !s.ok()) return s;
  ++counters_.fsyncs;
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  const Entry* e = find_live(*at);
  if (at->name.empty() || (e != nullptr && e->dir)) {
    // fsync(2) on a directory descriptor syncs its entries, as PosixDisk's
    // open-then-fsync would.
    Directory& d = *find_dir(at->path);
    sync_dir(d);
    if (trace_ != nullptr) {
      record("disk_fsync_dir",
             {{"path", at->path}, {"entries", d.durable.size()}, {"process", owner()}});
    }
    return {};
  }
  if (e == nullptr) return os_error("open for fsync", path, kNoEntry);
  Inode& f = inode(e->inode);
  std::uint64_t synced = 0;
  if (f.durable_is_prefix && f.durable.size() <= f.data.size()) {
    synced = f.data.size() - f.durable.size();
    f.durable.append(f.data, f.durable.size(), std::string::npos);
  } else {
    synced = f.data.size();
    f.durable = f.data;
  }
  f.durable_is_prefix = true;
  ++f.durable_version;
  counters_.bytes_synced += synced;
  if (trace_ != nullptr) {
    record("disk_fsync", {{"path", at->path},
                          {"bytes", f.durable.size()},
                          {"synced", synced},
                          {"process", owner()}});
  }
  return {};
}

Status SimDisk::rename_file(const std::string& from, const std::string& to) {
  const std::string where = from + " -> " + to;
  if (auto s = admit("rename", where); !s.ok()) return s;
  ++counters_.renames;
  auto src = locate(from);
  if (!src.ok()) return os_error("rename", where, kNoEntry);
  auto dst = locate(to);
  if (!dst.ok()) return os_error("rename", where, kNoEntry);
  const Entry* e = find_live(*src);
  if (e == nullptr) return os_error("rename", where, kNoEntry);
  if (e->dir) {
    return os_error("rename", where, "renaming a directory is not supported by the simulated disk");
  }
  if (dst->name.empty()) return os_error("rename", where, kIsDir);
  Directory* to_dir = find_dir(dst->parent);
  if (to_dir == nullptr) return os_error("rename", where, kNoEntry);
  if (const Entry* target = find_live(*dst); target != nullptr && target->dir) {
    return os_error("rename", where, kIsDir);
  }
  const Entry moved = *e;
  const std::uint64_t bytes = inode(moved.inode).data.size();
  if (src->path != dst->path) {
    set_live(*to_dir, dst->name, moved);
    erase_live(*find_dir(src->parent), src->name);
  }
  if (trace_ != nullptr) {
    record("disk_rename",
           {{"from", src->path}, {"to", dst->path}, {"bytes", bytes}, {"process", owner()}});
  }
  return {};
}

Status SimDisk::fsync_dir(const std::string& dir) {
  if (auto s = admit("fsync_dir", dir); !s.ok()) return s;
  ++counters_.fsync_dirs;
  const std::string path = normalise(dir);
  Directory* d = find_dir(path);
  if (d == nullptr) {
    const auto at = locate(path);
    const bool is_file = at.ok() && find_live(*at) != nullptr;
    return os_error("open directory for fsync", dir, is_file ? kNotDir : kNoEntry);
  }
  sync_dir(*d);
  if (trace_ != nullptr) {
    record("disk_fsync_dir",
           {{"path", path}, {"entries", d->durable.size()}, {"process", owner()}});
  }
  return {};
}

Result<bool> SimDisk::remove_file(const std::string& path) {
  if (auto s = admit("unlink", path); !s.ok()) return s.error();
  ++counters_.removes;
  auto at = locate(path);
  if (!at.ok()) return false;
  if (at->name.empty()) return os_error("unlink", path, kIsDir);
  const Entry* e = find_live(*at);
  if (e == nullptr) return false;
  if (e->dir) return os_error("unlink", path, kIsDir);
  const std::uint64_t bytes = inode(e->inode).data.size();
  erase_live(*find_dir(at->parent), at->name);
  if (trace_ != nullptr) {
    record("disk_remove", {{"path", at->path}, {"bytes", bytes}, {"process", owner()}});
  }
  return true;
}

Status SimDisk::create_dir(const std::string& dir) {
  if (auto s = admit("mkdir", dir); !s.ok()) return s;
  ++counters_.create_dirs;
  auto at = locate(dir);
  if (!at.ok()) return std::move(at).error();
  if (at->name.empty()) return {};  // a root always exists
  Directory* parent = find_dir(at->parent);
  if (parent == nullptr) {
    const auto up = locate(at->parent);
    return missing_parent("mkdir", dir, up.ok() && find_live(*up) != nullptr);
  }
  if (const auto it = parent->live.find(at->name); it != parent->live.end()) {
    if (it->second.dir) return {};
    return make_error(ErrorCode::io_error, "mkdir failed: exists and is not a directory", dir);
  }
  // A directory's record lives exactly as long as its live entry (records
  // are dropped only by a crash, together with the entry).
  REHEARSE_ASSERT(dirs_.count(at->path) == 0);
  set_live(*parent, at->name, Entry{true, 0});
  dirs_.emplace(at->path, Directory{});
  if (trace_ != nullptr) record("disk_create_dir", {{"path", at->path}, {"process", owner()}});
  return {};
}

Result<std::vector<std::string>> SimDisk::list_dir(const std::string& dir) {
  if (auto s = admit("opendir", dir); !s.ok()) return s.error();
  ++counters_.list_dirs;
  const std::string path = normalise(dir);
  const Directory* d = find_dir(path);
  if (d == nullptr) {
    const auto at = locate(path);
    const bool is_file = at.ok() && find_live(*at) != nullptr;
    return os_error("opendir", dir, is_file ? kNotDir : kNoEntry);
  }
  std::vector<std::string> names;
  names.reserve(d->live.size());
  for (const auto& [name, e] : d->live) names.push_back(name);  // std::map: bytewise order
  return names;
}

Result<DiskLockHandle> SimDisk::lock_exclusive(const std::string& path) {
  if (auto s = admit("flock", path); !s.ok()) return s.error();
  ++counters_.locks;
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  // The lock file is created if missing, like open(O_CREAT): a live entry
  // that is durable only once its directory is synced.
  auto file = open_for_write(*at, "open lock file");
  if (!file.ok()) return std::move(file).error();
  const DiskOwner who = owner();
  if (const auto it = locks_->held.find(at->path); it != locks_->held.end()) {
    ++counters_.locks_busy;
    return make_error(ErrorCode::busy,
                      fmt::format("flock failed: held by simulated process {} (a simulation "
                                  "cannot block; the holder must release it first)",
                                  it->second.owner),
                      path);
  }
  const std::uint64_t token = locks_->next_token++;
  locks_->held.emplace(at->path, LockTable::Held{who, token});
  record("disk_lock", {{"path", at->path}, {"process", who}});
  return DiskLockHandle(std::make_unique<Lock>(locks_, at->path, token));
}

// --- world setup -------------------------------------------------------------------

Status SimDisk::make_dirs(const std::string& dir) {
  const std::string path = normalise(dir);
  if (is_root(path)) return {};
  const auto [parent, name] = split(path);
  if (auto s = make_dirs(parent); !s.ok()) return s;
  Directory& up = dirs_.at(parent);
  if (const auto it = up.live.find(name); it != up.live.end()) {
    if (!it->second.dir) {
      return make_error(ErrorCode::io_error, "mkdir failed: exists and is not a directory", dir);
    }
  } else {
    set_live(up, name, Entry{true, 0});
    dirs_.emplace(path, Directory{});
  }
  set_entry(up.durable, name, Entry{true, 0});
  return {};
}

Status SimDisk::put_durable(const std::string& path, std::string_view bytes) {
  auto at = locate(path);
  if (!at.ok()) return std::move(at).error();
  if (at->name.empty()) return os_error("open for writing", path, kIsDir);
  if (auto s = make_dirs(at->parent); !s.ok()) return s;
  Directory& d = dirs_.at(at->parent);
  if (const Entry* e = find_live(*at); e != nullptr && e->dir) {
    return os_error("open for writing", path, kIsDir);
  }
  const std::uint64_t id = new_inode();
  Inode& f = inode(id);
  f.data.assign(bytes);
  ++f.data_version;
  f.durable.assign(bytes);
  ++f.durable_version;
  set_live(d, at->name, Entry{false, id});
  set_entry(d.durable, at->name, Entry{false, id});
  return {};
}

// --- faults ---------------------------------------------------------------------------

void SimDisk::crash() {
  ++counters_.crashes;
  std::uint64_t unsynced_files = 0;
  std::uint64_t unsynced_bytes = 0;
  for (const auto& [id, f] : inodes_) {
    if (f.durable_is_prefix && f.durable.size() == f.data.size()) continue;
    ++unsynced_files;
    unsynced_bytes += f.durable_is_prefix ? f.data.size() - f.durable.size() : f.data.size();
  }
  // Directories: a parent sorts before its children (it is a prefix of
  // their paths), so one pass in order sees each parent's fate first.
  std::uint64_t dirs_lost = 0;
  std::uint64_t dirs_reverted = 0;
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    const std::string& path = it->first;
    bool keep = is_root(path);
    if (!keep) {
      const auto [parent, name] = split(path);
      const Directory* up = find_dir(parent);
      if (up != nullptr) {
        const auto e = up->durable.find(name);
        keep = e != up->durable.end() && e->second.dir;
      }
    }
    Directory& d = it->second;
    if (!keep) {
      ++dirs_lost;
      for (const auto& [name, e] : d.live) unlink(e);
      for (const auto& [name, e] : d.durable) unlink(e);
      it = dirs_.erase(it);
      continue;
    }
    if (d.live != d.durable) ++dirs_reverted;
    Entries old = std::move(d.live);
    d.live = d.durable;
    d.dirty.clear();
    for (const auto& [name, e] : d.live) link(e);
    for (const auto& [name, e] : old) unlink(e);
    ++it;
  }
  for (auto& [id, f] : inodes_) {
    if (f.durable_is_prefix && f.durable.size() == f.data.size()) continue;
    f.data = f.durable;
    f.durable_is_prefix = true;
    ++f.data_version;
  }
  locks_->held.clear();
  dead_.clear();
  reads_traced_.clear();  // every process starts a new incarnation
  if (trace_ != nullptr) {
    record("disk_crash", {{"unsynced_files", unsynced_files},
                          {"unsynced_bytes", unsynced_bytes},
                          {"dirs_reverted", dirs_reverted},
                          {"dirs_lost", dirs_lost}});
  }
}

void SimDisk::process_crashed(DiskOwner who) {
  ++counters_.process_crashes;
  const std::size_t released = locks_->release_owner(who);
  const bool was_dead = dead_.erase(who) != 0;
  std::erase_if(reads_traced_, [who](const auto& read) { return read.first == who; });
  if (trace_ != nullptr) {
    record("disk_process_crashed",
           {{"process", who}, {"locks_released", released}, {"was_dead", was_dead}});
  }
}

Status SimDisk::corrupt(const std::string& path, CorruptionKind kind) {
  Corruption c;
  c.kind = kind;
  return corrupt(path, c);
}

Status SimDisk::corrupt(const std::string& path, const Corruption& corruption) {
  auto at = locate(path);
  if (!at.ok()) return make_error(ErrorCode::not_found, "no such file to corrupt", path);
  const Entry* e = find_live(*at);
  if (e == nullptr || e->dir) {
    return make_error(ErrorCode::not_found, "no such file to corrupt", path);
  }
  Inode& f = inode(e->inode);
  std::string bytes = f.data;
  const std::uint64_t size = bytes.size();
  std::optional<std::uint64_t> offset = corruption.offset;
  const auto cannot = [&](std::string_view why) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("cannot corrupt ({}): {}", to_string(corruption.kind), why),
                      path);
  };
  switch (corruption.kind) {
    case CorruptionKind::flip_bytes: {
      if (size == 0) return cannot("the file is empty");
      const std::uint64_t count = std::clamp<std::uint64_t>(corruption.count, 1, size);
      if (corruption.xor_mask && *corruption.xor_mask == 0) return cannot("xor mask is zero");
      std::set<std::uint64_t> positions;
      if (offset) {
        if (*offset + count > size) return cannot("offset past the end");
        for (std::uint64_t i = 0; i < count; ++i) positions.insert(*offset + i);
      } else {
        while (positions.size() < count) positions.insert(rng_.next_below(size));
        offset = *positions.begin();
      }
      for (const std::uint64_t p : positions) {
        const auto mask = corruption.xor_mask ? *corruption.xor_mask
                                              : static_cast<std::uint8_t>(1 + rng_.next_below(255));
        const auto i = static_cast<std::size_t>(p);
        bytes[i] = static_cast<char>(static_cast<std::uint8_t>(bytes[i]) ^ mask);
      }
      break;
    }
    case CorruptionKind::truncate: {
      if (size == 0) return cannot("the file is empty");
      if (offset && *offset >= size) return cannot("kept length is not shorter than the file");
      if (!offset) offset = rng_.next_below(size);
      bytes.resize(static_cast<std::size_t>(*offset));
      break;
    }
    case CorruptionKind::empty:
      if (size == 0) return cannot("the file is empty already");
      bytes.clear();
      offset = 0;
      break;
    case CorruptionKind::garbage: {
      const std::uint64_t start = offset.value_or(0);
      if (start > size) return cannot("offset past the end");
      offset = start;
      // Garbage over the rest of the file, or (at its end) a few new bytes.
      const std::uint64_t length = start < size ? size - start : 1 + rng_.next_below(64);
      bytes.resize(static_cast<std::size_t>(start));
      for (std::uint64_t i = 0; i < length; ++i) {
        bytes.push_back(static_cast<char>(rng_.next_below(256)));
      }
      break;
    }
  }
  // The medium holds the damage: a crash does not undo it.
  f.data = bytes;
  ++f.data_version;
  f.durable = std::move(bytes);
  f.durable_is_prefix = true;
  ++f.durable_version;
  ++counters_.corruptions;
  if (trace_ != nullptr) {
    record("disk_corrupted", {{"path", at->path},
                              {"kind", to_string(corruption.kind)},
                              {"offset", offset.value_or(0)},
                              {"bytes_before", size},
                              {"bytes_after", f.data.size()}});
  }
  return {};
}

void SimDisk::arm_torn_write(TornWrite torn) { torn_ = std::move(torn); }

void SimDisk::arm_torn_write(std::string path_prefix, std::optional<std::uint64_t> prefix_bytes,
                             TornKind kind) {
  TornWrite torn;
  torn.path_prefix = std::move(path_prefix);
  torn.prefix_bytes = prefix_bytes;
  torn.kind = kind;
  arm_torn_write(std::move(torn));
}

void SimDisk::fail_stop_after(std::uint64_t n, std::optional<DiskOwner> owner) {
  fail_stop_ = FailStop{n, owner};
}

std::optional<DiskOwner> SimDisk::lock_holder(const std::string& path) const {
  const auto it = locks_->held.find(normalise(path));
  if (it == locks_->held.end()) return std::nullopt;
  return it->second.owner;
}

// --- inspection ------------------------------------------------------------------------

std::optional<std::string> SimDisk::live_content(const std::string& path) const {
  const auto at = locate(path);
  if (!at.ok()) return std::nullopt;
  const Entry* e = find_live(*at);
  if (e == nullptr || e->dir) return std::nullopt;
  return inodes_.at(e->inode).data;
}

namespace {

// Follows durable entries from a root: the directory a crash now would keep.
template <typename Dirs>
bool durably_reachable(const Dirs& dirs, const std::string& path) {
  if (is_root(path)) return dirs.count(path) != 0;
  const auto [parent, name] = split(path);
  if (!durably_reachable(dirs, parent)) return false;
  const auto& up = dirs.at(parent);
  const auto e = up.durable.find(name);
  return e != up.durable.end() && e->second.dir && dirs.count(path) != 0;
}

}  // namespace

std::optional<std::string> SimDisk::durable_content(const std::string& path) const {
  const std::string* bytes = durable_view(path);
  if (bytes == nullptr) return std::nullopt;
  return *bytes;
}

std::optional<std::uint64_t> SimDisk::durable_inode(const std::string& path) const {
  const auto at = locate(path);
  if (!at.ok() || at->name.empty()) return std::nullopt;
  if (!durably_reachable(dirs_, at->parent)) return std::nullopt;
  const Directory& d = dirs_.at(at->parent);
  const auto e = d.durable.find(at->name);
  if (e == d.durable.end() || e->second.dir) return std::nullopt;
  return e->second.inode;
}

const std::string* SimDisk::durable_view(const std::string& path) const {
  const auto id = durable_inode(path);
  return id ? &inodes_.at(*id).durable : nullptr;
}

std::optional<SimDisk::DurableIdentity> SimDisk::durable_identity(const std::string& path) const {
  const auto id = durable_inode(path);
  if (!id) return std::nullopt;
  return DurableIdentity{*id, inodes_.at(*id).durable_version};
}

std::optional<FileStamp> SimDisk::stamp(const std::string& path) {
  const auto at = locate(path);
  if (!at.ok() || at->name.empty()) return std::nullopt;
  const Entry* e = find_live(*at);
  if (e == nullptr || e->dir) return std::nullopt;
  return FileStamp{e->inode, inodes_.at(e->inode).data_version, 0, 0};
}

std::vector<std::string> SimDisk::durable_listing(const std::string& dir) const {
  const std::string path = normalise(dir);
  std::vector<std::string> names;
  if (!durably_reachable(dirs_, path)) return names;
  for (const auto& [name, e] : dirs_.at(path).durable) names.push_back(name);
  return names;
}

bool SimDisk::is_locked(const std::string& path) const {
  return locks_->held.count(normalise(path)) != 0;
}

std::uint64_t SimDisk::live_bytes() const {
  std::uint64_t total = 0;
  for (const auto& [id, f] : inodes_) total += f.data.size();
  return total;
}

// --- binding to a Simulator ----------------------------------------------------------------

void bind_to_simulator(SimDisk& disk, Simulator& simulator, SimDiskBinding binding) {
  SimDiskHooks hooks;
  hooks.current_owner = [&simulator] { return simulator.current_process(); };
  hooks.now = [&simulator] { return simulator.now(); };
  hooks.on_death = [&simulator, reboot = binding.reboot_after_ms](DiskOwner who) {
    // The world cannot be crashed; a test driving the disk from outside any
    // process sees the death through is_dead() and the refused operations.
    if (who == kWorld) return;
    simulator.schedule_crash(who, simulator.now(), reboot);
  };
  disk.set_hooks(std::move(hooks));
  simulator.add_process_listener(
      [&disk, effect = binding.crash_effect](ProcessId process, ProcessChange change, TimeMs) {
        if (change != ProcessChange::crashed) return;
        if (effect == ProcessCrashEffect::power_loss) {
          disk.crash();
        } else {
          disk.process_crashed(process);
        }
      });
}

}  // namespace rehearse::sim
