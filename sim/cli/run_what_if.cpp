#include "sim/cli/run_what_if.hpp"

#include <fmt/format.h>

#include "sim/cli/json_input.hpp"

namespace rehearse::cli {

Result<WhatIf> read_what_if(const std::vector<std::string>& specs) {
  WhatIf out;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("expected JOB=POLICY, got \"{}\"", spec), "--policy");
    }
    auto policy = read_json_argument(spec.substr(eq + 1), /*bare_words=*/{"auto"});
    if (!policy) {
      Error e = std::move(policy).error();
      e.message = "--policy " + spec.substr(0, eq) + ": " + e.message;
      return e;
    }
    out.policies.emplace_back(spec.substr(0, eq), policy->value);
  }
  return out;
}

Result<sim::Scenario> load_what_if(const std::string& file, const WhatIf& what_if) {
  auto text = read_text_file(file, "scenario");
  if (!text) return std::move(text).error();
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(*text);
  } catch (const nlohmann::json::parse_error&) {
    return sim::load_scenario_json(*text, file);  // the loader says where and why
  }
  for (const auto& [job, policy] : what_if.policies) {
    bool found = false;
    for (auto& j : doc.value("jobs", nlohmann::ordered_json::array())) {
      found = found || (j.is_object() && j.value("id", "") == job);
    }
    if (!found) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("--policy {}: the scenario lists no job '{}'", job, job), file);
    }
    for (auto& j : doc["jobs"]) {
      if (j.value("id", "") == job) j["retry_policy"] = nlohmann::ordered_json(policy);
    }
  }
  return sim::load_scenario_json(doc.dump(), file);
}

std::vector<sim::ExpectFailure> take_changed(sim::Verdict& verdict) {
  std::vector<sim::ExpectFailure> changed = std::move(verdict.expect_failures);
  verdict.expect_failures.clear();
  return changed;
}

std::string format_changed(const std::string& file, const WhatIf& what_if,
                           const std::vector<sim::ExpectFailure>& changed) {
  std::string with;
  for (const auto& [job, policy] : what_if.policies)
    with += fmt::format("{}{}={}", with.empty() ? "" : ", ", job, policy.dump());
  std::string out = fmt::format("what if {}: {}: {} of the expected (observed) outcomes changed\n",
                                with, file, changed.size());
  for (const sim::ExpectFailure& f : changed) {
    out += fmt::format("  {}: was {}, now {}\n", f.pointer, f.expected, f.got);
  }
  return out;
}

nlohmann::json changed_json(const WhatIf& what_if, const std::vector<sim::ExpectFailure>& changed) {
  nlohmann::json doc;
  doc["policies"] = nlohmann::json::object();
  for (const auto& [job, policy] : what_if.policies) doc["policies"][job] = policy;
  doc["changed"] = nlohmann::json::array();
  for (const sim::ExpectFailure& f : changed) {
    doc["changed"].push_back(
        {{"pointer", f.pointer},
         {"was", f.expected_value.is_null() ? nlohmann::json(f.expected) : f.expected_value},
         {"now", f.got_value.is_null() ? nlohmann::json(f.got) : f.got_value}});
  }
  return doc;
}

}  // namespace rehearse::cli
