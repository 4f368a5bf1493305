// AWS Step Functions' retry settings as the core's RetryPolicy
// (docs/policies.md, "stepfunctions"): one retrier, a Retry array, a Task
// state, or a whole state machine (the state that retries, or the one
// chosen). Every retrier's ErrorEquals is read as failure classes
// (model/error_names.hpp), in order: a class goes to the first retrier that
// names it, and each retrier counts its own retries, as the Amazon States
// Language says. Catch is reported as what follows a spent budget.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "model/assert.hpp"
#include "model/error_names.hpp"
#include "model/job_state.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

constexpr std::string_view kAll = "States.ALL";

struct Retrier {
  RetryRule rule;
  bool names_all = false;
};

Result<Backoff> read_retrier_curve(const json& r, const std::string& base, SystemPolicy& out,
                                   bool note_defaults) {
  const auto at = [&](const char* key) { return base + "/" + key; };
  Backoff b{BackoffKind::exponential, kSecondMs, 0.0};
  if (r.contains("IntervalSeconds")) {
    REHEARSE_TRY(interval, read_seconds(r.at("IntervalSeconds"), at("IntervalSeconds"),
                                        "IntervalSeconds (whole seconds)", 1));
    b.delay_ms = *interval;
  } else if (note_defaults) {
    out.defaults.push_back("IntervalSeconds: 1");
  }
  if (r.contains("BackoffRate")) {
    REHEARSE_TRY(rate,
                 read_number(r.at("BackoffRate"), at("BackoffRate"), "BackoffRate", 1.0, 1000.0));
    b.factor = *rate;
  } else if (note_defaults) {
    out.defaults.push_back("BackoffRate: 2.0");
  }
  if (r.contains("MaxDelaySeconds")) {
    REHEARSE_TRY(cap, read_seconds(r.at("MaxDelaySeconds"), at("MaxDelaySeconds"),
                                   "MaxDelaySeconds (whole seconds)", 1));
    b.max_delay_ms = *cap;
  }
  if (r.contains("JitterStrategy")) {
    const json& j = r.at("JitterStrategy");
    if (!j.is_string() || (j != "FULL" && j != "NONE")) {
      return invalid(at("JitterStrategy"),
                     fmt::format("expected \"FULL\" or \"NONE\", got {}", describe_value(j)));
    }
    b.full_jitter = j == "FULL";
  }
  return b;
}

// ErrorEquals: the names, their classes; States.ALL only alone (the
// language's rule; its place, last, is checked by the caller).
Status read_error_names(const json& r, const std::string& base, Retrier& out, SystemPolicy& notes) {
  const std::string where = base + "/ErrorEquals";
  if (!r.contains("ErrorEquals")) {
    out.names_all = true;
    out.rule.error_names = {std::string(kAll)};
    out.rule.classes = all_classes_set();
    notes.defaults.push_back("ErrorEquals: [\"States.ALL\"] (the language requires it)");
    return {};
  }
  const json& names = r.at("ErrorEquals");
  if (!names.is_array() || names.empty()) {
    return schema(where, fmt::format("expected a non-empty list of error names, got {}",
                                     describe_value(names)));
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!names.at(i).is_string()) {
      return schema(child(where, std::to_string(i)), "expected an error name (a string)");
    }
    const std::string name = names.at(i).get<std::string>();
    if (name == kAll && names.size() > 1) {
      return invalid(where, "States.ALL must appear alone in its ErrorEquals");
    }
    const ErrorNameClasses read = classes_of_error_name(name);
    if (!read.known) {
      notes.notes.push_back(
          fmt::format("ErrorEquals \"{}\": an application's own error, read as "
                      "class unknown",
                      name));
    }
    out.names_all = out.names_all || name == kAll;
    out.rule.error_names.push_back(name);
    out.rule.classes |= read.classes;
  }
  return {};
}

Result<Retrier> read_retrier(const json& r, const std::string& base, SystemPolicy& out,
                             bool first) {
  if (auto s = require_object(r, "Step Functions retrier"); !s.ok()) {
    return rebased(std::move(s).error(), base);
  }
  if (auto s = sort_keys(r,
                         {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate",
                          "MaxDelaySeconds", "JitterStrategy", "Comment"},
                         {}, "Step Functions", out);
      !s.ok()) {
    return rebased(std::move(s).error(), base);
  }
  Retrier retrier;
  if (auto s = read_error_names(r, base, retrier, out); !s.ok()) return std::move(s).error();
  retrier.rule.max_retries = 3;
  if (r.contains("MaxAttempts")) {
    REHEARSE_TRY(max, read_integer(r.at("MaxAttempts"), base + "/MaxAttempts",
                                   "MaxAttempts (retries; 0 never retries)", 0, kRetryCountMax));
    retrier.rule.max_retries = static_cast<int>(*max);
  } else if (first) {
    out.defaults.push_back("MaxAttempts: 3");
  }
  REHEARSE_TRY(curve, read_retrier_curve(r, base, out, first));
  retrier.rule.backoff = *curve;
  return retrier;
}

}  // namespace

namespace {

// The policy of a Retry array: one retrier is a plain policy; several are
// rules, each class going to the first retrier that names it.
Result<RetryPolicy> read_retry_array(const json& array, const std::string& base,
                                     SystemPolicy& out) {
  if (!array.is_array() || array.empty()) {
    return schema(base,
                  fmt::format("expected a Retry array of retriers, got {}", describe_value(array)));
  }
  if (array.size() > kRuleCountMax) {
    return invalid(base, fmt::format("expected at most {} retriers", kRuleCountMax));
  }
  std::vector<RetryRule> rules;
  FailureClassSet taken;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string where = fmt::format("{}/{}", base, i);
    REHEARSE_TRY(retrier, read_retrier(array.at(i), where, out, i == 0));
    if (retrier->names_all && i + 1 != array.size()) {
      return invalid(where + "/ErrorEquals", "States.ALL must be in the last retrier");
    }
    retrier->rule.classes &= ~taken;
    taken |= retrier->rule.classes;
    rules.push_back(std::move(retrier->rule));
  }
  RetryPolicy policy =
      system_policy(PolicyForm::stepfunctions, rules[0].max_retries, rules[0].backoff);
  policy.retryable_classes = taken;
  if (rules.size() == 1) return policy;
  int total = 0;
  for (const RetryRule& r : rules) total += r.max_retries;
  policy.max_retries = total;
  policy.rules = std::move(rules);
  return policy;
}

// Catch: what a spent budget leads to, said in words.
void note_catchers(const json& state, SystemPolicy& out) {
  if (!state.contains("Catch") || !state.at("Catch").is_array()) return;
  for (const json& c : state.at("Catch")) {
    std::string names;
    for (const json& n : c.value("ErrorEquals", json::array())) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ",
                           n.is_string() ? n.get<std::string>() : "?");
    }
    out.notes.push_back(
        fmt::format("Catch [{}] -> {}: where the execution goes once the retries "
                    "are spent (rehearse waits for the next regular run)",
                    names, c.value("Next", std::string("?"))));
  }
}

// A Task (or Parallel, Map) state: its Retry array; its other fields do not
// bear on retries.
Result<RetryPolicy> read_state(const json& state, const std::string& base, SystemPolicy& out) {
  if (auto s = require_object(state, "Step Functions state"); !s.ok()) {
    return rebased(std::move(s).error(), base);
  }
  if (!state.contains("Retry")) {
    return schema(base,
                  "this state has no Retry field: it never retries (write its Retry "
                  "array, or choose another state)");
  }
  note_catchers(state, out);
  return read_retry_array(state.at("Retry"), base + "/Retry", out);
}

// A whole state machine: the one state with a Retry field.
Result<RetryPolicy> read_machine(const json& machine, SystemPolicy& out) {
  const json& states = machine.at("States");
  if (!states.is_object()) return schema("/States", "expected the States object");
  std::vector<std::string> retrying;
  for (const auto& [name, state] : states.items()) {
    if (state.is_object() && state.contains("Retry")) retrying.push_back(name);
  }
  if (retrying.size() != 1) {
    std::string list;
    for (const auto& n : retrying) list += fmt::format("{}{}", list.empty() ? "" : ", ", n);
    return schema("/States", retrying.empty()
                                 ? std::string("no state of this machine has a Retry field")
                                 : fmt::format("several states retry ({}): choose one with "
                                               "--state NAME, or \"state\": NAME beside "
                                               "\"stepfunctions\" in a scenario",
                                               list));
  }
  return read_state(states.at(retrying[0]), child("/States", retrying[0]), out);
}

}  // namespace

Result<SystemPolicy> convert_stepfunctions(const json& input) {
  SystemPolicy out;
  Result<RetryPolicy> policy = make_error(ErrorCode::invalid_argument, "");
  if (input.is_array()) {
    policy = read_retry_array(input, "", out);
  } else if (input.is_object() && input.contains("States")) {
    policy = read_machine(input, out);
  } else if (input.is_object() && (input.contains("Retry") || input.contains("Type"))) {
    policy = read_state(input, "", out);
  } else {
    policy = read_retry_array(json::array({input}), "", out);
    if (!policy.ok()) {
      Error e = std::move(policy).error();
      // A lone retrier's pointers are its own, not the array's.
      if (e.where.rfind("/0", 0) == 0) e.where = e.where.substr(2);
      return e;
    }
  }
  if (!policy.ok()) return std::move(policy).error();
  out.policy = std::move(*policy);
  return out;
}

Result<json> select_state(const json& definition, std::string_view state) {
  if (!definition.is_object() || !definition.contains("States") ||
      !definition.at("States").is_object()) {
    return schema("",
                  "--state names a state of a state machine: expected a definition with "
                  "\"States\"");
  }
  const json& states = definition.at("States");
  if (!states.contains(std::string(state))) {
    std::string list;
    for (const auto& [name, unused] : states.items()) {
      (void)unused;
      list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
    }
    return schema("/States", fmt::format("no state \"{}\": the machine has {}", state, list));
  }
  return states.at(std::string(state));
}

}  // namespace rehearse::policy_forms_detail
