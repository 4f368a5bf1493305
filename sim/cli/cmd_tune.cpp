// rehearse tune SCENARIO --job ID [--grid SPEC] [--outages SPEC|@FILE] [--seeds N]
//               [--seed N] [--threads T] [--service NAME] [--fault KIND] [--json|--csv]
//               [--svg FILE] [--progress]
// rehearse tune SCENARIO --fleet [--service NAME] [--grid SPEC] [--outages SPEC|@FILE] ...
#include <fmt/core.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "model/assert.hpp"
#include "sim/check/progress.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/json_input.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/tune_fleet_render.hpp"
#include "sim/cli/tune_render.hpp"
#include "sim/report/tune.hpp"
#include "sim/report/tune_fleet.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kTuneHelp =
    "usage: rehearse tune SCENARIO --job ID [--grid SPEC] [--outages SPEC|@FILE] [--seeds N]\n"
    "                     [--seed N] [--threads T] [--service NAME] [--fault KIND]\n"
    "                     [--json|--csv] [--svg FILE] [--progress]\n"
    "       rehearse tune SCENARIO --fleet [--service NAME] [--grid SPEC] [--outages SPEC|@FILE]\n"
    "                     [--seeds N] [--seed N] [--threads T] [--json|--csv] [--svg FILE]\n"
    "                     [--progress]\n"
    "\n"
    "Sweeps a grid of retry policies for one job of SCENARIO against an outage of\n"
    "a service the job calls (model-api for group and publish jobs, brokerage for\n"
    "fetch jobs, the first service a call job calls; --service chooses another of\n"
    "them), N simulated runs per policy, every policy meeting the same N outages. Per\n"
    "policy: recovery probability with a Wilson 95% interval, time to recovery\n"
    "(p50, p95), extra calls to the provider, the longest start delay of another\n"
    "job on the serial queue, how often the retry chain reaches the next slot;\n"
    "the Pareto front (recovery against extra calls and p95 time to recovery)\n"
    "and where the job's own policy sits.\n"
    "\n"
    "  --grid "
    "'attempts=2-6;delay=1m,5m,15m,30m,1h,2h;backoff=exponential,fixed,linear;cap=none;jitter=0'\n"
    "         (the default; keys left out keep theirs)\n"
    "  --outages 30m,2h,6h | uniform:30m-12h (default) | lognormal:30m-12h | @FILE\n"
    "         (FILE: one duration per line, drawn at random)\n"
    "\n"
    "--fleet sweeps a policy applied to every job that calls a service of the\n"
    "scenario's own with a capacity (--service chooses which), against outages of\n"
    "that service: per policy the recovery of the slots the outage hit, work\n"
    "amplification, the peak load after the outage, drain time, goodput and the\n"
    "share of runs that went metastable, the Pareto front, and an SVG of the load\n"
    "curves. Its grid adds jitter shapes and a fleet-wide retry budget:\n"
    "  --grid 'attempts=4,6;delay=5s,30s;backoff=exponential;cap=none;"
    "jitter=none,equal,full,decorrelated;budget=none'\n"
    "         (the default; budget=none,20 adds a budget of 20% of the attempts)\n"
    "  --outages uniform:5m-30m (the default with --fleet); --seeds defaults to 10\n"
    "See docs/tune.md.\n";

const std::vector<OptionSpec> kTuneOptions{
    {"--job", true, "ID", "the job whose policy is tuned (required without --fleet)"},
    {"--fleet", false, "", "tune one policy for every job calling a capacity-limited service"},
    {"--grid", true, "SPEC", "the policies swept (see above)"},
    {"--outages", true, "SPEC", "outage lengths: a list, uniform:LO-HI, lognormal:LO-HI or @FILE"},
    {"--seeds", true, "N", "runs per policy (1-100000, default 100)"},
    {"--seed", true, "N", "base seed of the outage sample (default: the scenario's seed)"},
    {"--threads", true, "T", "worker threads (1-256, default: every core)"},
    {"--service", true, "NAME",
     "the service the outage breaks (one the job calls; with --fleet, one with a capacity)"},
    {"--fault", true, "KIND",
     "quota_exhausted (default for model-api) or http_errors (503, default elsewhere)"},
    {"--json", false, "", "print one JSON document"},
    {"--csv", false, "", "print one CSV row per policy"},
    {"--svg", true, "FILE",
     "write the heat map (attempts x base delay) as SVG; with --fleet, the load curves"},
    {"--progress", false, "", "progress on stderr even when it is not a terminal"},
};

Result<sim::OutageDistribution> read_outages(const std::string& spec) {
  if (spec.empty() || spec.front() != '@') return sim::parse_outages(spec);
  const std::string path = spec.substr(1);
  auto text = read_text_file(path, "outage file");
  if (!text) return std::move(text).error();
  return sim::empirical_outages(*text, path);
}

// --seeds, --seed and --threads, which both sweeps take; `runs` and `seed`
// come in with their defaults.
Status read_run_counts(const ParsedArgs& args, int& runs, std::uint64_t& seed, int& threads) {
  threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto n = args.value("--seeds")) {
    auto c = parse_count("--seeds", *n, 1, 100000);
    if (!c) return std::move(c).error();
    runs = static_cast<int>(*c);
  }
  if (auto n = args.value("--seed")) {
    auto c = parse_count("--seed", *n, 0, (1LL << 53));
    if (!c) return std::move(c).error();
    seed = static_cast<std::uint64_t>(*c);
  }
  if (auto n = args.value("--threads")) {
    auto c = parse_count("--threads", *n, 1, 256);
    if (!c) return std::move(c).error();
    threads = static_cast<int>(*c);
  }
  return {};
}

Result<sim::TuneOptions> read_options(const ParsedArgs& args, const sim::Scenario& scenario) {
  REHEARSE_ASSERT(args.value("--job").has_value());  // cmd_tune requires --job first
  sim::TuneOptions o;
  o.job_id = *args.value("--job");
  o.seed = scenario.seed;
  if (auto g = args.value("--grid")) {
    auto grid = sim::parse_tune_grid(*g);
    if (!grid) return std::move(grid).error();
    o.grid = *grid;
  }
  auto outages = read_outages(args.value("--outages").value_or("uniform:30m-12h"));
  if (!outages) return std::move(outages).error();
  o.outages = *outages;
  if (Status s = read_run_counts(args, o.runs, o.seed, o.threads); !s.ok()) return s.error();
  o.service = args.value("--service").value_or("");
  if (auto f = args.value("--fault")) {
    auto kind = sim::parse_fault_kind(*f);
    if (!kind ||
        (*kind != sim::FaultKind::quota_exhausted && *kind != sim::FaultKind::http_errors)) {
      return make_error(ErrorCode::invalid_argument,
                        fmt::format("--fault \"{}\": expected quota_exhausted or http_errors", *f));
    }
    o.fault = *kind;
  }
  // The ranges parse_count enforced (or the defaults), and a fault tune can place.
  REHEARSE_ASSERT_GE(o.runs, 1);
  REHEARSE_ASSERT_LE(o.runs, 100000);
  REHEARSE_ASSERT_GE(o.threads, 1);
  if (o.fault) {
    REHEARSE_ASSERT(*o.fault == sim::FaultKind::quota_exhausted ||
                    *o.fault == sim::FaultKind::http_errors);
  }
  return o;
}

Result<sim::FleetTuneOptions> read_fleet_options(const ParsedArgs& args,
                                                 const sim::Scenario& scenario) {
  sim::FleetTuneOptions o;
  o.seed = scenario.seed;
  if (auto g = args.value("--grid")) {
    auto grid = sim::parse_fleet_grid(*g);
    if (!grid) return std::move(grid).error();
    o.grid = *grid;
  }
  auto outages = read_outages(args.value("--outages").value_or("uniform:5m-30m"));
  if (!outages) return std::move(outages).error();
  o.outages = *outages;
  if (Status s = read_run_counts(args, o.runs, o.seed, o.threads); !s.ok()) return s.error();
  o.service = args.value("--service").value_or("");
  REHEARSE_ASSERT_GE(o.runs, 1);
  REHEARSE_ASSERT_GE(o.threads, 1);
  return o;
}

// The progress line on stderr (sim/check/progress.hpp), on a terminal or
// with --progress; `run_tune` reports its last call with done == total.
std::function<void(std::size_t, std::size_t)> progress_line(const ParsedArgs& parsed) {
  if (!parsed.has("--progress") && isatty(STDERR_FILENO) != 1) return {};
  auto line = std::make_shared<sim::ProgressLine>(stderr, "tune", sim::stderr_progress_style());
  line->set_nouns("runs", "runs");
  return [line](std::size_t done, std::size_t total) {
    REHEARSE_ASSERT_LE(done, total);  // run_tune counts finished runs of its total
    if (done == total) {
      line->finish(done, total);
    } else {
      line->update(done, total);
    }
  };
}

// The sweep of one job's policy, its outputs as asked.
int tune_job(const ParsedArgs& args, const sim::Scenario& scenario,
             const std::optional<std::string>& svg) {
  auto options = read_options(args, scenario);
  if (!options) return input_error(options.error());
  options->progress = progress_line(args);
  auto result = sim::run_tune(scenario, *options);
  if (!result) return input_error(result.error());
  if (svg) {
    if (Status s = write_output_file(*svg, tune_svg(*result)); !s.ok())
      return input_error(s.error());
  }
  if (args.has("--json")) {
    fmt::print("{}\n", tune_json(*result).dump(2));
  } else if (args.has("--csv")) {
    fmt::print("{}", tune_csv(*result));
  } else if (svg != std::optional<std::string>("-")) {
    fmt::print("{}", tune_table(*result));
  }
  return kExitOk;
}

// The fleet sweep, its outputs as asked.
int tune_fleet(const ParsedArgs& args, const sim::Scenario& scenario,
               const std::optional<std::string>& svg) {
  auto options = read_fleet_options(args, scenario);
  if (!options) return input_error(options.error());
  options->progress = progress_line(args);
  auto result = sim::run_fleet_tune(scenario, *options);
  if (!result) return input_error(result.error());
  if (svg) {
    if (Status s = write_output_file(*svg, tune_fleet_svg(*result)); !s.ok())
      return input_error(s.error());
  }
  if (args.has("--json")) {
    fmt::print("{}\n", tune_fleet_json(*result).dump(2));
  } else if (args.has("--csv")) {
    fmt::print("{}", tune_fleet_csv(*result));
  } else if (svg != std::optional<std::string>("-")) {
    fmt::print("{}", tune_fleet_table(*result));
  }
  return kExitOk;
}

// What the command line asks that no sweep can do; empty when nothing.
std::string usage_problem(const ParsedArgs& args) {
  if (args.positionals.size() != 1) return "tune: expected exactly one SCENARIO";
  const bool fleet = args.has("--fleet");
  if (fleet && args.value("--job")) return "tune: --fleet tunes every calling job; drop --job";
  if (fleet && args.value("--fault"))
    return "tune: --fleet breaks the service with http_errors (503)";
  if (!fleet && !args.value("--job")) return "tune: --job ID is required (or --fleet)";
  if (args.has("--json") && args.has("--csv")) return "tune: --json and --csv are exclusive";
  if (args.value("--svg") == std::optional<std::string>("-") &&
      (args.has("--json") || args.has("--csv"))) {
    return "tune: --svg - and --json/--csv would share standard output";
  }
  return "";
}

}  // namespace

int cmd_tune(const Args& args) {
  auto parsed = parse_args(args, kTuneOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse tune --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kTuneHelp, format_options_help(kTuneOptions));
    return kExitOk;
  }
  if (const std::string problem = usage_problem(*parsed); !problem.empty()) {
    return usage_error(problem);
  }
  const std::string& path = parsed->positionals.front();
  const auto svg = parsed->value("--svg");
  if (svg) {
    std::vector<std::string> inputs{path};
    if (auto o = parsed->value("--outages"); o && !o->empty() && o->front() == '@') {
      inputs.push_back(o->substr(1));
    }
    if (Status s = check_output_path(*svg, inputs); !s.ok()) return input_error(s.error());
  }
  auto scenario = sim::load_scenario_file(path);
  if (!scenario) return input_error(scenario.error());
  if (parsed->has("--fleet")) return tune_fleet(*parsed, *scenario, svg);
  return tune_job(*parsed, *scenario, svg);
}

}  // namespace rehearse::cli
