// Retry policy parsing and BullMQ-exact backoff.
//
// Facts checked against BullMQ 5's source (src/classes/backoffs.ts, job.ts):
// - Job.shouldRetryJob retries while `attemptsMade + 1 < opts.attempts` (and
//   the error is not an UnrecoverableError), with the delay
//   `Backoffs.calculate(backoff, attemptsMade + 1, ...)`. attemptsMade counts
//   finished attempts before this one, so the n-th consecutive failure
//   (n = attemptsMade + 1 >= 1) is retried iff n < attempts, i.e. at most
//   attempts - 1 retries, and waits calculate(backoff, n).
// - Backoffs.normalize turns a finite number into {type: 'fixed', delay}.
// - fixed:        delay; with jitter j > 0:
//                 Math.floor(Math.random() * delay * j + delay * (1 - j))
// - exponential:  Math.round(Math.pow(2, n - 1) * delay); with jitter j > 0,
//                 max = that value and
//                 Math.floor(Math.random() * max * j + max * (1 - j))
// - Any other type is an error unless a custom strategy is registered (we
//   support none: custom strategies are code, not data).
// With an integer delay and n >= 1, 2^(n-1) * delay is an integer, so the
// Math.round never meets a half there; js_math_round still follows JS exactly
// (halves towards +infinity) for any caller that passes fractions.
// The jitter expression is evaluated in the same order as JS, in doubles; we
// build with -std=c++20 (no GNU extensions), where GCC does not contract
// a * b + c into an FMA, so the result is bit-for-bit what V8 computes.
#include "model/retry_policy.hpp"

#include "model/assert.hpp"
#include "model/policy_forms.hpp"
#include "model/policy_json.hpp"
#include "model/ruby_snippet.hpp"
#include "model/state_codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace rehearse {

using nlohmann::json;

const char* to_string(PolicyForm form) noexcept {
  switch (form) {
    case PolicyForm::per_job: return "per_job";
    case PolicyForm::bullmq: return "bullmq";
    case PolicyForm::auto_schedule: return "auto";
    case PolicyForm::temporal: return "temporal";
    case PolicyForm::stepfunctions: return "stepfunctions";
    case PolicyForm::sidekiq: return "sidekiq";
    case PolicyForm::celery: return "celery";
    case PolicyForm::k8s: return "k8s";
  }
  return "per_job";
}

const char* to_string(BackoffKind kind) noexcept {
  switch (kind) {
    case BackoffKind::fixed: return "fixed";
    case BackoffKind::exponential: return "exponential";
    case BackoffKind::linear: return "linear";
    case BackoffKind::polynomial: return "polynomial";
    case BackoffKind::expression: return "expression";
  }
  return "fixed";
}

const char* to_string(BudgetScope scope) noexcept {
  return scope == BudgetScope::per_slot ? "per_slot" : "per_episode";
}

std::optional<BackoffKind> parse_backoff_kind(std::string_view name) noexcept {
  if (name == "fixed") return BackoffKind::fixed;
  if (name == "exponential") return BackoffKind::exponential;
  if (name == "linear") return BackoffKind::linear;
  return std::nullopt;
}

std::optional<BudgetScope> parse_budget_scope(std::string_view name) noexcept {
  if (name == "per_slot") return BudgetScope::per_slot;
  if (name == "per_episode") return BudgetScope::per_episode;
  return std::nullopt;
}

const char* to_string(SideEffectKind kind) noexcept {
  switch (kind) {
    case SideEffectKind::none: return "none";
    case SideEffectKind::draft: return "draft";
    case SideEffectKind::publish: return "publish";
  }
  return "none";
}

std::optional<SideEffectKind> parse_side_effect_kind(std::string_view name) noexcept {
  if (name == "none") return SideEffectKind::none;
  if (name == "draft") return SideEffectKind::draft;
  if (name == "publish") return SideEffectKind::publish;
  return std::nullopt;
}

namespace {
constexpr std::string_view kFormsHint =
    "expected \"auto\", a per-job policy {\"max\" | \"until\", \"backoff_sec\" | \"backoff\", "
    "\"retryable_classes\", \"reason\"}, a BullMQ policy {\"attempts\", \"backoff\"} or "
    "another system's policy {\"bullmq\" | \"temporal\" | \"stepfunctions\" | \"sidekiq\" | "
    "\"celery\" | \"k8s\": {...}} (docs/policies.md)";
}  // namespace

namespace policy_json {

// RFC 6901 escaping of one reference token.
std::string pointer_token(std::string_view key) { return json_pointer_token(key); }

std::string child(std::string_view parent, std::string_view key) {
  return std::string(parent) + "/" + pointer_token(key);
}

// dump() that never throws on invalid UTF-8 in strings (errors quote input).
std::string safe_dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What a value is, for "expected X, got Y" messages.
std::string describe_value(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "the integer " + safe_dump(value);
    case json::value_t::number_float: return "the non-integer number " + safe_dump(value);
    case json::value_t::string: {
      std::string text = safe_dump(value);
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      return "the string " + text;
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

Error schema(std::string where, std::string message) {
  return make_error(ErrorCode::schema_error, std::move(message), std::move(where));
}
Error invalid(std::string where, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message), std::move(where));
}

// A whole number in [min, max]; JSON floats (even 2.0) are refused so that a
// count is always written as a count.
Result<std::int64_t> read_integer(const json& value, const std::string& where,
                                  std::string_view what, std::int64_t min, std::int64_t max) {
  const auto expected = fmt::format("expected {}: an integer from {} to {}", what, min, max);
  if (value.is_number_unsigned()) {
    // nlohmann stores every non-negative integer as unsigned: check both ends.
    const auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(max) || (min > 0 && v < static_cast<std::uint64_t>(min))) {
      return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
    }
    return static_cast<std::int64_t>(v);
  }
  if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if (v < min || v > max) {
      return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
    }
    return v;
  }
  return schema(where, fmt::format("{}, got {}", expected, describe_value(value)));
}

// DURATION in files: a string with units ("30m", "1h30m") or integer ms.
Result<DurationMs> read_duration(const json& value, const std::string& where) {
  const auto expected = fmt::format(
      "expected a duration: a string with units such as \"30m\" or an integer number of "
      "milliseconds, at most {}",
      format_duration(kBackoffDelayMaxMs));
  if (value.is_string()) {
    auto parsed = parse_duration(value.get_ref<const std::string&>());
    if (!parsed.ok()) {
      return invalid(where, fmt::format("{}; {}", expected, parsed.error().message));
    }
    if (*parsed > kBackoffDelayMaxMs) {
      return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
    }
    return *parsed;
  }
  if (value.is_number_integer()) {
    auto ms = read_integer(value, where, "a duration in milliseconds", 0, kBackoffDelayMaxMs);
    if (!ms.ok()) return std::move(ms).error();
    return *ms;
  }
  return schema(where, fmt::format("{}, got {}", expected, describe_value(value)));
}

Result<std::string> read_non_empty_string(const json& value, const std::string& where,
                                          std::string_view what) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
    return schema(where, fmt::format("expected {} (a non-empty string), got {}", what,
                                     describe_value(value)));
  }
  return value.get<std::string>();
}

Result<FailureClassSet> read_classes(const json& value, const std::string& where) {
  std::string names;
  for (const FailureClass c : all_failure_classes()) {
    names += names.empty() ? "" : ", ";
    names += to_string(c);
  }
  if (!value.is_array()) {
    return schema(where, fmt::format("expected an array of failure class names ({}), got {}", names,
                                     describe_value(value)));
  }
  FailureClassSet set;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const json& item = value[i];
    const std::string item_where = child(where, std::to_string(i));
    if (!item.is_string()) {
      return schema(item_where, fmt::format("expected a failure class name ({}), got {}", names,
                                            describe_value(item)));
    }
    const auto parsed = parse_failure_class(item.get_ref<const std::string&>());
    if (!parsed) {
      return invalid(item_where, fmt::format("unknown failure class {}: expected one of {}",
                                             safe_dump(item), names));
    }
    if (contains(set, *parsed)) {
      return invalid(item_where, fmt::format("failure class {} is listed twice", safe_dump(item)));
    }
    insert(set, *parsed);
  }
  return set;
}

Result<BudgetScope> read_budget(const json& value, const std::string& where) {
  const std::string expected = "expected \"per_slot\" or \"per_episode\"";
  if (!value.is_string()) {
    return schema(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  const auto parsed = parse_budget_scope(value.get_ref<const std::string&>());
  if (!parsed) {
    return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  return *parsed;
}

Result<bool> read_retry_after(const json& value, const std::string& where) {
  const std::string expected = "expected \"honor\" or \"ignore\"";
  if (!value.is_string()) {
    return schema(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  const std::string& text = value.get_ref<const std::string&>();
  if (text != "honor" && text != "ignore") {
    return invalid(where, fmt::format("{}, got {}", expected, describe_value(value)));
  }
  return text == "honor";
}

// `retry_budget`: {"name", "percent"?, "window"?, "min_retries"?}.
Result<RetryBudget> read_retry_budget(const json& value, const std::string& where) {
  if (!value.is_object()) {
    return schema(where, fmt::format("expected {{\"name\", \"percent\"?, \"window\"?, "
                                     "\"min_retries\"?}}, got {}",
                                     describe_value(value)));
  }
  if (auto s =
          check_keys(value, where, {"name", "percent", "window", "min_retries"}, "a retry budget");
      !s.ok()) {
    return std::move(s).error();
  }
  RetryBudget out;
  if (!value.contains("name")) {
    return schema(where, "missing name: jobs whose policies name the same budget share it");
  }
  auto name = read_non_empty_string(value.at("name"), where + "/name", "the budget's name");
  if (!name.ok()) return std::move(name).error();
  out.name = *name;
  if (value.contains("percent")) {
    auto p = read_integer(value.at("percent"), where + "/percent",
                          "the retries allowed per 100 attempts", 0, 100);
    if (!p.ok()) return std::move(p).error();
    out.percent = static_cast<int>(*p);
  }
  if (value.contains("window")) {
    auto w = read_duration(value.at("window"), where + "/window");
    if (!w.ok()) return std::move(w).error();
    if (*w < kSecondMs || *w > kRetryBudgetWindowMaxMs) {
      return invalid(where + "/window", fmt::format("expected a window from 1s to 1h, got {}",
                                                    describe_value(value.at("window"))));
    }
    out.window_ms = *w;
  }
  if (value.contains("min_retries")) {
    auto m = read_integer(value.at("min_retries"), where + "/min_retries",
                          "the retries allowed in any window", 0, kRetryBudgetMinRetriesMax);
    if (!m.ok()) return std::move(m).error();
    out.min_retries = static_cast<int>(*m);
  }
  return out;
}

// The keys every form takes beside its own: reason, budget, retry_after and
// retry_budget.
Status read_rehearse_keys(const json& policy, RetryPolicy& out) {
  if (policy.contains("reason")) {
    auto reason = read_non_empty_string(policy.at("reason"), "/reason", "a reason");
    if (!reason.ok()) return std::move(reason).error();
    out.reason = *reason;
  }
  if (policy.contains("budget")) {
    auto budget = read_budget(policy.at("budget"), "/budget");
    if (!budget.ok()) return std::move(budget).error();
    out.budget = *budget;
  }
  if (policy.contains("retry_after")) {
    auto honor = read_retry_after(policy.at("retry_after"), "/retry_after");
    if (!honor.ok()) return std::move(honor).error();
    out.honor_retry_after = *honor;
  }
  if (policy.contains("retry_budget")) {
    auto budget = read_retry_budget(policy.at("retry_budget"), "/retry_budget");
    if (!budget.ok()) return std::move(budget).error();
    out.retry_budget = *budget;
  }
  return {};
}

Status check_keys(const json& object, const std::string& where,
                  std::initializer_list<std::string_view> allowed, std::string_view form) {
  for (const auto& [key, unused] : object.items()) {
    (void)unused;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto name : allowed) {
        list += list.empty() ? "" : ", ";
        list += name;
      }
      return schema(child(where, key),
                    fmt::format("unknown key \"{}\" in {}: expected one of {}", key, form, list));
    }
  }
  return {};
}

}  // namespace policy_json

using namespace policy_json;

namespace {

constexpr std::string_view kTypesHint = "expected \"exponential\", \"fixed\" or \"linear\"";

constexpr std::string_view kJitterHint =
    "expected a jitter between 0 and 1, or \"none\", \"equal\", \"full\" or \"decorrelated\"";

// A number in [0, 1] (BullMQ's), or a shape by name: "none" 0, "equal" 0.5
// (a draw from [d/2, d]), "full" 1 (from [0, d]), "decorrelated" (rehearse's
// own: Brooker's decorrelated jitter, on an exponential curve only).
Status read_jitter(const json& jitter, const std::string& where, Backoff& backoff) {
  if (jitter.is_string()) {
    const auto& name = jitter.get_ref<const std::string&>();
    if (name == "decorrelated") {
      if (backoff.kind != BackoffKind::exponential) {
        return invalid(where,
                       "decorrelated jitter grows on its own (each delay at most 3 times "
                       "the one before): it needs \"type\": \"exponential\"");
      }
      backoff.decorrelated = true;
      return Status{};
    }
    static constexpr std::pair<std::string_view, double> kNamed[] = {
        {"none", 0.0}, {"equal", 0.5}, {"full", 1.0}};
    for (const auto& [n, j] : kNamed) {
      if (name == n) {
        backoff.jitter = j;
        return Status{};
      }
    }
    return invalid(where, fmt::format("{}, got {}", kJitterHint, safe_dump(jitter)));
  }
  if (!jitter.is_number()) {
    return schema(where, fmt::format("{}, got {}", kJitterHint, describe_value(jitter)));
  }
  const double j = jitter.get<double>();
  if (!(j >= 0.0 && j <= 1.0)) {
    return invalid(where, fmt::format("{}, got {}", kJitterHint, describe_value(jitter)));
  }
  backoff.jitter = j;
  return Status{};
}

// {"type", "delay"[, "max_delay"][, "jitter"]}. "linear", "max_delay" and the
// named jitter shapes are rehearse's own (BullMQ has none built in; see
// docs/retry.md).
Result<Backoff> read_backoff_object(const json& value, const std::string& where,
                                    bool jitter_allowed, std::string_view form) {
  if (jitter_allowed) {
    if (auto s = check_keys(value, where, {"type", "delay", "max_delay", "jitter"}, form);
        !s.ok()) {
      return std::move(s).error();
    }
  } else {
    if (auto s = check_keys(value, where, {"type", "delay", "max_delay"}, form); !s.ok()) {
      return std::move(s).error();
    }
  }
  Backoff backoff;
  const std::string type_where = child(where, "type");
  if (!value.contains("type")) {
    return schema(type_where, fmt::format("missing backoff type: {}", kTypesHint));
  }
  const json& type = value.at("type");
  if (!type.is_string()) {
    return schema(type_where, fmt::format("{}, got {}", kTypesHint, describe_value(type)));
  }
  const auto kind = parse_backoff_kind(type.get_ref<const std::string&>());
  if (!kind) {
    return invalid(type_where,
                   fmt::format("unknown backoff type {}: {} (custom strategies are code, "
                               "not data, and are not supported)",
                               safe_dump(type), kTypesHint));
  }
  backoff.kind = *kind;
  const std::string delay_where = child(where, "delay");
  if (!value.contains("delay")) {
    return schema(delay_where,
                  "missing backoff delay: expected a duration such as \"30m\" or integer ms");
  }
  auto delay = read_duration(value.at("delay"), delay_where);
  if (!delay.ok()) return std::move(delay).error();
  backoff.delay_ms = *delay;
  if (value.contains("max_delay")) {
    const std::string cap_where = child(where, "max_delay");
    auto cap = read_duration(value.at("max_delay"), cap_where);
    if (!cap.ok()) return std::move(cap).error();
    if (*cap <= 0) return invalid(cap_where, "expected a maximum delay above 0");
    backoff.max_delay_ms = *cap;
  }
  if (value.contains("jitter")) {
    if (auto s = read_jitter(value.at("jitter"), child(where, "jitter"), backoff); !s.ok()) {
      return std::move(s).error();
    }
  }
  return backoff;
}

// `max` and `until`: a count, a deadline, or both (whichever ends the chain
// first); `until` alone retries without a count limit.
Status read_per_job_limits(const json& policy, RetryPolicy& out) {
  if (policy.contains("until")) {
    auto until = read_duration(policy.at("until"), "/until");
    if (!until.ok()) return std::move(until).error();
    if (*until <= 0) return invalid("/until", "expected a deadline above 0, got 0");
    out.deadline_ms = *until;
  }
  if (!policy.contains("max")) {
    if (out.deadline_ms > 0) {
      out.max_retries = kRetriesUnlimited;
      return {};
    }
    return schema("/max",
                  "missing max: expected the number of accelerated retries after a "
                  "failure (an integer, 0 disables retries), or \"until\": a deadline to "
                  "retry without a count limit");
  }
  auto max = read_integer(policy.at("max"), "/max", "the number of accelerated retries", 0,
                          kRetryCountMax);
  if (!max.ok()) return std::move(max).error();
  out.max_retries = static_cast<int>(*max);
  return {};
}

Result<RetryPolicy> parse_per_job(const json& policy) {
  constexpr std::string_view kForm = "a per-job retry policy";
  if (auto s = check_keys(policy, "",
                          {"max", "backoff_sec", "backoff", "until", "retryable_classes", "reason",
                           "budget", "retry_after", "retry_budget"},
                          kForm);
      !s.ok()) {
    return std::move(s).error();
  }
  RetryPolicy out;
  out.form = PolicyForm::per_job;
  out.budget = BudgetScope::per_episode;
  auto limits = read_per_job_limits(policy, out);
  if (!limits.ok()) return std::move(limits).error();

  const bool has_sec = policy.contains("backoff_sec");
  const bool has_backoff = policy.contains("backoff");
  if (has_sec && has_backoff) {
    return schema("/backoff", "both backoff_sec and backoff given: use one of them");
  }
  if (has_sec) {
    auto sec = read_integer(policy.at("backoff_sec"), "/backoff_sec",
                            "a fixed delay in whole seconds", 0, kBackoffDelayMaxMs / kSecondMs);
    if (!sec.ok()) return std::move(sec).error();
    out.backoff = Backoff{BackoffKind::fixed, *sec * kSecondMs, 0.0};
  } else if (has_backoff) {
    const json& backoff = policy.at("backoff");
    if (!backoff.is_object()) {
      return schema("/backoff",
                    fmt::format("expected {{\"type\": \"exponential\" | \"fixed\", \"delay\": "
                                "DURATION}} (or use backoff_sec), got {}",
                                describe_value(backoff)));
    }
    auto parsed = read_backoff_object(backoff, "/backoff", false, "a per-job backoff");
    if (!parsed.ok()) return std::move(parsed).error();
    out.backoff = *parsed;
  } else if (out.max_retries > 0) {
    return schema("",
                  "missing backoff: a per-job policy with max > 0 needs backoff_sec (whole "
                  "seconds) or backoff {\"type\", \"delay\"}");
  }

  if (policy.contains("retryable_classes")) {
    auto classes = read_classes(policy.at("retryable_classes"), "/retryable_classes");
    if (!classes.ok()) return std::move(classes).error();
    out.retryable_classes = *classes;
  } else {
    // The table of docs/semantics.md §1: the per-job form's defaults.
    out.retryable_classes = default_retryable_classes();
  }
  if (auto keys = read_rehearse_keys(policy, out); !keys.ok()) return std::move(keys).error();
  if (!policy_retries(out) && out.reason.empty()) {
    return schema("/reason",
                  "missing reason: a per-job policy that never retries (max: 0 or no "
                  "retryable_classes) must say why in \"reason\"");
  }
  if (auto problem = unlimited_policy_problem(out); !problem.empty()) {
    return invalid("/until", problem);
  }
  return out;
}

Result<RetryPolicy> parse_bullmq(const json& policy) {
  constexpr std::string_view kForm = "a BullMQ retry policy";
  if (auto s = check_keys(policy, "",
                          {"attempts", "backoff", "retryable_classes", "budget", "reason",
                           "retry_after", "retry_budget"},
                          kForm);
      !s.ok()) {
    return std::move(s).error();
  }
  RetryPolicy out;
  out.form = PolicyForm::bullmq;
  out.budget = BudgetScope::per_slot;
  auto attempts = read_integer(policy.at("attempts"), "/attempts",
                               "attempts (the first run included)", 1, kRetryCountMax + 1);
  if (!attempts.ok()) return std::move(attempts).error();
  out.max_retries = static_cast<int>(*attempts - 1);

  if (policy.contains("backoff")) {
    const json& backoff = policy.at("backoff");
    if (backoff.is_object()) {
      auto parsed = read_backoff_object(backoff, "/backoff", true, "a BullMQ backoff");
      if (!parsed.ok()) return std::move(parsed).error();
      out.backoff = *parsed;
    } else if (backoff.is_number() || backoff.is_string()) {
      // BullMQ's Backoffs.normalize: a bare number is a fixed delay.
      auto delay = read_duration(backoff, "/backoff");
      if (!delay.ok()) return std::move(delay).error();
      out.backoff = Backoff{BackoffKind::fixed, *delay, 0.0};
    } else {
      return schema("/backoff",
                    fmt::format("expected a fixed delay (DURATION) or {{\"type\", \"delay\", "
                                "\"jitter\"?}}, got {}",
                                describe_value(backoff)));
    }
  } else {
    // BullMQ without a backoff retries at once.
    out.backoff = Backoff{BackoffKind::fixed, 0, 0.0};
  }

  if (policy.contains("retryable_classes")) {
    auto classes = read_classes(policy.at("retryable_classes"), "/retryable_classes");
    if (!classes.ok()) return std::move(classes).error();
    out.retryable_classes = *classes;
  } else {
    out.retryable_classes = all_classes_set();  // BullMQ retries every failure
  }
  if (auto keys = read_rehearse_keys(policy, out); !keys.ok()) return std::move(keys).error();
  return out;
}

// {"<system>": {...}} with rehearse's own keys beside it (retryable_classes,
// budget, reason); nullopt when no key names a system.
// The system's object; for "state" beside "stepfunctions", that state of
// the machine.
Result<json> choose_state(const json& policy, const std::string& name) {
  if (!policy.contains("state")) return policy.at(name);
  const json& state = policy.at("state");
  if (!state.is_string()) return schema("/state", "expected the name of a state (a string)");
  auto chosen = select_stepfunctions_state(policy.at(name), state.get<std::string>());
  if (!chosen.ok()) {
    Error e = std::move(chosen).error();
    e.where = child("", name) + e.where;
    return e;
  }
  return chosen;
}

std::optional<Result<RetryPolicy>> parse_wrapped_system(const json& policy) {
  std::string name;
  for (const auto& [key, unused] : policy.items()) {
    (void)unused;
    if (find_policy_system(key) == nullptr) continue;
    if (!name.empty()) {
      return Result<RetryPolicy>(
          schema(child("", key),
                 fmt::format("two systems' policies (\"{}\" and \"{}\"): give one", name, key)));
    }
    name = key;
  }
  if (name.empty()) return std::nullopt;
  for (const auto& [key, unused] : policy.items()) {
    (void)unused;
    const bool state = key == "state" && name == "stepfunctions";
    if (key != name && key != "retryable_classes" && key != "budget" && key != "reason" &&
        key != "retry_after" && key != "retry_budget" && !state) {
      return Result<RetryPolicy>(schema(
          child("", key),
          fmt::format("unknown key \"{}\" beside \"{}\": expected retryable_classes, budget, "
                      "reason, retry_after or retry_budget{}",
                      key, name, name == "stepfunctions" ? " (or state)" : "")));
    }
  }
  auto chosen = choose_state(policy, name);
  if (!chosen.ok()) return Result<RetryPolicy>(std::move(chosen).error());
  auto converted = convert_system_policy(name, *chosen);
  if (!converted.ok()) {
    Error e = std::move(converted).error();
    e.where = child("", name) + e.where;
    return Result<RetryPolicy>(std::move(e));
  }
  RetryPolicy out = converted->policy;
  if (policy.contains("retryable_classes")) {
    auto classes = read_classes(policy.at("retryable_classes"), "/retryable_classes");
    if (!classes.ok()) return Result<RetryPolicy>(std::move(classes).error());
    out.retryable_classes = *classes;
    // Beside several retriers, the classes narrow each one.
    for (RetryRule& r : out.rules) r.classes &= *classes;
  }
  if (auto keys = read_rehearse_keys(policy, out); !keys.ok()) {
    return Result<RetryPolicy>(std::move(keys).error());
  }
  if (policy.contains("budget")) {
    if (!out.rules.empty() && out.budget != BudgetScope::per_slot) {
      return Result<RetryPolicy>(
          invalid("/budget",
                  "several retriers count per execution (per_slot): a per_episode budget "
                  "cannot be kept for each of them"));
    }
  }
  return Result<RetryPolicy>(std::move(out));
}

}  // namespace

bool policy_retries(const RetryPolicy& policy) noexcept {
  return policy.max_retries > 0 && policy.retryable_classes.any();
}

RetryPolicy auto_retry_policy(const ScheduleFacts& schedule) {
  RetryPolicy out;
  out.form = PolicyForm::auto_schedule;
  out.budget = BudgetScope::per_slot;
  out.retryable_classes = all_classes_set();
  out.schedule_expression = schedule.expression;
  out.low_frequency = schedule.low_frequency;
  if (schedule.low_frequency) {
    out.max_retries = 3;  // attempts 4
    out.backoff = Backoff{BackoffKind::exponential, 30 * kMinuteMs, 0.0};
  } else {
    out.max_retries = 1;  // attempts 2
    out.backoff = Backoff{BackoffKind::exponential, 60 * kSecondMs, 0.0};
  }
  return out;
}

Result<RetryPolicy> parse_retry_policy(const json& policy,
                                       const std::optional<ScheduleFacts>& schedule) {
  if (policy.is_null()) {
    return schema("", fmt::format("missing retry policy: {}; there is no default", kFormsHint));
  }
  if (policy.is_string()) {
    const auto& text = policy.get_ref<const std::string&>();
    if (text != "auto") {
      return invalid("", fmt::format("unknown retry policy {}: {}", describe_value(policy),
                                     kFormsHint));
    }
    if (!schedule) {
      return invalid("",
                     "retry policy \"auto\" is chosen from the job's effective schedule, and "
                     "none was given");
    }
    return auto_retry_policy(*schedule);
  }
  if (!policy.is_object()) {
    return schema("", fmt::format("{}, got {}", kFormsHint, describe_value(policy)));
  }
  if (policy.empty()) {
    return schema("", fmt::format("empty retry policy: {}; there is no default", kFormsHint));
  }
  if (auto wrapped = parse_wrapped_system(policy)) return std::move(*wrapped);
  const bool per_job =
      policy.contains("max") || policy.contains("backoff_sec") || policy.contains("until");
  const bool bullmq = policy.contains("attempts");
  if (per_job && bullmq) {
    return schema("/attempts",
                  fmt::format("mixes the per-job form ({}) with the BullMQ form (attempts): use "
                              "one form",
                              policy.contains("max") ? "max" : "backoff_sec"));
  }
  if (per_job) return parse_per_job(policy);
  if (bullmq) return parse_bullmq(policy);
  // Report an unknown key first if there is one: it is the likelier mistake.
  for (const auto& [key, unused] : policy.items()) {
    (void)unused;
    if (key != "backoff" && key != "retryable_classes" && key != "reason" && key != "budget" &&
        key != "retry_after" && key != "retry_budget") {
      return schema(child("", key), fmt::format("unknown key \"{}\": {}", key, kFormsHint));
    }
  }
  return schema("", fmt::format("neither \"max\" nor \"attempts\" given: {}", kFormsHint));
}

double js_math_round(double x) noexcept {
  if (!std::isfinite(x)) return x;
  const double floor_x = std::floor(x);
  // x - floor(x) is exact for doubles, so this is exactly "halves up".
  return (x - floor_x >= 0.5) ? floor_x + 1.0 : floor_x;
}

namespace {
// A non-negative double delay as whole ms, saturating (NaN and inf saturate too).
DurationMs saturate(double ms) {
  if (!(ms < static_cast<double>(kBackoffSaturationMs))) return kBackoffSaturationMs;
  return static_cast<DurationMs>(js_math_round(ms));
}
}  // namespace

namespace {
// A sidekiq_retry_in block's delay before retry n: its value at count n - 1
// in seconds when that is an integer above 0; nullopt when Sidekiq falls
// back to its own formula (0 or less, or the block raised: division by
// zero, a negative exponent, a number beyond 64 bits).
std::optional<DurationMs> block_delay_ms(const Backoff& backoff, int n) {
  const json ast = json::parse(backoff.expression, nullptr, false);
  if (ast.is_discarded()) return std::nullopt;
  const auto seconds = eval_count_expression(ast, n - 1);
  if (!seconds.ok() || *seconds <= 0) return std::nullopt;
  if (*seconds > kBackoffSaturationMs / kSecondMs) return kBackoffSaturationMs;
  return *seconds * kSecondMs;
}
}  // namespace

DurationMs formula_delay_ms(const Backoff& backoff, int n) {
  REHEARSE_ASSERT(n >= 1);
  REHEARSE_ASSERT(backoff.delay_ms >= 0);
  const double delay = static_cast<double>(backoff.delay_ms);
  switch (backoff.kind) {
    case BackoffKind::fixed: return std::min(backoff.delay_ms, kBackoffSaturationMs);
    case BackoffKind::linear: return saturate(delay * n);
    case BackoffKind::expression:
      if (const auto block = block_delay_ms(backoff, n)) return *block;
      [[fallthrough]];
    case BackoffKind::polynomial:
      return saturate(delay + static_cast<double>(backoff.unit_ms) *
                                  std::pow(static_cast<double>(n - 1), backoff.exponent));
    case BackoffKind::exponential: break;
  }
  if (backoff.delay_ms == 0) return 0;
  if (backoff.factor == 2.0) {
    // 2^62 exceeds the saturation point for any delay >= 1 ms.
    if (n - 1 >= 62) return kBackoffSaturationMs;
    // Exact: a power-of-two scaling of an integer below 2^53 (delays are capped).
    return saturate(std::ldexp(delay, n - 1));
  }
  return saturate(delay * std::pow(backoff.factor, n - 1));
}

namespace {
DurationMs capped(const Backoff& backoff, DurationMs d) {
  return backoff.max_delay_ms > 0 ? std::min(d, backoff.max_delay_ms) : d;
}

// Decorrelated jitter: each delay at most this many times the one before.
constexpr double kDecorrelatedGrowth = 3.0;

// Decorrelated jitter's ceiling before retry n over every history of draws:
// each draw is at most 3 times the one before, the first 3 times the base.
DurationMs decorrelated_bound_ms(const Backoff& backoff, int n) {
  return capped(backoff, saturate(static_cast<double>(backoff.delay_ms) *
                                  std::pow(kDecorrelatedGrowth, std::min(n, 4000))));
}
}  // namespace

DurationMs backoff_delay_ms(const Backoff& backoff, int n) {
  if (backoff.decorrelated) return decorrelated_bound_ms(backoff, n);
  return capped(backoff, formula_delay_ms(backoff, n));
}

bool has_jitter(const Backoff& backoff) noexcept {
  return backoff.jitter > 0.0 || backoff.full_jitter || backoff.additive_steps > 0 ||
         backoff.decorrelated;
}

DurationMs decorrelated_ceiling_ms(const Backoff& backoff, DurationMs previous_ms) {
  const DurationMs previous = std::max(previous_ms, backoff.delay_ms);
  return capped(backoff, saturate(kDecorrelatedGrowth * static_cast<double>(previous)));
}

namespace {
DurationMs additive_step_ms(const Backoff& backoff, int n) {
  return static_cast<DurationMs>(n) * backoff.unit_ms;
}
}  // namespace

namespace {
// min(cap, a draw from [base, 3 * previous]); a previous delay above what
// any history allows (a state file edited by hand) counts as that bound.
DurationMs decorrelated_delay_ms(const Backoff& backoff, int n, double rand,
                                 DurationMs previous_ms) {
  const DurationMs previous =
      n > 1 ? std::clamp<DurationMs>(previous_ms, 0, decorrelated_bound_ms(backoff, n - 1)) : 0;
  const DurationMs low = backoff.delay_ms;
  const DurationMs high =
      saturate(kDecorrelatedGrowth * static_cast<double>(std::max(previous, low)));
  const auto span = static_cast<double>(high - low) + 1.0;
  const DurationMs drawn = std::min(high, low + static_cast<DurationMs>(std::floor(rand * span)));
  return capped(backoff, drawn);
}

DurationMs jittered_delay_ms(const Backoff& backoff, int n, RandomSource* random,
                             DurationMs previous_ms) {
  const DurationMs max_delay = backoff_delay_ms(backoff, n);
  if (!has_jitter(backoff)) return max_delay;
  REHEARSE_ASSERT(random != nullptr);
  const double rand = random->next_unit();
  if (backoff.decorrelated) return decorrelated_delay_ms(backoff, n, rand, previous_ms);
  const double max_d = static_cast<double>(max_delay);
  if (backoff.full_jitter) {
    return std::clamp(static_cast<DurationMs>(std::floor(rand * (max_d + 1.0))), DurationMs{0},
                      max_delay);
  }
  if (backoff.additive_steps > 0) {
    const auto steps = static_cast<DurationMs>(rand * backoff.additive_steps);
    return std::min(max_delay + steps * additive_step_ms(backoff, n), kBackoffSaturationMs);
  }
  const double min_delay = max_d * (1.0 - backoff.jitter);
  const double jittered = std::floor(rand * max_d * backoff.jitter + min_delay);
  // Double rounding can make this exactly max_delay (rand close to 1), as it
  // does in JS; the clamp only guards against anything outside [0, max].
  return std::clamp(static_cast<DurationMs>(jittered), DurationMs{0}, max_delay);
}
}  // namespace

DurationMs backoff_delay_ms(const Backoff& backoff, int n, RandomSource* random) {
  return backoff_delay_ms(backoff, n, random, 0);
}

DurationMs backoff_delay_ms(const Backoff& backoff, int n, RandomSource* random,
                            DurationMs previous_ms) {
  const DurationMs delay = jittered_delay_ms(backoff, n, random, previous_ms);
  // The policy's delay bounds (docs/policies.md), the ones the monitors hold
  // every retry to.
  REHEARSE_ASSERT_GE(delay, min_backoff_delay_ms(backoff, n));
  REHEARSE_ASSERT_LE(delay, max_backoff_delay_ms(backoff, n));
  return delay;
}

DurationMs min_backoff_delay_ms(const Backoff& backoff, int n) {
  const DurationMs d = backoff_delay_ms(backoff, n);
  if (backoff.decorrelated) return capped(backoff, backoff.delay_ms);
  if (backoff.full_jitter) return 0;
  if (backoff.jitter > 0.0) {
    return static_cast<DurationMs>(std::floor(static_cast<double>(d) * (1.0 - backoff.jitter)));
  }
  return d;
}

DurationMs max_backoff_delay_ms(const Backoff& backoff, int n) {
  const DurationMs d = backoff_delay_ms(backoff, n);
  if (backoff.jitter > 0.0) {
    // BullMQ's draw at the greatest unit below 1 a RandomSource gives:
    // usually d - 1, d only where the double rounds up (as in JS).
    const double top = 1.0 - 0x1p-53;
    const double max_d = static_cast<double>(d);
    const double high = std::floor(top * max_d * backoff.jitter + max_d * (1.0 - backoff.jitter));
    return std::clamp(static_cast<DurationMs>(high), DurationMs{0}, d);
  }
  if (backoff.additive_steps <= 0) return d;
  return std::min(d + (backoff.additive_steps - 1) * additive_step_ms(backoff, n),
                  kBackoffSaturationMs);
}

std::string format_retry_limit(int limit) {
  return limit == kRetriesUnlimited ? std::string("unlimited") : std::to_string(limit);
}

std::string unlimited_policy_problem(const RetryPolicy& policy) {
  if (!unlimited_retries(policy)) return "";
  if (policy.deadline_ms <= 0) {
    return "retries without a count limit need a deadline: without one they never stop";
  }
  if (formula_delay_ms(policy.backoff, 1) <= 0) {
    return "retries without a count limit need a delay above 0: at once, they would spin "
           "until the deadline";
  }
  return "";
}

namespace {
// Whether retry n, `offset` after a failure taken at the slot, still comes
// due within the deadline.
bool within_deadline(const RetryPolicy& policy, DurationMs offset) {
  return policy.deadline_ms <= 0 || offset <= policy.deadline_ms;
}

RetryPlan::Stop plan_stop(const RetryPolicy& policy, int n, DurationMs next_offset) {
  if (n > policy.max_retries) return RetryPlan::Stop::count;
  if (!within_deadline(policy, next_offset)) return RetryPlan::Stop::deadline;
  return RetryPlan::Stop::listed;
}
}  // namespace

RetryPlan plan_retries(const RetryPolicy& policy) {
  RetryPlan plan;
  plan.form = policy.form;
  plan.max_retries = policy.max_retries;
  plan.deadline_ms = policy.deadline_ms;
  plan.retryable_classes = policy.retryable_classes;
  plan.budget = policy.budget;
  plan.honor_retry_after = policy.honor_retry_after;
  plan.retry_budget = policy.retry_budget;
  plan.backoff = policy.backoff;
  DurationMs offset = 0, shortest = 0, longest = 0;
  // All three stay <= kBackoffSaturationMs (2.5e14): sums cannot overflow.
  int n = 1;
  for (; n <= policy.max_retries && n <= kPlanRetriesMax; ++n) {
    const DurationMs delay = backoff_delay_ms(policy.backoff, n);
    const DurationMs next = std::min(offset + delay, kBackoffSaturationMs);
    if (!within_deadline(policy, next)) break;
    if (plan.capped_from == 0 && delay < formula_delay_ms(policy.backoff, n)) plan.capped_from = n;
    offset = next;
    shortest = std::min(shortest + min_backoff_delay_ms(policy.backoff, n), kBackoffSaturationMs);
    longest = std::min(longest + max_backoff_delay_ms(policy.backoff, n), kBackoffSaturationMs);
    plan.delays_ms.push_back(delay);
    plan.offsets_ms.push_back(offset);
  }
  plan.planned = n - 1;
  plan.stop =
      plan_stop(policy, n,
                std::min(offset + backoff_delay_ms(policy.backoff, n), kBackoffSaturationMs));
  plan.recovery_window_ms = offset;
  plan.shortest_window_ms = shortest;
  // Jitter may also bring a retry past the deadline forward: the window
  // never reaches beyond it.
  plan.longest_window_ms = policy.deadline_ms > 0 ? std::min(longest, policy.deadline_ms) : longest;
  plan.longest_window_ms = std::max(plan.longest_window_ms, offset);
  REHEARSE_ASSERT_EQ(plan.delays_ms.size(), static_cast<std::size_t>(plan.planned));
  return plan;
}

RetryPlan plan_rule(const RetryPolicy& policy, std::size_t rule) {
  REHEARSE_ASSERT_LT(rule, policy.rules.size());
  RetryPolicy one = policy;
  one.rules.clear();
  one.max_retries = policy.rules[rule].max_retries;
  one.backoff = policy.rules[rule].backoff;
  one.retryable_classes = policy.rules[rule].classes;
  return plan_retries(one);
}

std::optional<std::size_t> rule_for(const RetryPolicy& policy, FailureClass c) {
  for (std::size_t i = 0; i < policy.rules.size(); ++i) {
    if (contains(policy.rules[i].classes, c)) return i;
  }
  return std::nullopt;
}

namespace {
// A count, or "unlimited" (JSON has no infinity).
json format_limit_json(int limit) {
  return limit == kRetriesUnlimited ? json("unlimited") : json(limit);
}

json backoff_json(const Backoff& backoff) {
  json out = json::object();
  out["type"] = to_string(backoff.kind);
  out["delay_ms"] = backoff.delay_ms;
  out["delay"] = format_duration(backoff.delay_ms);
  out["jitter"] = backoff.jitter;
  if (backoff.kind == BackoffKind::exponential) out["factor"] = backoff.factor;
  if (backoff.kind == BackoffKind::polynomial || backoff.kind == BackoffKind::expression) {
    out["exponent"] = backoff.exponent;
    out["unit_ms"] = backoff.unit_ms;
  }
  if (backoff.kind == BackoffKind::expression) out["expression"] = json::parse(backoff.expression);
  if (backoff.max_delay_ms > 0) {
    out["max_delay_ms"] = backoff.max_delay_ms;
    out["max_delay"] = format_duration(backoff.max_delay_ms);
  }
  if (backoff.full_jitter) out["full_jitter"] = true;
  if (backoff.additive_steps > 0) out["additive_steps"] = backoff.additive_steps;
  if (backoff.decorrelated) out["decorrelated_jitter"] = true;
  return out;
}

json budget_json(const RetryBudget& b) {
  return json{{"name", b.name},
              {"percent", b.percent},
              {"window_ms", b.window_ms},
              {"min_retries", b.min_retries}};
}
}  // namespace

json to_json(const RetryPolicy& policy) {
  json out = json::object();
  out["form"] = to_string(policy.form);
  out["max_retries"] = format_limit_json(policy.max_retries);
  if (policy.deadline_ms > 0) {
    out["deadline_ms"] = policy.deadline_ms;
    out["deadline"] = format_duration(policy.deadline_ms);
  }
  out["backoff"] = backoff_json(policy.backoff);
  for (const RetryRule& r : policy.rules) {
    out["rules"].push_back({{"error_names", r.error_names},
                            {"classes", class_names(r.classes)},
                            {"max_retries", r.max_retries},
                            {"backoff", backoff_json(r.backoff)}});
  }
  out["retryable_classes"] = class_names(policy.retryable_classes);
  out["budget"] = to_string(policy.budget);
  if (!policy.reason.empty()) out["reason"] = policy.reason;
  if (policy.honor_retry_after) out["retry_after"] = "honor";
  if (!policy.retry_budget.name.empty()) out["retry_budget"] = budget_json(policy.retry_budget);
  if (policy.form == PolicyForm::auto_schedule) {
    out["schedule"] = policy.schedule_expression;
    out["low_frequency"] = policy.low_frequency;
  }
  return out;
}

json to_json(const RetryPlan& plan) {
  json out = json::object();
  out["form"] = to_string(plan.form);
  out["max_retries"] = format_limit_json(plan.max_retries);
  if (plan.deadline_ms > 0) out["deadline_ms"] = plan.deadline_ms;
  out["planned"] = plan.planned;
  out["stopped_by"] = plan.stop == RetryPlan::Stop::count      ? "count"
                      : plan.stop == RetryPlan::Stop::deadline ? "deadline"
                                                               : "listed";
  out["delays_ms"] = plan.delays_ms;
  out["offsets_ms"] = plan.offsets_ms;
  out["recovery_window_ms"] = plan.recovery_window_ms;
  // Present only when they say something (jitter; a cap that bites).
  if (plan.shortest_window_ms != plan.recovery_window_ms ||
      plan.longest_window_ms != plan.recovery_window_ms) {
    out["shortest_window_ms"] = plan.shortest_window_ms;
    out["longest_window_ms"] = plan.longest_window_ms;
  }
  if (plan.capped_from > 0) out["capped_from"] = plan.capped_from;
  out["retryable_classes"] = class_names(plan.retryable_classes);
  out["budget"] = to_string(plan.budget);
  out["backoff"] = backoff_json(plan.backoff);
  if (plan.honor_retry_after) out["retry_after"] = "honor";
  if (!plan.retry_budget.name.empty()) out["retry_budget"] = budget_json(plan.retry_budget);
  return out;
}

std::string describe(const RetryPolicy& policy) {
  std::string classes;
  for (const auto& name : class_names(policy.retryable_classes)) {
    classes += classes.empty() ? "" : ",";
    classes += name;
  }
  if (classes.empty()) classes = "none";
  std::string text =
      fmt::format("{} max={} backoff={} {}", to_string(policy.form),
                  format_retry_limit(policy.max_retries), to_string(policy.backoff.kind),
                  format_duration(policy.backoff.delay_ms));
  const Backoff& b = policy.backoff;
  if (b.kind == BackoffKind::exponential && b.factor != 2.0)
    text += fmt::format(" factor={}", b.factor);
  if (b.kind == BackoffKind::polynomial) {
    text += fmt::format(" +{}*(n-1)^{}", format_duration(b.unit_ms), b.exponent);
  }
  if (b.kind == BackoffKind::expression) text += fmt::format(" block={}", b.expression);
  if (b.max_delay_ms > 0) text += fmt::format(" cap={}", format_duration(b.max_delay_ms));
  if (b.jitter > 0.0) text += fmt::format(" jitter={}", b.jitter);
  if (b.full_jitter) text += " jitter=full";
  if (b.decorrelated) text += " jitter=decorrelated";
  if (b.additive_steps > 0)
    text += fmt::format(" jitter=+rand({})*n*{}", b.additive_steps, format_duration(b.unit_ms));
  if (policy.deadline_ms > 0) text += fmt::format(" until={}", format_duration(policy.deadline_ms));
  if (!policy.rules.empty()) text += fmt::format(" retriers={}", policy.rules.size());
  text += fmt::format(" classes={} budget={}", classes, to_string(policy.budget));
  if (policy.honor_retry_after) text += " retry_after=honor";
  if (const RetryBudget& rb = policy.retry_budget; !rb.name.empty()) {
    text += fmt::format(" retry_budget={}:{}%/{}+{}", rb.name, rb.percent,
                        format_duration(rb.window_ms), rb.min_retries);
  }
  return text;
}

std::optional<std::string> side_effect_warning(const SideEffectDeclaration& declaration,
                                               const RetryPolicy& policy) {
  if (declaration.kind != SideEffectKind::publish) return std::nullopt;
  if (!policy_retries(policy)) return std::nullopt;
  if (!declaration.idempotency_key.empty()) return std::nullopt;
  if (!declaration.reason.empty() || !policy.reason.empty()) return std::nullopt;
  return std::string(
      "side_effects is \"publish\" and the retry policy retries, but the job declares neither an "
      "idempotency key nor a reason why a re-run is safe");
}

}  // namespace rehearse
