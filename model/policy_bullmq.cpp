// BullMQ's retry settings as the core's RetryPolicy (docs/policies.md, "bullmq").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/assert.hpp"
#include "model/policy_forms_detail.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

const std::initializer_list<std::string_view> kBullmqJobOptions{"removeOnComplete",
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
                                                                "repeatJobKey"};

}  // namespace

Result<SystemPolicy> convert_bullmq(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "BullMQ"); !s.ok()) return std::move(s).error();
  if (auto s = sort_keys(value, {"attempts", "backoff"}, kBullmqJobOptions, "BullMQ", out);
      !s.ok()) {
    return std::move(s).error();
  }
  json native = json::object();
  native["attempts"] = value.contains("attempts") ? value.at("attempts") : json(1);
  if (!value.contains("attempts")) out.defaults.push_back("attempts: 1 (no retries)");
  if (value.contains("backoff")) {
    const json& b = value.at("backoff");
    if (b.is_object()) {
      if (auto s = check_keys(b, "/backoff", {"type", "delay", "jitter"}, "a BullMQ backoff");
          !s.ok()) {
        return std::move(s).error();
      }
      if (b.contains("type") && b.at("type").is_string() &&
          b.at("type").get<std::string>() != "fixed" &&
          b.at("type").get<std::string>() != "exponential") {
        return invalid(
            "/backoff/type",
            fmt::format("BullMQ's built-in backoffs are \"fixed\" and "
                        "\"exponential\", got {}: a custom backoffStrategy is code, which "
                        "cannot be planned; write {{type: 'exponential', delay: MS}} "
                        "or {{type: 'fixed', delay: MS}} with the delay it starts "
                        "from (docs/policies.md, \"Native files and snippets\")",
                        describe_value(b.at("type"))));
      }
    }
    native["backoff"] = b;
  } else {
    out.defaults.push_back("backoff: none (retries run at once)");
  }
  REHEARSE_TRY(policy, parse_retry_policy(native));
  out.policy = *policy;
  return out;
}

}  // namespace rehearse::policy_forms_detail
