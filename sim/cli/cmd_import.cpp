// rehearse import --otlp FILE... --into SCENARIO [--service ADDRESS=NAME]...
//                 [--name NAME] [--out FILE] [--strict] [--json]
// rehearse import --log FILE... [--into SCENARIO] [--state DIR] [--clock-steps] [...]
//
// Reads OpenTelemetry trace exports or the worker's own JSON log, infers each
// service's fault windows from the calls they show
// (sim/import/fault_windows.hpp), and writes a scenario with those windows
// as faults, each labelled inferred with the calls that bound its edges; from
// a log, also the jobs as configured and the expectations of what was
// observed. docs/import.md.
#include <fmt/core.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/assert.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/json_input.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/state_dir.hpp"
#include "sim/import/bullmq_scenario.hpp"
#include "sim/import/imported_scenario.hpp"
#include "sim/import/log_scenario.hpp"
#include "sim/import/otlp_reader.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kImportHelp =
    "usage: rehearse import --otlp FILE... --into SCENARIO [options]\n"
    "       rehearse import --log FILE... [--into SCENARIO] [--state DIR] [options]\n"
    "       rehearse import --bullmq EXPORT [options]\n"
    "\n"
    "Turns an incident's records into a scenario to replay (docs/import.md).\n"
    "--log reads the worker's own JSON log (docs/log-format.md, format 1): the jobs\n"
    "as the first boot configured them, the boots, a call job's calls with what came\n"
    "back, and every slot's runs and notifications, which become the scenario's\n"
    "expect block: replaying it says whether the core reproduces what was observed.\n"
    "A log holds no world: --into supplies the services and the faults no log line\n"
    "shows (damaged files, clock steps); without it only call jobs can be rebuilt.\n"
    "--state DIR adds the worker's state directory, as it was when the log ends: each\n"
    "job's durable record is expected at the replay's end (read only; a corrupt store\n"
    "is kept as it is, reported, and expected unreadable).\n"
    "--bullmq reads a BullMQ job export (tools/bullmq-export, docs/bullmq-export.md):\n"
    "each job that ran is a call job with its own attempts and backoff, each attempt a\n"
    "call, and the slot's attempts and their instants are expected.\n"
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
    {"--log", true, "FILE", "the worker's JSON log (docs/log-format.md), files in order", true},
    {"--bullmq", true, "EXPORT", "a BullMQ job export (tools/bullmq-export/export.mjs)"},
    {"--into", true, "SCENARIO", "the scenario the windows are added to (jobs, services, span)"},
    {"--clock-steps", false, "", "--log: accept stamps that go back (a stepped clock)"},
    {"--state", true, "DIR", "--log: the worker's state directory when the log ends"},
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
nlohmann::ordered_json summary_json(const sim::ImportResult& result, int calls,
                                    const std::string& output, bool refused) {
  nlohmann::ordered_json doc;
  doc["output"] = refused ? nlohmann::ordered_json() : nlohmann::ordered_json(output);
  doc["refused"] = refused;
  doc["calls"] = calls;
  doc["faults"] = result.faults;
  doc["ambiguities"] = nlohmann::ordered_json::array();
  for (const auto& a : result.ambiguities) doc["ambiguities"].push_back(ambiguity_json(a));
  return doc;
}

void print_summary(const sim::ImportResult& result, int calls, std::FILE* to) {
  fmt::print(to, "observed {} calls; {} fault window{} imported\n", calls, result.faults.size(),
             result.faults.size() == 1 ? "" : "s");
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

// Every log file's lines, in order; a clock step is refused unless accepted.
Result<sim::WorkerLogRead> read_logs(const std::vector<std::string>& files, bool clock_steps) {
  sim::WorkerLogRead all;
  for (const std::string& file : files) {
    auto text = read_text_file(file, "worker log");
    if (!text) return std::move(text).error();
    auto read = sim::read_worker_log(*text, file, {clock_steps});
    if (!read) return std::move(read).error();
    all.records.insert(all.records.end(), read->records.begin(), read->records.end());
    all.steps_back.insert(all.steps_back.end(), read->steps_back.begin(), read->steps_back.end());
  }
  return all;
}

Result<sim::ImportResult> import_from_logs(const ParsedArgs& parsed, int& calls) {
  const std::vector<std::string>& files = parsed.all("--log");
  auto log = read_logs(files, parsed.has("--clock-steps"));
  if (!log) return std::move(log).error();
  sim::LogImportInput input;
  input.logs = files;
  input.name = parsed.value("--name").value_or("");
  input.clock_stepped = !log->steps_back.empty();
  if (const auto into = parsed.value("--into")) {
    auto base = read_base(*into, files, input.name);
    if (!base) return std::move(base).error();
    input.base = std::move(base->base);
    input.base_path = *into;
  }
  if (const auto dir = parsed.value("--state")) {
    auto read = read_state_dir_kept(*dir);
    if (!read) return std::move(read).error();
    input.state =
        sim::StateEvidence{*dir, std::move(read->jobs),
                           read->corrupt ? std::optional(read->corrupt->describe()) : std::nullopt};
  }
  sim::LogEvidence evidence =
      sim::read_log_evidence(*log, input.base ? sim::declared_latencies(*input.base)
                                              : std::map<std::string, DurationMs>{});
  for (const sim::ClockStep& step : log->steps_back) {
    evidence.ambiguities.push_back(
        {"", step.to_ms,
         fmt::format("the worker's clock went back from {} to {}", format_instant(step.from_ms),
                     format_instant(step.to_ms)),
         "stamps read as they are; runs' start instants are not expected", step.where});
  }
  calls = static_cast<int>(evidence.calls.size());
  return sim::import_worker_log(input, evidence);
}

int write_result(const sim::ImportResult& result, int calls, const std::string& output,
                 bool as_json) {
  if (auto st = write_output_file(output, result.scenario.dump(2) + "\n"); !st) {
    return input_error(st.error());
  }
  if (as_json) {
    fmt::print("{}\n", summary_json(result, calls, output, false).dump(2));
  } else {
    print_summary(result, calls, output == "-" ? stderr : stdout);
  }
  return kExitOk;
}

// The OTLP path: every export's calls, inferred against the --into scenario.
Result<sim::ImportResult> import_from_exports(const ParsedArgs& parsed, int& calls) {
  const std::vector<std::string>& files = parsed.all("--otlp");
  auto names = service_names(parsed.all("--service"));
  if (!names) return std::move(names).error();
  std::vector<sim::Ambiguity> read_guesses;
  auto inferred = read_exports(files, *names, read_guesses);
  if (!inferred) return std::move(inferred).error();
  inferred->ambiguities.insert(inferred->ambiguities.begin(), read_guesses.begin(),
                               read_guesses.end());
  calls = inferred->calls;
  auto base = read_base(*parsed.value("--into"), files, parsed.value("--name").value_or(""));
  if (!base) return std::move(base).error();
  return sim::import_windows(*base, *inferred);
}

Result<sim::ImportResult> import_from_bullmq(const ParsedArgs& parsed, int& calls) {
  const std::string path = *parsed.value("--bullmq");
  auto text = read_text_file(path, "BullMQ export");
  if (!text) return std::move(text).error();
  auto jobs = sim::read_bullmq_export(*text, path);
  if (!jobs) return std::move(jobs).error();
  calls = 0;
  for (const sim::BullmqJob& job : jobs->jobs) calls += static_cast<int>(job.attempts.size());
  return sim::import_bullmq({path, parsed.value("--name").value_or("")}, *jobs);
}

// What the command line names: exactly one kind of record, and where it goes.
std::optional<int> usage_problem(const ParsedArgs& parsed) {
  const char* see = "see 'rehearse import --help'";
  if (!parsed.positionals.empty()) {
    return usage_error(fmt::format("import: unexpected argument '{}'", parsed.positionals.front()),
                       see);
  }
  const bool otlp = !parsed.all("--otlp").empty(), log = !parsed.all("--log").empty();
  const bool bullmq = parsed.value("--bullmq").has_value();
  if (int(otlp) + int(log) + int(bullmq) != 1)
    return usage_error("import: give one of --otlp FILE..., --log FILE... or --bullmq EXPORT", see);
  if (bullmq && parsed.value("--into"))
    return usage_error("import: --bullmq builds the whole scenario; --into is not used", see);
  if (bullmq && (!parsed.all("--service").empty() || parsed.has("--clock-steps")))
    return usage_error("import: --service and --clock-steps are not used with --bullmq", see);
  if (otlp && !parsed.value("--into")) {
    return usage_error("import: --otlp needs --into SCENARIO (an export holds no jobs to replay)",
                       see);
  }
  if (log && !parsed.all("--service").empty())
    return usage_error("import: --service renames span addresses; a log names its services", see);
  if (!log && (parsed.has("--clock-steps") || parsed.value("--state")))
    return usage_error("import: --clock-steps and --state are for --log", see);
  if (parsed.has("--json") && parsed.value("--out").value_or("-") == "-") {
    return usage_error("import: --json prints the summary; give the scenario --out FILE");
  }
  return std::nullopt;
}

}  // namespace

int cmd_import(const Args& args) {
  auto parsed = parse_args(args, kImportOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse import --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kImportHelp, format_options_help(kImportOptions));
    return kExitOk;
  }
  if (const auto problem = usage_problem(*parsed)) return *problem;
  const std::string output = parsed->value("--out").value_or("-");
  const bool as_json = parsed->has("--json");
  std::vector<std::string> inputs = parsed->all("--otlp");
  for (const std::string& f : parsed->all("--log")) inputs.push_back(f);
  if (const auto bullmq = parsed->value("--bullmq")) inputs.push_back(*bullmq);
  if (const auto into = parsed->value("--into")) inputs.push_back(*into);
  if (auto st = check_output_path(output, inputs); !st) return input_error(st.error());
  int calls = 0;
  auto result = !parsed->all("--otlp").empty()  ? import_from_exports(*parsed, calls)
                : !parsed->all("--log").empty() ? import_from_logs(*parsed, calls)
                                                : import_from_bullmq(*parsed, calls);
  if (!result) {
    if (result.error().code == ErrorCode::invalid_argument)
      return usage_error(result.error().describe(), "see 'rehearse import --help'");
    return input_error(result.error());
  }
  if (parsed->has("--strict") && !result->ambiguities.empty()) {
    print_summary(*result, calls, stderr);
    if (as_json) fmt::print("{}\n", summary_json(*result, calls, "", true).dump(2));
    fmt::print(stderr,
               "rehearse: import --strict: {} ambiguit{} in the evidence; nothing written\n",
               result->ambiguities.size(), result->ambiguities.size() == 1 ? "y" : "ies");
    return kExitFailed;
  }
  return write_result(*result, calls, output, as_json);
}

}  // namespace rehearse::cli
