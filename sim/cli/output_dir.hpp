// A directory the rehearse command writes (the worker's state directory of
// `run --worker-state`): never merged into one that holds anything, never
// left half-written. Its files are written into a temporary directory beside
// it, which is renamed into place once complete; the target must not exist
// or be an empty directory. docs/cli.md ("Output files") says the same.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

// Checks the target before anything runs: its parent exists, and it is
// absent or an empty directory. Errors name the path.
Status check_output_dir(const std::string& path);

// Writes `files` (name, bytes) as the directory `path`, by the rule above.
Status write_output_dir(const std::string& path,
                        const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace rehearse::cli
