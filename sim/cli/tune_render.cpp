#include "sim/cli/tune_render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "model/assert.hpp"
#include "sim/check/junit.hpp"
#include "sim/cli/svg_document.hpp"
#include "sim/cli/text_wrap.hpp"

namespace rehearse::cli {

using nlohmann::json;
using sim::TuneResult;
using sim::TuneRow;

namespace {

// Whole seconds in the table (the JSON and CSV keep milliseconds).
std::string optional_duration(const std::optional<DurationMs>& d) {
  if (d) REHEARSE_ASSERT_GE(*d, 0);  // a time to recovery, after the outage began
  return d ? format_duration(*d / kSecondMs * kSecondMs) : std::string("-");
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100.0); }

std::string row_summary(const TuneRow& row) {
  REHEARSE_ASSERT_LE(row.recovered, row.runs);  // a run recovers at most once
  return fmt::format(
      "{}: recovery {:.3f} [{:.3f}, {:.3f}], {:.2f} extra calls, p95 time to "
      "recovery {}",
      row.policy.label, row.recovery, row.recovery_low, row.recovery_high, row.extra_calls,
      optional_duration(row.ttr_p95_ms));
}

}  // namespace

std::string tune_verdict(const TuneResult& result) {
  // run_tune always reports the job's own policy, at `current`.
  REHEARSE_ASSERT_LT(result.current, result.rows.size());
  REHEARSE_ASSERT(result.rows[result.current].policy.current);
  for (const std::size_t i : result.dominating) REHEARSE_ASSERT_LT(i, result.rows.size());
  for (const std::size_t i : result.front_above) REHEARSE_ASSERT_LT(i, result.rows.size());
  const TuneRow& current = result.rows[result.current];
  const std::string text = fmt::format("the job's own policy, {}", row_summary(current));
  // Among front rows, the one recovering most often; ties: fewer calls first.
  const auto best_of = [&](const std::vector<std::size_t>& rows) {
    std::size_t best = rows.front();
    for (const std::size_t i : rows) {
      if (result.rows[i].recovered > result.rows[best].recovered) best = i;
    }
    return best;
  };
  if (current.pareto) {
    if (result.front_above.empty()) {
      return text + "; on the Pareto front, and no policy of the grid recovers more often";
    }
    // The next step up the front: the least recovery above the current.
    std::size_t next = result.front_above.front();
    for (const std::size_t i : result.front_above) {
      if (result.rows[i].recovered < result.rows[next].recovered) next = i;
    }
    return text + fmt::format(
                      "; on the Pareto front; {} front polic{} recover more often at a "
                      "higher cost, the next step up: {}",
                      result.front_above.size(), result.front_above.size() == 1 ? "y" : "ies",
                      row_summary(result.rows[next]));
  }
  // Off the front means some front row dominates it (best_of takes the first).
  REHEARSE_ASSERT(!result.dominating.empty());
  return text + fmt::format("; off the Pareto front: {} front polic{} dominate{} it, e.g. {}",
                            result.dominating.size(), result.dominating.size() == 1 ? "y" : "ies",
                            result.dominating.size() == 1 ? "s" : "",
                            row_summary(result.rows[best_of(result.dominating)]));
}

std::string tune_table(const TuneResult& r) {
  std::string out = fmt::format(
      "tune: scenario {}, job {} ({}), outage of {} ({}{}), outages {}, {} runs per policy from "
      "seed {}, {} policies\n",
      r.scenario, r.job, r.schedule, r.provider, r.fault, r.fault == "http_errors" ? " 503" : "",
      r.outages, r.runs_per_policy, r.seed, r.rows.size());
  if (r.services.size() > 1) {
    out += fmt::format("the job calls {}; --service chooses the one to break\n",
                       fmt::join(r.services, ", "));
  }
  out += "\n";
  std::size_t width = 6;
  for (const auto& row : r.rows) width = std::max(width, row.policy.label.size());
  out += fmt::format("{:<{}}  {:>8}  {:<14}  {:>8}  {:>8}  {:>11}  {:>11}  {:>9}  {}\n", "policy",
                     width, "recovery", "95% CI", "ttr p50", "ttr p95", "extra calls",
                     "queue delay", "next slot", "front");
  for (const auto& row : r.rows) {
    out += fmt::format(
        "{:<{}}  {:>8.3f}  [{:.3f}, {:.3f}]  {:>8}  {:>8}  {:>11.2f}  {:>11}  {:>9}  {}{}\n",
        row.policy.label, width, row.recovery, row.recovery_low, row.recovery_high,
        optional_duration(row.ttr_p50_ms), optional_duration(row.ttr_p95_ms), row.extra_calls,
        format_duration(static_cast<DurationMs>(row.queue_delay_ms)),
        percent(row.next_slot_overrun), row.pareto ? "*" : " ",
        row.policy.current ? "  <- current" : "");
  }
  out +=
      "\n* on the Pareto front: no other policy recovers at least as often with no more extra "
      "calls and no later p95 time to recovery\n";
  out += tune_verdict(r) + "\n";
  return out;
}

json tune_json(const TuneResult& r) {
  REHEARSE_ASSERT_LT(r.current, r.rows.size());  // rows[current] is read below
  json rows = json::array();
  for (const auto& row : r.rows) {
    const Backoff& b = row.policy.backoff;
    rows.push_back(
        {{"label", row.policy.label},
         {"attempts",
          row.policy.attempts == kRetriesUnlimited ? json("unlimited") : json(row.policy.attempts)},
         {"backoff",
          {{"type", to_string(b.kind)},
           {"delay_ms", b.delay_ms},
           {"max_delay_ms", b.max_delay_ms},
           {"jitter", b.jitter}}},
         {"retry_policy", row.policy.written},
         {"in_grid", row.policy.in_grid},
         {"current", row.policy.current},
         {"runs", row.runs},
         {"recovered", row.recovered},
         {"recovery", row.recovery},
         {"recovery_low", row.recovery_low},
         {"recovery_high", row.recovery_high},
         {"ttr_p50_ms", row.ttr_p50_ms ? json(*row.ttr_p50_ms) : json(nullptr)},
         {"ttr_p95_ms", row.ttr_p95_ms ? json(*row.ttr_p95_ms) : json(nullptr)},
         {"extra_calls", row.extra_calls},
         {"queue_delay_ms", row.queue_delay_ms},
         {"queue_delay_max_ms", row.queue_delay_max_ms},
         {"next_slot_overrun", row.next_slot_overrun},
         {"pareto", row.pareto}});
  }
  json dominated_by = json::array();
  for (const std::size_t i : r.dominating) dominated_by.push_back(r.rows[i].policy.label);
  json front_above = json::array();
  for (const std::size_t i : r.front_above) front_above.push_back(r.rows[i].policy.label);
  return {{"scenario", r.scenario},
          {"job", r.job},
          {"schedule", r.schedule},
          {"provider", r.provider},
          {"services", r.services},
          {"fault", r.fault},
          {"outages", r.outages},
          {"runs_per_policy", r.runs_per_policy},
          {"seed", r.seed},
          {"policies", rows},
          {"current",
           {{"index", r.current},
            {"label", r.rows[r.current].policy.label},
            {"pareto", r.rows[r.current].pareto},
            {"dominated_by", dominated_by},
            {"front_recovering_more", front_above},
            {"verdict", tune_verdict(r)}}}};
}

std::string tune_csv(const TuneResult& r) {
  std::string out =
      "policy,attempts,backoff,delay_ms,max_delay_ms,jitter,runs,recovered,recovery,recovery_low,"
      "recovery_high,ttr_p50_ms,ttr_p95_ms,extra_calls,queue_delay_ms,queue_delay_max_ms,"
      "next_slot_overrun,pareto,current\n";
  const auto opt = [](const std::optional<DurationMs>& d) {
    return d ? std::to_string(*d) : std::string();
  };
  for (const auto& row : r.rows) {
    const Backoff& b = row.policy.backoff;
    // The label is quoted, not escaped: tune builds it without a quote.
    REHEARSE_ASSERT_EQ(row.policy.label.find('"'), std::string::npos);
    out += fmt::format(
        "\"{}\",{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{},{},{:.6f},{:.3f},{},{:.6f},{},{}\n",
        row.policy.label, row.policy.attempts, to_string(b.kind), b.delay_ms, b.max_delay_ms,
        b.jitter, row.runs, row.recovered, row.recovery, row.recovery_low, row.recovery_high,
        opt(row.ttr_p50_ms), opt(row.ttr_p95_ms), row.extra_calls, row.queue_delay_ms,
        row.queue_delay_max_ms, row.next_slot_overrun, row.pareto ? 1 : 0,
        row.policy.current ? 1 : 0);
  }
  return out;
}

namespace {

// Red (0) through yellow (0.5) to green (1).
std::string heat_colour(double p) {
  const double t = std::clamp(p, 0.0, 1.0);
  const int red = t < 0.5 ? 215 : static_cast<int>(215 - (t - 0.5) * 2 * (215 - 26));
  const int green = t < 0.5 ? static_cast<int>(48 + t * 2 * (190 - 48))
                            : static_cast<int>(190 - (t - 0.5) * 2 * (190 - 150));
  const int blue = 39;
  // Each channel stays in a byte: two hex digits.
  REHEARSE_ASSERT(red >= 0 && red <= 255);
  REHEARSE_ASSERT(green >= 0 && green <= 255);
  return fmt::format("#{:02x}{:02x}{:02x}", red, green, blue);
}

// One panel per (kind, cap, jitter) of the grid: cells by (attempts, delay).
using PanelKey = std::tuple<int, DurationMs, double>;
using PanelCells = std::map<std::pair<int, DurationMs>, const TuneRow*>;

struct HeatLayout {
  static constexpr int kCellW = 72, kCellH = 56, kLeft = 44, kTop = 70, kGap = 40;
  static constexpr int kLine = 16;        // one line of 12 px text below the panels
  static constexpr double kCharPx = 6.6;  // a generous width of one 12 px character
  std::vector<int> attempts;              // rows, ascending
  std::vector<DurationMs> delays;         // columns, ascending
  std::vector<PanelKey> order;            // panels in grid order
  std::map<PanelKey, PanelCells> panels;
  std::vector<std::string> notes;  // the lines under the scale: key, verdict (wrapped)
  int panel_width() const { return kLeft + kCellW * static_cast<int>(delays.size()); }
  int width() const {
    return std::max(620, static_cast<int>(order.size()) * (panel_width() + kGap) + kGap);
  }
  int cells_bottom() const { return kTop + kCellH * static_cast<int>(attempts.size()); }
  int scale_top() const { return cells_bottom() + 52; }
  int height() const { return scale_top() + 40 + kLine * static_cast<int>(notes.size()) + 10; }
  // How many characters a line under the panels may hold.
  std::size_t line_chars() const {
    return static_cast<std::size_t>((width() - 2 * kGap) / kCharPx);
  }
};

template <typename T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

HeatLayout heat_layout(const TuneResult& r) {
  HeatLayout l;
  for (const auto& row : r.rows) {
    if (!row.policy.in_grid) continue;
    const Backoff& b = row.policy.backoff;
    l.attempts.push_back(row.policy.attempts);
    l.delays.push_back(b.delay_ms);
    const PanelKey key{static_cast<int>(b.kind), b.max_delay_ms, b.jitter};
    if (l.panels.count(key) == 0) l.order.push_back(key);
    l.panels[key][{row.policy.attempts, b.delay_ms}] = &row;
  }
  sort_unique(l.attempts);
  sort_unique(l.delays);
  REHEARSE_ASSERT_EQ(l.order.size(), l.panels.size());  // each panel listed once
  return l;
}

// A cell: the recovery probability (and * on the Pareto front), its 95%
// interval, and the extra calls the policy costs per slot.
std::string svg_cell(const TuneRow& row, int x, int y) {
  constexpr int kW = HeatLayout::kCellW, kH = HeatLayout::kCellH;
  const bool current = row.policy.current;
  return fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" "
      "stroke-width=\"{}\"><title>{}</title></rect>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-weight=\"bold\">{}{}</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{:.0f}-{:.0f}%</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">+{:.1f} calls</text>\n",
      x, y, kW, kH, heat_colour(row.recovery), current ? "black" : "white", current ? 4 : 1,
      sim::xml_escape(row_summary(row)), x + kW / 2, y + 19, percent(row.recovery),
      row.pareto ? "*" : "", x + kW / 2, y + 34, row.recovery_low * 100, row.recovery_high * 100,
      x + kW / 2, y + 48, row.extra_calls);
}

std::string svg_panel(const HeatLayout& l, const PanelKey& key, int x0) {
  constexpr int kW = HeatLayout::kCellW, kH = HeatLayout::kCellH;
  constexpr int kLeft = HeatLayout::kLeft, kTop = HeatLayout::kTop;
  const auto& [kind, cap, jitter] = key;
  std::string title = to_string(static_cast<BackoffKind>(kind));
  if (cap > 0) title += " cap " + format_duration(cap);
  if (jitter > 0) title += fmt::format(" jitter {}", jitter);
  std::string svg = fmt::format(
      "<g class=\"panel\">\n<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">base delay \xe2\x86\x92</text>\n"
      "<text x=\"{}\" y=\"{}\">attempts \xe2\x86\x93</text>\n",
      x0 + kLeft, kTop - 28, sim::xml_escape(title), x0 + kLeft + (l.panel_width() - kLeft) / 2,
      l.cells_bottom() + 34, x0, kTop - 8);
  for (std::size_t c = 0; c < l.delays.size(); ++c) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       x0 + kLeft + static_cast<int>(c) * kW + kW / 2, l.cells_bottom() + 16,
                       sim::xml_escape(format_duration(l.delays[c])));
  }
  REHEARSE_ASSERT_EQ(l.panels.count(key), 1u);  // keys come from l.order
  const PanelCells& cells = l.panels.at(key);
  for (std::size_t a = 0; a < l.attempts.size(); ++a) {
    const int y = kTop + static_cast<int>(a) * kH;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", x0 + kLeft - 8,
                       y + kH / 2 + 4, l.attempts[a]);
    for (std::size_t c = 0; c < l.delays.size(); ++c) {
      const auto it = cells.find({l.attempts[a], l.delays[c]});
      if (it != cells.end()) svg += svg_cell(*it->second, x0 + kLeft + static_cast<int>(c) * kW, y);
    }
  }
  return svg + "</g>\n";
}

// The colour scale: recovery 0% (red) through 50% (yellow) to 100% (green).
std::string svg_scale(const HeatLayout& l) {
  constexpr int kGap = HeatLayout::kGap, kWidth = 240;
  const int y = l.scale_top();
  std::string svg =
      "<defs><linearGradient id=\"recovery-scale\">" +
      fmt::format(
          "<stop offset=\"0\" stop-color=\"{}\"/><stop offset=\"0.5\" stop-color=\"{}\"/>"
          "<stop offset=\"1\" stop-color=\"{}\"/>",
          heat_colour(0), heat_colour(0.5), heat_colour(1)) +
      "</linearGradient></defs>\n";
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill=\"url(#recovery-scale)\"/>\n", kGap,
      y, kWidth);
  for (const auto& [share, anchor] : {std::pair{0.0, "start"}, {0.5, "middle"}, {1.0, "end"}}) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"10\">{}</text>\n",
                       kGap + static_cast<int>(share * kWidth), y + 22, anchor, percent(share));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\">recovery probability</text>\n", kGap + kWidth + 12,
                     y + 9);
  return svg;
}

// The heading: at most two lines of 13 px text above the panels, the second
// cut with an ellipsis when even two are not enough (the <title> has it all).
std::string header_svg(const TuneResult& r, const HeatLayout& l) {
  constexpr int kGap = HeatLayout::kGap;
  const std::string text =
      fmt::format("recovery probability, job {} ({}), outages {}, {} runs per policy", r.job,
                  r.schedule, r.outages, r.runs_per_policy);
  const auto width = static_cast<std::size_t>((l.width() - 2 * kGap) / 7.2);
  std::vector<std::string> lines = wrap_words(text, width);
  if (lines.size() > 2) {
    lines.resize(2);
    lines[1] = lines[1].substr(0, width > 3 ? width - 3 : 0) + "...";
  }
  std::string svg;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n", kGap,
                       18 + 14 * static_cast<int>(i), sim::xml_escape(lines[i]));
  }
  return svg;
}

}  // namespace

std::string tune_svg(const TuneResult& r) {
  HeatLayout l = heat_layout(r);
  constexpr int kGap = HeatLayout::kGap;
  for (const std::string& text :
       {std::string("cell: recovery probability (* on the Pareto front of recovery against extra "
                    "calls and p95 time to recovery), its 95% interval, extra calls per slot; "
                    "black border: the job's own policy. Attempts count the first run: 3 "
                    "attempts are 2 retries."),
        tune_verdict(r)}) {
    for (std::string& line : wrap_words(text, l.line_chars())) l.notes.push_back(std::move(line));
  }
  std::string svg = svg_document_start(
      l.width(), l.height(),
      fmt::format("rehearse tune: recovery probability of {} in {}", r.job, r.scenario));
  svg += header_svg(r, l);
  int x0 = kGap;
  for (const PanelKey& key : l.order) {
    svg += svg_panel(l, key, x0);
    x0 += l.panel_width() + kGap;
  }
  // The panels fit the picture's width.
  REHEARSE_ASSERT_LE(x0, l.width());
  svg += svg_scale(l);
  int y = l.scale_top() + 40 + HeatLayout::kLine / 2;
  for (const std::string& line : l.notes) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kGap, y, sim::xml_escape(line));
    y += HeatLayout::kLine;
  }
  REHEARSE_ASSERT_LE(y, l.height());  // and the notes its height
  return svg + "</svg>\n";
}

}  // namespace rehearse::cli
