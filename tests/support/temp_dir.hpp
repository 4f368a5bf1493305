// TempDir: a fresh directory under $TMPDIR (else /tmp) for the tests that use
// a real disk, removed with everything in it when the TempDir goes. The name
// ("rehearse-<prefix>-XXXXXX") tells whose leftovers a killed run left behind.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "model/assert.hpp"

namespace rehearse::testsupport {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "test") {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/rehearse-" + prefix + "-XXXXXX";
    REHEARSE_ASSERT(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace rehearse::testsupport
