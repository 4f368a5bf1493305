// The shared readers of the systems' converters (policy_forms_detail.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "model/assert.hpp"
#include "model/edit_distance.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

// A key as people misspell it across systems: case and `_` do not count
// (max_retries, maxRetries and MaxRetries are one key).
std::string folded(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

std::size_t common_prefix(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Close: a few edits apart, or most of the shorter one a shared prefix
// (max_retry and max_retries).
bool close_keys(const std::string& a, const std::string& b, std::size_t distance) {
  const std::size_t shorter = std::min(a.size(), b.size());
  if (distance <= std::max<std::size_t>(2, shorter / 3)) return true;
  return common_prefix(a, b) >= std::max<std::size_t>(5, shorter * 2 / 3);
}

// The system's key `key` most resembles, or "" when none is close.
std::string_view resembles(std::string_view key, KeyList candidates) {
  const std::string k = folded(key);
  std::string_view best;
  std::size_t best_distance = 0;
  for (const auto c : candidates) {
    const std::string f = folded(c);
    const std::size_t d = edit_distance(k, f);
    if (close_keys(k, f, d) && (best.empty() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace

Status sort_keys(const json& value, KeyList retry_keys, KeyList ignorable, std::string_view title,
                 SystemPolicy& out) {
  for (const auto& [key, unused] : value.items()) {
    (void)unused;
    // (An init-capture: clang 14 cannot capture a structured binding.)
    const auto is = [&k = key](KeyList list) {
      return std::find(list.begin(), list.end(), k) != list.end();
    };
    if (is(retry_keys)) continue;
    if (is(ignorable)) {
      out.ignored.push_back(key);
      continue;
    }
    std::string list;
    for (const auto k : retry_keys) list += fmt::format("{}{}", list.empty() ? "" : ", ", k);
    const std::string_view near = resembles(key, retry_keys);
    const std::string hint = near.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", near);
    return schema(child("", key),
                  fmt::format("unknown key \"{}\" in a {} policy{}: expected {} (or a key {} "
                              "knows that does not bear on retries; docs/policies.md, \"The "
                              "systems\")",
                              key, title, hint, list, title));
  }
  return {};
}

Status require_object(const json& value, std::string_view title) {
  if (value.is_object()) return {};
  return schema("",
                fmt::format("expected a {} policy object, got {}", title, describe_value(value)));
}

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

const json& unwrap_call(const json& value) {
  if (value.is_object() && value.contains("$call") && value.contains("kwargs")) {
    return value.at("kwargs");
  }
  return value;
}

Error rebased(Error e, std::string_view base) {
  e.where = std::string(base) + e.where;
  return e;
}

}  // namespace rehearse::policy_forms_detail
