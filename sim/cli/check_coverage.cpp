#include "sim/cli/check_coverage.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "model/assert.hpp"
#include "sim/check/reachability.hpp"

namespace rehearse::cli {

CoverageTally tally_coverage(const std::vector<sim::CaseRecord>& records) {
  std::map<std::string, std::size_t> counts;
  for (const sim::CaseRecord& r : records) {
    for (const std::string& name : r.reached) ++counts[name];
  }
  CoverageTally tally;
  tally.cases = records.size();
  for (const sim::ReachabilityPoint& p : sim::reachability_points()) {
    const std::size_t n = counts.count(p.name) != 0 ? counts.at(p.name) : 0;
    tally.cases_per_point.emplace_back(p.name, n);
    if (n == 0) tally.unreached.push_back(p.name);
  }
  // One row per point of the table, in its order; coverage_text relies on it.
  REHEARSE_ASSERT_EQ(tally.cases_per_point.size(), sim::reachability_points().size());
  REHEARSE_ASSERT_LE(tally.unreached.size(), tally.cases_per_point.size());
  return tally;
}

std::string coverage_text(const CoverageTally& tally) {
  std::size_t width = 5;
  for (const auto& [name, n] : tally.cases_per_point) width = std::max(width, name.size());
  std::string out = fmt::format("coverage: reachability points over {} case{}\n", tally.cases,
                                tally.cases == 1 ? "" : "s");
  const auto& points = sim::reachability_points();
  REHEARSE_ASSERT_EQ(tally.cases_per_point.size(), points.size());  // made by tally_coverage
  for (std::size_t i = 0; i < points.size(); ++i) {
    REHEARSE_ASSERT_EQ(tally.cases_per_point[i].first, points[i].name);
    const std::size_t n = tally.cases_per_point[i].second;
    out += fmt::format("  {:<{}}  {:>7}  {}\n", points[i].name, width, n, points[i].meaning);
  }
  if (tally.unreached.empty()) {
    out += fmt::format("coverage: all {} points reached\n", points.size());
  } else {
    out += fmt::format("coverage: {} of {} points reached by no case: {}\n", tally.unreached.size(),
                       points.size(), fmt::join(tally.unreached, ", "));
  }
  return out;
}

nlohmann::json coverage_json(const CoverageTally& tally) {
  nlohmann::json points = nlohmann::json::object();
  for (const auto& [name, n] : tally.cases_per_point) points[name] = n;
  // The point names are unique, so no count overwrote another.
  REHEARSE_ASSERT_EQ(points.size(), tally.cases_per_point.size());
  return {{"cases", tally.cases}, {"points", points}, {"unreached", tally.unreached}};
}

int coverage_exit_code(const CoverageTally& tally, bool required, int exit_code) {
  // An exit code: check's own, or a shard file's, which merge reads as 0..255.
  REHEARSE_ASSERT_GE(exit_code, 0);
  REHEARSE_ASSERT_LE(exit_code, 255);
  if (!required || tally.unreached.empty()) return exit_code;
  return std::max(exit_code, 1);
}

}  // namespace rehearse::cli
