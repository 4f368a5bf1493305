// rehearse check SCENARIO|DIR... [--seeds N] [--first-seed S] [--json]
//                [--check-determinism] [--emit DIR]
//
// The swarm search (docs/check.md): for each scenario and each seed, derive
// the seed's world (sim/check/swarm.hpp), run it once and judge it by the
// invariant monitors (sim/check/check.hpp). Prints one line per case that
// did not pass, with the command that replays it, then a summary; --json
// prints one document. Exit codes as `rehearse run`: the worst over the
// cases (0 all held, 1 a check failed, 2 bad input or a case that could not
// be run, 3 an assertion of the core failed).
//
// The steps are named below: read the options, read the scenarios, run the
// cases (one small loop: run_cases), report.
#include <fmt/core.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "sim/check/case_record.hpp"
#include "sim/check/check.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kCheckHelp =
    "usage: rehearse check SCENARIO|DIR... [--seeds N] [--first-seed S] [--json]\n"
    "                      [--check-determinism] [--emit DIR]\n"
    "\n"
    "Swarm search (docs/check.md): for each scenario and each seed S in\n"
    "[first-seed, first-seed + N), derives a world from the scenario (which fault\n"
    "kinds are on for this seed, their times, durations, rates, restarts and disk\n"
    "faults, drawn from the seed), runs it once with seed S, and checks every\n"
    "invariant. A directory means every *.json file directly inside it, in name\n"
    "order. Prints one line per case that did not pass, with the command that\n"
    "replays it alone, then a summary (cases, passed, failed, errors, seeds/s).\n"
    "\n"
    "--check-determinism runs each case twice and compares the traces; a\n"
    "difference is a failure of 'deterministic' naming both hashes and the first\n"
    "event that differs. --emit DIR writes each derived case as an ordinary\n"
    "scenario file DIR/<scenario>.seed-<S>.json (replay it with 'rehearse run').\n"
    "\n"
    "Exit codes (the worst over all cases): 0 every invariant held, 1 one failed,\n"
    "2 bad input (or a case that could not be run), 3 an assertion of the core\n"
    "failed in a run.\n";

const std::vector<OptionSpec> kCheckOptions{
    {"--seeds", true, "N", "seeds per scenario (1..10^9, default 100)"},
    {"--first-seed", true, "S", "the first seed (0..2^64-1, default 1)"},
    {"--json", false, "", "print one JSON document"},
    {"--check-determinism", false, "", "run each case twice; the traces must be identical"},
    {"--emit", true, "DIR", "write each derived case as a scenario file into DIR"},
};

constexpr long long kMaxSeeds = 1'000'000'000;

Result<std::uint64_t> parse_first_seed(const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return make_error(
        ErrorCode::invalid_argument,
        fmt::format("--first-seed: expected an integer 0..18446744073709551615, got '{}'", text));
  }
  return v;
}

// Step 1: the options.
Result<sim::CheckOptions> read_options(const ParsedArgs& parsed) {
  sim::CheckOptions o;
  o.paths = parsed.positionals;
  if (auto text = parsed.value("--seeds")) {
    auto n = parse_count("--seeds", *text, 1, kMaxSeeds);
    if (!n) return n.error();
    o.seeds = static_cast<std::uint64_t>(*n);
  } else {
    o.seeds = 100;
  }
  if (auto text = parsed.value("--first-seed")) {
    auto s = parse_first_seed(*text);
    if (!s) return s.error();
    o.first_seed = *s;
  }
  if (o.seeds - 1 > std::numeric_limits<std::uint64_t>::max() - o.first_seed) {
    return make_error(ErrorCode::invalid_argument,
                      "--first-seed + --seeds goes past the largest seed (2^64-1)");
  }
  o.json = parsed.has("--json");
  o.check_determinism = parsed.has("--check-determinism");
  o.emit_dir = parsed.value("--emit");
  return o;
}

Status check_emit_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    return make_error(ErrorCode::invalid_argument, "--emit: not a directory", dir);
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorCode::io_error, "--emit: cannot create the directory: " + ec.message(),
                      dir);
  }
  return {};
}

// Step 2: the scenarios, each loaded by the real loader (errors name the
// file and pointer) and kept as the document it is.
Result<sim::CheckCaseInput> read_base(const std::string& file) {
  auto scenario = sim::load_scenario_file(file);
  if (!scenario) return scenario.error();
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  sim::CheckCaseInput base;
  base.scenario = nlohmann::json::parse(text.str(), nullptr, false);
  if (base.scenario.is_discarded()) {
    return make_error(ErrorCode::io_error, "the file changed while it was read", file);
  }
  base.path = file;
  base.name = scenario->name;
  return base;
}

std::string emitted_path(const sim::CheckOptions& o, const sim::CheckCaseInput& c) {
  return (std::filesystem::path(*o.emit_dir) / fmt::format("{}.seed-{}.json", c.name, c.seed))
      .string();
}

// One case: derive, emit when asked, run and judge.
sim::CaseRecord run_one_case(const sim::CheckCaseInput& c, const sim::CheckOptions& o) {
  if (!o.emit_dir) return sim::check_case(c, o);
  auto derived = sim::derive_case(c.scenario, c.seed, o.swarm, nullptr, c.path);
  if (!derived) return sim::check_case(c, o);  // the record carries the error
  if (Status s = write_output_file(emitted_path(o, c), derived->dump(2) + "\n"); !s.ok()) {
    sim::CaseRecord r;
    r.scenario = c.name;
    r.path = c.path;
    r.seed = c.seed;
    r.verdict = sim::CaseVerdict::error;
    r.message = "--emit: " + s.error().describe();
    r.replay = sim::check_replay_command(c.path, c.seed);
    return r;
  }
  return sim::check_derived(c, *derived, o);
}

// Step 3: every scenario with every seed, in order (the campaign runner may
// replace this loop with its threads and shards).
std::vector<sim::CaseRecord> run_cases(const std::vector<sim::CheckCaseInput>& bases,
                                       const sim::CheckOptions& o) {
  std::vector<sim::CaseRecord> records;
  for (const sim::CheckCaseInput& base : bases) {
    for (std::uint64_t i = 0; i < o.seeds; ++i) {
      sim::CheckCaseInput c = base;
      c.seed = o.first_seed + i;
      records.push_back(run_one_case(c, o));
    }
  }
  return records;
}

struct Summary {
  std::size_t cases = 0, passed = 0, failed = 0, errors = 0;
  double wall_s = 0;
  nlohmann::json to_json() const {
    return {{"cases", cases},
            {"passed", passed},
            {"failed", failed},
            {"errors", errors},
            {"wall_ms", static_cast<std::int64_t>(wall_s * 1000)},
            {"seeds_per_s", wall_s > 0 ? static_cast<double>(cases) / wall_s : 0.0}};
  }
};

Summary summarize(const std::vector<sim::CaseRecord>& records, double wall_s) {
  Summary s;
  s.cases = records.size();
  s.wall_s = wall_s;
  for (const sim::CaseRecord& r : records) {
    switch (r.verdict) {
      case sim::CaseVerdict::pass: ++s.passed; break;
      case sim::CaseVerdict::fail: ++s.failed; break;
      case sim::CaseVerdict::error: ++s.errors; break;
    }
  }
  return s;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Step 4: the report.
void print_human(const std::vector<sim::CaseRecord>& records, const Summary& s,
                 const sim::CheckOptions& o) {
  for (const sim::CaseRecord& r : records) {
    if (r.verdict == sim::CaseVerdict::pass) continue;
    const std::string what = r.verdict == sim::CaseVerdict::fail ? joined(r.violations) : "error";
    fmt::print("{} {} seed {}: {}: {}\n  replay: {}\n",
               r.verdict == sim::CaseVerdict::fail ? "FAIL" : "ERROR",
               r.path.empty() ? r.scenario : r.path, r.seed, what, r.message, r.replay);
    if (o.emit_dir) {
      sim::CheckCaseInput c;
      c.name = r.scenario;
      c.seed = r.seed;
      fmt::print("  emitted: rehearse run {} --seed {}\n", emitted_path(o, c), r.seed);
    }
  }
  fmt::print("check: {} case{}, {} passed, {} failed, {} error{}, {:.1f} seeds/s ({:.1f}s)\n",
             s.cases, s.cases == 1 ? "" : "s", s.passed, s.failed, s.errors,
             s.errors == 1 ? "" : "s", s.wall_s > 0 ? static_cast<double>(s.cases) / s.wall_s : 0.0,
             s.wall_s);
}

void print_json(const std::vector<sim::CaseRecord>& records, const Summary& s, int exit_code) {
  nlohmann::json cases = nlohmann::json::array();
  for (const sim::CaseRecord& r : records) cases.push_back(sim::to_json(r));
  const nlohmann::json doc{{"ok", exit_code == kExitOk},
                           {"exit_code", exit_code},
                           {"cases", std::move(cases)},
                           {"summary", s.to_json()}};
  fmt::print("{}\n", doc.dump(2));
}

}  // namespace

int cmd_check(const Args& args) {
  auto parsed = parse_args(args, kCheckOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse check --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kCheckHelp, format_options_help(kCheckOptions));
    return kExitOk;
  }
  auto options = read_options(*parsed);
  if (!options) return input_error(options.error());
  if (options->paths.empty()) {
    return usage_error("check: missing SCENARIO file or directory", "see 'rehearse check --help'");
  }
  auto files = expand_scenario_paths(options->paths);
  if (!files) return input_error(files.error());
  if (options->emit_dir) {
    if (Status s = check_emit_dir(*options->emit_dir); !s.ok()) return input_error(s.error());
  }
  std::vector<sim::CheckCaseInput> bases;
  for (const std::string& file : *files) {
    auto base = read_base(file);
    if (!base) return input_error(base.error());
    bases.push_back(std::move(*base));
  }
  const auto started = std::chrono::steady_clock::now();
  const std::vector<sim::CaseRecord> records = run_cases(bases, *options);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const Summary summary = summarize(records, wall_s);
  const int exit_code = sim::worst_exit_code(records);
  if (options->json) {
    print_json(records, summary, exit_code);
  } else {
    print_human(records, summary, *options);
  }
  return exit_code;
}

}  // namespace rehearse::cli
