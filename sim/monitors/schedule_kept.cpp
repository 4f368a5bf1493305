#include "sim/monitors/schedule_kept.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {
constexpr DurationMs kScheduleHorizonMs = 4 * 366 * kDayMs;  // a search limit, like everything
}  // namespace

ScheduleKept::ScheduleKept(const Scenario& scenario, MonitorContext& context)
    : context_(context), start_ms_(scenario.start_ms) {
  for (const auto& [id, config] : context.jobs.all()) jobs_[id] = JobSchedule{};
  REHEARSE_ASSERT_EQ(jobs_.size(), context.jobs.all().size());
}

Violations ScheduleKept::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (e.type == "queue_add" && e.str("kind") == "regular" && e.slot) {
    on_handout(e, i, out);
  } else if (e.type == "durable_job_state") {
    check_durable_row(e, i, out);
  }
  check_never_runs(e, i, out);
  check_due_at_firing(e, i, out);
  return out;
}

// A slot handed out: a firing of the effective schedule (check_due_at_firing
// says so when it is not), never older than the last one, none skipped since;
// the firings due since the slot are folded into this late run (marked
// coalesced here, from the monitor's own matcher), and the job's next durable
// write must count them and move next_run_at to the first firing after now.
void ScheduleKept::on_handout(const TraceEvent& e, std::size_t i, Violations& out) {
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr) return;
  // Every job of the table has its schedule from the constructor.
  const auto found = jobs_.find(e.job);
  REHEARSE_ASSERT(found != jobs_.end());
  JobSchedule& j = found->second;
  const ProcessTracker& process = context_.process;
  const bool refused = process.store_refused();
  const bool damaged = process.store_damaged();
  const TimeMs s = *e.slot;
  // The same slot handed out again before its durable row (a crash between
  // the queue add and the state write): the misfire record is still owed.
  std::optional<JobSchedule::PendingMisfire> owed;
  if (j.pending_misfire && j.pending_misfire->slot == s)
    owed = std::exchange(j.pending_misfire, {});
  const bool owed_before_blind_boot = process.boot_blind() && j.pending_boot != process.boots();
  if (j.pending_misfire && j.pending_misfire->coalesced > 0 && !refused && !damaged &&
      !owed_before_blind_boot) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {}: {} slots after {} were folded into its late run without a "
                               "misfire record",
                               e.job, j.pending_misfire->coalesced,
                               format_instant(j.pending_misfire->slot))});
  }
  j.pending_misfire.reset();
  if (!job->cron || job->cron->between(s - 1, s, 1).empty())
    return;  // skipped loudly / fired already
  const WitnessCron& cron = *job->cron;
  const bool again = context_.slots.known(e.job, s) && j.last_slot && s <= *j.last_slot;
  // After a blind boot the store's last slot may be lost with the damaged
  // records: older slots may come again until the job hands out a new one.
  const bool rolled_back = process.boot_blind() && j.caught_up_boot != process.boots();
  if (!again) j.caught_up_boot = process.boots();
  // The same slot twice in a row is harmless when the first hand-out was cut
  // before its durable row, or before its run after a boot (a crash between
  // the queue add and the state write; the add is idempotent), or the queue
  // already held it. A slot that ran, handed out again by the same boot or
  // after its row, is a second run (a boot whose clock a step set back).
  const SlotWatch* watch = context_.slots.find(e.job, s);
  const bool ran = watch != nullptr && watch->runs > 0;
  const bool repeat_excused =
      j.last_handed == s && (j.pending_next.has_value() || !e.flag("added") ||
                             (j.pending_boot != process.boots() && !ran));
  if (again && !refused && !rolled_back && !repeat_excused) {
    // The same slot twice in a row is a crash between the queue add and the
    // state write (harmless: the add is idempotent); an older one means a
    // restart moved the schedule back. A store that refuses writes (fail
    // closed) cannot know its schedule, so there the re-handout is expected.
    out.push_back({kName, i, e.t,
                   fmt::format("job {}: slot {} handed out again after {} (the schedule moved "
                               "back)",
                               e.job, format_instant(s),
                               format_instant(j.last_handed.value_or(*j.last_slot)))});
  }
  j.last_handed = s;
  // After a blind boot the surviving records may also lead to a slot never
  // handed out that is older than one a boot over the corrupt store handed
  // out from memory (it started from its own now).
  const bool older_after_blind_boot = rolled_back && j.last_slot && s <= *j.last_slot;
  if (!again && !older_after_blind_boot) check_none_skipped(*job, j, s, e, i, out);
  // The firings due since this slot (a re-handout after a crash: since the
  // last slot already folded) are folded into this late run.
  const TimeMs folded_from = again ? std::max(s, *j.last_slot) : s;
  // Due by the machine's clock, which a clock step may have moved.
  const TimeMs wall_now = context_.wall_clock.wall(e.t);
  const auto due_after = cron.between(folded_from, wall_now, 1'000'000);
  j.pending_misfire = owed;
  if (!again || !due_after.empty()) {
    const std::int64_t before = owed ? owed->coalesced : 0;
    j.pending_misfire =
        JobSchedule::PendingMisfire{s, before + static_cast<std::int64_t>(due_after.size()),
                                    owed ? owed->index : i};
    j.last_slot = due_after.empty() ? s : due_after.back();
    // Folded firings come after the slot.
    REHEARSE_ASSERT_GE(*j.last_slot, s);

    context_.slots.mark_coalesced(e.job, s, due_after, i);
  }
  // An older slot again after a blind boot folds what the surviving records
  // leave due, which the damage hides: its misfire count is not judged.
  if (again && rolled_back) j.pending_misfire.reset();
  if (damaged) {
    // The store is visibly damaged: it writes nothing (or a record the world
    // cannot read back), so no durable row is owed for this hand-out.
    j.pending_misfire.reset();
    return;
  }
  j.pending_next =
      JobSchedule::PendingNext{s, cron.next_after(std::max(s, wall_now), kScheduleHorizonMs)};
  j.pending_boot = process.boots();
}

void ScheduleKept::check_none_skipped(const MonitoredJob& job, JobSchedule& j, TimeMs s,
                                      const TraceEvent& e, std::size_t i, Violations& out) {
  // on_handout returns before this for a job without a readable schedule.
  REHEARSE_ASSERT(job.cron.has_value());
  TimeMs prev = j.last_slot.value_or(start_ms_ - 1);
  // A boot that cannot read its store starts the schedule from its clock,
  // which a step back may have set before the run's start.
  if (!j.last_slot && s < start_ms_ && context_.wall_clock.stepped()) prev = s - 1;
  if (s <= prev) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {}: slot {} handed out after the later slot {}", e.job,
                               format_instant(s), format_instant(prev))});
    return;
  }
  // Firings that fell while the process was down before a blind boot are
  // unknowable (the boot could not read the last slot handed out).
  for (TimeMs from = prev;;) {
    const auto skipped = job.cron->between(from, s - 1, 1);
    if (skipped.empty()) return;
    // between() answers strictly after `from`: the search moves forward.
    REHEARSE_ASSERT_GT(skipped.front(), from);
    if (!context_.process.in_blind_window(skipped.front(), context_.wall_clock)) {
      out.push_back({kName, i, e.t,
                     fmt::format("job {}: regular slot {} was skipped (never handed out nor "
                                 "coalesced; next handed out: {})",
                                 e.job, format_instant(skipped.front()), format_instant(s))});
      return;
    }
    from = skipped.front();
  }
}

// The job's durable write after a hand-out: the misfire counted exactly the
// folded firings (`coalesced_slots` grew by that many), and next_run_at is
// the schedule's first firing after the hand-out. Not judged while the store
// refuses writes (it writes nothing).
void ScheduleKept::check_durable_row(const TraceEvent& e, std::size_t i, Violations& out) {
  if (context_.jobs.find(e.job) == nullptr) return;
  const auto found = jobs_.find(e.job);
  REHEARSE_ASSERT(found != jobs_.end());
  JobSchedule& j = found->second;
  const bool refused = context_.process.store_refused();
  const nlohmann::json* count = field(e, "coalesced_slots");
  if (count == nullptr || !count->is_number_integer()) return;  // not a state row
  const std::int64_t coalesced = count->get<std::int64_t>();
  const std::int64_t before = std::exchange(j.durable_coalesced, coalesced);
  const ProcessTracker& process = context_.process;
  if (process.store_damaged() || (process.boot_blind() && j.pending_boot != process.boots())) {
    // Read from damaged files (the world's reading of what survived the
    // damage, not a write owed to a hand-out), or a row owed before a blind
    // boot: the write may be lost with the damaged records.
    j.pending_misfire.reset();
    j.pending_next.reset();
    return;
  }
  if (j.pending_misfire && !refused) {
    const std::int64_t want = j.pending_misfire->coalesced;
    if (coalesced - before != want) {
      out.push_back(
          {kName, i, e.t,
           fmt::format("job {}: the late run of {} records {} coalesced slots, the "
                       "schedule had {} more due by then",
                       e.job, format_instant(j.pending_misfire->slot), coalesced - before, want)});
    }
    j.pending_misfire.reset();
  }
  if (!j.pending_next || refused) return;
  const JobSchedule::PendingNext want = *j.pending_next;
  j.pending_next.reset();
  const nlohmann::json* got = field(e, "next_run_at");
  std::optional<TimeMs> got_next;
  if (got != nullptr && got->is_string()) {
    auto t = parse_instant(got->get<std::string>());
    if (t.ok()) got_next = *t;
  }
  if (got_next == want.next) return;
  // The worker went down between the hand-out's queue add and its state
  // write: a row of a later boot (e.g. a replayed intent's) that still shows
  // the slot as next is the state from before the hand-out, which that boot
  // does again (its queue add re-arms the check). E.g. a torn write cut the
  // hand-out's journal record.
  if (j.pending_boot != process.boots() && got_next == want.slot) return;
  out.push_back(
      {kName, i, e.t,
       fmt::format("job {}: next_run_at is {} after handing out {}, the schedule's "
                   "next slot is {}",
                   e.job, got_next ? format_instant(*got_next) : "none", format_instant(want.slot),
                   want.next ? format_instant(*want.next) : "none")});
}

// A job whose environment override is set but empty, or no valid cron, has
// no schedule at all (a config error, never a fallback to the default); any
// queue entry for it (the queue's own record) fires.
void ScheduleKept::check_never_runs(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "queue_add" || !e.flag("added")) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  if (job == nullptr || !job->never_runs) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {}: {}, so it must never run, yet slot {} was queued", e.job,
                             job->never_runs_why, slot_text(e.slot))});
}

// From the queue's own record, whatever the core logs about the slot: a
// regular slot is a firing of the effective schedule (the monitor's own
// matcher), queued due at that firing.
void ScheduleKept::check_due_at_firing(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "queue_add" || e.str("kind") != "regular" || !e.flag("added") || !e.slot) return;
  const MonitoredJob* job = context_.jobs.find(e.job);
  const std::vector<TimeMs> firing = job != nullptr && job->cron
                                         ? job->cron->between(*e.slot - 1, *e.slot, 1)
                                         : std::vector<TimeMs>{};
  // The matcher's window (slot - 1 ms, slot] holds the slot or nothing.
  REHEARSE_ASSERT(firing.empty() || firing.front() == *e.slot);
  if (job != nullptr && job->cron && firing.empty()) {
    out.push_back({kName, i, e.t,
                   fmt::format("job {}: slot {} was queued, but the schedule does not fire then",
                               e.job, slot_text(e.slot))});
    return;
  }
  const auto ready = parse_instant(e.str("ready_at"));
  if (!ready.ok() || *ready == *e.slot) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {}: slot {} was queued due at {}, not at its firing", e.job,
                             slot_text(e.slot), format_instant(*ready))});
}

// End: a late run whose misfire was never recorded; and while the process is
// up, every firing before the end has been handed out (slots due while it is
// down come late, after it boots: those are in flight).
Violations ScheduleKept::finish(TimeMs until_ms) {
  Violations out;
  const std::size_t end = context_.events_seen;
  const ProcessTracker& process = context_.process;
  for (auto& [id, j] : jobs_) {
    if (j.pending_misfire && j.pending_misfire->coalesced > 0) {
      out.push_back(
          {kName, end, until_ms,
           fmt::format("job {}: {} slots after {} were folded into its late run without "
                       "a misfire record",
                       id, j.pending_misfire->coalesced, format_instant(j.pending_misfire->slot))});
      j.pending_misfire.reset();
    }
    const MonitoredJob* job = context_.jobs.find(id);
    // jobs_ holds the table's jobs only.
    REHEARSE_ASSERT(job != nullptr);
    if (job->cron && process.up() && process.boot_t() && *process.boot_t() < until_ms) {
      const TimeMs prev = j.last_slot.value_or(start_ms_ - 1);
      const WallClockTable& clock = context_.wall_clock;
      const auto missed = job->cron->between(std::max(prev, clock.wall(*process.boot_t())),
                                             clock.wall(until_ms) - 1, 1);
      if (!missed.empty()) {
        out.push_back({kName, end, until_ms,
                       fmt::format("job {}: regular slot {} was never handed out", id,
                                   format_instant(missed.front()))});
      }
    }
  }
  return out;
}

}  // namespace rehearse::sim
