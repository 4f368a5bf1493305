// The HTML report's timeline (SVG): the time axis's ticks, the lanes, the marks
// (bucketed and merged to a budget) and the fault and violation spans.
#include "sim/report/html_report_detail.hpp"

namespace rehearse::sim::html_report_detail {

namespace {

// "Dec 04 17:00": the month by name, so that no reader takes 12-04 for
// the 12th of April.
std::string tick_label(TimeMs t) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::string iso = timeline_time(t);  // "2026-12-04 17:00:00"
  const int month = std::stoi(iso.substr(5, 2));
  REHEARSE_ASSERT(month >= 1 && month <= 12);  // timeline_time's "YYYY-MM-..." form
  return fmt::format("{} {}", kMonths[(month + 11) % 12], iso.substr(8, 8));
}

}  // namespace

// Tick labels at nice intervals inside busy pieces.
std::string axis_svg(const TimeAxis& axis, double height) {
  REHEARSE_ASSERT(height > kAxisHeight);  // the ticks run from the axis down to the lanes' foot
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
  // The world first, and every entry on a lane of its own (marks look lanes up by name).
  REHEARSE_ASSERT_EQ(lanes.names.front(), "world");
  for (const TimelineEntry& e : entries) REHEARSE_ASSERT_EQ(lanes.index.count(e.lane), 1u);
  return lanes;
}

namespace {

// CSS class of a mark: outcome first, then failure class.
std::string mark_class(const TimelineEntry& e) {
  // Only drawable entries get a mark (bucket_marks skips the others).
  REHEARSE_ASSERT(e.mark != Mark::fault_end && e.mark != Mark::run_end);
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

// Hover text: one line per entry (the first four); a merged mark starts with
// its counts. Brief (merged across kinds, a fleet): the counts, the span and
// the most severe entry only, so that a 1,000-job week stays a few MB.
std::string hover(const std::vector<const TimelineEntry*>& entries, const TimelineEntry& rep,
                  const std::string& lane, bool brief) {
  REHEARSE_ASSERT(!entries.empty());  // a mark stands for at least its own entry
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
  // Every drawable entry is in exactly one mark.
  std::size_t marked = 0;
  for (const Drawn& d : out) marked += d.entries.size();
  REHEARSE_ASSERT_EQ(marked, static_cast<std::size_t>(
                                 std::count_if(entries.begin(), entries.end(), drawable)));
  return out;
}

}  // namespace

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

namespace {

std::string shape(const Drawn& d, const Lanes& lanes) {
  REHEARSE_ASSERT(d.rep != nullptr);
  REHEARSE_ASSERT_LT(d.lane, lanes.names.size());
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

}  // namespace

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

namespace {

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

}  // namespace

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
    REHEARSE_ASSERT_LT(e.index, events.size());  // entries index the trace they came from
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
    REHEARSE_ASSERT_LT(lane, lanes.names.size());
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
  REHEARSE_ASSERT(!lanes.names.empty());  // make_lanes always has the world's
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

// ------------------------------------------------------------- fleet load

namespace {

constexpr double kLoadWidth = kLabelWidth + kPlotWidth + 10;  // as wide as the timeline
constexpr double kLoadLeft = 78;
constexpr double kLoadRight = 16;
constexpr double kLoadTop = 44;
constexpr double kLoadPlotHeight = 170;
constexpr double kLoadHeight = kLoadTop + kLoadPlotHeight + 42;

// A linear chart of one service's minutes: time across, requests up.
struct LoadChart {
  TimeMs start = 0;
  TimeMs end = 1;
  std::int64_t top = 1;  // requests per minute at the top of the plot

  double plot_width() const { return kLoadWidth - kLoadLeft - kLoadRight; }
  double x(TimeMs t) const {
    const TimeMs clamped = std::clamp(t, start, end);
    return kLoadLeft + plot_width() * double(clamped - start) / double(end - start);
  }
  double y(double per_minute) const {
    return kLoadTop + kLoadPlotHeight * (1.0 - std::min(per_minute, double(top)) / double(top));
  }
};

// The gridline step for a plot whose top must hold `max`: 1, 2 or 5 times a
// power of ten, at most four steps up.
std::int64_t nice_step(std::int64_t max) {
  const std::int64_t raw = std::max<std::int64_t>(1, (max + 3) / 4);
  for (std::int64_t scale = 1;; scale *= 10) {
    for (const std::int64_t m : {1, 2, 5}) {
      if (m * scale >= raw) return m * scale;
    }
  }
}

// Gridlines with their counts, time ticks, and both axes' labels.
std::string load_axes_svg(const LoadChart& c, std::int64_t step) {
  REHEARSE_ASSERT_GT(step, 0);
  std::string out;
  for (std::int64_t v = 0; v <= c.top; v += step) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
        "<text class=\"ylabel\" x=\"{3}\" y=\"{4}\">{5}</text>",
        num(kLoadLeft), num(kLoadLeft + c.plot_width()), num(c.y(double(v))), num(kLoadLeft - 6),
        num(c.y(double(v)) + 4), grouped_count(v));
  }
  static constexpr DurationMs kSteps[] = {60'000,     300'000,     900'000,    1'800'000,
                                          3'600'000,  10'800'000,  21'600'000, 43'200'000,
                                          86'400'000, 172'800'000, 604'800'000};
  const double px_per_ms = c.plot_width() / double(c.end - c.start);
  DurationMs tick = kSteps[std::size(kSteps) - 1];
  for (const DurationMs s : kSteps) {
    if (double(s) * px_per_ms >= 110) {
      tick = s;
      break;
    }
  }
  const double foot = kLoadTop + kLoadPlotHeight;
  for (TimeMs t = (c.start + tick - 1) / tick * tick; t <= c.end; t += tick) {
    if (c.x(t) > kLoadLeft + c.plot_width() - 36) break;  // no label past the edge
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
        "<text class=\"xlabel\" x=\"{0}\" y=\"{3}\">{4}</text>",
        num(c.x(t)), num(kLoadTop), num(foot + 4), num(foot + 16), esc(tick_label(t)));
  }
  out += fmt::format(
      "<text class=\"axis\" x=\"{}\" y=\"{}\">time (UTC)</text>"
      "<text class=\"axis\" transform=\"translate(14 {}) rotate(-90)\">requests per minute</text>",
      num(kLoadLeft + c.plot_width() / 2), num(foot + 36), num(kLoadTop + kLoadPlotHeight / 2));
  return out;
}

// A series as a polyline through each minute's middle. More minutes than
// pixels: each point is the busiest minute of its stretch, so that no peak is
// lost to the width.
std::string series_svg(const LoadChart& c, const ServiceLoad& load,
                       const std::vector<std::int64_t>& series, const char* cls) {
  REHEARSE_ASSERT(!series.empty());  // a load has one minute at least
  const auto columns = std::max<std::size_t>(1, static_cast<std::size_t>(c.plot_width()));
  const std::size_t per_point = (series.size() + columns - 1) / columns;
  std::string points;
  for (std::size_t i = 0; i < series.size(); i += per_point) {
    const std::size_t last = std::min(series.size(), i + per_point);
    const std::int64_t busiest = *std::max_element(series.begin() + std::ptrdiff_t(i),
                                                   series.begin() + std::ptrdiff_t(last));
    const TimeMs middle =
        (load.minute_start(i) + std::min(load.end_ms, load.minute_start(last))) / 2;
    points += fmt::format("{}{},{}", points.empty() ? "" : " ", num(c.x(middle)),
                          num(c.y(double(busiest))));
  }
  return fmt::format("<polyline class=\"{}\" points=\"{}\"/>", cls, points);
}

// The fault windows as shaded bands, the capacity as a dashed line.
std::string load_marks_svg(const LoadChart& c, const ServiceLoad& load) {
  std::string out;
  for (const LoadFaultWindow& w : load.faults) {
    const double x0 = c.x(w.from_ms);
    const double x1 = std::max(x0 + 2, c.x(w.until_ms));
    out += fmt::format(
        "<rect class=\"span fault\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>fault "
        "{} ({}): {} .. {}</title></rect>",
        num(x0), num(kLoadTop), num(x1 - x0), num(kLoadPlotHeight), w.fault, esc(w.kind),
        timeline_time(w.from_ms), timeline_time(w.until_ms));
  }
  if (!load.capacity_per_minute_milli) return out;
  const double cap = double(*load.capacity_per_minute_milli) / 1000.0;
  out += fmt::format(
      "<line class=\"cap\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
      "<text class=\"caplabel\" x=\"{1}\" y=\"{3}\">capacity {4}/min</text>",
      num(kLoadLeft), num(kLoadLeft + c.plot_width()), num(c.y(cap)), num(c.y(cap) - 4),
      esc(milli_count_text(*load.capacity_per_minute_milli)));
  return out;
}

// One service's chart: title and key, axes, bands, capacity, both series.
std::string load_chart_svg(const ServiceLoad& load) {
  REHEARSE_ASSERT_GT(load.end_ms, load.start_ms);  // load_section_html's guard
  const std::int64_t peak_useful =
      *std::max_element(load.useful_per_minute.begin(), load.useful_per_minute.end());
  const std::int64_t cap =
      load.capacity_per_minute_milli ? (*load.capacity_per_minute_milli + 999) / 1000 : 0;
  const std::int64_t max = std::max({load.peak_per_minute, peak_useful, cap, std::int64_t{1}});
  const std::int64_t step = nice_step(max);
  const LoadChart chart{load.start_ms, load.end_ms, (max + step - 1) / step * step};
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"load\" data-service=\"{0}\" "
      "width=\"{1}\" height=\"{2}\" viewBox=\"0 0 {1} {2}\">"
      "<text class=\"ltitle\" x=\"{3}\" y=\"16\">{0}: requests per minute</text>"
      "<text class=\"key\" x=\"{3}\" y=\"34\"><tspan class=\"kc\">\xe2\x80\x94 calls sent"
      "</tspan><tspan class=\"ku\" dx=\"16\">\xe2\x80\x94 useful replies (2xx)</tspan>"
      "<tspan class=\"kcap\" dx=\"16\">- - capacity</tspan><tspan class=\"kf\" "
      "dx=\"16\">\xe2\x96\xae fault</tspan></text>",
      esc(load.service), num(kLoadWidth), num(kLoadHeight), num(kLoadLeft));
  svg += load_axes_svg(chart, step) + load_marks_svg(chart, load) +
         series_svg(chart, load, load.calls_per_minute, "lc") +
         series_svg(chart, load, load.useful_per_minute, "lu");
  return svg + "</svg>";
}

}  // namespace

std::string load_section_html(const std::vector<ServiceLoad>& loads) {
  std::string out;
  for (const ServiceLoad& load : loads) {
    if (!load_worth_showing(load) || load.end_ms <= load.start_ms) continue;
    out += "<p class=\"loadline\">" + esc(load_summary_line(load)) + "</p>\n" +
           load_chart_svg(load) + "\n";
  }
  if (out.empty()) return out;
  return "<h2>Fleet load</h2><p>Requests each service received per minute (docs/run.md, "
         "\"Fleet load\").</p>\n" +
         out;
}

}  // namespace rehearse::sim::html_report_detail
