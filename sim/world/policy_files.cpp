#include "sim/world/policy_files.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "model/policy_forms.hpp"
#include "model/policy_text.hpp"

namespace rehearse::sim {

namespace {

// The text of `reference` beside the scenario, or nothing.
bool read_beside(const std::string& scenario_path, const std::string& reference,
                 std::string& text) {
  const auto file = std::filesystem::path(scenario_path).parent_path() / reference;
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

nlohmann::json inline_policy_files(nlohmann::json document, const std::string& scenario_path) {
  if (!document.is_object() || !document.contains("jobs") || !document["jobs"].is_array()) {
    return document;
  }
  for (auto& job : document["jobs"]) {
    if (!job.is_object() || !job.contains("retry_policy") || !job["retry_policy"].is_object()) {
      continue;
    }
    for (auto& [system, value] : job["retry_policy"].items()) {
      if (!value.is_string() || find_policy_system(system) == nullptr) continue;
      const auto reference = policy_file_reference(value.get<std::string>());
      std::string text;
      if (reference && read_beside(scenario_path, *reference, text)) value = text;
    }
  }
  return document;
}

}  // namespace rehearse::sim
