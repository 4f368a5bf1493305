#include "sim/monitors/witness_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "sim/monitors/witness_systems.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

// Far beyond any simulated span; delays that overflow saturate here.
constexpr DurationMs kSaturatedMs = std::numeric_limits<DurationMs>::max() / 4;

const std::vector<std::string>& class_vocabulary() {
  static const std::vector<std::string> kNames{"timeout",    "network", "provider_5xx",
                                               "rate_limit", "auth",    "validation",
                                               "not_found",  "config",  "unknown"};
  return kNames;
}

DurationMs saturate(double ms) {
  if (!(ms < static_cast<double>(kSaturatedMs))) return kSaturatedMs;
  const auto out = static_cast<DurationMs>(std::round(std::max(0.0, ms)));
  // A delay: never negative, never past the saturation point.
  REHEARSE_ASSERT_GE(out, 0);
  REHEARSE_ASSERT_LE(out, kSaturatedMs);
  return out;
}

// "auto": per slot, every class, exponential; 3 retries from 30 min on a
// low-frequency schedule, else 1 after 60 s.
WitnessPolicy auto_policy(bool low_frequency) {
  WitnessPolicy p;
  p.valid = true;
  p.form = "auto";
  p.per_slot = true;
  p.all_classes = true;
  p.delays.curve = WitnessDelays::Curve::exponential;
  p.retries_max = low_frequency ? 3 : 1;
  p.delays.delay_ms = low_frequency ? 30 * kMinuteMs : 60 * kSecondMs;
  // "auto" retries every class, the unclassified included.
  REHEARSE_ASSERT(p.retries_class("unknown"));
  return p;
}

// A proportion in [0, 1], or a shape's name: "none", "equal" (0.5), "full"
// (1), "decorrelated" (exponential only).
bool read_jitter(const json& j, const std::string& type, WitnessDelays& d) {
  if (j.is_string()) {
    const std::string name = j.get<std::string>();
    if (name == "decorrelated") {
      d.jitter = WitnessDelays::Jitter::decorrelated;
      return type == "exponential";
    }
    if (name == "none") return true;
    if (name != "equal" && name != "full") return false;
    d.proportion = name == "equal" ? 0.5 : 1.0;
  } else {
    if (!j.is_number()) return false;
    d.proportion = j.get<double>();
    if (!(d.proportion >= 0.0 && d.proportion <= 1.0)) return false;
  }
  if (d.proportion > 0.0) d.jitter = WitnessDelays::Jitter::proportional;
  return true;
}

// {type, delay, max_delay?, jitter?} (jitter in BullMQ's form only), or a
// bare delay (BullMQ only: fixed).
bool read_backoff(const json& b, WitnessPolicy& p, bool bullmq) {
  if (!b.is_object()) {
    if (!bullmq) return false;  // per-job form: a bare number is refused
    auto d = read_witness_delay(b);
    if (!d) return false;
    p.delays.delay_ms = *d;
    return true;
  }
  for (const auto& [k, v] : b.items()) {
    if (k != "type" && k != "delay" && k != "max_delay" && !(bullmq && k == "jitter")) return false;
  }
  if (!b.contains("type") || !b.at("type").is_string() || !b.contains("delay")) return false;
  const std::string type = b.at("type").get<std::string>();
  if (type == "exponential") {
    p.delays.curve = WitnessDelays::Curve::exponential;
  } else if (type == "linear") {
    p.delays.curve = WitnessDelays::Curve::linear;
  } else if (type != "fixed") {
    return false;
  }
  auto d = read_witness_delay(b.at("delay"));
  if (!d) return false;
  p.delays.delay_ms = *d;
  if (b.contains("max_delay")) {
    p.delays.cap_ms = read_witness_delay(b.at("max_delay"));
    if (!p.delays.cap_ms) return false;
  }
  if (b.contains("jitter") && !read_jitter(b.at("jitter"), type, p.delays)) return false;
  // read_witness_delay reads durations only.
  REHEARSE_ASSERT_GE(p.delays.delay_ms, 0);
  if (p.delays.cap_ms) REHEARSE_ASSERT_GE(*p.delays.cap_ms, 0);
  return true;
}

// The form's keys and its count (attempts or max). An error, or "".
std::string read_count(const json& j, bool bullmq, WitnessPolicy& p) {
  const std::vector<std::string> keys =
      bullmq ? std::vector<std::string>{"attempts", "backoff",     "retryable_classes", "budget",
                                        "reason",   "retry_after", "retry_budget"}
             : std::vector<std::string>{"max",    "backoff_sec", "backoff",     "retryable_classes",
                                        "reason", "budget",      "retry_after", "retry_budget",
                                        "until"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) return "key " + k;
  }
  const char* count_key = bullmq ? "attempts" : "max";
  if (!bullmq && j.contains("until")) {
    const auto until = read_witness_delay(j.at("until"));
    if (!until || *until <= 0) return "until";
    p.deadline_ms = *until;
    if (!j.contains("max")) p.retries_max = kWitnessUnlimited;
  }
  if (p.retries_max == kWitnessUnlimited) {
    p.classes = {"timeout", "network", "provider_5xx", "rate_limit"};
    return {};
  }
  if (!j.contains(count_key) || !j.at(count_key).is_number_integer()) {
    return std::string(count_key) + " missing or not an integer";
  }
  const auto count = j.at(count_key).get<std::int64_t>();
  if (count < (bullmq ? 1 : 0) || count > 1001) return "count out of range";
  p.retries_max = static_cast<int>(bullmq ? count - 1 : count);
  REHEARSE_ASSERT_GE(p.retries_max, 0);
  REHEARSE_ASSERT_LE(p.retries_max, 1001);
  p.per_slot = bullmq;
  p.all_classes = bullmq;
  if (!bullmq) p.classes = {"timeout", "network", "provider_5xx", "rate_limit"};
  return {};
}

// backoff_sec or backoff. An error, or "".
std::string read_delays(const json& j, bool bullmq, WitnessPolicy& p) {
  bool has_backoff = false;
  if (!bullmq && j.contains("backoff_sec")) {
    if (j.contains("backoff")) return "backoff_sec and backoff";
    // Whole seconds, within the bound of every delay (beyond it the
    // product with 1000 could overflow).
    const json& sec = j.at("backoff_sec");
    // (An unsigned beyond int64 reads back negative.)
    if (!sec.is_number_integer() || sec.get<std::int64_t>() < 0 ||
        sec.get<std::int64_t>() > kWitnessDelayMaxMs / kSecondMs) {
      return "backoff_sec";
    }
    p.delays.delay_ms = j.at("backoff_sec").get<std::int64_t>() * kSecondMs;
    has_backoff = true;
  } else if (j.contains("backoff")) {
    if (!read_backoff(j.at("backoff"), p, bullmq)) return "backoff";
    has_backoff = true;
  }
  // BullMQ without a backoff retries at once; the per-job form needs one.
  if (p.retries_max > 0 && !has_backoff && !bullmq) return "no backoff";
  // Without a count, a delay of 0 would retry until the deadline at once.
  if (p.retries_max == kWitnessUnlimited && p.delays.delay_ms <= 0) return "until with no delay";
  REHEARSE_ASSERT_GE(p.delays.delay_ms, 0);
  return {};
}

// The per-job form or BullMQ's native one.
WitnessPolicy read_own_form(const json& j) {
  WitnessPolicy p;
  const bool bullmq = j.contains("attempts");
  p.form = bullmq ? "bullmq" : "per_job";
  std::string error = read_count(j, bullmq, p);
  if (error.empty()) error = read_classes_and_budget(j, p);
  if (error.empty()) error = read_delays(j, bullmq, p);
  if (!error.empty()) return invalid_witness_policy(std::move(error));
  // read_count set the budget: a count of retries.
  REHEARSE_ASSERT_GE(p.retries_max, 0);
  REHEARSE_ASSERT(p.form == "bullmq" || p.form == "per_job");
  p.valid = true;
  return p;
}

// {"<system>": {...}} with retryable_classes, budget or reason beside it:
// the system's own reading (witness_systems), every class and per slot
// unless the siblings say otherwise. nullopt when no key names a system.
std::optional<WitnessPolicy> read_wrapped_system(const json& j) {
  const WitnessSystem* system = nullptr;
  for (const auto& [k, v] : j.items()) {
    const WitnessSystem* s = find_witness_system(k);
    if (s == nullptr) continue;
    if (system != nullptr) return invalid_witness_policy("two systems' policies");
    system = s;
  }
  if (system == nullptr) return std::nullopt;
  const bool machine_state = system->name == "stepfunctions" && j.contains("state");
  for (const auto& [k, v] : j.items()) {
    if (k != system->name && k != "retryable_classes" && k != "budget" && k != "reason" &&
        k != "retry_after" && k != "retry_budget" && !(k == "state" && machine_state)) {
      return invalid_witness_policy("key " + k + " beside " + std::string(system->name));
    }
  }
  const json* value = &j.at(std::string(system->name));
  if (machine_state) {
    // "state": the named state of a state machine definition.
    const json& name = j.at("state");
    if (!name.is_string() || !value->is_object() || !value->contains("States") ||
        !value->at("States").contains(name.get<std::string>())) {
      return invalid_witness_policy("state");
    }
    value = &value->at("States").at(name.get<std::string>());
  }
  WitnessPolicy p = system->read(*value);
  if (!p.valid) return p;
  p.form = std::string(system->name);
  p.per_slot = true;
  if (std::string error = read_classes_and_budget(j, p); !error.empty()) {
    return invalid_witness_policy(std::move(error));
  }
  if (!p.rules.empty() && !p.per_slot) return invalid_witness_policy("budget with retriers");
  // retryable_classes beside several retriers narrows each of them.
  for (WitnessRule& r : p.rules) {
    if (p.all_classes) break;
    std::erase_if(r.classes, [&p](const std::string& c) { return p.classes.count(c) == 0; });
  }
  REHEARSE_ASSERT(p.valid);
  REHEARSE_ASSERT_GE(p.retries_max, 0);
  return p;
}

}  // namespace

namespace {
// `retry_budget`: {name, percent 0..100 (20), window 1s..1h (10s),
// min_retries 0..1000 (3)}. An error, or "".
std::string read_witness_budget(const json& b, WitnessPolicy::Budget& out) {
  if (!b.is_object() || !b.contains("name") || !b.at("name").is_string() ||
      b.at("name").get<std::string>().empty()) {
    return "retry_budget";
  }
  for (const auto& [k, v] : b.items()) {
    if (k != "name" && k != "percent" && k != "window" && k != "min_retries") return "key " + k;
  }
  out.name = b.at("name").get<std::string>();
  const auto integer = [&b](const char* key, int lo, int hi, int& into) {
    if (!b.contains(key)) return true;
    const json& v = b.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      return false;
    }
    into = v.get<int>();
    return true;
  };
  if (!integer("percent", 0, 100, out.percent)) return "retry_budget percent";
  if (!integer("min_retries", 0, 1000, out.min_retries)) return "retry_budget min_retries";
  if (b.contains("window")) {
    const auto w = read_witness_delay(b.at("window"));
    if (!w || *w < 1000 || *w > 3'600'000) return "retry_budget window";
    out.window_ms = *w;
  }
  return {};
}
}  // namespace

WitnessPolicy invalid_witness_policy(std::string why) {
  WitnessPolicy p;
  p.why_invalid = std::move(why);
  REHEARSE_ASSERT(!p.valid);
  return p;
}

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
  if (j.contains("retry_after")) {
    const json& r = j.at("retry_after");
    if (!r.is_string() || (r != "honor" && r != "ignore")) return "retry_after";
    p.honors_retry_after = r == "honor";
  }
  if (j.contains("retry_budget")) {
    if (std::string error = read_witness_budget(j.at("retry_budget"), p.budget); !error.empty()) {
      return error;
    }
  }
  // Only names of the vocabulary are ever listed (the per-job defaults too).
  REHEARSE_ASSERT_LE(p.classes.size(), class_vocabulary().size());
  return {};
}

WitnessPolicy read_policy(const std::optional<json>& written, std::optional<bool> low_frequency,
                          bool* judged) {
  REHEARSE_ASSERT(judged != nullptr);
  *judged = true;
  if (!written) return invalid_witness_policy("no retry policy");
  const json& j = *written;
  if (j.is_string() && j.get<std::string>() == "auto") {
    if (low_frequency) return auto_policy(*low_frequency);
    *judged = false;
    return invalid_witness_policy("\"auto\" with a schedule the monitors cannot read");
  }
  if (!j.is_object()) return invalid_witness_policy("not an object nor \"auto\"");
  if (auto wrapped = read_wrapped_system(j)) return *wrapped;
  return read_own_form(j);
}

const WitnessRule* WitnessPolicy::rule_of(const std::string& failure_class) const {
  for (const WitnessRule& r : rules) {
    if (r.classes.count(failure_class) != 0) return &r;
  }
  return nullptr;
}

bool WitnessPolicy::retries_class(const std::string& failure_class) const {
  // Only the readers make a policy valid, and they read a count of retries.
  REHEARSE_ASSERT(!valid || retries_max >= 0);
  if (!valid || retries_max <= 0) return false;
  return all_classes || classes.count(failure_class) != 0;
}

namespace {

std::optional<std::int64_t> ruby_floor_div(std::int64_t a, std::int64_t b, bool modulo) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  std::int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    q -= 1;
    r += b;
  }
  return modulo ? r : q;
}

std::optional<std::int64_t> ruby_power(std::int64_t a, std::int64_t b) {
  if (b < 0) return std::nullopt;
  std::int64_t out = 1;
  for (std::int64_t i = 0; i < b; ++i) {
    if (__builtin_mul_overflow(out, a, &out)) return std::nullopt;
    if (out == 0 || out == 1) break;
  }
  return out;
}

}  // namespace

// A sidekiq_retry_in block at `count`, with Ruby's integer arithmetic
// (division and modulo round toward negative infinity); nullopt where Ruby
// would raise or leave 64 bits, which Sidekiq answers with its own formula.
std::optional<std::int64_t> eval_block(const json& e, std::int64_t count) {
  if (e.is_number_integer()) return e.get<std::int64_t>();
  if (e.is_string()) return e == "count" ? std::optional<std::int64_t>(count) : std::nullopt;
  if (!e.is_array() || e.empty() || !e[0].is_string()) return std::nullopt;
  const std::string op = e[0].get<std::string>();
  if (op == "neg" && e.size() == 2) {
    const auto a = eval_block(e[1], count);
    return a && *a != INT64_MIN ? std::optional<std::int64_t>(-*a) : std::nullopt;
  }
  if (e.size() != 3) return std::nullopt;
  const auto a = eval_block(e[1], count), b = eval_block(e[2], count);
  if (!a || !b) return std::nullopt;
  std::int64_t out = 0;
  if (op == "+") return __builtin_add_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
  if (op == "-") return __builtin_sub_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
  if (op == "*") return __builtin_mul_overflow(*a, *b, &out) ? std::nullopt : std::optional(out);
  if (op == "/" || op == "%") return ruby_floor_div(*a, *b, op == "%");
  if (op == "**") return ruby_power(*a, *b);
  return std::nullopt;
}

DurationMs WitnessDelays::base_ms(int n) const {
  const double d = static_cast<double>(delay_ms);
  double base = d;
  switch (curve) {
    case Curve::fixed: break;
    case Curve::exponential: base = d * std::pow(factor, std::min(n - 1, 4000)); break;
    case Curve::linear: base = d * static_cast<double>(n); break;
    case Curve::block:
      if (const auto seconds = eval_block(block, n - 1); seconds && *seconds > 0) {
        base = static_cast<double>(*seconds) * kSecondMs;
        break;
      }
      [[fallthrough]];
    case Curve::sidekiq:
      base = d + static_cast<double>(kSecondMs) * std::pow(static_cast<double>(n - 1), 4.0);
      break;
  }
  const DurationMs ms = saturate(base);
  const DurationMs out = cap_ms ? std::min(ms, *cap_ms) : ms;
  // Read delays and caps are durations: the delay is one too.
  REHEARSE_ASSERT_GE(out, 0);
  return out;
}

DurationMs WitnessDelays::decorrelated_bound_ms(int n) const {
  const double d = static_cast<double>(delay_ms) * std::pow(3.0, std::min(n, 4000));
  const DurationMs ms = saturate(d);
  return cap_ms ? std::min(ms, *cap_ms) : ms;
}

DurationMs WitnessDelays::decorrelated_after_ms(DurationMs previous_ms) const {
  const DurationMs ms = saturate(3.0 * static_cast<double>(std::max(previous_ms, delay_ms)));
  return cap_ms ? std::min(ms, *cap_ms) : ms;
}

DurationMs WitnessPolicy::min_delay_ms(int n) const {
  const DurationMs base = delays.base_ms(n);
  DurationMs low = base;
  if (delays.jitter == WitnessDelays::Jitter::decorrelated) {
    low = delays.cap_ms ? std::min(delays.delay_ms, *delays.cap_ms) : delays.delay_ms;
    return std::max<DurationMs>(0, low - 1);
  }
  if (delays.jitter == WitnessDelays::Jitter::full) low = 0;
  if (delays.jitter == WitnessDelays::Jitter::proportional) {
    low =
        static_cast<DurationMs>(std::floor(static_cast<double>(base) * (1.0 - delays.proportion)));
  }
  // 1 ms of slack for rounding on either side.
  const DurationMs out = std::max<DurationMs>(0, low - 1);
  // Jitter only lowers the floor (proportion in [0, 1]).
  REHEARSE_ASSERT_LE(out, base);
  return out;
}

DurationMs WitnessPolicy::max_delay_ms(int n) const {
  DurationMs high = delays.base_ms(n);
  if (delays.jitter == WitnessDelays::Jitter::decorrelated) high = delays.decorrelated_bound_ms(n);
  if (delays.jitter == WitnessDelays::Jitter::sidekiq) high += 9 * n * kSecondMs;
  const DurationMs out = std::min(high, kSaturatedMs) + 1;
  // The window is never empty (a retry number; a damaged count can make n < 0).
  if (n >= 0) REHEARSE_ASSERT_GT(out, min_delay_ms(n));
  return out;
}

}  // namespace rehearse::sim
