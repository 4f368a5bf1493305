// Starter scenarios for `rehearse new KIND`: one per job kind, each a small
// incident a new user edits into their own. Every starter validates and runs
// as written, its `expect` block holds, and its description, the job's note
// and the fault's note say what to change (a test runs each one).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rehearse::cli {

struct StarterOptions {
  std::string service = "my-api";  // the call job's service (a name of the user's own)
  std::string scenario;            // the scenario's name; empty: the starter's own
};

struct Starter {
  std::string kind;     // a job kind, as scenario files name it
  std::string summary;  // one line for `rehearse new --help`
  nlohmann::ordered_json (*build)(const StarterOptions&);
};

// The starters, the call job's first.
const std::vector<Starter>& starters();

}  // namespace rehearse::cli
