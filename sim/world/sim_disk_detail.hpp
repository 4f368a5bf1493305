// The simulated disk's private header, shared by sim/sim_disk*.cpp: the OS-like
// error messages, path helpers and the lock table.
#pragma once

#include "sim/world/sim_disk.hpp"

#include <functional>

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "sim/kernel/simulator.hpp"

namespace rehearse::sim {

namespace sim_disk_detail {

// Messages mirror the operating system's (PosixDisk's) so that a reader of a
// failure does not care which disk produced it.
constexpr const char* kNoEntry = "No such file or directory";
constexpr const char* kIsDir = "Is a directory";
constexpr const char* kNotDir = "Not a directory";

Error os_error(const char* operation, const std::string& path, std::string_view reason);
bool is_root(std::string_view path);
std::string normalise(std::string_view path);
Error missing_parent(const char* operation, const std::string& path, bool parent_is_file);
std::pair<std::string, std::string> split(const std::string& path);

}  // namespace sim_disk_detail

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

}  // namespace rehearse::sim
