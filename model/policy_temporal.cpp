// Temporal's retry settings as the core's RetryPolicy (docs/policies.md,
// "temporal"). Read as each SDK writes them: the TypeScript SDK's camelCase
// keys with `ms` strings ('1 second') or millisecond numbers, the Go SDK's
// exported field names, the Python SDK's snake_case keys and timedelta(...)
// (after model/python_literal has read the call); either the RetryPolicy
// alone or the activity options around it, whose scheduleToCloseTimeout is
// the deadline of every retry.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "model/assert.hpp"
#include "model/error_names.hpp"
#include "model/ms_duration.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

// The activity options that bear on retries (the deadline) or that Temporal
// knows and that do not.
constexpr std::string_view kDeadlineKey = "scheduleToCloseTimeout";

// snake_case (Python) and exported Go names, spelled as the TypeScript SDK
// does: one reading for all three.
const std::array<std::pair<std::string_view, std::string_view>, 16> kAliases{{
    {"initial_interval", "initialInterval"},
    {"backoff_coefficient", "backoffCoefficient"},
    {"maximum_interval", "maximumInterval"},
    {"maximum_attempts", "maximumAttempts"},
    {"non_retryable_error_types", "nonRetryableErrorTypes"},
    {"InitialInterval", "initialInterval"},
    {"BackoffCoefficient", "backoffCoefficient"},
    {"MaximumInterval", "maximumInterval"},
    {"MaximumAttempts", "maximumAttempts"},
    {"NonRetryableErrorTypes", "nonRetryableErrorTypes"},
    {"retry_policy", "retry"},
    {"RetryPolicy", "retry"},
    {"schedule_to_close_timeout", "scheduleToCloseTimeout"},
    {"ScheduleToCloseTimeout", "scheduleToCloseTimeout"},
    {"start_to_close_timeout", "startToCloseTimeout"},
    {"StartToCloseTimeout", "startToCloseTimeout"},
}};

// Keys renamed to the TypeScript spelling; a key spelled two ways is an error.
Result<json> canonical_keys(const json& value, const std::string& where) {
  json out = json::object();
  for (const auto& [key, v] : unwrap_call(value).items()) {
    std::string name = key;
    for (const auto& [alias, canonical] : kAliases) {
      if (key == alias) name = canonical;
    }
    if (out.contains(name)) {
      return schema(child(where, key),
                    fmt::format("\"{}\" given twice (as \"{}\" too)", name, key));
    }
    out[name] = v;
  }
  return out;
}

// Python's timedelta(days=, seconds=, microseconds=, milliseconds=, minutes=,
// hours=, weeks=), summed as Python does, in whole milliseconds.
Result<DurationMs> read_timedelta(const json& call, const std::string& where) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"weeks", 7.0 * kDayMs}, {"days", kDayMs},       {"hours", kHourMs},
      {"minutes", kMinuteMs},  {"seconds", kSecondMs}, {"milliseconds", 1.0},
      {"microseconds", 0.001}};
  if (!call.at("args").empty()) {
    return schema(where,
                  "timedelta(...) with positional arguments: write its keywords "
                  "(timedelta(seconds=30))");
  }
  double ms = 0.0;
  for (const auto& [key, v] : call.at("kwargs").items()) {
    const auto unit = std::find_if(std::begin(kUnits), std::end(kUnits),
                                   [&k = key](const auto& u) { return u.first == k; });
    if (unit == std::end(kUnits) || !v.is_number()) {
      return schema(child(where, key),
                    "expected timedelta's keywords (weeks, days, hours, "
                    "minutes, seconds, milliseconds) with numbers");
    }
    ms += v.get<double>() * unit->second;
  }
  if (!(ms >= 0.0 && ms <= static_cast<double>(kBackoffDelayMaxMs)) || ms != std::floor(ms)) {
    return invalid(where, "expected a timedelta of whole milliseconds from 0 to 366 days");
  }
  return static_cast<DurationMs>(ms);
}

// A duration as any SDK writes it: ms numbers, `ms` strings ('1 second'),
// Go/protobuf strings ("30s", "1h30m"), Python timedelta(...).
Result<DurationMs> read_temporal_duration(const json& value, const std::string& where) {
  Result<DurationMs> d = make_error(ErrorCode::invalid_argument, "");
  if (value.is_object() && value.value("$call", "") == "timedelta") {
    d = read_timedelta(value, where);
  } else if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    d = parse_duration(text);
    if (!d.ok()) d = parse_ms_duration(text);
    if (!d.ok()) {
      return invalid(where, fmt::format("expected a duration such as '1 second', '30s' or "
                                        "'1h30m', got {}: {}",
                                        describe_value(value), d.error().message));
    }
  } else {
    d = read_duration(value, where);
  }
  if (!d.ok()) return d;
  if (*d <= 0) return invalid(where, "expected an interval above 0");
  if (*d > kBackoffDelayMaxMs) {
    return invalid(where, fmt::format("expected at most {}", format_duration(kBackoffDelayMaxMs)));
  }
  return d;
}

}  // namespace

namespace {

// nonRetryableErrorTypes: every class but those the names stand for.
Result<FailureClassSet> read_non_retryable(const json& value, const std::string& where,
                                           SystemPolicy& out) {
  if (!value.is_array()) {
    return schema(where, fmt::format("expected a list of error type names, got {}",
                                     describe_value(value)));
  }
  FailureClassSet retried = all_classes_set();
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& name = value.at(i);
    if (!name.is_string()) {
      return schema(child(where, std::to_string(i)),
                    fmt::format("expected an error type name, got {}", describe_value(name)));
    }
    const ErrorNameClasses read = classes_of_error_name(name.get<std::string>());
    if (!read.known) {
      out.notes.push_back(
          fmt::format("nonRetryableErrorTypes \"{}\": an application's own "
                      "error, read as class unknown",
                      name.get<std::string>()));
    }
    retried &= ~read.classes;
  }
  return retried;
}

// maximumAttempts: the first run included; 0 (Temporal's default) is no
// limit, which needs the activity's scheduleToCloseTimeout.
Result<int> read_attempts(const json& policy, DurationMs deadline_ms, SystemPolicy& out) {
  std::int64_t attempts = 0;
  if (policy.contains("maximumAttempts")) {
    REHEARSE_TRY(a, read_integer(policy.at("maximumAttempts"), "/maximumAttempts",
                                 "maximumAttempts (the first run included; 0: unlimited)", 0,
                                 kRetryCountMax + 1));
    attempts = *a;
  } else {
    out.defaults.push_back("maximumAttempts: 0 (unlimited, until scheduleToCloseTimeout)");
  }
  if (attempts > 0) return static_cast<int>(attempts - 1);
  if (deadline_ms <= 0) {
    return schema("/maximumAttempts",
                  "maximumAttempts 0 (Temporal's default) retries until the activity's "
                  "scheduleToCloseTimeout, and none is given: write the activity options "
                  "{scheduleToCloseTimeout: '1 hour', retry: {...}} or a maximumAttempts "
                  "above 0 (docs/policies.md, \"Unlimited retries\")");
  }
  return kRetriesUnlimited;
}

Result<Backoff> read_temporal_backoff(const json& policy, SystemPolicy& out) {
  Backoff b{BackoffKind::exponential, kSecondMs, 0.0};
  if (policy.contains("initialInterval")) {
    REHEARSE_TRY(initial, read_temporal_duration(policy.at("initialInterval"), "/initialInterval"));
    b.delay_ms = *initial;
  } else {
    out.defaults.push_back("initialInterval: 1s");
  }
  if (policy.contains("backoffCoefficient")) {
    REHEARSE_TRY(coefficient, read_number(policy.at("backoffCoefficient"), "/backoffCoefficient",
                                          "backoffCoefficient", 1.0, 1000.0));
    b.factor = *coefficient;
  } else {
    out.defaults.push_back("backoffCoefficient: 2");
  }
  if (policy.contains("maximumInterval")) {
    REHEARSE_TRY(cap, read_temporal_duration(policy.at("maximumInterval"), "/maximumInterval"));
    if (*cap < b.delay_ms) {
      return invalid("/maximumInterval",
                     "expected a maximumInterval no shorter than initialInterval (Temporal "
                     "refuses it)");
    }
    b.max_delay_ms = *cap;
  } else {
    b.max_delay_ms = std::min(100 * b.delay_ms, kBackoffDelayMaxMs);
    out.defaults.push_back(fmt::format("maximumInterval: 100 x initialInterval = {}",
                                       format_duration(b.max_delay_ms)));
  }
  return b;
}

Result<SystemPolicy> convert_retry_policy(const json& policy, DurationMs deadline_ms,
                                          SystemPolicy out) {
  if (auto s = require_object(policy, "Temporal RetryPolicy"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(policy,
                         {"initialInterval", "backoffCoefficient", "maximumInterval",
                          "maximumAttempts", "nonRetryableErrorTypes"},
                         {}, "Temporal", out);
      !s.ok()) {
    return std::move(s).error();
  }
  REHEARSE_TRY(retries, read_attempts(policy, deadline_ms, out));
  REHEARSE_TRY(backoff, read_temporal_backoff(policy, out));
  out.policy = system_policy(PolicyForm::temporal, *retries, *backoff);
  out.policy.deadline_ms = deadline_ms;
  if (policy.contains("nonRetryableErrorTypes")) {
    REHEARSE_TRY(classes, read_non_retryable(policy.at("nonRetryableErrorTypes"),
                                             "/nonRetryableErrorTypes", out));
    out.policy.retryable_classes = *classes;
  }
  return out;
}

}  // namespace

Result<SystemPolicy> convert_temporal(const json& written) {
  if (auto s = require_object(unwrap_call(written), "Temporal"); !s.ok()) {
    return std::move(s).error();
  }
  REHEARSE_TRY(value, canonical_keys(written, ""));
  if (!value->contains("retry")) return convert_retry_policy(*value, 0, SystemPolicy{});
  // The activity options around the policy.
  SystemPolicy out;
  if (auto s = sort_keys(*value, {"retry", kDeadlineKey},
                         {"startToCloseTimeout", "scheduleToStartTimeout", "heartbeatTimeout",
                          "taskQueue", "cancellationType", "activityId", "summary",
                          "versioningIntent", "allowEagerDispatch"},
                         "Temporal activity options", out);
      !s.ok()) {
    return std::move(s).error();
  }
  DurationMs deadline = 0;
  if (value->contains(kDeadlineKey)) {
    REHEARSE_TRY(d, read_temporal_duration(value->at(kDeadlineKey), "/scheduleToCloseTimeout"));
    deadline = *d;
  }
  REHEARSE_TRY(retry, canonical_keys(value->at("retry"), "/retry"));
  auto converted = convert_retry_policy(*retry, deadline, std::move(out));
  if (!converted.ok()) return rebased(std::move(converted).error(), "/retry");
  return converted;
}

}  // namespace rehearse::policy_forms_detail
