#include "sim/check/crash_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

// --- points as text -----------------------------------------------------------

const char* effect_text(CrashEffect effect) { return to_string(effect); }

std::string point_text(const WorkerCrashPoint& p) {
  return fmt::format("{}:{}:{}", p.at == CrashAt::event ? "event" : "disk", p.index,
                     effect_text(p.effect));
}

Result<WorkerCrashPoint> parse_one_point(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("crash point '{}': {} (expected KIND:INDEX:EFFECT, KIND event or "
                                  "disk, EFFECT power_loss or process_crash, e.g. "
                                  "disk:7:power_loss)",
                                  text, why));
  };
  const std::size_t a = text.find(':');
  const std::size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos) return bad("three fields separated by ':' are needed");
  REHEARSE_ASSERT_LT(a, b);  // the second ':' was searched for after the first
  WorkerCrashPoint point;
  const std::string kind = text.substr(0, a);
  const std::string index = text.substr(a + 1, b - a - 1);
  const std::string effect = text.substr(b + 1);
  if (kind == "event") {
    point.at = CrashAt::event;
  } else if (kind == "disk") {
    point.at = CrashAt::disk_operation;
  } else {
    return bad(fmt::format("unknown kind '{}'", kind));
  }
  const char* end = index.data() + index.size();
  const auto [ptr, ec] = std::from_chars(index.data(), end, point.index);
  if (index.empty() || ec != std::errc() || ptr != end) {
    return bad(fmt::format("'{}' is not a non-negative integer", index));
  }
  if (effect == "power_loss") {
    point.effect = CrashEffect::power_loss;
  } else if (effect == "process_crash") {
    point.effect = CrashEffect::process_only;
  } else {
    return bad(fmt::format("unknown effect '{}'", effect));
  }
  return point;
}

// --- one run ------------------------------------------------------------------

RunOptions sweep_run_options(const ScenarioCrashOptions& options, const ScenarioCrashPoint* point) {
  RunOptions run;
  run.seed = options.seed;
  run.runner_factory = options.base.runner_factory;
  run.worker_ports = options.base.worker_ports;
  run.store_decorator = options.base.store_decorator;
  run.keep_trace = false;
  run.record_marks = true;
  run.max_violations = 16;
  if (point != nullptr) {
    WorkerCrashPlan plan;
    plan.reboot_after_ms = options.reboot_after_ms;
    plan.points.push_back(point->first);
    if (point->second) plan.points.push_back(*point->second);
    run.crash_plan = std::move(plan);
  }
  return run;
}

bool same_state(const RunMark& a, const RunMark& b) {
  return a.trace_events == b.trace_events && a.trace_hash == b.trace_hash &&
         a.disk_operations == b.disk_operations;
}

// The event in which disk operation `j` fell, from marks[k - offset] = the
// state after k events: the k with marks[k].ops <= j < marks[k + 1].ops.
std::optional<std::uint64_t> event_of_operation(const std::vector<RunMark>& marks,
                                                std::uint64_t offset, std::uint64_t j) {
  const auto it =
      std::upper_bound(marks.begin(), marks.end(), j,
                       [](std::uint64_t op, const RunMark& m) { return op < m.disk_operations; });
  if (it == marks.begin() || it == marks.end()) return std::nullopt;
  // The mark before holds operation j: marks[k].ops <= j < marks[k + 1].ops.
  REHEARSE_ASSERT_LE(std::prev(it)->disk_operations, j);
  REHEARSE_ASSERT_GT(it->disk_operations, j);
  return offset + static_cast<std::uint64_t>(it - marks.begin()) - 1;
}

// The marks a crashed run must share with its reference (the baseline for a
// single point, the single run for a pair) up to its last crash.
struct Reference {
  const std::vector<RunMark>* marks = nullptr;
  std::uint64_t offset = 0;  // (*marks)[i] is the state after offset + i events
};

// How many events had executed when the point's crash fell (for a disk
// point: before the event its operation fell in), in the reference run.
std::optional<std::uint64_t> crash_event(const WorkerCrashPoint& point, const Reference& ref) {
  // A disk point is placed by the reference's marks, which every caller has.
  REHEARSE_ASSERT(point.at == CrashAt::event || ref.marks != nullptr);
  if (point.at == CrashAt::event) return point.index;
  return event_of_operation(*ref.marks, ref.offset, point.index);
}

struct Judged {
  std::vector<ScenarioCrashFailure> failures;
  std::uint64_t window_duplicates = 0;
};

void judge_prefix(const ScenarioRunResult& run, const ScenarioCrashPoint& point,
                  const Reference& ref, Judged& out) {
  REHEARSE_ASSERT(ref.marks != nullptr);  // only the baseline itself has no reference
  const WorkerCrashPoint& last = point.second ? *point.second : point.first;
  const std::size_t want = point.second ? 2 : 1;
  if (run.crash_points_fired < want) {
    out.failures.push_back(
        {point, "diverged", "the planned crash did not fire: " + run.crash_point_missed});
    return;
  }
  // A disk operation of the first boot: nothing ran before it.
  if (last.at == CrashAt::disk_operation && ref.offset == 0 && !ref.marks->empty() &&
      last.index < ref.marks->front().disk_operations) {
    return;
  }
  const std::optional<std::uint64_t> k = crash_event(last, ref);
  const bool known =
      k && *k >= ref.offset && *k - ref.offset < ref.marks->size() && *k < run.run_marks.size();
  if (!known || !same_state(run.run_marks[*k], (*ref.marks)[*k - ref.offset])) {
    out.failures.push_back(
        {point, "diverged",
         fmt::format("the run's state before the crash (after {} events) differs from the {} "
                     "run's: the prefix is not deterministic",
                     k.value_or(0), point.second ? "single-crash" : "baseline")});
  }
}

Judged judge(const Scenario& scenario, const ScenarioRunResult& run,
             const ScenarioCrashPoint* point, const Reference& ref) {
  Judged out;
  const ScenarioCrashPoint none{};
  if (point != nullptr) judge_prefix(run, *point, ref, out);
  const ScenarioCrashPoint& at = point != nullptr ? *point : none;
  for (const std::string& error : run.errors) out.failures.push_back({at, "error", error});
  const std::set<std::string> expected(scenario.expect.violations.begin(),
                                       scenario.expect.violations.end());
  for (const Violation& v : run.violations) {
    if (expected.count(v.invariant) != 0) continue;
    out.failures.push_back(
        {at, v.invariant, fmt::format("at {}: {}", format_instant(v.t), v.message)});
  }
  if (run.tallies.is_object()) {
    out.window_duplicates = run.tallies.value("duplicate_deliveries_in_window", std::uint64_t{0});
  }
  // Every error of the run is a failure of the point.
  REHEARSE_ASSERT_GE(out.failures.size(), run.errors.size());
  return out;
}

// --- recovery windows -----------------------------------------------------------

// The recovery after a single point's crash (see the header): crash-after
// counts first_event + 1 .. last_event + 1 and disk operations
// first_op .. end_op - 1, with the single run's marks over that stretch.
struct Recovery {
  std::uint64_t first_event = 0;  // the boot's event
  std::uint64_t last_event = 0;
  std::uint64_t first_op = 0;
  std::uint64_t end_op = 0;
  bool bounded = false;
  std::vector<RunMark> marks;  // marks[i]: after first_event + i events
};

std::optional<Recovery> recovery_after(const ScenarioRunResult& run, std::uint64_t events_max) {
  REHEARSE_ASSERT_GE(events_max, 1u);  // the bound below keeps first_event + events_max - 1
  const auto& marks = run.worker_marks;
  auto crash = std::find_if(marks.begin(), marks.end(), [](const WorkerMark& m) {
    return m.kind == WorkerMarkKind::crash && m.planned;
  });
  auto boot = std::find_if(crash, marks.end(),
                           [](const WorkerMark& m) { return m.kind == WorkerMarkKind::boot; });
  if (crash == marks.end() || boot == marks.end() || run.events_executed <= boot->events) {
    return std::nullopt;
  }
  Recovery r;
  r.first_event = boot->events;
  r.first_op = boot->disk_operations;
  r.last_event = run.events_executed - 1;
  for (auto it = boot + 1; it != marks.end(); ++it) {
    if (it->kind == WorkerMarkKind::run_done) {
      r.last_event = it->events;
      break;
    }
    if (it->kind == WorkerMarkKind::crash) {
      r.last_event = it->events == 0 ? 0 : it->events - 1;
      break;
    }
  }
  if (r.last_event >= r.first_event + events_max) {
    r.last_event = r.first_event + events_max - 1;
    r.bounded = true;
  }
  if (r.last_event < r.first_event || r.last_event + 1 >= run.run_marks.size()) {
    return std::nullopt;
  }
  r.end_op = run.run_marks[r.last_event + 1].disk_operations;
  r.marks.assign(run.run_marks.begin() + static_cast<std::ptrdiff_t>(r.first_event),
                 run.run_marks.begin() + static_cast<std::ptrdiff_t>(r.last_event) + 2);
  // One mark per event of the recovery and the one after it (pairs_of reads them).
  REHEARSE_ASSERT_EQ(r.marks.size(), r.last_event - r.first_event + 2);
  // The disk operation count only grows (event_of_operation bisects on it).
  REHEARSE_ASSERT_LE(r.marks.front().disk_operations, r.end_op);
  return r;
}

// The second points of a recovery, in order: after every event of it (where
// the worker is up), then at every disk operation; the first point's effect.
std::vector<ScenarioCrashPoint> pairs_of(const ScenarioCrashPoint& first, const Recovery& r) {
  std::vector<ScenarioCrashPoint> out;
  for (std::uint64_t k = r.first_event + 1; k <= r.last_event + 1; ++k) {
    REHEARSE_ASSERT_LT(k - r.first_event, r.marks.size());
    if (!r.marks[k - r.first_event].worker_up) continue;
    out.push_back({first.first, WorkerCrashPoint{CrashAt::event, k, first.first.effect}});
  }
  for (std::uint64_t j = r.first_op; j < r.end_op; ++j) {
    out.push_back({first.first, WorkerCrashPoint{CrashAt::disk_operation, j, first.first.effect}});
  }
  // At most one point per event after the boot, plus one per disk operation.
  REHEARSE_ASSERT_LE(out.size(),
                     r.marks.size() - 1 + (r.end_op > r.first_op ? r.end_op - r.first_op : 0));
  return out;
}

// --- running many points ----------------------------------------------------------

// Calls fn(i) for i in [0, n) on `threads` threads (whole calls only).
void for_each_index(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& fn) {
  if (threads <= 1 || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && t < n; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  REHEARSE_ASSERT_GE(next.load(), n);  // every index was handed out
}

struct PointResult {
  Judged judged;
  std::optional<Recovery> recovery;
};

class Sweep {
 public:
  Sweep(const Scenario& scenario, const ScenarioCrashOptions& options,
        const ScenarioCrashProgress& progress)
      : scenario_(scenario), options_(options), progress_(progress) {}

  Result<ScenarioCrashReport> run();

 private:
  Status run_baseline();
  std::vector<ScenarioCrashPoint> single_points();
  std::vector<PointResult> run_points(const std::vector<ScenarioCrashPoint>& points,
                                      const std::vector<Reference>& refs, bool want_recovery);
  void tally(const ScenarioCrashPoint& point, const Judged& judged);
  std::uint64_t take_budget(std::uint64_t wanted, const char* what);

  const Scenario& scenario_;
  const ScenarioCrashOptions& options_;
  const ScenarioCrashProgress& progress_;
  ScenarioCrashReport report_;
  std::vector<RunMark> baseline_marks_;
  std::uint64_t budget_used_ = 0;
  std::uint64_t progress_total_ = 0;
  std::atomic<std::uint64_t> progress_done_{0};
  std::mutex progress_mutex_;
  Status run_error_;
  std::mutex error_mutex_;
};

Status Sweep::run_baseline() {
  auto run = run_scenario(scenario_, sweep_run_options(options_, nullptr));
  if (!run.ok()) return run.error();
  report_.scenario = run->scenario;
  report_.path = run->path;
  report_.seed = run->seed;
  report_.baseline_events = run->events_executed;
  report_.baseline_disk_operations =
      run->run_marks.empty() ? 0 : run->run_marks.back().disk_operations;
  Judged judged = judge(scenario_, *run, nullptr, Reference{});
  if (!judged.failures.empty()) {
    report_.baseline_failed = true;
    report_.failing_points = 1;
    report_.failures = std::move(judged.failures);
  }
  baseline_marks_ = std::move(run->run_marks);
  // The baseline's failures are the report's only ones, and only when it failed.
  REHEARSE_ASSERT_EQ(report_.baseline_failed, !report_.failures.empty());
  return {};
}

std::vector<ScenarioCrashPoint> Sweep::single_points() {
  std::vector<ScenarioCrashPoint> points;
  for (std::uint64_t k = 0; k <= report_.baseline_events && k < baseline_marks_.size(); ++k) {
    if (!baseline_marks_[k].worker_up) {
      ++report_.events_down;
      continue;
    }
    points.push_back({WorkerCrashPoint{CrashAt::event, k, CrashEffect::process_only}, {}});
  }
  report_.events.planned = points.size();
  for (const CrashEffect effect : {CrashEffect::power_loss, CrashEffect::process_only}) {
    for (std::uint64_t j = 0; j < report_.baseline_disk_operations; ++j) {
      points.push_back({WorkerCrashPoint{CrashAt::disk_operation, j, effect}, {}});
    }
  }
  report_.disk_power_loss.planned = report_.baseline_disk_operations;
  report_.disk_process_crash.planned = report_.baseline_disk_operations;
  // Every event is a point or counted down; every disk operation is two points.
  REHEARSE_ASSERT_EQ(points.size(), report_.events.planned + 2 * report_.baseline_disk_operations);
  return points;
}

// How many of `wanted` points the budget still allows; a cut is reported.
std::uint64_t Sweep::take_budget(std::uint64_t wanted, const char* what) {
  const std::uint64_t left =
      options_.points_max > budget_used_ ? options_.points_max - budget_used_ : 0;
  const std::uint64_t granted = std::min(wanted, left);
  if (granted < wanted && report_.cut.empty()) {
    report_.cut = fmt::format("cut by --points-max {}: {} of {} {} points run", options_.points_max,
                              granted, wanted, what);
  }
  budget_used_ += granted;
  REHEARSE_ASSERT_LE(granted, wanted);
  // The budget is never overdrawn (a budget already spent grants nothing).
  if (granted > 0) REHEARSE_ASSERT_LE(budget_used_, options_.points_max);
  return granted;
}

std::vector<PointResult> Sweep::run_points(const std::vector<ScenarioCrashPoint>& points,
                                           const std::vector<Reference>& refs, bool want_recovery) {
  REHEARSE_ASSERT_LE(points.size(), refs.size());  // refs[i] is read for point i
  std::vector<PointResult> results(points.size());
  for_each_index(points.size(), options_.threads, [&](std::size_t i) {
    auto run = run_scenario(scenario_, sweep_run_options(options_, &points[i]));
    if (!run.ok()) {
      const std::lock_guard lock(error_mutex_);
      if (run_error_.ok()) run_error_ = run.error();
      return;
    }
    results[i].judged = judge(scenario_, *run, &points[i], refs[i]);
    if (want_recovery) {
      results[i].recovery = recovery_after(*run, options_.recovery_events_max);
    }
    const std::uint64_t done = ++progress_done_;
    if (progress_) {
      const std::lock_guard lock(progress_mutex_);
      progress_(done, progress_total_);
    }
  });
  return results;
}

void Sweep::tally(const ScenarioCrashPoint& point, const Judged& judged) {
  ScenarioCrashCount& count = point.second                       ? report_.pairs
                              : point.first.at == CrashAt::event ? report_.events
                              : point.first.effect == CrashEffect::power_loss
                                  ? report_.disk_power_loss
                                  : report_.disk_process_crash;
  ++count.run;
  report_.duplicates_in_window += judged.window_duplicates;
  if (judged.window_duplicates > 0) ++report_.points_with_window_duplicates;
  if (judged.failures.empty()) return;
  ++report_.failing_points;
  for (const ScenarioCrashFailure& f : judged.failures) {
    if (report_.failures.size() < options_.failures_kept) report_.failures.push_back(f);
  }
  // A failing point is a point that ran.
  REHEARSE_ASSERT_LE(report_.failing_points, report_.events.run + report_.disk_power_loss.run +
                                                 report_.disk_process_crash.run +
                                                 report_.pairs.run);
}

Result<ScenarioCrashReport> Sweep::run() {
  report_.recovery_events_max = options_.recovery_events_max;
  if (Status s = run_baseline(); !s.ok()) return s.error();
  if (report_.baseline_failed) return report_;
  std::vector<ScenarioCrashPoint> singles = single_points();
  singles.resize(take_budget(singles.size(), "single"));
  progress_total_ = singles.size();
  const std::vector<Reference> baseline_refs(singles.size(), Reference{&baseline_marks_, 0});
  std::vector<PointResult> results = run_points(singles, baseline_refs, options_.pairs);
  if (!run_error_.ok()) return run_error_.error();
  std::vector<ScenarioCrashPoint> pairs;
  std::vector<Reference> pair_refs;
  for (std::size_t i = 0; i < singles.size(); ++i) {
    tally(singles[i], results[i].judged);
    if (!results[i].recovery) continue;
    const Recovery& r = *results[i].recovery;
    if (r.bounded) ++report_.recoveries_bounded;
    for (ScenarioCrashPoint& p : pairs_of(singles[i], r)) {
      pairs.push_back(std::move(p));
      pair_refs.push_back(Reference{&r.marks, r.first_event});
    }
  }
  // Every single point ran once (no error stopped the sweep), within its plan.
  REHEARSE_ASSERT_EQ(progress_done_.load(), progress_total_);
  REHEARSE_ASSERT_LE(report_.events.run, report_.events.planned);
  REHEARSE_ASSERT_LE(report_.disk_power_loss.run, report_.disk_power_loss.planned);
  REHEARSE_ASSERT_LE(report_.disk_process_crash.run, report_.disk_process_crash.planned);
  REHEARSE_ASSERT_EQ(pair_refs.size(), pairs.size());
  if (!options_.pairs) return report_;
  report_.pairs.planned = pairs.size();
  pairs.resize(take_budget(pairs.size(), "pair"));
  progress_total_ += pairs.size();
  std::vector<PointResult> pair_results = run_points(pairs, pair_refs, false);
  if (!run_error_.ok()) return run_error_.error();
  for (std::size_t i = 0; i < pairs.size(); ++i) tally(pairs[i], pair_results[i].judged);
  REHEARSE_ASSERT_EQ(progress_done_.load(), progress_total_);
  REHEARSE_ASSERT_LE(report_.pairs.run, report_.pairs.planned);
  return report_;
}

}  // namespace

std::string to_string(const ScenarioCrashPoint& point) {
  std::string text = point_text(point.first);
  if (point.second) text += "+" + point_text(*point.second);
  // parse_crash_point splits at the '+': only a pair has one.
  REHEARSE_ASSERT_EQ(text.find('+') != std::string::npos, point.second.has_value());
  return text;
}

Result<ScenarioCrashPoint> parse_crash_point(const std::string& text) {
  const std::size_t plus = text.find('+');
  ScenarioCrashPoint point;
  auto first = parse_one_point(text.substr(0, plus));
  if (!first.ok()) return first.error();
  point.first = *first;
  if (plus != std::string::npos) {
    auto second = parse_one_point(text.substr(plus + 1));
    if (!second.ok()) return second.error();
    point.second = *second;
  }
  return point;
}

Result<ScenarioCrashReport> sweep_scenario_crashes(const Scenario& scenario,
                                                   const ScenarioCrashOptions& options,
                                                   const ScenarioCrashProgress& progress) {
  Sweep sweep(scenario, options, progress);
  Result<ScenarioCrashReport> report = sweep.run();
  // tally keeps the first failures_kept failures; a failing point ran.
  if (report && !report->baseline_failed) {
    REHEARSE_ASSERT_LE(report->failures.size(), options.failures_kept);
    REHEARSE_ASSERT_LE(report->failing_points, report->points_run());
  }
  return report;
}

Result<std::vector<ScenarioCrashFailure>> replay_scenario_crash_point(
    const Scenario& scenario, const ScenarioCrashPoint& point,
    const ScenarioCrashOptions& options) {
  // The reference: the baseline for a single point, the single run of the
  // first point for a pair.
  ScenarioCrashPoint first_only{point.first, {}};
  auto reference =
      run_scenario(scenario, sweep_run_options(options, point.second ? &first_only : nullptr));
  if (!reference.ok()) return reference.error();
  auto run = run_scenario(scenario, sweep_run_options(options, &point));
  if (!run.ok()) return run.error();
  return judge(scenario, *run, &point, Reference{&reference->run_marks, 0}).failures;
}

}  // namespace rehearse::sim
