// The HTML incident report of one run (`rehearse run SCENARIO --report FILE`,
// docs/report.md): one self-contained page (inline SVG, CSS and a little
// JavaScript; nothing fetched) with
//  - a timeline: a lane per job and per reconcile item, the marks of
//    sim/report/timeline.hpp (attempts coloured by outcome and failure class, retries
//    as dashed arrows to the instant they run, exhaustion, recovery,
//    deliveries, notifications, stages), faults and downtime as shaded spans,
//    each mark with hover text; idle stretches longer than 1/30 of the run are
//    folded into a narrow break so that a week with one busy evening reads;
//  - the status at the instant the reader clicks (the latest trace-derived
//    status change at or before it; the changes are embedded as JSON) and the
//    core's own status view at the end (model/status_view.hpp);
//  - the invariant results, the first violating event ringed on the timeline;
//  - the replay command.
// Dense marks are merged: marks of one kind and colour on one lane within
// 3 px become one mark whose hover text counts them; when that still leaves
// more than 12,000 marks (a 1,000-job week), every mark of a lane within a
// bucket merges into one that looks like its most severe entry (failures
// first), the bucket doubling until the budget holds.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "model/retry_machine.hpp"
#include "sim/report/report.hpp"

namespace rehearse::sim {

struct HtmlReportStats {
  std::size_t lanes = 0;
  std::size_t marks = 0;         // SVG marks drawn (merged ones count once)
  std::size_t events_drawn = 0;  // timeline entries behind those marks
  std::size_t merged = 0;        // marks that stand for more than one entry
  double bucket_px = 0;          // merge bucket width used
  bool by_kind = true;           // false: merged across kinds (over budget)
};

// A colour of the timeline's marks: the CSS class a mark carries (its tone,
// or its failure class), the colour and what it means in the legend. The
// page's CSS and its legend are both written from this one table, so a
// colour can never be drawn unexplained; the colours are far apart (a test
// measures their distance in CIELAB).
struct ReportSwatch {
  const char* css_class;  // "t-good", "fc-rate_limit"
  const char* colour;     // "#16a34a"
  const char* label;
};
const std::vector<ReportSwatch>& report_swatches();

// A scenario job's policy as the run parses it ("auto" on the job's
// effective schedule); an error when it has none. For the status views.
PolicyOrError scenario_job_policy(const Scenario& scenario, const JobSpec& job);

std::string render_html_report(const Scenario& scenario, const ScenarioRunResult& run,
                               const Verdict& verdict, HtmlReportStats* stats = nullptr);

}  // namespace rehearse::sim
