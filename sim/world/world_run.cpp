// The world's run: monitors and listeners installed, the loop, the final
// state read back and the outcome recorded (or cut short by memory).
#include "sim/world/world_detail.hpp"

namespace rehearse::sim::world_detail {

// The directory as a worker's disk holds it when the run ends: every file,
// the damaged ones kept beside the store included.
void World::keep_state_files(ScenarioRunResult& result) {
  auto names = disk_.list_dir(kWorldStateDir);
  if (!names.ok()) return;                  // a world whose worker never wrote a state file
  for (const std::string& name : *names) {  // in name order, as the disk lists them
    auto bytes = disk_.read_file(std::string(kWorldStateDir) + "/" + name);
    if (bytes.ok() && *bytes) result.state_files.emplace_back(name, std::move(**bytes));
  }
}

void World::read_final_state(ScenarioRunResult& result) {
  // The run is over: nothing the read-back does belongs to it.
  REHEARSE_ASSERT(finished_);
  REHEARSE_ASSERT(result.final_states.empty() && result.final_items.empty());
  // Read back what the store durably holds, as a fresh process would; the
  // read is not part of the run, so it is not traced.
  disk_.set_trace(nullptr);
  // A torn write or fail-stop the run armed and never reached belongs to the
  // run, not to this read (it would kill the reader and make the read-back
  // fail: a harness error).
  disk_.disarm_torn_write();
  disk_.cancel_fail_stop();
  compare_damaged_files(result);
  if (options_.keep_state_files) keep_state_files(result);
  result.unreported_torn_tail = tail_watch_.unreported_tail();
  result.store_failing_closed = store_reported_corrupt_;
  auto store = StateStore::open(disk_, kWorldStateDir);
  if (!store.ok()) {
    result.store_error = store.error().describe();
  } else if (!store->health().ok()) {
    result.store_corrupt = true;
    result.store_error = store->health().error ? store->health().error->describe() : "corrupt";
  }
  for (const JobSpec& spec : scenario_.jobs) {
    FinalJobState f;
    f.job_id = spec.id;
    if (store.ok() && store->health().ok()) {
      auto s = store->read(spec.id);
      if (s.ok()) f.state = std::move(s).value();
    }
    result.final_states.push_back(std::move(f));
  }
  // One final state per listed job, in the scenario's order.
  REHEARSE_ASSERT_EQ(result.final_states.size(), scenario_.jobs.size());
  // Reconcile items as their pipeline stores durably hold them.
  for (const JobSpec& spec : scenario_.jobs) {
    if (spec.kind != JobKind::reconcile) continue;
    PipelineStore pipeline(disk_, reconcile_config_from(spec).store_dir);
    auto items = pipeline.load();
    // A file the world damaged holds no items to read back: the job failed
    // closed on it (state_durable judges that), and its items have no end state.
    if (!items.ok() && damaged_job_files_.count(spec.id) != 0) continue;
    if (!items.ok()) {
      result.errors.push_back(fmt::format("job {}: the pipeline store cannot be read back: {}",
                                          spec.id, items.error().describe()));
      continue;
    }
    for (const PipelineItem& item : *items) {
      result.final_items.push_back(
          FinalItemState{spec.id, item.issue, item.stage, item.reconcile_error});
    }
  }
}

// The run loop, with running out of memory as an end of its own: the trace's
// kept events are let go (what memory there is goes to the report), and the
// run ends where it was, reported like a stopped run with an error saying why
// (docs/run.md). Everything after this still reads the monitors' tallies.
RunResult World::run_loop_guarded(ScenarioRunResult& result) {
  // Going on to the end-of-run steps after std::bad_alloc crashed: the
  // simulator is left mid-event. It propagates to run_world, which asks
  // the world for the run so far (cut_short_by_out_of_memory) and stops.
  (void)result;
  RunResult run = sim_.run_until(scenario_.until_ms);
  REHEARSE_ASSERT_LE(sim_.now(), scenario_.until_ms);  // no event runs past the scenario's end
  return run;
}

// The run's observer, and the listeners that feed it and the world's own
// records (log lines, trace events, progress, process crashes and boots).
void World::install_observer_and_listeners() {
  REHEARSE_ASSERT(observer_ == nullptr);  // installed once, at the start of the run
  observer_ = make_observer_(scenario_);
  REHEARSE_ASSERT(observer_ != nullptr);
  // The world's own layout: its stores change only under their locks.
  observer_->add_locked_store(kWorldStateDir);
  observer_->add_locked_store(kWorldLedgerDir);
  if (queue_on_disk()) observer_->add_locked_store(kWorldQueueDir);
  for (const JobSpec& spec : scenario_.jobs) {
    if (spec.kind == JobKind::reconcile) {
      observer_->add_locked_store(reconcile_config_from(spec).store_dir);
      reconcile_specs_.push_back(&spec);
    }
  }
  // Log lines are text the secrets monitor reads too, as they are written
  // (at their own trace event), and then dropped.
  log_.set_line_observer([this](const std::string& line) {
    REHEARSE_ASSERT_GE(trace_.size(), 1u);  // the line's own event is recorded before it
    observer_->observe_text(line, trace_.size() - 1, sim_.now());
    drain_monitor_violations();
  });
  // The log as a production worker writes it: bytes the secrets monitor
  // judges too, since they are what a log file would hold.
  if (options_.keep_worker_log) {
    log_.set_json_lines(worker_clock_, [this](std::string line) {
      observer_->observe_text(line, trace_.size() - 1, sim_.now());
      drain_monitor_violations();
      worker_log_.push_back(std::move(line));
    });
  }
  // Full agent ids are secrets the monitors take from the scenario itself.
  trace_.add_listener(
      [this](const TraceEvent& event, std::size_t index) { on_trace_event(event, index); });
  sim_.add_event_listener([this](const ExecutedEvent&) {
    ++events_seen_;
    // An allocation the memory reserve served: end the run here, at an
    // event boundary, as out of memory (sim/kernel/memory_reserve.hpp).
    if (memory_reserve_spent()) throw std::bad_alloc();
    after_event();
    if (options_.progress && options_.progress_every_events > 0 &&
        events_seen_ % options_.progress_every_events == 0) {
      options_.progress(
          RunProgress{sim_.now(), scenario_.start_ms, scenario_.until_ms, events_seen_});
    }
  });
  sim_.add_process_listener([this](ProcessId process, ProcessChange change, TimeMs) {
    if (finished_) return;
    if (change == ProcessChange::crashed) {
      on_process_crashed(process);
    } else {
      record_worker_mark(WorkerMarkKind::boot, false);
      record_world("process_boot", json{{"process", sim_.process_name(process)},
                                        {"pid", process},
                                        {"boots", sim_.boot_count(process)}});
    }
  });
}

// A worker process died: the queue call its death cut is settled against
// what the crash leaves of the queue file, then the machine goes down with
// the worker (a planned crash may cut the process alone).
void World::on_process_crashed(ProcessId process) {
  // The simulator tells of a crash once the process is down, and only
  // worker processes exist.
  REHEARSE_ASSERT(!sim_.is_up(process));
  REHEARSE_ASSERT(std::find(processes_.begin(), processes_.end(), process) != processes_.end());
  const bool process_only = crash_effect_ == CrashEffect::process_only;
  if (queue_on_disk()) {
    const std::string path = queue_file();
    traced_queue_.settle(static_cast<QueueProcess>(process),
                         process_only ? disk_.live_content(path) : disk_.durable_content(path));
  }
  if (process_only) {
    disk_.process_crashed(static_cast<DiskOwner>(process));
  } else {
    disk_.crash();
  }
  record_worker_mark(WorkerMarkKind::crash, crash_planned_);
  crash_effect_ = CrashEffect::power_loss;
  crash_planned_ = false;
  record_world("process_crash", json{{"process", sim_.process_name(process)},
                                     {"pid", process},
                                     {"cause", crash_cause_},
                                     {"crashes", sim_.crash_count(process)}});
  crash_cause_ = "unknown";
}

// The run loop's outcome into the result; a bounded run is a violation,
// an overflow, a failed task or a failed assertion an error.
void World::record_outcome(const RunResult& run, ScenarioRunResult& result) {
  result.outcome = run.outcome;
  result.outcome_message = run.message;
  result.events_executed = run.events_executed;
  result.end_ms = sim_.now();
  // The world's listener saw every event the simulator ran, and the clock
  // stays inside the span: at its end exactly when the run completed.
  REHEARSE_ASSERT_EQ(run.events_executed, events_seen_);
  REHEARSE_ASSERT_GE(result.end_ms, scenario_.start_ms);
  REHEARSE_ASSERT_LE(result.end_ms, scenario_.until_ms);
  if (run.outcome == RunOutcome::completed) REHEARSE_ASSERT_EQ(result.end_ms, scenario_.until_ms);
  switch (run.outcome) {
    case RunOutcome::completed:
    case RunOutcome::stopped: break;
    case RunOutcome::bounded_run:
      on_violation(Violation{
          "bounded_run", trace_.size(), sim_.now(),
          fmt::format("the run reached its bound of {} events (queue.max_events) with events "
                      "still due before {}: a scenario meant to run this long needs a larger "
                      "queue.max_events; a short one that loops points at the core",
                      scenario_.queue.max_events, format_instant(scenario_.until_ms))});
      break;
    case RunOutcome::queue_overflow:
    case RunOutcome::task_failed:
    case RunOutcome::assertion_failed:
      result.errors.push_back(
          fmt::format("the run ended with {}: {}", to_string(run.outcome), run.message));
      break;
  }
}

ScenarioRunResult World::run() {
  ScenarioRunResult result;
  result.scenario = scenario_.name;
  result.path = scenario_.path;
  result.seed = seed_;
  result.start_ms = scenario_.start_ms;
  result.until_ms = scenario_.until_ms;
  REHEARSE_ASSERT(processes_.empty());  // a world runs once

  install_observer_and_listeners();
  for (int w = 1; w <= scenario_.queue.workers; ++w) {
    processes_.push_back(sim_.add_process(w == 1 ? "worker" : fmt::format("worker-{}", w),
                                          [this](Simulator& s, ProcessId p) { boot(s, p); }));
  }
  REHEARSE_ASSERT_EQ(processes_.size(), scenario_.queue.workers);
  process_ = processes_.front();
  // A first disk point is armed before the first boot, which it may cut; an
  // event point 0 fires once the worker is up, before the first event.
  if (options_.crash_plan && !options_.crash_plan->points.empty() &&
      options_.crash_plan->points.front().at == CrashAt::disk_operation) {
    arm_next_crash_point();
  }
  for (ProcessId process : processes_) sim_.boot(process);
  after_event();  // the mark before the first event
  const RunResult run = run_loop_guarded(result);

  record_outcome(run, result);
  // (No seed here: a scenario without random faults gives the same trace
  // under every seed, and the trace shows that.)
  record_world("run_end",
               json{{"outcome", to_string(run.outcome)}, {"events", run.events_executed}});
  // End-of-run invariants judge a run that reached `until` only: a stopped
  // or bounded run has already failed, and its end state is not an end.
  if (run.outcome == RunOutcome::completed) {
    observer_->finish(scenario_.until_ms);
    drain_monitor_violations();
  }
  result.tallies = observer_->tallies();
  finished_ = true;
  // Reading the stores back needs memory of its own: not after the reserve
  // served the loop's last events.
  if (memory_reserve_spent()) throw std::bad_alloc();
  read_final_state(result);
  result.violations = violations_;
  result.all_violations = all_violations_;
  result.violation_counts = violation_counts_;
  result.violations_dropped = violations_dropped_;
  result.messenger_calls = messenger_calls_;
  result.crash_points_fired = crash_points_fired_;
  result.crash_point_missed = crash_point_missed_;
  if (options_.crash_plan && crash_point_missed_.empty() &&
      crash_points_fired_ < options_.crash_plan->points.size()) {
    result.crash_point_missed = fmt::format("crash point {} of the plan was not reached by the end",
                                            crash_points_fired_ + 1);
  }
  // A planned point fires at most once; with marks, one per event and one before.
  if (options_.crash_plan) {
    REHEARSE_ASSERT_LE(crash_points_fired_, options_.crash_plan->points.size());
  }
  if (options_.record_marks) REHEARSE_ASSERT_EQ(run_marks_.size(), events_seen_ + 1);
  result.run_marks = std::move(run_marks_);
  result.worker_marks = std::move(worker_marks_);
  result.worker_log = std::move(worker_log_);
  // Hand the events over in a Trace of their own, without the world's listeners.
  result.trace_hash = hex64(trace_.hash());
  result.trace = trace_.take();
  if (options_.progress) {
    options_.progress(
        RunProgress{sim_.now(), scenario_.start_ms, scenario_.until_ms, events_seen_});
  }
  return result;
}

// The run so far, after running out of memory mid-event: the kept trace is
// let go first, so that there is memory for the report; the run is not
// continued (the event that failed is half done) and nothing is read from
// the stores. The monitors' tallies are reported when they still fit.
ScenarioRunResult World::cut_short_by_out_of_memory() {
  // The count and hash are read before the events go: the report names them.
  const std::size_t trace_events = trace_.size();
  const std::uint64_t trace_hash = trace_.hash();
  { const Trace dropped = trace_.take(); }
  ScenarioRunResult result;
  result.out_of_memory = true;
  result.outcome = RunOutcome::stopped;
  result.scenario = scenario_.name;
  result.path = scenario_.path;
  result.seed = seed_;
  result.start_ms = scenario_.start_ms;
  result.until_ms = scenario_.until_ms;
  result.end_ms = sim_.now();
  REHEARSE_ASSERT_GE(result.end_ms, scenario_.start_ms);  // virtual time starts there
  result.events_executed = events_seen_;
  result.trace_hash = hex64(trace_hash);
  result.violations = std::move(violations_);
  result.all_violations = std::move(all_violations_);
  result.violation_counts = std::move(violation_counts_);
  result.violations_dropped = violations_dropped_;
  result.errors.push_back(fmt::format(
      "out of memory at {} ({:.1f}% of the span), after {} events and {} trace events: the run "
      "was cut short there; the counts reported are the run so far (try --once, and no "
      "--trace, --timeline or --report)",
      format_instant(sim_.now()),
      100.0 * static_cast<double>(sim_.now() - scenario_.start_ms) /
          static_cast<double>(std::max<TimeMs>(1, scenario_.until_ms - scenario_.start_ms)),
      events_seen_, trace_events));
  try {
    if (observer_) result.tallies = observer_->tallies();
  } catch (const std::bad_alloc&) {
    result.tallies = nullptr;  // the job counts are left out
  }
  return result;
}

}  // namespace rehearse::sim::world_detail
