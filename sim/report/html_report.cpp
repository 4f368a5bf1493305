// The HTML report (sim/report/html_report.hpp): the page skeleton, the status table,
// the invariants and expectations, the style and script. The timeline's SVG
// is in html_report_timeline.cpp.
#include "sim/report/html_report_detail.hpp"

namespace rehearse::sim {

namespace html_report_detail {

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
  // Nothing left that could open or close markup or end an attribute.
  REHEARSE_ASSERT_EQ(out.find_first_of("<>\"'"), std::string::npos);
  REHEARSE_ASSERT_GE(out.size(), s.size());
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
  REHEARSE_ASSERT_EQ(out.find("</"), std::string::npos);  // cannot end the <script> element
  return out;
}

std::string num(double v) { return fmt::format("{:.1f}", v); }

namespace {

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
    REHEARSE_ASSERT_LT(e.index, events.size());  // entries index the trace they came from
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
  // The changes replay in time order (the page stops at the first one later than its cursor).
  for (std::size_t i = 1; i < out.size(); ++i) {
    REHEARSE_ASSERT_LE(out[i - 1][0].get<TimeMs>(), out[i][0].get<TimeMs>());
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
  REHEARSE_ASSERT_EQ(pointer.rfind("/expect", 0), 0u);  // pointers into the expect block
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
  REHEARSE_ASSERT_LE(held.size(), leaves.size());
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
svg.load{cursor:default;margin-bottom:8px}.load text{font-size:11px;fill:#374151}.load .ltitle{font-size:13px;font-weight:600;fill:#1f2937}
.load .grid{stroke:#e5e7eb}.load .ylabel{text-anchor:end}.load .xlabel{text-anchor:middle;fill:#6b7280;font-size:10px}.load .axis{text-anchor:middle;fill:#4b5563}
.load .lc{fill:none;stroke:#2563eb;stroke-width:1.5}.load .lu{fill:none;stroke:#16a34a;stroke-width:1.5}.load .cap{stroke:#111827;stroke-width:1.2;stroke-dasharray:6 3}
.load .caplabel{text-anchor:end;fill:#111827;paint-order:stroke;stroke:#fff;stroke-width:3px}.load .kc{fill:#2563eb}.load .ku{fill:#16a34a}.load .kcap{fill:#111827}.load .kf{fill:#ef4444}.loadline{margin:10px 0 4px}
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

}  // namespace html_report_detail

using namespace html_report_detail;

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
  // One of the scenario's own jobs (its schedule reads the scenario's env).
  REHEARSE_ASSERT(scenario.find_job(job.id) == &job);
  if (!job.retry_policy) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("job '{}' has no retry_policy", job.id));
  }
  std::optional<ScheduleFacts> facts;
  auto schedule = effective_schedule(job.schedule, job.schedule_env, scenario.env, job.tz);
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
  if (auto load = run_service_load(scenario, run)) page += load_section_html(*load);
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
