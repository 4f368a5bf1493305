// The simulated disk's Disk port (model/disk.hpp): reads, writes, appends,
// fsyncs, renames, directories and locks, each as the OS would answer; and
// the world's own setup writes.
#include "sim/world/sim_disk_detail.hpp"

#include <new>

#include "model/assert.hpp"

namespace rehearse::sim {

using sim_disk_detail::is_root;
using sim_disk_detail::kIsDir;
using sim_disk_detail::kNoEntry;
using sim_disk_detail::kNotDir;
using sim_disk_detail::missing_parent;
using sim_disk_detail::normalise;
using sim_disk_detail::os_error;
using sim_disk_detail::split;

class SimDisk::Lock final : public DiskLock {
 public:
  Lock(std::weak_ptr<LockTable> table, std::string path, std::uint64_t token)
      : table_(std::move(table)), path_(std::move(path)), token_(token) {
    REHEARSE_ASSERT(!path_.empty());  // a located, normalised path
  }
  ~Lock() override {
    const auto table = table_.lock();
    if (!table) return;
    const auto it = table->held.find(path_);
    if (it == table->held.end() || it->second.token != token_) return;
    const DiskOwner owner = it->second.owner;
    table->held.erase(it);
    if (!table->on_release) return;
    // Released while a run unwinds from running out of memory: the lock is
    // gone either way; only its trace event is lost, never the process
    // (a destructor that throws while unwinding ends it).
    try {
      table->on_release(path_, owner);
    } catch (const std::bad_alloc&) {
    }
  }

 private:
  std::weak_ptr<LockTable> table_;
  std::string path_;
  std::uint64_t token_;
};

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
  REHEARSE_ASSERT_LE(n, length_max);
  REHEARSE_ASSERT(n == 0 || offset + n <= data.size());
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
  REHEARSE_ASSERT(!normalised.empty());  // read_impl passes the located path
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
  REHEARSE_ASSERT(!missing || bytes->empty());  // a missing file has no bytes to give
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
  REHEARSE_ASSERT_LE(bytes->size(), length_max);
  if (missing) return std::optional<std::string>{};
  return std::optional<std::string>{std::move(*bytes)};
}

// A torn write: the prefix (and maybe garbage) reaches the file and the
// medium, the rest never does, and the issuing process is dead.
Status SimDisk::tear(const Located& at, Inode& file, std::string_view bytes, bool append) {
  REHEARSE_ASSERT(torn_.has_value());  // callers tear only a write an armed tear matches
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
  // A tear keeps a strict prefix; garbage never makes it longer than the write.
  REHEARSE_ASSERT(length == 0 || keep < length);
  REHEARSE_ASSERT_LE(persisted.size(), length);
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
  // A file created by this call is a fresh inode that only its new entry names.
  REHEARSE_ASSERT(!created || (f.data.empty() && f.refs == 1));
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
  REHEARSE_ASSERT(!created || (f.data.empty() && f.refs == 1));
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
    // A root always has a record, and a live directory entry's record lives
    // as long as the entry.
    Directory* d = find_dir(at->path);
    REHEARSE_ASSERT(d != nullptr);
    sync_dir(*d);
    if (trace_ != nullptr) {
      record("disk_fsync_dir",
             {{"path", at->path}, {"entries", d->durable.size()}, {"process", owner()}});
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
  REHEARSE_ASSERT_EQ(f.durable.size(), f.data.size());  // all the live bytes are durable now
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
    Directory* from_dir = find_dir(src->parent);
    REHEARSE_ASSERT(from_dir != nullptr);  // it holds the live entry found above
    set_live(*to_dir, dst->name, moved);
    erase_live(*from_dir, src->name);
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
  REHEARSE_ASSERT(d->dirty.empty());  // every change is durable now
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
  Directory* d = find_dir(at->parent);
  REHEARSE_ASSERT(d != nullptr);  // it holds the live entry found above
  erase_live(*d, at->name);
  REHEARSE_ASSERT(find_live(*at) == nullptr);
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
  // admit refused a dead process, and a death released every lock it held.
  REHEARSE_ASSERT(dead_.count(who) == 0);
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
  REHEARSE_ASSERT(dirs_.count(path) != 0);  // a live directory entry has its record
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
  // make_dirs made every parent durable, so a crash now keeps this file.
  REHEARSE_ASSERT(durable_inode(at->path) == id);
  return {};
}

}  // namespace rehearse::sim
