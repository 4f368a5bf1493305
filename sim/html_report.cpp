#include "sim/html_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "model/cron.hpp"
#include "model/retry_policy.hpp"
#include "model/status_view.hpp"
#include "sim/monitors/registry.hpp"
#include "sim/timeline.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

constexpr double kLabelWidth = 210;  // lane names
constexpr double kPlotWidth = 1000;  // the time axis
constexpr double kBreakWidth = 22;   // a folded idle stretch
constexpr double kAxisHeight = 34;
constexpr std::size_t kMarkBudget = 12000;  // marks drawn at most (about 2 MB of SVG)

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        // Control characters other than tab/newline are not XML.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

// JSON inside <script>: "</" must not end the element.
std::string script_json(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') {
      out += "\\u003c";
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

// ------------------------------------------------------------------ axis

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
  }

  double x(TimeMs t) const {
    if (pieces_.empty()) return 0;
    if (t <= pieces_.front().t0) return pieces_.front().x0;
    for (const Piece& p : pieces_) {
      if (t <= p.t1) {
        const double f = p.t1 == p.t0 ? 1.0 : double(t - p.t0) / double(p.t1 - p.t0);
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
  }

  std::vector<Piece> pieces_;
};

// "Dec 04 17:00": the month by name, so that no reader takes 12-04 for
// the 12th of April.
std::string tick_label(TimeMs t) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::string iso = timeline_time(t);  // "2026-12-04 17:00:00"
  const int month = std::stoi(iso.substr(5, 2));
  return fmt::format("{} {}", kMonths[(month + 11) % 12], iso.substr(8, 8));
}

// Tick labels at nice intervals inside busy pieces.
std::string axis_svg(const TimeAxis& axis, double height) {
  static constexpr DurationMs kSteps[] = {60'000,     300'000,     900'000,    1'800'000,
                                          3'600'000,  10'800'000,  21'600'000, 43'200'000,
                                          86'400'000, 172'800'000, 604'800'000};
  std::string out;
  for (const TimeAxis::Piece& p : axis.pieces()) {
    if (p.folded) {
      out += fmt::format(
          "<g class=\"fold\"><rect x=\"{}\" y=\"0\" width=\"{}\" height=\"{}\"/><text x=\"{}\" "
          "y=\"12\">{}</text><title>{} folded: nothing happened</title></g>",
          num(kLabelWidth + p.x0), num(p.x1 - p.x0), num(height), num(kLabelWidth + p.x0 + 2),
          "\xe2\x89\x88", esc(format_duration(p.t1 - p.t0)));
      continue;
    }
    const double px_per_ms = (p.x1 - p.x0) / double(std::max<DurationMs>(1, p.t1 - p.t0));
    DurationMs step = kSteps[std::size(kSteps) - 1];
    for (DurationMs s : kSteps) {
      if (double(s) * px_per_ms >= 95) {
        step = s;
        break;
      }
    }
    for (TimeMs t = (p.t0 + step - 1) / step * step; t <= p.t1; t += step) {
      if (axis.x(t) > p.x1 - 30) break;  // no label cut off by a fold or the edge
      const double x = kLabelWidth + axis.x(t);
      const std::string label = tick_label(t);
      out += fmt::format(
          "<line class=\"tick\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
          "<text class=\"ticklabel\" x=\"{0}\" y=\"{3}\">{4}</text>",
          num(x), num(kAxisHeight - 6), num(height), num(kAxisHeight - 10), esc(label));
    }
  }
  return out;
}

// ------------------------------------------------------------------ lanes

struct Lanes {
  std::vector<std::string> names;
  std::map<std::string, std::size_t> index;
  double height = 22;

  double y(std::size_t lane) const { return kAxisHeight + height * double(lane); }
  double bottom() const { return y(names.size()); }

  void add(const std::string& name) {
    if (index.emplace(name, names.size()).second) names.push_back(name);
  }
};

// World first, then each scenario job followed by its items, then anything
// else in order of appearance.
Lanes make_lanes(const Scenario& scenario, const std::vector<TimelineEntry>& entries) {
  Lanes lanes;
  lanes.add("world");
  std::map<std::string, std::vector<std::string>> items;
  for (const TimelineEntry& e : entries) {
    const auto slash = e.lane.find(" / ");
    if (slash != std::string::npos) {
      auto& list = items[e.lane.substr(0, slash)];
      if (std::find(list.begin(), list.end(), e.lane) == list.end()) list.push_back(e.lane);
    }
  }
  for (const JobSpec& job : scenario.jobs) {
    lanes.add(job.id);
    for (const std::string& item : items[job.id]) lanes.add(item);
  }
  for (const TimelineEntry& e : entries) lanes.add(e.lane);
  lanes.height = lanes.names.size() <= 8    ? 32
                 : lanes.names.size() <= 60 ? 22
                                            : (lanes.names.size() <= 300 ? 14 : 9);
  return lanes;
}

// ------------------------------------------------------------------ marks

// CSS class of a mark: outcome first, then failure class.
std::string mark_class(const TimelineEntry& e) {
  std::string cls = std::string("m ") + to_string(e.mark);
  if (!e.failure_class.empty() && (e.mark == Mark::attempt || e.mark == Mark::retry ||
                                   e.mark == Mark::exhausted || e.mark == Mark::item_problem)) {
    cls += " fc-" + e.failure_class;
  } else {
    cls += std::string(" t-") + to_string(e.tone);
  }
  if (e.mark == Mark::attempt && e.text.find("(retry)") != std::string::npos) cls += " again";
  return cls;
}

struct Drawn {
  std::size_t lane = 0;
  std::string cls;
  double x = 0;
  double x2 = 0;                       // retries: where the arrow ends
  const TimelineEntry* rep = nullptr;  // the entry the mark looks like
  std::vector<const TimelineEntry*> entries;
};

// Hover text: one line per entry (the first four); a merged mark starts with
// its counts. Brief (merged across kinds, a fleet): the counts, the span and
// the most severe entry only, so that a 1,000-job week stays a few MB.
std::string hover(const std::vector<const TimelineEntry*>& entries, const TimelineEntry& rep,
                  const std::string& lane, bool brief) {
  auto line = [&lane](const TimelineEntry& e) {
    return fmt::format("{}  {}: {} [event {}]", timeline_time(e.t), lane, e.text, e.index);
  };
  if (entries.size() == 1) return line(rep);
  std::map<std::string, std::size_t> kinds;
  for (const TimelineEntry* e : entries) ++kinds[to_string(e->mark)];
  std::string out = fmt::format("{} events on {}:", entries.size(), lane);
  if (brief) out = fmt::format("{} events:", entries.size());  // the lane is beside it
  for (const auto& [kind, n] : kinds) out += fmt::format(" {} {}", n, kind);
  if (brief) {
    return out + fmt::format(", {} .. {}; worst: {} [event {}]",
                             timeline_time(entries.front()->t).substr(5),
                             timeline_time(entries.back()->t).substr(5), rep.text, rep.index);
  }
  const std::size_t shown = std::min<std::size_t>(entries.size(), 4);
  for (std::size_t i = 0; i < shown; ++i) out += "\n" + line(*entries[i]);
  if (entries.size() > shown) out += fmt::format("\n... and {} more", entries.size() - shown);
  return out;
}

// How much an entry matters when several share one mark: failures first.
int severity(const TimelineEntry& e) {
  switch (e.tone) {
    case Tone::bad: return 6;
    case Tone::fault: return 5;
    case Tone::warn: return 4;
    case Tone::info: return 3;
    case Tone::good: return e.mark == Mark::attempt ? 2 : 1;
    default: return 0;
  }
}

bool drawable(const TimelineEntry& e) {
  return e.mark != Mark::fault_end && e.mark != Mark::run_end;
}

// One merge pass: entries of one lane within one bucket become one mark;
// with by_kind, only those of the same kind and colour. The mark looks like
// its most severe entry.
std::vector<Drawn> bucket_marks(const std::vector<TimelineEntry>& entries, const Lanes& lanes,
                                const TimeAxis& axis, double bucket_px, bool by_kind) {
  std::vector<Drawn> out;
  // (lane, kind) -> the open group and where it began: entries come in time
  // order, so a mark within bucket_px of its group's first joins it, and two
  // groups of one kind on one lane are always at least bucket_px apart.
  std::map<std::pair<std::size_t, std::string>, std::pair<std::size_t, double>> open;
  for (const TimelineEntry& e : entries) {
    if (!drawable(e)) continue;
    const std::size_t lane = lanes.index.at(e.lane);
    const std::string cls = mark_class(e);
    const double x = axis.x(e.t);
    const auto key = std::make_pair(lane, by_kind ? cls : std::string());
    const auto it = open.find(key);
    if (it == open.end() || x - it->second.second >= bucket_px) {
      open[key] = {out.size(), x};
      out.push_back({lane, cls, x, e.until ? axis.x(*e.until) : x, &e, {&e}});
      continue;
    }
    Drawn& d = out[it->second.first];
    d.entries.push_back(&e);
    if (severity(e) > severity(*d.rep)) {
      d.rep = &e;
      d.cls = cls;
      d.x = x;
      d.x2 = x;
    }
    if (e.until && d.rep->mark == e.mark) d.x2 = std::max(d.x2, axis.x(*e.until));
  }
  return out;
}

// Marks merged by kind within 3 px; when that still exceeds kMarkBudget,
// merged per lane regardless of kind, doubling the bucket until it fits.
std::vector<Drawn> merge_marks(const std::vector<TimelineEntry>& entries, const Lanes& lanes,
                               const TimeAxis& axis, double& bucket_px, bool& by_kind) {
  bucket_px = 3;
  by_kind = true;
  std::vector<Drawn> out = bucket_marks(entries, lanes, axis, bucket_px, true);
  if (out.size() <= kMarkBudget) return out;
  by_kind = false;
  for (;;) {
    out = bucket_marks(entries, lanes, axis, bucket_px, false);
    if (out.size() <= kMarkBudget || bucket_px >= kPlotWidth) return out;
    bucket_px *= 2;
  }
}

std::string shape(const Drawn& d, const Lanes& lanes) {
  const TimelineEntry& e = *d.rep;
  const double x = kLabelWidth + d.x;
  const double mid = lanes.y(d.lane) + lanes.height / 2;
  const double r = std::min(6.0, lanes.height / 3.5);
  switch (e.mark) {
    case Mark::slot_due:
      return fmt::format("<line x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>", num(x),
                         num(lanes.y(d.lane) + 2), num(lanes.y(d.lane) + lanes.height - 2));
    case Mark::retry:
      return fmt::format("<path d=\"M{} {} L{} {}\"/><circle cx=\"{}\" cy=\"{}\" r=\"1.8\"/>",
                         num(x), num(mid - r - 1), num(kLabelWidth + d.x2), num(mid - r - 1),
                         num(kLabelWidth + d.x2), num(mid - r - 1));
    case Mark::attempt:
      if (d.cls.find(" again") != std::string::npos) {
        return fmt::format("<path d=\"M{0} {1} L{2} {3} L{0} {4} L{5} {3} Z\"/>", num(x),
                           num(mid - r), num(x + r), num(mid), num(mid + r), num(x - r));
      }
      return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\"/>", num(x), num(mid), num(r));
    case Mark::exhausted:
    case Mark::crash:
      return fmt::format("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" height=\"{2}\"/>", num(x - r),
                         num(mid - r), num(2 * r));
    case Mark::recovered:
    case Mark::boot:
      return fmt::format("<path d=\"M{0} {1} L{2} {3} L{4} {3} Z\"/>", num(x), num(mid - r),
                         num(x + r), num(mid + r), num(x - r));
    case Mark::notification:
      return fmt::format("<path d=\"M{0} {1} L{2} {3} L{4} {3} Z\"/>", num(x),
                         num(lanes.y(d.lane) + lanes.height - 1), num(x + 3),
                         num(lanes.y(d.lane) + lanes.height - 6), num(x - 3));
    case Mark::stage:  // upper half: a stage change
      return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"4\" height=\"{}\"/>", num(x - 2),
                         num(mid - r - 1), num(r));
    case Mark::item_problem:  // lower half, wider: the item failed / waits
      return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"7\" height=\"{}\"/>", num(x - 3.5),
                         num(mid + 1), num(r));
    default:
      return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"4\" height=\"{}\"/>", num(x - 2),
                         num(mid - r), num(2 * r));
  }
}

std::string marks_svg(const std::vector<Drawn>& drawn, const Lanes& lanes, bool brief) {
  std::string out;
  for (const Drawn& d : drawn) {
    const TimelineEntry& e = *d.rep;
    out += fmt::format(
        "<g class=\"{}{}\" data-mark=\"{}\" data-n=\"{}\" data-lane=\"{}\" data-x=\"{}\">", d.cls,
        d.entries.size() > 1 ? " merged" : "", to_string(e.mark), d.entries.size(), d.lane,
        num(kLabelWidth + d.x));
    out += shape(d, lanes);
    out += "<title>" + esc(hover(d.entries, e, lanes.names[d.lane], brief)) + "</title></g>";
  }
  return out;
}

// ------------------------------------------------------------------ spans

// A fault span's label as an operator would say it: "billing-api 503",
// "model-api quota", "orchestrator 503 (30%)", else the kind and service.
std::string fault_label(const TraceEvent& ev) {
  const std::string kind = ev.str("kind");
  const std::string service = ev.service.empty() ? ev.str("service") : ev.service;
  if (kind == "http_errors") {
    const double rate = ev.data.value("rate", 1.0);
    return fmt::format("{} {}{}", service, ev.num("status"),
                       rate < 1.0 ? fmt::format(" ({:.0f}%)", rate * 100) : "");
  }
  if (kind == "quota_exhausted") return service + " quota";
  return service.empty() ? kind : kind + " " + service;
}

// Faults (fault_start .. fault_end, by fault index) and downtime (a crash ..
// the next boot of that process) as shaded spans over every lane.
std::string spans_svg(const std::vector<TimelineEntry>& entries,
                      const std::vector<TraceEvent>& events, const TimeAxis& axis,
                      const Lanes& lanes, TimeMs end) {
  std::string out;
  std::map<std::string, const TimelineEntry*> open;
  std::map<std::size_t, std::string> labels;  // entry index -> short label
  auto draw = [&](const char* cls, const TimelineEntry& from, TimeMs to, const std::string& what) {
    const std::string label = labels[from.index];
    const double x0 = kLabelWidth + axis.x(from.t);
    const double x1 = std::max(x0 + 2, kLabelWidth + axis.x(to));
    out += fmt::format(
        "<rect class=\"span {}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{} .. {}: "
        "{}</title></rect>",
        cls, num(x0), num(kAxisHeight), num(x1 - x0), num(lanes.bottom() - kAxisHeight),
        timeline_time(from.t), timeline_time(to), esc(what));
    if (x1 - x0 < 70) return;  // too narrow for a label: the hover text says it
    out += fmt::format("<text class=\"spanlabel\" x=\"{}\" y=\"{}\">{}</text>", num(x0 + 3),
                       num(kAxisHeight + 11), esc(label));
  };
  for (const TimelineEntry& e : entries) {
    const TraceEvent& ev = events[e.index];
    labels[e.index] = ev.type == "fault_start" ? fault_label(ev) : ev.str("process") + " down";
    if (ev.type == "fault_start") {
      open["fault " + std::to_string(ev.num("fault"))] = &e;
    } else if (ev.type == "fault_end") {
      const auto it = open.find("fault " + std::to_string(ev.num("fault")));
      if (it != open.end()) draw("fault", *it->second, e.t, it->second->text);
      if (it != open.end()) open.erase(it);
    } else if (e.mark == Mark::crash) {
      open["down " + ev.str("process")] = &e;
    } else if (e.mark == Mark::boot) {
      const auto it = open.find("down " + ev.str("process"));
      if (it != open.end()) draw("down", *it->second, e.t, it->second->text);
      if (it != open.end()) open.erase(it);
    }
  }
  for (const auto& [key, from] : open) {
    // A fault without an end (a restart, a corruption) is an instant unless
    // it said how long it lasts; a process never booted again stays down.
    const bool fault = key.rfind("fault", 0) == 0;
    draw(fault ? "fault" : "down", *from, fault ? from->until.value_or(from->t) : end, from->text);
  }
  return out;
}

// Each violation's event ringed on its lane, with a line over every lane.
std::string violations_svg(const ScenarioRunResult& run, const Verdict& verdict,
                           const TimeAxis& axis, const Lanes& lanes) {
  std::string out;
  std::vector<Violation> all = verdict.violations;
  all.insert(all.end(), verdict.expected_seen.begin(), verdict.expected_seen.end());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Violation& v = all[i];
    std::size_t lane = 0;
    if (v.event_index < run.trace.size()) {
      const auto entry = classify_event(run.trace.events()[v.event_index], v.event_index);
      if (entry) {
        const auto it = lanes.index.find(entry->lane);
        if (it != lanes.index.end()) lane = it->second;
      }
    }
    const double x = kLabelWidth + axis.x(v.t);
    out += fmt::format(
        "<g class=\"violation\" id=\"violation-{0}\" data-t=\"{1}\"><line x1=\"{2}\" x2=\"{2}\" "
        "y1=\"{3}\" y2=\"{4}\"/><circle cx=\"{2}\" cy=\"{5}\" r=\"9\"/><title>{6} violated at "
        "event {7} ({8}): {9}</title></g>",
        i, v.t, num(x), num(kAxisHeight), num(lanes.bottom()),
        num(lanes.y(lane) + lanes.height / 2), esc(v.invariant), v.event_index, timeline_time(v.t),
        esc(v.message));
  }
  return out;
}

std::string lanes_svg(const Lanes& lanes) {
  std::string out;
  const double font = std::min(11.0, lanes.height - 1);  // labels never overlap
  for (std::size_t i = 0; i < lanes.names.size(); ++i) {
    const std::string& name = lanes.names[i];
    const bool item = name.find(" / ") != std::string::npos;
    out += fmt::format(
        "<g class=\"lane{}\"><rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\"/><text x=\"{}\" "
        "y=\"{}\" font-size=\"{}\">{}</text></g>",
        i % 2 == 0 ? " even" : "", num(lanes.y(i)), num(kLabelWidth + kPlotWidth),
        num(lanes.height), item ? 16 : 6, num(lanes.y(i) + lanes.height / 2 + font / 2.8),
        num(font), esc(item ? "\xe2\x86\xb3 " + name.substr(name.find(" / ") + 3) : name));
  }
  return out;
}

// ------------------------------------------------------------------ status

// Trace-derived status changes: [t - start, lane, field, value], emitted only
// when a value changes. Fields: 0 status, 1 class, 2 retries, 3 next retry,
// 4 last outcome, 5 stage.
json status_changes(const std::vector<TimelineEntry>& entries,
                    const std::vector<TraceEvent>& events, const Lanes& lanes, TimeMs origin) {
  json out = json::array();
  std::map<std::pair<std::size_t, int>, std::string> now;
  auto set = [&](const TimelineEntry& e, int field, const std::string& value) {
    const std::size_t lane = lanes.index.at(e.lane);
    std::string& cur = now[{lane, field}];
    if (cur == value) return;
    cur = value;
    out.push_back({e.t - origin, lane, field, value});
  };
  for (const TimelineEntry& e : entries) {
    const TraceEvent& ev = events[e.index];
    switch (e.mark) {
      case Mark::attempt: set(e, 4, ev.str("outcome")); break;
      case Mark::retry:
        set(e, 0, "retrying");
        set(e, 1, e.failure_class);
        set(e, 2, std::to_string(ev.num("attempt")));
        set(e, 3, e.until ? timeline_time(*e.until) : "");
        break;
      case Mark::exhausted:
        set(e, 0, ev.type == "retry_exhausted" ? "retry_exhausted" : ev.type);
        set(e, 1, e.failure_class);
        set(e, 3, "");
        break;
      case Mark::recovered:
        set(e, 0, "ok");
        set(e, 1, "");
        set(e, 2, "0");
        set(e, 3, "");
        break;
      case Mark::stage: set(e, 5, ev.str("to")); break;
      case Mark::item_problem:
        set(e, 0, ev.type);
        set(e, 1, e.failure_class);
        break;
      default: break;
    }
  }
  return out;
}

// The core's status view of the durable end state (jobs the store could not
// give are left out; the store error is the view's state_corrupt line).
std::string final_status_text(const Scenario& scenario, const ScenarioRunResult& run) {
  std::vector<StatusJob> jobs;
  for (const FinalJobState& f : run.final_states) {
    if (!f.state) continue;
    StatusJob job;
    job.state = *f.state;
    for (const JobSpec& spec : scenario.jobs) {
      if (spec.id == f.job_id) job.policy = scenario_job_policy(scenario, spec);
    }
    jobs.push_back(std::move(job));
  }
  std::optional<std::string> corrupt;
  if (run.store_corrupt || !run.store_error.empty()) corrupt = run.store_error;
  return render_text(build_status(jobs, corrupt));
}

// ------------------------------------------------------------------ page

// The expect block's checks as written, each a JSON pointer and its
// expected value: objects are opened, anything else (a count, a name, a list
// of slots) is one check; `violations` is judged with the invariants.
void expect_leaves(const json& v, const std::string& pointer,
                   std::vector<std::pair<std::string, std::string>>& out) {
  if (!v.is_object()) {
    out.emplace_back(pointer, v.dump(-1, ' ', false, json::error_handler_t::replace));
    return;
  }
  for (const auto& [key, value] : v.items()) {
    if (pointer == "/expect" && key == "violations") continue;
    expect_leaves(value, pointer + "/" + key, out);
  }
}

// The expectations that held: every check of the expect block that no
// failure's pointer falls under.
std::vector<std::pair<std::string, std::string>> held_expectations(const Scenario& scenario,
                                                                   const Verdict& verdict) {
  std::vector<std::pair<std::string, std::string>> leaves, held;
  if (scenario.expect_source.is_object()) expect_leaves(scenario.expect_source, "/expect", leaves);
  for (auto& [pointer, value] : leaves) {
    const bool failed =
        std::any_of(verdict.expect_failures.begin(), verdict.expect_failures.end(),
                    [&p = pointer](const ExpectFailure& f) { return f.pointer.rfind(p, 0) == 0; });
    if (!failed) held.emplace_back(std::move(pointer), std::move(value));
  }
  return held;
}

std::string invariants_html(const ScenarioRunResult& run, const Verdict& verdict,
                            const Scenario& scenario) {
  std::string rows;
  auto row = [&](const std::string& name, const char* cls, const std::string& what,
                 const std::string& link) {
    const std::string& meaning = invariant_summary(name);
    rows +=
        fmt::format("<tr class=\"{}\"><td>{}{}</td><td>{}</td><td>{}</td></tr>\n", cls, esc(name),
                    meaning.empty() ? "" : "<small>" + esc(meaning) + "</small>", what, link);
  };
  std::set<std::string> fired;
  std::size_t i = 0;
  for (const auto* list : {&verdict.violations, &verdict.expected_seen}) {
    const bool expected = list == &verdict.expected_seen;
    for (const Violation& v : *list) {
      fired.insert(v.invariant);
      row(v.invariant, expected ? "expected" : "violated",
          esc(fmt::format("{}violated at event {} ({}): {}", expected ? "expected, " : "",
                          v.event_index, timeline_time(v.t), v.message)),
          fmt::format("<a href=\"#violation-{}\" data-t=\"{}\" class=\"jump\">show</a>", i++, v.t));
    }
  }
  for (const std::string& name : invariant_names()) {
    if (fired.count(name) == 0) row(name, "held", "held", "");
  }
  for (const std::string& name : verdict.expected_missing) {
    row(name, "violated", "expected to be violated (expect.violations), but held", "");
  }
  for (const ExpectFailure& f : verdict.expect_failures) {
    row(f.pointer, "violated", esc(f.describe()), "");
  }
  for (const auto& [pointer, value] : held_expectations(scenario, verdict)) {
    row(pointer, "held", "held (expected " + esc(value) + ")", "");
  }
  for (const std::string& e : verdict.errors) row("error", "violated", esc(e), "");
  (void)run;
  return "<table class=\"inv\"><tr><th>check</th><th>result</th><th></th></tr>\n" + rows +
         "</table>\n";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px 20px;color:#1f2937;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:18px 0 6px}
.ok{color:#15803d}.fail{color:#b91c1c}code,pre{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace}
pre{background:#f8fafc;border:1px solid #e5e7eb;padding:8px;overflow:auto;max-height:420px}
.meta span{margin-right:18px}
svg{display:block;border:1px solid #e5e7eb;background:#fff;cursor:crosshair}
.lane rect{fill:#fff}.lane.even rect{fill:#f8fafc}.lane text{fill:#374151}
.tick{stroke:#e5e7eb}.ticklabel{font-size:10px;fill:#6b7280;text-anchor:middle}
.fold rect{fill:#f1f5f9}.fold text{font-size:11px;fill:#94a3b8}
.span.fault{fill:#ef4444;fill-opacity:.10;stroke:#ef4444;stroke-opacity:.35}
.spanlabel{font-size:10px;fill:#9f1239;pointer-events:none}.span.down{fill:#64748b;fill-opacity:.18;stroke:#475569;stroke-opacity:.4;stroke-dasharray:3 2}
.m{stroke:#fff;stroke-width:.8}.m.slot_due line{stroke:#94a3b8;stroke-width:1.5}
.t-detail{fill:#cbd5e1}
.m.retry path{fill:none;stroke:#f97316;stroke-width:1.4;stroke-dasharray:4 2}.m.retry circle{fill:#f97316}
.m.exhausted rect{stroke:#111;stroke-width:1.2}.m.merged{stroke:#111;stroke-width:.6}
.violation line{stroke:#dc2626;stroke-width:1.5;stroke-dasharray:2 2}.violation circle{fill:none;stroke:#dc2626;stroke-width:2.5}
#cursor{stroke:#0f172a;stroke-width:1.5}
.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px;vertical-align:-1px}
.legend .shapes{display:block;color:#4b5563;margin-top:2px}.inv small{display:block;color:#6b7280;font-size:11px}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #e5e7eb;padding:3px 10px 3px 0;text-align:left;vertical-align:top}
tr.violated td:first-child{color:#b91c1c;font-weight:600}tr.expected td:first-child{color:#a16207}tr.held td:nth-child(2){color:#15803d}
.s-retrying{color:#b45309;font-weight:600}.s-retry_exhausted,.s-failed_permanent,.s-failed{color:#b91c1c;font-weight:600}
)css";

constexpr const char* kScript = R"js(
(function(){
var errors=[];window.addEventListener('error',function(e){errors.push(String(e.message));});
try{
var D=JSON.parse(document.getElementById('report-data').textContent);
var svg=document.getElementById('timeline');
var FIELDS=['status','class','retries','next retry','last outcome','stage'];
function tOfX(x){var p=D.axis;for(var i=0;i<p.length;i++){if(x<=p[i][3]||i==p.length-1){var f=p[i][3]>p[i][2]?(x-p[i][2])/(p[i][3]-p[i][2]):1;f=Math.max(0,Math.min(1,f));return p[i][0]+f*(p[i][1]-p[i][0]);}}return 0;}
function xOfT(t){var p=D.axis;for(var i=0;i<p.length;i++){if(t<=p[i][1]){var f=p[i][1]>p[i][0]?(t-p[i][0])/(p[i][1]-p[i][0]):1;return p[i][2]+Math.max(0,f)*(p[i][3]-p[i][2]);}}return p[p.length-1][3];}
function iso(t){return new Date(D.start+t).toISOString().replace('T',' ').replace('.000Z','').replace('Z','');}
function showAt(t){
 var rows={};for(var i=0;i<D.changes.length;i++){var c=D.changes[i];if(c[0]>t)break;(rows[c[1]]=rows[c[1]]||{})[c[2]]=c[3];}
 var h='<tr><th>lane</th>'+FIELDS.map(function(f){return '<th>'+f+'</th>';}).join('')+'</tr>';
 for(var l=1;l<D.lanes.length;l++){var r=rows[l]||{};var st=r[0]||'ok';
  h+='<tr><td>'+esc(D.lanes[l])+'</td><td class="s-'+esc(st)+'">'+esc(st)+'</td>';
  for(var f=1;f<FIELDS.length;f++)h+='<td>'+esc(r[f]||'')+'</td>';h+='</tr>';}
 document.getElementById('at-table').innerHTML=h;
 document.getElementById('at-time').textContent=iso(t);
 var cur=document.getElementById('cursor');var x=D.labelWidth+xOfT(t);cur.setAttribute('x1',x);cur.setAttribute('x2',x);
}
function layoutCheck(self){
 var cls={},shapes={};
 Array.prototype.forEach.call(document.querySelectorAll('.legend [data-cls]'),function(e){cls[e.getAttribute('data-cls')]=1;});
 Array.prototype.forEach.call(document.querySelectorAll('.legend [data-shape]'),function(e){shapes[e.getAttribute('data-shape')]=1;});
 var unexplained={},seen={},crowded=0,w=svg.viewBox.baseVal.width;
 Array.prototype.forEach.call(document.querySelectorAll('#timeline g.m'),function(g){
  var k=g.getAttribute('data-mark');if(!shapes[k])unexplained['shape '+k]=1;
  g.getAttribute('class').split(' ').forEach(function(c){if((c.indexOf('t-')==0||c.indexOf('fc-')==0)&&!cls[c])unexplained[c]=1;});
  var key=g.getAttribute('data-lane')+' '+g.getAttribute('class');(seen[key]=seen[key]||[]).push(Number(g.getAttribute('data-x')));});
 Object.keys(seen).forEach(function(k){var xs=seen[k].sort(function(a,b){return a-b;});for(var i=1;i<xs.length;i++)if(xs[i]-xs[i-1]<2.999)crowded++;});
 var overflow=[];
 Array.prototype.forEach.call(document.querySelectorAll('#timeline text'),function(t){var b=t.getBBox();if(b.x<-0.5||b.x+b.width>w+0.5)overflow.push(t.textContent);});
 Array.prototype.forEach.call(document.querySelectorAll('.legend span,h1,.meta span,td,th'),function(e){if(e.scrollWidth>e.clientWidth+1&&getComputedStyle(e).overflow!='visible')overflow.push(e.textContent.slice(0,40));if(e.getBoundingClientRect().right>document.documentElement.scrollWidth+1)overflow.push(e.textContent.slice(0,40));});
 self.unexplained=Object.keys(unexplained);self.crowded=crowded;self.overflow=overflow;
}
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c];});}
svg.addEventListener('click',function(ev){var pt=svg.createSVGPoint();pt.x=ev.clientX;pt.y=ev.clientY;
 var p=pt.matrixTransform(svg.getScreenCTM().inverse());showAt(tOfX(p.x-D.labelWidth));});
Array.prototype.forEach.call(document.querySelectorAll('a.jump'),function(a){a.addEventListener('click',function(){showAt(Number(a.getAttribute('data-t'))-D.start);});});
showAt(D.end-D.start);
var self={lanes:document.querySelectorAll('#timeline g.lane').length,marks:document.querySelectorAll('#timeline g.m').length,kinds:{},errors:errors,
 expected_lanes:D.lanes.length,expected_marks:D.marks,status_rows:document.querySelectorAll('#at-table tr').length-1};
Array.prototype.forEach.call(document.querySelectorAll('#timeline g.m'),function(g){var k=g.getAttribute('data-mark');self.kinds[k]=(self.kinds[k]||0)+1;});
showAt(D.changes.length?D.changes[0][0]:0);self.first_change_rows=document.querySelectorAll('#at-table tr').length-1;showAt(D.end-D.start);
layoutCheck(self);
document.getElementById('selftest').textContent=JSON.stringify(self);
}catch(e){errors.push(String(e));document.getElementById('selftest').textContent=JSON.stringify({errors:errors});}
})();
)js";

// The CSS fill of every colour class, from the one table the legend reads.
std::string swatch_css() {
  std::string out;
  for (const ReportSwatch& w : report_swatches()) {
    out += fmt::format(".{}{{fill:{}}}", w.css_class, w.colour);
  }
  return out + "\n";
}

// Every colour class and every shape the marks use, each with its meaning
// (data-cls / data-shape let the page's self-test check that every mark
// drawn is explained here).
std::string legend_html() {
  std::string out = "<div class=\"legend\">";
  for (const ReportSwatch& w : report_swatches()) {
    out += fmt::format("<span data-cls=\"{}\"><i style=\"background:{}\"></i>{}</span>",
                       w.css_class, w.colour, esc(w.label));
  }
  out +=
      "<span><i style=\"background:rgba(239,68,68,.3)\"></i>fault span</span>"
      "<span><i style=\"background:rgba(100,116,139,.4)\"></i>process down</span>";
  out += "<span class=\"shapes\">";
  const std::pair<const char*, const char*> shapes[] = {
      {"slot_due", "| slot due"},
      {"attempt", "\xe2\x97\x8f attempt (\xe2\x97\x86 a retry's)"},
      {"retry", "\xe2\x87\xa2 retry scheduled, dashed until it runs"},
      {"exhausted", "\xe2\x96\xa0 retries exhausted"},
      {"crash", "\xe2\x96\xa0 crash, damaged file"},
      {"recovered", "\xe2\x96\xb2 recovered"},
      {"boot", "\xe2\x96\xb2 boot, standby, takeover"},
      {"delivery", "\xe2\x96\xae delivery"},
      {"notification", "\xe2\x96\xbe notification (at the lane's foot)"},
      {"stage", "\xe2\x96\xae stage change (upper half)"},
      {"item_problem", "\xe2\x96\xac item failed / deferred"},
      {"token", "\xe2\x96\xae token"},
      {"scheduler", "\xe2\x96\xae scheduler decision"},
      {"fault_start", "\xe2\x96\xae fault start"},
      {"fault_end", "\xe2\x96\xae fault end"},
      {"run_end", "\xe2\x96\xae run end"}};
  for (const auto& [mark, label] : shapes) {
    out += fmt::format("<span data-shape=\"{}\">{}</span>", mark, label);
  }
  return out + "<span>dark outline: marks merged, the hover text counts them</span></span></div>\n";
}

}  // namespace

const std::vector<ReportSwatch>& report_swatches() {
  static const std::vector<ReportSwatch> kSwatches{
      {"t-good", "#16a34a", "success / delivered / recovered"},
      {"t-plain", "#9ca3af", "skipped, boot, run end"},
      {"t-warn", "#f97316", "retry, stall, deferred, token"},
      {"t-bad", "#7f1d1d", "failure without a class, refused, halted"},
      {"t-info", "#2563eb", "notification, stage, standby"},
      {"t-fault", "#c026d3", "fault, crash, damaged file"},
      {"fc-rate_limit", "#dc2626", "rate_limit"},
      {"fc-timeout", "#ca8a04", "timeout"},
      {"fc-network", "#0891b2", "network"},
      {"fc-provider_5xx", "#7c3aed", "provider_5xx"},
      {"fc-auth", "#111827", "auth"},
      {"fc-validation", "#f472b6", "validation"},
      {"fc-not_found", "#14b8a6", "not_found"},
      {"fc-config", "#92400e", "config"},
      {"fc-unknown", "#475569", "unknown"},
  };
  return kSwatches;
}

PolicyOrError scenario_job_policy(const Scenario& scenario, const JobSpec& job) {
  if (!job.retry_policy) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("job '{}' has no retry_policy", job.id));
  }
  std::optional<ScheduleFacts> facts;
  auto schedule = effective_schedule(job.schedule, job.schedule_env, scenario.env);
  if (schedule.ok()) facts = schedule_facts(schedule->schedule);
  return parse_retry_policy(*job.retry_policy, facts);
}

std::string render_html_report(const Scenario& scenario, const ScenarioRunResult& run,
                               const Verdict& verdict, HtmlReportStats* stats) {
  const std::vector<TraceEvent>& events = run.trace.events();
  const std::vector<TimelineEntry> entries =
      timeline_entries(events, /*verbose=*/false, /*fold_notifications=*/false);
  std::vector<TimeMs> points;
  for (const TimelineEntry& e : entries) {
    points.push_back(e.t);
    if (e.until && *e.until <= run.end_ms) points.push_back(*e.until);
  }
  const TimeAxis axis(points, run.start_ms, run.end_ms);
  const Lanes lanes = make_lanes(scenario, entries);
  double bucket_px = 3;
  bool by_kind = true;
  const std::vector<Drawn> drawn = merge_marks(entries, lanes, axis, bucket_px, by_kind);

  const double height = lanes.bottom() + 6;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" data-lanes=\"{2}\" data-marks=\"{3}\">",
      num(kLabelWidth + kPlotWidth + 10), num(height), lanes.names.size(), drawn.size());
  svg += lanes_svg(lanes) + axis_svg(axis, height) +
         spans_svg(entries, events, axis, lanes, run.end_ms) + marks_svg(drawn, lanes, !by_kind) +
         violations_svg(run, verdict, axis, lanes);
  svg += fmt::format("<line id=\"cursor\" x1=\"0\" x2=\"0\" y1=\"{}\" y2=\"{}\"/></svg>",
                     num(kAxisHeight - 4), num(lanes.bottom()));

  json data;
  data["start"] = run.start_ms;
  data["end"] = run.end_ms;
  data["labelWidth"] = kLabelWidth;
  data["axis"] = axis.to_json(run.start_ms);
  data["lanes"] = lanes.names;
  data["marks"] = drawn.size();
  data["changes"] = status_changes(entries, events, lanes, run.start_ms);

  std::size_t merged = 0;
  for (const Drawn& d : drawn) merged += d.entries.size() > 1 ? 1 : 0;
  if (stats != nullptr) {
    *stats = {lanes.names.size(), drawn.size(), entries.size(), merged, bucket_px, by_kind};
  }

  const std::string where = run.path.empty() ? run.scenario : run.path;
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>";
  page += "<title>" + esc("rehearse: " + scenario.name) + "</title><style>" + kStyle +
          swatch_css() + "</style></head><body>\n";
  page += fmt::format("<h1>{} <span class=\"{}\">{}</span></h1>\n", esc(scenario.name),
                      verdict.held() ? "ok" : "fail", verdict.held() ? "held" : "FAILED");
  page += fmt::format(
      "<div class=\"meta\"><span>{} .. {} (UTC)</span><span>seed {}</span><span>{} trace "
      "events</span><span>{} marks ({} merged, {} px buckets{})</span></div>\n",
      timeline_time(run.start_ms), timeline_time(run.end_ms), run.seed, events.size(), drawn.size(),
      merged, num(bucket_px), by_kind ? "" : ", all kinds per lane");
  page += "<p>Replay: <code>" + esc(replay_command(where, run.seed)) + "</code></p>\n";
  page += "<h2>Timeline</h2>" + legend_html() + svg + "\n";
  page += "<p>Click the timeline to see the status at that instant.</p>\n";
  page +=
      "<h2>Status at <span id=\"at-time\"></span> (from the trace)</h2>"
      "<table id=\"at-table\"><tr><td></td></tr></table>\n";
  page += "<h2>Invariants and expectations</h2>" + invariants_html(run, verdict, scenario);
  page += "<h2>Status view at the end (the core's, from the durable store)</h2><pre>" +
          esc(final_status_text(scenario, run)) + "</pre>\n";
  page += "<pre id=\"selftest\" hidden=\"hidden\"></pre>\n";
  page += "<script type=\"application/json\" id=\"report-data\">" + script_json(data) +
          "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
  return page;
}

}  // namespace rehearse::sim
