// `rehearse run SCENARIO --policy JOB=POLICY`: what if the job had run with
// another policy (docs/run.md, "What if"). The scenario's own expectations
// are what was observed (an imported incident's, docs/import.md); with
// another policy a mismatch is not a failure but the answer: which observed
// outcomes changed. Invariants still hold the run to the contract.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/report/report.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {

struct WhatIf {
  // Job id -> the policy, as a scenario's `retry_policy` holds it.
  std::vector<std::pair<std::string, nlohmann::json>> policies;
  bool empty() const noexcept { return policies.empty(); }
};

// Each spec is JOB=POLICY: POLICY is JSON, `auto`, or @FILE holding JSON
// (another system's form wrapped in its key: {"k8s": "@job.yaml"}).
Result<WhatIf> read_what_if(const std::vector<std::string>& specs);

// The scenario file with each named job's retry_policy replaced, loaded as
// the file itself would be (relative @FILE references from its folder).
Result<sim::Scenario> load_what_if(const std::string& file, const WhatIf& what_if);

// The expectation mismatches of a what-if run, taken out of its verdict:
// they are the observed outcomes that changed.
std::vector<sim::ExpectFailure> take_changed(sim::Verdict& verdict);

std::string format_changed(const std::string& file, const WhatIf& what_if,
                           const std::vector<sim::ExpectFailure>& changed);
nlohmann::json changed_json(const WhatIf& what_if, const std::vector<sim::ExpectFailure>& changed);

}  // namespace rehearse::cli
