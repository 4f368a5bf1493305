// Shrinking: a failing scenario document minimized to a committable incident
// file that still violates the same invariant (docs/shrinking.md).
//
// The shrinker works on the scenario's JSON document, not on how the case was
// produced: `rehearse check` hands it the document it derived for a seed, a
// test hands it a file. A candidate is judged by a ViolationProbe, which runs
// the document (with whichever build of the core is under test) and names the
// invariants that fired; a candidate the loader refuses is an error of the
// probe and is simply rejected. A candidate is kept when the invariant being
// shrunk still fires.
//
// Passes, each its own function, repeated in this order until a whole round
// changes nothing or the probe budget is spent:
//   drop faults (delta debugging: halves, quarters, ... then one at a time),
//   drop jobs, drop the parts of jobs (group tasks, reconcile items, calls,
//   targets), drop declarations nothing needs any more (services, messenger
//   targets, orchestrator issues and agents: the loader decides what is still
//   referenced), shorten lasting faults (bisection on `for`), lower numbers
//   (the fault-kind table's `rate`, `integer` and `down_time` keys, bisected
//   toward the key's minimum), pull faults together (each later fault moved
//   toward the end of the one before it), order the faults by time in the
//   file, shorten the span (bisection on `until`, down to the end of the
//   last fault).
// Every candidate is run at most once (results are kept by the document's
// text), so the budget counts distinct runs. Same input, same probe: same
// output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/time.hpp"
// world.hpp before the other sim headers (it orders them, see its comment).
#include "sim/world/world.hpp"

namespace rehearse::sim {

// What one run of a candidate showed.
struct ProbeOutcome {
  std::vector<std::string> fired;  // distinct invariants that fired, in firing order
  std::uint64_t events = 0;        // simulator events executed
};

// Runs a candidate document. An error: the document does not load (or cannot
// run); the shrinker rejects that candidate and goes on.
using ViolationProbe = std::function<Result<ProbeOutcome>(const nlohmann::json& document)>;

inline constexpr std::size_t kDefaultShrinkProbes = 300;

struct ShrinkOptions {
  std::size_t max_probes = kDefaultShrinkProbes;  // distinct candidate runs, the first included
  // Where the failure came from, for the description ("scenarios/x.json,
  // seed 17, rehearse check"); empty: the document's scenario name.
  std::string origin;
  std::optional<std::uint64_t> seed;  // written as the document's `seed` (absent: left as it is)
  std::string name;                   // the output's `scenario` (kebab-case); empty: unchanged
};

// The sizes printed before and after.
struct ShrinkCounts {
  std::size_t faults = 0;
  std::size_t jobs = 0;  // listed jobs, plus a fleet's
  std::uint64_t events = 0;
  DurationMs span_ms = 0;  // until - start
};

struct ShrinkResult {
  // The minimized scenario: expect = {"violations": fired}, description
  // naming the origin and the counts before and after.
  nlohmann::json document;
  std::string invariant;
  // What the minimized document fires (the shrunk invariant first): its
  // expect.violations, so `rehearse run` of the file holds on the same build.
  std::vector<std::string> fired;
  ShrinkCounts before;
  ShrinkCounts after;
  std::size_t budget = 0;         // ShrinkOptions::max_probes
  std::size_t probes = 0;         // distinct candidates run (the original included)
  std::size_t rejected = 0;       // candidates the probe refused (did not load or run)
  std::size_t rounds = 0;         // rounds of all passes
  bool budget_exhausted = false;  // cut by max_probes: smaller, maybe not minimal
};

// Minimizes `failing_doc` keeping `invariant` violated. Errors: the probe
// refuses the document itself, or the document does not violate `invariant`.
Result<ShrinkResult> shrink_scenario(const nlohmann::json& failing_doc,
                                     const std::string& invariant, const ViolationProbe& probe,
                                     const ShrinkOptions& options = {});

// A probe that loads the document with the scenario loader and runs it once in
// the simulated world with `options`: its runner_factory, worker_ports and
// store_decorator are the build under test. The seed is the document's
// (options.seed is ignored), the trace is not kept, every violation counts.
ViolationProbe world_probe(RunOptions options = {});

// "<scenario>-seed<S>-<invariant>", kebab-case ("retries_bounded" becomes
// "retries-bounded"), the shrunk file's scenario name and file stem.
std::string shrunk_scenario_name(const std::string& scenario, std::uint64_t seed,
                                 const std::string& invariant);

// The document as a scenario file: keys in the format's order (format,
// scenario, description, start, until, seed, ...; a fault's at, for, kind
// first), one top-level key a line, one job, fault or service a line; a newline at
// the end.
std::string scenario_file_text(const nlohmann::json& document);

// Before and after (faults, jobs, events, span), the faults after, and the
// budget when it cut the search; one line each.
std::string describe_shrink(const ShrinkResult& result);

// One fault as a line: "2026-12-07T10:15:00Z restart down_for=2m".
std::string describe_fault(const nlohmann::json& fault);

}  // namespace rehearse::sim
