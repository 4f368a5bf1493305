// Timeline: a run's trace read as an incident timeline (docs/report.md).
//
// classify_event() is the one place that says which trace events matter to a
// reader and what they are (an attempt and its outcome, a retry and its
// delay, a fault, a restart...). The terminal timeline (`rehearse run
// --timeline`, render_timeline below) and the HTML report
// (sim/report/html_report.hpp) both draw from it, so the two never disagree on what
// an event is.
//
// Events are grouped into lanes: "world" (faults, boots and crashes, the run's
// end), one lane per job, and one lane per reconcile item ("job / item").
// Disk, queue, outbox, service-call and task events are detail: shown only
// with `verbose`, one short line each (key=value, a call as "call SERVICE
// OP TARGET", its reply with the status); locks and fsyncs not at all.
// A failed attempt's line names the last call the world answered with a
// failure ("attempt 1 (regular) failure provider_5xx in 200ms: ledger-api
// POST /entries -> 503").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/service_load.hpp"

namespace rehearse::sim {

// What an event is to a reader. `detail` is everything hidden unless verbose.
enum class Mark : unsigned char {
  slot_due,      // a regular slot became due (or misfired)
  attempt,       // a run finished: outcome, failure class
  retry,         // a retry was scheduled (with its delay)
  exhausted,     // retries ran out / failed permanently / policy invalid
  recovered,     // the job recovered
  delivery,      // a delivery reached its target
  notification,  // a notification was sent or refused
  fault_start,
  fault_end,
  boot,          // a process booted
  crash,         // a process crashed or was restarted
  stage,         // a reconcile item changed stage
  item_problem,  // a reconcile item failed, was deferred or backed off
  token,         // a token reissue or revocation
  scheduler,     // other scheduler decisions (stall, superseded, restored, halted)
  run_end,
  detail,
};
const char* to_string(Mark m) noexcept;

// How a line or mark is coloured: by outcome, never by event name.
enum class Tone : unsigned char { plain, good, bad, warn, fault, info, detail };
const char* to_string(Tone t) noexcept;

struct TimelineEntry {
  std::size_t index = 0;  // the event's index in the trace
  TimeMs t = 0;
  Mark mark = Mark::detail;
  Tone tone = Tone::plain;
  std::string lane;           // "world", a job id, or "job / item"
  std::string text;           // one line, without the time: "attempt 2 (retry) failure rate_limit"
  std::string failure_class;  // attempts, retries, exhaustion: the class, if any
  std::optional<TimeMs> until;  // retries: when the retry runs; faults: until
};

// The entry for one event; nullopt for events that are never shown (bookkeeping
// such as run_started, whose run_finished says everything).
std::optional<TimelineEntry> classify_event(const TraceEvent& e, std::size_t index);

// Detail the verbose timeline leaves out as well: locks and fsyncs, whose
// effect the write, append or rename beside them already shows (the --trace
// file has every event).
bool hidden_detail(const TraceEvent& e);

// Every entry of the trace, in trace order; detail entries only when verbose
// (and never the hidden ones).
// With fold_notifications (the terminal), a notification sent at the instant
// of the status event it announces is folded into that event's line ("->
// notified team-weekly") instead of a line of its own; the HTML report keeps
// them as marks.
std::vector<TimelineEntry> timeline_entries(const std::vector<TraceEvent>& events, bool verbose,
                                            bool fold_notifications = true);

struct TimelineOptions {
  bool verbose = false;
  bool color = false;  // ANSI colours (the CLI: stdout is a terminal and NO_COLOR unset)
};

// The terminal timeline: a heading, then each lane (world first, then jobs
// and items in order of first appearance) with one line per entry:
//   "  2026-12-04 17:00:00.200  attempt 1 (regular) failure rate_limit"
std::string render_timeline(const std::vector<TraceEvent>& events, const TimelineOptions& options);

// The fleet load (sim/world/service_load.hpp) of the services it says
// something about: those with a declared capacity or a fault on them.
bool load_worth_showing(const ServiceLoad& load) noexcept;
// One line: "provider: 41,200 calls, 6.1x work amplification, peak 2,400/min
// after the outage ended (capacity 1,200/min), drained in 14m", then the
// metastability judgment when there is one ("; still above capacity 1h
// after the outage ended: metastable").
std::string load_summary_line(const ServiceLoad& load);
// The timeline's closing block: "load", then one indented line per service
// worth showing; empty when there is none.
std::string render_load_summary(const std::vector<ServiceLoad>& loads,
                                const TimelineOptions& options);
// 41200 -> "41,200".
std::string grouped_count(std::int64_t n);
// A count kept in thousandths (>= 0): whole when it is ("1,200"), else to one
// decimal ("6.1"), rounded half up.
std::string milli_count_text(std::int64_t milli);

// "2026-12-04 17:00:00.200": the ISO instant without 'T' and 'Z'.
std::string timeline_time(TimeMs t);

}  // namespace rehearse::sim
