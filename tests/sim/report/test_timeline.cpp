// Goal: the timeline renderer (sim/report/timeline.hpp) says what each meaningful
// trace event is, once, for the terminal and the HTML report alike: attempts
// with outcome and failure class, retries with their delay, exhaustion,
// recovery, faults, restarts, stages, token reissues; notifications folded
// into the status line they announce on the terminal; disk/queue/outbox
// detail only when verbose; lanes grouped world first, then jobs and items in
// order of appearance; colour only when asked. The HTML report of a real run
// holds one lane per job and item, folds idle stretches, and merges dense
// marks within its budget.
// Method: hand-made trace events with the fields docs/trace-events.md gives;
// one real run of a small scenario for the report.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/failure.hpp"
#include "model/time.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/timeline.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

TimeMs at(const char* iso) { return *parse_instant(iso); }

TraceEvent ev(const char* t, const char* type, const char* job, json data, const char* item = "") {
  TraceEvent e;
  e.t = at(t);
  e.type = type;
  e.job = job;
  e.item = item;
  e.data = std::move(data);
  return e;
}

std::vector<TraceEvent> outage() {
  return {
      ev("2026-12-04T12:00:00Z", "process_boot", "", {{"process", "worker"}, {"boots", 1}}),
      ev("2026-12-04T16:59:30Z", "fault_start", "",
         {{"fault", 0}, {"kind", "quota_exhausted"}, {"until", "2026-12-04T22:59:30Z"}}),
      ev("2026-12-04T17:00:00Z", "run_started", "weekly", {{"attempt", 1}, {"kind", "regular"}}),
      ev("2026-12-04T17:00:00Z", "disk_write", "", {{"path", "/state/x"}, {"bytes", 10}}),
      ev("2026-12-04T17:00:00.200Z", "run_finished", "weekly",
         {{"attempt", 1},
          {"kind", "regular"},
          {"outcome", "failure"},
          {"failure_class", "rate_limit"},
          {"duration_ms", 200}}),
      ev("2026-12-04T17:00:00.200Z", "retry_scheduled", "weekly",
         {{"attempt", 1},
          {"failure_class", "rate_limit"},
          {"next_retry_at", "2026-12-04T17:30:00.200Z"},
          {"next_action", "retry"}}),
      ev("2026-12-04T17:00:00.200Z", "message_delivered", "weekly",
         {{"kind", "notification"}, {"event", "retry_scheduled"}, {"target", "team"}}),
      ev("2026-12-04T17:10:00Z", "stage_changed", "reconcile", {{"from", "open"}, {"to", "triage"}},
         "ISS-1"),
      ev("2026-12-04T17:20:00Z", "token_issued", "fetch",
         {{"reason", "after_401"}, {"generation", 2}}),
      ev("2026-12-04T17:30:00.400Z", "retry_exhausted", "weekly",
         {{"attempt", 3}, {"failure_class", "rate_limit"}, {"next_action", "wait_next_run"}}),
      ev("2026-12-04T22:59:30Z", "fault_end", "", {{"fault", 0}, {"kind", "quota_exhausted"}}),
  };
}

TEST(Timeline, ClassifiesAttemptsByOutcomeAndClass) {
  const auto events = outage();
  const auto entry = classify_event(events[4], 4);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->mark, Mark::attempt);
  EXPECT_EQ(entry->tone, Tone::bad);
  EXPECT_EQ(entry->failure_class, "rate_limit");
  EXPECT_EQ(entry->text, "attempt 1 (regular) failure rate_limit in 200ms");
  EXPECT_EQ(entry->lane, "weekly");
}

TEST(Timeline, RetryCarriesItsDelayAndInstant) {
  const auto entry = classify_event(outage()[5], 5);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->mark, Mark::retry);
  ASSERT_TRUE(entry->until.has_value());
  EXPECT_EQ(*entry->until, at("2026-12-04T17:30:00.200Z"));
  EXPECT_NE(entry->text.find("retry 1 scheduled in 30m at 2026-12-04 17:30:00.200"),
            std::string::npos)
      << entry->text;
}

TEST(Timeline, BookkeepingIsSilentAndDiskIsDetail) {
  const auto events = outage();
  EXPECT_FALSE(classify_event(events[2], 2).has_value());  // run_started
  const auto disk = classify_event(events[3], 3);
  ASSERT_TRUE(disk.has_value());
  EXPECT_EQ(disk->mark, Mark::detail);
}

TEST(Timeline, ItemsTokensAndFaultsHaveTheirMarks) {
  const auto events = outage();
  EXPECT_EQ(classify_event(events[7], 7)->lane, "reconcile / ISS-1");
  EXPECT_EQ(classify_event(events[7], 7)->text, "stage open -> triage");
  EXPECT_EQ(classify_event(events[8], 8)->mark, Mark::token);
  EXPECT_EQ(classify_event(events[1], 1)->mark, Mark::fault_start);
  EXPECT_EQ(classify_event(events[10], 10)->mark, Mark::fault_end);
  // An initial token is no reissue: not shown.
  auto initial = events[8];
  initial.data["reason"] = "initial";
  EXPECT_EQ(classify_event(initial, 8)->mark, Mark::detail);
}

TEST(Timeline, NotificationFoldsIntoItsStatusLineOnTheTerminalOnly) {
  const auto events = outage();
  const auto folded = timeline_entries(events, false);
  for (const auto& e : folded) EXPECT_NE(e.mark, Mark::notification);
  bool annotated = false;
  for (const auto& e : folded) {
    if (e.mark == Mark::retry) annotated = e.text.find("-> notified team") != std::string::npos;
  }
  EXPECT_TRUE(annotated);
  const auto kept = timeline_entries(events, false, /*fold_notifications=*/false);
  EXPECT_EQ(kept.size(), folded.size() + 1);
}

TEST(Timeline, RendersLanesWorldFirstAndDetailOnlyWhenVerbose) {
  const auto events = outage();
  const std::string text = render_timeline(events, {});
  const auto world = text.find("world\n");
  const auto weekly = text.find("weekly\n");
  const auto item = text.find("reconcile / ISS-1\n");
  ASSERT_NE(world, std::string::npos);
  ASSERT_NE(weekly, std::string::npos);
  ASSERT_NE(item, std::string::npos);
  EXPECT_LT(world, weekly);
  EXPECT_LT(weekly, item);
  EXPECT_EQ(text.find("disk_write"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("  2026-12-04 17:00:00.200  attempt 1 (regular) failure"), std::string::npos)
      << text;

  TimelineOptions verbose;
  verbose.verbose = true;
  EXPECT_NE(render_timeline(events, verbose).find("disk_write"), std::string::npos);
  TimelineOptions color;
  color.color = true;
  EXPECT_NE(render_timeline(events, color).find("\x1b[31m"), std::string::npos);
}

// A failed attempt names the last call the world answered with a failure
// (the replies of its own job, slot and attempt, not another run's), and how
// many failed; a success names none.
TEST(Timeline, FailedAttemptNamesTheCallThatFailed) {
  auto reply = [](const char* t, const char* job, const char* slot, int attempt,
                  const char* service, const char* op, const char* target, json status) {
    TraceEvent e =
        ev(t, "service_reply", job, {{"attempt", attempt}, {"operation", op}, {"target", target}});
    e.slot = at(slot);
    e.service = service;
    if (status.is_string()) {
      e.data["transport_error"] = status;
    } else {
      e.data["status"] = status;
    }
    return e;
  };
  auto finished = [](const char* t, const char* job, const char* slot, int attempt,
                     const char* outcome) {
    TraceEvent e = ev(t, "run_finished", job,
                      {{"attempt", attempt},
                       {"kind", "regular"},
                       {"outcome", outcome},
                       {"failure_class", std::string(outcome) == "failure" ? "provider_5xx" : ""},
                       {"duration_ms", 200}});
    e.slot = at(slot);
    return e;
  };
  const char* slot = "2026-12-04T06:00:00Z";
  const std::vector<TraceEvent> events{
      reply("2026-12-04T06:00:00.100Z", "sync", slot, 1, "billing-api", "GET", "/invoices", 200),
      reply("2026-12-04T06:00:00.150Z", "other", slot, 1, "billing-api", "GET", "/x", 500),
      reply("2026-12-04T06:00:00.200Z", "sync", slot, 1, "ledger-api", "POST", "/entries", 429),
      reply("2026-12-04T06:00:00.300Z", "sync", slot, 1, "ledger-api", "POST", "/entries",
            "timeout"),
      finished("2026-12-04T06:00:00.300Z", "sync", slot, 1, "failure"),
      reply("2026-12-04T06:10:00.100Z", "sync", slot, 2, "ledger-api", "POST", "/entries", 200),
      finished("2026-12-04T06:10:00.100Z", "sync", slot, 2, "success"),
  };
  const auto entries = timeline_entries(events, false);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].text,
            "attempt 1 (regular) failure provider_5xx in 200ms: ledger-api POST /entries -> "
            "timeout (2 calls failed)");
  EXPECT_EQ(entries[1].text, "attempt 2 (regular) success in 200ms");
}

// The verbose timeline writes detail as key=value and calls as sentences;
// locks and fsyncs stay in the trace file only. A dropped retry and a
// standby's takeover are not detail.
TEST(Timeline, VerboseDetailIsReadableAndTakeoversShow) {
  TraceEvent call = ev("2026-12-04T06:00:00Z", "service_call", "sync",
                       {{"operation", "POST"}, {"target", "/entries"}, {"attempt", 1}});
  call.service = "ledger-api";
  const std::vector<TraceEvent> events{
      ev("2026-12-04T06:00:00Z", "disk_lock", "", {{"path", "/s/lock"}, {"process", 1}}),
      ev("2026-12-04T06:00:00Z", "disk_append", "",
         {{"path", "/s/journal"}, {"bytes", 367}, {"process", 1}}),
      ev("2026-12-04T06:00:00Z", "disk_fsync", "", {{"path", "/s/journal"}, {"process", 1}}),
      call,
      ev("2026-12-04T06:00:01Z", "worker_standby", "",
         {{"holder", "flock failed: held by simulated process 1 (a simulation cannot block)"},
          {"path", "/s/worker.lock"}}),
      ev("2026-12-04T06:31:00Z", "worker_lock_taken", "",
         {{"path", "/s/worker.lock"}, {"waited_ms", 1859000}}),
      ev("2026-12-04T06:31:00Z", "retry_dropped", "sync",
         {{"attempt", 2}, {"reason", "the state store is corrupt"}}),
  };
  const auto quiet = timeline_entries(events, false);
  ASSERT_EQ(quiet.size(), 3u);
  EXPECT_EQ(quiet[0].text, "a worker stands by: the worker lock is held by simulated process 1");
  EXPECT_EQ(quiet[1].text, "a standby takes over: worker lock taken after 30m59s");
  EXPECT_EQ(quiet[2].mark, Mark::scheduler);
  EXPECT_EQ(quiet[2].text, "retry_dropped (retry 2) reason=the state store is corrupt");
  const auto verbose = timeline_entries(events, true);
  ASSERT_EQ(verbose.size(), 5u);
  EXPECT_EQ(verbose[0].text, "disk_append bytes=367 path=/s/journal");
  EXPECT_EQ(verbose[1].text, "call ledger-api POST /entries");
}

// The report's colours: one per failure class of the core and per tone,
// no class twice, and every pair at least 20 apart in CIELAB (CIE76), so
// that no two meanings share a colour (provider_5xx and notifications once
// did, as did rate_limit and auth).
double srgb_to_linear(double c) {
  return c > 0.04045 ? std::pow((c + 0.055) / 1.055, 2.4) : c / 12.92;
}

std::array<double, 3> lab(const std::string& hex) {
  auto channel = [&](int i) {
    return srgb_to_linear(std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16) / 255.0);
  };
  const double r = channel(0), g = channel(1), b = channel(2);
  const double x = (r * 0.4124 + g * 0.3576 + b * 0.1805) / 0.95047;
  const double y = r * 0.2126 + g * 0.7152 + b * 0.0722;
  const double z = (r * 0.0193 + g * 0.1192 + b * 0.9505) / 1.08883;
  auto f = [](double v) { return v > 0.008856 ? std::cbrt(v) : 7.787 * v + 16.0 / 116.0; };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

TEST(HtmlReport, ColoursCoverEveryClassAndToneAndStayApart) {
  std::set<std::string> classes;
  for (const ReportSwatch& w : report_swatches()) {
    EXPECT_TRUE(classes.insert(w.css_class).second) << w.css_class << " twice";
    EXPECT_EQ(std::string(w.colour).size(), 7u) << w.css_class;
  }
  for (FailureClass c : all_failure_classes()) {
    EXPECT_EQ(classes.count(std::string("fc-") + to_string(c)), 1u) << to_string(c);
  }
  for (const char* tone : {"good", "plain", "warn", "bad", "info", "fault"}) {
    EXPECT_EQ(classes.count(std::string("t-") + tone), 1u) << tone;
  }
  const auto& all = report_swatches();
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t j = i + 1; j < all.size(); ++j) {
      const auto a = lab(all[i].colour), b = lab(all[j].colour);
      const double d = std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
      EXPECT_GE(d, 20.0) << all[i].css_class << " and " << all[j].css_class << " look alike";
    }
  }
}

Scenario small_scenario() {
  const json doc = {
      {"format", 1},
      {"scenario", "timeline-unit"},
      {"start", "2026-12-04T12:00:00Z"},
      {"until", "2026-12-11T18:00:00Z"},
      {"services", {{"model-api", json::object()}, {"messenger", {{"targets", {"team"}}}}}},
      {"jobs",
       {{{"id", "weekly"},
         {"kind", "group"},
         {"schedule", "0 17 * * 5"},
         {"retry_policy", "auto"},
         {"tasks", {{{"id", "summary"}, {"produces", "summary"}}}},
         {"targets", {"team"}}}}},
      {"faults", {{{"at", "2026-12-04T16:59:30Z"}, {"for", "6h"}, {"kind", "quota_exhausted"}}}}};
  auto loaded = load_scenario_json(doc.dump(), "timeline-unit.json");
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().describe());
  return std::move(loaded).value();
}

// The table under "Invariants and expectations" lists the expectations that
// held (with what was expected) as well as the ones that failed.
TEST(HtmlReport, ListsHeldExpectationsBesideFailedOnes) {
  json doc = json::parse(R"({
      "format": 1, "scenario": "held-expectations",
      "start": "2026-12-04T12:00:00Z", "until": "2026-12-11T18:00:00Z",
      "services": {"model-api": {}, "messenger": {"targets": ["team"]}},
      "jobs": [{"id": "weekly", "kind": "group", "schedule": "0 17 * * 5", "retry_policy": "auto",
                "tasks": [{"id": "summary", "produces": "summary"}], "targets": ["team"]}],
      "faults": [{"at": "2026-12-04T16:59:30Z", "for": "6h", "kind": "quota_exhausted"}],
      "expect": {"jobs": {"weekly": {"delivered_slots": 1, "retries": 999}}}})");
  auto scenario = load_scenario_json(doc.dump(), "held.json");
  ASSERT_TRUE(scenario.ok()) << scenario.error().describe();
  auto run = run_scenario(*scenario);
  ASSERT_TRUE(run.ok());
  const Verdict verdict = judge_run(*scenario, *run, std::nullopt);
  ASSERT_EQ(verdict.expect_failures.size(), 1u);
  const std::string page = render_html_report(*scenario, *run, verdict);
  EXPECT_NE(page.find("<tr class=\"held\"><td>/expect/jobs/weekly/delivered_slots</td><td>held "
                      "(expected 1)</td>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<tr class=\"violated\"><td>/expect/jobs/weekly/retries</td>"),
            std::string::npos);
  EXPECT_EQ(page.find("<tr class=\"held\"><td>/expect/jobs/weekly/retries"), std::string::npos);
}

TEST(HtmlReport, OneLanePerJobFoldsIdleTimeAndCountsMarks) {
  const Scenario scenario = small_scenario();
  auto run = run_scenario(scenario);
  ASSERT_TRUE(run.ok());
  const Verdict verdict = judge_run(scenario, *run, std::nullopt);
  HtmlReportStats stats;
  const std::string page = render_html_report(scenario, *run, verdict, &stats);
  EXPECT_EQ(stats.lanes, 2u);  // world, weekly
  EXPECT_EQ(stats.merged, 0u);
  EXPECT_DOUBLE_EQ(stats.bucket_px, 3.0);
  EXPECT_NE(page.find("data-lanes=\"2\""), std::string::npos);
  // The six idle days between the two Fridays are folded.
  EXPECT_NE(page.find("folded: nothing happened"), std::string::npos);
  // Self-contained: no external script, stylesheet or font.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  // Embedded JSON cannot end its <script> element early.
  const auto data = page.find("id=\"report-data\">");
  ASSERT_NE(data, std::string::npos);
  EXPECT_EQ(page.substr(data, page.find("</script>", data) - data).find("</"), std::string::npos);
}

}  // namespace
}  // namespace rehearse::sim

namespace rehearse::sim {
namespace {

TEST(HtmlReport, FirstViolatingEventIsRingedAndListed) {
  const Scenario scenario = small_scenario();
  auto run = run_scenario(scenario);
  ASSERT_TRUE(run.ok());
  std::size_t exhausted = 0;
  for (std::size_t i = 0; i < run->trace.size(); ++i) {
    if (run->trace.events()[i].type == "retry_exhausted") exhausted = i;
  }
  ASSERT_GT(exhausted, 0u);
  const Violation violation{"retries_bounded", exhausted, run->trace.events()[exhausted].t,
                            "made-up violation for the report"};
  const Verdict verdict = judge_run(scenario, *run, violation);
  const std::string page = render_html_report(scenario, *run, verdict);
  EXPECT_NE(page.find("id=\"violation-0\""), std::string::npos);
  EXPECT_NE(page.find(fmt::format("violated at event {}", exhausted)), std::string::npos);
  EXPECT_NE(page.find("<a href=\"#violation-0\""), std::string::npos);
  EXPECT_NE(page.find("FAILED"), std::string::npos);
}

}  // namespace
}  // namespace rehearse::sim
