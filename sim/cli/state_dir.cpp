#include "sim/cli/state_dir.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include "model/state_store.hpp"

namespace rehearse::cli {
namespace {

struct NoLock final : DiskLock {};

Status refuse(const std::string& path) {
  return make_error(ErrorCode::io_error, "read-only: a state directory is never written here",
                    path);
}

// A worker's state directory: it exists and holds a state file.
Status check_state_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    return make_error(ErrorCode::not_found, "no such directory", dir);
  }
  if (!S_ISDIR(st.st_mode)) return make_error(ErrorCode::invalid_argument, "not a directory", dir);
  // A worker that never ran leaves no state file; a directory without one is
  // far more often the wrong path than a fresh start worth a view of 0 jobs.
  const auto present = [&dir](const char* name) {
    struct stat file {};
    return ::stat((dir + "/" + name).c_str(), &file) == 0;
  };
  if (!present("retry_state.json") && !present("retry_state.journal")) {
    return make_error(ErrorCode::not_found,
                      "no state file here (retry_state.json or retry_state.journal): not a "
                      "worker's state directory, or a worker that never ran",
                      dir);
  }
  return {};
}

// The store of a worker's directory; a corrupt store opens (its health says so).
Result<StateStore> open_state_dir(Disk& disk, const std::string& dir) {
  if (Status s = check_state_dir(dir); !s.ok()) return s.error();
  return StateStore::open(disk, dir);
}

}  // namespace

Result<std::optional<std::string>> ReadOnlyDisk::read_file(const std::string& path) {
  return disk_.read_file(path);
}
Result<std::optional<std::string>> ReadOnlyDisk::read_range(const std::string& path,
                                                            std::uint64_t offset,
                                                            std::uint64_t length_max) {
  return disk_.read_range(path, offset, length_max);
}
Status ReadOnlyDisk::write_file(const std::string& path, std::string_view) { return refuse(path); }
Status ReadOnlyDisk::append_file(const std::string& path, std::string_view) { return refuse(path); }
Status ReadOnlyDisk::rename_file(const std::string& from, const std::string&) {
  return refuse(from);
}
Result<bool> ReadOnlyDisk::remove_file(const std::string& path) { return refuse(path).error(); }
Status ReadOnlyDisk::create_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
  return make_error(ErrorCode::io_error, "no such directory", dir);
}
Result<std::vector<std::string>> ReadOnlyDisk::list_dir(const std::string& dir) {
  return disk_.list_dir(dir);
}
Result<DiskLockHandle> ReadOnlyDisk::lock_exclusive(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return disk_.lock_exclusive(path);
  return DiskLockHandle(std::make_unique<NoLock>());
}

Result<std::map<std::string, JobState>> read_state_dir(Disk& disk, const std::string& dir) {
  auto store = open_state_dir(disk, dir);
  if (!store) return std::move(store).error();
  const StoreHealth health = store->health();
  if (!health.ok() && health.error) return *health.error;
  return store->read_all();
}

namespace {

// A private copy of the directory's files, removed when it goes.
class DirCopy {
 public:
  DirCopy() {
    std::string pattern = (std::filesystem::temp_directory_path() / "rehearse-state-XXXXXX");
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  DirCopy(const DirCopy&) = delete;
  DirCopy& operator=(const DirCopy&) = delete;
  ~DirCopy() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  Status fill_from(const std::string& dir) {
    if (path_.empty()) return make_error(ErrorCode::io_error, "cannot make a temporary directory");
    std::error_code ec;
    std::filesystem::copy(dir, path_, std::filesystem::copy_options::recursive, ec);
    if (ec) return make_error(ErrorCode::io_error, "cannot copy: " + ec.message(), dir);
    return {};
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An error found in the copy, told of the user's directory.
Error in_user_dir(Error e, const std::string& copy, const std::string& dir) {
  if (e.where.rfind(copy, 0) == 0) e.where = dir + e.where.substr(copy.size());
  const auto at = e.message.find(copy);
  if (at != std::string::npos) e.message.replace(at, copy.size(), dir);
  return e;
}

StateDirRead read_store(StateStore& store, const std::string& copy, const std::string& dir) {
  StateDirRead out;
  const StoreHealth health = store.health();
  if (!health.ok()) {
    out.corrupt =
        in_user_dir(health.error ? *health.error
                                 : Error{ErrorCode::corrupt, "the store is corrupt", copy},
                    copy, dir);
    return out;
  }
  auto jobs = store.read_all();
  if (!jobs) {
    out.corrupt = in_user_dir(std::move(jobs).error(), copy, dir);
    return out;
  }
  out.jobs = std::move(*jobs);
  return out;
}

}  // namespace

// The store is opened as a fresh worker opens it, which may repair it (a torn
// tail dropped and kept beside it): on a copy, so the user's files stay as
// they are.
Result<StateDirRead> read_state_dir_kept(const std::string& dir) {
  if (Status s = check_state_dir(dir); !s.ok()) return s.error();
  DirCopy copy;
  if (Status s = copy.fill_from(dir); !s.ok()) return s.error();
  PosixDisk disk;
  auto store = StateStore::open(disk, copy.path());
  if (!store) return in_user_dir(std::move(store).error(), copy.path(), dir);
  return read_store(*store, copy.path(), dir);
}

}  // namespace rehearse::cli
