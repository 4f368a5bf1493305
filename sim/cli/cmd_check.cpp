// rehearse check [SCENARIO|DIR...] [--seeds N] [--first-seed S] [--json]
//                [--random-jobs] [--check-determinism] [--emit DIR] [--shrink-to DIR]
//                [--coverage] [--require-coverage]
//                [--threads T] [--shard K/N] [--jsonl FILE] [--junit FILE] [--progress]
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
// cases (run_cases: the campaign runner's threads over this shard's cases,
// sim/check/campaign.hpp), write --jsonl / --junit, report (the report is
// shared with `rehearse merge`: print_check_report).
#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "model/assert.hpp"
#include "sim/check/campaign.hpp"
#include "sim/check/case_record.hpp"
#include "sim/check/check.hpp"
#include "sim/check/generate.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/campaign_cli.hpp"
#include "sim/cli/check_coverage.hpp"
#include "sim/cli/check_crash_sweep.hpp"
#include "sim/cli/check_report.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/output_file.hpp"
#include "sim/cli/scenario_files.hpp"
#include "sim/cli/shrink_case.hpp"
#include "sim/world/policy_files.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kCheckHelp =
    "usage: rehearse check [SCENARIO|DIR...] [--seeds N] [--first-seed S] [--json]\n"
    "                      [--random-jobs] [--check-determinism] [--emit DIR] [--shrink-to DIR]\n"
    "                      [--coverage] [--require-coverage]\n"
    "\n"
    "Swarm search (docs/check.md): for each scenario and each seed S in\n"
    "[first-seed, first-seed + N), derives a world from the scenario (which fault\n"
    "kinds are on for this seed, their times, durations, rates, restarts and disk\n"
    "faults, drawn from the seed), runs it once with seed S, and checks every\n"
    "invariant. A directory means every *.json file directly inside it, in name\n"
    "order. Prints one line per case that did not pass, with the command that\n"
    "replays it alone, then a summary (cases, passed, failed, errors, seeds/s).\n"
    "\n"
    "--random-jobs also gives the scenario's jobs new schedules (every few minutes\n"
    "to weekly), retry policies, tasks and model calls, drawn from the seed.\n"
    "Without a scenario, each seed generates a whole world (services, jobs, a\n"
    "span and faults placed where incidents hide), then the swarm's faults on\n"
    "top; --emit writes it as DIR/world.seed-<S>.json for 'rehearse run'.\n"
    "\n"
    "--check-determinism runs each case twice and compares the traces; a\n"
    "difference is a failure of 'deterministic' naming both hashes and the first\n"
    "event that differs. --emit DIR writes each derived case as an ordinary\n"
    "scenario file DIR/<scenario>.seed-<S>.json (replay it with 'rehearse run').\n"
    "--shrink-to DIR minimizes the first failing seed of each scenario and\n"
    "invariant (fewer faults, jobs and tasks, shorter faults and span, keeping the\n"
    "same invariant violated) and writes it as DIR/<scenario>-seed<S>-<invariant>.json,\n"
    "a scenario 'rehearse run' replays to that violation (docs/shrinking.md).\n"
    "\n"
    "--coverage prints how many cases reached each reachability point (a retry\n"
    "at its cap, a batch leaving items for the next cycle, a takeover with a retry\n"
    "pending, each job kind, policy form, fault kind and failure class);\n"
    "--require-coverage also fails (exit 1) when a point was reached by no case.\n"
    "\n"
    "--threads T runs T cases side by side (the output is the same for any T);\n"
    "--shard K/N runs the K-th of N contiguous blocks of the seeds; --jsonl FILE\n"
    "writes every case as JSON Lines for 'rehearse merge', which combines the N\n"
    "shard files into this command's report; --junit FILE writes JUnit XML for CI;\n"
    "a progress line goes to stderr on a terminal or with --progress.\n"
    "docs/check-ci.md has the formats and recipes for CI, Kubernetes and GNU parallel.\n"
    "\n"
    "Exit codes (the worst over all cases): 0 every invariant held, 1 one failed,\n"
    "2 bad input (or a case that could not be run), 3 an assertion of the core\n"
    "failed in a run.\n";

const std::vector<OptionSpec> kCheckOptions = with_campaign_options({
    {"--seeds", true, "N", "seeds per scenario (1..10^9, default 100)"},
    {"--first-seed", true, "S", "the first seed (0..2^64-1, default 1)"},
    {"--json", false, "", "print one JSON document"},
    {"--random-jobs", false, "",
     "randomize the jobs too: schedules, retry policies, tasks and model calls"},
    {"--check-determinism", false, "", "run each case twice; the traces must be identical"},
    {"--emit", true, "DIR", "write each derived case as a scenario file into DIR"},
    {"--shrink-to", true, "DIR",
     "shrink the first failing seed per scenario and invariant into DIR"},
    {"--coverage", false, "", "count the cases that reached each reachability point"},
    {"--require-coverage", false, "", "--coverage, and fail when a point was reached by no case"},
});

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
  o.swarm.random_jobs = parsed.has("--random-jobs");
  o.require_coverage = parsed.has("--require-coverage");
  o.coverage = o.require_coverage || parsed.has("--coverage");
  // The seeds parse_count allowed, and the last seed is a seed (no wrap).
  REHEARSE_ASSERT_GE(o.seeds, 1u);
  REHEARSE_ASSERT_LE(o.seeds, static_cast<std::uint64_t>(kMaxSeeds));
  REHEARSE_ASSERT_GE(o.first_seed + (o.seeds - 1), o.first_seed);
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
  // Derived cases travel without the file's directory: policy files inline.
  base.scenario = sim::inline_policy_files(std::move(base.scenario), file);
  base.path = file;
  base.name = scenario->name;
  return base;
}

// The base of generated cases: no document (each seed draws its own world).
sim::CheckCaseInput generated_base() {
  sim::CheckCaseInput base;
  base.name = sim::kGeneratedWorldName;
  return base;
}

std::string emitted_path(const sim::CheckOptions& o, const sim::CheckCaseInput& c) {
  REHEARSE_ASSERT(o.emit_dir.has_value());  // called under --emit only
  return (std::filesystem::path(*o.emit_dir) / fmt::format("{}.seed-{}.json", c.name, c.seed))
      .string();
}

// One case: derive, emit when asked, run and judge.
sim::CaseRecord run_one_case(const sim::CheckCaseInput& c, const sim::CheckOptions& o) {
  if (!o.emit_dir) return sim::check_case(c, o);
  auto derived = sim::derive_for(c, o.swarm);
  if (!derived) return sim::check_case(c, o);  // the record carries the error
  // The loader admits kebab-case names only: the file lands directly in DIR.
  REHEARSE_ASSERT_EQ(c.name.find('/'), std::string::npos);
  if (Status s = write_output_file(emitted_path(o, c), derived->dump(2) + "\n"); !s.ok()) {
    sim::CaseRecord r;
    r.scenario = c.name;
    r.path = c.path;
    r.seed = c.seed;
    r.verdict = sim::CaseVerdict::error;
    r.message = "--emit: " + s.error().describe();
    r.replay = sim::check_replay_command(c.path, c.seed, o.swarm);
    return r;
  }
  return sim::check_derived(c, *derived, o);
}

// Step 3: every scenario with every seed of this shard, in the one global
// order (scenario by scenario, seeds ascending), on the campaign's threads;
// each case runs whole on one thread and the records come back in order.
std::vector<sim::TimedRecord> run_cases(const std::vector<sim::CheckCaseInput>& bases,
                                        const sim::CheckOptions& o,
                                        const CampaignSettings& campaign, sim::SeedRange seeds) {
  const auto one = [&](const sim::CheckCase& k) {
    REHEARSE_ASSERT_LT(k.scenario, bases.size());  // campaign_cases numbers these bases
    sim::CheckCaseInput c = bases[k.scenario];
    c.seed = k.seed;
    sim::CaseRecord r = run_one_case(c, o);
    REHEARSE_ASSERT_EQ(r.seed, k.seed);  // its replay command names this seed
    return r;
  };
  return run_check_cases(sim::campaign_cases(bases.size(), seeds), one, campaign);
}

// The run as the JSON Lines header names it: the whole run's seeds, this
// shard, and the options that change what the records or the report say.
sim::CampaignHeader campaign_header(const std::vector<std::string>& files,
                                    const sim::CheckOptions& o, sim::Shard shard) {
  sim::CampaignHeader h;
  h.scenarios = files;
  h.first_seed = o.first_seed;
  h.seeds = o.seeds;
  h.shard = shard;
  h.options = {{"check_determinism", o.check_determinism},
               {"emit", o.emit_dir ? nlohmann::json(*o.emit_dir) : nlohmann::json()},
               {"max_instances", o.swarm.max_instances},
               {"drop_base_faults", o.swarm.drop_base_faults},
               {"random_jobs", o.swarm.random_jobs},
               {"coverage", o.coverage},
               {"require_coverage", o.require_coverage}};
  return h;
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
  REHEARSE_ASSERT_EQ(s.passed + s.failed + s.errors, s.cases);
  return s;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Step 4: the report.
void print_human(const std::vector<sim::CaseRecord>& records, const Summary& s,
                 const sim::CheckOptions& o, const std::vector<std::string>& shrink_notes) {
  REHEARSE_ASSERT_EQ(s.cases, records.size());  // summarize(records)
  for (std::size_t i = 0; i < records.size(); ++i) {
    const sim::CaseRecord& r = records[i];
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
    if (i < shrink_notes.size()) fmt::print("{}", shrink_notes[i]);
  }
  fmt::print("check: {} case{}, {} passed, {} failed, {} error{}, {:.1f} seeds/s ({:.1f}s)\n",
             s.cases, s.cases == 1 ? "" : "s", s.passed, s.failed, s.errors,
             s.errors == 1 ? "" : "s", s.wall_s > 0 ? static_cast<double>(s.cases) / s.wall_s : 0.0,
             s.wall_s);
}

void print_json(const std::vector<sim::CaseRecord>& records, const Summary& s,
                const sim::CheckOptions& o, int exit_code) {
  REHEARSE_ASSERT_EQ(s.cases, records.size());
  nlohmann::json cases = nlohmann::json::array();
  for (const sim::CaseRecord& r : records) cases.push_back(sim::to_json(r));
  nlohmann::json doc{{"ok", exit_code == kExitOk},
                     {"exit_code", exit_code},
                     {"cases", std::move(cases)},
                     {"summary", s.to_json()}};
  if (o.coverage) doc["coverage"] = coverage_json(tally_coverage(records));
  fmt::print("{}\n", doc.dump(2));
}

// --shrink-to (docs/shrinking.md): the first failing seed of each scenario
// and invariant, its derived document shrunk with this build's core and
// written into `dir` (the record's `shrunk` names the file). Returns, per
// case, what to print under it.
std::vector<std::string> shrink_failures(std::vector<sim::CaseRecord>& records,
                                         const std::vector<sim::CheckCaseInput>& bases,
                                         const sim::CheckOptions& o, const std::string& dir) {
  std::vector<std::string> notes(records.size());
  std::set<std::pair<std::string, std::string>> shrunk;  // (scenario, invariant)
  ShrinkCaseOptions shrink;
  shrink.dir = dir;
  if (o.prepare_run) o.prepare_run(shrink.run_options, 0);
  for (std::size_t i = 0; i < records.size(); ++i) {
    sim::CaseRecord& r = records[i];
    const std::string invariant = invariant_to_shrink(r);
    if (r.verdict != sim::CaseVerdict::fail || invariant.empty()) continue;
    if (!shrunk.insert({r.path.empty() ? r.scenario : r.path, invariant}).second) continue;
    const auto base = std::find_if(bases.begin(), bases.end(), [&r](const sim::CheckCaseInput& b) {
      return b.path == r.path && b.name == r.scenario;
    });
    if (base == bases.end()) continue;
    // The document the case ran, derived again as check_case derives it.
    sim::CheckCaseInput c = *base;
    c.seed = r.seed;
    auto derived = sim::derive_for(c, o.swarm);
    auto text =
        derived ? shrink_failed_case(r, *derived, shrink) : Result<std::string>(derived.error());
    notes[i] = text ? *text : "  shrink: " + text.error().describe() + "\n";
  }
  // At most one shrink per failing case: a note sits under a failed record.
  REHEARSE_ASSERT_LE(shrunk.size(), records.size());
  for (std::size_t i = 0; i < notes.size(); ++i) {
    if (!notes[i].empty()) REHEARSE_ASSERT(records[i].verdict == sim::CaseVerdict::fail);
  }
  return notes;
}

// check's options and those of its --crash-sweep mode (check_crash_sweep.hpp).
const std::vector<OptionSpec>& all_check_options() {
  static const std::vector<OptionSpec> all = [] {
    std::vector<OptionSpec> v = kCheckOptions;
    const std::vector<OptionSpec>& sweep = crash_sweep_option_specs();
    v.insert(v.end(), sweep.begin(), sweep.end());
    // An option declared in both tables would leave one of its entries dead.
    for (std::size_t i = 0; i < v.size(); ++i) {
      for (std::size_t j = i + 1; j < v.size(); ++j) REHEARSE_ASSERT_NE(v[i].name, v[j].name);
    }
    return v;
  }();
  return all;
}

}  // namespace

void print_check_report(const std::vector<sim::CaseRecord>& records, double wall_s,
                        const sim::CheckOptions& o, int exit_code,
                        const std::vector<std::string>& shrink_notes) {
  // No notes, or one per case (shrink_failures).
  if (!shrink_notes.empty()) REHEARSE_ASSERT_EQ(shrink_notes.size(), records.size());
  const Summary summary = summarize(records, wall_s);
  if (o.json) {
    for (const std::string& note : shrink_notes) fmt::print(stderr, "{}", note);
    print_json(records, summary, o, exit_code);
  } else {
    print_human(records, summary, o, shrink_notes);
    if (o.coverage) fmt::print("{}", coverage_text(tally_coverage(records)));
  }
}

int cmd_check(const Args& args) {
  auto parsed = parse_args(args, all_check_options());
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse check --help'");
  if (parsed->has("--help")) {
    fmt::print("{}{}\noptions:\n{}", kCheckHelp, crash_sweep_help(),
               format_options_help(all_check_options()));
    return kExitOk;
  }
  auto sweep = read_crash_sweep_options(*parsed);
  if (!sweep) return input_error(sweep.error());
  if (wants_crash_sweep(*parsed)) {
    if (parsed->positionals.empty()) {
      return usage_error("check: missing SCENARIO file or directory",
                         "see 'rehearse check --help'");
    }
    return run_crash_sweep(parsed->positionals, *sweep);
  }
  auto options = read_options(*parsed);
  if (!options) return input_error(options.error());
  // Without a scenario: one generated world per seed (sim/check/generate.hpp).
  auto files = options->paths.empty() ? Result<std::vector<std::string>>(std::vector<std::string>{})
                                      : expand_scenario_paths(options->paths);
  if (!files) return input_error(files.error());
  if (options->emit_dir) {
    if (Status s = check_emit_dir(*options->emit_dir); !s.ok()) return input_error(s.error());
  }
  const std::optional<std::string> shrink_to = parsed->value("--shrink-to");
  if (shrink_to) {
    if (Status s = prepare_shrink_dir(*shrink_to); !s.ok()) return input_error(s.error());
  }
  auto campaign = read_campaign_settings(*parsed, *files, options->json);
  if (!campaign) return input_error(campaign.error());
  std::vector<sim::CheckCaseInput> bases;
  for (const std::string& file : *files) {
    auto base = read_base(file);
    if (!base) return input_error(base.error());
    bases.push_back(std::move(*base));
  }
  if (files->empty()) bases.push_back(generated_base());
  const sim::CampaignHeader header = campaign_header(*files, *options, campaign->shard);
  // A check that runs no case proves nothing: refused, never a pass.
  if (header.shard_range().count == 0) {
    return usage_error(fmt::format("check: --shard {} of {} seed{} leaves this shard no case",
                                   sim::to_string(campaign->shard), options->seeds,
                                   options->seeds == 1 ? "" : "s"),
                       fmt::format("use at most {} shards for {} seeds", options->seeds,
                                   options->seeds));
  }
  const auto started = std::chrono::steady_clock::now();
  auto timed = run_cases(bases, *options, *campaign, header.shard_range());
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Every scenario with every seed of this shard, each once.
  REHEARSE_ASSERT_EQ(timed.size(), bases.size() * header.shard_range().count);
  std::vector<sim::CaseRecord> records = plain_records(timed);
  const std::vector<std::string> shrink_notes =
      shrink_to ? shrink_failures(records, bases, *options, *shrink_to)
                : std::vector<std::string>{};
  for (std::size_t i = 0; i < records.size(); ++i) timed[i].record.shrunk = records[i].shrunk;
  // A shard judges no coverage: only the merged records of every shard can.
  const bool whole = campaign->shard.count == 1;
  const int exit_code =
      coverage_exit_code(tally_coverage(records), options->require_coverage && whole,
                         sim::worst_exit_code(records));
  if (Status s = write_campaign_outputs(header, timed, exit_code, wall_s * 1000, *campaign);
      !s.ok()) {
    return input_error(s.error());
  }
  print_check_report(records, wall_s, *options, exit_code, shrink_notes);
  return exit_code;
}

}  // namespace rehearse::cli
