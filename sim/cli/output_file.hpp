// Every file the rehearse command writes (traces now; reports, JUnit files
// and shrunk scenarios later) goes through this module, so one rule holds:
//
// - "-" is standard output.
// - A path that exists and is not a regular file (a character device, a
//   FIFO, a socket), or that names an open descriptor (/dev/stdout,
//   /dev/fd/N, /proc/self/fd/N), is opened and written through, appending;
//   it is never replaced.
// - A symlink is followed: the file at the end of the chain gets the bytes
//   and the link stays a link.
// - A regular file (or a new one) is written atomically: a temporary file in
//   the target's own directory, renamed over the target once complete, so
//   the target is never half-written. An existing file keeps its mode.
// - Writing over an input (the same device and inode as any input file) is
//   refused before anything runs: exit 2, the input untouched.
//
// docs/cli.md ("Output files") describes the same rule for users.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

// Checks an output path before anything runs: refuses "-"-less paths that
// are one of `inputs` (after following symlinks) and paths whose directory
// does not exist. Errors name the path.
Status check_output_path(const std::string& path, const std::vector<std::string>& inputs);

// Writes `bytes` to `path` by the rule above.
Status write_output_file(const std::string& path, std::string_view bytes);

}  // namespace rehearse::cli
