// A worker's real state directory, read and never written: `rehearse status`
// shows it, `rehearse import --state` expects its end state. Read through the
// production POSIX disk adapter with every write refused (docs/state-file.md).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "model/disk.hpp"
#include "model/posix_disk.hpp"
#include "model/result.hpp"
#include "model/retry_machine.hpp"

namespace rehearse::cli {

// PosixDisk with every write refused. The lock is taken only when its file
// already exists (creating it would write); reads work as usual.
class ReadOnlyDisk final : public Disk {
 public:
  Result<std::optional<std::string>> read_file(const std::string& path) override;
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length_max) override;
  Status write_file(const std::string& path, std::string_view) override;
  Status append_file(const std::string& path, std::string_view) override;
  Status fsync_file(const std::string&) override { return {}; }
  Status rename_file(const std::string& from, const std::string&) override;
  Status fsync_dir(const std::string&) override { return {}; }
  Result<bool> remove_file(const std::string& path) override;
  Status create_dir(const std::string& dir) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override;

 private:
  PosixDisk disk_;
};

// One directory's jobs. A missing directory, one with no state file, or a
// corrupt store is an error naming the path.
Result<std::map<std::string, JobState>> read_state_dir(Disk& disk, const std::string& dir);

// One directory's jobs, or, when its store is corrupt, why (the bytes kept
// as they are). A missing directory or one with no state file is an error.
struct StateDirRead {
  std::map<std::string, JobState> jobs;
  std::optional<Error> corrupt;
};
Result<StateDirRead> read_state_dir_kept(const std::string& dir);

}  // namespace rehearse::cli
