// rehearse import --otlp FILE... --into SCENARIO [--service ADDRESS=NAME]...
//                 [--name NAME] [--out FILE] [--strict] [--json]
//
// Reads OpenTelemetry trace exports, infers each service's fault windows from
// its HTTP client spans (sim/import/fault_windows.hpp), and writes the
// scenario given with --into with those windows added as faults, each
// labelled inferred with the calls that bound its edges. docs/import.md.
#include <fmt/core.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/json_input.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/import/imported_scenario.hpp"
#include "sim/import/otlp_reader.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kImportHelp =
    "usage: rehearse import --otlp FILE... --into SCENARIO [options]\n"
    "\n"
    "Turns an incident's records into a scenario to replay (docs/import.md).\n"
    "--otlp reads OpenTelemetry trace exports (OTLP/JSON, one document or JSON\n"
    "Lines of them): every HTTP client span is a call to the service it names\n"
    "(peer.service, server.address or the host of url.full). Each service's fault\n"
    "windows are inferred from its calls: a window opens at the first failed call\n"
    "and closes at the next call that answered otherwise. The scenario given with\n"
    "--into supplies the jobs, the services and the span; the windows are added to\n"
    "its faults, each with a note naming the calls that bound its edges, and the\n"
    "file's \"notes\" list what was observed and what was guessed.\n"
    "\n"
    "What the calls cannot settle (calls in flight together that disagree, a\n"
    "window no call closed, statuses that alternate, an error of no known kind, a\n"
    "service the scenario does not declare) is reported; --strict refuses to\n"
    "guess and writes nothing.\n"
    "\n"
    "Exit codes: 0 written, 1 ambiguous evidence under --strict (nothing written),\n"
    "2 bad input or usage (the file, line or JSON pointer, and what was expected).\n";

const std::vector<OptionSpec> kImportOptions{
    {"--otlp", true, "FILE", "an OpenTelemetry trace export (OTLP/JSON or JSON Lines)", true},
    {"--into", true, "SCENARIO", "the scenario the windows are added to (jobs, services, span)"},
    {"--service", true, "ADDRESS=NAME", "the scenario's name for a server address", true},
    {"--name", true, "NAME", "the imported scenario's name (default: the --into one's)"},
    {"--out", true, "FILE", "where the scenario goes (default -: standard output)"},
    {"--strict", false, "", "refuse to guess: ambiguous evidence exits 1, nothing written"},
    {"--json", false, "", "print a JSON summary (the scenario then needs --out)"},
};

Result<std::map<std::string, std::string>> service_names(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> out;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("expected ADDRESS=NAME, got \"{}\"", spec), "--service");
    }
    out[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  return out;
}

// Every export's calls, one inference over all of them.
Result<sim::InferredWindows> read_exports(const std::vector<std::string>& files,
                                          const std::map<std::string, std::string>& names,
                                          std::vector<sim::Ambiguity>& read_guesses) {
  std::vector<sim::CallObservation> calls;
  for (const std::string& file : files) {
    auto text = read_text_file(file, "trace export");
    if (!text) return std::move(text).error();
    auto read = sim::read_otlp_calls(*text, file, names);
    if (!read) return std::move(read).error();
    calls.insert(calls.end(), read->calls.begin(), read->calls.end());
    read_guesses.insert(read_guesses.end(), read->ambiguities.begin(), read->ambiguities.end());
  }
  return sim::infer_fault_windows(std::move(calls));
}

// Read once: the loader judges the very bytes the import then extends.
Result<sim::ImportInput> read_base(const std::string& path, std::vector<std::string> sources,
                                   std::string name) {
  auto text = read_text_file(path, "scenario");
  if (!text) return std::move(text).error();
  const sim::ScenarioCheck check = sim::check_scenario_json(*text, path);
  if (!check.valid()) {
    REHEARSE_ASSERT(!check.errors.empty());  // invalid means at least one error
    return check.errors.front();
  }
  sim::ImportInput input;
  input.base = nlohmann::ordered_json::parse(*text);  // the loader just read it
  input.base_path = path;
  input.sources = std::move(sources);
  input.name = std::move(name);
  return input;
}

nlohmann::ordered_json ambiguity_json(const sim::Ambiguity& a) {
  return {{"service", a.service},
          {"at", format_instant(a.at_ms)},
          {"what", a.what},
          {"guess", a.guess},
          {"where", a.where}};
}

// `refused`: --strict found ambiguities and wrote nothing (`output` null).
nlohmann::ordered_json summary_json(const sim::ImportResult& result,
                                    const sim::InferredWindows& inferred, const std::string& output,
                                    bool refused) {
  nlohmann::ordered_json doc;
  doc["output"] = refused ? nlohmann::ordered_json() : nlohmann::ordered_json(output);
  doc["refused"] = refused;
  doc["calls"] = inferred.calls;
  doc["faults"] = result.faults;
  doc["ambiguities"] = nlohmann::ordered_json::array();
  for (const auto& a : result.ambiguities) doc["ambiguities"].push_back(ambiguity_json(a));
  return doc;
}

void print_summary(const sim::ImportResult& result, const sim::InferredWindows& inferred,
                   std::FILE* to) {
  fmt::print(to, "observed {} calls; {} fault window{} imported\n", inferred.calls,
             result.faults.size(), result.faults.size() == 1 ? "" : "s");
  for (const auto& f : result.faults) {
    fmt::print(to, "  {:<16} {:<15} {:<5} at {} for {}\n", f["service"].get<std::string>(),
               f["kind"].get<std::string>(),
               f.contains("status") ? std::to_string(f["status"].get<int>())
                                    : f.value("error", std::string("-")),
               f["at"].get<std::string>(), f.value("for", std::string("the rest of the run")));
  }
  for (const auto& a : result.ambiguities) {
    fmt::print(to, "ambiguous: {} at {}: {} (guessed: {}) [{}]\n", a.service,
               format_instant(a.at_ms), a.what, a.guess, a.where);
  }
}

int write_result(const sim::ImportResult& result, const sim::InferredWindows& inferred,
                 const std::string& output, bool as_json) {
  if (auto st = write_output_file(output, result.scenario.dump(2) + "\n"); !st) {
    return input_error(st.error());
  }
  if (as_json) {
    fmt::print("{}\n", summary_json(result, inferred, output, false).dump(2));
  } else {
    print_summary(result, inferred, output == "-" ? stderr : stdout);
  }
  return kExitOk;
}

}  // namespace

int cmd_import(const Args& args) {
  auto parsed = parse_args(args, kImportOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse import --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kImportHelp, format_options_help(kImportOptions));
    return kExitOk;
  }
  if (!parsed->positionals.empty()) {
    return usage_error(fmt::format("import: unexpected argument '{}'", parsed->positionals.front()),
                       "see 'rehearse import --help'");
  }
  const std::vector<std::string>& files = parsed->all("--otlp");
  if (files.empty())
    return usage_error("import: give at least one --otlp FILE", "see 'rehearse import --help'");
  const auto into = parsed->value("--into");
  if (!into) {
    return usage_error("import: --into SCENARIO is required (an export holds no jobs to replay)",
                       "see 'rehearse import --help'");
  }
  const std::string output = parsed->value("--out").value_or("-");
  const bool as_json = parsed->has("--json");
  if (as_json && output == "-") {
    return usage_error("import: --json prints the summary; give the scenario --out FILE");
  }
  std::vector<std::string> inputs = files;
  inputs.push_back(*into);
  if (auto st = check_output_path(output, inputs); !st) return input_error(st.error());
  auto names = service_names(parsed->all("--service"));
  if (!names) return usage_error(names.error().describe(), "see 'rehearse import --help'");
  std::vector<sim::Ambiguity> read_guesses;
  auto inferred = read_exports(files, *names, read_guesses);
  if (!inferred) return input_error(inferred.error());
  inferred->ambiguities.insert(inferred->ambiguities.begin(), read_guesses.begin(),
                               read_guesses.end());
  auto base = read_base(*into, files, parsed->value("--name").value_or(""));
  if (!base) return input_error(base.error());
  auto result = sim::import_windows(*base, *inferred);
  if (!result) return input_error(result.error());
  if (parsed->has("--strict") && !result->ambiguities.empty()) {
    print_summary(*result, *inferred, stderr);
    if (as_json) fmt::print("{}\n", summary_json(*result, *inferred, "", true).dump(2));
    fmt::print(stderr,
               "rehearse: import --strict: {} ambiguit{} in the evidence; nothing written\n",
               result->ambiguities.size(), result->ambiguities.size() == 1 ? "y" : "ies");
    return kExitFailed;
  }
  return write_result(*result, *inferred, output, as_json);
}

}  // namespace rehearse::cli
