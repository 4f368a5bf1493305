// The rehearse subcommands. Each takes the arguments after its name and
// returns the process exit code (0 ok, 1 a check failed, 2 bad input/usage).
#pragma once

#include <string>
#include <vector>

namespace rehearse::cli {

using Args = std::vector<std::string>;

int cmd_cron(const Args& args);
int cmd_policy(const Args& args);
int cmd_validate(const Args& args);
int cmd_run(const Args& args);
int cmd_status(const Args& args);
int cmd_tune(const Args& args);
int cmd_check(const Args& args);  // docs/check.md
// Shard files of `rehearse check` merged into one report.
int cmd_merge(const Args& args);
// A starter scenario for one job kind.
int cmd_new(const Args& args);
// Fault windows inferred from an incident's records, written into a scenario.
int cmd_import(const Args& args);

// Prints "rehearse: error: <message>" to stderr and returns kExitUsage.
int usage_error(const std::string& message, const std::string& hint = {});

}  // namespace rehearse::cli
