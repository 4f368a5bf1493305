// The grid of `rehearse tune --fleet` (sim/report/tune_fleet.hpp): the
// single-job sweep's keys (attempts, delay, backoff, cap) read by its own
// parser, and the fleet's own two, jitter shapes by name and a fleet-wide
// retry budget.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/report/tune_fleet.hpp"

namespace rehearse::sim {
namespace {

Error bad(std::string where, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message), std::move(where));
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    out.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

Result<std::vector<JitterShape>> read_jitters(const std::string& value) {
  std::vector<JitterShape> out;
  for (const std::string& item : split(value, ',')) {
    bool known = false;
    for (const JitterShape shape :
         {JitterShape::none, JitterShape::equal, JitterShape::full, JitterShape::decorrelated}) {
      if (item == to_string(shape)) {
        out.push_back(shape);
        known = true;
      }
    }
    if (!known) {
      return bad("--grid jitter",
                 fmt::format("expected none, equal, full or decorrelated, got \"{}\"", item));
    }
  }
  return out;
}

Result<std::vector<int>> read_budgets(const std::string& value) {
  std::vector<int> out;
  for (std::string item : split(value, ',')) {
    if (item == "none") {
      out.push_back(0);
      continue;
    }
    if (!item.empty() && item.back() == '%') item.pop_back();
    const bool digits = !item.empty() && item.size() <= 3 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    const int percent = digits ? std::stoi(item) : 0;
    if (percent < 1 || percent > 100) {
      return bad("--grid budget",
                 fmt::format("expected none or a percent from 1 to 100, got \"{}\"", item));
    }
    out.push_back(percent);
  }
  return out;
}

// The single-job grid's keys, given: their lists replace the fleet's defaults.
Status read_base_keys(const std::string& spec, const std::set<std::string>& given,
                      FleetGrid& grid) {
  if (given.empty()) return {};
  auto base = parse_tune_grid(spec);
  if (!base) return std::move(base).error();
  if (given.count("attempts")) grid.attempts = base->attempts;
  if (given.count("delay")) grid.delays = base->delays;
  if (given.count("backoff")) grid.kinds = base->kinds;
  if (given.count("cap")) grid.caps = base->caps;
  return {};
}

Status check_decorrelated(const FleetGrid& grid) {
  const bool decorrelated = std::find(grid.jitters.begin(), grid.jitters.end(),
                                      JitterShape::decorrelated) != grid.jitters.end();
  for (const BackoffKind kind : grid.kinds) {
    if (decorrelated && kind != BackoffKind::exponential) {
      return bad("--grid jitter",
                 fmt::format("decorrelated jitter grows on its own and needs backoff=exponential; "
                             "the grid also has {}",
                             to_string(kind)));
    }
  }
  return {};
}

}  // namespace

const char* to_string(JitterShape shape) noexcept {
  switch (shape) {
    case JitterShape::none: return "none";
    case JitterShape::equal: return "equal";
    case JitterShape::full: return "full";
    case JitterShape::decorrelated: return "decorrelated";
  }
  return "?";
}

Result<FleetGrid> parse_fleet_grid(std::string_view text) {
  FleetGrid grid;
  std::string base_spec;
  std::set<std::string> given;
  for (const std::string& entry : split(text, ';')) {
    if (entry.empty()) continue;
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq + 1 == entry.size()) {
      return bad("--grid", fmt::format("expected KEY=VALUES, got \"{}\"", entry));
    }
    const std::string key = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (!given.insert(key).second) {
      return bad("--grid", fmt::format("key \"{}\" given twice", key));
    }
    if (key == "jitter") {
      auto j = read_jitters(value);
      if (!j) return std::move(j).error();
      grid.jitters = *j;
    } else if (key == "budget") {
      auto b = read_budgets(value);
      if (!b) return std::move(b).error();
      grid.budgets = *b;
    } else if (key == "attempts" || key == "delay" || key == "backoff" || key == "cap") {
      base_spec += (base_spec.empty() ? "" : ";") + entry;
    } else {
      return bad("--grid", fmt::format("unknown key \"{}\": expected attempts, delay, backoff, "
                                       "cap, jitter or budget",
                                       key));
    }
  }
  given.erase("jitter");
  given.erase("budget");
  if (Status s = read_base_keys(base_spec, given, grid); !s.ok()) return s.error();
  if (Status s = check_decorrelated(grid); !s.ok()) return s.error();
  // Every list holds at least one value (a key read replaces its list with its items).
  REHEARSE_ASSERT(!grid.attempts.empty() && !grid.delays.empty() && !grid.kinds.empty() &&
                  !grid.caps.empty() && !grid.jitters.empty() && !grid.budgets.empty());
  return grid;
}

}  // namespace rehearse::sim
