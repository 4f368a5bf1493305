// Strict readers of policy JSON shared by the policy parsers
// (model/retry_policy.cpp, model/policy_forms.cpp): every error names the
// JSON pointer inside the policy and what was expected.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "model/failure.hpp"
#include "model/result.hpp"
#include "model/retry_policy.hpp"
#include "model/time.hpp"

namespace rehearse::policy_json {

// `parent` + "/" + the RFC 6901 escaped key.
std::string child(std::string_view parent, std::string_view key);
// What a value is, for "expected X, got Y" messages.
std::string describe_value(const nlohmann::json& value);
Error schema(std::string where, std::string message);
Error invalid(std::string where, std::string message);
// A whole number in [min, max]; JSON floats (even 2.0) are refused.
Result<std::int64_t> read_integer(const nlohmann::json& value, const std::string& where,
                                  std::string_view what, std::int64_t min, std::int64_t max);
// A string with units ("30m") or integer milliseconds, at most kBackoffDelayMaxMs.
Result<DurationMs> read_duration(const nlohmann::json& value, const std::string& where);
Result<FailureClassSet> read_classes(const nlohmann::json& value, const std::string& where);
Result<BudgetScope> read_budget(const nlohmann::json& value, const std::string& where);
Result<std::string> read_non_empty_string(const nlohmann::json& value, const std::string& where,
                                          std::string_view what);
// Refuses any key not in `allowed`, naming `form` and the allowed keys.
Status check_keys(const nlohmann::json& object, const std::string& where,
                  std::initializer_list<std::string_view> allowed, std::string_view form);

}  // namespace rehearse::policy_json
