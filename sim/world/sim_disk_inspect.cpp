// The simulated disk inspected by the world and the tests: live and durable
// content, inodes and listings; and its binding to a Simulator.
#include "sim/world/sim_disk_detail.hpp"

#include "model/assert.hpp"

namespace rehearse::sim {

using sim_disk_detail::is_root;
using sim_disk_detail::normalise;
using sim_disk_detail::split;

namespace {

// Follows durable entries from a root: the directory a crash now would keep.
template <typename Dirs>
bool durably_reachable(const Dirs& dirs, const std::string& path) {
  if (is_root(path)) return dirs.count(path) != 0;
  const auto [parent, name] = split(path);
  // Each step goes up (a root, or a proper prefix of the path): the recursion ends.
  REHEARSE_ASSERT(is_root(parent) || parent.size() < path.size());
  if (!durably_reachable(dirs, parent)) return false;
  const auto& up = dirs.at(parent);
  const auto e = up.durable.find(name);
  return e != up.durable.end() && e->second.dir && dirs.count(path) != 0;
}

}  // namespace

// --- inspection ------------------------------------------------------------------------

std::optional<std::string> SimDisk::live_content(const std::string& path) const {
  const auto at = locate(path);
  if (!at.ok()) return std::nullopt;
  const Entry* e = find_live(*at);
  if (e == nullptr || e->dir) return std::nullopt;
  REHEARSE_ASSERT(inodes_.count(e->inode) != 0);  // a live entry holds a reference
  return inodes_.at(e->inode).data;
}

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
  REHEARSE_ASSERT(inodes_.count(e->second.inode) != 0);  // a durable entry holds a reference
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
  REHEARSE_ASSERT(inodes_.count(e->inode) != 0);  // a live entry holds a reference
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
  for (const auto& [id, f] : inodes_) {
    REHEARSE_ASSERT_GT(f.refs, 0u);  // an inode no entry names is dropped at once
    total += f.data.size();
  }
  return total;
}

// --- binding to a Simulator ----------------------------------------------------------------

void bind_to_simulator(SimDisk& disk, Simulator& simulator, SimDiskBinding binding) {
  REHEARSE_ASSERT(!binding.reboot_after_ms || *binding.reboot_after_ms >= 0);
  SimDiskHooks hooks;
  hooks.current_owner = [&simulator] { return simulator.current_process(); };
  hooks.now = [&simulator] { return simulator.now(); };
  hooks.on_death = [&simulator, reboot = binding.reboot_after_ms](DiskOwner who) {
    // The disk kills the issuer of the operation under way: the current process.
    REHEARSE_ASSERT_EQ(who, simulator.current_process());
    // The world cannot be crashed; a test driving the disk from outside any
    // process sees the death through is_dead() and the refused operations.
    if (who == kWorld) return;
    simulator.schedule_crash(who, simulator.now(), reboot);
  };
  disk.set_hooks(std::move(hooks));
  simulator.add_process_listener(
      [&disk, effect = binding.crash_effect](ProcessId process, ProcessChange change, TimeMs) {
        if (change != ProcessChange::crashed) return;
        REHEARSE_ASSERT_NE(process, kWorld);  // the world is never crashed
        if (effect == ProcessCrashEffect::power_loss) {
          disk.crash();
        } else {
          disk.process_crashed(process);
        }
      });
}

}  // namespace rehearse::sim
