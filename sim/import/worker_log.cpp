#include "sim/import/worker_log.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <fmt/format.h>

namespace rehearse::sim {

namespace {

using nlohmann::json;

constexpr int kLogFormat = 1;

Error bad_line(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::schema_error, what, where);
}

std::string shown(const json& value) {
  std::string s = value.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// A line that does not parse: cut short (it ends inside the object) or not
// JSON at all; either way the column where the parser stopped.
Error unparsable(const std::string& line, const std::string& where, const json::parse_error& e) {
  const std::size_t column = std::min<std::size_t>(e.byte, line.size() + 1);
  if (e.byte >= line.size()) {
    return make_error(ErrorCode::parse_error,
                      fmt::format("the line ends inside its JSON object (column {}): a line cut "
                                  "short, as a crash while writing leaves it; expected a whole "
                                  "log line (docs/log-format.md)",
                                  column),
                      where);
  }
  return make_error(ErrorCode::parse_error,
                    fmt::format("not JSON at column {}: expected one log object per line "
                                "(docs/log-format.md)",
                                column),
                    where);
}

Result<std::string> string_key(const json& doc, const char* key, const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end()) return bad_line(where + ":/" + key, "missing (a string)");
  if (!it->is_string()) return bad_line(where + ":/" + key, "expected a string, got " + shown(*it));
  return it->get<std::string>();
}

Status check_format(const json& doc, const std::string& where) {
  const auto it = doc.find("log");
  if (it == doc.end())
    return bad_line(where + ":/log", "missing: expected the format number 1 (docs/log-format.md)");
  if (!it->is_number_integer() || it->get<std::int64_t>() != kLogFormat) {
    return bad_line(where + ":/log",
                    fmt::format("unknown log format {}; this reader knows format {}", shown(*it),
                                kLogFormat));
  }
  return {};
}

Result<LogRecord> record_of(const json& doc, const std::string& path, int line) {
  const std::string where = fmt::format("{}:{}", path, line);
  if (!doc.is_object()) return bad_line(where, "expected a log object, got " + shown(doc));
  if (auto st = check_format(doc, where); !st) return st.error();
  LogRecord r;
  r.file = path;
  r.line = line;
  auto t = string_key(doc, "t", where);
  if (!t) return std::move(t).error();
  auto instant = parse_instant(*t);
  if (!instant) {
    return bad_line(where + ":/t", fmt::format("expected an ISO-8601 UTC instant, got \"{}\"", *t));
  }
  r.t = *instant;
  auto level = string_key(doc, "level", where);
  if (!level) return std::move(level).error();
  static const char* const kLevels[] = {"debug", "info", "warning", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), *level) == std::end(kLevels)) {
    return bad_line(where + ":/level",
                    fmt::format("expected debug, info, warning or error, got \"{}\"", *level));
  }
  r.level = *level;
  auto event = string_key(doc, "event", where);
  if (!event) return std::move(event).error();
  r.event = *event;
  const auto fields = doc.find("fields");
  if (fields == doc.end() || !fields->is_object()) {
    return bad_line(where + ":/fields", "expected an object of the event's fields");
  }
  r.fields = *fields;
  return r;
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

}  // namespace

Result<WorkerLogRead> read_worker_log(const std::string& text, const std::string& path,
                                      const WorkerLogOptions& options) {
  WorkerLogRead out;
  std::size_t from = 0;
  int line = 0;
  while (from < text.size()) {
    const std::size_t nl = text.find('\n', from);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    const std::string body = text.substr(from, end - from);
    from = end + 1;
    ++line;
    if (is_blank(body)) continue;
    const std::string where = fmt::format("{}:{}", path, line);
    json doc;
    try {
      doc = json::parse(body);
    } catch (const json::parse_error& e) {
      return unparsable(body, where, e);
    }
    auto record = record_of(doc, path, line);
    if (!record) return std::move(record).error();
    if (!out.records.empty() && record->t < out.records.back().t) {
      const LogRecord& before = out.records.back();
      if (!options.allow_clock_steps) {
        return bad_line(where + ":/t",
                        fmt::format("the clock goes back from {} (line {}) to {}: expected "
                                    "stamps that never decrease (a clock stepped back by NTP? "
                                    "import with --clock-steps)",
                                    format_instant(before.t), before.line,
                                    format_instant(record->t)));
      }
      out.steps_back.push_back({where, before.t, record->t});
    }
    out.records.push_back(std::move(*record));
  }
  return out;
}

}  // namespace rehearse::sim
