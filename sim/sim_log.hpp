// SimLog: the Log port of a simulated process. Every line becomes a trace
// event whose type is the log event name ("retry_scheduled"), with its fields
// as data; `job_id` / `slot` / `item` fields fill the event's job / slot /
// item. Lines are also kept as text (for the secrets monitor and reports).
#pragma once

#include <string>
#include <vector>

#include "model/ports.hpp"
#include "sim/simulator.hpp"
#include "sim/trace.hpp"

namespace rehearse::sim {

class SimLog final : public Log {
 public:
  SimLog(Simulator& simulator, Trace& trace) : simulator_(simulator), trace_(trace) {}

  void write(LogLevel level, std::string_view event, const LogFields& fields) override;

  // "level event key=value ..." per line, in order.
  const std::vector<std::string>& lines() const noexcept { return lines_; }

 private:
  Simulator& simulator_;
  Trace& trace_;
  std::vector<std::string> lines_;
};

}  // namespace rehearse::sim
