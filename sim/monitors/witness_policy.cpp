#include "sim/monitors/witness_policy.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace rehearse::sim {

namespace {

using nlohmann::json;

const std::vector<std::string>& class_vocabulary() {
  static const std::vector<std::string> kNames{"timeout",    "network", "provider_5xx",
                                               "rate_limit", "auth",    "validation",
                                               "not_found",  "config",  "unknown"};
  return kNames;
}

std::optional<DurationMs> read_delay(const json& v) {
  if (v.is_number_integer()) {
    const auto ms = v.get<std::int64_t>();
    if (ms < 0) return std::nullopt;
    return ms;
  }
  if (v.is_string()) {
    auto d = parse_duration(v.get<std::string>());
    if (!d.ok() || *d < 0) return std::nullopt;
    return *d;
  }
  return std::nullopt;
}

bool read_backoff(const json& b, WitnessPolicy& p, bool allow_jitter) {
  if (b.is_object()) {
    for (const auto& [k, v] : b.items()) {
      if (k != "type" && k != "delay" && k != "max_delay" && !(allow_jitter && k == "jitter")) {
        return false;
      }
    }
    if (!b.contains("type") || !b.at("type").is_string() || !b.contains("delay")) return false;
    const std::string type = b.at("type").get<std::string>();
    if (type != "fixed" && type != "exponential" && type != "linear") return false;
    p.exponential = type == "exponential";
    p.linear = type == "linear";
    auto d = read_delay(b.at("delay"));
    if (!d) return false;
    p.delay_ms = *d;
    if (b.contains("max_delay")) {
      auto cap = read_delay(b.at("max_delay"));
      if (!cap) return false;
      p.cap_ms = *cap;
    }
    if (b.contains("jitter")) {
      if (!b.at("jitter").is_number()) return false;
      p.jitter = b.at("jitter").get<double>();
      if (p.jitter < 0.0 || p.jitter > 1.0) return false;
    }
    return true;
  }
  if (!allow_jitter) return false;  // per-job form: a bare number is refused
  auto d = read_delay(b);
  if (!d) return false;
  p.exponential = false;
  p.delay_ms = *d;
  return true;
}

// The name of the system when `j` is another system's policy form: one key
// naming the system, maybe with retryable_classes, budget or reason beside it.
std::optional<std::string> other_system_form(const json& j) {
  static const std::vector<std::string> kSystems{"bullmq",  "temporal", "stepfunctions",
                                                 "sidekiq", "celery",   "k8s"};
  for (const std::string& name : kSystems) {
    if (j.contains(name)) return name;
  }
  return std::nullopt;
}

// {"bullmq": {attempts, backoff}} with its siblings is the native BullMQ
// form; BullMQ job options beyond those two keys are not read here.
std::optional<json> bullmq_as_native(const json& j) {
  if (!j.contains("bullmq") || !j.at("bullmq").is_object()) return std::nullopt;
  json native = j;
  native.erase("bullmq");
  for (const auto& [k, v] : j.at("bullmq").items()) {
    if (k != "attempts" && k != "backoff") return std::nullopt;
    native[k] = v;
  }
  return native;
}

WitnessPolicy read_policy(const json& written, std::optional<bool> low_frequency, bool* judged) {
  return ::rehearse::sim::read_policy(std::optional<json>(written), low_frequency, judged);
}

WitnessPolicy invalid_policy(std::string why) {
  WitnessPolicy p;
  p.why_invalid = std::move(why);
  return p;
}

// "auto": per slot, every class, exponential; 3 retries from 30 min on a
// low-frequency schedule, else 1 after 60 s.
WitnessPolicy auto_policy(bool low_frequency) {
  WitnessPolicy p;
  p.valid = true;
  p.per_slot = true;
  p.all_classes = true;
  p.exponential = true;
  p.retries_max = low_frequency ? 3 : 1;
  p.delay_ms = low_frequency ? 30 * kMinuteMs : 60 * kSecondMs;
  return p;
}

// The form's keys and its count (attempts or max). An error, or "".
std::string read_count(const json& j, bool bullmq, WitnessPolicy& p) {
  const std::vector<std::string> keys =
      bullmq
          ? std::vector<std::string>{"attempts", "backoff", "retryable_classes", "budget", "reason"}
          : std::vector<std::string>{"max",    "backoff_sec", "backoff", "retryable_classes",
                                     "reason", "budget"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) return "key " + k;
  }
  const char* count_key = bullmq ? "attempts" : "max";
  if (!j.contains(count_key) || !j.at(count_key).is_number_integer()) {
    return std::string(count_key) + " missing or not an integer";
  }
  const auto count = j.at(count_key).get<std::int64_t>();
  if (count < (bullmq ? 1 : 0) || count > 1001) return "count out of range";
  p.retries_max = static_cast<int>(bullmq ? count - 1 : count);
  p.per_slot = bullmq;
  p.all_classes = bullmq;
  if (!bullmq) p.classes = {"timeout", "network", "provider_5xx", "rate_limit"};
  return {};
}

// retryable_classes and budget, when given. An error, or "".
std::string read_classes_and_budget(const json& j, WitnessPolicy& p) {
  if (j.contains("retryable_classes")) {
    const json& list = j.at("retryable_classes");
    if (!list.is_array()) return "retryable_classes not a list";
    p.all_classes = false;
    p.classes.clear();
    for (const json& c : list) {
      if (!c.is_string()) return "class not a string";
      const std::string name = c.get<std::string>();
      const auto& vocab = class_vocabulary();
      if (std::find(vocab.begin(), vocab.end(), name) == vocab.end())
        return "unknown class " + name;
      p.classes.insert(name);
    }
  }
  if (j.contains("budget")) {
    if (!j.at("budget").is_string()) return "budget not a string";
    const std::string b = j.at("budget").get<std::string>();
    if (b != "per_slot" && b != "per_episode") return "budget " + b;
    p.per_slot = b == "per_slot";
  }
  return {};
}

// backoff_sec or backoff. An error, or "".
std::string read_delays(const json& j, bool bullmq, WitnessPolicy& p) {
  bool has_backoff = false;
  if (!bullmq && j.contains("backoff_sec")) {
    if (j.contains("backoff")) return "backoff_sec and backoff";
    if (!j.at("backoff_sec").is_number_integer() || j.at("backoff_sec").get<std::int64_t>() < 0) {
      return "backoff_sec";
    }
    p.delay_ms = j.at("backoff_sec").get<std::int64_t>() * kSecondMs;
    has_backoff = true;
  } else if (j.contains("backoff")) {
    if (!read_backoff(j.at("backoff"), p, bullmq)) return "backoff";
    has_backoff = true;
  }
  // BullMQ without a backoff retries at once; the per-job form needs one.
  if (p.retries_max > 0 && !has_backoff && !bullmq) return "no backoff";
  return {};
}

// The per-job form or BullMQ's native one.
WitnessPolicy read_own_form(const json& j) {
  WitnessPolicy p;
  const bool bullmq = j.contains("attempts");
  std::string error = read_count(j, bullmq, p);
  if (error.empty()) error = read_classes_and_budget(j, p);
  if (error.empty()) error = read_delays(j, bullmq, p);
  if (!error.empty()) return invalid_policy(std::move(error));
  p.valid = true;
  return p;
}

}  // namespace

WitnessPolicy read_policy(const std::optional<json>& written, std::optional<bool> low_frequency,
                          bool* judged) {
  *judged = true;
  if (!written) return invalid_policy("no retry policy");
  const json& j = *written;
  if (j.is_string() && j.get<std::string>() == "auto") {
    if (low_frequency) return auto_policy(*low_frequency);
    *judged = false;
    return invalid_policy("\"auto\" with a schedule the monitors cannot read");
  }
  if (!j.is_object()) return invalid_policy("not an object nor \"auto\"");
  if (const auto native = bullmq_as_native(j)) return read_policy(*native, low_frequency, judged);
  if (const auto system = other_system_form(j)) {
    // Another system's form ({"temporal": {...}}, ...): the monitors keep no
    // second copy of six systems' conversions (docs/policies.md), so they do
    // not judge this job's retries; the run shows it as unchecked (ok*).
    *judged = false;
    return invalid_policy("a " + *system + " policy, which the monitors do not read");
  }
  return read_own_form(j);
}

bool WitnessPolicy::retries_class(const std::string& failure_class) const {
  if (!valid || retries_max <= 0) return false;
  return all_classes || classes.count(failure_class) != 0;
}

DurationMs WitnessPolicy::base_delay_ms(int n) const {
  double base = static_cast<double>(delay_ms);
  if (exponential) base = std::round(base * std::pow(2.0, std::min(n - 1, 40)));
  if (linear) base *= static_cast<double>(n);
  if (cap_ms) base = std::min(base, static_cast<double>(*cap_ms));
  return static_cast<DurationMs>(base);
}

DurationMs WitnessPolicy::min_delay_ms(int n) const {
  const double low = std::floor(static_cast<double>(base_delay_ms(n)) * (1.0 - jitter));
  // 1 ms of slack for rounding on either side.
  return std::max<DurationMs>(0, static_cast<DurationMs>(low) - 1);
}

DurationMs WitnessPolicy::max_delay_ms(int n) const { return base_delay_ms(n) + 1; }

}  // namespace rehearse::sim
