// JUnit XML for `rehearse run --junit FILE`: one <testsuite> "rehearse run"
// and one <testcase> per scenario file, so a CI system lists each incident
// replay as a test of its own. A scenario that failed (an invariant, an
// expectation, or under --strict a flag or an unchecked invariant) carries a
// <failure> whose text is what `run` prints after its table for it (each
// finding and the replay command); a file that did not load or could not run
// carries an <error>. Times are wall seconds. docs/cli.md has the layout.
#pragma once

#include <string>
#include <vector>

#include "sim/report/report.hpp"

namespace rehearse::cli {

struct RunJunitCase {
  enum class Outcome { passed, failed, error };
  std::string path;      // the scenario file (the testcase's name)
  std::string scenario;  // its name (the testcase's classname); the path when it did not load
  Outcome outcome = Outcome::passed;
  std::string message;  // the one-line summary of a failure or error
  std::string type;     // the first failed invariant, "expectation", "strict" or an error code
  std::string text;     // the findings (failures) or the error (errors)
  double seconds = 0;
};

// The testcase of a scenario that ran.
RunJunitCase junit_case(const sim::Scenario& scenario, const sim::ScenarioRunResult& run,
                        const sim::Verdict& verdict, double wall_ms);

// The testcase of a file that did not load or could not run.
RunJunitCase junit_error_case(const std::string& path, const Error& error);

std::string render_run_junit(const std::vector<RunJunitCase>& cases);

}  // namespace rehearse::cli
