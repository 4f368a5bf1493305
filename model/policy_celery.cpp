// Celery's retry settings as the core's RetryPolicy (docs/policies.md,
// "celery"): the task decorator's keyword arguments, as JSON or as Python
// writes them (model/python_literal reads `@app.task(...)` into a call whose
// kwargs are read here): autoretry_for / dont_autoretry_for by exception
// name, retry_kwargs as celery.app.autoretry passes them to Task.retry, and
// `expires` as the deadline.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/assert.hpp"
#include "model/error_names.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

// retry_backoff: true is a factor of 1 s, a number is int(max(1, x)) seconds.
Result<DurationMs> read_celery_backoff(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? kSecondMs : DurationMs{0};
  REHEARSE_TRY(x, read_number(v, "/retry_backoff", "retry_backoff (true, false or seconds)", 0.0,
                              static_cast<double>(kBackoffDelayMaxMs / kSecondMs)));
  if (*x == 0.0) return DurationMs{0};
  return static_cast<DurationMs>(std::max(1.0, *x)) * kSecondMs;
}

}  // namespace

namespace {

// An exception class as Python names it ({"$name": "requests.RequestException"}
// from the Python reader) or as a JSON string.
Result<std::string> exception_name(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("$name") && v.at("$name").is_string()) {
    return v.at("$name").get<std::string>();
  }
  return schema(where, fmt::format("expected an exception class, got {}", describe_value(v)));
}

// autoretry_for (the classes retried) less dont_autoretry_for.
Result<FailureClassSet> read_exception_classes(const json& value, SystemPolicy& out) {
  FailureClassSet classes = all_classes_set();
  for (const char* key : {"autoretry_for", "dont_autoretry_for"}) {
    if (!value.contains(key)) continue;
    const json& list = value.at(key);
    const std::string where = child("", key);
    if (!list.is_array()) {
      return schema(where, fmt::format("expected a tuple of exception classes, got {}",
                                       describe_value(list)));
    }
    FailureClassSet named;
    for (std::size_t i = 0; i < list.size(); ++i) {
      REHEARSE_TRY(name, exception_name(list.at(i), child(where, std::to_string(i))));
      const ErrorNameClasses read = classes_of_error_name(*name);
      if (!read.known) {
        out.notes.push_back(
            fmt::format("{} {}: an application's own exception, read as class "
                        "unknown",
                        key, *name));
      }
      named |= read.classes;
    }
    if (std::string_view(key) == "autoretry_for")
      classes = named;
    else
      classes &= ~named;
  }
  return classes;
}

// expires: seconds (a number) or a timedelta, from when the task was sent.
Result<DurationMs> read_expires(const json& v) {
  if (v.is_object() && v.value("$call", "") == "timedelta") {
    double ms = 0.0;
    for (const auto& [unit, x] : v.at("kwargs").items()) {
      const double scale = unit == "days"      ? kDayMs
                           : unit == "hours"   ? kHourMs
                           : unit == "minutes" ? kMinuteMs
                           : unit == "seconds" ? kSecondMs
                                               : -1.0;
      if (scale < 0 || !x.is_number()) {
        return schema(child("/expires", unit),
                      "expected timedelta(days=, hours=, minutes=, "
                      "seconds=) with numbers");
      }
      ms += x.get<double>() * scale;
    }
    if (!(ms >= kSecondMs && ms <= static_cast<double>(kBackoffDelayMaxMs))) {
      return invalid("/expires", "expected a timedelta from 1 second to 366 days");
    }
    return static_cast<DurationMs>(ms);
  }
  REHEARSE_TRY(s, read_number(v, "/expires", "expires (seconds after the task is sent)", 1.0,
                              static_cast<double>(kBackoffDelayMaxMs / kSecondMs)));
  return static_cast<DurationMs>(*s * kSecondMs);
}

// max_retries, overridden by retry_kwargs' (as autoretry passes it to
// Task.retry, where None means "the task's own"); None on the task is no
// limit, which needs `expires`.
Result<int> read_celery_count(const json& value, const json& kwargs, DurationMs deadline,
                              SystemPolicy& out) {
  const bool in_kwargs = kwargs.contains("max_retries") && !kwargs.at("max_retries").is_null();
  const json* m = in_kwargs                       ? &kwargs.at("max_retries")
                  : value.contains("max_retries") ? &value.at("max_retries")
                                                  : nullptr;
  const std::string where = in_kwargs ? "/retry_kwargs/max_retries" : "/max_retries";
  if (m == nullptr) {
    out.defaults.push_back("max_retries: 3");
    return 3;
  }
  if (m->is_null()) {
    if (deadline > 0) return kRetriesUnlimited;
    return invalid(where,
                   "max_retries None retries without limit and no `expires` is given: "
                   "add expires=SECONDS to the task (the deadline) or give a number "
                   "(docs/policies.md, \"Unlimited retries\")");
  }
  REHEARSE_TRY(max, read_integer(*m, where, "max_retries (retries after the first run)", 0,
                                 kRetryCountMax));
  return static_cast<int>(*max);
}

}  // namespace

namespace {

// Without retry_backoff: a fixed countdown, retry_kwargs' countdown or
// default_retry_delay (180 s).
Result<Backoff> read_fixed_countdown(const json& value, const json& kwargs, SystemPolicy& out) {
  Backoff b{BackoffKind::fixed, 180 * kSecondMs, 0.0};
  if (kwargs.contains("countdown")) {
    REHEARSE_TRY(d, read_seconds(kwargs.at("countdown"), "/retry_kwargs/countdown",
                                 "countdown (seconds)", 0));
    b.delay_ms = *d;
  } else if (value.contains("default_retry_delay")) {
    REHEARSE_TRY(d, read_seconds(value.at("default_retry_delay"), "/default_retry_delay",
                                 "default_retry_delay (seconds)", 0));
    b.delay_ms = *d;
  } else {
    out.defaults.push_back("default_retry_delay: 180 (no retry_backoff: a fixed countdown)");
  }
  return b;
}

Result<Backoff> read_celery_curve(const json& value, DurationMs factor, SystemPolicy& out) {
  Backoff b{BackoffKind::exponential, factor, 0.0};
  b.max_delay_ms = 600 * kSecondMs;
  if (value.contains("retry_backoff_max")) {
    REHEARSE_TRY(cap, read_seconds(value.at("retry_backoff_max"), "/retry_backoff_max",
                                   "retry_backoff_max (seconds)", 1));
    b.max_delay_ms = *cap;
  } else {
    out.defaults.push_back("retry_backoff_max: 600 (10m)");
  }
  b.full_jitter = true;
  if (value.contains("retry_jitter")) {
    REHEARSE_TRY(j, read_bool(value.at("retry_jitter"), "/retry_jitter", "retry_jitter"));
    b.full_jitter = *j;
  } else {
    out.defaults.push_back("retry_jitter: true (each countdown drawn from [0, d])");
  }
  return b;
}

Result<json> read_retry_kwargs(const json& value) {
  if (!value.contains("retry_kwargs")) return json::object();
  const json& kwargs = value.at("retry_kwargs");
  if (auto s = check_keys(kwargs, "/retry_kwargs", {"max_retries", "countdown"},
                          "Celery's retry_kwargs");
      !s.ok()) {
    return std::move(s).error();
  }
  return kwargs;
}

}  // namespace

Result<SystemPolicy> convert_celery(const json& written) {
  SystemPolicy out;
  const json& value = unwrap_call(written);
  if (auto s = require_object(value, "Celery"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(
          value,
          {"max_retries", "retry_backoff", "retry_backoff_max", "retry_jitter",
           "default_retry_delay", "autoretry_for", "dont_autoretry_for", "retry_kwargs", "expires"},
          {"acks_late", "time_limit", "soft_time_limit", "rate_limit", "bind", "name", "queue",
           "ignore_result", "base", "serializer", "track_started", "typing", "priority",
           "reject_on_worker_lost", "throws", "shared", "store_errors_even_if_ignored", "trail"},
          "Celery", out);
      !s.ok()) {
    return std::move(s).error();
  }
  REHEARSE_TRY(kwargs, read_retry_kwargs(value));
  DurationMs deadline = 0;
  if (value.contains("expires")) {
    REHEARSE_TRY(e, read_expires(value.at("expires")));
    deadline = *e;
  }
  REHEARSE_TRY(retries, read_celery_count(value, *kwargs, deadline, out));
  DurationMs factor = 0;
  if (value.contains("retry_backoff")) {
    REHEARSE_TRY(f, read_celery_backoff(value.at("retry_backoff")));
    factor = *f;
  }
  REHEARSE_TRY(backoff, factor == 0 ? read_fixed_countdown(value, *kwargs, out)
                                    : read_celery_curve(value, factor, out));
  REHEARSE_TRY(classes, read_exception_classes(value, out));
  out.policy = system_policy(PolicyForm::celery, *retries, *backoff);
  out.policy.deadline_ms = deadline;
  out.policy.retryable_classes = *classes;
  if (auto problem = unlimited_policy_problem(out.policy); !problem.empty()) {
    return invalid("/max_retries", problem);
  }
  return out;
}

}  // namespace rehearse::policy_forms_detail
