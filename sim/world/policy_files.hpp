// Scenario documents that name policy files ({"k8s": "@policies/job.yaml"},
// docs/policies.md "Native files and snippets") made self-contained: each
// reference replaced by the file's text, read beside the scenario file. The
// loader reads references itself; this is for documents that travel without
// their directory (the swarm's derived cases, shrunk case files).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rehearse::sim {

// `document` with every job's policy file reference replaced by the file's
// text; a file that cannot be read is left as the reference (the loader
// then reports it, naming the file).
nlohmann::json inline_policy_files(nlohmann::json document, const std::string& scenario_path);

}  // namespace rehearse::sim
