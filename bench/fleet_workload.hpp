// The benchmark fleet (docs/performance.md, "Workloads"): the `fleet` block
// of bench/scenarios/fleet-100k.json with its job count and span set, loaded
// through the scenario loader like any scenario, and run in the real world
// (the real core, every monitor, the trace in memory but no trace file).
// Shared by bench_fleet (timing) and fleet_export (the job list for SimPy).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::bench {

inline std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  return dir != nullptr ? dir : REHEARSE_BENCH_SOURCE_DIR;
}

// A number from the environment (the one command passes sizes and span
// this way), or the fallback.
inline std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::stoll(v);
}

inline std::vector<std::int64_t> env_sizes(const char* name, std::vector<std::int64_t> fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  std::vector<std::int64_t> out;
  std::stringstream in(v);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoll(item));
  return out;
}

// The fleet file: REHEARSE_FLEET_FILE when set (a variant of the fleet, e.g.
// bench/scenarios/fleet-queueing.json for the SimPy peer's queueing check),
// else bench/scenarios/fleet-100k.json.
inline std::string fleet_file() {
  const char* file = std::getenv("REHEARSE_FLEET_FILE");
  if (file != nullptr && *file != '\0') return file;
  return source_dir() + "/bench/scenarios/fleet-100k.json";
}

// The fleet of `jobs` jobs over `span_ms` from the file's start.
inline sim::Scenario fleet_scenario(std::int64_t jobs, DurationMs span_ms) {
  const std::string path = fleet_file();
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  nlohmann::json doc = nlohmann::json::parse(in);
  const TimeMs start = *parse_instant(doc.at("start").get<std::string>());
  doc["fleet"]["jobs"] = jobs;
  doc["until"] = format_instant(start + span_ms);
  doc["scenario"] = "bench-fleet";
  auto loaded = sim::load_scenario_json(doc.dump(), path);
  if (!loaded) throw std::runtime_error(loaded.error().describe());
  return std::move(*loaded);
}

// Peak resident set of this process so far (VmHWM), in bytes.
inline std::int64_t peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Runs and retry runs over all jobs, from the monitors' tallies.
struct FleetCounts {
  std::int64_t runs = 0;
  std::int64_t retries = 0;
};

inline FleetCounts fleet_counts(const nlohmann::json& tallies) {
  FleetCounts c;
  if (!tallies.contains("jobs")) return c;
  for (const auto& [id, job] : tallies.at("jobs").items()) {
    c.runs += job.value("runs", std::int64_t{0});
    c.retries += job.value("retries", std::int64_t{0});
  }
  return c;
}

}  // namespace rehearse::bench
