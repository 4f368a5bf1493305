// The world's faults: scheduled from the scenario, applied through their kinds'
// hooks (sim/world/fault_kinds.hpp), and the damage done to durable files.
#include "sim/world/world_detail.hpp"

namespace rehearse::sim::world_detail {

namespace {

CorruptionKind to_corruption_kind(CorruptionMode mode) {
  switch (mode) {
    case CorruptionMode::garbage: return CorruptionKind::garbage;
    case CorruptionMode::empty: return CorruptionKind::empty;
    case CorruptionMode::truncated: return CorruptionKind::truncate;
    case CorruptionMode::flip: return CorruptionKind::flip_bytes;
    case CorruptionMode::schema: break;
  }
  // A schema fault rewrites the file itself: corrupt_state never brings one here.
  REHEARSE_UNREACHABLE();
}

std::string state_file_path(StateFile file) {
  return fmt::format("{}/{}", kWorldStateDir, to_string(file));
}

}  // namespace

// Faults in time order, then file order (a stable sort).
Status World::schedule_faults() {
  // Once per run: a second pass would schedule every fault twice.
  REHEARSE_ASSERT(!fault_world_.crash_worker);
  fault_world_ = fault_world();
  std::vector<std::size_t> order(scenario_.faults.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    return scenario_.faults[a].at_ms < scenario_.faults[b].at_ms;
  });
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t index = order[k];
    // Scheduled in time order: equal instants keep the file's order.
    if (k > 0) {
      const FaultSpec& before = scenario_.faults[order[k - 1]];
      REHEARSE_ASSERT_LE(before.at_ms, scenario_.faults[index].at_ms);
      if (before.at_ms == scenario_.faults[index].at_ms) REHEARSE_ASSERT_LT(order[k - 1], index);
    }
    if (Status s = add_fault(scenario_.faults[index], index); !s.ok()) return s;
  }
  return {};
}

// What the fault kinds' hooks may act on: the services the scenario
// declares, the worker process and the state files.
FaultWorld World::fault_world() {
  FaultWorld w;
  w.model_api = model_api_.get();
  w.brokerage = brokerage_.get();
  w.orchestrator = orchestrator_.get();
  w.messenger = &messenger_;
  w.user_service = [this](const std::string& name) -> GenericService* {
    const auto it = user_services_.find(name);
    return it == user_services_.end() ? nullptr : it->second.get();
  };
  w.crash_worker = [this](const std::string& cause, DurationMs down_for_ms, int worker) {
    // restart's values: worker 0 (the machine) or 1-based, down_for >= 0.
    REHEARSE_ASSERT(worker >= 0 && down_for_ms >= 0);
    crash_worker(cause, down_for_ms, worker);
  };
  w.corrupt_state = [this](const FaultSpec& fault) { corrupt_state(fault); };
  w.corrupt_job_file = [this](const FaultSpec& fault) { corrupt_job_file(fault); };
  w.step_clock = [this](TimeMs at, DurationMs by) { worker_clock_.add_step(at, by); };
  w.tear_next_write = [this](StateFile file, DurationMs down_for_ms) {
    // Every write of the state store's files starts with this prefix (the
    // journal, the snapshot and its temp file).
    disk_.arm_torn_write(file == StateFile::retry_state
                             ? fmt::format("{}/retry_state", kWorldStateDir)
                             : state_file_path(file));
    REHEARSE_ASSERT_GE(down_for_ms, 0);  // the process comes back later, never earlier
    torn_down_for_ = down_for_ms;
  };
  w.until_ms = scenario_.until_ms;
  return w;
}

// The fields of a fault's `fault_start` event (docs/trace-events.md): the
// common ones and the kind's own (its table entry's trace fields).
json World::fault_start_data(const FaultSpec& fault, std::size_t index, bool lasting,
                             TimeMs until) const {
  REHEARSE_ASSERT_LT(index, scenario_.faults.size());
  json start_data{{"fault", index}, {"kind", to_string(fault.kind)}};
  if (lasting) start_data["until"] = format_instant(until);
  if (!fault.note.empty()) start_data["note"] = fault.note;
  for (const FaultTraceField& field : fault_kind_spec(fault.kind).trace) {
    if (auto value = field.read(fault)) start_data[std::string(field.name)] = std::move(*value);
  }
  return start_data;
}

// A fault's events (fault_start, fault_end for a lasting one) and its kind's
// hooks: `schedule` now, `at_instant` at its instant (sim/world/fault_kinds.hpp).
Status World::add_fault(const FaultSpec& fault, std::size_t index) {
  // The events below keep a reference to the fault: it must be the
  // scenario's own, which outlives the run.
  REHEARSE_ASSERT_LT(index, scenario_.faults.size());
  REHEARSE_ASSERT(&scenario_.faults[index] == &fault);
  const FaultKindSpec& kind = fault_kind_spec(fault.kind);
  const TimeMs from = fault.at_ms;
  const TimeMs until = fault.end_ms(scenario_.until_ms);
  const std::string service = kind.applies_to == FaultTarget::messenger
                                  ? std::string(Messenger::kServiceName)
                              : fault.service ? std::string(to_string(*fault.service))
                                              : fault.user_service;
  const json start_data = fault_start_data(fault, index, kind.lasting, until);
  sim_.schedule_call(
      from,
      [this, &fault, &kind, start_data, service] {
        record_world("fault_start", start_data, service);
        if (kind.at_instant) kind.at_instant(fault, fault_world_);
      },
      "fault");
  // Scheduled after fault_start at the same instant: the record comes first.
  if (kind.schedule) {
    if (Status s = kind.schedule(fault, index, from, until, fault_world_); !s.ok()) {
      return make_error(s.error().code, s.error().message, scenario_.path + ":" + fault.pointer);
    }
  }
  if (kind.lasting && until <= scenario_.until_ms) {
    json end_data{{"fault", index}, {"kind", to_string(fault.kind)}};
    sim_.schedule_call(
        until, [this, end_data, service] { record_world("fault_end", end_data, service); },
        "fault_end");
  }
  return {};
}

void World::corrupt_state(const FaultSpec& fault) {
  REHEARSE_ASSERT(fault.kind == FaultKind::state_corrupted);  // its kind's hook alone calls it
  // The live state of retry_state.json is its journal while one exists: the
  // store follows the journal between full loads (docs/state-file.md), so
  // damage must reach the bytes the core actually reads to be a fault at all.
  std::string path = state_file_path(fault.file);
  if (fault.file == StateFile::retry_state) {
    const std::string journal = fmt::format("{}/{}", kWorldStateDir, StateStore::kJournalName);
    if (disk_.live_content(journal).has_value()) path = journal;
  }
  const bool existed = disk_.live_content(path).has_value();
  const bool exact = fault.cut.has_value() || !fault.flips.empty();
  bool applied = false;
  std::string refused;  // why exact damage could not be done to this file
  if (existed && fault.mode != CorruptionMode::schema) {
    Status s = apply_corruption(path, fault);
    applied = s.ok();
    if (!s.ok() && exact) refused = s.error().message;
  }
  if (!applied && refused.empty()) {
    // A file that does not exist yet (the store keeps its snapshot only after
    // a compaction), a schema break, or damage the kind cannot do (truncating
    // an empty file): the file is put in place already damaged. Valid JSON of
    // the wrong shape for `schema`; bytes that are not JSON otherwise.
    std::string bytes;
    switch (fault.mode) {
      case CorruptionMode::schema: bytes = "{\"format\":\"not-a-version\",\"jobs\":7}\n"; break;
      case CorruptionMode::empty: bytes = ""; break;
      case CorruptionMode::truncated: bytes = "{\"format\":1,\"journal_seq\":"; break;
      case CorruptionMode::garbage:
      case CorruptionMode::flip: bytes = "\x7f\x01garbage\xff\xfe"; break;
    }
    applied = disk_.put_durable(path, bytes).ok();
  }
  json data{{"file", to_string(fault.file)},
            {"path", path},
            {"mode", to_string(fault.mode)},
            {"existed", existed},
            {"applied", applied}};
  if (fault.cut) data["cut"] = *fault.cut;
  if (!fault.flips.empty()) data["flips"] = fault.flips;
  if (!refused.empty()) data["error"] = refused;
  // A cut at a record boundary of the journal leaves a valid, shorter
  // journal: records lost that the file cannot show (docs/state-file.md,
  // "What stays undetectable"); state_durable then holds the store to
  // keeping the file only once the core itself found the loss.
  if (applied && path.ends_with(StateStore::kJournalName) &&
      journal_records_whole(disk_.live_content(path).value_or(std::string()))) {
    data["records_whole"] = true;
    data["ledger_ahead"] = ledger_ahead_of_state();
  }
  record_world("store_corrupt_injected", std::move(data));
  if (!applied) return;
  damaged_[fault.file] = {path, disk_.live_content(path).value_or(std::string())};
  // Who reads the damaged bytes is a world fact (`disk_read`): state_durable
  // asks for a report of the damage from a process that read it.
  disk_.watch_reads(path);
}

// The file a job keeps of its own that its reader loads: a ledger's journal
// while one exists, else its snapshot; a reconcile job's pipeline file.
std::string World::job_file_path(const JobSpec& job) const {
  // The loader lets job_file_corrupted name only a job with a file of its own.
  REHEARSE_ASSERT(job_keeps_file(job.kind));
  if (job.kind == JobKind::reconcile) {
    return fmt::format("{}/{}", reconcile_config_from(job).store_dir, PipelineStore::kFileName);
  }
  const std::string name = DeliveryLedger::encode_job_id(job.id);
  const std::string journal =
      fmt::format("{}/{}{}", kWorldLedgerDir, name, DeliveryLedger::kJournalSuffix);
  if (disk_.live_content(journal).has_value()) return journal;
  return fmt::format("{}/{}{}", kWorldLedgerDir, name, DeliveryLedger::kFileSuffix);
}

// A job_file_corrupted fault: the file is replaced, durably, by bytes its
// reader must refuse (not JSON, empty, or JSON of the wrong shape), whether
// or not it existed. Who reads them afterwards is a world fact (`disk_read`).
void World::corrupt_job_file(const FaultSpec& fault) {
  REHEARSE_ASSERT(fault.kind == FaultKind::job_file_corrupted);  // its kind's hook alone calls it
  const JobSpec* job = find_job(fault.job);
  REHEARSE_ASSERT(job != nullptr);  // the loader checked the reference
  const std::string path = job_file_path(*job);
  const bool existed = disk_.live_content(path).has_value();
  std::string bytes;
  switch (fault.mode) {
    case CorruptionMode::schema: bytes = "{\"format\":\"not-a-version\",\"jobs\":7}\n"; break;
    case CorruptionMode::empty: break;
    default: bytes = "\x7f\x01garbage\xff\xfe"; break;
  }
  const bool applied = disk_.put_durable(path, bytes).ok();
  TraceEvent e;
  e.t = sim_.now();
  e.type = "job_file_damaged";
  e.job = fault.job;
  e.data = json{
      {"path", path}, {"mode", to_string(fault.mode)}, {"existed", existed}, {"applied", applied}};
  trace_.record(std::move(e));
  if (!applied) return;
  damaged_job_files_.insert(fault.job);
  disk_.watch_reads(path);
}

// Each damaged state file at the end: the very bytes the damage left, or not.
void World::compare_damaged_files(ScenarioRunResult& result) const {
  REHEARSE_ASSERT(result.damaged_files.empty());  // once, at the read-back
  for (const auto& [file, damage] : damaged_) {
    const std::optional<std::string> now = disk_.live_content(damage.first);
    result.damaged_files.push_back(DamagedFile{file, damage.first, now == damage.second});
  }
}

// The damage a state_corrupted fault does to an existing file: exact when the
// fault says where (`cut`, `flips`: each byte XORed with 0x01), drawn from
// the disk's generator otherwise.
Status World::apply_corruption(const std::string& path, const FaultSpec& fault) {
  // Only an existing file is damaged in place (corrupt_state checked), and a
  // schema break is written whole, never applied.
  REHEARSE_ASSERT(fault.mode != CorruptionMode::schema);
  REHEARSE_ASSERT(disk_.live_content(path).has_value());
  if (fault.mode == CorruptionMode::truncated && fault.cut) {
    Corruption c;
    c.kind = CorruptionKind::truncate;
    c.offset = *fault.cut;
    return disk_.corrupt(path, c);
  }
  if (fault.mode == CorruptionMode::flip && !fault.flips.empty()) {
    const std::size_t size = disk_.live_content(path)->size();
    for (const std::uint64_t offset : fault.flips) {
      if (offset >= size) {
        return make_error(ErrorCode::invalid_argument,
                          fmt::format("flip offset {} is past the end of the file ({} bytes)",
                                      offset, size),
                          path);
      }
    }
    for (const std::uint64_t offset : fault.flips) {
      Corruption c;
      c.kind = CorruptionKind::flip_bytes;
      c.offset = offset;
      c.xor_mask = 0x01;
      if (Status s = disk_.corrupt(path, c); !s.ok()) return s;
    }
    return {};
  }
  return disk_.corrupt(path, to_corruption_kind(fault.mode));
}

}  // namespace rehearse::sim::world_detail
