#include "sim/monitors/slot_tracker.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

// A job's slots by fate (docs/monitors.md "Tallies").
struct SlotCounts {
  std::int64_t delivered = 0, skipped = 0, failed = 0, in_flight = 0, superseded = 0, coalesced = 0,
               exhausted = 0;

  void add(SlotState state) {
    const auto fates = [this] {
      return delivered + skipped + failed + in_flight + superseded + coalesced;
    };
    const std::int64_t before = fates();
    switch (state) {
      case SlotState::delivered: ++delivered; break;
      case SlotState::skipped: ++skipped; break;
      case SlotState::exhausted: ++failed, ++exhausted; break;
      case SlotState::failed_permanent:
      case SlotState::retry_dropped:
      case SlotState::failed: ++failed; break;
      case SlotState::superseded: ++superseded; break;
      case SlotState::coalesced: ++coalesced; break;
      default: ++in_flight; break;
    }
    // One fate per slot (an exhausted slot is also counted failed).
    REHEARSE_ASSERT_EQ(fates(), before + 1);
  }
};

// A slot's fate in the words of expect.jobs.<id>.slots (docs/scenario-format.md):
// the same grouping as the slot counts of the tallies.
const char* slot_outcome(SlotState state) {
  switch (state) {
    case SlotState::delivered: return "delivered";
    case SlotState::skipped: return "skipped";
    case SlotState::exhausted: return "exhausted";
    case SlotState::failed:
    case SlotState::failed_permanent:
    case SlotState::retry_dropped: return "failed";
    case SlotState::superseded: return "superseded";
    case SlotState::coalesced: return "coalesced";
    default: return "in_flight";
  }
}

// The states after which only a fault or a bug brings more events for the
// slot: a job without slot history keeps such a slot compactly.
bool finished(SlotState state) {
  switch (state) {
    case SlotState::delivered:
    case SlotState::skipped:
    case SlotState::exhausted:
    case SlotState::failed_permanent:
    case SlotState::retry_dropped:
    case SlotState::superseded:
    case SlotState::coalesced: return true;
    default:
      // An unfinished slot is in flight in the tallies' words, or failed awaiting a retry.
      REHEARSE_ASSERT(state == SlotState::failed ||
                      std::string_view(slot_outcome(state)) == "in_flight");
      return false;
  }
}

bool slot_before(const FinishedSlot& f, TimeMs slot) { return f.slot < slot; }

}  // namespace

const char* to_string(SlotState state) noexcept {
  switch (state) {
    case SlotState::handed: return "handed";
    case SlotState::running: return "running";
    case SlotState::failed: return "failed";
    case SlotState::retry_pending: return "retry_pending";
    case SlotState::marked_skipped: return "marked_skipped";
    case SlotState::delivered: return "delivered";
    case SlotState::skipped: return "skipped";
    case SlotState::exhausted: return "exhausted";
    case SlotState::failed_permanent: return "failed_permanent";
    case SlotState::retry_dropped: return "retry_dropped";
    case SlotState::superseded: return "superseded";
    case SlotState::coalesced: return "coalesced";
  }
  // Every state is named above: anything else is a corrupted SlotState.
  REHEARSE_UNREACHABLE();
}

SlotTracker::SlotTracker(const JobTable& jobs) : jobs_table_(jobs) {
  for (const auto& [id, config] : jobs.all()) {
    JobRuns runs;
    runs.slot_history = config.slot_history;
    jobs_[id] = runs;
  }
  // One entry per job of the table, and no other.
  REHEARSE_ASSERT_EQ(jobs_.size(), jobs.all().size());
}

bool SlotTracker::known(const std::string& job, TimeMs slot) const {
  return slots_.count({job, slot}) != 0 || find_finished(job, slot) != nullptr;
}

const SlotWatch* SlotTracker::find(const std::string& job, TimeMs slot) const {
  if (const auto it = slots_.find({job, slot}); it != slots_.end()) return &it->second;
  const FinishedSlot* f = find_finished(job, slot);
  if (f == nullptr) return nullptr;
  scratch_ = rebuilt(job, *f);
  // Only finished slots are kept compactly.
  REHEARSE_ASSERT(finished(scratch_.state));
  return &scratch_;
}

SlotWatch& SlotTracker::at(const std::string& job, TimeMs slot) {
  auto it = slots_.find({job, slot});
  if (it != slots_.end()) return it->second;
  SlotWatch w;
  w.job = job;
  w.slot = slot;
  if (const FinishedSlot* f = find_finished(job, slot); f != nullptr) {
    // Only a job without history keeps slots compactly, and only finished ones.
    REHEARSE_ASSERT(!history(job));
    REHEARSE_ASSERT(finished(f->state));
    w = rebuilt(job, *f);
    std::vector<FinishedSlot>& list = finished_.find(job)->second;
    list.erase(list.begin() + (f - list.data()));
  }
  // A slot lives in one place: the compact copy is gone once it is watched.
  REHEARSE_ASSERT(find_finished(job, slot) == nullptr);
  SlotWatch& out = slots_.emplace(std::make_pair(job, slot), std::move(w)).first->second;
  REHEARSE_ASSERT_EQ(out.job, job);
  REHEARSE_ASSERT_EQ(out.slot, slot);
  return out;
}

std::size_t SlotTracker::finished_compact() const noexcept {
  std::size_t n = 0;
  for (const auto& [job, list] : finished_) n += list.size();
  return n;
}

bool SlotTracker::history(const std::string& job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() || it->second.slot_history;
}

FinishedSlot* SlotTracker::find_finished(const std::string& job, TimeMs slot) {
  const auto f = finished_.find(job);
  if (f == finished_.end()) return nullptr;
  std::vector<FinishedSlot>& list = f->second;
  const auto at = std::lower_bound(list.begin(), list.end(), slot, slot_before);
  return at != list.end() && at->slot == slot ? &*at : nullptr;
}

const FinishedSlot* SlotTracker::find_finished(const std::string& job, TimeMs slot) const {
  return const_cast<SlotTracker*>(this)->find_finished(job, slot);
}

// Everything the monitors read of a slot; the rest (run and state indexes)
// only matters while a slot is unfinished.
SlotWatch SlotTracker::rebuilt(const std::string& job, const FinishedSlot& f) const {
  // A compact slot was settled by a job without slot history.
  REHEARSE_ASSERT(!history(job));
  SlotWatch w;
  w.job = job;
  w.slot = f.slot;
  w.state = f.state;
  w.runs = f.runs;
  w.stalled = f.stalled;
  if (f.has_failure) {
    REHEARSE_ASSERT_LT(f.failure_class, failure_classes_.size());
    w.last_failure_class = failure_classes_[f.failure_class];
    w.last_failure_t = f.last_failure_t;
  }
  return w;
}

// Failure classes are the core's few names; past 256 distinct ones a slot
// failing with a new one is not kept compactly.
std::optional<std::uint8_t> SlotTracker::class_index(const std::string& name) {
  const auto it = std::find(failure_classes_.begin(), failure_classes_.end(), name);
  if (it != failure_classes_.end()) return static_cast<std::uint8_t>(it - failure_classes_.begin());
  if (failure_classes_.size() > 255) return std::nullopt;
  failure_classes_.push_back(name);
  // At most 256 names, so every index fits FinishedSlot's byte.
  REHEARSE_ASSERT_LE(failure_classes_.size(), 256u);
  return static_cast<std::uint8_t>(failure_classes_.size() - 1);
}

void SlotTracker::settle(const std::string& job, TimeMs slot) {
  if (history(job)) return;
  const auto it = slots_.find({job, slot});
  if (it == slots_.end() || !finished(it->second.state)) return;
  const SlotWatch& w = it->second;
  FinishedSlot f;
  f.slot = slot;
  f.runs = w.runs;
  f.state = w.state;
  f.stalled = w.stalled;
  if (w.last_failure_class && w.last_failure_t) {
    const auto cls = class_index(*w.last_failure_class);
    if (!cls) return;  // kept whole
    f.has_failure = true;
    f.failure_class = *cls;
    f.last_failure_t = *w.last_failure_t;
  }
  std::vector<FinishedSlot>& list = finished_[job];
  // at() took any compact copy out, so the slot is not in the list yet.
  const auto place = std::lower_bound(list.begin(), list.end(), slot, slot_before);
  REHEARSE_ASSERT(place == list.end() || place->slot != slot);
  const auto inserted = list.insert(place, f);
  // The list stays in strict slot order (find_finished bisects it).
  REHEARSE_ASSERT(inserted == list.begin() || std::prev(inserted)->slot < slot);
  REHEARSE_ASSERT(std::next(inserted) == list.end() || std::next(inserted)->slot > slot);
  slots_.erase(it);
}

const JobRuns* SlotTracker::job(const std::string& id) const {
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void SlotTracker::count_notification(const TraceEvent& notice) {
  if (!notice.slot || !history(notice.job)) return;
  if (const auto it = slots_.find({notice.job, *notice.slot}); it != slots_.end()) {
    ++it->second.notifications[notice.type];
  }
}

void SlotTracker::mark_coalesced(const std::string& job, TimeMs carrier,
                                 const std::vector<TimeMs>& folded, std::size_t i) {
  constexpr std::size_t kListed = 100;
  for (std::size_t k = 0; k < folded.size() && k < kListed; ++k) {
    if (known(job, folded[k])) continue;
    SlotWatch& w = at(job, folded[k]);
    // Only a slot never seen becomes coalesced: handed, never run.
    REHEARSE_ASSERT(w.state == SlotState::handed);
    REHEARSE_ASSERT_EQ(w.runs, 0);
    w.carried_by = carrier;
    w.state = SlotState::coalesced;
    w.handed_index = i;
    settle(job, folded[k]);
  }
}

void SlotTracker::observe(const TraceEvent& e, std::size_t i) {
  observe_event(e, i);
  if (e.slot && !e.job.empty()) settle(e.job, *e.slot);
  // A job with slot history keeps every slot watched, never compactly.
  if (e.slot && !e.job.empty() && history(e.job)) {
    REHEARSE_ASSERT(find_finished(e.job, *e.slot) == nullptr);
  }
}

void SlotTracker::observe_event(const TraceEvent& e, std::size_t i) {
  if (e.type == "durable_job_state") return note_durable_state(e);
  if (e.type == "durable_delivery") {
    if (e.slot && !e.job.empty()) note_ledger(e, i);
    return;
  }
  const auto it = jobs_.find(e.job);
  if (it == jobs_.end() || !e.slot) return;
  JobRuns& j = it->second;
  auto set = [&](SlotState state) {
    SlotWatch& w = at(e.job, *e.slot);
    w.state = state;
    w.state_index = i;
    w.state_t = e.t;
  };
  const std::string& type = e.type;
  if (type == "queue_take") {
    // A run of a delivering job's slot begins: the slot is known from here.
    if (const MonitoredJob* c = jobs_table_.find(e.job); c != nullptr && c->delivers)
      at(e.job, *e.slot);
  } else if (type == "queue_add" && e.str("kind") == "regular") {
    SlotWatch& w = at(e.job, *e.slot);
    if (w.state == SlotState::handed && w.state_index == 0) {
      w.handed_index = i;
      set(SlotState::handed);
    }
  } else if (type == "run_started") {
    on_run_started(e, i, j);
  } else if (type == "run_finished") {
    on_run_finished(e, i, j);
  } else if (type == "retry_scheduled") {
    set(SlotState::retry_pending);
    j.final_status = "retrying";
  } else if (type == "retry_exhausted") {
    set(SlotState::exhausted);
    j.final_status = "retry_exhausted";
  } else if (type == "failed_permanent") {
    set(SlotState::failed_permanent);
    j.final_status = "failed";
  } else if (type == "retry_dropped") {
    // A queued retry the scheduler dropped because the store could not be
    // trusted: the slot ends failed, visibly (this event, state_corrupt).
    set(SlotState::retry_dropped);
    j.final_status = "failed";
  } else if (type == "retry_superseded") {
    const SlotState s = at(e.job, *e.slot).state;
    if (s == SlotState::retry_pending || s == SlotState::failed) set(SlotState::superseded);
  }
}

void SlotTracker::on_run_started(const TraceEvent& e, std::size_t i, JobRuns& j) {
  SlotWatch& w = at(e.job, *e.slot);
  ++j.runs;
  if (e.str("kind") == "regular")
    j.max_delay_ms = std::max<DurationMs>(j.max_delay_ms, e.t - *e.slot);
  w.run_index = i;
  ++w.runs;
  if (j.slot_history) w.attempt_at.push_back(e.t);
  // The job's runs include every run of each of its slots; with history
  // each run of the slot has its start listed.
  REHEARSE_ASSERT_GE(w.runs, 1);
  REHEARSE_ASSERT_GE(j.runs, w.runs);
  if (j.slot_history) REHEARSE_ASSERT_EQ(w.attempt_at.size(), w.runs);
  // The start is read when the run ends: a marker written meanwhile stays.
  if (w.state != SlotState::marked_skipped) {
    w.state = SlotState::running;
    w.state_index = i;
    w.state_t = e.t;
  }
}

void SlotTracker::on_run_finished(const TraceEvent& e, std::size_t i, JobRuns& j) {
  SlotWatch& w = at(e.job, *e.slot);
  w.stalled = false;
  const std::string outcome = e.str("outcome");
  SlotState next = SlotState::failed;
  if (outcome == "failure") {
    const std::string cls = e.str("failure_class", "unknown");
    w.last_failure_class = cls;
    w.last_failure_t = e.t;
    j.last_failure_class = cls;
    j.last_failure_t = e.t;
  } else {
    const bool marked = w.state == SlotState::marked_skipped;
    next = outcome == "skipped" || marked ? SlotState::skipped : SlotState::delivered;
    j.last_failure_class.reset();
    j.final_status = "ok";
  }
  // A finished run leaves the slot failed, skipped or delivered, no other.
  REHEARSE_ASSERT(next == SlotState::failed || next == SlotState::skipped ||
                  next == SlotState::delivered);
  REHEARSE_ASSERT_EQ(next == SlotState::failed, outcome == "failure");
  w.state = next;
  w.state_index = i;
  w.state_t = e.t;
}

// The job's durable state as the world read it: a slot whose durable record
// shows a stall (stalled_count >= 1) may fail permanently on the next stall
// whatever its budget (docs/semantics.md §5).
void SlotTracker::note_durable_state(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "durable_job_state");
  if (jobs_.count(e.job) == 0) return;
  const auto it = e.data.find("slots");
  if (it == e.data.end() || !it->is_object()) return;
  for (const auto& [key, record] : it->items()) {
    const auto t = parse_instant(key);
    if (!t.ok() || !record.is_object()) continue;
    const json stalled = record.value("stalled_count", json(0));
    if (!stalled.is_number_integer() || stalled.get<std::int64_t>() < 1) continue;
    if (FinishedSlot* f = find_finished(e.job, *t); f != nullptr) {
      f->stalled = true;
    } else {
      at(e.job, *t).stalled = true;
    }
  }
}

// The delivery ledger as the world read it (`durable_delivery`): a marker
// with the verdict skipped marks the slot skipped.
void SlotTracker::note_ledger(const TraceEvent& e, std::size_t i) {
  // observe_event reads a ledger record only when it names a job's slot.
  REHEARSE_ASSERT(e.slot.has_value() && !e.job.empty());
  SlotWatch& w = at(e.job, *e.slot);
  const auto verdict = e.data.find("verdict");
  if (verdict != e.data.end() && verdict->is_string() && verdict->get<std::string>() == "skipped") {
    w.state = SlotState::marked_skipped;
    w.state_index = i;
    w.state_t = e.t;
  }
}

std::vector<SlotRecord> SlotTracker::records() const {
  std::vector<SlotRecord> out;
  out.reserve(slots_.size() + finished_compact());
  for (const auto& [key, s] : slots_) {
    out.push_back({s.job, s.slot, s.state, s.runs, s.last_failure_class});
  }
  for (const auto& [job, list] : finished_) {
    for (const FinishedSlot& f : list) {
      const SlotWatch w = rebuilt(job, f);
      out.push_back({job, f.slot, f.state, f.runs, w.last_failure_class});
    }
  }
  std::sort(out.begin(), out.end(), [](const SlotRecord& a, const SlotRecord& b) {
    return std::tie(a.job, a.slot) < std::tie(b.job, b.slot);
  });
  // A slot is watched or compact, never both: no (job, slot) twice.
  for (std::size_t k = 1; k < out.size(); ++k) {
    REHEARSE_ASSERT(std::tie(out[k - 1].job, out[k - 1].slot) < std::tie(out[k].job, out[k].slot));
  }
  return out;
}

// One entry per slot of `job` the tracker saw, in time order.
json SlotTracker::slot_list(const std::string& job) const {
  json list = json::array();
  // slots_ is keyed by (job, slot): the job's slots are one run of the map.
  for (auto it = slots_.lower_bound({job, std::numeric_limits<TimeMs>::min()});
       it != slots_.end() && it->first.first == job; ++it) {
    const SlotWatch& s = it->second;
    // With slot history every run's start is listed (on_run_started).
    if (history(job)) REHEARSE_ASSERT_EQ(s.attempt_at.size(), s.runs);
    json at = json::array();

    for (const TimeMs t : s.attempt_at) at.push_back(format_instant(t));
    json notes = json::object();
    for (const auto& [ev, n] : s.notifications) notes[ev] = n;
    list.push_back({{"slot", format_instant(s.slot)},
                    {"outcome", slot_outcome(s.state)},
                    {"attempts", s.attempt_at.size()},
                    {"attempt_at", std::move(at)},
                    {"notifications", std::move(notes)}});
  }
  return list;
}

// O(jobs + slots): the slots are keyed by (job, slot), so each job's slots
// are one run of the map, counted in one pass; then the compact ones.
void SlotTracker::tally(json& tallies) const {
  std::map<std::string, SlotCounts> counts;
  for (const auto& [key, s] : slots_) counts[key.first].add(s.state);
  for (const auto& [job, list] : finished_) {
    for (const FinishedSlot& f : list) counts[job].add(f.state);
  }
  for (const auto& [id, j] : jobs_) {
    const SlotCounts c = counts.count(id) != 0 ? counts.at(id) : SlotCounts{};
    // Counters only go up, and exhausted slots are among the failed ones.
    REHEARSE_ASSERT_GE(c.in_flight, 0);
    REHEARSE_ASSERT_LE(c.exhausted, c.failed);
    REHEARSE_ASSERT_GE(j.runs, 0);
    json& o = tallies["jobs"][id];
    o["delivered_slots"] = c.delivered;
    o["skipped_slots"] = c.skipped;
    o["failed_slots"] = c.failed;
    o["in_flight_slots"] = c.in_flight;
    o["superseded_slots"] = c.superseded;
    o["coalesced_slots"] = c.coalesced;
    o["exhausted_slots"] = c.exhausted;
    o["runs"] = j.runs;
    o["final_status"] = j.final_status;
    o["max_delay_ms"] = j.max_delay_ms;
    if (j.slot_history) o["slots"] = slot_list(id);
  }
}

}  // namespace rehearse::sim
