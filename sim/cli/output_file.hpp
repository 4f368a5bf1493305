// Writing a whole output file (an HTML report) without ever leaving a
// half-written one: the bytes go to a temporary file in the same directory,
// which is renamed over the target once complete.
#pragma once

#include <string>

#include "model/result.hpp"

namespace rehearse::cli {

// `what` names the file in errors ("the report file").
Status write_output_file(const std::string& path, const std::string& bytes, const std::string& what);

}  // namespace rehearse::cli
