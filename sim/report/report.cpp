#include "sim/report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>

#include "model/assert.hpp"
#include "model/job_state.hpp"
#include "model/notification.hpp"

namespace rehearse::sim {

using nlohmann::json;

std::string describe(const ScenarioFlag& flag, bool strict) {
  return fmt::format("{}: {} [{}]: {}", flag.where, strict ? "error" : "warning",
                     to_string(flag.kind), flag.message);
}

json to_json(const ScenarioFlag& flag) {
  return json{{"kind", to_string(flag.kind)}, {"where", flag.where}, {"message", flag.message}};
}

Verdict judge_run(const Scenario& scenario, const ScenarioRunResult& run,
                  const std::optional<Violation>& determinism, bool strict) {
  Verdict v;
  v.strict = strict;
  v.flags = scenario.flags;
  if (const auto it = run.tallies.find("unchecked"); it != run.tallies.end() && it->is_array()) {
    v.unchecked = *it;
  }
  const std::set<std::string> expected(scenario.expect.violations.begin(),
                                       scenario.expect.violations.end());
  std::set<std::string> seen;
  std::vector<Violation> all = run.violations;
  if (determinism) all.push_back(*determinism);
  for (const Violation& violation : all) {
    seen.insert(violation.invariant);
    if (expected.count(violation.invariant) != 0) {
      v.expected_seen.push_back(violation);
    } else {
      v.violations.push_back(violation);
    }
  }
  for (const std::string& name : scenario.expect.violations) {
    if (seen.count(name) == 0) v.expected_missing.push_back(name);
  }
  v.expect_failures = check_expectations(scenario, run);
  v.errors = run.errors;
  // Every violation lands on one side: expected, or reported.
  REHEARSE_ASSERT_EQ(v.expected_seen.size() + v.violations.size(), all.size());
  REHEARSE_ASSERT_LE(v.expected_missing.size(), scenario.expect.violations.size());
  return v;
}

std::string replay_command(const std::string& path, std::uint64_t seed, bool strict) {
  return fmt::format("rehearse run {} --seed {}{} --trace t.jsonl", path, seed,
                     strict ? " --strict" : "");
}

std::string SummaryRow::result() const {
  if (!error.empty()) return "ERROR";
  if (!held) return "FAIL";
  return notes.empty() ? "ok" : "ok*";
}

std::vector<std::string> verdict_notes(const Verdict& verdict) {
  std::vector<std::string> notes;
  for (const json& u : verdict.unchecked) {
    notes.push_back(fmt::format("invariant {} not checked for {}: {}",
                                u.value("invariant", std::string()),
                                u.value("subject", std::string()), u.value("why", std::string())));
  }
  for (const ScenarioFlag& f : verdict.flags) {
    notes.push_back(fmt::format("flag [{}] {}: {}", to_string(f.kind), f.where, f.message));
  }
  REHEARSE_ASSERT_EQ(notes.size(), verdict.unchecked.size() + verdict.flags.size());
  return notes;
}

SummaryRow error_row(const std::string& path, const std::string& error) {
  REHEARSE_ASSERT(!error.empty());  // an empty error would read as FAIL, not ERROR
  SummaryRow row;
  row.scenario = path;
  row.path = path;
  row.error = error;
  row.held = false;
  return row;
}

SummaryRow summarize(const Scenario& scenario, const ScenarioRunResult& run, double wall_ms,
                     bool held) {
  SummaryRow row;
  row.scenario = scenario.name;
  row.path = run.path;
  row.jobs = static_cast<std::int64_t>(scenario.jobs.size());
  const json& t = run.tallies;
  if (t.contains("jobs") && t.at("jobs").is_object()) {
    for (const auto& [id, j] : t.at("jobs").items()) {
      (void)j;
      row.delivered += tally_count(t, {"jobs", id, "delivered_slots"});
      row.skipped += tally_count(t, {"jobs", id, "skipped_slots"});
      row.failed += tally_count(t, {"jobs", id, "failed_slots"});
      row.in_flight += tally_count(t, {"jobs", id, "in_flight_slots"});
      row.retries += tally_count(t, {"jobs", id, "retries"});
      row.exhausted += tally_count(t, {"jobs", id, "exhausted_slots"});
    }
  }
  if (t.contains("notifications") && t.at("notifications").is_object()) {
    for (const auto& [event, n] : t.at("notifications").items()) {
      (void)event;
      if (n.is_number_integer()) row.notifications += n.get<std::int64_t>();
    }
  }
  row.events = run.events_executed;
  // The run's clock never went back past its start.
  REHEARSE_ASSERT_GE(run.end_ms, run.start_ms);
  row.span_ms = run.end_ms - run.start_ms;
  row.wall_ms = wall_ms;
  row.trace_hash = run.trace_hash;
  row.held = held;
  return row;
}

namespace {

// The scenario column: the name, with the file when another row shares it.
std::vector<std::string> row_labels(const std::vector<SummaryRow>& rows) {
  std::map<std::string, int> uses;
  for (const SummaryRow& r : rows) ++uses[r.scenario];
  std::vector<std::string> labels;
  for (const SummaryRow& r : rows) {
    const bool shared = uses[r.scenario] > 1 && !r.path.empty() && r.path != r.scenario;
    labels.push_back(shared ? fmt::format("{} ({})", r.scenario, r.path) : r.scenario);
  }
  REHEARSE_ASSERT_EQ(labels.size(), rows.size());  // format_table indexes both alike
  return labels;
}

using TableLine = std::array<std::string, 14>;

TableLine table_cells(const SummaryRow& r, const std::string& label) {
  if (!r.error.empty())
    return {label, r.result(), "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"};
  return {label,
          r.result(),
          std::to_string(r.jobs),
          std::to_string(r.delivered),
          std::to_string(r.skipped),
          std::to_string(r.failed),
          std::to_string(r.in_flight),
          std::to_string(r.retries),
          std::to_string(r.exhausted),
          std::to_string(r.notifications),
          std::to_string(r.events),
          short_duration(r.span_ms),
          fmt::format("{:.0f}ms", r.wall_ms),
          r.trace_hash};
}

std::string aligned(const std::vector<TableLine>& cells) {
  REHEARSE_ASSERT(!cells.empty());  // format_table always passes its header line
  std::array<std::size_t, 14> width{};
  for (const auto& row : cells) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      // Text columns left-aligned, counts right-aligned.
      const bool left = i <= 1 || i == row.size() - 1;
      if (i > 0) line += "  ";
      line +=
          left ? fmt::format("{:<{}}", row[i], width[i]) : fmt::format("{:>{}}", row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string format_table(const std::vector<SummaryRow>& rows) {
  const TableLine header{"scenario", "result",    "jobs",    "delivered", "skipped",
                         "failed",   "in-flight", "retries", "exhausted", "notes",
                         "events",   "span",      "wall",    "trace"};
  const std::vector<std::string> labels = row_labels(rows);
  std::vector<TableLine> cells{header};
  for (std::size_t i = 0; i < rows.size(); ++i) cells.push_back(table_cells(rows[i], labels[i]));
  std::string out = aligned(cells);
  std::string footnotes;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].result() != "ok*") continue;
    for (const std::string& note : rows[i].notes) {
      footnotes += fmt::format("* {}: {}\n", labels[i], note);
    }
  }
  if (!footnotes.empty()) out += "\n" + footnotes;
  return out;
}

namespace {

// " (first of N)" when the invariant fired more than once in the run.
std::string times_in_all(const ScenarioRunResult& run, const std::string& invariant) {
  const auto it = run.violation_counts.find(invariant);
  if (it == run.violation_counts.end() || it->second < 2) return {};
  return fmt::format(" (first of {})", it->second);
}

// A reported violation with how often its invariant fired in all.
json counted(const ScenarioRunResult& run, const Violation& v) {
  json j = to_json(v);
  const auto it = run.violation_counts.find(v.invariant);
  j["count"] = it == run.violation_counts.end() ? std::size_t{1} : it->second;
  // A reported violation fired at least once.
  REHEARSE_ASSERT_GE(j["count"].get<std::size_t>(), 1u);
  return j;
}

}  // namespace

std::string format_findings(const ScenarioRunResult& run, const Verdict& verdict) {
  if (verdict.held()) return {};
  std::string out;
  const std::string where = run.path.empty() ? run.scenario : run.path;
  for (const Violation& v : verdict.violations) {
    out += fmt::format("{}: invariant {} violated at event {} ({}), seed {}: {}{}\n", where,
                       v.invariant, v.event_index, format_instant(v.t), run.seed, v.message,
                       times_in_all(run, v.invariant));
  }
  for (const std::string& name : verdict.expected_missing) {
    out += fmt::format(
        "{}: expected invariant {} to be violated (expect.violations), but it "
        "held, seed {}\n",
        where, name, run.seed);
  }
  for (const ExpectFailure& f : verdict.expect_failures) {
    out += fmt::format("{}: {}\n", where, f.describe());
  }
  for (const std::string& e : verdict.errors) out += fmt::format("{}: error: {}\n", where, e);
  if (verdict.strict) {
    for (const std::string& note : verdict_notes(verdict)) {
      out += fmt::format("{}: --strict: {}\n", where, note);
    }
  }
  out += fmt::format("{}: replay: {}\n", where, replay_command(where, run.seed, verdict.strict));
  return out;
}

json to_json(const SummaryRow& row) {
  return json{{"scenario", row.scenario},
              {"held", row.held},
              {"jobs", row.jobs},
              {"slots",
               {{"delivered", row.delivered},
                {"skipped", row.skipped},
                {"failed", row.failed},
                {"in_flight", row.in_flight}}},
              {"retries", row.retries},
              {"exhausted", row.exhausted},
              {"notifications", row.notifications},
              {"events", row.events},
              {"span_ms", row.span_ms},
              {"wall_ms", row.wall_ms},
              {"trace_hash", row.trace_hash}};
}

json to_json(const Violation& violation) {
  return json{{"invariant", violation.invariant},
              {"event_index", violation.event_index},
              {"t", format_instant(violation.t)},
              {"message", violation.message}};
}

std::optional<std::vector<ServiceLoad>> run_service_load(const Scenario& scenario,
                                                         const ScenarioRunResult& run) {
  if (!wants_service_load(scenario) || run.out_of_memory || run.trace.keep() != TraceKeep::all) {
    return std::nullopt;
  }
  return service_load(scenario, run.trace.events(), run.start_ms, run.end_ms);
}

json report_json(const Scenario& scenario, const ScenarioRunResult& run, const Verdict& verdict,
                 const SummaryRow& row) {
  // The row is summarize() of this run under this verdict.
  REHEARSE_ASSERT_EQ(row.trace_hash, run.trace_hash);
  REHEARSE_ASSERT_EQ(row.held, verdict.held());
  json doc = to_json(row);
  doc["path"] = run.path;
  doc["seed"] = run.seed;
  doc["start"] = format_instant(run.start_ms);
  doc["until"] = format_instant(run.until_ms);
  doc["end"] = format_instant(run.end_ms);
  doc["outcome"] = to_string(run.outcome);
  doc["trace_events"] = run.trace.size();
  doc["violations"] = json::array();
  for (const Violation& v : verdict.violations) doc["violations"].push_back(counted(run, v));
  doc["violation_counts"] = run.violation_counts;
  doc["violations_recorded"] = json::array();
  for (const Violation& v : run.all_violations) doc["violations_recorded"].push_back(to_json(v));
  doc["violations_dropped"] = run.violations_dropped;
  doc["expected_violations"] = scenario.expect.violations;
  doc["expected_seen"] = json::array();
  for (const Violation& v : verdict.expected_seen) doc["expected_seen"].push_back(counted(run, v));
  doc["expected_missing"] = verdict.expected_missing;
  doc["expect_failures"] = json::array();
  for (const ExpectFailure& f : verdict.expect_failures) {
    doc["expect_failures"].push_back({{"pointer", f.pointer},
                                      {"expected", f.expected_value},
                                      {"got", f.got_value},
                                      {"message", f.describe()}});
  }
  doc["result"] = row.result();
  doc["flags"] = json::array();
  for (const ScenarioFlag& f : verdict.flags) doc["flags"].push_back(to_json(f));
  doc["unchecked"] = verdict.unchecked;
  doc["errors"] = verdict.errors;
  doc["store"] = {{"corrupt", run.store_corrupt}, {"error", run.store_error}};
  json finals = json::object();
  for (const FinalJobState& f : run.final_states) {
    if (f.state) {
      finals[f.job_id] = {{"retry_status", to_string(f.state->retry_status)},
                          {"retry_count", f.state->retry_count}};
    } else {
      finals[f.job_id] = nullptr;
    }
  }
  doc["final_states"] = std::move(finals);
  doc["tallies"] = run.tallies;
  if (scenario.services.messenger) {
    doc["tallies"]["services"][to_string(ServiceKind::messenger)]["calls"] = messenger_calls(run);
  }
  if (auto load = run_service_load(scenario, run)) doc["load"] = to_json(*load);
  doc["replay"] =
      replay_command(run.path.empty() ? run.scenario : run.path, run.seed, verdict.strict);
  return doc;
}

}  // namespace rehearse::sim
