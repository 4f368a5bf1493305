// Shared fixtures of the state store tests (tests/model/test_state_store*.cpp):
// reading and listing over the real PosixDisk, opening a store that must open,
// the update the tests apply, and counting a journal's records.
// Inline: every test file of the binary includes it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "model/posix_disk.hpp"
#include "model/state_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse::store_test {

using testsupport::TempDir;

inline std::string read_bytes(PosixDisk& disk, const std::string& path) {
  auto r = disk.read_file(path);
  REHEARSE_ASSERT(r.ok());
  REHEARSE_ASSERT(r->has_value());
  return **r;
}

inline std::vector<std::string> listing(PosixDisk& disk, const std::string& dir) {
  auto r = disk.list_dir(dir);
  REHEARSE_ASSERT(r.ok());
  return *r;
}

inline StateStore open_ok(Disk& disk, const std::string& dir, StoreOptions options = {}) {
  auto store = StateStore::open(disk, dir, options);
  REHEARSE_ASSERT(store.ok());
  return std::move(store).value();
}

inline void increment(JobState& s) { ++s.retry_count; }

inline std::size_t journal_records(PosixDisk& disk, const TempDir& dir) {
  auto scan = decode_journal(read_bytes(disk, dir.file("retry_state.journal")));
  REHEARSE_ASSERT(scan.ok());
  return scan->records.size();
}

}  // namespace rehearse::store_test
