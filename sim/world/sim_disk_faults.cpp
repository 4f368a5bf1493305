// The simulated disk's faults: crashes and what they lose, corruption, torn
// writes and fail-stops.
#include "sim/world/sim_disk_detail.hpp"

#include "model/assert.hpp"

namespace rehearse::sim {

using sim_disk_detail::is_root;
using sim_disk_detail::normalise;
using sim_disk_detail::split;

// --- faults ---------------------------------------------------------------------------

void SimDisk::crash() {
  ++counters_.crashes;
  std::uint64_t unsynced_files = 0;
  std::uint64_t unsynced_bytes = 0;
  for (const auto& [id, f] : inodes_) {
    // Every writer that leaves durable a prefix of data says so.
    REHEARSE_ASSERT(!f.durable_is_prefix || f.durable.size() <= f.data.size());
    REHEARSE_ASSERT_GT(f.refs, 0u);  // an inode no entry names is dropped at once
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
  // The roots survive every crash.
  REHEARSE_ASSERT(dirs_.count("/") != 0 && dirs_.count(".") != 0);
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
      REHEARSE_ASSERT_EQ(positions.size(), count);
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
  // Every kind but garbage (which may draw the same bytes) changes the file:
  // a flip XORs with non-zero masks, the others shorten a non-empty file.
  REHEARSE_ASSERT(corruption.kind == CorruptionKind::garbage || bytes != f.data);
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
  // kill() drops a dead process's locks, and admit() refuses it new ones.
  REHEARSE_ASSERT(dead_.count(it->second.owner) == 0);
  return it->second.owner;
}

}  // namespace rehearse::sim
