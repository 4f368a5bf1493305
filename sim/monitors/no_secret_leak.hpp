// no_secret_leak: no token value and no full agent id (longer than the 8
// characters logs may carry) appears in the trace, a log line or a report.
// Reads every event's JSON line ("*") and free text (observe_text); the
// message names a secret by its shape, never repeats it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class NoSecretLeak final : public Monitor {
 public:
  static constexpr const char* kName = "no_secret_leak";
  static constexpr const char* kSummary =
      "no token or secret appears in a log line, message or file";
  static std::vector<std::string> reads() { return {"*"}; }

  // Full agent ids (the orchestrator's list, AGENT_*_ID values) are secrets.
  NoSecretLeak(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;

  // Token values, as the brokerage issues them.
  void add_secret(std::string value);
  // Free text that is not a trace event (log lines, the report).
  Violations observe_text(std::string_view text, std::size_t index, TimeMs t) const;

 private:
  Violations check(std::string_view text, std::size_t index, TimeMs t, const char* what) const;

  std::vector<std::string> secrets_;
};

}  // namespace rehearse::sim
