// The shared pieces of the systems' policy converters (model/policy_forms.cpp
// holds the table; each system's converter is in its own policy_<system>.cpp).
// Internal to model/: strict readers whose errors name the JSON pointer.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/policy_forms.hpp"
#include "model/policy_json.hpp"

namespace rehearse::policy_forms_detail {

using KeyList = std::initializer_list<std::string_view>;

// Keys of `value` outside `retry_keys`: those in `ignorable` go to
// out.ignored, anything else is an error naming the keys the system knows
// (and the one it most resembles).
Status sort_keys(const nlohmann::json& value, KeyList retry_keys, KeyList ignorable,
                 std::string_view title, SystemPolicy& out);
Status require_object(const nlohmann::json& value, std::string_view title);
// A JSON number (integer or not) in [min, max].
Result<double> read_number(const nlohmann::json& value, const std::string& where,
                           std::string_view what, double min, double max);
Result<DurationMs> read_seconds(const nlohmann::json& value, const std::string& where,
                                std::string_view what, std::int64_t min);
Result<bool> read_bool(const nlohmann::json& value, const std::string& where,
                       std::string_view what);
// Every system retries any error by default and counts per job execution.
RetryPolicy system_policy(PolicyForm form, int retries, Backoff backoff);
// A Python call (model/python_literal: {"$call", "args", "kwargs"}) stands
// for its keyword arguments; anything else is itself.
const nlohmann::json& unwrap_call(const nlohmann::json& value);
// `e` with `base` put before its pointer (a reader run on a nested object).
Error rebased(Error e, std::string_view base);

// The converters, one per system (policy_<name>.cpp).
Result<SystemPolicy> convert_bullmq(const nlohmann::json& value);
Result<SystemPolicy> convert_temporal(const nlohmann::json& value);
Result<SystemPolicy> convert_stepfunctions(const nlohmann::json& value);
Result<SystemPolicy> convert_sidekiq(const nlohmann::json& value);
Result<SystemPolicy> convert_celery(const nlohmann::json& value);
Result<SystemPolicy> convert_k8s(const nlohmann::json& value);
// The state `state` of a Step Functions state machine definition.
Result<nlohmann::json> select_state(const nlohmann::json& definition, std::string_view state);

}  // namespace rehearse::policy_forms_detail

#define REHEARSE_TRY(var, expr) \
  auto var = (expr);            \
  if (!var.ok()) return std::move(var).error()
