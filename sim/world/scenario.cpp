// The scenario loader: JSON text -> Scenario, strictly.
//
// One pass over the document collects every error it can (a user fixing a
// file wants the full list, not one error per run), in three layers:
//   1. syntax (nlohmann's parse error, converted to line:column) and
//      duplicate keys (nlohmann keeps the last one silently; we refuse);
//   2. shape: known keys only, types, ranges, instants, durations, crons;
//   3. meaning: references between jobs, services, issues, agents, targets,
//      and faults inside the time span.
// Flags (valid but suspicious: invalid retry policies on purpose, risky
// side effects, unusable schedule overrides) are computed only for a valid
// scenario, so they never pile onto errors.
//
// The loader is split by section: sim/world/scenario_loader.hpp (the Loader class),
// scenario_reader, _services, _jobs, _faults, _expect, _flags and _names.cpp.
// This file holds the entry points and the syntax layer.
#include "sim/world/scenario_loader.hpp"

#include "model/assert.hpp"

namespace rehearse::sim {

using scenario_detail::kMaxFileBytes;
using scenario_detail::kMaxNestingDepth;
using scenario_detail::Loader;

namespace {

// Where a syntax error is: nlohmann's byte count -> 1-based line and column.
std::string line_column(std::string_view text, std::size_t byte) {
  const std::size_t index = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  REHEARSE_ASSERT_LE(line_start, index);
  return fmt::format("{}:{}", line, index - line_start + 1);
}

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax
// error ..." -> "syntax error ..." (the location is reported separately).
std::string strip_json_exception_prefix(std::string what) {
  REHEARSE_ASSERT(!what.empty());  // nlohmann's exceptions always say something
  if (const auto column = what.find(", column "); column != std::string::npos) {
    if (const auto colon = what.find(": ", column); colon != std::string::npos) {
      return what.substr(colon + 2);
    }
  }
  if (what.rfind("[json.exception.", 0) == 0) {
    if (const auto close = what.find("] "); close != std::string::npos) {
      return what.substr(close + 2);
    }
  }
  return what;
}

// Thrown from the parse callback to stop at a document nested too deeply.
struct NestingTooDeep {
  std::string pointer;
};

// Tracks the JSON pointer during a callback parse to report duplicate keys,
// which nlohmann otherwise resolves silently (the last one wins), and to stop
// at absurd nesting.
class DuplicateKeyFinder {
 public:
  std::vector<std::string> duplicates;  // pointers of the repeated keys

  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        frames_.push_back(
            Frame{event == json::parse_event_t::array_start, 0, next_token(), {}, {}});
        if (frames_.size() > kMaxNestingDepth) throw NestingTooDeep{pointer()};
        REHEARSE_ASSERT_LE(frames_.size(), kMaxNestingDepth);
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        // The parser closes only what it opened.
        REHEARSE_ASSERT(!frames_.empty());
        if (!frames_.empty()) frames_.pop_back();
        break;
      case json::parse_event_t::key: {
        if (frames_.empty()) break;
        Frame& top = frames_.back();
        top.last_key = parsed.get<std::string>();
        if (!top.keys.insert(top.last_key).second && duplicates.size() < kScenarioErrorLimit) {
          duplicates.push_back(pointer() + "/" + json_pointer_token(top.last_key));
        }
        REHEARSE_ASSERT_LE(duplicates.size(), kScenarioErrorLimit);
        break;
      }
      case json::parse_event_t::value:
        next_token();  // advances the index of an enclosing array
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array = false;
    std::size_t next_index = 0;
    std::string token;  // this container's token in its parent
    std::string last_key;
    std::set<std::string> keys;
  };

  std::string next_token() {
    if (frames_.empty()) return {};
    Frame& top = frames_.back();
    if (top.is_array) return std::to_string(top.next_index++);
    return json_pointer_token(top.last_key);
  }

  std::string pointer() const {
    std::string out;
    for (std::size_t i = 1; i < frames_.size(); ++i) out += "/" + frames_[i].token;
    return out;
  }

  std::vector<Frame> frames_;
};

// What every scenario the loader accepts holds, whatever the file said: the
// loader refused anything else, so a failure here is the loader's bug (a
// check it lost), never the user's.
void assert_accepted(const ScenarioCheck& check) {
  REHEARSE_ASSERT(check.scenario.has_value());
  REHEARSE_ASSERT_EQ(check.errors_omitted, 0u);
  const Scenario& s = *check.scenario;
  REHEARSE_ASSERT_LT(s.start_ms, s.until_ms);
  REHEARSE_ASSERT_GE(s.queue.workers, 1);
  REHEARSE_ASSERT_GE(s.queue.concurrency, 1);
  REHEARSE_ASSERT_GE(s.queue.max_events, 1);
  std::set<std::string> ids;
  for (const JobSpec& job : s.jobs) REHEARSE_ASSERT(ids.insert(job.id).second);
  for (const FaultSpec& fault : s.faults) {
    REHEARSE_ASSERT_GE(fault.at_ms, s.start_ms);
    REHEARSE_ASSERT_LE(fault.at_ms, s.until_ms);
    if (fault.for_ms) {
      REHEARSE_ASSERT_GT(*fault.for_ms, 0);
      REHEARSE_ASSERT_LE(*fault.for_ms, s.until_ms - fault.at_ms);
    }
  }
}

}  // namespace

// ------------------------------------------------------------ entry points

ScenarioCheck check_scenario_json(std::string_view text, const std::string& path) {
  return check_scenario_json(text, path, fault_kinds());
}

ScenarioCheck check_scenario_json(std::string_view text, const std::string& path,
                                  const FaultKinds& kinds) {
  Loader loader(path, kinds);
  if (text.size() > kMaxFileBytes) {
    loader.syntax_error("1:1", fmt::format("file is {} bytes; scenarios are limited to {} bytes",
                                           text.size(), kMaxFileBytes));
    return std::move(loader).finish();
  }
  DuplicateKeyFinder duplicates;
  json root;
  try {
    root = json::parse(text.begin(), text.end(),
                       [&duplicates](int, json::parse_event_t event, json& parsed) {
                         return duplicates.on_event(event, parsed);
                       });
  } catch (const json::parse_error& e) {
    loader.syntax_error(line_column(text, e.byte), strip_json_exception_prefix(e.what()));
    return std::move(loader).finish();
  } catch (const NestingTooDeep& e) {
    loader.nesting_error(e.pointer);
    return std::move(loader).finish();
  } catch (const json::exception& e) {
    // e.g. a number too large for a double: no position is known.
    loader.syntax_error("1:1", strip_json_exception_prefix(e.what()));
    return std::move(loader).finish();
  }
  for (const auto& pointer : duplicates.duplicates) loader.duplicate_key(pointer);
  loader.load(root);
  if (!loader.has_errors()) loader.compute_flags();
  ScenarioCheck check = std::move(loader).finish();
  // A scenario exactly when there is no error; an omitted error only past the limit.
  REHEARSE_ASSERT_EQ(check.scenario.has_value(), check.errors.empty());
  if (check.errors_omitted > 0) REHEARSE_ASSERT_EQ(check.errors.size(), kScenarioErrorLimit);
  if (check.valid()) assert_accepted(check);
  return check;
}

ScenarioCheck check_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    ScenarioCheck out;
    out.errors.push_back(make_error(ErrorCode::io_error, "cannot open the file", path));
    return out;
  }
  // Refuse a huge file before reading it (check_scenario_json has the same bound).
  if (const auto size = in.tellg(); size > 0 && static_cast<std::size_t>(size) > kMaxFileBytes) {
    ScenarioCheck out;
    out.errors.push_back(make_error(
        ErrorCode::invalid_argument,
        fmt::format("file is {} bytes; scenarios are limited to {} bytes", size, kMaxFileBytes),
        path));
    return out;
  }
  in.seekg(0);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    ScenarioCheck out;
    out.errors.push_back(make_error(ErrorCode::io_error, "cannot read the file", path));
    return out;
  }
  return check_scenario_json(buffer.str(), path);
}

namespace {
Result<Scenario> first_error(ScenarioCheck check) {
  if (check.valid()) {
    REHEARSE_ASSERT(check.scenario.has_value());  // no error: the scenario is there
    return std::move(*check.scenario);
  }
  Error first = check.errors.front();
  const std::size_t more = check.errors.size() - 1 + check.errors_omitted;
  if (more > 0) {
    first.message += fmt::format(" (and {} more error{}; 'rehearse validate' lists them)", more,
                                 more == 1 ? "" : "s");
  }
  return first;
}
}  // namespace

Result<Scenario> load_scenario_json(std::string_view text, const std::string& path) {
  return first_error(check_scenario_json(text, path));
}

Result<Scenario> load_scenario_file(const std::string& path) {
  return first_error(check_scenario_file(path));
}

}  // namespace rehearse::sim
