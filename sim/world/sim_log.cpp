#include "sim/world/sim_log.hpp"

#include <fmt/format.h>

#include "model/json_log.hpp"

namespace rehearse::sim {

void SimLog::write(LogLevel level, std::string_view event, const LogFields& fields) {
  TraceEvent e;
  e.source = EventSource::core;  // the core's own words: for people, never a witness
  e.t = simulator_.now();
  e.type = std::string(event);
  e.data["level"] = to_string(level);
  std::string line = fmt::format("{} {}", to_string(level), event);
  for (const LogField& f : fields) {
    const std::string text = f.value.is_string() ? f.value.get<std::string>() : f.value.dump();
    line += fmt::format(" {}={}", f.key, text);
    if (f.key == "job_id" && f.value.is_string()) {
      e.job = f.value.get<std::string>();
    } else if (f.key == "slot" && f.value.is_string()) {
      if (auto t = parse_instant(f.value.get<std::string>())) {
        e.slot = *t;
        continue;
      }
      e.data[f.key] = f.value;
    } else if (f.key == "item" && f.value.is_string()) {
      e.item = f.value.get<std::string>();
    } else {
      e.data[f.key] = f.value;
    }
  }
  trace_.record(std::move(e));
  if (observer_) {
    observer_(line);
  } else {
    lines_.push_back(std::move(line));
  }
  if (json_sink_) json_sink_(format_log_line(json_clock_->now(), level, event, fields));
}

}  // namespace rehearse::sim
