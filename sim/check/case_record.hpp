// One checked case of `rehearse check`: a scenario (or a generated world) and
// a seed, and what its run showed. The swarm search produces these, the
// campaign runner (threads, shards) collects them, JSON Lines and
// `rehearse merge` carry them between machines, JUnit XML reports them
// (docs/check.md). One JSON object per record, keys as named below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse::sim {

enum class CaseVerdict : unsigned char {
  pass,   // every invariant held and the world settled
  fail,   // an invariant fired (names in `violations`)
  error,  // the case could not be run as described (bad derived world, internal error)
};
const char* to_string(CaseVerdict verdict) noexcept;

struct CaseRecord {
  std::string scenario;  // the scenario's name; "generated" for a generated world
  std::string path;      // the file as given on the command line; empty when generated
  std::uint64_t seed = 0;
  CaseVerdict verdict = CaseVerdict::pass;
  std::vector<std::string> violations;  // distinct invariants that fired, in firing order
  std::string message;                  // the first violation's (or the error's) text
  std::string replay;                   // the command line that replays this case alone
  std::string shrunk;                   // the shrunk scenario file, when one was written
  std::string trace_hash;               // hex64, as `rehearse run` prints it
  std::uint64_t events = 0;             // simulator events executed
  // The reachability points the run reached (check --coverage), in table order.
  std::vector<std::string> reached;

  bool operator==(const CaseRecord&) const = default;
};

// {"scenario":..., "path":..., "seed":..., "verdict":"pass"|"fail"|"error",
//  "violations":[...], "message":..., "replay":..., "shrunk":..., "trace_hash":..., "events":...,
//  "reached":[...] (only when not empty)}
nlohmann::json to_json(const CaseRecord& record);
// The inverse; an error names the key (as a JSON pointer) and what was expected.
Result<CaseRecord> case_record_from_json(const nlohmann::json& object);

}  // namespace rehearse::sim
