#include "sim/monitors/witness_systems.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <string>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;
using Curve = WitnessDelays::Curve;
using Jitter = WitnessDelays::Jitter;

constexpr DurationMs kDelayMaxMs = kWitnessDelayMaxMs;
constexpr std::int64_t kSecondsMax = kDelayMaxMs / kSecondMs;
constexpr std::int64_t kRetriesMax = 1000;

using Keys = std::initializer_list<std::string_view>;

// Every key of `value` is in `read` or `ignored` (keys the system knows that
// do not bear on retries).
bool only_keys(const json& value, Keys read, Keys ignored = {}) {
  // Every system reads some key of its own.
  REHEARSE_ASSERT_GT(read.size(), 0u);
  for (const auto& [k, v] : value.items()) {
    const auto in = [&key = k](Keys list) {
      return std::find(list.begin(), list.end(), key) != list.end();
    };
    if (!in(read) && !in(ignored)) return false;
  }
  return true;
}

std::optional<std::int64_t> read_int(const json& v, std::int64_t lo, std::int64_t hi) {
  // The readers pass a non-negative range (counts, seconds, milliseconds).
  REHEARSE_ASSERT_GE(lo, 0);
  REHEARSE_ASSERT_LE(lo, hi);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(hi)) return std::nullopt;
    const auto i = static_cast<std::int64_t>(u);
    return i < lo ? std::nullopt : std::optional<std::int64_t>(i);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto i = v.get<std::int64_t>();
  return i < lo || i > hi ? std::nullopt : std::optional<std::int64_t>(i);
}

std::optional<double> read_num(const json& v, double lo, double hi) {
  REHEARSE_ASSERT(lo <= hi);
  if (!v.is_number()) return std::nullopt;
  const double d = v.get<double>();
  return d >= lo && d <= hi ? std::optional<double>(d) : std::nullopt;
}

std::optional<DurationMs> read_secs(const json& v, std::int64_t lo) {
  const auto s = read_int(v, lo, kSecondsMax);
  if (!s) return std::nullopt;
  const DurationMs ms = *s * kSecondMs;
  // A count of seconds in range is a delay read_witness_delay would accept.
  REHEARSE_ASSERT(ms >= 0 && ms <= kDelayMaxMs);
  return ms;
}

WitnessPolicy valid(int retries, WitnessDelays delays) {
  // Every system's reader bounds what it read: a count of retries, delays
  // that are durations, a curve that never shrinks.
  REHEARSE_ASSERT_GE(retries, 0);
  REHEARSE_ASSERT_LE(retries, kRetriesMax);
  REHEARSE_ASSERT_GE(delays.delay_ms, 0);
  if (delays.cap_ms) REHEARSE_ASSERT_GE(*delays.cap_ms, 0);
  REHEARSE_ASSERT(delays.factor >= 1.0);
  REHEARSE_ASSERT(delays.proportion >= 0.0 && delays.proportion <= 1.0);
  WitnessPolicy p;
  p.valid = true;
  p.retries_max = retries;
  p.delays = delays;
  return p;
}

WitnessPolicy refused(const char* system, const char* why) {
  WitnessPolicy p = invalid_witness_policy(std::string(system) + ": " + why);
  REHEARSE_ASSERT(!p.valid && !p.why_invalid.empty());
  return p;
}

// ------------------------------------------------------------ BullMQ
// attempts counts every run (default 1); backoff: a number (fixed ms) or
// {type: fixed | exponential, delay, jitter?}; none: at once. Job options
// beyond those do not bear on retries.
WitnessPolicy read_bullmq(const json& v) {
  if (!v.is_object()) return refused("bullmq", "not an object");
  if (!only_keys(v, {"attempts", "backoff"},
                 {"removeOnComplete",
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
                  "repeatJobKey"})) {
    return refused("bullmq", "unknown key");
  }
  const auto attempts = v.contains("attempts") ? read_int(v.at("attempts"), 1, kRetriesMax + 1)
                                               : std::optional<std::int64_t>(1);
  if (!attempts) return refused("bullmq", "attempts");
  WitnessDelays d;
  if (v.contains("backoff")) {
    const json& b = v.at("backoff");
    if (!b.is_object()) {
      const auto ms = read_witness_delay(b);
      if (!ms) return refused("bullmq", "backoff");
      d.delay_ms = *ms;
    } else {
      if (!only_keys(b, {"type", "delay", "jitter"}) || !b.contains("type") ||
          !b.contains("delay") || (b.at("type") != "fixed" && b.at("type") != "exponential")) {
        return refused("bullmq", "backoff");
      }
      const auto ms = read_witness_delay(b.at("delay"));
      const auto j = b.contains("jitter") ? read_num(b.at("jitter"), 0.0, 1.0) : 0.0;
      if (!ms || !j) return refused("bullmq", "backoff");
      d.curve = b.at("type") == "exponential" ? Curve::exponential : Curve::fixed;
      d.delay_ms = *ms;
      d.proportion = *j;
      if (*j > 0.0) d.jitter = Jitter::proportional;
    }
  }
  // A proportion only with proportional jitter, and proportional jitter only with one.
  REHEARSE_ASSERT_EQ(d.jitter == Jitter::proportional, d.proportion > 0.0);
  return valid(static_cast<int>(*attempts - 1), d);
}

// ------------------------------------------------------------ Temporal
// maximumAttempts counts every run (required here: 0, unlimited, is not
// planned); min(initialInterval * backoffCoefficient^(n-1), maximumInterval),
// defaults 1 s, 2, 100 x initialInterval.
std::optional<DurationMs> positive_delay(const json& v) {
  const auto d = read_witness_delay(v);
  return d && *d > 0 ? d : std::nullopt;
}

WitnessPolicy read_temporal(const json& v) {
  if (!v.is_object()) return refused("temporal", "not an object");
  if (!only_keys(v, {"initialInterval", "backoffCoefficient", "maximumInterval", "maximumAttempts",
                     "nonRetryableErrorTypes"})) {
    return refused("temporal", "unknown key");
  }
  const auto attempts = v.contains("maximumAttempts")
                            ? read_int(v.at("maximumAttempts"), 1, kRetriesMax + 1)
                            : std::nullopt;
  if (!attempts) return refused("temporal", "maximumAttempts");
  WitnessDelays d;
  d.curve = Curve::exponential;
  d.delay_ms = kSecondMs;
  if (v.contains("initialInterval")) {
    const auto i = positive_delay(v.at("initialInterval"));
    if (!i) return refused("temporal", "initialInterval");
    d.delay_ms = *i;
  }
  if (v.contains("backoffCoefficient")) {
    const auto f = read_num(v.at("backoffCoefficient"), 1.0, 1000.0);
    if (!f) return refused("temporal", "backoffCoefficient");
    d.factor = *f;
  }
  d.cap_ms = std::min(100 * d.delay_ms, kDelayMaxMs);
  if (v.contains("maximumInterval")) {
    d.cap_ms = positive_delay(v.at("maximumInterval"));
    if (!d.cap_ms || *d.cap_ms < d.delay_ms) return refused("temporal", "maximumInterval");
  }
  // The default cap (100 x the interval, at most the bound) is never below the interval.
  REHEARSE_ASSERT_GE(*d.cap_ms, d.delay_ms);
  return valid(static_cast<int>(*attempts - 1), d);
}

// ------------------------------------------------------------ Step Functions
// One retrier (or a Retry array of one). MaxAttempts counts retries (default
// 3); min(IntervalSeconds * BackoffRate^(n-1), MaxDelaySeconds) s, defaults
// 1 s and 2.0; JitterStrategy FULL draws from [0, d].
WitnessPolicy read_stepfunctions(const json& input) {
  if (input.is_array() && input.size() != 1) return refused("stepfunctions", "retriers");
  const json& v = input.is_array() ? input.at(0) : input;
  if (!v.is_object()) return refused("stepfunctions", "not an object");
  if (!only_keys(v, {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
                     "MaxDelaySeconds", "JitterStrategy"})) {
    return refused("stepfunctions", "unknown key");
  }
  WitnessDelays d;
  d.curve = Curve::exponential;
  d.delay_ms = kSecondMs;
  std::optional<std::int64_t> retries = 3;
  if (v.contains("IntervalSeconds")) {
    const auto i = read_secs(v.at("IntervalSeconds"), 1);
    if (!i) return refused("stepfunctions", "IntervalSeconds");
    d.delay_ms = *i;
  }
  if (v.contains("MaxAttempts")) retries = read_int(v.at("MaxAttempts"), 0, kRetriesMax);
  if (!retries) return refused("stepfunctions", "MaxAttempts");
  if (v.contains("BackoffRate")) {
    const auto f = read_num(v.at("BackoffRate"), 1.0, 1000.0);
    if (!f) return refused("stepfunctions", "BackoffRate");
    d.factor = *f;
  }
  if (v.contains("MaxDelaySeconds")) {
    d.cap_ms = read_secs(v.at("MaxDelaySeconds"), 1);
    if (!d.cap_ms) return refused("stepfunctions", "MaxDelaySeconds");
  }
  if (v.contains("JitterStrategy")) {
    const json& j = v.at("JitterStrategy");
    if (j != "FULL" && j != "NONE") return refused("stepfunctions", "JitterStrategy");
    if (j == "FULL") d.jitter = Jitter::full;
  }
  // IntervalSeconds is at least 1 (the default too).
  REHEARSE_ASSERT_GE(d.delay_ms, kSecondMs);
  return valid(static_cast<int>(*retries), d);
}

// ------------------------------------------------------------ Sidekiq
// retry counts retries (true 25, false 0; default 25); the delay before
// retry n is (count ** 4) + 15 + rand(10) * (count + 1) s with count = n - 1.
WitnessPolicy read_sidekiq(const json& v) {
  if (!v.is_object()) return refused("sidekiq", "not an object");
  if (!only_keys(v, {"retry"}, {"queue", "backtrace", "dead", "tags", "pool", "retry_queue"})) {
    return refused("sidekiq", "unknown key");
  }
  std::optional<std::int64_t> retries = 25;
  if (v.contains("retry")) {
    const json& r = v.at("retry");
    retries = r.is_boolean() ? std::optional<std::int64_t>(r.get<bool>() ? 25 : 0)
                             : read_int(r, 0, kRetriesMax);
  }
  if (!retries) return refused("sidekiq", "retry");
  WitnessDelays d;
  d.curve = Curve::sidekiq;
  d.delay_ms = 15 * kSecondMs;
  d.jitter = Jitter::sidekiq;
  return valid(static_cast<int>(*retries), d);
}

// ------------------------------------------------------------ Celery
// max_retries counts retries (default 3; None, unlimited, is not planned).
// With retry_backoff f (true: 1 s; a number: int(max(1, f)) s; 0 or false:
// off): min(f * 2^(n-1), retry_backoff_max (600 s)) s, drawn from [0, d]
// unless retry_jitter is false. Without: default_retry_delay (180 s) each time.
std::optional<DurationMs> celery_factor(const json& v) {
  if (v.is_boolean()) return v.get<bool>() ? kSecondMs : 0;
  const auto x = read_num(v, 0.0, static_cast<double>(kSecondsMax));
  if (!x) return std::nullopt;
  if (*x == 0.0) return 0;
  const DurationMs ms = static_cast<DurationMs>(std::max(1.0, *x)) * kSecondMs;
  // int(max(1, f)) s, with f within the seconds' bound.
  REHEARSE_ASSERT(ms >= kSecondMs && ms <= kDelayMaxMs);
  return ms;
}

WitnessPolicy read_celery(const json& v) {
  if (!v.is_object()) return refused("celery", "not an object");
  if (!only_keys(v,
                 {"max_retries", "retry_backoff", "retry_backoff_max", "retry_jitter",
                  "default_retry_delay", "autoretry_for", "dont_autoretry_for"},
                 {"acks_late", "time_limit", "soft_time_limit", "rate_limit", "bind", "name",
                  "queue", "ignore_result"})) {
    return refused("celery", "unknown key");
  }
  const auto retries =
      v.contains("max_retries") ? read_int(v.at("max_retries"), 0, kRetriesMax) : 3;
  const auto factor = v.contains("retry_backoff") ? celery_factor(v.at("retry_backoff")) : 0;
  if (!retries || !factor) return refused("celery", "max_retries or retry_backoff");
  WitnessDelays d;
  if (*factor == 0) {
    d.delay_ms = 180 * kSecondMs;
    if (v.contains("default_retry_delay")) {
      const auto s = read_secs(v.at("default_retry_delay"), 0);
      if (!s) return refused("celery", "default_retry_delay");
      d.delay_ms = *s;
    }
    return valid(static_cast<int>(*retries), d);
  }
  d.curve = Curve::exponential;
  d.delay_ms = *factor;
  // celery_factor's non-zero factor is a whole second at least.
  REHEARSE_ASSERT_GE(d.delay_ms, kSecondMs);
  d.cap_ms = v.contains("retry_backoff_max") ? read_secs(v.at("retry_backoff_max"), 1)
                                             : std::optional<DurationMs>(600 * kSecondMs);
  if (!d.cap_ms) return refused("celery", "retry_backoff_max");
  d.jitter = Jitter::full;
  if (v.contains("retry_jitter")) {
    if (!v.at("retry_jitter").is_boolean()) return refused("celery", "retry_jitter");
    if (!v.at("retry_jitter").get<bool>()) d.jitter = Jitter::none;
  }
  return valid(static_cast<int>(*retries), d);
}

// ------------------------------------------------------------ Kubernetes
// backoffLimit counts retries after the first pod (default 6), in a Job spec
// or a whole Job manifest; the pod failure back-off is 10 s, doubling,
// capped at 6 minutes.
WitnessPolicy read_k8s(const json& input) {
  if (!input.is_object()) return refused("k8s", "not an object");
  const bool manifest = input.contains("kind") && input.at("kind") == "Job";
  if (manifest && (!only_keys(input, {"spec"}, {"apiVersion", "kind", "metadata", "status"}) ||
                   !input.contains("spec") || !input.at("spec").is_object())) {
    return refused("k8s", "manifest");
  }
  const json& v = manifest ? input.at("spec") : input;
  // A Job spec: the object itself, or a manifest's checked `spec`.
  REHEARSE_ASSERT(v.is_object());
  if (!only_keys(v, {"backoffLimit"},
                 {"completions", "parallelism", "activeDeadlineSeconds", "ttlSecondsAfterFinished",
                  "template", "selector", "manualSelector", "suspend", "completionMode",
                  "podReplacementPolicy", "managedBy", "backoffLimitPerIndex", "maxFailedIndexes",
                  "podFailurePolicy", "successPolicy"})) {
    return refused("k8s", "unknown key");
  }
  const auto retries =
      v.contains("backoffLimit") ? read_int(v.at("backoffLimit"), 0, kRetriesMax) : 6;
  if (!retries) return refused("k8s", "backoffLimit");
  WitnessDelays d;
  d.curve = Curve::exponential;
  d.delay_ms = 10 * kSecondMs;
  d.cap_ms = 6 * kMinuteMs;
  return valid(static_cast<int>(*retries), d);
}

const std::array<WitnessSystem, 6> kSystems{{
    {"bullmq", &read_bullmq},
    {"temporal", &read_temporal},
    {"stepfunctions", &read_stepfunctions},
    {"sidekiq", &read_sidekiq},
    {"celery", &read_celery},
    {"k8s", &read_k8s},
}};

}  // namespace

std::span<const WitnessSystem> witness_systems() { return kSystems; }

const WitnessSystem* find_witness_system(std::string_view name) {
  for (const WitnessSystem& s : kSystems) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<DurationMs> read_witness_delay(const json& v) {
  if (v.is_string()) {
    auto d = parse_duration(v.get<std::string>());
    if (!d.ok() || *d < 0 || *d > kDelayMaxMs) return std::nullopt;
    return *d;
  }
  const auto ms = read_int(v, 0, kDelayMaxMs);
  if (ms) REHEARSE_ASSERT(*ms >= 0 && *ms <= kDelayMaxMs);
  return ms ? std::optional<DurationMs>(*ms) : std::nullopt;
}

}  // namespace rehearse::sim
