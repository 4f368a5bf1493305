// The scenario loader (docs/fuzzing.md, target `scenario`). Input: the file.
//  - a refused file: every error is located as "fuzz.json" (the root), or
//    "fuzz.json:" followed by a JSON pointer or a 1-based line:column; a
//    pointer's parent exists in the document (when the text is JSON without a
//    key given twice); at most kScenarioErrorLimit are kept;
//  - an accepted file: the scenario is there, its time span is ordered, every
//    job's pointer leads to that job's object in the document, every flag is
//    located by a pointer. There is no scenario writer, so no round trip.
#include <string>

#include <nlohmann/json.hpp>

#include "sim/world/scenario.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

using nlohmann::json;
constexpr std::string_view kPath = "fuzz.json:";

bool is_line_column(std::string_view where) {
  const auto colon = where.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == where.size()) return false;
  for (std::size_t i = 0; i < where.size(); ++i) {
    if (i != colon && (where[i] < '0' || where[i] > '9')) return false;
  }
  return where[0] != '0';
}

bool pointer_parent_exists(const json& document, std::string_view pointer) {
  const std::string parent(pointer.substr(0, pointer.rfind('/')));
  try {
    return parent.empty() || document.contains(json::json_pointer(parent));
  } catch (const json::exception&) {
    return false;
  }
}

// Where a message points: after the path, a pointer ("" or "/...") or line:column.
// The path alone names the document's root (the empty pointer).
std::string_view location(const std::string& where, const std::string& what) {
  if (where == kPath.substr(0, kPath.size() - 1)) return {};
  REHEARSE_FUZZ_CHECK(where.compare(0, kPath.size(), kPath) == 0, what);
  return std::string_view(where).substr(kPath.size());
}

// A document with a key given twice keeps only one of them, so a pointer
// into the other cannot be followed in it.
bool has_duplicate_keys(const sim::ScenarioCheck& check) {
  for (const Error& error : check.errors) {
    if (error.message.find("duplicate key") != std::string::npos) return true;
  }
  return false;
}

void check_refused(const sim::ScenarioCheck& check, const json& document) {
  REHEARSE_FUZZ_CHECK(!check.scenario.has_value(), "invalid but a scenario was returned");
  const bool followable = !document.is_discarded() && !has_duplicate_keys(check);
  REHEARSE_FUZZ_CHECK(check.errors.size() <= sim::kScenarioErrorLimit,
                      std::to_string(check.errors.size()));
  for (const Error& error : check.errors) {
    const std::string what = error.describe();
    REHEARSE_FUZZ_CHECK(!error.message.empty(), what);
    const std::string_view at = location(error.where, what);
    if (!at.empty() && at.front() == '/') {
      if (followable) {
        REHEARSE_FUZZ_CHECK(pointer_parent_exists(document, at), what);
      }
    } else {
      REHEARSE_FUZZ_CHECK(at.empty() || is_line_column(at), what);
    }
  }
}

void check_accepted(const sim::ScenarioCheck& check, const json& document) {
  REHEARSE_FUZZ_CHECK(check.scenario.has_value(), "valid but no scenario");
  const sim::Scenario& s = *check.scenario;
  REHEARSE_FUZZ_CHECK(s.start_ms <= s.until_ms, s.name);
  REHEARSE_FUZZ_CHECK(!document.is_discarded(), "accepted text that is not JSON");
  for (const sim::JobSpec& job : s.jobs) {
    const json* entry = nullptr;
    try {
      entry = &document.at(json::json_pointer(job.pointer));
    } catch (const json::exception&) {
      entry = nullptr;
    }
    REHEARSE_FUZZ_CHECK(entry != nullptr && entry->is_object(), job.pointer);
    REHEARSE_FUZZ_CHECK(entry->value("id", std::string()) == job.id, job.pointer);
  }
  for (const sim::ScenarioFlag& flag : check.flags) {
    const std::string_view at = location(flag.where, flag.message);
    REHEARSE_FUZZ_CHECK(at.empty() || at.front() == '/', flag.where);
  }
}

}  // namespace

void check_scenario(std::string_view input) {
  const sim::ScenarioCheck check =
      sim::check_scenario_json(input, std::string(kPath.substr(0, kPath.size() - 1)));
  const json document = json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (check.valid()) {
    check_accepted(check, document);
  } else {
    check_refused(check, document);
  }
}

}  // namespace rehearse::fuzz
