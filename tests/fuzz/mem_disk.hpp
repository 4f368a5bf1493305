// A minimal in-memory Disk for the store targets: files in a map, every write
// immediately visible, fsync a no-op, locks always granted. No crashes and no
// faults: the targets feed the stores arbitrary file contents, which is what
// a crash or an operator can leave behind.
#pragma once

#include <map>
#include <set>
#include <string>

#include "model/disk.hpp"

namespace rehearse::fuzz {

class MemDisk final : public Disk {
 public:
  std::map<std::string, std::string> files;
  std::set<std::string> dirs;

  Result<std::optional<std::string>> read_file(const std::string& path) override {
    const auto it = files.find(path);
    if (it == files.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length_max) override {
    const auto it = files.find(path);
    if (it == files.end()) return std::optional<std::string>();
    if (offset >= it->second.size()) return std::optional<std::string>(std::string());
    return std::optional<std::string>(it->second.substr(offset, length_max));
  }
  Status write_file(const std::string& path, std::string_view bytes) override {
    files[path] = std::string(bytes);
    return {};
  }
  Status append_file(const std::string& path, std::string_view bytes) override {
    files[path].append(bytes);
    return {};
  }
  Status fsync_file(const std::string& /*path*/) override { return {}; }
  Status rename_file(const std::string& from, const std::string& to) override {
    const auto it = files.find(from);
    if (it == files.end()) return make_error(ErrorCode::io_error, "no such file", from);
    files[to] = std::move(it->second);
    files.erase(from);
    return {};
  }
  Status fsync_dir(const std::string& /*dir*/) override { return {}; }
  Result<bool> remove_file(const std::string& path) override { return files.erase(path) > 0; }
  Status create_dir(const std::string& dir) override {
    dirs.insert(dir);
    return {};
  }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override {
    std::vector<std::string> names;
    const std::string prefix = dir + "/";
    for (const auto& [path, bytes] : files) {
      (void)bytes;
      if (path.compare(0, prefix.size(), prefix) == 0 &&
          path.find('/', prefix.size()) == std::string::npos) {
        names.push_back(path.substr(prefix.size()));
      }
    }
    return names;
  }
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override {
    files.try_emplace(path);
    return DiskLockHandle(std::make_unique<DiskLock>());
  }
};

}  // namespace rehearse::fuzz
