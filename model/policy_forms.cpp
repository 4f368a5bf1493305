// Conversions of other systems' retry policies (docs/policies.md has each
// formula with its source). Every converter reads the system's keys
// strictly, applies the system's defaults for what is absent, and fills a
// Backoff whose delay before retry n is the system's own.
#include "model/policy_forms.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "model/policy_json.hpp"

namespace rehearse {

using nlohmann::json;
using namespace policy_json;

namespace {

// ---------------------------------------------------------------- readers

// Keys of `value` outside `retry_keys`: those in `ignorable` go to
// out.ignored, anything else is an error naming the keys the system knows.
Status sort_keys(const json& value, std::initializer_list<std::string_view> retry_keys,
                 std::initializer_list<std::string_view> ignorable, std::string_view title,
                 SystemPolicy& out) {
  for (const auto& [key, unused] : value.items()) {
    (void)unused;
    // (An init-capture: clang 14 cannot capture a structured binding.)
    const auto is = [&k = key](std::initializer_list<std::string_view> list) {
      return std::find(list.begin(), list.end(), k) != list.end();
    };
    if (is(retry_keys)) continue;
    if (is(ignorable)) {
      out.ignored.push_back(key);
      continue;
    }
    std::string list;
    for (const auto k : retry_keys) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    return schema(child("", key),
                  fmt::format("unknown key \"{}\" in a {} policy: expected {} (or a key {} "
                              "knows that does not bear on retries)",
                              key, title, list, title));
  }
  return {};
}

Status require_object(const json& value, std::string_view title) {
  if (value.is_object()) return {};
  return schema("",
                fmt::format("expected a {} policy object, got {}", title, describe_value(value)));
}

// A JSON number (integer or not) in [min, max].
Result<double> read_number(const json& value, const std::string& where, std::string_view what,
                           double min, double max) {
  const auto expected = fmt::format("expected {}: a number from {} to {}", what, min, max);
  if (!value.is_number()) {
    return schema(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  const double v = value.get<double>();
  if (!(v >= min && v <= max)) {
    return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  return v;
}

Result<DurationMs> read_seconds(const json& value, const std::string& where, std::string_view what,
                                std::int64_t min) {
  auto s = read_integer(value, where, what, min, kBackoffDelayMaxMs / kSecondMs);
  if (!s.ok()) return std::move(s).error();
  return *s * kSecondMs;
}

Result<bool> read_bool(const json& value, const std::string& where, std::string_view what) {
  if (!value.is_boolean()) {
    return schema(where,
                  fmt::format("expected {} (true or false), got {}", what, describe_value(value)));
  }
  return value.get<bool>();
}

RetryPolicy system_policy(PolicyForm form, int retries, Backoff backoff) {
  REHEARSE_ASSERT_GE(retries, 0);
  REHEARSE_ASSERT_GE(backoff.delay_ms, 0);
  RetryPolicy out;
  out.form = form;
  out.max_retries = retries;
  out.backoff = backoff;
  out.retryable_classes = all_classes_set();  // every system retries any error by default
  out.budget = BudgetScope::per_slot;         // their counts are per job execution
  return out;
}

#define REHEARSE_TRY(var, expr) \
  auto var = (expr);            \
  if (!var.ok()) return std::move(var).error()

// ---------------------------------------------------------------- BullMQ

const std::initializer_list<std::string_view> kBullmqJobOptions{"removeOnComplete",
                                                                "removeOnFail",
                                                                "priority",
                                                                "delay",
                                                                "jobId",
                                                                "lifo",
                                                                "timestamp",
                                                                "repeat",
                                                                "stackTraceLimit",
                                                                "keepLogs",
                                                                "sizeLimit",
                                                                "parent",
                                                                "prevMillis",
                                                                "failParentOnFailure",
                                                                "ignoreDependencyOnFailure",
                                                                "removeDependencyOnFailure",
                                                                "continueParentOnFailure",
                                                                "deduplication",
                                                                "debounce",
                                                                "telemetry",
                                                                "repeatJobKey"};

Result<SystemPolicy> convert_bullmq(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "BullMQ"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(value, {"attempts", "backoff"}, kBullmqJobOptions, "BullMQ", out);
      !s.ok()) {
    return std::move(s).error();
  }
  json native = json::object();
  native["attempts"] = value.contains("attempts") ? value.at("attempts") : json(1);
  if (!value.contains("attempts")) out.defaults.push_back("attempts: 1 (no retries)");
  if (value.contains("backoff")) {
    const json& b = value.at("backoff");
    if (b.is_object()) {
      if (auto s = check_keys(b, "/backoff", {"type", "delay", "jitter"}, "a BullMQ backoff");
          !s.ok()) {
        return std::move(s).error();
      }
      if (b.contains("type") && b.at("type").is_string() &&
          b.at("type").get<std::string>() != "fixed" &&
          b.at("type").get<std::string>() != "exponential") {
        return invalid("/backoff/type",
                       fmt::format("BullMQ's built-in backoffs are \"fixed\" and "
                                   "\"exponential\", got {} (a custom strategy is code, not data)",
                                   describe_value(b.at("type"))));
      }
    }
    native["backoff"] = b;
  } else {
    out.defaults.push_back("backoff: none (retries run at once)");
  }
  REHEARSE_TRY(policy, parse_retry_policy(native));
  out.policy = *policy;
  return out;
}

// ---------------------------------------------------------------- Temporal

Result<DurationMs> read_temporal_duration(const json& value, const std::string& where) {
  auto d = read_duration(value, where);
  if (!d.ok()) return std::move(d).error();
  if (*d <= 0) return invalid(where, "expected an interval above 0");
  return *d;
}

Result<SystemPolicy> convert_temporal(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "Temporal"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(value,
                         {"initialInterval", "backoffCoefficient", "maximumInterval",
                          "maximumAttempts", "nonRetryableErrorTypes"},
                         {}, "Temporal", out);
      !s.ok()) {
    return std::move(s).error();
  }
  if (value.contains("nonRetryableErrorTypes")) {
    out.ignored.push_back("nonRetryableErrorTypes (error types are code; use retryable_classes)");
  }
  if (!value.contains("maximumAttempts")) {
    return schema("/maximumAttempts",
                  "missing maximumAttempts: Temporal's default (0) retries without limit until "
                  "a timeout; give the number of attempts, the first run included");
  }
  REHEARSE_TRY(attempts, read_integer(value.at("maximumAttempts"), "/maximumAttempts",
                                      "maximumAttempts (the first run included; Temporal's 0, "
                                      "unlimited, cannot be planned)",
                                      1, kRetryCountMax + 1));
  Backoff b{BackoffKind::exponential, kSecondMs, 0.0};
  if (value.contains("initialInterval")) {
    REHEARSE_TRY(initial, read_temporal_duration(value.at("initialInterval"), "/initialInterval"));
    b.delay_ms = *initial;
  } else {
    out.defaults.push_back("initialInterval: 1s");
  }
  if (value.contains("backoffCoefficient")) {
    REHEARSE_TRY(coefficient, read_number(value.at("backoffCoefficient"), "/backoffCoefficient",
                                          "backoffCoefficient", 1.0, 1000.0));
    b.factor = *coefficient;
  } else {
    out.defaults.push_back("backoffCoefficient: 2");
  }
  if (value.contains("maximumInterval")) {
    REHEARSE_TRY(cap, read_temporal_duration(value.at("maximumInterval"), "/maximumInterval"));
    if (*cap < b.delay_ms) {
      return invalid("/maximumInterval",
                     "expected a maximumInterval no shorter than "
                     "initialInterval (Temporal refuses it)");
    }
    b.max_delay_ms = *cap;
  } else {
    b.max_delay_ms = std::min(100 * b.delay_ms, kBackoffDelayMaxMs);
    out.defaults.push_back(fmt::format("maximumInterval: 100 x initialInterval = {}",
                                       format_duration(b.max_delay_ms)));
  }
  out.policy = system_policy(PolicyForm::temporal, static_cast<int>(*attempts - 1), b);
  return out;
}

// ---------------------------------------------------------------- Step Functions

Result<SystemPolicy> convert_stepfunctions(const json& input) {
  SystemPolicy out;
  const json* value = &input;
  if (input.is_array()) {
    if (input.size() != 1) {
      return schema("", fmt::format("expected one retrier (a Retry array of length 1 or the "
                                    "retrier object), got {} retriers: pick the one to explain",
                                    input.size()));
    }
    value = &input.at(0);
  }
  const std::string base = input.is_array() ? "/0" : "";
  if (auto s = require_object(*value, "Step Functions retrier"); !s.ok()) {
    return std::move(s).error();
  }
  if (auto s = sort_keys(*value,
                         {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
                          "MaxDelaySeconds", "JitterStrategy"},
                         {}, "Step Functions", out);
      !s.ok()) {
    Error e = std::move(s).error();
    e.where = base + e.where;
    return e;
  }
  if (value->contains("ErrorEquals")) {
    out.ignored.push_back("ErrorEquals (error names are the state's; use retryable_classes)");
  }
  const auto at = [&](const char* key) { return base + "/" + key; };
  Backoff b{BackoffKind::exponential, kSecondMs, 0.0};
  int retries = 3;
  if (value->contains("IntervalSeconds")) {
    REHEARSE_TRY(interval, read_seconds(value->at("IntervalSeconds"), at("IntervalSeconds"),
                                        "IntervalSeconds (whole seconds)", 1));
    b.delay_ms = *interval;
  } else {
    out.defaults.push_back("IntervalSeconds: 1");
  }
  if (value->contains("MaxAttempts")) {
    REHEARSE_TRY(max, read_integer(value->at("MaxAttempts"), at("MaxAttempts"),
                                   "MaxAttempts (retries; 0 never retries)", 0, kRetryCountMax));
    retries = static_cast<int>(*max);
  } else {
    out.defaults.push_back("MaxAttempts: 3");
  }
  if (value->contains("BackoffRate")) {
    REHEARSE_TRY(rate, read_number(value->at("BackoffRate"), at("BackoffRate"), "BackoffRate", 1.0,
                                   1000.0));
    b.factor = *rate;
  } else {
    out.defaults.push_back("BackoffRate: 2.0");
  }
  if (value->contains("MaxDelaySeconds")) {
    REHEARSE_TRY(cap, read_seconds(value->at("MaxDelaySeconds"), at("MaxDelaySeconds"),
                                   "MaxDelaySeconds (whole seconds)", 1));
    b.max_delay_ms = *cap;
  }
  if (value->contains("JitterStrategy")) {
    const json& j = value->at("JitterStrategy");
    if (!j.is_string() || (j != "FULL" && j != "NONE")) {
      return invalid(at("JitterStrategy"),
                     fmt::format("expected \"FULL\" or \"NONE\", got {}", describe_value(j)));
    }
    b.full_jitter = j == "FULL";
  }
  out.policy = system_policy(PolicyForm::stepfunctions, retries, b);
  return out;
}

// ---------------------------------------------------------------- Sidekiq

Result<SystemPolicy> convert_sidekiq(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "Sidekiq"); !s.ok()) return std::move(s).error();
  if (auto s =
          sort_keys(value, {"retry"}, {"queue", "backtrace", "dead", "tags", "pool", "retry_queue"},
                    "Sidekiq", out);
      !s.ok()) {
    return std::move(s).error();
  }
  int retries = 25;
  if (!value.contains("retry")) {
    out.defaults.push_back("retry: 25");
  } else if (value.at("retry").is_boolean()) {
    retries = value.at("retry").get<bool>() ? 25 : 0;
  } else {
    REHEARSE_TRY(count,
                 read_integer(value.at("retry"), "/retry",
                              "retry (true, false or the number of retries)", 0, kRetryCountMax));
    retries = static_cast<int>(*count);
  }
  // (count ** 4) + 15 + rand(10) * (count + 1) seconds, count = n - 1.
  Backoff b{BackoffKind::polynomial, 15 * kSecondMs, 0.0};
  b.exponent = 4;
  b.unit_ms = kSecondMs;
  b.additive_steps = 10;
  out.policy = system_policy(PolicyForm::sidekiq, retries, b);
  return out;
}

// ---------------------------------------------------------------- Celery

// retry_backoff: true is a factor of 1 s, a number is int(max(1, x)) seconds.
Result<DurationMs> read_celery_backoff(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? kSecondMs : DurationMs{0};
  REHEARSE_TRY(x, read_number(v, "/retry_backoff", "retry_backoff (true, false or seconds)", 0.0,
                              static_cast<double>(kBackoffDelayMaxMs / kSecondMs)));
  if (*x == 0.0) return DurationMs{0};
  return static_cast<DurationMs>(std::max(1.0, *x)) * kSecondMs;
}

Result<SystemPolicy> convert_celery(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "Celery"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(value,
                         {"max_retries", "retry_backoff", "retry_backoff_max", "retry_jitter",
                          "default_retry_delay", "autoretry_for", "dont_autoretry_for"},
                         {"acks_late", "time_limit", "soft_time_limit", "rate_limit", "bind",
                          "name", "queue", "ignore_result"},
                         "Celery", out);
      !s.ok()) {
    return std::move(s).error();
  }
  for (const char* k : {"autoretry_for", "dont_autoretry_for"}) {
    if (value.contains(k))
      out.ignored.push_back(
          fmt::format("{} (exception classes are code; use retryable_classes)", k));
  }
  int retries = 3;
  if (value.contains("max_retries")) {
    if (value.at("max_retries").is_null()) {
      return invalid("/max_retries", "max_retries None retries without limit: give a number");
    }
    REHEARSE_TRY(max, read_integer(value.at("max_retries"), "/max_retries",
                                   "max_retries (retries after the first run)", 0, kRetryCountMax));
    retries = static_cast<int>(*max);
  } else {
    out.defaults.push_back("max_retries: 3");
  }
  DurationMs factor = 0;
  if (value.contains("retry_backoff")) {
    REHEARSE_TRY(f, read_celery_backoff(value.at("retry_backoff")));
    factor = *f;
  }
  Backoff b{BackoffKind::fixed, 180 * kSecondMs, 0.0};
  if (factor == 0) {
    if (value.contains("default_retry_delay")) {
      REHEARSE_TRY(d, read_seconds(value.at("default_retry_delay"), "/default_retry_delay",
                                   "default_retry_delay (seconds)", 0));
      b.delay_ms = *d;
    } else {
      out.defaults.push_back("default_retry_delay: 180 (no retry_backoff: a fixed countdown)");
    }
    out.policy = system_policy(PolicyForm::celery, retries, b);
    return out;
  }
  b = Backoff{BackoffKind::exponential, factor, 0.0};
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
  out.policy = system_policy(PolicyForm::celery, retries, b);
  return out;
}

// ---------------------------------------------------------------- Kubernetes

Result<SystemPolicy> convert_k8s(const json& input) {
  SystemPolicy out;
  if (auto s = require_object(input, "Kubernetes Job"); !s.ok()) return std::move(s).error();
  // A whole Job manifest: read its spec.
  const bool manifest = input.contains("kind") && input.at("kind") == "Job";
  const json& value = manifest && input.contains("spec") ? input.at("spec") : input;
  const std::string base = manifest ? "/spec" : "";
  if (manifest) {
    if (auto s = sort_keys(input, {"spec"}, {"apiVersion", "kind", "metadata", "status"},
                           "Kubernetes Job", out);
        !s.ok()) {
      return std::move(s).error();
    }
    out.ignored.clear();
    if (auto s = require_object(value, "Kubernetes Job spec"); !s.ok()) {
      Error e = std::move(s).error();
      e.where = base;
      return e;
    }
  }
  if (auto s =
          sort_keys(value, {"backoffLimit"},
                    {"completions", "parallelism", "activeDeadlineSeconds",
                     "ttlSecondsAfterFinished", "template", "selector", "manualSelector", "suspend",
                     "completionMode", "podReplacementPolicy", "managedBy", "backoffLimitPerIndex",
                     "maxFailedIndexes", "podFailurePolicy", "successPolicy"},
                    "Kubernetes Job", out);
      !s.ok()) {
    Error e = std::move(s).error();
    e.where = base + e.where;
    return e;
  }
  int retries = 6;
  if (value.contains("backoffLimit")) {
    REHEARSE_TRY(limit,
                 read_integer(value.at("backoffLimit"), base + "/backoffLimit",
                              "backoffLimit (retries after the first pod)", 0, kRetryCountMax));
    retries = static_cast<int>(*limit);
  } else {
    out.defaults.push_back("backoffLimit: 6");
  }
  // The Job controller's pod failure back-off: 10 s, doubling, capped at 6 min.
  Backoff b{BackoffKind::exponential, 10 * kSecondMs, 0.0};
  b.max_delay_ms = 6 * kMinuteMs;
  out.policy = system_policy(PolicyForm::k8s, retries, b);
  return out;
}

#undef REHEARSE_TRY

// ---------------------------------------------------------------- the table

const std::array<PolicySystem, 6> kSystems{{
    {"bullmq", "BullMQ", PolicyForm::bullmq, "attempts, backoff {type, delay, jitter}",
     "attempts counts every run, the first included: attempts - 1 retries", true,
     "fixed: delay; exponential: round(2^(n-1) * delay) ms; jitter j: "
     "floor(rand * d * j + d * (1 - j)); no backoff: at once",
     "docs.bullmq.io guide 'Retrying failing jobs'; bullmq src/classes/backoffs.ts",
     &convert_bullmq},
    {"temporal", "Temporal", PolicyForm::temporal,
     "initialInterval, backoffCoefficient, maximumInterval, maximumAttempts",
     "maximumAttempts counts every run, the first included (1: no retries; 0: unlimited)", true,
     "min(initialInterval * backoffCoefficient^(n-1), maximumInterval); defaults 1s, 2, "
     "100 x initialInterval",
     "docs.temporal.io 'What is a Temporal Retry Policy?'; temporal api RetryPolicy",
     &convert_temporal},
    {"stepfunctions", "AWS Step Functions", PolicyForm::stepfunctions,
     "IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy",
     "MaxAttempts counts retries only (0: never retry)", false,
     "min(IntervalSeconds * BackoffRate^(n-1), MaxDelaySeconds) s; FULL jitter: a draw from "
     "[0, d]; defaults 1, 3, 2.0",
     "AWS Step Functions developer guide 'Handling errors' (Retry fields); CDK JitterType",
     &convert_stepfunctions},
    {"sidekiq", "Sidekiq", PolicyForm::sidekiq, "retry",
     "retry counts retries only (true: 25; false or 0: none)", false,
     "(count ** 4) + 15 + rand(10) * (count + 1) s, count = n - 1",
     "Sidekiq wiki 'Error Handling' (automatic job retry); sidekiq lib/sidekiq/job_retry.rb",
     &convert_sidekiq},
    {"celery", "Celery", PolicyForm::celery,
     "max_retries, retry_backoff, retry_backoff_max, retry_jitter, default_retry_delay",
     "max_retries counts retries only (default 3)", false,
     "retry_backoff f: min(f * 2^(n-1), retry_backoff_max) s, with retry_jitter a draw from "
     "[0, d]; defaults max 600 s, jitter on; without retry_backoff: default_retry_delay (180 s)",
     "Celery docs 'Tasks' (automatic retry for known exceptions); celery.utils.time "
     "get_exponential_backoff_interval",
     &convert_celery},
    {"k8s", "Kubernetes Job", PolicyForm::k8s, "backoffLimit",
     "backoffLimit counts retries after the first pod (default 6)", false,
     "min(10 s * 2^(n-1), 6 min)",
     "kubernetes.io docs 'Jobs', section 'Pod backoff failure policy'", &convert_k8s},
}};

}  // namespace

std::span<const PolicySystem> policy_systems() { return kSystems; }

const PolicySystem* find_policy_system(std::string_view name) {
  for (const PolicySystem& s : kSystems) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string policy_system_names() {
  std::string out;
  for (const PolicySystem& s : kSystems)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", s.name);
  return out;
}

Result<SystemPolicy> convert_system_policy(std::string_view system, const json& value) {
  const PolicySystem* s = find_policy_system(system);
  if (s == nullptr) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("unknown system \"{}\": expected one of {}", system,
                                  policy_system_names()));
  }
  auto converted = s->convert(value);
  if (!converted.ok()) return converted;
  converted->system = s;
  return converted;
}

namespace {
std::string count_surprise(const PolicySystem& s, int retries) {
  if (s.count_includes_first_run) {
    return fmt::format("{}'s count includes the first run: attempts {} means {} retr{}", s.title,
                       retries + 1, retries, retries == 1 ? "y" : "ies");
  }
  return fmt::format("{}'s count is of retries only: {} retr{} means {} runs in all", s.title,
                     retries, retries == 1 ? "y" : "ies", retries + 1);
}
}  // namespace

std::vector<std::string> policy_surprises(const SystemPolicy& converted, const RetryPlan& plan) {
  std::vector<std::string> out;
  const Backoff& b = converted.policy.backoff;
  if (converted.system != nullptr)
    out.push_back(count_surprise(*converted.system, plan.max_retries));
  if (plan.max_retries > 0 && b.delay_ms == 0 && b.kind == BackoffKind::fixed) {
    out.push_back(
        "no delay: every retry runs at once, so a provider outage of even a few "
        "seconds exhausts the retries");
  }
  if (plan.capped_from > 0) {
    out.push_back(fmt::format(
        "the maximum delay {} flattens the curve from retry {}: {} retries wait {} each instead "
        "of growing",
        format_duration(b.max_delay_ms), plan.capped_from, plan.max_retries - plan.capped_from + 1,
        format_duration(b.max_delay_ms)));
  }
  if (plan.shortest_window_ms < plan.recovery_window_ms) {
    out.push_back(fmt::format("jitter can shorten the recovery window from {} to {}",
                              format_duration(plan.recovery_window_ms),
                              format_duration(plan.shortest_window_ms)));
  }
  if (plan.longest_window_ms > plan.recovery_window_ms) {
    out.push_back(fmt::format("jitter can lengthen the recovery window from {} to {}",
                              format_duration(plan.recovery_window_ms),
                              format_duration(plan.longest_window_ms)));
  }
  return out;
}

}  // namespace rehearse
