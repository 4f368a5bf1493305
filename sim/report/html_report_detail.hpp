// The HTML report's private header, shared by sim/html_report*.cpp: the page's
// sizes, escaping, the time axis, the lanes and the marks drawn on them.
#pragma once

#include "sim/report/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/retry_policy.hpp"
#include "model/status_view.hpp"
#include "sim/monitors/registry.hpp"
#include "sim/report/timeline.hpp"

namespace rehearse::sim::html_report_detail {

using nlohmann::json;

constexpr double kLabelWidth = 210;  // lane names
constexpr double kPlotWidth = 1000;  // the time axis
constexpr double kBreakWidth = 22;   // a folded idle stretch
constexpr double kAxisHeight = 34;
constexpr std::size_t kMarkBudget = 12000;  // marks drawn at most (about 2 MB of SVG)

std::string esc(std::string_view s);
// JSON inside <script>: "</" must not end the element.
std::string script_json(const json& value);
std::string num(double v);

// Piecewise-linear time axis: busy stretches get width in proportion to
// their length, idle stretches longer than the gap threshold get a fixed
// narrow break.
class TimeAxis {
 public:
  struct Piece {
    TimeMs t0, t1;
    double x0, x1;
    bool folded;
  };

  TimeAxis(std::vector<TimeMs> points, TimeMs start, TimeMs end) {
    if (end <= start) end = start + 1;
    points.push_back(start);
    points.push_back(end);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    // Only a stretch that is a large share of the run (a fifth) and longer
    // than an hour is folded: regular hourly work never is.
    const DurationMs gap = std::max<DurationMs>((end - start) / 5, 3'600'000);
    std::vector<std::pair<TimeMs, TimeMs>> busy;
    std::vector<bool> folded_after;
    for (TimeMs p : points) {
      if (p < start || p > end) continue;
      if (!busy.empty() && p - busy.back().second <= gap) {
        busy.back().second = p;
      } else {
        busy.emplace_back(p, p);
      }
    }
    lay_out(busy, gap);
    // start and end are always points: the axis is never empty.
    REHEARSE_ASSERT(!pieces_.empty());
  }

  double x(TimeMs t) const {
    if (pieces_.empty()) return 0;
    if (t <= pieces_.front().t0) return pieces_.front().x0;
    for (const Piece& p : pieces_) {
      if (t <= p.t1) {
        const double f = p.t1 == p.t0 ? 1.0 : double(t - p.t0) / double(p.t1 - p.t0);
        // The pieces are contiguous: t lies inside the first piece that ends at or after it.
        REHEARSE_ASSERT(f >= 0.0 && f <= 1.0);
        return p.x0 + f * (p.x1 - p.x0);
      }
    }
    return pieces_.back().x1;
  }

  const std::vector<Piece>& pieces() const { return pieces_; }

  json to_json(TimeMs origin) const {
    json out = json::array();
    for (const Piece& p : pieces_) {
      out.push_back(
          {p.t0 - origin, p.t1 - origin, std::round(p.x0 * 10) / 10, std::round(p.x1 * 10) / 10});
    }
    return out;
  }

 private:
  // Busy stretches are padded by a little on both sides so a lone instant
  // still has room; the rest of the width is shared by duration.
  void lay_out(std::vector<std::pair<TimeMs, TimeMs>>& busy, DurationMs gap) {
    REHEARSE_ASSERT(!busy.empty());  // one break fewer than busy stretches
    const DurationMs pad = std::max<DurationMs>(gap / 8, 1);
    for (std::size_t i = 0; i < busy.size(); ++i) {
      busy[i].first -= (i == 0) ? 0 : pad;
      busy[i].second += (i + 1 == busy.size()) ? 0 : pad;
    }
    const double breaks = kBreakWidth * double(busy.size() - 1);
    const double min_piece = 24;
    double total = 0;
    for (const auto& [a, b] : busy) total += double(b - a);
    const double share = std::max(0.0, kPlotWidth - breaks - min_piece * double(busy.size()));
    double x = 0;
    for (std::size_t i = 0; i < busy.size(); ++i) {
      const auto [a, b] = busy[i];
      const double w =
          min_piece + (total > 0 ? share * double(b - a) / total : share / double(busy.size()));
      pieces_.push_back({a, b, x, x + w, false});
      x += w;
      if (i + 1 < busy.size()) {
        pieces_.push_back({b, busy[i + 1].first, x, x + kBreakWidth, true});
        x += kBreakWidth;
      }
    }
    // Pieces follow one another in time and on the page, each of some width.
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      REHEARSE_ASSERT_LE(pieces_[i].t0, pieces_[i].t1);
      REHEARSE_ASSERT(pieces_[i].x0 < pieces_[i].x1);
      if (i > 0) REHEARSE_ASSERT_LE(pieces_[i - 1].t1, pieces_[i].t0);
    }
  }

  std::vector<Piece> pieces_;
};

struct Lanes {
  std::vector<std::string> names;
  std::map<std::string, std::size_t> index;
  double height = 22;

  double y(std::size_t lane) const {
    REHEARSE_ASSERT_LE(lane, names.size());  // a lane, or bottom()'s foot of the last
    return kAxisHeight + height * double(lane);
  }
  double bottom() const { return y(names.size()); }

  void add(const std::string& name) {
    if (index.emplace(name, names.size()).second) names.push_back(name);
    REHEARSE_ASSERT_EQ(index.size(), names.size());  // each name once, at its index
  }
};

struct Drawn {
  std::size_t lane = 0;
  std::string cls;
  double x = 0;
  double x2 = 0;                       // retries: where the arrow ends
  const TimelineEntry* rep = nullptr;  // the entry the mark looks like
  std::vector<const TimelineEntry*> entries;
};

std::string axis_svg(const TimeAxis& axis, double height);
Lanes make_lanes(const Scenario& scenario, const std::vector<TimelineEntry>& entries);
std::vector<Drawn> merge_marks(const std::vector<TimelineEntry>& entries, const Lanes& lanes,
                               const TimeAxis& axis, double& bucket_px, bool& by_kind);
std::string marks_svg(const std::vector<Drawn>& drawn, const Lanes& lanes, bool brief);
std::string spans_svg(const std::vector<TimelineEntry>& entries,
                      const std::vector<TraceEvent>& events, const TimeAxis& axis,
                      const Lanes& lanes, TimeMs end);
std::string violations_svg(const ScenarioRunResult& run, const Verdict& verdict,
                           const TimeAxis& axis, const Lanes& lanes);
std::string lanes_svg(const Lanes& lanes);
// The fleet load's section (docs/report.md): a summary line and an SVG load
// curve per service worth showing (load_worth_showing); empty when none is.
std::string load_section_html(const std::vector<ServiceLoad>& loads);

}  // namespace rehearse::sim::html_report_detail
