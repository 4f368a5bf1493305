// rehearse new KIND [--service NAME] [--name SCENARIO] [--out FILE]
//
// Writes a starter scenario for one job kind (sim/cli/starters.hpp) to
// stdout or FILE. The starter is loaded by the scenario loader before it is
// written, so what comes out always validates; a --service or --name the
// format refuses is exit 2 with the loader's words.
#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/starters.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/spelling.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kNewHelp =
    "usage: rehearse new KIND [--service NAME] [--name SCENARIO] [--out FILE]\n"
    "\n"
    "Writes a starter scenario for a job of KIND: a small incident that validates,\n"
    "runs and holds its expectations as written, with a description, a job note\n"
    "and a fault note saying what to change to make it your own. Start with\n"
    "\n"
    "  rehearse new call --service billing-api > my-outage.json\n"
    "  rehearse run my-outage.json --timeline\n"
    "\n"
    "(docs/tutorial.md walks from there to tuning and CI).\n"
    "\n"
    "kinds:\n";

const std::vector<OptionSpec> kNewOptions{
    {"--service", true, "NAME", "the call job's service, a name of your own (default my-api)"},
    {"--name", true, "SCENARIO", "the scenario's name (kebab-case; default: the starter's)"},
    {"--out", true, "FILE", "write to FILE instead of stdout (the output-file rule)"},
};

std::string kinds_help() {
  std::string out;
  for (const Starter& s : starters()) out += fmt::format("  {:<10} {}\n", s.kind, s.summary);
  return out;
}

const Starter* find_starter(const std::string& kind) {
  for (const Starter& s : starters()) {
    if (s.kind == kind) return &s;
  }
  return nullptr;
}

// JSON on one line with a space after ':' and ','.
std::string one_line(const nlohmann::ordered_json& v) {
  if (v.is_object()) {
    std::vector<std::string> parts;
    for (const auto& [key, value] : v.items()) {
      parts.push_back(nlohmann::ordered_json(key).dump() + ": " + one_line(value));
    }
    return "{" + fmt::format("{}", fmt::join(parts, ", ")) + "}";
  }
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& item : v) parts.push_back(one_line(item));
    return "[" + fmt::format("{}", fmt::join(parts, ", ")) + "]";
  }
  return v.dump();
}

// The starter as a person would write it: a value that fits in the line
// stays on it ("targets": ["ops"]), larger ones open one level per line.
std::string pretty(const nlohmann::ordered_json& v, std::size_t indent) {
  constexpr std::size_t kWidth = 96;
  const std::string inline_text = one_line(v);
  if (!v.is_structured() || v.empty() || indent + inline_text.size() <= kWidth) {
    return inline_text;
  }
  const std::string pad(indent + 2, ' ');
  std::string out = v.is_object() ? "{\n" : "[\n";
  std::size_t i = 0;
  for (const auto& [key, value] : v.items()) {
    out += pad;
    if (v.is_object()) out += nlohmann::ordered_json(key).dump() + ": ";
    out += pretty(value, indent + 2) + (++i < v.size() ? ",\n" : "\n");
  }
  return out + std::string(indent, ' ') + (v.is_object() ? "}" : "]");
}

int unknown_kind(const std::string& kind) {
  REHEARSE_ASSERT(find_starter(kind) == nullptr);  // cmd_new found no starter first
  std::vector<std::string> kinds;
  for (const Starter& s : starters()) kinds.push_back(s.kind);
  const auto near = sim::closest(kind, kinds);
  return usage_error(fmt::format("new: unknown job kind '{}' (expected one of: {}){}", kind,
                                 fmt::join(kinds, ", "),
                                 near ? fmt::format("; did you mean '{}'?", *near) : ""),
                     "see 'rehearse new --help'");
}

}  // namespace

int cmd_new(const Args& args) {
  auto parsed = parse_args(args, kNewOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse new --help'");
  if (parsed->has("--help")) {
    fmt::print("{}{}\noptions:\n{}", kNewHelp, kinds_help(), format_options_help(kNewOptions));
    return kExitOk;
  }
  if (parsed->positionals.size() != 1) {
    return usage_error("new: expected exactly one KIND", "see 'rehearse new --help'");
  }
  const Starter* starter = find_starter(parsed->positionals.front());
  if (starter == nullptr) return unknown_kind(parsed->positionals.front());
  StarterOptions options;
  if (auto service = parsed->value("--service")) {
    if (starter->kind != "call") {
      return usage_error(
          fmt::format("new: --service names a service of your own, which only a "
                      "call job calls (a {} job calls built-in services)",
                      starter->kind));
    }
    options.service = *service;
  }
  if (auto name = parsed->value("--name")) options.scenario = *name;
  const nlohmann::ordered_json built = starter->build(options);
  // Each starter's one job is of the starter's kind.
  REHEARSE_ASSERT_EQ(built.at("jobs").at(0).at("kind").get<std::string>(), starter->kind);
  const std::string text = pretty(built, 0) + "\n";
  // Laying it out changed no value (a layout bug is not the user's error).
  REHEARSE_ASSERT(nlohmann::ordered_json::parse(text, nullptr, false) == built);
  // What is written must load: a name the format refuses is the user's error.
  const std::string origin = parsed->value("--out").value_or("<rehearse new>");
  if (auto loaded = sim::load_scenario_json(text, origin); !loaded) {
    return input_error(loaded.error());
  }
  if (auto out = parsed->value("--out")) {
    if (Status s = check_output_path(*out, {}); !s.ok()) return input_error(s.error());
    if (Status s = write_output_file(*out, text); !s.ok()) return input_error(s.error());
    return kExitOk;
  }
  fmt::print("{}", text);
  return kExitOk;
}

}  // namespace rehearse::cli
