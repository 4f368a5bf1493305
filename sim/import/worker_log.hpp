// The worker's JSON log (docs/log-format.md, format 1) read back as records.
//
// Every line is judged before anything is inferred from it: a line that is
// not a whole JSON object (cut by a crash, or not a log line at all), a
// format number this reader does not know, an envelope key missing or of the
// wrong type, and a clock that goes back are refused with the file, the line
// and what was expected. A clock may go back on a real machine (an NTP step);
// the import then accepts it only when asked (--clock-steps), and says so.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse::sim {

struct LogRecord {
  std::string file;
  int line = 0;  // 1-based
  TimeMs t = 0;  // the worker's clock
  std::string level;
  std::string event;
  nlohmann::json fields;  // an object

  std::string where() const { return file + ":" + std::to_string(line); }
};

struct ClockStep {
  std::string where;  // the line whose stamp went back
  TimeMs from_ms = 0;
  TimeMs to_ms = 0;
};

struct WorkerLogRead {
  std::vector<LogRecord> records;
  std::vector<ClockStep> steps_back;  // only with allow_clock_steps
};

struct WorkerLogOptions {
  bool allow_clock_steps = false;
};

// `text` is the file's content; `path` names it in errors and evidence.
// Blank lines are skipped; the last line may lack its newline.
Result<WorkerLogRead> read_worker_log(const std::string& text, const std::string& path,
                                      const WorkerLogOptions& options);

}  // namespace rehearse::sim
