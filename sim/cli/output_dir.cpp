#include "sim/cli/output_dir.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

namespace rehearse::cli {
namespace {

namespace fs = std::filesystem;

Status io_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::io_error, what, path);
}

// A name is one file of the directory: no separator, no "." or "..".
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

Status write_files(const fs::path& dir,
                   const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [name, bytes] : files) {
    if (!plain_name(name)) return io_error("not a plain file name: " + name, dir.string());
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return io_error("cannot write " + name, dir.string());
  }
  return {};
}

}  // namespace

Status check_output_dir(const std::string& path) {
  std::error_code ec;
  const fs::path target(path);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) return io_error("its directory does not exist", path);
  if (!fs::exists(target, ec)) return {};
  if (!fs::is_directory(target, ec)) {
    return io_error("exists and is not a directory: a state directory is written whole", path);
  }
  if (!fs::is_empty(target, ec) || ec) {
    return io_error("exists and is not empty: a state directory is never merged into another",
                    path);
  }
  return {};
}

Status write_output_dir(const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& files) {
  if (Status s = check_output_dir(path); !s.ok()) return s;
  const fs::path target(path);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const fs::path temp =
      parent / fmt::format(".{}.tmp-{}", target.filename().string(), static_cast<long>(getpid()));
  std::error_code ec;
  fs::remove_all(temp, ec);
  if (!fs::create_directory(temp, ec)) return io_error("cannot create " + temp.string(), path);
  Status written = write_files(temp, files);
  if (written.ok() && fs::exists(target, ec)) fs::remove(target, ec);  // empty: checked
  if (written.ok()) {
    fs::rename(temp, target, ec);
    if (ec) written = io_error("cannot rename " + temp.string() + ": " + ec.message(), path);
  }
  if (!written.ok()) fs::remove_all(temp, ec);
  return written;
}

}  // namespace rehearse::cli
