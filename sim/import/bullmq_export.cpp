#include "sim/import/bullmq_export.hpp"

#include <map>
#include <utility>

#include <fmt/format.h>

namespace rehearse::sim {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "rehearse-bullmq-export";

Error bad(const std::string& where, const std::string& expected, const json* got) {
  std::string shown = got == nullptr ? "nothing" : got->dump();
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  return make_error(ErrorCode::schema_error, fmt::format("expected {}, got {}", expected, shown),
                    where);
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<std::int64_t> ms_field(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (v == nullptr || !v->is_number_integer() || v->get<std::int64_t>() < 0)
    return bad(where + "/" + key, "milliseconds since the epoch (an integer)", v);
  return v->get<std::int64_t>();
}

Status check_envelope(const json& doc, const std::string& path) {
  if (!doc.is_object()) return bad(path + ":", "an export object", &doc);
  const json* format = member(doc, "format");
  if (format == nullptr || *format != kFormat)
    return bad(path + ":/format", fmt::format("\"{}\" (tools/bullmq-export)", kFormat), format);
  const json* version = member(doc, "version");
  if (version == nullptr || *version != 1)
    return bad(path + ":/version", "1, the export version this reader knows", version);
  const json* queues = member(doc, "queues");
  if (queues == nullptr || !queues->is_array()) return bad(path + ":/queues", "an array", queues);
  return {};
}

Result<BullmqJob> read_job(const json& j, const std::string& queue, const std::string& where) {
  if (!j.is_object()) return bad(where, "a job object", &j);
  BullmqJob job;
  job.queue = queue;
  job.where = where;
  const json* id = member(j, "id");
  if (id == nullptr || !id->is_string()) return bad(where + "/id", "the job id (a string)", id);
  job.id = id->get<std::string>();
  job.name = j.value("name", std::string());
  const json* opts = member(j, "opts");
  if (opts == nullptr || !opts->is_object()) {
    return bad(where + "/opts",
               "the job's options (an object: BullMQ keeps attempts and backoff there)", opts);
  }
  job.opts = *opts;
  auto timestamp = ms_field(j, "timestamp", where);
  if (!timestamp) return std::move(timestamp).error();
  job.timestamp_ms = *timestamp;
  const json* made = member(j, "attemptsMade");
  if (made == nullptr || !made->is_number_integer() || made->get<int>() < 0)
    return bad(where + "/attemptsMade", "a count (an integer >= 0)", made);
  job.attempts_made = made->get<int>();
  job.state = j.value("state", std::string("unknown"));
  if (const json* reason = member(j, "failedReason"); reason != nullptr && reason->is_string())
    job.failed_reason = reason->get<std::string>();
  if (const json* trace = member(j, "stacktrace"); trace != nullptr && trace->is_array()) {
    for (const json& entry : *trace) {
      if (entry.is_string()) job.stacktrace.push_back(entry.get<std::string>());
    }
  }
  return job;
}

// "Error: HTTP 429 Too Many Requests\n    at ...": the message, its first line.
std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.rfind("Error: ", 0) == 0) line = line.substr(7);
  return line;
}

// One entry of the stream, applied to its job's attempts.
void apply_event(BullmqJob& job, const std::string& name, const json& fields, TimeMs t,
                 const std::string& at) {
  std::vector<BullmqAttempt>& attempts = job.attempts;
  if (name == "active") {
    attempts.push_back({t, std::nullopt, false, "", at});
    return;
  }
  if (attempts.empty() || attempts.back().end_ms) return;
  BullmqAttempt& a = attempts.back();
  const bool retried =
      name == "delayed" || (name == "waiting" && fields.value("prev", "") == "active");
  if (!retried && name != "failed" && name != "completed") return;
  a.end_ms = t;
  a.failed = name != "completed";
  a.where = at;
  if (name == "failed") {
    a.failed_reason = fields.value("failedReason", job.failed_reason);
  } else if (retried) {
    std::size_t failures = 0;
    for (const BullmqAttempt& b : attempts) failures += b.failed ? 1 : 0;
    a.failed_reason = failures <= job.stacktrace.size() ? first_line(job.stacktrace[failures - 1])
                                                        : job.failed_reason;
  }
}

// The event stream, entry by entry, into each job's attempts.
Status read_events(const json& events, const std::string& where,
                   std::map<std::string, BullmqJob*>& by_id) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string at = fmt::format("{}/{}", where, i);
    const json& e = events[i];
    if (!e.is_object()) return bad(at, "an event entry", &e);
    auto t = ms_field(e, "at", at);
    if (!t) return t.error();
    const json* event = member(e, "event");
    if (event == nullptr || !event->is_string()) return bad(at + "/event", "a string", event);
    const json* job_id = member(e, "jobId");
    if (job_id == nullptr || !job_id->is_string()) continue;  // queue-wide entries (drained, ...)
    const auto job = by_id.find(job_id->get<std::string>());
    if (job == by_id.end()) continue;  // a job removed since (removeOnComplete)
    apply_event(*job->second, event->get<std::string>(), e.value("fields", json::object()), *t, at);
  }
  return {};
}

Status read_queue(const json& q, const std::string& where, BullmqExport& out) {
  if (!q.is_object()) return bad(where, "a queue object", &q);
  const json* name = member(q, "name");
  if (name == nullptr || !name->is_string()) return bad(where + "/name", "the queue's name", name);
  const json* jobs = member(q, "jobs");
  if (jobs == nullptr || !jobs->is_array()) return bad(where + "/jobs", "an array", jobs);
  const std::size_t first = out.jobs.size();
  for (std::size_t i = 0; i < jobs->size(); ++i) {
    auto job = read_job((*jobs)[i], name->get<std::string>(), fmt::format("{}/jobs/{}", where, i));
    if (!job) return std::move(job).error();
    out.jobs.push_back(std::move(*job));
  }
  std::map<std::string, BullmqJob*> by_id;
  for (std::size_t i = first; i < out.jobs.size(); ++i) by_id[out.jobs[i].id] = &out.jobs[i];
  const json* events = member(q, "events");
  if (events == nullptr || !events->is_array()) return bad(where + "/events", "an array", events);
  return read_events(*events, where + "/events", by_id);
}

}  // namespace

Result<BullmqExport> read_bullmq_export(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::parse_error,
                      fmt::format("not JSON (at byte {}): expected a BullMQ export", e.byte), path);
  }
  if (auto st = check_envelope(doc, path); !st) return st.error();
  BullmqExport out;
  out.bullmq_version = doc.value("bullmq", std::string());
  const json& queues = doc["queues"];
  std::size_t total = 0;
  for (const json& q : queues)
    total += q.is_object() && q.contains("jobs") && q["jobs"].is_array() ? q["jobs"].size() : 0;
  out.jobs.reserve(total);  // by_id keeps pointers into the vector
  for (std::size_t i = 0; i < queues.size(); ++i) {
    if (auto st = read_queue(queues[i], fmt::format("{}:/queues/{}", path, i), out); !st)
      return st.error();
  }
  return out;
}

}  // namespace rehearse::sim
