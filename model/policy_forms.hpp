// Retry policies as other systems write them (docs/policies.md): BullMQ,
// Temporal, AWS Step Functions, Sidekiq, Celery and Kubernetes Jobs, each
// converted into the core's RetryPolicy with that system's own meaning of
// "attempts" and its own delay formula. The one table of systems is
// policy_systems(); `rehearse policy explain --from`, the scenario loader
// ({"temporal": {...}} as a retry_policy) and docs/policies.md all follow it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/result.hpp"
#include "model/retry_policy.hpp"

namespace rehearse {

struct SystemPolicy;

struct PolicySystem {
  std::string_view name;   // as --from and a scenario's key spell it: "bullmq"
  std::string_view title;  // "BullMQ"
  PolicyForm form;
  std::string_view keys;              // the retry keys read, as the system spells them
  std::string_view attempts_meaning;  // what its count counts
  bool count_includes_first_run;
  std::string_view formula;  // the delay before retry n
  std::string_view source;   // where the semantics are documented
  Result<SystemPolicy> (*convert)(const nlohmann::json& value);
};

// A policy converted from a system's form.
struct SystemPolicy {
  const PolicySystem* system = nullptr;
  RetryPolicy policy;
  std::vector<std::string> ignored;   // keys present that do not bear on retries here
  std::vector<std::string> defaults;  // retry keys absent: the system's default, as used
  // How a value was read where the reading is not plain: an error type name
  // no table knows, read as class unknown.
  std::vector<std::string> notes;
};

std::span<const PolicySystem> policy_systems();
// nullptr for a name that is not in the table.
const PolicySystem* find_policy_system(std::string_view name);
// "bullmq, temporal, stepfunctions, sidekiq, celery, k8s".
std::string policy_system_names();

// Converts `value` (the system's own policy object; errors carry a JSON
// pointer inside it). Strict: unknown keys, wrong types and values the system
// itself refuses are errors; keys the system knows but that do not bear on
// retries (BullMQ's removeOnFail, a Job's template) are listed in `ignored`.
Result<SystemPolicy> convert_system_policy(std::string_view system, const nlohmann::json& value);

// The state named `state` of a Step Functions state machine definition (for
// a machine whose several states retry: `--state NAME`, or "state" beside
// "stepfunctions" in a scenario). Errors name the states there are.
Result<nlohmann::json> select_stepfunctions_state(const nlohmann::json& definition,
                                                  std::string_view state);

// The usual surprises of a converted policy, one sentence each: a count that
// includes (or excludes) the first run, a cap that flattens the curve, jitter
// that shortens or lengthens the window, retries at once.
std::vector<std::string> policy_surprises(const SystemPolicy& converted, const RetryPlan& plan);

}  // namespace rehearse
