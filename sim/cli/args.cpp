#include "sim/cli/args.hpp"

#include <fmt/format.h>

#include <charconv>

#include "model/assert.hpp"

namespace rehearse::cli {

Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              const std::vector<OptionSpec>& specs) {
  // The specs are the program's own tables: long names, and "--help" is built in.
  for (const auto& s : specs) {
    REHEARSE_ASSERT(s.name.rfind("--", 0) == 0);
    REHEARSE_ASSERT_NE(s.name, "--help");
  }
  ParsedArgs out;
  bool options_done = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (options_done || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      out.positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      out.flags.insert("--help");
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (const auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const OptionSpec* spec = nullptr;
    for (const auto& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) {
      // A negative number or a cron field such as "-5" is not an option here:
      // only names that look like options are rejected.
      return make_error(ErrorCode::invalid_argument, fmt::format("unknown option '{}'", name));
    }
    if (!spec->takes_value) {
      if (inline_value) {
        return make_error(ErrorCode::invalid_argument,
                          fmt::format("option '{}' takes no value", name));
      }
      out.flags.insert(name);
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("option '{}' expects a value ({})", name, spec->value_name));
    }
    auto& slot = out.values[name];
    if (!slot.empty() && !spec->repeatable) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("option '{}' given more than once", name));
    }
    slot.push_back(std::move(value));
    REHEARSE_ASSERT(spec->repeatable || slot.size() == 1);
  }
  // Only options that were given have a slot, and only declared flags are set.
  for (const auto& entry : out.values) REHEARSE_ASSERT(!entry.second.empty());
  REHEARSE_ASSERT_LE(out.flags.size(), specs.size() + 1);
  return out;
}

Result<long long> parse_count(std::string_view option, std::string_view text, long long min,
                              long long max) {
  REHEARSE_ASSERT_LE(min, max);  // each caller names a non-empty range
  long long v = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("option '{}' expects an integer from {} to {}, got '{}'", option,
                                  min, max, text));
  }
  return v;
}

std::string format_options_help(const std::vector<OptionSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    // A value's name is shown exactly when the option takes one.
    REHEARSE_ASSERT_EQ(s.takes_value, !s.value_name.empty());
    std::string left = s.name;
    if (s.takes_value) left += " " + s.value_name;
    out += fmt::format("  {:<24} {}\n", left, s.help);
  }
  out += fmt::format("  {:<24} {}\n", "-h, --help", "show this help");
  return out;
}

}  // namespace rehearse::cli
