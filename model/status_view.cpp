#include "model/status_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/assert.hpp"
#include "model/retry_policy.hpp"
#include "model/view_merge.hpp"

namespace rehearse {

using nlohmann::json;

namespace {

constexpr std::size_t kErrorTextMax = 120;  // a status line, not a log

std::string clip(std::string text) {
  if (text.size() > kErrorTextMax) text = text.substr(0, kErrorTextMax - 3) + "...";
  REHEARSE_ASSERT_LE(text.size(), kErrorTextMax);
  return text;
}

std::string instant_or_dash(const std::optional<TimeMs>& t) { return t ? format_instant(*t) : "-"; }

json instant_or_null(const std::optional<TimeMs>& t) {
  return t ? json(format_instant(*t)) : json(nullptr);
}

StatusJobView view_of(const StatusJob& job) {
  StatusJobView v;
  v.job_id = job.state.job_id;
  v.state = job.state;
  // The policy given is the one in force now: its verdict wins over what the
  // state recorded at the scheduler's last boot (a fixed policy clears it, a
  // newly broken one shows at once, and a lowered max shows as an overrun).
  if (job.policy.ok()) {
    v.policy = describe(*job.policy);
    v.state.retry_limit = job.policy->max_retries;
    v.state.policy_error.clear();
  } else {
    v.policy = "invalid";
    v.policy_error = job.policy.error().describe();
    v.state.policy_error = v.policy_error;  // the badge says policy_invalid
    v.state.retry_limit = 0;                // never retried
  }
  v.badge = badge(v.state);
  v.limit_overrun = v.state.retry_count > v.state.retry_limit;
  return v;
}

void sort_by_id(std::vector<StatusJobView>& views) {
  std::sort(views.begin(), views.end(),
            [](const StatusJobView& a, const StatusJobView& b) { return a.job_id < b.job_id; });
}

json job_json(const StatusJobView& v) {
  const JobState& s = v.state;
  json j = json::object();
  j["job_id"] = v.job_id;
  j["badge"] = v.badge;
  j["retry_status"] = to_string(s.retry_status);
  j["failure_class"] = s.failure_class ? json(to_string(*s.failure_class)) : json(nullptr);
  j["retry_count"] = s.retry_count;
  j["retry_limit"] = s.retry_limit == kRetriesUnlimited ? json("unlimited") : json(s.retry_limit);
  j["next_retry_at"] = instant_or_null(s.next_retry_at);
  j["next_action"] = to_string(s.next_action);
  j["next_run_at"] = instant_or_null(s.next_run_at);
  j["last_error"] = s.last_error;
  j["updated_at"] = instant_or_null(s.updated_at);
  j["policy"] = v.policy;
  j["policy_error"] = v.policy_error.empty() ? json(nullptr) : json(v.policy_error);
  j["limit_overrun"] = v.limit_overrun;
  j["slots_in_flight"] = s.slots.size();
  j["misfire_runs"] = s.misfire_runs;
  j["coalesced_slots"] = s.coalesced_slots;
  j["max_lateness_ms"] = s.max_lateness_ms;
  if (!v.sources.empty()) j["sources"] = v.sources;
  return j;
}

std::string job_line(const StatusJobView& v) {
  const JobState& s = v.state;
  std::string line = fmt::format("  {}  {}  next_action={} next_run_at={} next_retry_at={}",
                                 v.job_id, v.badge, to_string(s.next_action),
                                 instant_or_dash(s.next_run_at), instant_or_dash(s.next_retry_at));
  if (s.slots.size() > 1) line += fmt::format(" slots_in_flight={}", s.slots.size());
  if (s.misfire_runs > 0) {
    line += fmt::format(" misfires={} coalesced={} max_lateness={}", s.misfire_runs,
                        s.coalesced_slots, format_duration(s.max_lateness_ms));
  }
  line += "\n    policy: " + v.policy;
  if (!s.last_error.empty()) line += "\n    last_error: " + clip(s.last_error);
  return line;
}

void render_group(std::string& out, const char* title, const std::vector<StatusJobView>& views) {
  out += fmt::format("{} ({}):\n", title, views.size());
  for (const StatusJobView& v : views) out += job_line(v) + "\n";
}

}  // namespace

StatusReport build_status(const std::vector<StatusJob>& jobs,
                          std::optional<std::string> state_corrupt, const StatusNotices& notices) {
  StatusReport report;
  report.state_corrupt = std::move(state_corrupt);
  report.store_notices = notices.store_notices;
  report.dropped_retries = notices.dropped_retries;
  for (const StatusJob& job : jobs) {
    StatusJobView v = view_of(job);
    if (!v.policy_error.empty()) report.policy_errors.push_back({v.job_id, v.policy_error});
    if (v.limit_overrun) report.limit_overruns.push_back(v.job_id);
    switch (v.state.retry_status) {
      case RetryStatus::retrying: report.retrying.push_back(std::move(v)); break;
      case RetryStatus::retry_exhausted: report.exhausted.push_back(std::move(v)); break;
      case RetryStatus::failed: report.failed.push_back(std::move(v)); break;
      case RetryStatus::ok: report.ok.push_back(std::move(v)); break;
    }
  }
  for (auto* group : {&report.retrying, &report.exhausted, &report.failed, &report.ok}) {
    sort_by_id(*group);
  }
  std::sort(report.policy_errors.begin(), report.policy_errors.end(),
            [](const StatusViewError& a, const StatusViewError& b) { return a.job_id < b.job_id; });
  std::sort(report.limit_overruns.begin(), report.limit_overruns.end());
  return report;
}

StatusReport build_status_from_stores(const std::vector<StatusSource>& sources,
                                      std::optional<std::string> state_corrupt) {
  std::vector<StatusJob> jobs;
  std::vector<std::map<std::string, std::string>> origins;
  std::vector<StatusViewError> errors;
  for (const StatusSource& source : sources) {
    auto merged = merge_runtime_fields(source.jobs_json_record, source.jobs_state_record);
    if (!merged.ok()) {
      errors.push_back({source.job_id, merged.error().describe()});
      continue;
    }
    auto state = decode_runtime_fields(source.job_id, merged->fields);
    if (!state.ok()) {
      errors.push_back({source.job_id, state.error().describe()});
      continue;
    }
    StatusJob job;
    job.state = std::move(*state);
    job.policy = source.policy;
    jobs.push_back(std::move(job));
    std::map<std::string, std::string> origin;
    for (const auto& [field, store] : merged->source) origin[field] = to_string(store);
    origins.push_back(std::move(origin));
  }
  // Attach each field's origin to its view (job ids are unique per source list).
  std::map<std::string, std::map<std::string, std::string>> by_id;
  for (std::size_t i = 0; i < jobs.size(); ++i) by_id[jobs[i].state.job_id] = origins[i];
  StatusReport report = build_status(jobs, std::move(state_corrupt));
  for (auto* group : {&report.retrying, &report.exhausted, &report.failed, &report.ok}) {
    for (StatusJobView& v : *group) v.sources = by_id[v.job_id];
  }
  std::sort(errors.begin(), errors.end(),
            [](const StatusViewError& a, const StatusViewError& b) { return a.job_id < b.job_id; });
  report.view_errors = std::move(errors);
  return report;
}

std::string render_text(const StatusReport& report) {
  std::string out;
  if (report.state_corrupt) {
    out += "state_corrupt: the state store cannot be trusted (fail closed: no retries)\n";
    out += "  " + clip(*report.state_corrupt) + "\n";
  }
  for (const std::string& notice : report.store_notices) {
    out += "state_damage: " + clip(notice) + "\n";
  }
  if (!report.dropped_retries.empty()) {
    out += fmt::format("retries dropped ({}):\n", report.dropped_retries.size());
    for (const DroppedRetry& d : report.dropped_retries) {
      out += fmt::format("  {}  slot {}  attempt {}  dropped at {}  {}\n", d.job_id,
                         format_instant(d.slot), d.attempt, format_instant(d.at), clip(d.reason));
    }
  }
  out += fmt::format("jobs: {} (retrying {}, retry_exhausted {}, failed {}, ok {})\n",
                     report.job_count(), report.retrying.size(), report.exhausted.size(),
                     report.failed.size(), report.ok.size());
  render_group(out, "retrying", report.retrying);
  render_group(out, "retry_exhausted", report.exhausted);
  render_group(out, "failed", report.failed);
  render_group(out, "ok", report.ok);
  if (!report.policy_errors.empty()) {
    out += fmt::format("policy_invalid ({}):\n", report.policy_errors.size());
    for (const StatusViewError& e : report.policy_errors) {
      out += fmt::format("  {}  {}\n", e.job_id, clip(e.error));
    }
  }
  if (!report.limit_overruns.empty()) {
    out += fmt::format("limit overrun ({}):", report.limit_overruns.size());
    for (const std::string& id : report.limit_overruns) out += " " + id;
    out += "\n";
  }
  if (!report.view_errors.empty()) {
    out += fmt::format("view errors ({}):\n", report.view_errors.size());
    for (const StatusViewError& e : report.view_errors) {
      out += fmt::format("  {}  {}\n", e.job_id, clip(e.error));
    }
  }
  return out;
}

json to_json(const StatusReport& report) {
  json j = json::object();
  j["state_corrupt"] = report.state_corrupt ? json(*report.state_corrupt) : json(nullptr);
  j["store_notices"] = report.store_notices;
  json dropped = json::array();
  for (const DroppedRetry& d : report.dropped_retries) {
    dropped.push_back({{"job_id", d.job_id},
                       {"slot", format_instant(d.slot)},
                       {"attempt", d.attempt},
                       {"at", format_instant(d.at)},
                       {"reason", d.reason}});
  }
  j["dropped_retries"] = std::move(dropped);
  j["counts"] = {{"jobs", report.job_count()},
                 {"retrying", report.retrying.size()},
                 {"retry_exhausted", report.exhausted.size()},
                 {"failed", report.failed.size()},
                 {"ok", report.ok.size()},
                 {"policy_invalid", report.policy_errors.size()},
                 {"limit_overrun", report.limit_overruns.size()},
                 {"view_errors", report.view_errors.size()}};
  auto group = [](const std::vector<StatusJobView>& views) {
    json a = json::array();
    for (const StatusJobView& v : views) a.push_back(job_json(v));
    return a;
  };
  j["retrying"] = group(report.retrying);
  j["retry_exhausted"] = group(report.exhausted);
  j["failed"] = group(report.failed);
  j["ok"] = group(report.ok);
  auto errors = [](const std::vector<StatusViewError>& list) {
    json a = json::array();
    for (const StatusViewError& e : list) a.push_back({{"job_id", e.job_id}, {"error", e.error}});
    return a;
  };
  j["policy_invalid"] = errors(report.policy_errors);
  j["limit_overrun"] = report.limit_overruns;
  j["view_errors"] = errors(report.view_errors);
  return j;
}

}  // namespace rehearse
