// A failed case shrunk to a scenario file (sim/cli/shrink_case.hpp).
#include "sim/cli/shrink_case.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <vector>

#include "model/assert.hpp"
#include "sim/cli/output_file.hpp"

namespace rehearse::cli {

std::string invariant_to_shrink(const sim::CaseRecord& record) {
  const std::vector<std::string>& invariants = sim::invariant_names();
  for (const std::string& name : record.violations) {
    const bool known = std::find(invariants.begin(), invariants.end(), name) != invariants.end();
    if (known && name != "deterministic") return name;
  }
  return {};
}

Status prepare_shrink_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    return make_error(ErrorCode::invalid_argument, "--shrink-to: not a directory", dir);
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorCode::io_error,
                      "--shrink-to: cannot create the directory: " + ec.message(), dir);
  }
  return {};
}

Result<std::string> shrink_failed_case(sim::CaseRecord& record, const nlohmann::json& document,
                                       const ShrinkCaseOptions& options) {
  // check shrinks failed cases only, each at most once, into the DIR it prepared.
  REHEARSE_ASSERT(record.verdict == sim::CaseVerdict::fail);
  REHEARSE_ASSERT(record.shrunk.empty());
  REHEARSE_ASSERT(!options.dir.empty());
  REHEARSE_ASSERT_GE(options.max_probes, 1u);  // the document itself needs one run
  const std::string invariant = invariant_to_shrink(record);
  if (invariant.empty()) {
    return make_error(
        ErrorCode::invalid_argument,
        "shrink: the case violated no invariant one run can show (deterministic needs two runs; "
        "a core assertion is no invariant a scenario can expect)");
  }
  sim::ShrinkOptions shrink;
  shrink.max_probes = options.max_probes;
  shrink.seed = record.seed;
  shrink.name = sim::shrunk_scenario_name(record.scenario, record.seed, invariant);
  shrink.origin = fmt::format("{}, seed {} (rehearse check)",
                              record.path.empty() ? record.scenario : record.path, record.seed);
  auto result =
      sim::shrink_scenario(document, invariant, sim::world_probe(options.run_options), shrink);
  if (!result) return result.error();
  const std::string path = (std::filesystem::path(options.dir) / (shrink.name + ".json")).string();
  // The name is built from a kebab-case scenario name: the file lands directly in DIR.
  REHEARSE_ASSERT_EQ(std::filesystem::path(path).filename().string(), shrink.name + ".json");
  std::vector<std::string> inputs;
  if (!record.path.empty()) inputs.push_back(record.path);
  if (Status s = check_output_path(path, inputs); !s.ok()) return s.error();
  if (Status s = write_output_file(path, sim::scenario_file_text(result->document)); !s.ok()) {
    return s.error();
  }
  record.shrunk = path;
  return fmt::format("{}: seed {}: {}  wrote {}\n  replay: rehearse run {}\n", record.scenario,
                     record.seed, sim::describe_shrink(*result), path, path);
}

}  // namespace rehearse::cli
