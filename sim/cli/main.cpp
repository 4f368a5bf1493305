// rehearse: deterministic simulation and property testing for job retry,
// reconcile and scheduling logic. This file only dispatches subcommands.
#include <fmt/core.h>

#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "model/time_zone.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/kernel/memory_reserve.hpp"
#include "sim/world/spelling.hpp"

namespace rehearse::cli {

namespace {

constexpr std::string_view kTopHelp =
    "usage: rehearse <command> [options]\n"
    "\n"
    "Deterministic simulation and property testing for job retry, reconcile and\n"
    "scheduling logic.\n"
    "\n"
    "commands:\n"
    "  new KIND              a starter scenario for a job kind (call, group, ...)\n"
    "  cron next EXPR        next firing instants of a cron expression (UTC or --tz)\n"
    "  cron explain EXPR     parsed fields, low-frequency verdict, auto policy\n"
    "  policy explain POLICY the retry plan a policy gives after one failure\n"
    "  validate FILE|DIR...  check scenario files (--strict: flags fail too)\n"
    "  run SCENARIO|DIR...   run scenarios in the simulated world, check invariants\n"
    "                        (--timeline, --report FILE.html: see the incident)\n"
    "  status DIR [DIR]      status view of a state directory (two: merged)\n"
    "  tune SCENARIO --job ID  sweep retry policies for one job against outages\n"
    "  check SCENARIO|DIR... swarm search: random faults per seed, every invariant\n"
    "                        (no scenario: a generated world per seed; --random-jobs)\n"
    "  merge FILE...         combine check shard files (JSON Lines) into one report\n"
    "  import --otlp FILE --into SCENARIO  an incident's fault windows, inferred from\n"
    "                        OpenTelemetry client spans, written into a scenario\n"
    "\n"
    "Every command has --help; --json prints one JSON document on stdout, also\n"
    "for bad input ({\"error\": {...}}); 'rehearse help COMMAND' is COMMAND --help.\n"
    "'rehearse --version' prints the version and the tz database's.\n"
    "Exit codes (docs/cli.md): 0 all held, 1 an invariant or expectation failed,\n"
    "2 bad input or usage, 3 an assertion of the core failed in a run, 4 a run ran\n"
    "out of memory.\n";

using Command = int (*)(const Args&);

const std::vector<std::pair<std::string, Command>>& commands() {
  static const std::vector<std::pair<std::string, Command>> kCommands{
      {"cron", cmd_cron},    {"policy", cmd_policy}, {"validate", cmd_validate},
      {"run", cmd_run},      {"status", cmd_status}, {"tune", cmd_tune},
      {"check", cmd_check},  {"merge", cmd_merge},   {"new", cmd_new},
      {"import", cmd_import}};
  // find_command takes the first match: a name listed twice would hide one.
  for (std::size_t i = 0; i < kCommands.size(); ++i) {
    REHEARSE_ASSERT(kCommands[i].second != nullptr);
    for (std::size_t j = i + 1; j < kCommands.size(); ++j) {
      REHEARSE_ASSERT_NE(kCommands[i].first, kCommands[j].first);
    }
  }
  return kCommands;
}

Command find_command(const std::string& name) {
  for (const auto& [known, command] : commands()) {
    if (known == name) return command;
  }
  return nullptr;
}

// "rehearse rnu": the nearest command, if one is near.
int unknown_command(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& entry : commands()) names.push_back(entry.first);
  names.push_back("help");
  const auto near = sim::closest(name, names);
  // A suggestion is always one of the commands, never the mistyped name itself.
  if (near) REHEARSE_ASSERT(find_command(*near) != nullptr || *near == "help");
  REHEARSE_ASSERT(find_command(name) == nullptr);
  return usage_error(fmt::format("unknown command '{}'{}", name,
                                 near ? fmt::format(" (did you mean '{}'?)", *near) : ""),
                     "run 'rehearse --help' for the list of commands");
}

// "rehearse help" is the top-level help; "rehearse help run" is run's.
int help(const Args& rest) {
  if (rest.empty()) {
    fmt::print("{}", kTopHelp);
    return kExitOk;
  }
  if (Command command = find_command(rest.front())) {
    const int code = command({"--help"});
    REHEARSE_ASSERT_EQ(code, kExitOk);  // every command answers --help with its help
    return code;
  }
  return unknown_command(rest.front());
}

// The tz database is the system's, not ours: a zoned schedule's instants
// depend on its version, so reports can be compared across machines.
int print_version(bool as_json) {
  const std::string tz = rehearse::tz_database_version();
  if (as_json) {
    const nlohmann::json doc{{"version", REHEARSE_VERSION}, {"tz_database", tz}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("rehearse {}\ntz database {}\n", REHEARSE_VERSION, tz);
  }
  return kExitOk;
}

}  // namespace
}  // namespace rehearse::cli

int main(int argc, char** argv) {
  using namespace rehearse::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  // Running out of memory inside a run ends that run with a report instead
  // of std::terminate (sim/kernel/memory_reserve.hpp, docs/run.md).
  rehearse::sim::arm_memory_reserve();
  try {
    if (args.empty()) {
      fmt::print(stderr, "{}", kTopHelp);
      return kExitUsage;
    }
    const std::string command = args.front();
    const Args rest(args.begin() + 1, args.end());
    set_json_errors(wants_json(rest));
    if (command == "--version" || command == "version") return print_version(wants_json(rest));
    if (command == "--help" || command == "-h") return help({});
    if (command == "help") return help(rest);
    if (Command found = find_command(command)) {
      const int code = found(rest);
      // Only the exit codes docs/cli.md lists (70 is this handler's own);
      // merge passes on the worst code its shard files record (0..255).
      REHEARSE_ASSERT_GE(code, kExitOk);
      REHEARSE_ASSERT_LE(code, command == "merge" ? 255 : kExitOutOfMemory);
      return code;
    }
    return unknown_command(command);
  } catch (const std::exception& e) {
    // Errors are values in the core; reaching here is a bug, reported plainly.
    fmt::print(stderr, "rehearse: internal error: {}\n", e.what());
    return 70;
  }
}
