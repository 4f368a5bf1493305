// The source tree's bundled scenarios, for tests that run over all of them
// (REHEARSE_SOURCE_DIR names the tree; ctest sets it).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/world/policy_files.hpp"

namespace rehearse::testsupport {

inline std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}

// A scenario file's document, its policy files inline (as `check` reads a
// base: derived cases travel without the file's directory).
inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return sim::inline_policy_files(nlohmann::json::parse(text.str()), path);
}

// Every scenarios/*.json, in name order.
inline std::vector<std::string> bundled_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/scenarios")) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rehearse::testsupport
