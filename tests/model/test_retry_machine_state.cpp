// Goal: the retry state machine, driven the way a scheduler loop drives it
// (regular slots coming due, runs failing and succeeding, retries coming due,
// crashes and restarts with the state surviving), agrees after every step
// with an independent model of docs/semantics.md §2 and §4.
// Method: RapidCheck stateful testing (rc::state). The model below restates
// the rules in its own terms: a row, per-slot budgets or one episode budget,
// one pending retry per episode, stall counts, the hourly grid and BullMQ's
// backoff formula written out again. It calls nothing from model/ except to
// build inputs (the policy JSON is parsed for the system under test only).
// The system under test is the real machine plus a minimal driver (a durable
// retry queue, a worker with concurrency 1, a queue of regular slots waiting
// for it). Random policies of all forms, both budget scopes, jitter, and
// invalid policies. After every command the test compares status, count,
// next_action, next_retry_at, failure class, the per-slot records, pending
// retries, next_run_at, misfire totals and the notifications emitted.
#include <gtest/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "model/retry_machine.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

constexpr std::int64_t kHour = 3'600'000;  // the grid, in ms (restated, not imported)
constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kStart = 493'608 * kHour;  // 2026-04-24T00:00:00Z, on the grid

// SplitMix64, shared by construction: the SUT draws through RandomSource and
// the model keeps its own copy of the same stream.
struct SplitMix {
  std::uint64_t state = 0;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
};

class SplitMixRandom : public RandomSource {
 public:
  explicit SplitMixRandom(std::uint64_t seed) { mix_.state = seed; }
  std::uint64_t next_u64() override { return mix_.next(); }

 private:
  SplitMix mix_;
};

// ---------------------------------------------------------------- the model

// What the generator chose, in the model's own words.
struct ModelPolicy {
  bool valid = true;
  int max = 0;
  bool exponential = false;
  std::int64_t delay = 0;
  double jitter = 0.0;
  std::vector<bool> retries_class = std::vector<bool>(kFailureClassCount, false);
  bool per_slot = false;
};

struct ModelRow {
  RetryStatus status = RetryStatus::ok;
  int count = 0;
  std::optional<std::int64_t> retry_at;
  NextAction action = NextAction::none;
  std::optional<FailureClass> cls;

  bool operator==(const ModelRow&) const = default;
};

struct ModelNote {
  NotificationEvent event = NotificationEvent::recovered;
  std::optional<FailureClass> cls;
  int attempt = 0;
  NextAction action = NextAction::none;
  std::int64_t at = 0;
  std::optional<std::int64_t> slot;

  bool operator==(const ModelNote&) const = default;
};

struct ModelRun {
  std::int64_t slot = 0;
  bool retry = false;

  bool operator==(const ModelRun&) const = default;
};

struct Model {
  ModelPolicy policy;
  std::int64_t now = kStart;
  std::int64_t next_slot = kStart;
  bool down = false;
  bool foreign_busy = false;  // another job holds the worker (concurrency 1)
  std::optional<ModelRun> active;
  std::deque<std::int64_t> queued;  // regular slots waiting for the worker

  ModelRow row;
  std::map<std::int64_t, ModelRow> budgets;  // per_slot: slots with a retry pending or running
  std::optional<std::pair<std::int64_t, std::int64_t>> episode_pending;  // per_episode (slot, at)
  std::map<std::int64_t, int> stalls;  // stall count of the run of each slot

  int misfire_runs = 0;
  int coalesced = 0;
  std::int64_t max_late = 0;
  SplitMix random;
  std::vector<ModelNote> notes;  // emitted by the last command

  // Pending retries as (slot, at), whatever the scope.
  std::vector<std::pair<std::int64_t, std::int64_t>> pending() const {
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    if (policy.per_slot) {
      for (const auto& [slot, b] : budgets) {
        if (b.action == NextAction::retry && b.retry_at) out.emplace_back(slot, *b.retry_at);
      }
    } else if (episode_pending) {
      out.push_back(*episode_pending);
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
    return out;
  }
};

// BullMQ's delay for the n-th failure, restated with integer doubling and
// the jitter formula written out.
std::int64_t model_delay(Model& m, int n) {
  std::int64_t max_delay = m.policy.delay;
  if (m.policy.exponential) {
    for (int i = 1; i < n; ++i) max_delay *= 2;  // delays here stay far below overflow
  }
  if (m.policy.jitter <= 0.0) return max_delay;
  const double rand = static_cast<double>(m.random.next() >> 11) / 9007199254740992.0;
  const double mx = static_cast<double>(max_delay);
  return static_cast<std::int64_t>(
      std::floor(rand * mx * m.policy.jitter + mx * (1.0 - m.policy.jitter)));
}

void model_note(Model& m, NotificationEvent e, std::optional<FailureClass> cls, int attempt,
                NextAction action, std::int64_t slot) {
  m.notes.push_back(ModelNote{e, cls, attempt, action, m.now, slot});
}

// per_episode: a regular run coming due (or starting) takes a pending retry's place.
void model_supersede(Model& m) {
  if (m.policy.per_slot || !m.policy.valid || !m.episode_pending) return;
  m.episode_pending.reset();
  if (m.row.action == NextAction::retry && m.row.retry_at) {
    m.row.retry_at.reset();
    m.row.action = NextAction::wait_next_run;
  }
}

void model_start(Model& m, ModelRun run) {
  m.active = run;
  if (run.retry) {
    if (m.policy.per_slot) {
      ModelRow& b = m.budgets.at(run.slot);
      b.retry_at.reset();
      m.row = b;
    } else {
      m.episode_pending.reset();
      m.row.retry_at.reset();
    }
  } else {
    model_supersede(m);
  }
}

bool worker_free(const Model& m) { return !m.active && !m.foreign_busy; }

// The worker frees up: the earliest due of the queued regular slots and the
// retries already due starts (a regular slot first on a tie).
void model_dispatch(Model& m) {
  if (!worker_free(m)) return;
  const auto p = m.pending();
  const bool retry_ready = !p.empty() && p.front().second <= m.now;
  if (!m.queued.empty() && (!retry_ready || m.queued.front() <= p.front().second)) {
    const std::int64_t slot = m.queued.front();
    m.queued.pop_front();
    model_start(m, ModelRun{slot, false});
  } else if (retry_ready) {
    model_start(m, ModelRun{p.front().first, true});
  }
}

// The failure rules of docs/semantics.md §4, restated. `forced` marks a run
// failed by stalling (permanent whatever its class).
void model_fail(Model& m, FailureClass cls, bool forced) {
  const ModelRun run = *m.active;
  m.active.reset();
  m.stalls.erase(run.slot);
  const bool scoped_per_slot = m.policy.valid && m.policy.per_slot;
  int before = m.row.count;
  if (scoped_per_slot) {
    const auto it = m.budgets.find(run.slot);
    before = it == m.budgets.end() ? 0 : it->second.count;
  }
  if (!scoped_per_slot) m.episode_pending.reset();
  ModelRow r;
  r.cls = cls;
  const bool retryable =
      m.policy.valid && !forced && m.policy.retries_class[static_cast<std::size_t>(cls)];
  if (!retryable) {
    r = ModelRow{RetryStatus::failed, before, std::nullopt, NextAction::manual_review, cls};
    m.budgets.erase(run.slot);
    model_note(m, NotificationEvent::failed_permanent, cls, before, NextAction::manual_review,
               run.slot);
  } else if (before >= m.policy.max) {
    r = ModelRow{RetryStatus::retry_exhausted, before, std::nullopt, NextAction::wait_next_run,
                 cls};
    m.budgets.erase(run.slot);
    model_note(m, NotificationEvent::retry_exhausted, cls, before, NextAction::wait_next_run,
               run.slot);
  } else {
    const int n = before + 1;
    const std::int64_t at = m.now + model_delay(m, n);
    r = ModelRow{RetryStatus::retrying, n, at, NextAction::retry, cls};
    if (scoped_per_slot) {
      m.budgets[run.slot] = r;
    } else {
      m.episode_pending = std::make_pair(run.slot, at);
    }
    model_note(m, NotificationEvent::retry_scheduled, cls, n, NextAction::retry, run.slot);
  }
  m.row = r;
}

void model_succeed(Model& m) {
  const ModelRun run = *m.active;
  m.active.reset();
  m.stalls.erase(run.slot);
  const bool was_failing = m.row.status != RetryStatus::ok;
  int taken = m.row.count;
  if (m.policy.valid && m.policy.per_slot) {
    const auto it = m.budgets.find(run.slot);
    taken = it == m.budgets.end() ? 0 : it->second.count;
    m.budgets.erase(run.slot);
  } else {
    m.episode_pending.reset();
  }
  const std::optional<FailureClass> previous = m.row.cls;
  m.row = ModelRow{};
  if (was_failing)
    model_note(m, NotificationEvent::recovered, previous, taken, NextAction::none, run.slot);
}

// -------------------------------------------------------- system under test

struct Sut {
  PolicyOrError policy = make_error(ErrorCode::internal, "unset");
  JobState state;
  SplitMixRandom random{0};
  TimeMs now = kStart;
  bool down = false;
  bool foreign_busy = false;
  std::optional<RunRef> active;
  std::deque<TimeMs> queued;
  std::vector<RetryRef> retry_queue;  // the durable queue's delayed retries
  std::vector<Notification> notes;

  NextSlotFn next_slot = [](TimeMs t) -> Result<TimeMs> { return (t / kHour + 1) * kHour; };

  void take(Transition t) {
    notes.insert(notes.end(), t.notifications.begin(), t.notifications.end());
    for (const RetryRef& c : t.cancelled_retries) {
      const auto it = std::find(retry_queue.begin(), retry_queue.end(), c);
      RC_ASSERT(it != retry_queue.end());  // the machine only cancels what it scheduled
      retry_queue.erase(it);
    }
    if (t.scheduled_retry) retry_queue.push_back(*t.scheduled_retry);
    state = std::move(t.state);
  }
  void start(const RunRef& run) {
    active = run;
    take(on_run_started(policy, state, run, now));
  }
  std::vector<RetryRef>::iterator earliest_retry() {
    return std::min_element(retry_queue.begin(), retry_queue.end(),
                            [](const RetryRef& a, const RetryRef& b) {
                              return a.at != b.at ? a.at < b.at : a.slot < b.slot;
                            });
  }
  void start_retry(std::vector<RetryRef>::iterator it) {
    const RetryRef r = *it;
    retry_queue.erase(it);
    start(RunRef{r.slot, RunKind::retry});
  }
  void dispatch() {
    if (active || foreign_busy) return;
    const auto it = earliest_retry();
    const bool retry_ready = it != retry_queue.end() && it->at <= now;
    if (!queued.empty() && (!retry_ready || queued.front() <= it->at)) {
      const TimeMs slot = queued.front();
      queued.pop_front();
      start(RunRef{slot, RunKind::regular});
    } else if (retry_ready) {
      start_retry(it);
    }
  }
  void hand_out_due_slot() {
    auto step = take_due_slot(state, next_slot, now);
    RC_ASSERT(step.ok());
    state = step->state;
    if (!step->handout) return;
    const TimeMs slot = step->handout->slot;
    take(on_slot_due(policy, state, slot, now));
    queued.push_back(slot);
    dispatch();
  }
};

// ------------------------------------------------------------------ checks

void check_against(const Model& m, const Sut& sut) {
  const JobState& s = sut.state;
  RC_ASSERT(s.retry_status == m.row.status);
  RC_ASSERT(s.retry_count == m.row.count);
  RC_ASSERT(s.next_retry_at == m.row.retry_at);
  RC_ASSERT(s.next_action == m.row.action);
  RC_ASSERT(s.failure_class == m.row.cls);
  RC_ASSERT(s.retry_limit == (m.policy.valid ? m.policy.max : 0));
  RC_ASSERT(s.policy_error.empty() == m.policy.valid);
  // The regular schedule, whatever happened: its own next slot.
  RC_ASSERT(s.next_run_at == std::optional<TimeMs>(m.next_slot));
  RC_ASSERT(s.misfire_runs == m.misfire_runs);
  RC_ASSERT(s.coalesced_slots == m.coalesced);
  RC_ASSERT(s.max_lateness_ms == m.max_late);

  // Per-slot records: budgets (per_slot) and stall counts (both scopes).
  std::map<std::int64_t, int> stalls;
  for (const auto& [slot, rec] : s.slots) {
    RC_ASSERT(rec.slot == slot);
    if (rec.stalled_count > 0) stalls[slot] = rec.stalled_count;
    if (m.policy.valid && m.policy.per_slot && rec.retry_status != RetryStatus::ok) {
      const auto it = m.budgets.find(slot);
      RC_ASSERT(it != m.budgets.end());
      RC_ASSERT(rec.retry_status == it->second.status);
      RC_ASSERT(rec.retry_count == it->second.count);
      RC_ASSERT(rec.next_retry_at == it->second.retry_at);
      RC_ASSERT(rec.next_action == it->second.action);
      RC_ASSERT(rec.failure_class == it->second.cls);
    }
  }
  RC_ASSERT(stalls == m.stalls);
  if (m.policy.valid && m.policy.per_slot) {
    std::size_t budget_records = 0;
    for (const auto& [slot, rec] : s.slots) budget_records += rec.retry_status != RetryStatus::ok;
    RC_ASSERT(budget_records == m.budgets.size());
  }

  // Pending retries: the machine's records and the driver's queue agree
  // with the model (a retry is in the queue iff the state says pending).
  std::vector<std::pair<std::int64_t, std::int64_t>> pending_records;
  for (const auto& [slot, rec] : s.slots) {
    if (retry_pending(rec)) pending_records.emplace_back(slot, *rec.next_retry_at);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> queued_retries;
  for (const RetryRef& r : sut.retry_queue) queued_retries.emplace_back(r.slot, r.at);
  auto expected = m.pending();
  auto by_slot = [](auto v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  RC_ASSERT(by_slot(pending_records) == by_slot(expected));
  RC_ASSERT(by_slot(queued_retries) == by_slot(expected));

  // Notifications of this step, in order, with the fixed fields.
  RC_ASSERT(sut.notes.size() == m.notes.size());
  for (std::size_t i = 0; i < m.notes.size(); ++i) {
    const Notification& n = sut.notes[i];
    const ModelNote& e = m.notes[i];
    RC_ASSERT(n.event == e.event);
    RC_ASSERT(n.failure_class == e.cls);
    RC_ASSERT(n.attempt == e.attempt);
    RC_ASSERT(n.next_action == e.action);
    RC_ASSERT(n.at == e.at);
    RC_ASSERT(n.slot == e.slot);
    RC_ASSERT(n.job_id == "job");
    RC_ASSERT(n.next_retry_at.has_value() == (n.event == NotificationEvent::retry_scheduled));
  }
  // The driver's own bookkeeping matches the model's world.
  RC_ASSERT(sut.now == m.now);
  RC_ASSERT(sut.queued == m.queued);
  RC_ASSERT(sut.foreign_busy == m.foreign_busy);
  RC_ASSERT(sut.active.has_value() == m.active.has_value());
  if (m.active) {
    RC_ASSERT(sut.active->slot == m.active->slot);
    RC_ASSERT((sut.active->kind == RunKind::retry) == m.active->retry);
  }
  // The status view's badge is consistent with the row.
  const std::string b = badge(s);
  if (m.row.status == RetryStatus::ok) {
    RC_ASSERT(b.rfind("ok", 0) == 0);
  } else {
    RC_ASSERT(b.find(std::to_string(m.row.count) + "/" + std::to_string(s.retry_limit)) !=
              std::string::npos);
  }
}

// ---------------------------------------------------------------- commands

using Command = rc::state::Command<Model, Sut>;

// The next regular slot comes due (a run in progress keeps running; the slot waits).
struct SlotDue : Command {
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    if (worker_free(m)) {
      // RapidCheck's assertion macros decompose `a || b` and evaluate both
      // sides, so guarded conditions are computed first.
      const auto p = m.pending();
      const bool no_retry_due_first = p.empty() || p.front().second >= m.next_slot;
      RC_PRE(no_retry_due_first);
    }
  }
  void apply(Model& m) const override {
    m.notes.clear();
    m.now = m.next_slot;
    const std::int64_t slot = m.next_slot;
    m.next_slot += kHour;
    model_supersede(m);
    m.queued.push_back(slot);
    model_dispatch(m);
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    sut.now = *sut.state.next_run_at;
    sut.hand_out_due_slot();
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "SlotDue"; }
};

// The earliest pending retry comes due and the free worker starts it.
struct RetryDue : Command {
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    RC_PRE(worker_free(m));
    const auto p = m.pending();
    RC_PRE(!p.empty());
    RC_PRE(p.front().second <= m.next_slot);
  }
  void apply(Model& m) const override {
    m.notes.clear();
    const auto [slot, at] = m.pending().front();
    m.now = std::max(m.now, at);
    model_start(m, ModelRun{slot, true});
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    RC_ASSERT(!sut.retry_queue.empty());
    const auto it = sut.earliest_retry();
    sut.now = std::max(sut.now, it->at);
    sut.start_retry(it);
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "RetryDue"; }
};

struct RunFails : Command {
  FailureClass cls = *rc::gen::elementOf(all_failure_classes());

  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    RC_PRE(m.active.has_value());
  }
  void apply(Model& m) const override {
    m.notes.clear();
    model_fail(m, cls, false);
    model_dispatch(m);
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    const RunRef run = *sut.active;
    sut.active.reset();
    sut.take(on_run_failed(sut.policy, sut.state, run, cls, "boom", sut.now, &sut.random));
    sut.dispatch();
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "RunFails(" << to_string(cls) << ")"; }
};

struct RunSucceeds : Command {
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    RC_PRE(m.active.has_value());
  }
  void apply(Model& m) const override {
    m.notes.clear();
    model_succeed(m);
    model_dispatch(m);
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    const RunRef run = *sut.active;
    sut.active.reset();
    sut.take(on_run_succeeded(sut.policy, sut.state, run, sut.now));
    sut.dispatch();
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "RunSucceeds"; }
};

// Another job takes the free worker (concurrency 1): this job's slots queue
// behind it and its due retries wait.
struct ForeignJobStarts : Command {
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    RC_PRE(worker_free(m));
  }
  void apply(Model& m) const override {
    m.notes.clear();
    m.foreign_busy = true;
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    sut.foreign_busy = true;
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "ForeignJobStarts"; }
};

struct ForeignJobEnds : Command {
  void checkPreconditions(const Model& m) const override {
    RC_PRE(!m.down);
    RC_PRE(m.foreign_busy);
  }
  void apply(Model& m) const override {
    m.notes.clear();
    m.foreign_busy = false;
    model_dispatch(m);
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    sut.foreign_busy = false;
    sut.dispatch();
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "ForeignJobEnds"; }
};

// The process dies; the durable queue and the state file survive.
struct Crash : Command {
  void checkPreconditions(const Model& m) const override { RC_PRE(!m.down); }
  void apply(Model& m) const override {
    m.notes.clear();
    m.down = true;
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    sut.down = true;
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "Crash"; }
};

struct Restart : Command {
  std::int64_t down_for = *rc::gen::weightedOneOf<std::int64_t>(
      {{3, rc::gen::inRange<std::int64_t>(0, 90 * kMinute)},
       {1, rc::gen::inRange<std::int64_t>(0, 12 * kHour)},
       {1, rc::gen::element(std::int64_t{0}, kHour, 2 * kHour)}});

  void checkPreconditions(const Model& m) const override { RC_PRE(m.down); }
  void apply(Model& m) const override {
    m.notes.clear();
    m.down = false;
    m.now += down_for;
    if (m.active) {  // the run in flight stalled
      int& stalled = m.stalls[m.active->slot];
      if (stalled < 1) {
        stalled += 1;  // re-run once, same attempt
      } else {
        model_fail(m, FailureClass::unknown, true);
      }
    }
    if (m.next_slot <= m.now) {
      const std::int64_t slot = m.next_slot;
      const std::int64_t late = m.now - slot;
      const std::int64_t folded = late / kHour;  // later grid slots up to now
      m.next_slot = (m.now / kHour + 1) * kHour;
      if (late > 0 || folded > 0) {
        m.misfire_runs += 1;
        m.coalesced += static_cast<int>(folded);
        m.max_late = std::max(m.max_late, late);
      }
      model_supersede(m);
      m.queued.push_back(slot);
    }
    model_dispatch(m);
  }
  void run(const Model& s0, Sut& sut) const override {
    const Model s1 = nextState(s0);
    sut.notes.clear();
    sut.down = false;
    sut.now += down_for;
    sut.take(apply_policy(sut.policy, sut.state, sut.now));
    if (sut.active) {
      auto stalled = on_run_stalled(sut.policy, sut.state, *sut.active, sut.now);
      if (stalled.decision == StallDecision::fail) sut.active.reset();
      sut.take(std::move(stalled.transition));
    }
    sut.hand_out_due_slot();
    sut.dispatch();
    check_against(s1, sut);
  }
  void show(std::ostream& os) const override { os << "Restart(down " << down_for << " ms)"; }
};

// ------------------------------------------------------------ the property

struct GeneratedPolicy {
  json document;
  ModelPolicy model;
  bool low_frequency = false;
};

rc::Gen<GeneratedPolicy> policy_gen() {
  return rc::gen::exec([] {
    GeneratedPolicy g;
    ModelPolicy& mp = g.model;
    const int form = *rc::gen::weightedElement<int>({{3, 0}, {3, 1}, {2, 2}, {1, 3}});
    const int retries = *rc::gen::element(0, 1, 2, 3, 4);
    const bool exponential = *rc::gen::arbitrary<bool>();
    // Delays from well below to well above the hourly interval, odd ones too.
    const std::int64_t delay =
        *rc::gen::element(std::int64_t{1}, std::int64_t{999}, 59 * kMinute, 5 * kMinute,
                          30 * kMinute, kHour, 90 * kMinute, 3 * kHour + 7);
    std::vector<bool> classes(kFailureClassCount, false);
    json class_list = json::array();
    for (std::size_t i = 0; i < kFailureClassCount; ++i) {
      classes[i] = *rc::gen::arbitrary<bool>();
      if (classes[i]) class_list.push_back(to_string(static_cast<FailureClass>(i)));
    }
    const bool list_classes = *rc::gen::arbitrary<bool>();
    std::optional<bool> budget_per_slot;
    if (*rc::gen::arbitrary<bool>()) {
      budget_per_slot = *rc::gen::weightedElement<bool>({{1, true}, {2, false}});
    }
    json j;
    switch (form) {
      case 0: {  // per-job
        j = {{"max", retries}, {"reason", "generated"}};
        if (exponential || *rc::gen::arbitrary<bool>()) {
          j["backoff"] = {{"type", exponential ? "exponential" : "fixed"}, {"delay", delay}};
        } else {
          j["backoff_sec"] = delay / 1000;
        }
        mp.max = retries;
        mp.exponential = exponential;
        mp.delay = j.contains("backoff_sec") ? (delay / 1000) * 1000 : delay;
        // Table defaults: timeout, network, provider_5xx, rate_limit.
        mp.retries_class = {true, true, true, true, false, false, false, false, false};
        mp.per_slot = false;
        break;
      }
      case 1: {  // BullMQ
        const double jitter = *rc::gen::element(0.0, 0.0, 0.5, 1.0, 0.25);
        j = {{"attempts", retries + 1}};
        if (jitter > 0.0 || *rc::gen::arbitrary<bool>()) {
          j["backoff"] = {{"type", exponential ? "exponential" : "fixed"}, {"delay", delay}};
          if (jitter > 0.0) j["backoff"]["jitter"] = jitter;
          mp.jitter = jitter;
          mp.exponential = exponential;
        } else {
          j["backoff"] = delay;  // bare number: fixed
          mp.exponential = false;
        }
        mp.max = retries;
        mp.delay = delay;
        mp.retries_class = std::vector<bool>(kFailureClassCount, true);
        mp.per_slot = true;
        break;
      }
      case 2: {  // auto
        g.low_frequency = *rc::gen::arbitrary<bool>();
        j = "auto";
        mp.max = g.low_frequency ? 3 : 1;
        mp.exponential = true;
        mp.delay = g.low_frequency ? 30 * kMinute : kMinute;
        mp.retries_class = std::vector<bool>(kFailureClassCount, true);
        mp.per_slot = true;
        break;
      }
      default: {  // invalid: fail closed
        j = *rc::gen::element(json::parse(R"({"max": 2, "backoff_sec": -1})"),
                              json::parse(R"({"attempts": 3, "backoff": {"type": "quadratic",
                                              "delay": 1000}})"),
                              json::parse(R"({"max": 0})"), json(nullptr), json::object(),
                              json::parse(R"({"max": 1, "backoff_sec": 5, "retry": true})"));
        mp.valid = false;
        break;
      }
    }
    if (mp.valid && j.is_object()) {
      if (list_classes) {
        j["retryable_classes"] = class_list;
        mp.retries_class = classes;
      }
      if (budget_per_slot) {
        j["budget"] = *budget_per_slot ? "per_slot" : "per_episode";
        mp.per_slot = *budget_per_slot;
      }
    }
    g.document = j;
    return g;
  });
}

REHEARSE_PROP(RetryMachineState, AgreesWithTheModelAfterEveryCommand, ()) {
  const GeneratedPolicy g = *policy_gen();
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();

  Sut sut;
  sut.policy = parse_retry_policy(g.document, ScheduleFacts{"0 * * * *", g.low_frequency});
  RC_ASSERT(sut.policy.ok() == g.model.valid);
  sut.random = SplitMixRandom(seed);
  sut.state.job_id = "job";
  const Transition initial = apply_policy(sut.policy, sut.state, kStart);
  // policy_invalid, once, at load.
  RC_ASSERT(initial.notifications.size() == (g.model.valid ? 0U : 1U));
  if (!g.model.valid) {
    RC_ASSERT(initial.notifications[0].event == NotificationEvent::policy_invalid);
  }
  sut.state = initial.state;
  auto started = start_schedule(sut.state, sut.next_slot, kStart);
  RC_ASSERT(started.ok());
  sut.state = *started;

  Model model;
  model.policy = g.model;
  model.random.state = seed;

  RC_TAG(g.model.valid ? (g.model.per_slot ? "per_slot" : "per_episode") : "invalid");
  rc::state::check(
      model, sut,
      rc::state::gen::execOneOfWithArgs<SlotDue, SlotDue, RetryDue, RetryDue, RunFails, RunFails,
                                        RunFails, RunSucceeds, ForeignJobStarts, ForeignJobEnds,
                                        Crash, Restart>());
}

}  // namespace
}  // namespace rehearse
