#include "sim/import/imported_scenario.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

namespace {

using ojson = nlohmann::ordered_json;

const char* fault_kind_of(const CallObservation& failure) {
  switch (failure.outcome) {
    case CallOutcome::http_error: return "http_errors";
    case CallOutcome::timeout: return "timeouts";
    case CallOutcome::network_error: return "network_errors";
    case CallOutcome::success: break;
  }
  REHEARSE_UNREACHABLE();  // a window is made of failed calls
}

Result<TimeMs> instant_at(const ojson& base, const char* key, const std::string& path) {
  const auto it = base.find(key);
  if (it == base.end() || !it->is_string()) {
    return make_error(ErrorCode::schema_error, "expected an ISO-8601 UTC instant",
                      fmt::format("{}:/{}", path, key));
  }
  auto t = parse_instant(it->get<std::string>());
  if (!t)
    return make_error(ErrorCode::schema_error, t.error().message, fmt::format("{}:/{}", path, key));
  return *t;
}

std::set<std::string> declared_services(const ojson& base) {
  std::set<std::string> out;
  const auto it = base.find("services");
  if (it == base.end() || !it->is_object()) return out;
  for (const auto& [name, decl] : it->items()) out.insert(name);
  return out;
}

// Windows the scenario cannot hold: undeclared services, outside the span.
bool placeable(const InferredWindow& w, const std::set<std::string>& services, TimeMs start_ms,
               TimeMs until_ms, std::vector<Ambiguity>& ambiguities) {
  if (services.count(w.service) == 0) {
    ambiguities.push_back(Ambiguity{
        w.service, w.from_ms,
        fmt::format("calls to '{}' failed, but the scenario declares no such service", w.service),
        "the window is not imported (declare the service, or name it with --service ADDRESS=NAME)",
        w.evidence.first_where});
    return false;
  }
  const TimeMs end = w.until_ms.value_or(until_ms);
  if (end <= start_ms || w.from_ms >= until_ms) {
    ambiguities.push_back(Ambiguity{w.service, w.from_ms,
                                    "the window lies outside the scenario's span",
                                    "the window is not imported", w.evidence.first_where});
    return false;
  }
  if (w.from_ms < start_ms || (w.until_ms && *w.until_ms > until_ms)) {
    ambiguities.push_back(Ambiguity{w.service, w.from_ms,
                                    "the window reaches past the scenario's span",
                                    "clipped to the span", w.evidence.first_where});
  }
  return true;
}

std::vector<std::string> merged_notes(const ImportInput& input, const InferredWindows& inferred,
                                      std::size_t faults,
                                      const std::vector<Ambiguity>& ambiguities) {
  std::vector<std::string> notes;
  if (const auto it = input.base.find("notes"); it != input.base.end() && it->is_array()) {
    for (const auto& n : *it) {
      if (n.is_string()) notes.push_back(n.get<std::string>());
    }
  }
  std::string sources;
  for (const std::string& s : input.sources) sources += (sources.empty() ? "" : ", ") + s;
  notes.push_back(fmt::format(
      "observed: {} calls in {}; inferred: {} fault window{} added to {} (every added fault is "
      "inferred; its note gives the calls that bound its edges)",
      inferred.calls, sources, faults, faults == 1 ? "" : "s", input.base_path));
  for (const Ambiguity& a : ambiguities) {
    notes.push_back(fmt::format("ambiguous ({} at {}): {}; guessed: {} [{}]", a.service,
                                format_instant(a.at_ms), a.what, a.guess, a.where));
  }
  return notes;
}

}  // namespace

std::string evidence_note(const InferredWindow& w) {
  const WindowEvidence& e = w.evidence;
  const std::string began =
      e.start_after_ms ? fmt::format("after {} and ", format_instant(*e.start_after_ms)) : "";
  std::string text = fmt::format(
      "inferred from {} failed call{} ({}) from {} [{}] to {} [{}]: the outage began {}at or "
      "before {}",
      e.failures, e.failures == 1 ? "" : "s", signature_of(w.failure),
      format_instant(e.first_failure_ms), e.first_where, format_instant(e.last_failure_ms),
      e.last_where, began, format_instant(e.first_failure_ms));
  if (e.end_by_ms) {
    text += fmt::format(", and ended after {} and at or before {}, when a call answered {} [{}]",
                        format_instant(e.last_failure_ms), format_instant(*e.end_by_ms), e.end_by,
                        e.end_by_where);
  } else {
    text += "; no later call answered otherwise, so it lasts to the end";
  }
  return text;
}

nlohmann::ordered_json fault_of(const InferredWindow& w, TimeMs start_ms, TimeMs until_ms) {
  const TimeMs from = std::max(w.from_ms, start_ms);
  ojson f;
  f["at"] = format_instant(from);
  if (w.until_ms && *w.until_ms < until_ms) f["for"] = format_duration(*w.until_ms - from);
  f["kind"] = fault_kind_of(w.failure);
  f["service"] = w.service;
  if (w.failure.outcome == CallOutcome::http_error) f["status"] = w.failure.status;
  if (w.failure.outcome == CallOutcome::network_error) f["error"] = w.failure.error;
  f["note"] = evidence_note(w);
  return f;
}

Result<ImportResult> import_windows(const ImportInput& input, const InferredWindows& inferred) {
  auto start = instant_at(input.base, "start", input.base_path);
  if (!start) return std::move(start).error();
  auto until = instant_at(input.base, "until", input.base_path);
  if (!until) return std::move(until).error();
  ImportResult out;
  out.ambiguities = inferred.ambiguities;
  const std::set<std::string> services = declared_services(input.base);
  for (const InferredWindow& w : inferred.windows) {
    if (!placeable(w, services, *start, *until, out.ambiguities)) continue;
    out.faults.push_back(fault_of(w, *start, *until));
  }
  out.scenario = input.base;
  if (!input.name.empty()) out.scenario["scenario"] = input.name;
  ojson& faults = out.scenario["faults"];
  if (!faults.is_array()) faults = ojson::array();
  for (const ojson& f : out.faults) faults.push_back(f);
  out.scenario["notes"] = merged_notes(input, inferred, out.faults.size(), out.ambiguities);
  const ScenarioCheck check = check_scenario_json(out.scenario.dump(), input.base_path);
  if (!check.valid()) {
    REHEARSE_ASSERT(!check.errors.empty());  // invalid means at least one error
    Error e = check.errors.front();
    e.message = "the imported scenario does not load: " + e.message;
    return e;
  }
  return out;
}

}  // namespace rehearse::sim
