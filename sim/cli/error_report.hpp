// How the rehearse subcommands report bad input and usage errors (exit 2).
//
// Always one line on stderr: "rehearse: error: <where>: <message>", and a
// hint line when there is one. With --json anywhere among the options the
// same error is also one JSON document on stdout, so a caller that reads
// stdout never gets zero bytes:
//   {"error": {"code": "not_found", "exit_code": 2, "message": "...",
//              "where": "...", "file": "...", "pointer": "/jobs/0",
//              "line": 3, "column": 7}}
// `code` is the error kind (the ErrorCode names of model/result.hpp; wrong
// arguments are "invalid_argument"); `where` is the location as the stderr
// line prints it, and file / pointer / line / column are its parts; each
// appears when known. Every command's errors (validate's per-file list,
// run's error rows) use this one shape.
// An inline argument (a policy given as JSON on the command line) is named
// by "argument" instead of "file". docs/cli.md has the format.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

// Whether errors also go to stdout as JSON; main() sets it from the arguments.
void set_json_errors(bool on) noexcept;
bool json_errors() noexcept;

// True when `--json` is among the options (before a "--").
bool wants_json(const std::vector<std::string>& args);

// {"code", "message", "where", and file/pointer/line/column split from it}.
nlohmann::json error_object(const Error& error);

// Reports `error` (stderr, and stdout under --json) and returns kExitUsage.
int input_error(const Error& error, const std::string& hint = {});

}  // namespace rehearse::cli
