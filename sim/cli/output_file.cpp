#include "sim/cli/output_file.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace rehearse::cli {

Status write_output_file(const std::string& path, const std::string& bytes, const std::string& what) {
  namespace fs = std::filesystem;
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(ErrorCode::io_error, "cannot create " + what, temp);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      return make_error(ErrorCode::io_error, "cannot write " + what, temp);
    }
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return make_error(ErrorCode::io_error, "cannot rename " + what + ": " + ec.message(), path);
  }
  return {};
}

}  // namespace rehearse::cli
