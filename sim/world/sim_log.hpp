// SimLog: the Log port of a simulated process. Every line becomes a trace
// event whose type is the log event name ("retry_scheduled"), with its fields
// as data; `job_id` / `slot` / `item` fields fill the event's job / slot /
// item. Lines are also kept as text (for the secrets monitor and reports),
// or, with a line observer set, handed to it as they are written and not
// kept (the world checks them for secrets as they come: memory bounded by
// the fleet, not by history).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model/ports.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

class SimLog final : public Log {
 public:
  SimLog(Simulator& simulator, Trace& trace) : simulator_(simulator), trace_(trace) {}

  void write(LogLevel level, std::string_view event, const LogFields& fields) override;

  // "level event key=value ..." per line, in order (none kept while a line
  // observer is set).
  const std::vector<std::string>& lines() const noexcept { return lines_; }

  // Each line, right after its trace event is recorded, instead of keeping it.
  void set_line_observer(std::function<void(const std::string&)> observer) {
    observer_ = std::move(observer);
  }

  // Each line also as the production adapter writes it (model/json_log.hpp),
  // stamped by `clock` (the worker machine's, as a production log is), after
  // the text line's observer has seen it.
  void set_json_lines(const Clock& clock, std::function<void(std::string)> sink) {
    json_clock_ = &clock;
    json_sink_ = std::move(sink);
  }

 private:
  Simulator& simulator_;
  Trace& trace_;
  std::vector<std::string> lines_;
  std::function<void(const std::string&)> observer_;
  const Clock* json_clock_ = nullptr;
  std::function<void(std::string)> json_sink_;
};

}  // namespace rehearse::sim
