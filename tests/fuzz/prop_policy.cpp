// Retry policies in every form (docs/fuzzing.md, target `policy`). Input: one
// byte choosing the form, then the policy as a JavaScript object literal
// (model/js_literal.hpp; JSON is a subset).
//  - the literal reader: a refusal is a parse_error at "line:column" inside
//    the text; an accepted value reads back to itself from its JSON dump, and
//    agrees with nlohmann's parser on text both accept;
//  - the policy parsers (rehearse's own forms, "auto", each other system's
//    form): a refusal names a JSON pointer whose parent exists in the value;
//    an accepted policy has 0..kRetryCountMax retries and a plan whose delays
//    are within the jitter bounds and saturation, whose offsets add up, and
//    whose window range brackets the window.
#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "model/js_literal.hpp"
#include "model/policy_forms.hpp"
#include "model/retry_policy.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

using nlohmann::json;

bool is_line_column(const std::string& where, std::string_view text) {
  const auto colon = where.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == where.size()) return false;
  for (std::size_t i = 0; i < where.size(); ++i) {
    if (i != colon && (where[i] < '0' || where[i] > '9')) return false;
  }
  if (where.size() > 16) return false;  // keeps std::stoull in range
  const auto line = std::stoull(where.substr(0, colon));
  std::uint64_t lines = 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return line >= 1 && line <= lines && std::stoull(where.substr(colon + 1)) >= 1;
}

Result<json> check_literal(std::string_view text) {
  Result<json> value = parse_js_literal(text);
  if (!value.ok()) {
    REHEARSE_FUZZ_CHECK(value.error().code == ErrorCode::parse_error, value.error().describe());
    REHEARSE_FUZZ_CHECK(is_line_column(value.error().where, text), value.error().describe());
    return value;
  }
  const std::string dumped = value->dump();
  const Result<json> again = parse_js_literal(dumped);
  REHEARSE_FUZZ_CHECK(again.ok() && *again == *value, dumped);
  const json strict = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!strict.is_discarded()) {
    // JSON text both accept: the same value (numbers compare by value).
    REHEARSE_FUZZ_CHECK(strict == *value, strict.dump() + " vs " + dumped);
  }
  return value;
}

// The pointer a refusal names is inside the policy: its parent exists.
void check_refusal_pointer(const json& policy, const Error& error) {
  const std::string& where = error.where;
  if (where.empty()) return;
  REHEARSE_FUZZ_CHECK(where.front() == '/', error.describe());
  const std::string parent = where.substr(0, where.rfind('/'));
  bool found = false;
  try {
    found = policy.contains(json::json_pointer(parent)) || parent.empty();
  } catch (const json::exception&) {
    found = false;
  }
  REHEARSE_FUZZ_CHECK(found, error.describe() + " in " + policy.dump());
}

void check_plan(const RetryPolicy& policy) {
  const std::string what = describe(policy);
  REHEARSE_FUZZ_CHECK(policy.max_retries >= 0 && policy.max_retries <= kRetryCountMax, what);
  const RetryPlan plan = plan_retries(policy);
  REHEARSE_FUZZ_CHECK(plan.delays_ms.size() == static_cast<std::size_t>(policy.max_retries), what);
  REHEARSE_FUZZ_CHECK(plan.offsets_ms.size() == plan.delays_ms.size(), what);
  for (std::size_t i = 0; i < plan.delays_ms.size(); ++i) {
    const int n = static_cast<int>(i) + 1;
    const DurationMs d = plan.delays_ms[i];
    REHEARSE_FUZZ_CHECK(d >= 0 && d <= kBackoffSaturationMs, what);
    REHEARSE_FUZZ_CHECK(d == backoff_delay_ms(policy.backoff, n), what);
    const DurationMs lo = min_backoff_delay_ms(policy.backoff, n);
    const DurationMs hi = max_backoff_delay_ms(policy.backoff, n);
    REHEARSE_FUZZ_CHECK(0 <= lo && lo <= hi, what + " retry " + std::to_string(n));
    REHEARSE_FUZZ_CHECK(lo <= d && d <= hi, what + " retry " + std::to_string(n));
    const DurationMs before = i == 0 ? 0 : plan.offsets_ms[i - 1];
    REHEARSE_FUZZ_CHECK(plan.offsets_ms[i] == std::min(before + d, kBackoffSaturationMs), what);
  }
  REHEARSE_FUZZ_CHECK(
      plan.recovery_window_ms == (plan.offsets_ms.empty() ? 0 : plan.offsets_ms.back()), what);
  REHEARSE_FUZZ_CHECK(plan.shortest_window_ms <= plan.recovery_window_ms &&
                          plan.recovery_window_ms <= plan.longest_window_ms,
                      what);
  (void)to_json(policy);
  (void)to_json(plan);
}

void check_own_form(const json& value, bool with_schedule) {
  const std::optional<ScheduleFacts> facts =
      with_schedule ? std::optional<ScheduleFacts>(ScheduleFacts{"0 9 * * 1", true}) : std::nullopt;
  const Result<RetryPolicy> policy = parse_retry_policy(value, facts);
  if (!policy.ok()) return check_refusal_pointer(value, policy.error());
  check_plan(*policy);
}

void check_system_form(const PolicySystem& system, const json& value) {
  const Result<SystemPolicy> converted = convert_system_policy(system.name, value);
  if (!converted.ok()) return check_refusal_pointer(value, converted.error());
  REHEARSE_FUZZ_CHECK(converted->system == &system, std::string(system.name));
  REHEARSE_FUZZ_CHECK(converted->policy.form == system.form, std::string(system.name));
  check_plan(converted->policy);
  (void)policy_surprises(*converted, plan_retries(converted->policy));
}

}  // namespace

void check_policy(std::string_view input) {
  Input in(input);
  const std::uint8_t form = in.byte();
  const Result<json> value = check_literal(in.rest());
  if (!value.ok()) return;
  const auto systems = policy_systems();
  const std::size_t choice = form % (systems.size() + 2);
  if (choice < 2) return check_own_form(*value, choice == 1);
  check_system_form(systems[choice - 2], *value);
}

}  // namespace rehearse::fuzz
