// The scenario shrinker (sim/check/shrink.hpp, docs/shrinking.md).
#include "sim/check/shrink.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/fault_kinds.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace {

// ------------------------------------------------------------ reading times

std::optional<TimeMs> instant_of(const json& v) {
  if (!v.is_string()) return std::nullopt;
  auto t = parse_instant(v.get<std::string>());
  if (!t) return std::nullopt;
  return *t;
}

// A DURATION: a string of units or an integer of milliseconds.
std::optional<DurationMs> duration_of(const json& v) {
  if (v.is_number_integer()) return v.get<DurationMs>();
  if (!v.is_string()) return std::nullopt;
  auto d = parse_duration(v.get<std::string>());
  if (!d) return std::nullopt;
  return *d;
}

// A duration as the shrinker writes it: "1h30m", or 0.
json duration_json(DurationMs d) {
  REHEARSE_ASSERT_GE(d, 0);  // the searches try values >= 0 only
  json out = d == 0 ? json(0) : json(format_duration(d));
  // What is written reads back as the value tried.
  REHEARSE_ASSERT_EQ(duration_of(out).value_or(-1), d);
  return out;
}

// A FAULT TIME: an instant or "+DURATION" after start.
std::optional<TimeMs> fault_time_of(const json& v, TimeMs start) {
  if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>().front() == '+') {
    auto d = parse_duration(v.get<std::string>().substr(1));
    if (!d) return std::nullopt;
    return start + *d;
  }
  return instant_of(v);
}

TimeMs start_of(const json& doc) { return instant_of(doc.value("start", json())).value_or(0); }
TimeMs until_of(const json& doc) { return instant_of(doc.value("until", json())).value_or(0); }
TimeMs at_of(const json& fault) { return instant_of(fault.value("at", json())).value_or(0); }

std::size_t size_at(const json& doc, const json::json_pointer& pointer) {
  return doc.contains(pointer) && doc.at(pointer).is_array() ? doc.at(pointer).size() : 0;
}

// The table entry of a fault's kind (nullptr for a kind the table lacks).
const FaultKindSpec* kind_of(const json& fault) {
  const json kind = fault.value("kind", json());
  return kind.is_string() ? find_fault_kind(kind.get<std::string>()) : nullptr;
}

bool is_lasting(const json& fault) {
  const FaultKindSpec* spec = kind_of(fault);
  return spec != nullptr && spec->lasting;
}

// Where a fault's effect ends: a lasting fault's window end (`until` without
// `for`); an instant one's `at`, plus its `down_for` when it has one.
TimeMs fault_end(const json& fault, TimeMs until) {
  const TimeMs at = at_of(fault);
  if (is_lasting(fault)) {
    if (!fault.contains("for")) return until;
    return at + duration_of(fault["for"]).value_or(0);
  }
  if (fault.contains("down_for")) return at + duration_of(fault["down_for"]).value_or(0);
  return at;
}

// The grid of a search over `range` ms: whole minutes, else seconds, else ms.
DurationMs time_step(DurationMs range) {
  if (range >= 2 * kMinuteMs) return kMinuteMs;
  if (range >= 2 * kSecondMs) return kSecondMs;
  return 1;
}

// ------------------------------------------------------------ the search

// The current document, the probe and its budget. Every distinct candidate
// text is run once; a candidate is kept when the invariant still fires.
class Search {
 public:
  Search(json doc, std::string invariant, const ViolationProbe& probe, std::size_t max_probes)
      : doc_(std::move(doc)),
        invariant_(std::move(invariant)),
        probe_(probe),
        max_probes_(max_probes) {
    REHEARSE_ASSERT_GE(max_probes_, 1u);  // the original document needs one run
  }

  const json& doc() const noexcept { return doc_; }
  std::size_t probes() const noexcept { return probes_; }
  std::size_t rejected() const noexcept { return rejected_; }
  bool cut() const noexcept { return cut_; }

  // The candidate's outcome: nullopt when the probe refused it or the budget
  // is spent (cut() then says so).
  std::optional<ProbeOutcome> run(const json& candidate, Error* refusal = nullptr) {
    const std::string key = candidate.dump();
    if (const auto it = seen_.find(key); it != seen_.end()) return it->second;
    if (probes_ >= max_probes_) {
      REHEARSE_ASSERT_EQ(probes_, max_probes_);  // the budget is never overdrawn
      cut_ = true;
      return std::nullopt;
    }
    ++probes_;
    auto outcome = probe_(candidate);
    std::optional<ProbeOutcome> kept;
    if (outcome) {
      kept = std::move(outcome).value();
    } else {
      ++rejected_;
      if (refusal != nullptr) *refusal = outcome.error();
    }
    const bool fresh = seen_.emplace(key, kept).second;
    REHEARSE_ASSERT(fresh);
    REHEARSE_ASSERT_LE(rejected_, probes_);
    // Every run is remembered, so the budget counts distinct documents.
    REHEARSE_ASSERT_EQ(seen_.size(), probes_);
    return kept;
  }

  bool violates(const std::optional<ProbeOutcome>& outcome) const {
    return outcome && std::find(outcome->fired.begin(), outcome->fired.end(), invariant_) !=
                          outcome->fired.end();
  }

  // Keeps `candidate` as the current document when it still violates.
  bool try_doc(json candidate) {
    // A candidate equal to the current document would be "kept" from the
    // cache on every round, and the search would never end.
    REHEARSE_ASSERT(candidate != doc_);
    if (!violates(run(candidate))) return false;
    doc_ = std::move(candidate);
    // Never lose the violation: the kept document is one that was run and fired it.
    const auto it = seen_.find(doc_.dump());
    REHEARSE_ASSERT(it != seen_.end() && violates(it->second));
    return true;
  }

 private:
  json doc_;
  std::string invariant_;
  const ViolationProbe& probe_;
  std::size_t max_probes_;
  std::size_t probes_ = 0;
  std::size_t rejected_ = 0;
  bool cut_ = false;
  std::map<std::string, std::optional<ProbeOutcome>> seen_;
};

// The lowest value below `hi` (the current value, known to violate) that
// `accepts`: `lo` first, then bisection over the multiples of `step` between
// the highest value known not to work and the lowest known to work (so times
// land on whole minutes), assuming that what holds for a value holds for the
// larger ones. Values are >= 0. nullopt: nothing below hi was accepted.
std::optional<std::int64_t> search_lowest(std::int64_t lo, std::int64_t hi, std::int64_t step,
                                          const std::function<bool(std::int64_t)>& accepts) {
  REHEARSE_ASSERT_GE(step, 1);
  if (lo >= hi) return std::nullopt;
  if (accepts(lo)) return lo;
  std::optional<std::int64_t> best;
  std::int64_t first = lo / step + 1;  // multiples k * step with lo < k * step < hi
  std::int64_t last = (hi - 1) / step;
  while (first <= last) {
    const std::int64_t mid = first + (last - first) / 2;
    if (accepts(mid * step)) {
      best = mid * step;
      last = mid - 1;
    } else {
      first = mid + 1;
    }
  }
  // Progress: what was kept lies strictly below the value it replaced.
  if (best) {
    REHEARSE_ASSERT_GT(*best, lo);
    REHEARSE_ASSERT_LT(*best, hi);
    REHEARSE_ASSERT_EQ(*best % step, 0);
  }
  return best;
}

// Sets doc[pointer] to the value `make` gives for v, and tries it.
std::function<bool(std::int64_t)> setter(Search& s, json::json_pointer pointer,
                                         std::function<json(std::int64_t)> make) {
  return [&s, pointer = std::move(pointer), make = std::move(make)](std::int64_t v) {
    json candidate = s.doc();
    candidate[pointer] = make(v);
    return s.try_doc(std::move(candidate));
  };
}

// ------------------------------------------------------------ dropping

// Delta debugging over the array at `pointer`: remove halves, then smaller
// chunks, down to single elements, keeping at least `keep` elements.
bool drop_elements(Search& s, const json::json_pointer& pointer, std::size_t keep) {
  const std::size_t size_before = size_at(s.doc(), pointer);
  bool changed = false;
  std::size_t chunks = 2;
  while (!s.cut()) {
    const std::size_t size = size_at(s.doc(), pointer);
    if (size <= keep) break;
    chunks = std::min(chunks, size);
    bool reduced = false;
    for (std::size_t i = 0; i < chunks && !reduced; ++i) {
      const std::size_t begin = i * size / chunks;
      const std::size_t end = (i + 1) * size / chunks;
      // chunks <= size, so no chunk is empty: a candidate always drops something.
      REHEARSE_ASSERT_LT(begin, end);
      REHEARSE_ASSERT_LE(end, size);
      if (size - (end - begin) < keep) continue;
      json candidate = s.doc();
      json& array = candidate[pointer];
      array.erase(array.begin() + static_cast<std::ptrdiff_t>(begin),
                  array.begin() + static_cast<std::ptrdiff_t>(end));
      reduced = s.try_doc(std::move(candidate));
    }
    // A kept step is strictly shorter, and never below what must stay.
    if (reduced) {
      REHEARSE_ASSERT_LT(size_at(s.doc(), pointer), size);
      REHEARSE_ASSERT_GE(size_at(s.doc(), pointer), keep);
    }
    if (reduced) {
      changed = true;
      chunks = std::max<std::size_t>(chunks - 1, 2);
    } else if (chunks >= size) {
      break;
    } else {
      chunks = std::min(chunks * 2, size);
    }
  }
  // Dropping never adds: a change made the array strictly shorter.
  REHEARSE_ASSERT_LE(size_at(s.doc(), pointer), size_before);
  if (changed) REHEARSE_ASSERT_LT(size_at(s.doc(), pointer), size_before);
  return changed;
}

bool drop_faults(Search& s) { return drop_elements(s, json::json_pointer("/faults"), 0); }

bool drop_jobs(Search& s) {
  return drop_elements(s, json::json_pointer("/jobs"), s.doc().contains("fleet") ? 0 : 1);
}

// The lists inside a job that a run needs at least one of: a group job's
// tasks, a reconcile job's items, a call job's calls, group and publish
// targets (docs/scenario-format.md, `jobs`).
constexpr std::array<const char*, 4> kJobLists{"tasks", "items", "calls", "targets"};

bool drop_job_parts(Search& s) {
  const std::size_t jobs_before = size_at(s.doc(), json::json_pointer("/jobs"));
  bool changed = false;
  for (std::size_t j = 0; j < size_at(s.doc(), json::json_pointer("/jobs")); ++j) {
    for (const char* list : kJobLists) {
      changed |= drop_elements(s, json::json_pointer(fmt::format("/jobs/{}/{}", j, list)), 1);
    }
  }
  // Parts go, the jobs themselves stay.
  REHEARSE_ASSERT_EQ(size_at(s.doc(), json::json_pointer("/jobs")), jobs_before);
  return changed;
}

// Declarations that jobs and faults may no longer need: whole services, then
// messenger targets and orchestrator issues and agents. The loader (through
// the probe) refuses a candidate that drops something still referenced.
bool drop_declarations(Search& s) {
  bool changed = false;
  std::vector<std::string> services;
  if (s.doc().contains("services") && s.doc()["services"].is_object()) {
    for (const auto& [name, value] : s.doc()["services"].items()) services.push_back(name);
  }
  const std::size_t services_at_start = services.size();
  for (const std::string& name : services) {
    if (s.cut()) break;
    json candidate = s.doc();
    const std::size_t services_before = candidate["services"].size();
    candidate["services"].erase(name);
    REHEARSE_ASSERT_EQ(candidate["services"].size() + 1, services_before);
    changed |= s.try_doc(std::move(candidate));
  }
  // Services are only ever dropped.
  REHEARSE_ASSERT(!s.doc().contains("services") || !s.doc()["services"].is_object() ||
                  s.doc()["services"].size() <= services_at_start);
  changed |= drop_elements(s, json::json_pointer("/services/messenger/targets"), 1);
  changed |= drop_elements(s, json::json_pointer("/services/orchestrator/issues"), 0);
  changed |= drop_elements(s, json::json_pointer("/services/orchestrator/agents"), 0);
  return changed;
}

// ------------------------------------------------------------ shortening

bool shorten_fault(Search& s, std::size_t i) {
  REHEARSE_ASSERT_LT(i, size_at(s.doc(), json::json_pointer("/faults")));
  const json& fault = s.doc()["faults"][i];
  if (!is_lasting(fault)) return false;
  const DurationMs current = fault_end(fault, until_of(s.doc())) - at_of(fault);
  const DurationMs step = time_step(current);
  // A coarse grid still has a point below the current length.
  REHEARSE_ASSERT(step == 1 || 2 * step <= current);
  const auto best =
      search_lowest(step, current, step,
                    setter(s, json::json_pointer(fmt::format("/faults/{}/for", i)), duration_json));
  // The fault now lasts what was kept, shorter than before.
  if (best) {
    REHEARSE_ASSERT_EQ(duration_of(s.doc()["faults"][i]["for"]).value_or(-1), *best);
    REHEARSE_ASSERT_LT(*best, current);
  }
  return best.has_value();
}

bool shorten_faults(Search& s) {
  const std::size_t faults_before = size_at(s.doc(), json::json_pointer("/faults"));
  bool changed = false;
  for (std::size_t i = 0; i < size_at(s.doc(), json::json_pointer("/faults")); ++i) {
    changed |= shorten_fault(s, i);
  }
  REHEARSE_ASSERT_EQ(size_at(s.doc(), json::json_pointer("/faults")), faults_before);
  return changed;
}

// One numeric key of a fault lowered toward the minimum of its type in the
// fault-kind table: a rate to 0.01 (a rate of 0 does nothing: dropping the
// fault is that), an integer to the key's `min`, a down time to 0.
bool lower_key(Search& s, std::size_t i, const FaultKeySpec& key) {
  REHEARSE_ASSERT_LT(i, size_at(s.doc(), json::json_pointer("/faults")));
  const json& fault = s.doc()["faults"][i];
  const json current = fault.contains(key.name) ? fault[key.name] : key.default_value;
  const json::json_pointer pointer(fmt::format("/faults/{}/{}", i, key.name));
  std::optional<std::int64_t> best;
  if (key.type == FaultKeyType::rate && current.is_number()) {
    const auto percent = static_cast<std::int64_t>(std::ceil(current.get<double>() * 100 - 1e-9));
    best = search_lowest(1, percent, 1, setter(s, pointer, [](std::int64_t v) {
                           return json(static_cast<double>(v) / 100.0);
                         }));
  } else if (key.type == FaultKeyType::integer && current.is_number_integer()) {
    best = search_lowest(key.min, current.get<std::int64_t>(), 1,
                         setter(s, pointer, [](std::int64_t v) { return json(v); }));
  } else if (key.type == FaultKeyType::down_time) {
    const DurationMs down = duration_of(current).value_or(0);
    best = search_lowest(0, down, time_step(down), setter(s, pointer, duration_json));
  }
  // The kept value is the one now in the document.
  if (best && key.type != FaultKeyType::rate) {
    REHEARSE_ASSERT_EQ(duration_of(s.doc()[pointer]).value_or(-1), *best);
  }
  return best.has_value();
}

bool lower_numbers(Search& s) {
  const std::size_t faults_before = size_at(s.doc(), json::json_pointer("/faults"));
  bool changed = false;
  for (std::size_t i = 0; i < size_at(s.doc(), json::json_pointer("/faults")); ++i) {
    const FaultKindSpec* spec = kind_of(s.doc()["faults"][i]);
    if (spec == nullptr) continue;
    for (const FaultKeySpec& key : spec->keys) changed |= lower_key(s, i, key);
  }
  // Lowering a value keeps every fault.
  REHEARSE_ASSERT_EQ(size_at(s.doc(), json::json_pointer("/faults")), faults_before);
  return changed;
}

// The faults' indices by time (then file order).
std::vector<std::size_t> faults_by_time(const json& doc) {
  std::vector<std::size_t> order(size_at(doc, json::json_pointer("/faults")));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&doc](std::size_t a, std::size_t b) {
    return at_of(doc["faults"][a]) < at_of(doc["faults"][b]);
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    REHEARSE_ASSERT_LE(at_of(doc["faults"][order[k - 1]]), at_of(doc["faults"][order[k]]));
  }
  return order;
}

// Each fault after the first moved earlier, toward the end of the fault
// before it in time: the gaps between faults shrink.
bool pull_together(Search& s) {
  bool changed = false;
  const std::vector<std::size_t> order = faults_by_time(s.doc());
  for (std::size_t k = 1; k < order.size() && !s.cut(); ++k) {
    const TimeMs at = at_of(s.doc()["faults"][order[k]]);
    const TimeMs anchor =
        std::min(at, fault_end(s.doc()["faults"][order[k - 1]], until_of(s.doc())));
    const auto best =
        search_lowest(anchor, at, time_step(at - anchor),
                      setter(s, json::json_pointer(fmt::format("/faults/{}/at", order[k])),
                             [](std::int64_t v) { return json(format_instant(v)); }));
    // Moved earlier, never before the anchor.
    if (best) {
      REHEARSE_ASSERT_EQ(at_of(s.doc()["faults"][order[k]]), *best);
      REHEARSE_ASSERT_LT(*best, at);
      REHEARSE_ASSERT_GE(*best, anchor);
    }
    changed |= best.has_value();
  }
  return changed;
}

// The faults in time order in the file, as a reader expects them (only
// faults at the same instant depend on file order: a candidate like any
// other).
bool order_faults(Search& s) {
  const std::vector<std::size_t> order = faults_by_time(s.doc());
  json candidate = s.doc();
  for (std::size_t k = 0; k < order.size(); ++k)
    candidate["faults"][k] = s.doc()["faults"][order[k]];
  if (candidate == s.doc() || !s.try_doc(std::move(candidate))) return false;
  // Kept: the file is now in time order (sorting again changes nothing).
  const std::vector<std::size_t> again = faults_by_time(s.doc());
  for (std::size_t k = 0; k < again.size(); ++k) REHEARSE_ASSERT_EQ(again[k], k);
  return true;
}

// `until` lowered toward the end of the last fault (every fault must stay
// inside the span; a lasting fault without `for` needs its `at`).
bool shorten_span(Search& s) {
  const json& doc = s.doc();
  const TimeMs until = until_of(doc);
  TimeMs floor = start_of(doc) + 1;
  for (std::size_t i = 0; i < size_at(doc, json::json_pointer("/faults")); ++i) {
    const json& fault = doc["faults"][i];
    const bool open_ended = is_lasting(fault) && !fault.contains("for");
    floor = std::max(floor, open_ended ? at_of(fault) : fault_end(fault, until));
  }
  const auto best = search_lowest(floor, until, time_step(until - floor),
                                  setter(s, json::json_pointer("/until"),
                                         [](std::int64_t v) { return json(format_instant(v)); }));
  // The span now ends at what was kept, earlier than before.
  if (best) {
    REHEARSE_ASSERT_EQ(until_of(s.doc()), *best);
    REHEARSE_ASSERT_LT(*best, until);
  }
  return best.has_value();
}

// ------------------------------------------------------------ the whole

using Pass = bool (*)(Search&);
constexpr std::array<Pass, 9> kPasses{drop_faults,       drop_jobs,      drop_job_parts,
                                      drop_declarations, shorten_faults, lower_numbers,
                                      pull_together,     order_faults,   shorten_span};

// The document the search starts from: `expect` names the invariant only
// (the original's expectations were about the original), every fault's `at`
// an instant, the seed the one asked for.
Result<json> normalized(const json& failing_doc, const std::string& invariant,
                        const ShrinkOptions& options) {
  if (!failing_doc.is_object() || !instant_of(failing_doc.value("start", json())) ||
      !instant_of(failing_doc.value("until", json()))) {
    return make_error(ErrorCode::invalid_argument,
                      "shrink: expected a scenario document with instants `start` and `until`");
  }
  json doc = failing_doc;
  doc["expect"] = {{"violations", {invariant}}};
  if (options.seed) doc["seed"] = *options.seed;
  const TimeMs start = start_of(doc);
  for (std::size_t i = 0; i < size_at(doc, json::json_pointer("/faults")); ++i) {
    json& fault = doc["faults"][i];
    const auto at = fault_time_of(fault.value("at", json()), start);
    if (!at) {
      return make_error(ErrorCode::invalid_argument, "shrink: expected a fault time",
                        fmt::format("/faults/{}/at", i));
    }
    fault["at"] = format_instant(*at);
  }
  // The search reads every fault's `at` as an instant (at_of).
  for (std::size_t i = 0; i < size_at(doc, json::json_pointer("/faults")); ++i) {
    REHEARSE_ASSERT(instant_of(doc["faults"][i]["at"]).has_value());
  }
  return doc;
}

ShrinkCounts counts_of(const json& doc, std::uint64_t events) {
  ShrinkCounts c;
  c.faults = size_at(doc, json::json_pointer("/faults"));
  c.jobs = size_at(doc, json::json_pointer("/jobs"));
  if (doc.contains("fleet") && doc["fleet"].is_object()) {
    const json n = doc["fleet"].value("jobs", json(0));
    if (n.is_number_integer()) c.jobs += n.get<std::size_t>();
  }
  c.events = events;
  c.span_ms = until_of(doc) - start_of(doc);
  return c;
}

std::string counts_text(const ShrinkCounts& c) {
  return fmt::format("{} fault{}, {} job{}, {} events, span {}", c.faults, c.faults == 1 ? "" : "s",
                     c.jobs, c.jobs == 1 ? "" : "s", c.events, format_duration(c.span_ms));
}

// The shrunk invariant first, then the others in firing order.
std::vector<std::string> invariant_first(const std::vector<std::string>& fired,
                                         const std::string& invariant) {
  std::vector<std::string> out{invariant};
  for (const std::string& name : fired) {
    if (name != invariant) out.push_back(name);
  }
  REHEARSE_ASSERT_LE(out.size(), fired.size() + 1);
  return out;
}

std::string names_text(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// Name, description and expect of the result; then one more run of exactly
// that document, whose violations become its expect.violations.
Status label_result(ShrinkResult& result, const json& doc, const ViolationProbe& probe,
                    const ShrinkOptions& options) {
  REHEARSE_ASSERT_GE(result.probes, 1u);  // the search ran before it is labelled
  json out = doc;
  const std::string origin =
      options.origin.empty() ? doc.value("scenario", std::string("a scenario")) : options.origin;
  if (!options.name.empty()) out["scenario"] = options.name;
  auto check = probe(out);
  if (!check ||
      std::find(check->fired.begin(), check->fired.end(), result.invariant) == check->fired.end()) {
    return make_error(ErrorCode::internal,
                      "shrink: the minimized document no longer violates " + result.invariant);
  }
  result.fired = invariant_first(check->fired, result.invariant);
  result.after = counts_of(out, check->events);
  // No expectations: a saved failure must fail its replay (exit 1) until the
  // bug is fixed, as a saved property-test case does; expect.violations is
  // for an incident a user chooses to keep as accepted.
  out.erase("expect");
  out["description"] = fmt::format(
      "Shrunk from {} keeping invariant {} violated: before {}; after {} ({} runs{}). It fires "
      "{}: `rehearse run` on it fails until the bug is fixed; then state what must hold in "
      "`expect` (docs/shrinking.md).",
      origin, result.invariant, counts_text(result.before), counts_text(result.after),
      result.probes, result.budget_exhausted ? ", cut by the budget" : "",
      names_text(result.fired));
  result.document = std::move(out);
  return {};
}

}  // namespace

Result<ShrinkResult> shrink_scenario(const json& failing_doc, const std::string& invariant,
                                     const ViolationProbe& probe, const ShrinkOptions& options) {
  auto start = normalized(failing_doc, invariant, options);
  if (!start) return start.error();
  Search s(std::move(start).value(), invariant, probe,
           std::max<std::size_t>(options.max_probes, 1));
  Error refusal = make_error(ErrorCode::internal, "no probe budget");
  const auto first = s.run(s.doc(), &refusal);
  if (!first) return refusal;
  if (!s.violates(first)) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("shrink: the document does not violate {} (fired: {})", invariant,
                                  names_text(first->fired)));
  }
  ShrinkResult result;
  result.invariant = invariant;
  result.budget = std::max<std::size_t>(options.max_probes, 1);
  result.before = counts_of(s.doc(), first->events);
  bool changed = true;
  while (changed && !s.cut()) {
    ++result.rounds;
    changed = false;
    for (Pass pass : kPasses) changed |= pass(s);
  }
  result.probes = s.probes();
  result.rejected = s.rejected();
  result.budget_exhausted = s.cut();
  // The original was run and kept, so at least one probe, and it was not refused.
  REHEARSE_ASSERT_GE(result.probes, 1u);
  REHEARSE_ASSERT_LE(result.probes, result.budget);
  REHEARSE_ASSERT_LT(result.rejected, result.probes);
  if (Status st = label_result(result, s.doc(), probe, options); !st.ok()) return st.error();
  // The passes only drop faults and jobs and lower `until`: never larger.
  REHEARSE_ASSERT_LE(result.after.faults, result.before.faults);
  REHEARSE_ASSERT_LE(result.after.jobs, result.before.jobs);
  REHEARSE_ASSERT_LE(result.after.span_ms, result.before.span_ms);
  return result;
}

ViolationProbe world_probe(RunOptions options) {
  options.seed.reset();
  options.keep_trace = false;
  options.stop_on_violation = false;
  options.trace_sink = nullptr;
  options.progress = nullptr;
  return [options](const json& document) -> Result<ProbeOutcome> {
    auto scenario = load_scenario_json(document.dump(), "shrink-candidate.json");
    if (!scenario) return scenario.error();
    auto run = run_scenario(*scenario, options);
    if (!run) return run.error();
    ProbeOutcome out;
    for (const Violation& v : run->violations) out.fired.push_back(v.invariant);
    out.events = run->events_executed;
    return out;
  };
}

std::string shrunk_scenario_name(const std::string& scenario, std::uint64_t seed,
                                 const std::string& invariant) {
  REHEARSE_ASSERT(!invariant.empty());  // the name of an invariant that fired
  std::string kebab = invariant;
  std::replace(kebab.begin(), kebab.end(), '_', '-');
  return fmt::format("{}-seed{}-{}", scenario, seed, kebab);
}

namespace {

// `object` with the keys of `first` first (in that order), the others after
// in name order.
nlohmann::ordered_json keys_first(const json& object, std::initializer_list<const char*> first) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!object.is_object()) return nlohmann::ordered_json::parse(object.dump());
  for (const char* key : first) {
    if (object.contains(key)) out[key] = nlohmann::ordered_json::parse(object[key].dump());
  }
  for (const auto& [key, value] : object.items()) {
    if (!out.contains(key)) out[key] = nlohmann::ordered_json::parse(value.dump());
  }
  REHEARSE_ASSERT_EQ(out.size(), object.size());  // reordered, nothing added or lost
  return out;
}

// A value on one line, with a space after each ':' and ','.
std::string one_line(const nlohmann::ordered_json& value) {
  if (!value.is_object() && !value.is_array()) return value.dump();
  std::string text;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (it != value.begin()) text += ", ";
    if (value.is_object()) text += json(it.key()).dump() + ": ";
    text += one_line(it.value());
  }
  // One line: dump() escapes every newline inside strings.
  REHEARSE_ASSERT_EQ(text.find('\n'), std::string::npos);
  return value.is_object() ? "{" + text + "}" : "[" + text + "]";
}

// An object or array with one entry a line (each entry on one line), as the
// bundled scenarios write their jobs and faults.
std::string one_entry_a_line(const nlohmann::ordered_json& value, const std::string& indent) {
  if ((!value.is_object() && !value.is_array()) || value.empty()) return one_line(value);
  std::string text;
  for (auto it = value.begin(); it != value.end(); ++it) {
    text += (it == value.begin() ? "\n" : ",\n") + indent + "  ";
    if (value.is_object()) text += json(it.key()).dump() + ": ";
    text += one_line(it.value());
  }
  text += "\n" + indent;
  // One line per entry, and the closing line.
  REHEARSE_ASSERT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')),
                     value.size() + 1);
  return value.is_object() ? "{" + text + "}" : "[" + text + "]";
}

}  // namespace

std::string scenario_file_text(const json& document) {
  nlohmann::ordered_json out =
      keys_first(document, {"format", "scenario", "description", "start", "until", "seed", "env",
                            "queue", "services", "jobs", "fleet", "faults", "expect"});
  for (std::size_t i = 0; i < size_at(document, json::json_pointer("/jobs")); ++i) {
    out["jobs"][i] = keys_first(document["jobs"][i], {"id", "kind", "schedule"});
  }
  for (std::size_t i = 0; i < size_at(document, json::json_pointer("/faults")); ++i) {
    out["faults"][i] = keys_first(document["faults"][i], {"at", "for", "kind"});
  }
  std::string text = "{\n";
  for (auto it = out.begin(); it != out.end(); ++it) {
    if (it != out.begin()) text += ",\n";
    text += fmt::format("  {}: {}", json(it.key()).dump(), one_entry_a_line(it.value(), "  "));
  }
  text += "\n}\n";
  // The file reads back as the document it was written from.
  REHEARSE_ASSERT(json::parse(text) == document);
  return text;
}

std::string describe_fault(const json& fault) {
  std::string line = fmt::format("{} {}", fault.value("at", std::string("?")),
                                 fault.value("kind", std::string("?")));
  for (const auto& [key, value] : fault.items()) {
    if (key == "at" || key == "kind" || key == "note") continue;
    line += fmt::format(" {}={}", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return line;
}

std::string describe_shrink(const ShrinkResult& result) {
  REHEARSE_ASSERT_LE(result.probes, result.budget);  // shrink_scenario never overdraws
  std::string text = fmt::format("shrunk keeping {} violated: {} runs, {} rounds\n",
                                 result.invariant, result.probes, result.rounds);
  text += fmt::format("  before: {}\n", counts_text(result.before));
  text += fmt::format("  after:  {}\n", counts_text(result.after));
  const std::size_t faults = size_at(result.document, json::json_pointer("/faults"));
  text += faults == 0 ? "  faults after: none\n" : "  faults after:\n";
  for (std::size_t i = 0; i < faults; ++i) {
    text += "    " + describe_fault(result.document["faults"][i]) + "\n";
  }
  if (result.budget_exhausted) {
    text += fmt::format(
        "  the budget of {} runs ran out before a round changed nothing: smaller, maybe not "
        "minimal\n",
        result.budget);
  }
  return text;
}

}  // namespace rehearse::sim
