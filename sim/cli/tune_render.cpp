#include "sim/cli/tune_render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace rehearse::cli {

using nlohmann::json;
using sim::TuneResult;
using sim::TuneRow;

namespace {

// Whole seconds in the table (the JSON and CSV keep milliseconds).
std::string optional_duration(const std::optional<DurationMs>& d) {
  return d ? format_duration(*d / kSecondMs * kSecondMs) : std::string("-");
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100.0); }

std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string row_summary(const TuneRow& row) {
  return fmt::format(
      "{}: recovery {:.3f} [{:.3f}, {:.3f}], {:.2f} extra calls, p95 time to "
      "recovery {}",
      row.policy.label, row.recovery, row.recovery_low, row.recovery_high, row.extra_calls,
      optional_duration(row.ttr_p95_ms));
}

}  // namespace

std::string tune_verdict(const TuneResult& result) {
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
  json rows = json::array();
  for (const auto& row : r.rows) {
    const Backoff& b = row.policy.backoff;
    rows.push_back({{"label", row.policy.label},
                    {"attempts", row.policy.attempts},
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
  return fmt::format("#{:02x}{:02x}{:02x}", red, green, blue);
}

// One panel per (kind, cap, jitter) of the grid: cells by (attempts, delay).
using PanelKey = std::tuple<int, DurationMs, double>;
using PanelCells = std::map<std::pair<int, DurationMs>, const TuneRow*>;

struct HeatLayout {
  static constexpr int kCell = 56, kLeft = 80, kTop = 70, kGap = 40;
  std::vector<int> attempts;       // rows, ascending
  std::vector<DurationMs> delays;  // columns, ascending
  std::vector<PanelKey> order;     // panels in grid order
  std::map<PanelKey, PanelCells> panels;
  int panel_width() const { return kLeft + kCell * static_cast<int>(delays.size()); }
  int width() const { return static_cast<int>(order.size()) * (panel_width() + kGap) + kGap; }
  int height() const { return kTop + kCell * static_cast<int>(attempts.size()) + 90; }
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
  return l;
}

std::string svg_cell(const TuneRow& row, int x, int y) {
  constexpr int kCell = HeatLayout::kCell;
  const bool current = row.policy.current;
  return fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"{}\" "
      "stroke-width=\"{}\"><title>{}</title></rect>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n",
      x, y, kCell, kCell, heat_colour(row.recovery), current ? "black" : "white", current ? 4 : 1,
      xml_escape(row_summary(row)), x + kCell / 2, y + kCell / 2 + 4, percent(row.recovery),
      row.pareto ? "*" : "");
}

std::string svg_panel(const HeatLayout& l, const PanelKey& key, int x0) {
  constexpr int kCell = HeatLayout::kCell, kLeft = HeatLayout::kLeft, kTop = HeatLayout::kTop;
  const auto& [kind, cap, jitter] = key;
  std::string title = to_string(static_cast<BackoffKind>(kind));
  if (cap > 0) title += " cap " + format_duration(cap);
  if (jitter > 0) title += fmt::format(" jitter {}", jitter);
  std::string svg = fmt::format(
      "<g class=\"panel\">\n<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\">base delay</text>\n"
      "<text x=\"{}\" y=\"{}\" transform=\"rotate(-90 {} {})\">attempts</text>\n",
      x0 + kLeft, kTop - 28, xml_escape(title), x0 + kLeft, kTop - 12, x0 + 14, kTop + 40, x0 + 14,
      kTop + 40);
  for (std::size_t c = 0; c < l.delays.size(); ++c) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       x0 + kLeft + static_cast<int>(c) * kCell + kCell / 2,
                       kTop + kCell * static_cast<int>(l.attempts.size()) + 16,
                       xml_escape(format_duration(l.delays[c])));
  }
  const PanelCells& cells = l.panels.at(key);
  for (std::size_t a = 0; a < l.attempts.size(); ++a) {
    const int y = kTop + static_cast<int>(a) * kCell;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", x0 + kLeft - 8,
                       y + kCell / 2 + 4, l.attempts[a]);
    for (std::size_t c = 0; c < l.delays.size(); ++c) {
      const auto it = cells.find({l.attempts[a], l.delays[c]});
      if (it != cells.end())
        svg += svg_cell(*it->second, x0 + kLeft + static_cast<int>(c) * kCell, y);
    }
  }
  return svg + "</g>\n";
}

}  // namespace

std::string tune_svg(const TuneResult& r) {
  const HeatLayout l = heat_layout(r);
  constexpr int kGap = HeatLayout::kGap;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"14\">{}</text>\n",
      l.width(), l.height(), l.width(), l.height(),
      xml_escape(fmt::format("rehearse tune: recovery probability of {} in {}", r.job, r.scenario)),
      kGap,
      xml_escape(fmt::format("recovery probability, job {} ({}), outages {}, {} runs per policy",
                             r.job, r.schedule, r.outages, r.runs_per_policy)));
  int x0 = kGap;
  for (const PanelKey& key : l.order) {
    svg += svg_panel(l, key, x0);
    x0 += l.panel_width() + kGap;
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kGap, l.height() - 40,
                     xml_escape("* on the Pareto front (recovery against extra calls and p95 time "
                                "to recovery); black border: the job's own policy"));
  svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kGap, l.height() - 20,
                     xml_escape(tune_verdict(r)));
  return svg + "</svg>\n";
}

}  // namespace rehearse::cli
