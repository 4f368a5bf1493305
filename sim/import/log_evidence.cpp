#include "sim/import/log_evidence.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

constexpr DurationMs kDefaultLatencyMs = 100;  // docs/scenario-format.md, `services`

// One run of a `call` job as its lines show it.
struct CallRun {
  std::string job;
  std::vector<std::string> services;  // its calls, in order
  TimeMs start = 0;
  std::string start_where;
  std::optional<std::size_t> failed;  // the index `call_failed` named
  const LogRecord* failure = nullptr;
  bool succeeded = false;
  DurationMs duration_ms = 0;
};

std::optional<TimeMs> instant_field(const json& fields, const char* key) {
  const auto it = fields.find(key);
  if (it == fields.end() || !it->is_string()) return std::nullopt;
  auto t = parse_instant(it->get<std::string>());
  if (!t) return std::nullopt;
  return *t;
}

std::string str_field(const json& fields, const char* key) {
  const auto it = fields.find(key);
  return it != fields.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t int_field(const json& fields, const char* key, std::int64_t fallback) {
  const auto it = fields.find(key);
  return it != fields.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

// ".../a2/c1" -> 1: the call's index in its run.
std::optional<std::size_t> call_index(const std::string& request_id) {
  const auto slash = request_id.rfind("/c");
  if (slash == std::string::npos || slash + 2 >= request_id.size()) return std::nullopt;
  std::size_t index = 0;
  for (std::size_t i = slash + 2; i < request_id.size(); ++i) {
    const char c = request_id[i];
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<std::size_t>(c - '0');
  }
  return index;
}

// A run whose lines say which calls it made: it succeeded, or a call failed
// (a run can fail before any call, for its configuration).
bool explained(const CallRun& run) {
  if (run.services.empty()) return false;
  if (run.succeeded) return !run.failed;
  return run.failed && *run.failed < run.services.size() && run.failure != nullptr;
}

bool timed_out(const CallRun& run) {
  return run.failure != nullptr && str_field(run.failure->fields, "transport_error") == "timeout";
}

bool is_notification(const std::string& event) {
  const auto& all = notification_events();
  return std::find(all.begin(), all.end(), event) != all.end();
}

}  // namespace

const std::vector<std::string>& notification_events() {
  static const std::vector<std::string> kEvents{"retry_scheduled",  "retry_exhausted",
                                                "failed_permanent", "recovered",
                                                "policy_invalid",   "state_corrupt"};
  return kEvents;
}

namespace {

// Reads the lines in order; the parts below each follow one thread of them.
class EvidenceReader {
 public:
  EvidenceReader(LogEvidence& out, const std::map<std::string, DurationMs>& declared)
      : out_(out), declared_(declared) {}

  void read(const LogRecord& r);
  void finish();

 private:
  void on_boot(const LogRecord& r);
  void on_configured(const LogRecord& r);
  void on_slot_event(const LogRecord& r);
  void count_run(const LogRecord& r, ObservedJob& job, TimeMs slot, TimeMs at);
  void on_run_started(const LogRecord& r, ObservedJob& job, TimeMs slot);
  void on_run_stalled(const LogRecord& r, ObservedJob& job, TimeMs slot);
  void on_run_finished(const LogRecord& r, ObservedJob& job, ObservedSlot& s);
  void on_call_failed(const LogRecord& r);
  void close_call_run(const LogRecord& r);
  void infer_latencies();
  void drop_runs_in_flight();
  void observe_calls(const CallRun& run);
  DurationMs latency(const std::string& service) const;

  LogEvidence& out_;
  const std::map<std::string, DurationMs>& declared_;
  const LogRecord* previous_ = nullptr;
  std::map<std::string, std::vector<std::string>> call_services_;  // call jobs' calls
  std::map<std::string, CallRun> open_runs_;                       // by job
  std::vector<CallRun> runs_;
};

void EvidenceReader::read(const LogRecord& r) {
  if (out_.lines == 0) out_.first_t = r.t;
  ++out_.lines;
  out_.last_t = std::max(out_.last_t, r.t);
  if (r.event == "scheduler_boot") {
    on_boot(r);
  } else if (r.event == "job_configured") {
    on_configured(r);
  } else if (r.event == "schedule_config_error" || r.event == "job_config_error") {
    if (out_.boots.size() <= 1) out_.refused_jobs.push_back(str_field(r.fields, "job_id"));
  } else if (r.event == "call_failed") {
    on_call_failed(r);
  }
  on_slot_event(r);
  previous_ = &r;
}

void EvidenceReader::on_boot(const LogRecord& r) {
  // A run still open at a boot was cut by the stop before it.
  out_.cut_runs += static_cast<int>(open_runs_.size());
  open_runs_.clear();
  if (!out_.boots.empty()) out_.last_before_boot.push_back(previous_ ? previous_->t : r.t);
  out_.boots.push_back(r.t);
}

// The first boot's configuration is the scenario's; a later boot that
// configures a job otherwise is reported (the first is kept).
void EvidenceReader::on_configured(const LogRecord& r) {
  ConfiguredJob job{nlohmann::ordered_json(r.fields), r.where()};
  const std::string id = job.id();
  const auto same = std::find_if(out_.jobs.begin(), out_.jobs.end(),
                                 [&](const ConfiguredJob& j) { return j.id() == id; });
  if (same == out_.jobs.end()) {
    if (job.kind() == "call") {
      std::vector<std::string> services;
      const json calls = r.fields.value("params", json::object()).value("calls", json::array());
      for (const json& c : calls) services.push_back(c.value("service", std::string()));
      call_services_[id] = std::move(services);
    }
    out_.jobs.push_back(std::move(job));
  } else if (same->fields != job.fields) {
    out_.ambiguities.push_back(
        {"", r.t, fmt::format("job '{}' is configured otherwise at a later boot", id),
         "the first boot's configuration is imported", same->where + ", " + r.where()});
  }
}

void EvidenceReader::on_call_failed(const LogRecord& r) {
  const auto it = open_runs_.find(str_field(r.fields, "job_id"));
  if (it == open_runs_.end()) return;
  it->second.failed = call_index(str_field(r.fields, "request_id"));
  it->second.failure = &r;
}

void EvidenceReader::close_call_run(const LogRecord& r) {
  const auto it = open_runs_.find(str_field(r.fields, "job_id"));
  if (it == open_runs_.end()) return;
  it->second.succeeded = str_field(r.fields, "outcome") != "failure";
  it->second.duration_ms = int_field(r.fields, "duration_ms", r.t - it->second.start);
  runs_.push_back(std::move(it->second));
  open_runs_.erase(it);
}

// The slot tracker's transitions (sim/monitors/slot_tracker.hpp), from lines.
void EvidenceReader::on_slot_event(const LogRecord& r) {
  const std::string id = str_field(r.fields, "job_id");
  const auto slot = instant_field(r.fields, "slot");
  if (id.empty() || !slot) return;
  ObservedJob& job = out_.observed[id];
  if (r.event == "slot_misfire") {
    for (const json& c : r.fields.value("coalesced_slots", json::array())) {
      auto t = c.is_string() ? parse_instant(c.get<std::string>()) : Result<TimeMs>(0);
      if (c.is_string() && t && job.slots.count(*t) == 0) job.slots[*t].state = "coalesced";
    }
  }
  const bool known = job.slots.count(*slot) != 0;
  if (is_notification(r.event)) {
    ++out_.notifications[r.event];
    ++job.notifications[r.event];
    if (known) ++job.slots[*slot].notifications[r.event];
  }
  if (r.event == "run_started") return on_run_started(r, job, *slot);
  if (r.event == "run_stalled") return on_run_stalled(r, job, *slot);
  if (r.event == "slot_due") {
    job.slots[*slot];
    return;
  }
  ObservedSlot& s = job.slots[*slot];
  if (r.event == "run_finished") return on_run_finished(r, job, s);
  if (r.event == "retry_scheduled") {
    s.state = "retry_pending";
    job.final_status = "retrying";
  } else if (r.event == "retry_exhausted") {
    s.state = "exhausted";
    job.final_status = "retry_exhausted";
  } else if (r.event == "failed_permanent" || r.event == "retry_dropped") {
    s.state = r.event;
    job.final_status = "failed";
  } else if (r.event == "retry_superseded") {
    if (s.state == "retry_pending" || s.state == "failed") s.state = "superseded";
  } else if (!known) {
    job.slots.erase(*slot);  // a line about a slot no run or hand-out made known
  }
}

// A run of the record: counted at its start, open until its end settles it.
void EvidenceReader::count_run(const LogRecord& r, ObservedJob& job, TimeMs slot, TimeMs at) {
  ObservedSlot& s = job.slots[slot];
  ++job.runs;
  s.attempt_at.push_back(at);
  const int attempt = static_cast<int>(int_field(r.fields, "attempt", 1));
  const bool retry = str_field(r.fields, "kind") == "retry";
  job.open.push_back({slot, attempt, retry && job.retry_attempts.count({slot, attempt}) == 0,
                      s.state, out_.boots.size()});
  s.state = "running";
  if (retry) job.retry_attempts[{slot, attempt}] = true;
}

// A boot found a run cut by a crash. One whose start the log shows is
// settled by it; one it does not show was taken from the queue and cut
// before its first line: a run all the same, taken after the last line
// before this boot, which is when it is placed.
void EvidenceReader::on_run_stalled(const LogRecord& r, ObservedJob& job, TimeMs slot) {
  const int attempt = static_cast<int>(int_field(r.fields, "attempt", 1));
  const auto open = std::find_if(job.open.begin(), job.open.end(), [&](const OpenRun& o) {
    return o.slot == slot && o.attempt == attempt;
  });
  if (open != job.open.end()) {
    job.open.erase(open);
    return;
  }
  const TimeMs taken = out_.last_before_boot.empty() ? r.t : out_.last_before_boot.back();
  count_run(r, job, slot, taken);
  job.open.pop_back();  // settled at once: the stall is its end
}

void EvidenceReader::on_run_started(const LogRecord& r, ObservedJob& job, TimeMs slot) {
  count_run(r, job, slot, r.t);
  const std::string id = str_field(r.fields, "job_id");
  const auto calls = call_services_.find(id);
  if (calls == call_services_.end()) return;
  if (open_runs_.count(id) != 0) ++out_.cut_runs;
  CallRun run;
  run.job = id;
  run.services = calls->second;
  run.start = r.t;
  run.start_where = r.where();
  open_runs_[id] = std::move(run);
}

void EvidenceReader::on_run_finished(const LogRecord& r, ObservedJob& job, ObservedSlot& s) {
  const auto slot = instant_field(r.fields, "slot");
  const int attempt = static_cast<int>(int_field(r.fields, "attempt", 1));
  const auto open = std::find_if(job.open.begin(), job.open.end(), [&](const OpenRun& o) {
    return slot && o.slot == *slot && o.attempt == attempt;
  });
  if (open != job.open.end()) job.open.erase(open);
  const std::string outcome = str_field(r.fields, "outcome");
  if (outcome == "failure") {
    s.state = "failed";
  } else {
    s.state = outcome == "skipped" ? "skipped" : "delivered";
    job.final_status = "ok";
  }
  close_call_run(r);
}

DurationMs EvidenceReader::latency(const std::string& service) const {
  const auto it = out_.latency.find(service);
  return it == out_.latency.end() ? kDefaultLatencyMs : it->second;
}

// Each finished run says: the latencies of the calls it made, up to the one
// that failed (a timeout excepted: it took the service's timeout), add up to
// its duration. A run with one service not yet known settles it.
void EvidenceReader::infer_latencies() {
  out_.latency = declared_;
  for (bool progress = true; progress;) {
    progress = false;
    for (const CallRun& run : runs_) {
      if (!explained(run) || timed_out(run)) continue;
      const std::size_t last = run.failed.value_or(run.services.size() - 1);
      DurationMs known = 0;
      std::set<std::string> unknown;
      int unknown_calls = 0;
      for (std::size_t i = 0; i <= last; ++i) {
        const auto it = out_.latency.find(run.services[i]);
        if (it != out_.latency.end()) {
          known += it->second;
        } else {
          unknown.insert(run.services[i]);
          ++unknown_calls;
        }
      }
      const DurationMs rest = run.duration_ms - known;
      if (unknown.size() != 1 || rest < 0 || rest % unknown_calls != 0) continue;
      out_.latency[*unknown.begin()] = rest / unknown_calls;
      progress = true;
    }
  }
}

// The run's calls as observations: each placed after the ones before it.
void EvidenceReader::observe_calls(const CallRun& run) {
  if (!explained(run)) return;
  const std::size_t made = run.failed ? *run.failed + 1 : run.services.size();
  TimeMs at = run.start;
  for (std::size_t i = 0; i < made && i < run.services.size(); ++i) {
    CallObservation call;
    call.service = run.services[i];
    call.start_ms = at;
    call.end_ms = at + latency(call.service);
    call.where = run.start_where;
    if (run.failed && i == *run.failed && run.failure != nullptr) {
      const json& f = run.failure->fields;
      call.end_ms = std::max(at, run.failure->t);
      call.where = run.failure->where();
      const std::string transport = str_field(f, "transport_error");
      call.retry_after = f.contains("retry_after_ms");
      if (f.contains("status")) {
        call.outcome = CallOutcome::http_error;
        call.status = static_cast<int>(int_field(f, "status", 0));
      } else if (transport == "timeout") {
        call.outcome = CallOutcome::timeout;
        out_.timeout.emplace(call.service, call.end_ms - call.start_ms);
      } else {
        call.outcome = CallOutcome::network_error;
        call.error = transport;
      }
    }
    out_.calls.push_back(std::move(call));
    at += latency(run.services[i]);
  }
}

// A run still in flight when the log ends is no run of the record yet: the
// simulator's monitors count a run when the queue settles it (a finish, or a
// crash's replay), and so do these expectations.
void EvidenceReader::drop_runs_in_flight() {
  for (auto& [id, job] : out_.observed) {
    for (const OpenRun& o : job.open) {
      if (o.boots != out_.boots.size()) continue;  // cut by a stop: settled at a later boot
      ObservedSlot& s = job.slots[o.slot];
      --job.runs;
      if (!s.attempt_at.empty()) s.attempt_at.pop_back();
      if (o.retry) job.retry_attempts.erase({o.slot, o.attempt});
      if (s.state == "running") s.state = o.state_before;
    }
    job.open.clear();
  }
}

void EvidenceReader::finish() {
  drop_runs_in_flight();
  out_.cut_runs += static_cast<int>(open_runs_.size());
  infer_latencies();
  std::set<std::string> services;
  for (const auto& [job, calls] : call_services_) services.insert(calls.begin(), calls.end());
  for (const std::string& s : services) {
    if (out_.latency.count(s) != 0) continue;
    out_.ambiguities.push_back({s, out_.first_t,
                                "no run's duration settles the service's latency, which places "
                                "its calls inside their runs",
                                fmt::format("{}ms", kDefaultLatencyMs), ""});
  }
  for (const CallRun& run : runs_) observe_calls(run);
}

}  // namespace

std::map<std::string, DurationMs> declared_latencies(const nlohmann::ordered_json& scenario) {
  std::map<std::string, DurationMs> out;
  const nlohmann::ordered_json services =
      scenario.value("services", nlohmann::ordered_json::object());
  for (const auto& [name, decl] : services.items()) {
    const auto latency = decl.is_object() ? decl.find("latency") : decl.end();
    if (!decl.is_object() || latency == decl.end()) {
      out[name] = kDefaultLatencyMs;
    } else if (latency->is_string()) {
      if (auto ms = parse_duration(latency->get<std::string>())) out[name] = *ms;
    }
  }
  return out;
}

LogEvidence read_log_evidence(const WorkerLogRead& log,
                              const std::map<std::string, DurationMs>& declared_latency) {
  LogEvidence out;
  EvidenceReader reader(out, declared_latency);
  for (const LogRecord& r : log.records) reader.read(r);
  reader.finish();
  return out;
}

}  // namespace rehearse::sim
