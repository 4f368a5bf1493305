// Fault kinds: one table entry per kind of fault a scenario's timeline may
// hold (docs/scenario-format.md "Fault kinds", "Adding a fault kind").
//
// An entry says everything about its kind, once: its name in files and
// traces; its keys (name, type, required or optional, default, range or
// allowed names); whether it happens at one instant or lasts (`for`); what it
// applies to (a service, the orchestrator, the messenger, the worker process,
// a state file); the fields its `fault_start` trace event carries; and the
// functions that apply it to the simulated world. Everything else follows
// from the table:
//   - the loader (sim/world/scenario_faults.cpp) validates a fault's keys from it, one
//     reader per key type, and stores them into the FaultSpec;
//   - the world (sim/world/world_faults.cpp) records `fault_start` / `fault_end` from it
//     and calls its `schedule` and `at_instant` hooks;
//   - the JSON Schema's fault part (docs/schema/scenario.schema.json) and the
//     docs' table of kinds are generated from it (fault_kinds_schema(),
//     fault_kinds_markdown()); tests/sim/world/test_fault_kinds.cpp holds both
//     files equal to what the table generates.
//
// FaultKind values are positions in this table: the named enumerators
// (sim/world/scenario.hpp) exist for the code and tests that refer to a kind by
// name, and a test checks each one against the table. A new kind needs no
// enumerator.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/time.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

class GenericService;
class Messenger;
class ModelApi;
class SimBrokerage;
class SimOrchestrator;

// What a kind acts on. The loader requires the matching service to be
// declared (for `service`: the one the fault's `service` key names).
enum class FaultTarget : unsigned char {
  service,       // the service its `service` key names (built-in or the user's own)
  orchestrator,  // the orchestrator's issues and agents
  messenger,     // the messenger's targets
  process,       // the worker process
  state_file,    // a state file on the simulated disk
  job_file,      // a job's own durable file (delivery ledger, pipeline file)
};
const char* to_string(FaultTarget target) noexcept;

// How a key's value is read (one reader per type in the loader) and
// described in the schema.
enum class FaultKeyType : unsigned char {
  service,    // a service name: `names` (built-ins) or, with `user_services`, one of the user's own
  down_time,  // DURATION >= 0 the worker process stays down: it must be back by `until`
  integer,    // an integer from `min` to `max` (one of `names` when it lists some)
  rate,       // a number from 0 to 1
  name,       // one of `names`
  issue,      // an issue id declared in /services/orchestrator/issues
  issue_list,    // non-empty list of unique declared issue ids
  agent,         // an agent id declared in /services/orchestrator/agents
  new_instance,  // an instance id, not the orchestrator's current one
  targets,       // non-empty list of unique messenger targets (absent: every target)
  cut,           // state_corrupted, mode truncated only: bytes kept
  flips,         // state_corrupted, mode flip only: unique byte offsets
  worker,        // a worker process number from 1 to queue.workers (absent: the machine)
  job,           // the id of a declared job that keeps a durable file of its own
  step,          // a signed DURATION ("-1h", "+90s"), not zero, at most 7 days either way
  rate_limited,  // a service of the user's own whose capacity declares a rate limit
};

// The loader's reading of one key, handed to FaultKeySpec::store.
struct FaultValue {
  nlohmann::json value;       // as read: names and ids as strings, durations in ms, lists as arrays
  std::size_t index = 0;      // name / service: the position in `names`
  bool user_service = false;  // service: a service of the user's own (value is its name)
};

struct FaultKeySpec {
  std::string_view name;
  FaultKeyType type = FaultKeyType::name;
  bool required = false;
  std::vector<std::string> names;  // name: allowed values; service: the built-ins it may name
  bool user_services = false;      // service: a service of the user's own is allowed too
  std::int64_t min = 0;            // integer
  std::int64_t max = 0;
  std::string_view what;        // the value's noun in messages ("an HTTP status", "network error")
  std::string_view expected;    // a missing required key: what is expected (empty: from the type)
  std::string_view schema_ref;  // the schema's $defs entry for the value, when it has one
  std::string_view doc;         // the docs table's text for this key (markdown)
  // Absent: stored as if written (null: nothing is stored, the FaultSpec's
  // own default stands). For `service`, the built-in named when absent.
  nlohmann::json default_value;
  // Puts the value into the fault (absent and optional: not called, the
  // FaultSpec default is the key's default). Empty: the value goes to
  // FaultSpec::params under the key's name.
  std::function<void(FaultSpec&, const FaultValue&)> store;
};

// One field of the kind's `fault_start` event (docs/trace-events.md), read
// from the fault.
struct FaultTraceField {
  std::string_view name;
  std::function<std::optional<nlohmann::json>(const FaultSpec&)> read;  // nullopt: left out
};

// What a fault may act on in the running world (null / empty: absent).
struct FaultWorld {
  ModelApi* model_api = nullptr;
  SimBrokerage* brokerage = nullptr;
  SimOrchestrator* orchestrator = nullptr;
  Messenger* messenger = nullptr;
  std::function<GenericService*(const std::string& name)> user_service;
  // Worker process `worker` (1-based; 0: the machine, every worker) crashes
  // now and boots down_for_ms later.
  std::function<void(const std::string& cause, DurationMs down_for_ms, int worker)> crash_worker;
  // The state file is damaged now (sim/world/world_faults.cpp: corrupt_state).
  std::function<void(const FaultSpec& fault)> corrupt_state;
  // The next write of the state file is torn; the process restarts down_for_ms later.
  std::function<void(StateFile file, DurationMs down_for_ms)> tear_next_write;
  // The job's own durable file is damaged now (sim/world/world_faults.cpp: corrupt_job_file).
  std::function<void(const FaultSpec& fault)> corrupt_job_file;
  // From instant `at` on, the machine's wall clock reads `by` more than it did.
  std::function<void(TimeMs at, DurationMs by)> step_clock;
  TimeMs until_ms = 0;  // the scenario's end
};

struct FaultKindSpec {
  std::string_view name;  // a string literal (to_string(FaultKind) returns its data())
  bool lasting = false;   // takes `for`; its window is [at, at + for) or [at, until]
  FaultTarget applies_to = FaultTarget::service;
  std::vector<FaultKeySpec> keys;      // besides at, kind, note, for; in reading order
  std::vector<FaultTraceField> trace;  // fault_start fields besides fault, kind, until, note
  std::string_view meaning;            // the docs table's meaning column (markdown)
  // When the run is prepared, after the fault's `fault_start` is scheduled:
  // windows inside services, events of the orchestrator. `index` is the
  // fault's position in the file; [from, until) its window.
  std::function<Status(const FaultSpec& fault, std::size_t index, TimeMs from, TimeMs until,
                       FaultWorld& world)>
      schedule;
  // At the fault's instant, right after its `fault_start` is recorded.
  std::function<void(const FaultSpec& fault, FaultWorld& world)> at_instant;
};

using FaultKinds = std::vector<FaultKindSpec>;

// Every fault kind, in FaultKind order.
const FaultKinds& fault_kinds();
// The kinds whose entries live in files of their own (sim/fault_<kind>.cpp).
FaultKindSpec job_file_corrupted_kind();
FaultKindSpec clock_step_kind();
FaultKindSpec capacity_kind();
// The entry of `kind`; REHEARSE_ASSERTs that it exists.
const FaultKindSpec& fault_kind_spec(FaultKind kind);
// The entry named `name` in `kinds`, or nullptr.
const FaultKindSpec* find_fault_kind(std::string_view name,
                                     const FaultKinds& kinds = fault_kinds());

// The keys the loader accepts for a kind besides at, kind and note: its
// table keys, and `for` when it lasts.
std::vector<std::string> fault_key_names(const FaultKindSpec& kind);

// The loader (sim/world/scenario.hpp) with another table of fault kinds: a test's
// proof that a kind added to the table needs nothing else to load
// (tests/sim/world/test_fault_kinds.cpp). FaultKind values are positions in `kinds`.
ScenarioCheck check_scenario_json(std::string_view text, const std::string& path,
                                  const FaultKinds& kinds);

// The schema's "fault" and "fault_<kind>" $defs, generated from `kinds`.
nlohmann::json fault_kinds_schema(const FaultKinds& kinds = fault_kinds());
// The docs' table of fault kinds (markdown, one row per kind).
std::string fault_kinds_markdown(const FaultKinds& kinds = fault_kinds());

}  // namespace rehearse::sim
