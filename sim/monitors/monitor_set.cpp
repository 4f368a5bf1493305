#include "sim/monitors/monitor_set.hpp"

#include <algorithm>
#include <utility>

#include "model/assert.hpp"
#include "sim/monitors/context.hpp"
#include "sim/monitors/no_secret_leak.hpp"
#include "sim/monitors/run_facts.hpp"
#include "sim/monitors/state_durable.hpp"

namespace rehearse::sim {

namespace {

void append(Violations& out, Violations more) {
  for (Violation& v : more) out.push_back(std::move(v));
}

}  // namespace

MonitorSet::MonitorSet(const Scenario& scenario) : MonitorSet(scenario, monitor_registry()) {}

MonitorSet::MonitorSet(const Scenario& scenario, const std::vector<MonitorFactory>& registry)
    : context_(std::make_unique<MonitorContext>(scenario)),
      facts_(std::make_unique<RunFacts>(context_->process, context_->jobs, scenario)) {
  subscribed_.insert(shared_reads().begin(), shared_reads().end());
  for (const MonitorFactory& factory : registry) {
    monitors_.push_back(factory.make(scenario, *context_));
    Monitor* m = monitors_.back().get();
    for (const std::string& type : factory.reads) {
      if (type == "*") {
        every_event_.push_back(m);
      } else {
        routes_[type].push_back(m);
        subscribed_.insert(type);
      }
    }
    if (auto* s = dynamic_cast<NoSecretLeak*>(m)) secrets_ = s;
    if (auto* s = dynamic_cast<StateDurable*>(m)) locks_ = s;
  }
  // One monitor per registry entry, each routed at most once per type it reads.
  REHEARSE_ASSERT_EQ(monitors_.size(), registry.size());
  REHEARSE_ASSERT_LE(every_event_.size(), monitors_.size());
}

MonitorSet::~MonitorSet() = default;
MonitorSet::MonitorSet(MonitorSet&&) noexcept = default;
MonitorSet& MonitorSet::operator=(MonitorSet&&) noexcept = default;

void MonitorSet::add_secret(std::string value) {
  if (secrets_ != nullptr) secrets_->add_secret(std::move(value));
}

void MonitorSet::add_locked_store(std::string dir) {
  if (locks_ != nullptr) locks_->add_locked_store(std::move(dir));
}

const WitnessPolicy* MonitorSet::policy_of(const std::string& job) const {
  const MonitoredJob* config = context_->jobs.find(job);
  return config == nullptr ? nullptr : &config->policy;
}

// One event: first the run finish the previous event left pending; then,
// when some monitor or tracker reads its type, the run facts it shows, the
// process's life, the notification it commits and the event itself; last
// the monitors that read every event.
std::optional<Violation> MonitorSet::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  ++context_->events_seen;
  if (e.type == "fault_start") context_->wall_clock.observe(e);
  if (std::optional<Fact> pending = facts_->settle_pending(e)) {
    dispatch(pending->event, pending->index, out);
  }
  if (subscribed_.count(e.type) != 0) {
    for (const Fact& fact : facts_->runs_of(e, i)) dispatch(fact.event, fact.index, out);
    if (is_process_event(e) || is_store_damage_event(e.type) || e.type == "outbox_add") {
      context_->process.observe(e, i);
      if (context_->process.came_up_at(i) && context_->process.boot_blind()) {
        context_->retry_count.rebase_after_blind_boot();
      }
    }
    if (const std::optional<TraceEvent> notice = facts_->notification_of(e)) {
      context_->calls.observe_notification(*notice);
      context_->slots.count_notification(*notice);
      context_->process.observe(*notice, i);
      dispatch(*notice, i, out);
    }
    dispatch(e, i, out);
  }
  for (Monitor* m : every_event_) append(out, m->observe(e, i));
  return report(std::move(out));
}

// An event or fact to the monitors that read its type (a fact: the type it
// is read from), then to the shared trackers, so that every monitor judges
// it against the state before it.
void MonitorSet::dispatch(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type == "service_call") context_->calls.observe_call(e);
  if (const auto route = routes_.find(fact_source(e.type)); route != routes_.end()) {
    for (Monitor* m : route->second) append(out, m->observe(e, i));
  }
  // Whether a retry add answers a new failure, read before the count takes it.
  const WitnessPolicy* policy = e.type == "queue_add" ? policy_of(e.job) : nullptr;
  const bool fresh =
      policy != nullptr && e.slot && context_->retry_count.fresh(e.job, *e.slot, policy->per_slot);
  context_->retry_count.observe(e);
  context_->slots.observe(e, i);
  context_->retry_after.observe(e);
  context_->budgets.observe(e, fresh);
}

// Keeps what one event showed; returns the first in the order of
// invariant_names(), so the answer does not depend on the order the monitors
// ran in.
std::optional<Violation> MonitorSet::report(Violations out) {
  if (out.empty()) return std::nullopt;
  const auto& names = invariant_names();

  std::stable_sort(out.begin(), out.end(), [&](const Violation& a, const Violation& b) {
    return std::find(names.begin(), names.end(), a.invariant) <
           std::find(names.begin(), names.end(), b.invariant);
  });
  for (const Violation& v : out) all_.push_back(v);
  return out.front();
}

std::optional<Violation> MonitorSet::observe_text(std::string_view text, std::size_t index,
                                                  TimeMs t) {
  if (secrets_ == nullptr) return std::nullopt;
  const Violations out = secrets_->observe_text(text, index, t);
  if (out.empty()) return std::nullopt;
  for (const Violation& v : out) all_.push_back(v);
  return out.front();
}

std::vector<Violation> MonitorSet::finish(TimeMs until_ms) {
  if (std::optional<Fact> pending = facts_->flush_pending()) {
    Violations last;
    dispatch(pending->event, pending->index, last);
    report(std::move(last));
  }
  Violations out;
  for (const auto& m : monitors_) append(out, m->finish(until_ms));
  for (const Violation& v : out) all_.push_back(v);
  return out;
}

std::vector<SlotRecord> MonitorSet::slot_records() const { return context_->slots.records(); }

nlohmann::json MonitorSet::slot_list(const std::string& job) const {
  return context_->slots.slot_list(job);
}

// The facade's counts, then each tracker's and each monitor's part.
nlohmann::json MonitorSet::tallies() const {
  using nlohmann::json;
  json t = {{"events", context_->events_seen},
            {"boots", context_->process.boots()},
            {"jobs", json::object()},
            {"items", json::object()},
            {"services", json::object()},
            {"notifications", json::object()},
            {"duplicate_deliveries_in_window", 0},
            {"failure_notices", 0},
            {"violations", all_.size()},
            {"unchecked", context_->jobs.unchecked()}};
  context_->calls.tally(t);
  context_->slots.tally(t);
  for (const auto& m : monitors_) m->tally(t);
  // The facade's own counts are its own: no tracker or monitor writes over them.
  REHEARSE_ASSERT(t.at("events") == context_->events_seen && t.at("violations") == all_.size());
  return t;
}

}  // namespace rehearse::sim
