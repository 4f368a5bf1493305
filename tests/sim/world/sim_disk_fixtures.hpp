// Shared fixtures of the SimDisk tests (tests/sim/world/test_sim_disk*.cpp):
// reading a file and listing a directory that must succeed, and a disk with a
// durable directory /d to work in. Inline: every test file of the binary
// includes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/world/sim_disk.hpp"

namespace rehearse::sim::disk_test {

using Names = std::vector<std::string>;

inline std::optional<std::string> read(SimDisk& disk, const std::string& path) {
  auto r = disk.read_file(path);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

inline Names listing(SimDisk& disk, const std::string& dir) {
  auto r = disk.list_dir(dir);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

// A disk with a durable directory /d to work in.
inline SimDisk& with_dir(SimDisk& disk) {
  REHEARSE_ASSERT(disk.make_dirs("/d").ok());
  return disk;
}

}  // namespace rehearse::sim::disk_test
