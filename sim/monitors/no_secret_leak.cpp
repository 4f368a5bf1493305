#include "sim/monitors/no_secret_leak.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {
constexpr std::size_t kAgentPrefixChars = 8;  // logs may carry this much of an agent id
}  // namespace

NoSecretLeak::NoSecretLeak(const Scenario& scenario, MonitorContext&) {
  // Full agent ids are secrets (logs carry the first 8 characters only); an id
  // no longer than that prefix cannot be hidden by the rule, so it is not one.
  auto add_agent = [this](const std::string& id) {
    if (id.size() > kAgentPrefixChars) add_secret(id);
  };
  if (scenario.services.orchestrator) {
    for (const OrchestratorAgent& a : scenario.services.orchestrator->agents) add_agent(a.id);
  }
  for (const auto& [key, value] : scenario.env) {
    if (key.rfind("AGENT_", 0) == 0 && key.size() > 3 && key.substr(key.size() - 3) == "_ID") {
      add_agent(value);
    }
  }
}

void NoSecretLeak::add_secret(std::string value) {
  if (value.empty()) return;
  if (std::find(secrets_.begin(), secrets_.end(), value) != secrets_.end()) return;
  secrets_.push_back(std::move(value));
}

Violations NoSecretLeak::observe(const TraceEvent& e, std::size_t i) {
  if (secrets_.empty()) return {};
  return check(to_json_line(e), i, e.t, "the trace");
}

Violations NoSecretLeak::observe_text(std::string_view text, std::size_t i, TimeMs t) const {
  return check(text, i, t, "a log line or report");
}

Violations NoSecretLeak::check(std::string_view text, std::size_t i, TimeMs t,
                               const char* what) const {
  for (const std::string& s : secrets_) {
    // add_secret keeps no empty secret: one would match every text.
    REHEARSE_ASSERT(!s.empty());
    if (text.find(s) != std::string_view::npos) {
      // Never repeat the secret in the message: name it by its shape.
      return {{kName, i, t,
               fmt::format("{} carries a secret in full ({} characters starting '{}...')", what,
                           s.size(), s.substr(0, std::min<std::size_t>(4, s.size())))}};
    }
  }
  return {};
}

}  // namespace rehearse::sim
