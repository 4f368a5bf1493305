#include "sim/report/timeline.hpp"

#include <fmt/format.h>

#include <map>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

// "until" style instants in event fields, read back for delays.
std::optional<TimeMs> instant_field(const TraceEvent& e, const char* key) {
  const std::string text = e.str(key);
  if (text.empty()) return std::nullopt;
  auto parsed = parse_instant(text);
  if (!parsed.ok()) return std::nullopt;
  return *parsed;
}

std::string lane_of(const TraceEvent& e) {
  if (e.job.empty()) return e.item.empty() ? "world" : "item " + e.item;
  if (!e.item.empty()) return e.job + " / " + e.item;
  return e.job;
}

std::string slot_suffix(const TraceEvent& e) {
  return e.slot ? " slot " + timeline_time(*e.slot) : std::string();
}

Tone outcome_tone(const std::string& outcome) {
  if (outcome == "success" || outcome == "already_complete") return Tone::good;
  if (outcome == "failure") return Tone::bad;
  return Tone::plain;  // skipped
}

// Runs: slot due, misfire, finished, stalled, and the scheduler's other words.
bool classify_run(const TraceEvent& e, TimelineEntry& out) {
  REHEARSE_ASSERT(out.text.empty());  // classify_event's fresh entry
  const std::string& type = e.type;
  if (type == "slot_due") {
    out.mark = Mark::slot_due;
    out.text = e.slot && *e.slot != e.t ? "slot due" + slot_suffix(e) : "slot due";
  } else if (type == "slot_misfire") {
    out.mark = Mark::slot_due;
    out.tone = Tone::warn;
    out.text = fmt::format("slot misfired{}, {} late, {} coalesced", slot_suffix(e),
                           format_duration(e.num("lateness_ms")), e.num("coalesced_count"));
  } else if (type == "run_finished") {
    out.mark = Mark::attempt;
    const std::string outcome = e.str("outcome");
    out.tone = outcome_tone(outcome);
    out.failure_class = e.str("failure_class");
    out.text = fmt::format("attempt {} ({}) {}", e.num("attempt"), e.str("kind"), outcome);
    if (!out.failure_class.empty()) out.text += " " + out.failure_class;
    out.text += fmt::format(" in {}", format_duration(e.num("duration_ms")));
  } else if (type == "run_stalled" || type == "retry_superseded" || type == "retry_cancelled" ||
             type == "retry_restored" || type == "retry_dropped" || type == "scheduler_halted" ||
             type == "schedule_error") {
    out.mark = Mark::scheduler;
    out.tone = type == "scheduler_halted" || type == "schedule_error" ? Tone::bad : Tone::warn;
    out.text = type;
    if (type == "retry_dropped") out.text += fmt::format(" (retry {})", e.num("attempt"));
    for (const char* key : {"decision", "reason", "superseded_by", "next_retry_at", "error"}) {
      const std::string v = e.str(key);
      if (!v.empty()) out.text += fmt::format(" {}={}", key, v);
    }
  } else {
    return false;
  }
  return true;
}

// The status events the core notifies (retry_scheduled, retry_exhausted...).
bool classify_status(const TraceEvent& e, TimelineEntry& out) {
  // classify_run declined the event and left the entry as it was.
  REHEARSE_ASSERT_EQ(out.mark, Mark::detail);
  REHEARSE_ASSERT(out.text.empty());
  const std::string& type = e.type;
  out.failure_class = e.str("failure_class");
  if (type == "retry_scheduled") {
    out.mark = Mark::retry;
    out.tone = Tone::warn;
    out.until = instant_field(e, "next_retry_at");
    const DurationMs delay = out.until ? *out.until - e.t : 0;
    out.text =
        fmt::format("retry {} scheduled in {} at {} ({})", e.num("attempt"), format_duration(delay),
                    out.until ? timeline_time(*out.until) : "?", out.failure_class);
  } else if (type == "retry_exhausted" || type == "failed_permanent" || type == "policy_invalid" ||
             type == "state_corrupt") {
    out.mark = Mark::exhausted;
    out.tone = Tone::bad;
    out.text =
        fmt::format("{} after {} retries ({}), next: {}", type, e.num("attempt"),
                    out.failure_class.empty() ? "-" : out.failure_class, e.str("next_action"));
    if (const std::string d = e.str("detail"); !d.empty()) out.text += ": " + d;
  } else if (type == "recovered") {
    out.mark = Mark::recovered;
    out.tone = Tone::good;
    out.text = fmt::format("recovered (was {})", out.failure_class);
  } else {
    out.failure_class.clear();
    return false;
  }
  return true;
}

// A worker standing by while another holds the single-worker lock, or a
// standby taking it over (the lock taken after a wait; taken at once, it is
// detail).
std::string worker_lock_text(const TraceEvent& e) {
  REHEARSE_ASSERT(e.type == "worker_standby" || e.type == "worker_lock_taken");
  if (e.type == "worker_standby") {
    const std::string holder = e.str("holder");
    const auto held = holder.find("held by ");
    return fmt::format(
        "a worker stands by: the worker lock is {}",
        held == std::string::npos ? "held" : holder.substr(held, holder.find(" (", held) - held));
  }
  return fmt::format("a standby takes over: worker lock taken after {}",
                     format_duration(static_cast<DurationMs>(e.num("waited_ms"))));
}

// Messages, world events, reconcile stages and tokens.
bool classify_other(const TraceEvent& e, TimelineEntry& out) {
  // classify_status declined the event and cleared the class it read.
  REHEARSE_ASSERT(out.text.empty() && out.failure_class.empty());
  const std::string& type = e.type;
  if (type == "message_delivered" || type == "message_refused") {
    const std::string kind = e.str("kind");
    const bool refused = type == "message_refused";
    if (kind == "delivery" && !refused) {
      out.mark = Mark::delivery;
      out.tone = Tone::good;
      out.text = fmt::format("delivered to {}{}", e.str("target"),
                             e.flag("duplicate") ? " (DUPLICATE)" : "");
    } else if (kind == "notification" || refused) {
      out.mark = Mark::notification;
      out.tone = refused ? Tone::bad : Tone::info;
      const std::string what = kind == "notification" ? e.str("event") : kind;
      out.text = refused
                     ? fmt::format("{} to {} refused: {}", what, e.str("target"), e.str("reason"))
                     : fmt::format("notified {} of {}", e.str("target"), what);
    } else {
      return false;  // failure notices: detail
    }
  } else if (type == "fault_start") {
    out.mark = Mark::fault_start;
    out.tone = Tone::fault;
    out.until = instant_field(e, "until");
    out.text = fmt::format("fault {}{} starts{}{}", e.str("kind"),
                           e.service.empty() ? "" : " on " + e.service,
                           out.until ? " until " + timeline_time(*out.until) : "",
                           e.str("note").empty() ? "" : ": " + e.str("note"));
  } else if (type == "fault_end") {
    out.mark = Mark::fault_end;
    out.tone = Tone::fault;
    out.text =
        fmt::format("fault {}{} ends", e.str("kind"), e.service.empty() ? "" : " on " + e.service);
  } else if (type == "process_boot") {
    out.mark = Mark::boot;
    out.text = fmt::format("{} boots (boot {})", e.str("process"), e.num("boots"));
  } else if (type == "process_crash") {
    out.mark = Mark::crash;
    out.tone = Tone::fault;
    out.text = fmt::format("{} goes down ({})", e.str("process"), e.str("cause"));
  } else if (type == "worker_standby" || (type == "worker_lock_taken" && e.num("waited_ms") > 0)) {
    out.lane = "world";
    out.mark = Mark::boot;
    out.tone = Tone::info;
    out.text = worker_lock_text(e);
  } else if (type == "job_file_damaged") {
    out.mark = Mark::crash;
    out.tone = Tone::fault;
    out.text = fmt::format("file {} damaged ({}){}", e.str("path"), e.str("mode"),
                           e.flag("applied") ? "" : ", nothing damaged");
  } else if (type == "store_corrupt_injected") {
    out.mark = Mark::fault_start;
    out.tone = Tone::fault;
    out.text = fmt::format("{} corrupted ({}){}", e.str("file"), e.str("mode"),
                           e.flag("applied") ? "" : ", nothing damaged");
  } else if (type == "run_end") {
    out.mark = Mark::run_end;
    out.text = fmt::format("run ends: {}", e.str("outcome"));
  } else if (type == "stage_changed") {
    out.mark = Mark::stage;
    out.tone = Tone::info;
    out.text = fmt::format("stage {} -> {}", e.str("from"), e.str("to"));
  } else if (type == "item_failed" || type == "item_deferred" || type == "item_backoff") {
    out.mark = Mark::item_problem;
    out.tone = type == "item_failed" ? Tone::bad : Tone::warn;
    out.failure_class = e.str("failure_class");
    out.until = instant_field(e, "until");
    out.text = fmt::format("{} {}{}", type.substr(5), e.str("reason"),
                           out.until ? " until " + timeline_time(*out.until) : "");
  } else if ((type == "token_issued" && e.str("reason") == "after_401") ||
             type == "token_revoked") {
    out.mark = Mark::token;
    out.tone = Tone::warn;
    out.text =
        type == "token_revoked"
            ? fmt::format("token generation {} revoked ({})", e.num("generation"), e.str("cause"))
            : fmt::format("token reissued after a 401 (generation {})", e.num("generation"));
  } else {
    return false;
  }
  return true;
}

// Events a reader never needs: the run_finished / status events say it all,
// and the scenario's own jobs say what job_configured repeats at each boot.
bool silent(const std::string& type) {
  return type == "run_started" || type == "scheduler_boot" || type == "job_configured";
}

}  // namespace

const char* to_string(Mark m) noexcept {
  switch (m) {
    case Mark::slot_due: return "slot_due";
    case Mark::attempt: return "attempt";
    case Mark::retry: return "retry";
    case Mark::exhausted: return "exhausted";
    case Mark::recovered: return "recovered";
    case Mark::delivery: return "delivery";
    case Mark::notification: return "notification";
    case Mark::fault_start: return "fault_start";
    case Mark::fault_end: return "fault_end";
    case Mark::boot: return "boot";
    case Mark::crash: return "crash";
    case Mark::stage: return "stage";
    case Mark::item_problem: return "item_problem";
    case Mark::token: return "token";
    case Mark::scheduler: return "scheduler";
    case Mark::run_end: return "run_end";
    case Mark::detail: return "detail";
  }
  return "detail";
}

const char* to_string(Tone t) noexcept {
  switch (t) {
    case Tone::plain: return "plain";
    case Tone::good: return "good";
    case Tone::bad: return "bad";
    case Tone::warn: return "warn";
    case Tone::fault: return "fault";
    case Tone::info: return "info";
    case Tone::detail: return "detail";
  }
  return "plain";
}

std::string timeline_time(TimeMs t) {
  std::string s = format_instant(t);
  for (char& c : s) {
    if (c == 'T') c = ' ';
  }
  if (!s.empty() && s.back() == 'Z') s.pop_back();
  return s;
}

namespace {

// A field's value as a reader wants it: strings without quotes, the rest as
// compact JSON.
std::string field_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "ledger-api POST /entries": the request a call or reply is about.
std::string request_text(const TraceEvent& e) {
  REHEARSE_ASSERT(e.type == "service_call" || e.type == "service_reply");
  std::string out = e.service;
  for (const char* key : {"operation", "target"}) {
    if (const std::string v = e.str(key); !v.empty()) out += " " + v;
  }
  return out;
}

// "ledger-api POST /entries -> 503", "model-api generate work -> timeout".
std::string describe_reply(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "service_reply");  // a call has no answer to describe
  const std::string transport = e.str("transport_error");
  return request_text(e) + " -> " +
         (transport.empty() ? std::to_string(e.num("status")) : transport);
}

// "call ledger-api POST /entries", "reply ledger-api POST /entries -> 503: ...".
std::string call_text(const TraceEvent& e) {
  REHEARSE_ASSERT(e.type == "service_call" || e.type == "service_reply");
  if (e.type == "service_call") return "call " + request_text(e);
  std::string out = "reply " + describe_reply(e);
  if (const std::string m = e.str("message"); !m.empty()) out += ": " + m;
  return out;
}

// Every other event: its type, then each field as key=value (the world's
// bookkeeping fields, log level and process number, left out).
std::string detail_text(const TraceEvent& e) {
  if (e.type == "service_call" || e.type == "service_reply") return call_text(e);
  std::string out = e.type;
  if (!e.service.empty() && e.service != "queue") out += " [" + e.service + "]";
  if (!e.data.is_object()) return out;
  for (const auto& [key, value] : e.data.items()) {
    if (key == "level" || key == "process" || value.is_null()) continue;
    out += fmt::format(" {}={}", key, field_text(value));
  }
  return out;
}

}  // namespace

bool hidden_detail(const TraceEvent& e) {
  return e.type == "disk_lock" || e.type == "disk_unlock" || e.type == "disk_fsync" ||
         e.type == "disk_fsync_dir";
}

std::optional<TimelineEntry> classify_event(const TraceEvent& e, std::size_t index) {
  if (silent(e.type)) return std::nullopt;
  TimelineEntry out;
  out.index = index;
  out.t = e.t;
  out.lane = lane_of(e);
  if (classify_run(e, out) || classify_status(e, out) || classify_other(e, out)) {
    // A classified event has a mark of its own (detail is the fallback) and a line.
    REHEARSE_ASSERT(out.mark != Mark::detail && !out.text.empty());
    return out;
  }
  // Everything else is detail (--verbose).
  out.mark = Mark::detail;
  out.tone = Tone::detail;
  out.failure_class.clear();
  out.until.reset();
  out.text = detail_text(e);
  return out;
}

namespace {

// A run is named by its job, slot and attempt; the replies its calls got
// carry the same three (from the request headers).
std::string run_key(const TraceEvent& e) {
  return fmt::format("{}\n{}\n{}", e.job, e.slot ? *e.slot : -1, e.num("attempt"));
}

bool failed_reply(const TraceEvent& e) {
  return e.type == "service_reply" &&
         (e.data.contains("transport_error") || e.num("status", 200) >= 400);
}

// The calls of each run the world answered with a failure: the last one and
// how many, for the line of the failed attempt.
struct FailedCalls {
  std::string last;
  std::size_t count = 0;
};

void add_failed_calls(TimelineEntry& entry, const TraceEvent& e,
                      std::map<std::string, FailedCalls>& failed) {
  REHEARSE_ASSERT_EQ(e.type, "run_finished");  // a run's failed calls end with it
  const auto it = failed.find(run_key(e));
  if (it == failed.end()) return;
  if (e.str("outcome") == "failure") {
    entry.text += ": " + it->second.last;
    if (it->second.count > 1) entry.text += fmt::format(" ({} calls failed)", it->second.count);
  }
  failed.erase(it);
}

}  // namespace

std::vector<TimelineEntry> timeline_entries(const std::vector<TraceEvent>& events, bool verbose,
                                            bool fold_notifications) {
  std::vector<TimelineEntry> out;
  std::map<std::string, FailedCalls> failed;  // by run_key
  // (lane, event name) -> the status line a following notification belongs to.
  std::map<std::pair<std::string, std::string>, std::size_t> announced;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (failed_reply(e)) {
      FailedCalls& calls = failed[run_key(e)];
      calls.last = describe_reply(e);
      ++calls.count;
    }
    auto entry = classify_event(e, i);
    if (!entry || (entry->mark == Mark::detail && (!verbose || hidden_detail(e)))) continue;
    if (e.type == "run_finished") add_failed_calls(*entry, e, failed);
    if (entry->mark == Mark::notification && e.type == "message_delivered" && fold_notifications &&
        !verbose) {
      const auto it = announced.find({entry->lane, e.str("event")});
      if (it != announced.end() && out[it->second].t == e.t) {
        out[it->second].text += " -> notified " + e.str("target");
        continue;
      }
    }
    if (entry->mark == Mark::retry || entry->mark == Mark::exhausted ||
        entry->mark == Mark::recovered) {
      announced[{entry->lane, e.type}] = out.size();
    }
    // Entries follow the trace: indices increase, time never goes back.
    REHEARSE_ASSERT_EQ(entry->index, i);
    REHEARSE_ASSERT(out.empty() || (out.back().index < i && out.back().t <= entry->t));
    out.push_back(std::move(*entry));
  }
  REHEARSE_ASSERT_LE(out.size(), events.size());
  return out;
}

namespace {

const char* ansi(Tone t) {
  switch (t) {
    case Tone::good: return "\x1b[32m";
    case Tone::bad: return "\x1b[31m";
    case Tone::warn: return "\x1b[33m";
    case Tone::fault: return "\x1b[35m";
    case Tone::info: return "\x1b[36m";
    case Tone::detail: return "\x1b[2m";
    case Tone::plain: return "";
  }
  return "";
}

}  // namespace

std::string render_timeline(const std::vector<TraceEvent>& events, const TimelineOptions& options) {
  const std::vector<TimelineEntry> entries = timeline_entries(events, options.verbose);
  // Lanes: world first, then in order of first appearance.
  std::vector<std::string> lanes{"world"};
  std::map<std::string, std::vector<const TimelineEntry*>> by_lane;
  for (const TimelineEntry& entry : entries) {
    if (by_lane.find(entry.lane) == by_lane.end() && entry.lane != "world") {
      lanes.push_back(entry.lane);
    }
    by_lane[entry.lane].push_back(&entry);
  }
  // Each lane listed once: "world" always, every other lane that has entries.
  REHEARSE_ASSERT_EQ(lanes.size(), by_lane.size() + (by_lane.count("world") != 0 ? 0u : 1u));
  const std::string bold = options.color ? "\x1b[1m" : "";
  const std::string reset = options.color ? "\x1b[0m" : "";
  std::string out;
  for (const std::string& lane : lanes) {
    const auto it = by_lane.find(lane);
    if (it == by_lane.end()) continue;
    out += fmt::format("{}{}{}\n", bold, lane, reset);
    for (const TimelineEntry* entry : it->second) {
      const std::string colour = options.color ? ansi(entry->tone) : "";
      out += fmt::format("  {:<23}  {}{}{}\n", timeline_time(entry->t), colour, entry->text,
                         colour.empty() ? "" : reset);
    }
  }
  return out;
}

std::string grouped_count(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string milli_count_text(std::int64_t milli) {
  REHEARSE_ASSERT_GE(milli, 0);  // counts and ratios of counts
  if (milli % 1000 == 0) return grouped_count(milli / 1000);
  const std::int64_t tenths = (milli + 50) / 100;
  return fmt::format("{}.{}", grouped_count(tenths / 10), tenths % 10);
}

namespace {

// After the trigger: how long failures went on, then an hour later.
std::string after_trigger_text(const ServiceLoad& load) {
  REHEARSE_ASSERT(load.peak_after_trigger_per_minute.has_value());  // a minute after it
  std::string out;
  if (!load.drain_ms) {
    out = ", still failing at the run's end";
  } else if (*load.drain_ms == 0) {
    out = ", no failure after it";
  } else {
    out = ", drained in " + format_duration(*load.drain_ms);
  }
  if (load.metastable_judged()) {
    out += load.metastable ? "; still above capacity 1h after the outage ended: metastable"
                           : "; under capacity 1h after the outage ended";
  } else if (load.capacity_per_minute_milli) {
    out += "; metastability not judged (the run ends within 1h1m of the outage's end)";
  }
  return out;
}

}  // namespace

bool load_worth_showing(const ServiceLoad& load) noexcept {
  return load.capacity_per_minute_milli.has_value() || load.trigger_end.has_value();
}

std::string load_summary_line(const ServiceLoad& load) {
  std::string out = fmt::format("{}: {} calls", load.service, grouped_count(load.calls));
  out += load.work_amplification_milli
             ? fmt::format(", {}x work amplification",
                           milli_count_text(*load.work_amplification_milli))
             : std::string(load.calls > 0 ? ", none useful" : "");
  if (load.peak_after_trigger_per_minute) {
    out += fmt::format(", peak {}/min after the outage ended",
                       grouped_count(*load.peak_after_trigger_per_minute));
  } else {
    out += fmt::format(", peak {}/min", grouped_count(load.peak_per_minute));
    if (load.trigger_end) out += " (the outage lasts to the run's end)";
  }
  if (load.capacity_per_minute_milli) {
    out += fmt::format(" (capacity {}/min)", milli_count_text(*load.capacity_per_minute_milli));
  }
  if (load.peak_after_trigger_per_minute) out += after_trigger_text(load);
  return out;
}

std::string render_load_summary(const std::vector<ServiceLoad>& loads,
                                const TimelineOptions& options) {
  std::string lines;
  for (const ServiceLoad& load : loads) {
    if (!load_worth_showing(load)) continue;
    const bool bad = load.metastable || (load.trigger_end && !load.drain_ms);
    const std::string colour = options.color ? ansi(bad ? Tone::bad : Tone::plain) : "";
    lines +=
        fmt::format("  {}{}{}\n", colour, load_summary_line(load), colour.empty() ? "" : "\x1b[0m");
  }
  if (lines.empty()) return lines;
  return fmt::format("{}load{}\n", options.color ? "\x1b[1m" : "", options.color ? "\x1b[0m" : "") +
         lines;
}

}  // namespace rehearse::sim
