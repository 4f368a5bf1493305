// What the world observes while it runs: violations, trace events, and its
// own readings of the durable files (sim/world/world_facts.hpp).
#include "sim/world/world_detail.hpp"

namespace rehearse::sim::world_detail {

// The jobs whose durable delivery ledger (the world's own reading) holds a
// slot later than the durable state's last slot for the job, or any slot of
// a job the state does not know: records the state lost, which the ledger
// proves (docs/scheduler.md, "Fail-closed modes"). Each as {job,
// ledger_slot, state_last_slot (null when none)}, in job order.
json World::ledger_ahead_of_state() const {
  std::map<std::string, TimeMs> ledger_last;
  for (const auto& [key, slot] : ledger_recorded_) {
    const auto t = parse_instant(key.second);
    if (!t.ok()) continue;
    auto [it, added] = ledger_last.emplace(key.first, *t);
    if (!added) it->second = std::max(it->second, *t);
  }
  DurableStateReader reader(state_reader_.dir());
  std::map<std::string, json> state;
  for (auto& [job, facts] : reader.changed(disk_, /*full=*/true)) state[job] = std::move(facts);
  json out = json::array();
  for (const auto& [job, ledger_slot] : ledger_last) {
    std::optional<TimeMs> state_last;
    if (const auto it = state.find(job); it != state.end()) {
      const json& last = it->second.value("last_slot", json());
      if (last.is_string()) {
        if (const auto t = parse_instant(last.get<std::string>()); t.ok()) state_last = *t;
      }
    }
    if (state_last && *state_last >= ledger_slot) continue;
    // Listed only when the ledger proves a record the state does not hold.
    REHEARSE_ASSERT(!state_last || *state_last < ledger_slot);
    out.push_back({{"job", job},
                   {"ledger_slot", format_instant(ledger_slot)},
                   {"state_last_slot", state_last ? json(format_instant(*state_last)) : json()}});
  }
  return out;
}

void World::on_violation(Violation violation) {
  ++violation_counts_[violation.invariant];
  if (all_violations_.size() < options_.max_violations) {
    all_violations_.push_back(violation);
  } else {
    ++violations_dropped_;
  }
  REHEARSE_ASSERT_LE(all_violations_.size(), options_.max_violations);
  if (fired_.count(violation.invariant) != 0) return;  // the first occurrence is the one reported
  fired_.insert(violation.invariant);
  const bool expected = expected_violations_.count(violation.invariant) != 0;
  const std::string reason =
      fmt::format("invariant {} violated at event {}: {}", violation.invariant,
                  violation.event_index, violation.message);
  violations_.push_back(std::move(violation));
  // One first occurrence per invariant; every occurrence is counted, kept
  // or dropped.
  REHEARSE_ASSERT_EQ(violations_.size(), fired_.size());
  REHEARSE_ASSERT_EQ(violation_counts_.size(), fired_.size());
  if (!expected && options_.stop_on_violation) sim_.stop(reason);
}

// Whether the worker's store is failing closed at the end, from world facts
// only: a `state_corrupt` notification the outbox received since the last
// boot, after the world damaged the state store's files (liveness does not
// judge jobs a store keeps from changing: docs/check.md).
void World::note_store_verdict(const TraceEvent& event) {
  const std::string& type = event.type;
  if (type == "store_corrupt_injected") {
    if (event.flag("applied")) store_damaged_ = true;
  } else if (type == "disk_corrupted" || type == "disk_torn_write") {
    const std::string path = event.str("path");
    const std::string_view dir = kWorldStateDir;
    if (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
        path[dir.size()] == '/') {
      store_damaged_ = true;
    }
  } else if (type == "process_boot") {
    store_reported_corrupt_ = false;
  } else if (type == "outbox_add" && event.str("event") == "state_corrupt") {
    store_reported_corrupt_ = store_damaged_;
  }
  // A damage once done stays done: a report of it never outlives it.
  REHEARSE_ASSERT(!store_reported_corrupt_ || store_damaged_);
}

void World::on_trace_event(const TraceEvent& event, std::size_t index) {
  REHEARSE_ASSERT(observer_ != nullptr);  // installed before this listener
  if (options_.trace_sink) options_.trace_sink(event, index);
  if (event.type == "queue_done") record_worker_mark(WorkerMarkKind::run_done, false);
  note_store_verdict(event);
  if (event.service == to_string(ServiceKind::messenger) &&
      (event.type == "message_delivered" || event.type == "message_refused")) {
    ++messenger_calls_;
  }
  // A token issued by the brokerage is a secret from the moment it exists.
  sync_secrets();
  observer_->observe(event, index);
  drain_monitor_violations();
  // Last: it may record events of its own (and `event` is not used after).
  std::vector<TraceEvent> tails = tail_watch_.events_after(disk_, event, sim_.now());
  if (event.type == "disk_rename" || event.type == "disk_fsync" || event.type == "disk_fsync_dir") {
    const std::string type = event.type;
    const std::string path = event.str(type == "disk_rename" ? "to" : "path");
    record_durable_stages();
    record_durable_facts(type, path);
  }
  for (TraceEvent& e : tails) trace_.record(std::move(e));
}

// The world's own reading of the state store and the delivery ledger
// (sim/world/world_facts.hpp): after the journal's fsync (its new records) or a
// directory fsync of the state directory (a compaction or a new journal:
// everything), each job whose durable facts changed gets a
// `durable_job_state`; a ledger file renamed into place gets its slots read
// once the ledger directory's fsync made the rename durable, and each slot
// whose facts changed gets a `durable_delivery`.
void World::record_durable_facts(const std::string& type, const std::string& path) {
  // Only the events that can make bytes or entries durable come here.
  REHEARSE_ASSERT(type == "disk_rename" || type == "disk_fsync" || type == "disk_fsync_dir");
  for (TraceEvent& e : state_reader_.events_after(disk_, type, path, sim_.now())) {
    trace_.record(std::move(e));
  }
  const std::string ledger_dir = kWorldLedgerDir;
  const bool in_ledger_dir = path.rfind(ledger_dir + "/", 0) == 0;
  if (type == "disk_rename" && in_ledger_dir) {
    ledger_renamed_.insert(path);
  } else if (type == "disk_fsync" && in_ledger_dir && path.ends_with(".ledger.journal")) {
    record_ledger_facts(path);  // an append made durable
  } else if (type == "disk_fsync_dir" && path == ledger_dir) {
    const std::set<std::string> files = std::move(ledger_renamed_);
    ledger_renamed_.clear();
    for (const std::string& file : files) record_ledger_facts(file);
  }
}

void World::record_ledger_facts(const std::string& file) {
  REHEARSE_ASSERT(file.starts_with(kWorldLedgerDir));  // a file of the ledger directory
  const std::string* bytes = disk_.durable_view(file);
  if (bytes == nullptr) return;
  const bool journal = file.size() > 15 && file.ends_with(".ledger.journal");
  auto facts = journal ? ledger_journal_facts(*bytes) : ledger_facts(*bytes);
  if (!facts) return;
  const std::string& job = facts->first;
  for (auto& [slot_text, slot] : facts->second) {
    json& last = ledger_recorded_[{job, slot_text}];
    if (last == slot) continue;
    last = slot;
    const auto slot_t = parse_instant(slot_text);
    TraceEvent e;
    e.t = sim_.now();
    e.type = "durable_delivery";
    e.job = job;
    if (slot_t.ok()) e.slot = *slot_t;
    e.data = slot;
    trace_.record(std::move(e));
  }
}

// The world's own reading of each pipeline store's durable bytes (docs/
// monitors.md: stage_monotonic reads it, never the core's stage_changed):
// after every rename or fsync, the durable pipeline file is read with a
// minimal reader of the world's own (pipeline_item_facts), and every item
// whose durable stage or error differs from the last one recorded gets a
// `durable_stage` event, and one whose next attempt or last visit differs a
// `durable_schedule` event. Not the core's codec: a codec that misread a
// field would otherwise hide its own bug. Bytes that do not parse record
// nothing (the core fails such a cycle closed; state_durable is about the
// state store).
void World::record_durable_stages() {
  for (const JobSpec* reconcile : reconcile_specs_) {  // not every job: per event
    REHEARSE_ASSERT(reconcile != nullptr && reconcile->kind == JobKind::reconcile);
    const JobSpec& spec = *reconcile;
    const std::string path =
        fmt::format("{}/{}", reconcile_config_from(spec).store_dir, PipelineStore::kFileName);
    const std::optional<std::string> bytes = disk_.durable_content(path);
    if (!bytes) continue;
    for (PipelineItemFacts& item : pipeline_item_facts(*bytes)) {
      record_durable_item(spec.id, path, std::move(item));
    }
  }
}

void World::record_durable_item(const std::string& job, const std::string& path,
                                PipelineItemFacts item) {
  PipelineItemFacts& last = durable_items_[{job, item.issue}];
  const auto event = [&](const char* type, json data) {
    TraceEvent e;
    e.t = sim_.now();
    e.type = type;
    e.job = job;
    e.item = item.issue;
    e.data = std::move(data);
    trace_.record(std::move(e));
  };
  if (last.stage != item.stage || last.error != item.error) {
    event("durable_stage", json{{"stage", item.stage}, {"path", path}, {"error", item.error}});
  }
  if (last.next_attempt_at != item.next_attempt_at || last.updated_at != item.updated_at) {
    event("durable_schedule", json{{"next_attempt_at", item.next_attempt_at},
                                   {"updated_at", item.updated_at},
                                   {"path", path}});
  }
  last = std::move(item);
}

// Every violation the monitors found since the last call (an event may show
// several), in the order they found them.
void World::drain_monitor_violations() {
  const std::vector<Violation>& found = observer_->violations();
  // The monitors only append: what was drained is still there.
  REHEARSE_ASSERT_LE(monitor_violations_seen_, found.size());
  while (monitor_violations_seen_ < found.size()) on_violation(found[monitor_violations_seen_++]);
}

}  // namespace rehearse::sim::world_detail
