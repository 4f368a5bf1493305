// Disk: the port through which the core touches persistent storage.
//
// Small, synchronous and POSIX-shaped on purpose, so that one faithful
// simulated disk (sim/) can implement exactly these operations with the
// failure modes a real disk has: data that is written but not yet durable, a
// crash that drops everything unsynced, torn writes, corruption on demand, and
// a crash-anywhere test that stops the process between any two calls. The real
// adapter is PosixDisk (model/posix_disk.hpp); the state store never knows
// which one it runs on.
//
// Durability model (what survives a crash of the machine; a crash of the
// process alone loses nothing that a call already returned from, since the
// operating system keeps the data):
//   - file bytes (write_file, append_file) are durable only after a
//     successful fsync_file of that path;
//   - a directory entry (a file created by write_file/append_file, a rename,
//     a remove, a create_dir) is durable only after a successful fsync_dir of
//     the directory holding it;
//   - rename is atomic: a reader (or a recovery after a crash) sees either the
//     old or the new file at the target path, never a mix;
//   - an append that a crash interrupts may leave a prefix of its bytes, or
//     garbage of up to its length, at the end of the file (a torn write): the
//     caller must frame what it appends and check it when reading back.
//
// Every failure is a Result error with ErrorCode::io_error, the path in
// `where` and the operating system's reason in the message. "Not found" on a
// read is not a failure: it is a value (std::nullopt), because a missing state
// file means a fresh start while an unreadable one must fail closed.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace rehearse {

// An exclusive lock held on a path; released when the handle is destroyed
// (and by the operating system if the holding process dies).
class DiskLock {
 public:
  DiskLock() = default;
  DiskLock(const DiskLock&) = delete;
  DiskLock& operator=(const DiskLock&) = delete;
  virtual ~DiskLock() = default;
};
using DiskLockHandle = std::unique_ptr<DiskLock>;

inline constexpr std::uint64_t kReadToEnd = std::numeric_limits<std::uint64_t>::max();

// What tells a file's current bytes apart without reading them (for POSIX:
// device, inode, size, and the change time in nanoseconds). Two equal stamps
// of one path mean that nobody changed the file in between.
struct FileStamp {
  std::uint64_t a = 0;
  std::uint64_t b = 0;
  std::uint64_t c = 0;
  std::uint64_t d = 0;
  bool operator==(const FileStamp&) const = default;
};

class Disk {
 public:
  Disk() = default;
  Disk(const Disk&) = delete;
  Disk& operator=(const Disk&) = delete;
  virtual ~Disk() = default;

  // The whole content of a file, or std::nullopt when it does not exist.
  // Reads see every completed write, durable or not.
  virtual Result<std::optional<std::string>> read_file(const std::string& path) = 0;

  // At most length_max bytes starting at offset (fewer at the end of the
  // file; empty when offset is at or past the end), or std::nullopt when the
  // file does not exist. Lets a reader follow an append-only file without
  // re-reading all of it.
  virtual Result<std::optional<std::string>> read_range(const std::string& path,
                                                        std::uint64_t offset,
                                                        std::uint64_t length_max) = 0;

  // Creates or truncates the file and writes bytes. Not durable until
  // fsync_file(path); a new file's directory entry not until fsync_dir.
  virtual Status write_file(const std::string& path, std::string_view bytes) = 0;

  // Appends bytes at the end of the file, creating it if missing. Not durable
  // until fsync_file(path); an interrupted append may be torn (see above).
  virtual Status append_file(const std::string& path, std::string_view bytes) = 0;

  // Makes the file's bytes durable (everything written to it before the call).
  virtual Status fsync_file(const std::string& path) = 0;

  // Atomically replaces `to` by `from` (both in the same directory). Durable
  // after fsync_dir of that directory.
  virtual Status rename_file(const std::string& from, const std::string& to) = 0;

  // Makes the directory's entries durable (creates, renames, removes).
  virtual Status fsync_dir(const std::string& dir) = 0;

  // Removes a file; true if it existed, false if it was already missing.
  // Durable after fsync_dir.
  virtual Result<bool> remove_file(const std::string& path) = 0;

  // Creates the directory if it is missing (not its parents). Durable after
  // fsync_dir of the parent. An existing directory is not an error.
  virtual Status create_dir(const std::string& dir) = 0;

  // Names (not paths) of the entries of a directory, sorted bytewise,
  // without "." and "..".
  virtual Result<std::vector<std::string>> list_dir(const std::string& dir) = 0;

  // Takes an exclusive lock on `path` (a dedicated lock file, created if
  // missing, never holding data), blocking until it is granted. Locks exclude
  // each other across processes and across handles in one process; they are
  // not re-entrant (taking a second lock on the same path while holding one
  // deadlocks). An implementation that cannot block (a single-threaded
  // simulation whose holder cannot run) returns ErrorCode::busy instead.
  virtual Result<DiskLockHandle> lock_exclusive(const std::string& path) = 0;

  // The file's stamp now, or std::nullopt when this disk cannot vouch for
  // one (a missing file, an error, a change too recent for the clock to
  // tell apart from the next one, or no stamps at all): the caller then
  // reads the bytes. A stamp lets a caller skip re-reading a file it has
  // checked; it never replaces the check after a change.
  virtual std::optional<FileStamp> stamp(const std::string& /*path*/) { return std::nullopt; }
};

// "dir/name" (no normalisation: paths are used as given).
inline std::string join_path(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path.push_back('/');
  path.append(name);
  return path;
}

}  // namespace rehearse
