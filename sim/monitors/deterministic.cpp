#include "sim/monitors/deterministic.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/assert.hpp"

namespace rehearse::sim {

std::optional<Violation> compare_traces(const Trace& a, const Trace& b) {
  const auto& ea = a.events();
  const auto& eb = b.events();
  const std::size_t n = std::min(ea.size(), eb.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string la = to_json_line(ea[i]);
    const std::string lb = to_json_line(eb[i]);
    if (la != lb) {
      return Violation{Deterministic::kName, i, ea[i].t,
                       fmt::format("the traces differ at line {}:\n  first:  {}\n  second: {}",
                                   i + 1, la, lb)};
    }
  }
  if (ea.size() != eb.size()) {
    const bool a_longer = ea.size() > eb.size();
    // n is the shorter size: the longer trace has a line n.
    REHEARSE_ASSERT_LT(n, a_longer ? ea.size() : eb.size());
    const TraceEvent& extra = a_longer ? ea[n] : eb[n];

    return Violation{Deterministic::kName, n, extra.t,
                     fmt::format("the {} trace ends after {} lines, the other goes on with: {}",
                                 a_longer ? "second" : "first", n, to_json_line(extra))};
  }
  return std::nullopt;
}

}  // namespace rehearse::sim
