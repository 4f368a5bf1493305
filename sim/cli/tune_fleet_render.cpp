#include "sim/cli/tune_fleet_render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"
#include "sim/check/junit.hpp"
#include "sim/cli/svg_document.hpp"
#include "sim/cli/text_wrap.hpp"

namespace rehearse::cli {

using nlohmann::json;
using sim::FleetPolicy;
using sim::FleetRow;
using sim::FleetTuneResult;
using sim::JitterShape;

namespace {

// ------------------------------------------------ text shared by the outputs

// The documents are compared byte for byte: doubles go out rounded, so the
// last bits of a mean never show. Adding 0.0 turns a -0.0 into 0.0.
double rounded(double value, double scale) { return std::round(value * scale) / scale + 0.0; }
double rounded4(double value) { return rounded(value, 1e4); }

// Thousandths of a request per minute as a decimal without trailing zeros:
// "12", "12.5".
std::string per_minute_text(std::int64_t milli) {
  REHEARSE_ASSERT_GE(milli, 0);  // a rate
  std::string text = std::to_string(milli / 1000);
  if (milli % 1000 != 0) {
    std::string fraction = fmt::format("{:03d}", milli % 1000);
    while (fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  return text;
}

std::string service_text(const FleetTuneResult& r) {
  if (!r.capacity_per_minute_milli) return r.service;
  return fmt::format("{} (capacity {}/min)", r.service,
                     per_minute_text(*r.capacity_per_minute_milli));
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100.0); }

// No slot failed during the outage: there was nothing to recover, and the
// share says nothing.
std::string recovery_text(const FleetRow& row) {
  REHEARSE_ASSERT(0 <= row.recovered_slots && row.recovered_slots <= row.hit_slots);
  if (row.hit_slots == 0) return "-";
  return fmt::format("{} [{:.0f}-{:.0f}%]", percent(row.recovery), row.recovery_low * 100.0,
                     row.recovery_high * 100.0);
}

std::string amplification_text(const FleetRow& row) {
  return row.amplification ? fmt::format("{:.2f}", *row.amplification) : std::string("-");
}

// A drain time; absent: the runs at that rank never drained.
std::string drain_text(const std::optional<DurationMs>& d) {
  if (d) REHEARSE_ASSERT_GE(*d, 0);  // measured from the outage's end onwards
  return d ? format_duration(*d) : std::string("never");
}

std::string attempts_text(int attempts) {
  return attempts == kRetriesUnlimited ? std::string("unlimited") : std::to_string(attempts);
}

// A fleet block can generate thousands of jobs: the table names a few.
std::string jobs_text(const std::vector<std::string>& jobs) {
  constexpr std::size_t kNamed = 5;
  std::string text;
  for (std::size_t i = 0; i < jobs.size() && i < kNamed; ++i) {
    text += (i == 0 ? "" : ", ") + jobs[i];
  }
  if (jobs.size() > kNamed) text += fmt::format(" and {} more", jobs.size() - kNamed);
  return text;
}

// RFC 4180: always quoted, an inner quote doubled (labels hold commas).
std::string csv_quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// ------------------------------------------------------------------ table

std::vector<std::string> table_cells(const FleetRow& row) {
  return {row.policy.label,
          recovery_text(row),
          fmt::format("{:.1f}", row.calls),
          amplification_text(row),
          fmt::format("{:.1f} ({})", row.peak_after, row.peak_after_max),
          drain_text(row.drain_p50_ms),
          drain_text(row.drain_p95_ms),
          percent(row.metastable),
          fmt::format("{:.1f}", row.goodput_per_minute),
          row.pareto ? "*" : ""};
}

// The first and last columns (the label, the front's mark) read from the
// left, the numbers between them from the right; no trailing spaces.
std::string aligned(const std::vector<std::vector<std::string>>& lines) {
  REHEARSE_ASSERT(!lines.empty());  // the header at least
  const std::size_t columns = lines.front().size();
  std::vector<std::size_t> widths(columns, 0);
  for (const auto& cells : lines) {
    REHEARSE_ASSERT_EQ(cells.size(), columns);
    for (std::size_t i = 0; i < columns; ++i) widths[i] = std::max(widths[i], cells[i].size());
  }
  std::string out;
  for (const auto& cells : lines) {
    std::string line;
    for (std::size_t i = 0; i < columns; ++i) {
      if (i > 0) line += "  ";
      const bool left = i == 0 || i + 1 == columns;
      line += left ? fmt::format("{:<{}}", cells[i], widths[i])
                   : fmt::format("{:>{}}", cells[i], widths[i]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string tune_fleet_table(const FleetTuneResult& r) {
  std::string out = fmt::format(
      "tune --fleet: scenario {}, service {}, fault {}\n"
      "{} job{} run{} each policy: {}\n"
      "outages {} starting at {}, {} runs per policy from seed {}, {} policies\n\n",
      r.scenario, service_text(r), r.fault, r.jobs.size(), r.jobs.size() == 1 ? "" : "s",
      r.jobs.size() == 1 ? "s" : "", jobs_text(r.jobs), r.outages, format_instant(r.outage_at_ms),
      r.runs_per_policy, r.seed, r.rows.size());
  std::vector<std::vector<std::string>> lines{{"policy", "recovery", "calls", "ampl.", "peak after",
                                               "drain p50", "drain p95", "metastable",
                                               "goodput/min", "front"}};
  for (const FleetRow& row : r.rows) lines.push_back(table_cells(row));
  out += aligned(lines);
  out +=
      "\n* on the Pareto front: no other policy is at least as good on recovery, ampl., peak "
      "after,\n  drain p95 and metastable, and better on one. ampl. = calls / useful replies\n";
  return out;
}

namespace {

// ------------------------------------------------------------------- JSON

json policy_json(const FleetPolicy& p) {
  const Backoff& b = p.backoff;
  json backoff{{"type", to_string(b.kind)}, {"delay_ms", b.delay_ms}};
  if (b.max_delay_ms > 0) backoff["max_delay_ms"] = b.max_delay_ms;
  REHEARSE_ASSERT(0 <= p.budget_percent && p.budget_percent <= 100);  // parse_fleet_grid's range
  return {{"label", p.label},
          {"attempts", p.attempts == kRetriesUnlimited ? json("unlimited") : json(p.attempts)},
          {"backoff", backoff},
          {"jitter", to_string(p.jitter)},
          {"retry_budget_percent", p.budget_percent == 0 ? json(nullptr) : json(p.budget_percent)},
          {"retry_policy", p.written}};
}

json row_json(const FleetRow& row) {
  REHEARSE_ASSERT(0 <= row.drained_runs && row.drained_runs <= row.runs);
  json calls_per_minute = json::array();
  for (const double calls : row.calls_per_minute) calls_per_minute.push_back(rounded(calls, 1e3));
  const auto ms = [](const std::optional<DurationMs>& d) { return d ? json(*d) : json(nullptr); };
  json out = policy_json(row.policy);
  out.update({{"runs", row.runs},
              {"hit_slots", row.hit_slots},
              {"recovered_slots", row.recovered_slots},
              {"recovery", rounded4(row.recovery)},
              {"recovery_low", rounded4(row.recovery_low)},
              {"recovery_high", rounded4(row.recovery_high)},
              {"calls", rounded4(row.calls)},
              {"work_amplification",
               row.amplification ? json(rounded4(*row.amplification)) : json(nullptr)},
              {"peak_after_per_minute", rounded4(row.peak_after)},
              {"peak_after_max", row.peak_after_max},
              {"drain_p50_ms", ms(row.drain_p50_ms)},
              {"drain_p95_ms", ms(row.drain_p95_ms)},
              {"drained_runs", row.drained_runs},
              {"metastable_share", rounded4(row.metastable)},
              {"goodput_per_minute", rounded4(row.goodput_per_minute)},
              {"calls_per_minute", calls_per_minute},
              {"pareto", row.pareto}});
  return out;
}

}  // namespace

json tune_fleet_json(const FleetTuneResult& r) {
  json policies = json::array();
  json front = json::array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    policies.push_back(row_json(r.rows[i]));
    if (r.rows[i].pareto) front.push_back(i);
  }
  // Dominance is a strict partial order: a finite set has an undominated row.
  REHEARSE_ASSERT(r.rows.empty() || !front.empty());
  const auto& milli = r.capacity_per_minute_milli;
  return {{"scenario", r.scenario},
          {"service", r.service},
          {"fault", r.fault},
          {"outages", r.outages},
          {"capacity_per_minute",
           milli ? json(static_cast<double>(*milli) / 1000.0) : json(nullptr)},
          {"jobs", r.jobs},
          {"runs_per_policy", r.runs_per_policy},
          {"seed", r.seed},
          {"start", format_instant(r.start_ms)},
          {"outage_at", format_instant(r.outage_at_ms)},
          {"policies", policies},
          {"front", front}};
}

std::string tune_fleet_csv(const FleetTuneResult& r) {
  // The JSON's scalars; an empty cell where the JSON has null or no key.
  std::string out =
      "policy,attempts,backoff,delay_ms,max_delay_ms,jitter,retry_budget_percent,runs,hit_slots,"
      "recovered_slots,recovery,recovery_low,recovery_high,calls,work_amplification,"
      "peak_after_per_minute,peak_after_max,drain_p50_ms,drain_p95_ms,drained_runs,"
      "metastable_share,goodput_per_minute,pareto\n";
  const auto ms = [](const std::optional<DurationMs>& d) {
    return d ? std::to_string(*d) : std::string();
  };
  for (const FleetRow& row : r.rows) {
    const FleetPolicy& p = row.policy;
    const Backoff& b = p.backoff;
    out += fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{},{:.4f},{},{},{},{},{:.4f},"
        "{:.4f},{}\n",
        csv_quoted(p.label), attempts_text(p.attempts), to_string(b.kind), b.delay_ms,
        b.max_delay_ms > 0 ? std::to_string(b.max_delay_ms) : std::string(), to_string(p.jitter),
        p.budget_percent > 0 ? std::to_string(p.budget_percent) : std::string(), row.runs,
        row.hit_slots, row.recovered_slots, rounded4(row.recovery), rounded4(row.recovery_low),
        rounded4(row.recovery_high), rounded4(row.calls),
        row.amplification ? fmt::format("{:.4f}", rounded4(*row.amplification)) : std::string(),
        rounded4(row.peak_after), row.peak_after_max, ms(row.drain_p50_ms), ms(row.drain_p95_ms),
        row.drained_runs, rounded4(row.metastable), rounded4(row.goodput_per_minute),
        row.pareto ? 1 : 0);
  }
  return out;
}

namespace {

// -------------------------------------------------------------------- SVG

// Columns in Brooker's order, from no jitter to the most decorrelated.
constexpr std::array<JitterShape, 4> kShapes{JitterShape::none, JitterShape::equal,
                                             JitterShape::full, JitterShape::decorrelated};

// A panel row: a policy but for its jitter shape. A grid listing a
// combination twice gets a second row (the occurrence), so every row of the
// result has a panel of its own.
using PolicyKey = std::tuple<int, DurationMs, BackoffKind, DurationMs, int>;
using PanelRowKey = std::pair<PolicyKey, int>;

struct FleetLayout {
  static constexpr int kMargin = 40, kGap = 16, kPanelH = 170, kLine = 16;
  static constexpr double kCharPx = 6.6;  // a generous width of one 11-12 px character
  int panel_w = 260;
  std::vector<JitterShape> columns;
  std::size_t panel_rows = 0;
  std::map<std::pair<std::size_t, std::size_t>, const FleetRow*> cells;  // (panel row, column)
  std::size_t minutes = 0;                                               // the longest curve
  double y_max = 1.0;                                                    // shared by every panel
  std::optional<double> capacity;                                        // calls per minute
  double outage_minute = 0.0;                                            // from the start
  std::vector<std::string> heading;                                      // lines above the panels
  std::vector<std::string> notes;                                        // the key below them
  int top() const { return 20 + kLine * static_cast<int>(heading.size()) + 22; }
  int width() const {
    const int cols = static_cast<int>(columns.size());
    return std::max(620, 2 * kMargin + cols * (panel_w + kGap) - kGap);
  }
  int panels_bottom() const { return top() + static_cast<int>(panel_rows) * (kPanelH + kGap); }
  int height() const { return panels_bottom() + kLine * static_cast<int>(notes.size()) + 10; }
  int panel_x(std::size_t column) const {
    return kMargin + static_cast<int>(column) * (panel_w + kGap);
  }
  int panel_y(std::size_t row) const { return top() + static_cast<int>(row) * (kPanelH + kGap); }
  std::size_t line_chars(double char_px) const {
    return static_cast<std::size_t>((width() - 2 * kMargin) / char_px);
  }
};

// The least of 1, 2, 5 x 10^k (k >= 0) at or above `value`: the y axis's top.
double nice_ceiling(double value) {
  REHEARSE_ASSERT(std::isfinite(value));  // else the loop never ends
  for (double step = 1.0;; step *= 10.0) {
    for (const double m : {1.0, 2.0, 5.0}) {
      if (m * step >= value) return m * step;
    }
  }
}

std::string panel_title(const FleetRow& row) { return (row.pareto ? "* " : "") + row.policy.label; }

std::string panel_stats(const FleetRow& row) {
  return fmt::format("recovery {}, ampl. {}, peak {:.1f}, metastable {}",
                     row.hit_slots == 0 ? std::string("-") : percent(row.recovery),
                     amplification_text(row), row.peak_after, percent(row.metastable));
}

// Every number of the row, for the panel's hover text.
std::string panel_hover(const FleetRow& row) {
  return fmt::format(
      "{}: recovery {} ({} of {} hit slots recovered), {:.1f} calls per run, ampl. {}, peak after "
      "the outage {:.1f}/min on average (max {}), drain p50 {}, p95 {} ({} of {} runs drained), "
      "metastable in {} of the runs, goodput {:.1f}/min, {}",
      row.policy.label, recovery_text(row), row.recovered_slots, row.hit_slots, row.calls,
      amplification_text(row), row.peak_after, row.peak_after_max, drain_text(row.drain_p50_ms),
      drain_text(row.drain_p95_ms), row.drained_runs, row.runs, percent(row.metastable),
      row.goodput_per_minute, row.pareto ? "on the Pareto front" : "off the Pareto front");
}

// Wide enough for the longest title (11 px bold) and stats line (10 px).
int panel_width(const FleetRow& row) {
  const double title = static_cast<double>(panel_title(row).size()) * FleetLayout::kCharPx;
  const double stats = static_cast<double>(panel_stats(row).size()) * 6.0;
  return static_cast<int>(std::max(title, stats)) + 16;
}

FleetLayout fleet_layout(const FleetTuneResult& r) {
  REHEARSE_ASSERT(!r.rows.empty());  // a grid holds at least one policy
  FleetLayout l;
  for (const JitterShape shape : kShapes) {
    if (std::any_of(r.rows.begin(), r.rows.end(),
                    [&](const FleetRow& row) { return row.policy.jitter == shape; })) {
      l.columns.push_back(shape);
    }
  }
  std::map<std::pair<PolicyKey, JitterShape>, int> seen;
  std::map<PanelRowKey, std::size_t> panel_row;  // in first-appearance order
  double most = 0.0;
  for (const FleetRow& row : r.rows) {
    const FleetPolicy& p = row.policy;
    const PolicyKey key{p.attempts, p.backoff.delay_ms, p.backoff.kind, p.backoff.max_delay_ms,
                        p.budget_percent};
    const int occurrence = seen[{key, p.jitter}]++;
    const std::size_t next = panel_row.size();
    const std::size_t at = panel_row.try_emplace({key, occurrence}, next).first->second;
    const auto column = std::find(l.columns.begin(), l.columns.end(), p.jitter);
    REHEARSE_ASSERT(column != l.columns.end());  // every row's shape has its column
    l.cells[{at, static_cast<std::size_t>(column - l.columns.begin())}] = &row;
    l.minutes = std::max(l.minutes, row.calls_per_minute.size());
    for (const double calls : row.calls_per_minute) most = std::max(most, calls);
    l.panel_w = std::max(l.panel_w, panel_width(row));
  }
  l.panel_rows = panel_row.size();
  REHEARSE_ASSERT_EQ(l.cells.size(), r.rows.size());  // each row has a panel of its own
  if (r.capacity_per_minute_milli) {
    l.capacity = static_cast<double>(*r.capacity_per_minute_milli) / 1000.0;
    most = std::max(most, *l.capacity);
  }
  l.y_max = nice_ceiling(most);
  l.outage_minute = static_cast<double>(r.outage_at_ms - r.start_ms) / kMinuteMs;
  return l;
}

// One panel's plot area and its scales (shared by all panels but the offset).
struct Plot {
  double left, right, top, bottom;
  const FleetLayout* layout;
  double x(double minute) const {
    const auto minutes = static_cast<double>(std::max<std::size_t>(layout->minutes, 1));
    return left + (right - left) * minute / minutes;
  }
  double y(double calls) const { return bottom - (bottom - top) * calls / layout->y_max; }
};

Plot plot_at(const FleetLayout& l, int x0, int y0) {
  return Plot{x0 + 40.0, static_cast<double>(x0 + l.panel_w - 12), y0 + 42.0,
              static_cast<double>(y0 + FleetLayout::kPanelH - 22), &l};
}

// Axes' end labels, the capacity (dashed), the outage's start (a grey
// line: its length varies by run) and the curve; minute k's mean is drawn
// at the middle of the minute.
std::string svg_plot(const FleetLayout& l, const FleetRow& row, const Plot& p) {
  std::string svg = fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#f6f6f6\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"10\">0</text>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"10\">{:.0f}</text>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\">0</text>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" font-size=\"10\">{} min</text>\n",
      p.left, p.top, p.right - p.left, p.bottom - p.top, p.left - 4, p.bottom, p.left - 4,
      p.top + 8, l.y_max, p.left, p.bottom + 12, p.right, p.bottom + 12, l.minutes);
  if (l.capacity) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#d62728\" "
        "stroke-dasharray=\"4 3\"/>\n",
        p.left, p.y(*l.capacity), p.right, p.y(*l.capacity));
  }
  const auto minutes = static_cast<double>(l.minutes);
  if (l.minutes > 0 && l.outage_minute >= 0.0 && l.outage_minute <= minutes) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888888\"/>\n",
        p.x(l.outage_minute), p.top, p.x(l.outage_minute), p.bottom);
  }
  std::string points;
  for (std::size_t i = 0; i < row.calls_per_minute.size(); ++i) {
    const double calls = row.calls_per_minute[i];
    REHEARSE_ASSERT(calls >= 0.0 && calls <= l.y_max);  // inside the shared scale
    points += fmt::format("{}{:.1f},{:.1f}", i == 0 ? "" : " ", p.x(static_cast<double>(i) + 0.5),
                          p.y(calls));
  }
  if (!points.empty()) {
    svg += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n",
        points);
  }
  return svg;
}

std::string svg_panel(const FleetLayout& l, const FleetRow& row, int x0, int y0) {
  const bool front = row.pareto;
  std::string svg = fmt::format(
      "<g class=\"panel\">\n<title>{}</title>\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"white\" stroke=\"{}\" "
      "stroke-width=\"{}\"/>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"11\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" font-size=\"10\">{}</text>\n",
      sim::xml_escape(panel_hover(row)), x0, y0, l.panel_w, FleetLayout::kPanelH,
      front ? "black" : "#aaaaaa", front ? "2.5" : "1", x0 + 8, y0 + 16,
      sim::xml_escape(panel_title(row)), x0 + 8, y0 + 30, sim::xml_escape(panel_stats(row)));
  svg += svg_plot(l, row, plot_at(l, x0, y0));
  return svg + "</g>\n";
}

std::string heading_text(const FleetTuneResult& r) {
  return fmt::format(
      "rehearse tune --fleet: mean calls per minute to {} under each retry policy; scenario {}, "
      "fault {}, {} job{} running each policy, outages {} from {}, {} runs per policy from seed {}",
      service_text(r), r.scenario, r.fault, r.jobs.size(), r.jobs.size() == 1 ? "" : "s", r.outages,
      format_instant(r.outage_at_ms), r.runs_per_policy, r.seed);
}

std::string key_text(const FleetTuneResult& r, const FleetLayout& l) {
  return fmt::format(
      "x: minutes from the scenario's start ({}); y: mean calls per minute over the runs, one "
      "scale for every panel (0 to {:.0f}).{} Grey line: where every run's outage starts (its "
      "length varies by run). * and a thick border: on the Pareto front (no other policy is at "
      "least as good on recovery, ampl., peak after the outage, p95 drain and metastable share, "
      "and better on one). ampl. = calls / useful replies; peak: the mean of each run's busiest "
      "minute after the outage.",
      format_instant(r.start_ms), l.y_max,
      l.capacity ? " Dashed red line: the service's capacity." : "");
}

}  // namespace

std::string tune_fleet_svg(const FleetTuneResult& r) {
  constexpr int kMargin = FleetLayout::kMargin, kLine = FleetLayout::kLine;
  FleetLayout l = fleet_layout(r);
  l.heading = wrap_words(heading_text(r), l.line_chars(7.2));  // 13 px
  l.notes = wrap_words(key_text(r, l), l.line_chars(FleetLayout::kCharPx));
  std::string svg = svg_document_start(l.width(), l.height(),
                                       fmt::format("rehearse tune --fleet: load on {} in {}",
                                                   r.service, r.scenario));
  for (std::size_t i = 0; i < l.heading.size(); ++i) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n", kMargin,
                       20 + kLine * static_cast<int>(i), sim::xml_escape(l.heading[i]));
  }
  for (std::size_t c = 0; c < l.columns.size(); ++c) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{} jitter</text>\n",
                       l.panel_x(c), l.top() - 8, to_string(l.columns[c]));
  }
  for (const auto& [at, row] : l.cells)
    svg += svg_panel(l, *row, l.panel_x(at.second), l.panel_y(at.first));
  int y = l.panels_bottom() + 12;
  for (const std::string& line : l.notes) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kMargin, y, sim::xml_escape(line));
    y += kLine;
  }
  // The panels fit the picture's width, and the key its height.
  REHEARSE_ASSERT_LE(l.panel_x(l.columns.size()) - FleetLayout::kGap, l.width() - kMargin);
  REHEARSE_ASSERT_LE(y - kLine, l.height());
  return svg + "</svg>\n";
}

}  // namespace rehearse::cli
