#include "sim/monitors/witness_systems.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/monitors/witness_error_names.hpp"

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
  REHEARSE_ASSERT(retries <= kRetriesMax || retries == kWitnessUnlimited);
  REHEARSE_ASSERT_GE(delays.delay_ms, 0);
  if (delays.cap_ms) REHEARSE_ASSERT_GE(*delays.cap_ms, 0);
  REHEARSE_ASSERT(delays.factor >= 1.0);
  REHEARSE_ASSERT(delays.proportion >= 0.0 && delays.proportion <= 1.0);
  WitnessPolicy p;
  p.valid = true;
  p.retries_max = retries;
  p.delays = delays;
  // Every class, unless the system's reader names errors.
  p.all_classes = true;
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

// The witness's own reading of the SDKs' spellings: snake_case (Python) and
// Go's exported names mean the TypeScript keys; a Python call stands for its
// keyword arguments.
const json& call_kwargs(const json& v) {
  return v.is_object() && v.contains("$call") && v.contains("kwargs") ? v.at("kwargs") : v;
}

json temporal_keys(const json& input) {
  static const std::array<std::pair<std::string_view, std::string_view>, 7> kSnake{{
      {"initial_interval", "initialInterval"},
      {"backoff_coefficient", "backoffCoefficient"},
      {"maximum_interval", "maximumInterval"},
      {"maximum_attempts", "maximumAttempts"},
      {"non_retryable_error_types", "nonRetryableErrorTypes"},
      {"retry_policy", "retry"},
      {"schedule_to_close_timeout", "scheduleToCloseTimeout"},
  }};
  json out = json::object();
  for (const auto& [key, value] : call_kwargs(input).items()) {
    std::string name = key;
    for (const auto& [snake, camel] : kSnake) {
      if (key == snake) name = camel;
    }
    if (!name.empty() && name[0] >= 'A' && name[0] <= 'Z')
      name[0] = static_cast<char>(name[0] + 32);
    if (name == "retryPolicy") name = "retry";
    out[name] = value;
  }
  return out;
}

// Durations as the SDKs write them: ms numbers, "30s"/"1h30m", the `ms`
// package's words ("1 second", "2 minutes"), Python's timedelta(...).
std::optional<DurationMs> temporal_delay(const json& v) {
  if (v.is_object() && v.value("$call", "") == "timedelta" && v.contains("kwargs")) {
    static const std::array<std::pair<std::string_view, DurationMs>, 6> kUnits{
        {{"weeks", 7 * kDayMs},
         {"days", kDayMs},
         {"hours", kHourMs},
         {"minutes", kMinuteMs},
         {"seconds", kSecondMs},
         {"milliseconds", 1}}};
    double ms = 0;
    for (const auto& [unit, x] : v.at("kwargs").items()) {
      const auto* row = std::find_if(kUnits.begin(), kUnits.end(),
                                     [&u = unit](const auto& r) { return r.first == u; });
      if (row == kUnits.end() || !x.is_number()) return std::nullopt;
      ms += x.get<double>() * static_cast<double>(row->second);
    }
    if (!(ms > 0 && ms <= static_cast<double>(kDelayMaxMs))) return std::nullopt;
    return static_cast<DurationMs>(ms);
  }
  if (const auto d = read_witness_delay(v)) return *d > 0 ? d : std::nullopt;
  if (!v.is_string()) return std::nullopt;
  // "<number> <word>": the `ms` package's long words.
  static const std::array<std::pair<std::string_view, DurationMs>, 10> kWords{
      {{"second", kSecondMs},
       {"seconds", kSecondMs},
       {"minute", kMinuteMs},
       {"minutes", kMinuteMs},
       {"hour", kHourMs},
       {"hours", kHourMs},
       {"day", kDayMs},
       {"days", kDayMs},
       {"ms", 1},
       {"milliseconds", 1}}};
  const std::string text = v.get<std::string>();
  const auto space = text.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const std::string number = text.substr(0, space),
                    word = text.substr(text.find_first_not_of(' ', space));
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos ||
      number.size() > 9) {
    return std::nullopt;
  }
  for (const auto& [w, unit] : kWords) {
    if (w == word) {
      const DurationMs ms = std::stoll(number) * unit;
      return ms > 0 && ms <= kDelayMaxMs ? std::optional<DurationMs>(ms) : std::nullopt;
    }
  }
  return std::nullopt;
}

WitnessPolicy read_temporal_policy(const json& v, DurationMs deadline) {
  if (!v.is_object()) return refused("temporal", "not an object");
  if (!only_keys(v, {"initialInterval", "backoffCoefficient", "maximumInterval", "maximumAttempts",
                     "nonRetryableErrorTypes"})) {
    return refused("temporal", "unknown key");
  }
  const auto attempts = v.contains("maximumAttempts")
                            ? read_int(v.at("maximumAttempts"), 0, kRetriesMax + 1)
                            : std::optional<std::int64_t>(0);
  if (!attempts || (*attempts == 0 && deadline == 0)) return refused("temporal", "maximumAttempts");
  WitnessDelays d;
  d.curve = Curve::exponential;
  d.delay_ms = kSecondMs;
  if (v.contains("initialInterval")) {
    const auto i = temporal_delay(v.at("initialInterval"));
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
    d.cap_ms = temporal_delay(v.at("maximumInterval"));
    if (!d.cap_ms || *d.cap_ms < d.delay_ms) return refused("temporal", "maximumInterval");
  }
  // The default cap (100 x the interval, at most the bound) is never below the interval.
  REHEARSE_ASSERT_GE(*d.cap_ms, d.delay_ms);
  WitnessPolicy p = valid(*attempts == 0 ? kWitnessUnlimited : static_cast<int>(*attempts - 1), d);
  p.deadline_ms = deadline;
  if (v.contains("nonRetryableErrorTypes")) {
    const json& names = v.at("nonRetryableErrorTypes");
    if (!names.is_array()) return refused("temporal", "nonRetryableErrorTypes");
    p.all_classes = false;
    p.classes = witness_all_classes();
    for (const json& n : names) {
      if (!n.is_string()) return refused("temporal", "nonRetryableErrorTypes");
      for (const auto& c : witness_error_classes(n.get<std::string>())) p.classes.erase(c);
    }
  }
  return p;
}

// The RetryPolicy alone, or the activity options around it (`retry`), whose
// scheduleToCloseTimeout is the deadline.
WitnessPolicy read_temporal(const json& written) {
  const json v = temporal_keys(written);
  if (!v.contains("retry")) return read_temporal_policy(v, 0);
  DurationMs deadline = 0;
  if (v.contains("scheduleToCloseTimeout")) {
    const auto d = temporal_delay(v.at("scheduleToCloseTimeout"));
    if (!d) return refused("temporal", "scheduleToCloseTimeout");
    deadline = *d;
  }
  return read_temporal_policy(temporal_keys(v.at("retry")), deadline);
}

// ------------------------------------------------------------ Step Functions
// One retrier's count and curve: MaxAttempts counts retries (default 3);
// min(IntervalSeconds * BackoffRate^(n-1), MaxDelaySeconds) s, defaults 1 s
// and 2.0; JitterStrategy FULL draws from [0, d].
std::optional<WitnessRule> read_retrier(const json& v) {
  if (!v.is_object()) return std::nullopt;
  if (!only_keys(v, {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
                     "MaxDelaySeconds", "JitterStrategy", "Comment"})) {
    return std::nullopt;
  }
  WitnessRule r;
  r.delays.curve = Curve::exponential;
  r.delays.delay_ms = kSecondMs;
  r.retries_max = 3;
  if (v.contains("IntervalSeconds")) {
    const auto i = read_secs(v.at("IntervalSeconds"), 1);
    if (!i) return std::nullopt;
    r.delays.delay_ms = *i;
  }
  if (v.contains("MaxAttempts")) {
    const auto m = read_int(v.at("MaxAttempts"), 0, kRetriesMax);
    if (!m) return std::nullopt;
    r.retries_max = static_cast<int>(*m);
  }
  if (v.contains("BackoffRate")) {
    const auto f = read_num(v.at("BackoffRate"), 1.0, 1000.0);
    if (!f) return std::nullopt;
    r.delays.factor = *f;
  }
  if (v.contains("MaxDelaySeconds")) {
    r.delays.cap_ms = read_secs(v.at("MaxDelaySeconds"), 1);
    if (!r.delays.cap_ms) return std::nullopt;
  }
  if (v.contains("JitterStrategy")) {
    const json& j = v.at("JitterStrategy");
    if (j != "FULL" && j != "NONE") return std::nullopt;
    if (j == "FULL") r.delays.jitter = Jitter::full;
  }
  // ErrorEquals: the names' classes (absent: States.ALL, which stands alone).
  const json names = v.value("ErrorEquals", json::array({"States.ALL"}));
  if (!names.is_array() || names.empty()) return std::nullopt;
  for (const json& n : names) {
    if (!n.is_string()) return std::nullopt;
    if (n == "States.ALL" && names.size() > 1) return std::nullopt;
    const auto classes = witness_error_classes(n.get<std::string>());
    r.classes.insert(classes.begin(), classes.end());
  }
  return r;
}

// The Retry array of a retrier, an array, a state, or a machine's one
// retrying state; nullptr when there is none.
const json* retry_array(const json& input, json& holder) {
  if (input.is_array()) return &input;
  if (!input.is_object()) return nullptr;
  if (input.contains("States")) {
    const json* found = nullptr;
    if (!input.at("States").is_object()) return nullptr;
    for (const auto& [name, state] : input.at("States").items()) {
      if (!state.is_object() || !state.contains("Retry")) continue;
      if (found != nullptr) return nullptr;  // several: "state" must choose
      found = &state.at("Retry");
    }
    return found;
  }
  if (input.contains("Retry")) return &input.at("Retry");
  if (input.contains("Type")) return nullptr;
  holder = json::array({input});
  return &holder;
}

WitnessPolicy read_stepfunctions(const json& input) {
  json holder;
  const json* array = retry_array(input, holder);
  if (array == nullptr || !array->is_array() || array->empty() || array->size() > 32) {
    return refused("stepfunctions", "retriers");
  }
  std::vector<WitnessRule> rules;
  std::set<std::string> taken;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const json& retrier = array->at(i);
    auto r = read_retrier(retrier);
    if (!r) return refused("stepfunctions", "retrier");
    // States.ALL (also an absent ErrorEquals) only in the last retrier.
    const bool all = !retrier.contains("ErrorEquals") || retrier["ErrorEquals"][0] == "States.ALL";
    if (all && i + 1 != array->size()) return refused("stepfunctions", "States.ALL not last");
    // A class goes to the first retrier that names it.
    std::erase_if(r->classes, [&taken](const std::string& c) { return taken.count(c) != 0; });
    taken.insert(r->classes.begin(), r->classes.end());
    rules.push_back(std::move(*r));
  }
  int total = 0;
  for (const WitnessRule& r : rules) total += r.retries_max;
  WitnessPolicy p = valid(rules.size() == 1 ? rules[0].retries_max : total, rules[0].delays);
  p.all_classes = false;
  p.classes = taken;
  if (rules.size() > 1) p.rules = std::move(rules);
  return p;
}

// ------------------------------------------------------------ Sidekiq
// retry counts retries (true 25, false 0; default 25); the delay before
// retry n is (count ** 4) + 15 + rand(10) * (count + 1) s with count = n - 1.
WitnessPolicy read_sidekiq(const json& v) {
  if (!v.is_object()) return refused("sidekiq", "not an object");
  if (!only_keys(v, {"retry", "retry_in"},
                 {"queue", "backtrace", "dead", "tags", "pool", "retry_queue"})) {
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
  if (v.contains("retry_in")) {
    // The block as the scenario loader read it from Ruby (an AST); the
    // witness evaluates it itself.
    if (v.at("retry_in").is_string()) return refused("sidekiq", "retry_in as text");
    d.curve = Curve::block;
    d.block = v.at("retry_in");
  }
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

// expires: seconds or a timedelta; 0 when absent, nullopt when unreadable.
std::optional<DurationMs> celery_expires(const json& v) {
  if (!v.contains("expires")) return 0;
  const json& e = v.at("expires");
  if (e.is_object()) return temporal_delay(e);
  const auto s = read_num(e, 1.0, static_cast<double>(kSecondsMax));
  return s ? std::optional<DurationMs>(static_cast<DurationMs>(*s * kSecondMs)) : std::nullopt;
}

// max_retries (retry_kwargs' wins unless None; None on the task: unlimited,
// with `expires`).
std::optional<int> celery_retries(const json& v, const json& kwargs, DurationMs deadline) {
  const bool in_kwargs = kwargs.contains("max_retries") && !kwargs.at("max_retries").is_null();
  const json* m = in_kwargs                   ? &kwargs.at("max_retries")
                  : v.contains("max_retries") ? &v.at("max_retries")
                                              : nullptr;
  if (m == nullptr) return 3;
  if (m->is_null()) return deadline > 0 ? std::optional<int>(kWitnessUnlimited) : std::nullopt;
  const auto n = read_int(*m, 0, kRetriesMax);
  return n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
}

// autoretry_for: the classes its exceptions stand for, less those of
// dont_autoretry_for. False when a list is unreadable.
bool celery_classes(const json& v, WitnessPolicy& p) {
  for (const char* key : {"autoretry_for", "dont_autoretry_for"}) {
    if (!v.contains(key)) continue;
    if (!v.at(key).is_array()) return false;
    std::set<std::string> named;
    for (const json& e : v.at(key)) {
      const json name = e.is_object() ? e.value("$name", json()) : e;
      if (!name.is_string()) return false;
      const auto classes = witness_error_classes(name.get<std::string>());
      named.insert(classes.begin(), classes.end());
    }
    if (std::string_view(key) == "autoretry_for") {
      p.all_classes = false;
      p.classes = named;
    } else {
      if (p.all_classes) p.classes = witness_all_classes();
      p.all_classes = false;
      for (const auto& c : named) p.classes.erase(c);
    }
  }
  return true;
}

WitnessPolicy read_celery(const json& written) {
  const json& v = call_kwargs(written);
  if (!v.is_object()) return refused("celery", "not an object");
  if (!only_keys(
          v,
          {"max_retries", "retry_backoff", "retry_backoff_max", "retry_jitter",
           "default_retry_delay", "autoretry_for", "dont_autoretry_for", "retry_kwargs", "expires"},
          {"acks_late", "time_limit", "soft_time_limit", "rate_limit", "bind", "name", "queue",
           "ignore_result", "base", "serializer", "track_started", "typing", "priority",
           "reject_on_worker_lost", "throws", "shared", "store_errors_even_if_ignored", "trail"})) {
    return refused("celery", "unknown key");
  }
  const json kwargs = v.value("retry_kwargs", json::object());
  const auto deadline = celery_expires(v);
  if (!kwargs.is_object() || !only_keys(kwargs, {"max_retries", "countdown"}) || !deadline) {
    return refused("celery", "retry_kwargs or expires");
  }
  const auto retries = celery_retries(v, kwargs, *deadline);
  const auto factor = v.contains("retry_backoff") ? celery_factor(v.at("retry_backoff")) : 0;
  if (!retries || !factor) return refused("celery", "max_retries or retry_backoff");
  WitnessDelays d;
  if (*factor == 0) {
    d.delay_ms = 180 * kSecondMs;
    const char* key = kwargs.contains("countdown") ? "countdown" : "default_retry_delay";
    const json& from = kwargs.contains("countdown") ? kwargs : v;
    if (from.contains(key)) {
      const auto s = read_secs(from.at(key), 0);
      if (!s) return refused("celery", key);
      d.delay_ms = *s;
    }
  } else {
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
  }
  if (*retries == kWitnessUnlimited && d.delay_ms == 0) return refused("celery", "no delay");
  WitnessPolicy p = valid(*retries, d);
  p.deadline_ms = *deadline;
  if (!celery_classes(v, p)) return refused("celery", "autoretry_for");
  return p;
}

// ------------------------------------------------------------ Kubernetes
// backoffLimit counts retries after the first pod (default 6), in a Job spec
// or a whole Job manifest; the pod failure back-off is 10 s, doubling,
// capped at 6 minutes.
// The Job spec of a Job manifest (spec), a CronJob's (spec.jobTemplate.spec),
// or a bare spec; nullptr when the manifest is something else.
const json* k8s_spec(const json& input) {
  if (!input.contains("kind")) return &input;
  const json& kind = input.at("kind");
  if ((kind != "Job" && kind != "CronJob") ||
      !only_keys(input, {"spec"}, {"apiVersion", "kind", "metadata", "status"}) ||
      !input.contains("spec") || !input.at("spec").is_object()) {
    return nullptr;
  }
  const json& spec = input.at("spec");
  if (kind == "Job") return &spec;
  const json* tmpl = spec.contains("jobTemplate") ? &spec.at("jobTemplate") : nullptr;
  if (tmpl == nullptr || !tmpl->is_object() || !tmpl->contains("spec") ||
      !tmpl->at("spec").is_object()) {
    return nullptr;
  }
  return &tmpl->at("spec");
}

WitnessPolicy read_k8s(const json& input) {
  if (!input.is_object()) return refused("k8s", "not an object");
  const json* spec = k8s_spec(input);
  if (spec == nullptr) return refused("k8s", "manifest");
  const json& v = *spec;
  if (!only_keys(v, {"backoffLimit", "backoffLimitPerIndex", "activeDeadlineSeconds"},
                 {"completions", "parallelism", "ttlSecondsAfterFinished", "template", "selector",
                  "manualSelector", "suspend", "completionMode", "podReplacementPolicy",
                  "managedBy", "maxFailedIndexes", "podFailurePolicy", "successPolicy"})) {
    return refused("k8s", "unknown key");
  }
  // An indexed Job's per-index count is this job's count.
  const char* count_key =
      v.contains("backoffLimitPerIndex") ? "backoffLimitPerIndex" : "backoffLimit";
  const auto retries = v.contains(count_key) ? read_int(v.at(count_key), 0, kRetriesMax) : 6;
  if (!retries) return refused("k8s", count_key);
  std::optional<DurationMs> deadline = 0;
  if (v.contains("activeDeadlineSeconds")) deadline = read_secs(v.at("activeDeadlineSeconds"), 1);
  if (!deadline) return refused("k8s", "activeDeadlineSeconds");
  WitnessDelays d;
  d.curve = Curve::exponential;
  d.delay_ms = 10 * kSecondMs;
  d.cap_ms = 6 * kMinuteMs;
  WitnessPolicy p = valid(static_cast<int>(*retries), d);
  p.deadline_ms = *deadline;
  return p;
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
