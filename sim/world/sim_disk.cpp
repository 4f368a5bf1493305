// The simulated disk (sim/world/sim_disk.hpp): its path helpers, construction and
// hooks, and its namespace of directories, entries and inodes. The Disk port
// is in sim_disk_port.cpp, faults in sim_disk_faults.cpp, inspection in
// sim_disk_inspect.cpp.
#include "sim/world/sim_disk_detail.hpp"

#include "model/assert.hpp"

namespace rehearse::sim {

namespace sim_disk_detail {

Error os_error(const char* operation, const std::string& path, std::string_view reason) {
  REHEARSE_ASSERT(operation != nullptr && *operation != '\0' && !reason.empty());
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
  // Only non-empty parts are appended after a '/', so none is left dangling.
  REHEARSE_ASSERT(out.back() != '/');
  return out;
}

// Why an operation finds no directory to work in: the parent is missing
// (ENOENT) or is a file (ENOTDIR).
Error missing_parent(const char* operation, const std::string& path, bool parent_is_file) {
  return os_error(operation, path, parent_is_file ? kNotDir : kNoEntry);
}

// Parent and name of a normalised path that is not a root.
std::pair<std::string, std::string> split(const std::string& path) {
  // Callers split only normalised non-root paths, so the name is never empty.
  REHEARSE_ASSERT(!is_root(path));
  REHEARSE_ASSERT(!path.empty() && path.back() != '/');
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace sim_disk_detail

using sim_disk_detail::is_root;
using sim_disk_detail::kIsDir;
using sim_disk_detail::kNoEntry;
using sim_disk_detail::missing_parent;
using sim_disk_detail::normalise;
using sim_disk_detail::os_error;
using sim_disk_detail::split;

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
  // Every successful admission is one counted operation, never more.
  REHEARSE_ASSERT_LE(counters_.read_files + counters_.read_ranges + counters_.writes +
                         counters_.appends + counters_.fsyncs + counters_.renames +
                         counters_.fsync_dirs + counters_.removes + counters_.create_dirs +
                         counters_.list_dirs + counters_.locks,
                     operations_);
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
  // admit refuses a dead process before anything could kill it again.
  REHEARSE_ASSERT(dead_.count(who) == 0);
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
  REHEARSE_ASSERT(!at.path.empty());
  return at;
}

SimDisk::Directory* SimDisk::find_dir(const std::string& normalised) {
  // A normalised path is never empty and ends in '/' only as the root.
  REHEARSE_ASSERT(!normalised.empty() && (normalised == "/" || normalised.back() != '/'));
  const auto it = dirs_.find(normalised);
  return it == dirs_.end() ? nullptr : &it->second;
}

const SimDisk::Directory* SimDisk::find_dir(const std::string& normalised) const {
  // A normalised path is never empty and ends in '/' only as the root.
  REHEARSE_ASSERT(!normalised.empty() && (normalised == "/" || normalised.back() != '/'));
  const auto it = dirs_.find(normalised);
  return it == dirs_.end() ? nullptr : &it->second;
}

const SimDisk::Entry* SimDisk::find_live(const Located& at) const {
  REHEARSE_ASSERT_EQ(at.name.empty(), is_root(at.path));  // locate: only a root has no name
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
  const bool fresh = inodes_.emplace(id, Inode{}).second;
  REHEARSE_ASSERT(fresh);  // inodes are never reused
  return id;
}

void SimDisk::link(const Entry& e) {
  // A directory entry names no inode; a file's names an allocated one (ids start at 1).
  REHEARSE_ASSERT(e.dir ? e.inode == 0 : e.inode != 0);
  if (!e.dir) ++inode(e.inode).refs;
}

void SimDisk::unlink(const Entry& e) {
  if (e.dir) return;
  Inode& file = inode(e.inode);
  REHEARSE_ASSERT(file.refs > 0);
  if (--file.refs == 0) inodes_.erase(e.inode);
}

void SimDisk::set_entry(Entries& entries, const std::string& name, Entry e) {
  // A name of split(): one path component.
  REHEARSE_ASSERT(!name.empty() && name.find('/') == std::string::npos);
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
  REHEARSE_ASSERT(!name.empty() && name.find('/') == std::string::npos);
  const auto it = entries.find(name);
  if (it == entries.end()) return;
  const Entry old = it->second;
  entries.erase(it);
  unlink(old);
}

void SimDisk::set_live(Directory& d, const std::string& name, Entry e) {
  set_entry(d.live, name, e);
  REHEARSE_ASSERT(d.live.at(name) == e);
  d.dirty.insert(name);
}

void SimDisk::erase_live(Directory& d, const std::string& name) {
  erase_entry(d.live, name);
  REHEARSE_ASSERT(d.live.count(name) == 0);
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
  // Every name whose live entry differed from the durable one was dirty, so
  // the two are now the same.
  REHEARSE_ASSERT_EQ(d.live.size(), d.durable.size());
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
  REHEARSE_ASSERT_EQ(inode(id).refs, 1u);  // named by the new live entry alone
  return &inode(id);
}

}  // namespace rehearse::sim
