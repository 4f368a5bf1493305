#include "sim/check/campaign_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace rehearse::sim {
namespace {

struct ScenarioRow {
  std::string path;
  std::string scenario;
  CampaignCounts counts;
};

// One row per scenario, in the order the records name them.
std::vector<ScenarioRow> scenario_rows(const std::vector<TimedRecord>& records) {
  std::vector<ScenarioRow> rows;
  std::map<std::string, std::size_t> row_of;
  for (const TimedRecord& t : records) {
    const CaseRecord& r = t.record;
    const auto [it, fresh] = row_of.emplace(r.path.empty() ? r.scenario : r.path, rows.size());
    if (fresh) rows.push_back({r.path, r.scenario, {}});
    CampaignCounts& c = rows[it->second].counts;
    ++c.cases;
    if (r.verdict == CaseVerdict::pass) ++c.passed;
    if (r.verdict == CaseVerdict::fail) ++c.failed;
    if (r.verdict == CaseVerdict::error) ++c.errors;
  }
  return rows;
}

std::string seeds_line(const CampaignHeader& h) {
  if (h.seeds == 0) return "no seeds";
  return fmt::format("seeds {}..{}", h.first_seed, h.first_seed + (h.seeds - 1));
}

std::string finding(const CaseRecord& r) {
  std::string out = fmt::format("{} {} seed {}", r.verdict == CaseVerdict::fail ? "FAIL" : "ERROR",
                                r.path.empty() ? r.scenario : r.path, r.seed);
  if (!r.violations.empty()) out += fmt::format(": {}", fmt::join(r.violations, ", "));
  out += "\n";
  if (!r.message.empty()) out += "  " + r.message + "\n";
  if (!r.replay.empty()) out += "  replay: " + r.replay + "\n";
  if (!r.shrunk.empty()) out += "  shrunk: " + r.shrunk + "\n";
  return out;
}

}  // namespace

std::string format_check_report(const CampaignHeader& header,
                                const std::vector<TimedRecord>& records, int exit_code) {
  const std::vector<ScenarioRow> rows = scenario_rows(records);
  std::size_t width = 8;
  for (const ScenarioRow& row : rows)
    width = std::max(width, (row.path.empty() ? row.scenario : row.path).size());
  std::string out = fmt::format("{:<{}}  {:>7}  {:>7}  {:>7}  {:>7}\n", "scenario", width, "cases",
                                "passed", "failed", "errors");
  for (const ScenarioRow& row : rows) {
    out += fmt::format("{:<{}}  {:>7}  {:>7}  {:>7}  {:>7}\n",
                       row.path.empty() ? row.scenario : row.path, width, row.counts.cases,
                       row.counts.passed, row.counts.failed, row.counts.errors);
  }
  const CampaignCounts total = count_verdicts(records);
  out +=
      fmt::format("\n{} cases ({}, {}): {} passed, {} failed, {} errors; exit code {}\n",
                  total.cases, seeds_line(header), fmt::format("shard {}", to_string(header.shard)),
                  total.passed, total.failed, total.errors, exit_code);
  std::string findings;
  for (const TimedRecord& t : records) {
    if (t.record.verdict != CaseVerdict::pass) findings += finding(t.record);
  }
  if (!findings.empty()) out += "\n" + findings;
  return out;
}

nlohmann::json check_report_json(const CampaignHeader& header,
                                 const std::vector<TimedRecord>& records, int exit_code) {
  const CampaignCounts total = count_verdicts(records);
  nlohmann::json doc{{"ok", exit_code == 0},
                     {"exit_code", exit_code},
                     {"command", header.command},
                     {"first_seed", header.first_seed},
                     {"seeds", header.seeds},
                     {"shard", to_string(header.shard)},
                     {"options", header.options},
                     {"counts",
                      {{"cases", total.cases},
                       {"passed", total.passed},
                       {"failed", total.failed},
                       {"errors", total.errors}}}};
  nlohmann::json scenarios = nlohmann::json::array();
  for (const ScenarioRow& row : scenario_rows(records)) {
    scenarios.push_back({{"path", row.path},
                         {"scenario", row.scenario},
                         {"cases", row.counts.cases},
                         {"passed", row.counts.passed},
                         {"failed", row.counts.failed},
                         {"errors", row.counts.errors}});
  }
  doc["scenarios"] = std::move(scenarios);
  nlohmann::json failures = nlohmann::json::array();
  for (const TimedRecord& t : records) {
    if (t.record.verdict != CaseVerdict::pass) failures.push_back(to_json(t.record));
  }
  doc["failures"] = std::move(failures);
  return doc;
}

}  // namespace rehearse::sim
