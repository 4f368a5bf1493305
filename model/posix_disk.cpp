#include "model/posix_disk.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse {

namespace {

Error os_error(const char* operation, const std::string& path, int err) {
  return make_error(ErrorCode::io_error,
                    fmt::format("{} failed: {}", operation,
                                std::error_code(err, std::generic_category()).message()),
                    path);
}

// Owns a descriptor; closing it is part of the protocol (close can report a
// deferred write error), so close() is explicit and the destructor only
// cleans up after an earlier failure.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  Status close(const std::string& path) {
    const int fd = release();
    // Linux closes the descriptor even when close() reports EINTR; retrying
    // could close a descriptor another thread just opened.
    if (::close(fd) != 0 && errno != EINTR) return os_error("close", path, errno);
    return {};
  }

 private:
  int fd_;
};

// A descriptor (>= 0) or the negated errno of the failed open.
int open_retry(const std::string& path, int flags, mode_t mode = 0644) {
  for (;;) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    if (fd >= 0) return fd;
    if (errno != EINTR) return -errno;
  }
}

// Reads up to length_max bytes from the current position of fd.
Status read_loop(int fd, const std::string& path, std::uint64_t length_max, std::string& out) {
  char buffer[65536];
  while (out.size() < length_max) {
    const std::uint64_t want =
        std::min<std::uint64_t>(sizeof buffer, length_max - static_cast<std::uint64_t>(out.size()));
    const ssize_t n = ::read(fd, buffer, static_cast<std::size_t>(want));
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("read", path, errno);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return {};
}

Status write_loop(int fd, const std::string& path, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error("write", path, errno);
    }
    REHEARSE_ASSERT_LE(static_cast<std::size_t>(n), bytes.size());
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status fsync_retry(int fd, const std::string& path) {
  for (;;) {
    if (::fsync(fd) == 0) return {};
    if (errno != EINTR) return os_error("fsync", path, errno);
  }
}

Result<std::optional<std::string>> read_impl(const std::string& path, std::uint64_t offset,
                                             std::uint64_t length_max) {
  const int fd = open_retry(path, O_RDONLY);
  if (fd == -ENOENT) return std::optional<std::string>{};
  if (fd < 0) return os_error("open for reading", path, -fd);
  Fd file(fd);
  if (offset > 0) {
    if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
      return std::optional<std::string>{std::string{}};
    }
    if (::lseek(file.get(), static_cast<off_t>(offset), SEEK_SET) < 0) {
      return os_error("seek", path, errno);
    }
  }
  std::string bytes;
  if (length_max == kReadToEnd) {
    struct stat st {};
    if (::fstat(file.get(), &st) == 0 && st.st_size > 0 &&
        static_cast<std::uint64_t>(st.st_size) > offset) {
      bytes.reserve(static_cast<std::size_t>(static_cast<std::uint64_t>(st.st_size) - offset));
    }
  }
  if (auto s = read_loop(file.get(), path, length_max, bytes); !s.ok()) return s.error();
  if (auto s = file.close(path); !s.ok()) return s.error();
  return std::optional<std::string>{std::move(bytes)};
}

Status write_impl(const std::string& path, std::string_view bytes, int flags,
                  const char* operation) {
  const int fd = open_retry(path, O_WRONLY | O_CREAT | flags);
  if (fd < 0) return os_error(operation, path, -fd);
  Fd file(fd);
  if (auto s = write_loop(file.get(), path, bytes); !s.ok()) return s;
  return file.close(path);
}

class PosixLock final : public DiskLock {
 public:
  explicit PosixLock(int fd) : fd_(fd) {}
  ~PosixLock() override { ::close(fd_); }  // closing the last descriptor drops the flock

 private:
  int fd_;
};

}  // namespace

Result<std::optional<std::string>> PosixDisk::read_file(const std::string& path) {
  return read_impl(path, 0, kReadToEnd);
}

Result<std::optional<std::string>> PosixDisk::read_range(const std::string& path,
                                                         std::uint64_t offset,
                                                         std::uint64_t length_max) {
  return read_impl(path, offset, length_max);
}

Status PosixDisk::write_file(const std::string& path, std::string_view bytes) {
  return write_impl(path, bytes, O_TRUNC, "open for writing");
}

Status PosixDisk::append_file(const std::string& path, std::string_view bytes) {
  return write_impl(path, bytes, O_APPEND, "open for appending");
}

Status PosixDisk::fsync_file(const std::string& path) {
  // Linux flushes the inode's dirty pages whichever descriptor wrote them.
  const int fd = open_retry(path, O_RDONLY);
  if (fd < 0) return os_error("open for fsync", path, -fd);
  Fd file(fd);
  if (auto s = fsync_retry(file.get(), path); !s.ok()) return s;
  return file.close(path);
}

Status PosixDisk::rename_file(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return os_error("rename", from + " -> " + to, errno);
  }
  return {};
}

Status PosixDisk::fsync_dir(const std::string& dir) {
  const int fd = open_retry(dir.empty() ? std::string(".") : dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return os_error("open directory for fsync", dir, -fd);
  Fd file(fd);
  if (auto s = fsync_retry(file.get(), dir); !s.ok()) return s;
  return file.close(dir);
}

Result<bool> PosixDisk::remove_file(const std::string& path) {
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  return os_error("unlink", path, errno);
}

Status PosixDisk::create_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return {};
  const int err = errno;
  if (err == EEXIST) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
    return make_error(ErrorCode::io_error, "mkdir failed: exists and is not a directory", dir);
  }
  return os_error("mkdir", dir, err);
}

Result<std::vector<std::string>> PosixDisk::list_dir(const std::string& dir) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return os_error("opendir", dir, errno);
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(handle);
    if (entry == nullptr) {
      const int err = errno;
      ::closedir(handle);
      if (err != 0) return os_error("readdir", dir, err);
      break;
    }
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<FileStamp> PosixDisk::stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  timespec now{};
  if (::clock_gettime(CLOCK_REALTIME, &now) != 0) return std::nullopt;
  constexpr std::int64_t kRacyNs = 2'000'000'000;
  const auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 +
           static_cast<std::int64_t>(t.tv_nsec);
  };
  const std::int64_t changed = ns(st.st_ctim);
  if (ns(now) - changed < kRacyNs) return std::nullopt;
  return FileStamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                   static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(changed)};
}

Result<DiskLockHandle> PosixDisk::lock_exclusive(const std::string& path) {
  const int fd = open_retry(path, O_RDWR | O_CREAT);
  if (fd < 0) return os_error("open lock file", path, -fd);
  Fd file(fd);
  for (;;) {
    if (::flock(file.get(), LOCK_EX) == 0) break;
    if (errno != EINTR) return os_error("flock", path, errno);
  }
  return DiskLockHandle(std::make_unique<PosixLock>(file.release()));
}

}  // namespace rehearse
