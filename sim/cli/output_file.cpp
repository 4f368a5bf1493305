#include "sim/cli/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "model/assert.hpp"

namespace rehearse::cli {
namespace {

namespace fs = std::filesystem;

// Symlink hops followed before giving up (the kernel's own limit is 40).
constexpr int kSymlinkHopsMax = 40;

enum class Sink : unsigned char { standard_output, write_through, atomic };

struct Destination {
  Sink sink = Sink::atomic;
  std::string path;     // write_through: as given; atomic: the final file
  bool exists = false;  // atomic: the file is there (its mode is kept)
  mode_t mode = 0;
};

Error os_error(const std::string& what, const std::string& path, int err) {
  return make_error(ErrorCode::io_error, fmt::format("{}: {}", what, std::strerror(err)), path);
}

// A link whose directory lies in /proc names an open descriptor
// (/dev/stdout -> /proc/self/fd/1, /dev/fd/N): its target is no path of a
// file that could be replaced, so it is written through.
bool names_a_descriptor(const fs::path& p) {
  std::error_code ec;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const fs::path real = fs::canonical(dir, ec);
  return !ec && real.string().rfind("/proc/", 0) == 0;
}

// Follows the symlink chain from `given` and decides how to write.
Result<Destination> resolve(const std::string& given) {
  if (given == "-") return Destination{Sink::standard_output, given, false, 0};
  fs::path p = given;
  for (int hop = 0; hop <= kSymlinkHopsMax; ++hop) {
    if (names_a_descriptor(p)) return Destination{Sink::write_through, given, true, 0};
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      if (errno != ENOENT) return os_error("cannot inspect the output file", p.string(), errno);
      const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) {
        return make_error(ErrorCode::not_found, "the output file's directory does not exist",
                          p.string());
      }
      return Destination{Sink::atomic, p.string(), false, 0};
    }
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      const fs::path target = fs::read_symlink(p, ec);
      if (ec) return os_error("cannot read the symlink", p.string(), ec.value());
      p = target.is_absolute() ? target : p.parent_path() / target;
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      return make_error(ErrorCode::invalid_argument, "the output path is a directory", given);
    }
    if (S_ISREG(st.st_mode)) return Destination{Sink::atomic, p.string(), true, st.st_mode};
    return Destination{Sink::write_through, given, true, 0};  // device, FIFO, socket
  }
  return make_error(ErrorCode::invalid_argument, "too many levels of symbolic links", given);
}

bool write_all(int fd, std::string_view bytes) {
  REHEARSE_ASSERT_GE(fd, 0);  // the callers return before writing to a failed open
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

Status write_to_stdout(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
      std::fflush(stdout) != 0) {
    return make_error(ErrorCode::io_error, "cannot write to standard output", "-");
  }
  return {};
}

Status write_through(const std::string& path, std::string_view bytes) {
  // resolve sends "-" to write_to_stdout.
  REHEARSE_ASSERT_NE(path, "-");
  std::fflush(stdout);  // what the command printed so far comes first
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return os_error("cannot open the output file", path, errno);
  const bool written = write_all(fd, bytes);
  const int err = errno;
  if (::close(fd) != 0 || !written) return os_error("cannot write the output file", path, err);
  return {};
}

// umask() can only be read by setting it: read once (a thread-safe static),
// so that files written from several threads at once (`check --threads T
// --emit DIR`) never see, or leave behind, the momentary 0.
mode_t new_file_mode() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return static_cast<mode_t>(0666 & ~mask);
}

// A temporary file beside the target, renamed over it once complete.
Status write_atomically(const Destination& d, std::string_view bytes) {
  REHEARSE_ASSERT(d.sink == Sink::atomic);
  // resolve keeps the mode of a regular file only: a device is never replaced.
  if (d.exists) REHEARSE_ASSERT(S_ISREG(d.mode));
  const fs::path target = d.path;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return os_error("cannot create a temporary file", temp, errno);
  // The temporary file lies beside the target, so the rename stays in one
  // directory (and one file system).
  REHEARSE_ASSERT_EQ(fs::path(temp).parent_path().string(), dir.string());
  const mode_t mode = d.exists ? static_cast<mode_t>(d.mode & 07777) : new_file_mode();
  bool ok = ::fchmod(fd, mode) == 0 && write_all(fd, bytes) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(temp.c_str(), target.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return os_error("cannot write the output file", target.string(), err);
  }
  return {};
}

}  // namespace

Status check_output_path(const std::string& path, const std::vector<std::string>& inputs) {
  auto destination = resolve(path);
  if (!destination) return destination.error();
  struct stat out {};
  if (path == "-" || ::stat(path.c_str(), &out) != 0) return {};
  for (const std::string& input : inputs) {
    struct stat in {};
    if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("refusing to write over the input file '{}'", input), path);
    }
  }
  return {};
}

Status write_output_file(const std::string& path, std::string_view bytes) {
  auto destination = resolve(path);
  if (!destination) return destination.error();
  switch (destination->sink) {
    case Sink::standard_output: return write_to_stdout(bytes);
    case Sink::write_through: return write_through(destination->path, bytes);
    case Sink::atomic: return write_atomically(*destination, bytes);
  }
  REHEARSE_UNREACHABLE();
}

}  // namespace rehearse::cli
