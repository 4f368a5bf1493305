// A small, strict command-line parser for the rehearse subcommands.
//
// Each subcommand declares its options; anything undeclared is a usage error
// (exit 2) naming the offending argument, never silently ignored.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/result.hpp"

namespace rehearse::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // an invariant or an expectation failed
inline constexpr int kExitUsage = 2;   // bad input or usage
// `run`: an assertion of the core failed in a simulated run (a bug in the
// core, whatever the scenario says); the worst code of all.
inline constexpr int kExitAssertion = 3;
// `run`: a run ran out of memory (an ERROR row; the other files still run).
inline constexpr int kExitOutOfMemory = 4;

struct OptionSpec {
  std::string name;  // "--from"
  bool takes_value = false;
  std::string value_name;  // "INSTANT"
  std::string help;
  bool repeatable = false;
};

struct ParsedArgs {
  std::vector<std::string> positionals;
  std::map<std::string, std::vector<std::string>> values;  // option -> values
  std::set<std::string> flags;

  bool has(std::string_view name) const { return flags.count(std::string(name)) != 0; }
  std::optional<std::string> value(std::string_view name) const {
    const auto it = values.find(std::string(name));
    if (it == values.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }
  const std::vector<std::string>& all(std::string_view name) const {
    static const std::vector<std::string> kEmpty;
    const auto it = values.find(std::string(name));
    return it == values.end() ? kEmpty : it->second;
  }
};

// Parses argv[first..] against the specs. "--help"/"-h" is always accepted as a
// flag. "--opt=value" and "--opt value" both work; "--" ends options.
Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              const std::vector<OptionSpec>& specs);

// Parses a positive integer option value within [min, max].
Result<long long> parse_count(std::string_view option, std::string_view text, long long min,
                              long long max);

std::string format_options_help(const std::vector<OptionSpec>& specs);

}  // namespace rehearse::cli
