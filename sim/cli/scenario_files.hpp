// The scenario arguments of `validate` and `run`: files and directories.
#pragma once

#include <string>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

// Expands FILE|DIR arguments to files: a file is itself, a directory every
// *.json directly inside it, in name order. A missing path, an unreadable
// directory or a directory without a scenario is an error naming the path
// (an empty glob must never pass).
Result<std::vector<std::string>> expand_scenario_paths(const std::vector<std::string>& arguments);

}  // namespace rehearse::cli
