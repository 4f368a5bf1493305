#include "sim/cli/scenario_files.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "model/assert.hpp"

namespace rehearse::cli {

Result<std::vector<std::string>> expand_scenario_paths(const std::vector<std::string>& arguments) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& arg : arguments) {
    std::error_code ec;
    const auto status = fs::status(arg, ec);
    if (ec || !fs::exists(status)) {
      return make_error(ErrorCode::not_found, "no such file or directory", arg);
    }
    if (fs::is_directory(status)) {
      std::vector<std::string> found;
      for (fs::directory_iterator it(arg, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path& p = it->path();
        std::error_code file_ec;
        if (p.extension() == ".json" && it->is_regular_file(file_ec)) {
          found.push_back((fs::path(arg) / p.filename()).string());
        }
      }
      if (ec) return make_error(ErrorCode::io_error, "cannot list the directory", arg);
      if (found.empty()) {
        return make_error(ErrorCode::not_found, "directory contains no *.json scenario file", arg);
      }
      std::sort(found.begin(), found.end());
      // Name order, and each file once.
      REHEARSE_ASSERT(std::adjacent_find(found.begin(), found.end()) == found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(arg);
    }
  }
  // Every argument named at least one file (an empty directory is an error).
  REHEARSE_ASSERT_GE(files.size(), arguments.size());
  return files;
}

}  // namespace rehearse::cli
