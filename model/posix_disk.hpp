// PosixDisk: the real Disk adapter (open/read/write/fsync/rename/flock).
//
// The one place in model/ that touches the file system. Every loop handles
// EINTR and short reads/writes; every failure becomes an io_error naming the
// path and the operating system's reason.
#pragma once

#include "model/disk.hpp"

namespace rehearse {

class PosixDisk final : public Disk {
 public:
  PosixDisk() = default;

  Result<std::optional<std::string>> read_file(const std::string& path) override;
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length_max) override;
  Status write_file(const std::string& path, std::string_view bytes) override;
  Status append_file(const std::string& path, std::string_view bytes) override;
  Status fsync_file(const std::string& path) override;
  Status rename_file(const std::string& from, const std::string& to) override;
  Status fsync_dir(const std::string& dir) override;
  Result<bool> remove_file(const std::string& path) override;
  Status create_dir(const std::string& dir) override;
  Result<std::vector<std::string>> list_dir(const std::string& dir) override;
  // flock(LOCK_EX) on a separate lock file: released when the handle closes
  // its descriptor, or by the kernel when the process dies.
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override;
  // stat(2): device, inode, size, ctime (ns). None while the ctime is within
  // two seconds of the real-time clock: the kernel stamps changes with a
  // coarse clock, so a change in the same tick could leave an equal stamp
  // (git's "racily clean" entries); the caller reads the file then.
  std::optional<FileStamp> stamp(const std::string& path) override;
};

}  // namespace rehearse
