// Job kinds: one table entry per kind of job a scenario may hold
// (docs/scenario-format.md "Job kinds", "Adding a job kind").
//
// An entry says everything the simulator needs to know about its kind, once:
// its name and its own keys with their JSON Schema; what a re-run does
// outside when the job declares nothing; whether it keeps a durable file of
// its own and sends messages; the reader of its keys; the params its runner
// is configured with; the services a run calls; how many calls one run makes
// at most; how a generated world draws its keys; and, for a kind the core
// does not have, the runner itself. Everything else follows from the table:
//   - the loader (sim/world/scenario_jobs.cpp) takes the kind names and
//     each kind's keys from it and calls the kind's reader;
//   - the world configures the worker from `runner_params` and gives it the
//     core's kinds (model/job_kinds.hpp) plus every entry's own `runner`;
//   - liveness, tune and the fault placement of generated worlds ask
//     `services`, `calls_per_run` and `settle_ms`;
//   - generated worlds (sim/check, sim/testing) draw every kind of the table
//     that this build runs;
//   - the schema's job part (docs/schema/scenario.schema.json) is generated
//     from it (job_kinds_schema()); a test holds the file equal.
//
// JobKind values are positions in this table. The named enumerators
// (sim/world/scenario.hpp) are the kinds the world's own services know; a
// kind added with add_job_kind() needs none. A kind is added before any
// scenario is loaded (a program's or a test's start): the table is read, not
// locked, during runs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_kinds.hpp"
#include "model/time.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

// What the loader offers a kind's reader: the job's own keys, read with the
// scenario format's rules and reported at their JSON pointer.
class JobKeyReader {
 public:
  virtual ~JobKeyReader() = default;
  // The job's id (empty when it did not parse) and its pointer ("/jobs/3").
  virtual const std::string& job_id() const = 0;
  virtual const std::string& pointer() const = 0;
  // The key's value as written, or nullptr when it is absent.
  virtual const nlohmann::json* field(std::string_view key) const = 0;
  // Each read reports a wrong value at the key's pointer and returns nullopt;
  // an absent key returns nullopt without an error unless `required`.
  virtual std::optional<std::int64_t> read_int(std::string_view key, std::int64_t min,
                                               std::int64_t max, bool required) = 0;
  virtual std::optional<bool> read_bool(std::string_view key, bool required) = 0;
  virtual std::optional<std::string> read_string(std::string_view key, bool required) = 0;
  // A service declared in /services (a built-in or one of the user's own).
  virtual std::optional<std::string> read_service(std::string_view key, bool required) = 0;
  // A non-empty list of declared messenger targets.
  virtual std::optional<std::vector<std::string>> read_targets(std::string_view key,
                                                               bool required) = 0;
  // A value the kind refuses for its own reasons.
  virtual void error(std::string_view key, std::string message) = 0;
};

// What a generated world offers a job's keys.
struct JobDrawWorld {
  TimeMs start_ms = 0;
  bool model_api = false;
  bool brokerage = false;
  std::vector<std::string> targets;        // messenger targets
  std::vector<std::string> issues;         // orchestrator issues
  std::vector<std::string> user_services;  // the user's own services
};

struct JobKindDef {
  std::string name;
  // The kind's own keys (besides those every job has), in the order they
  // are read and drawn, and the schema of each ("properties" of its $def).
  std::vector<std::string> keys;
  nlohmann::json schema_properties = nlohmann::json::object();
  std::vector<std::string> schema_required;
  // Definitions its properties refer to ("#/$defs/<name>"), by name.
  nlohmann::json schema_defs = nlohmann::json::object();
  // What a re-run does outside when the job declares nothing.
  SideEffectKind side_effects = SideEffectKind::publish;
  bool keeps_file = false;  // a durable file of its own: job_file_corrupted applies
  bool delivers = false;    // its runs send messages to the job's targets
  // Reads the kind's own keys into the job. A kind without typed fields in
  // JobSpec keeps what it read in `job.params`.
  std::function<void(JobKeyReader&, JobSpec&)> read;
  // The runner's params (JobConfig::params, docs/worker.md).
  std::function<nlohmann::json(const JobSpec&)> runner_params;
  // The services a run calls whose failure fails the run, in call order (the
  // messenger is not among them).
  std::function<std::vector<std::string>(const JobSpec&)> services;
  // The calls one run makes at most, besides retries.
  std::function<std::int64_t(const JobSpec&)> calls_per_run;
  // How long the kind may defer its own work past the policy's delays.
  DurationMs settle_ms = 0;
  // The kind's own keys for a new job of a generated world, or nullopt when
  // the world lacks what the kind needs. Absent: each key is drawn by the
  // generators' drawer of that key name (sim/check/generate.cpp).
  std::function<std::optional<nlohmann::json>(Rng&, const JobDrawWorld&)> draw;
  // The runner, for a kind the core does not have (absent: the core's kind
  // of the same name, model/job_kinds.hpp).
  JobRunnerFactory runner;
};

// Every job kind, in JobKind order: the built-in kinds, then added ones.
const std::vector<JobKindDef>& job_kind_table();
// The entry of `kind` (which must be in the table).
const JobKindDef& job_kind_def(JobKind kind);
// The kind named `name`, if the table has it.
std::optional<JobKind> find_job_kind_named(std::string_view name);
// Adds a kind (its name new, its functions set) and returns its position.
JobKind add_job_kind(JobKindDef def);

// The JSON Schema of the job kinds: the `job` definition's kind names and
// its per-kind branches, each kind's "job_<name>" and the definitions its
// keys refer to, as "$defs" entries.
nlohmann::json job_kinds_schema();

}  // namespace rehearse::sim
