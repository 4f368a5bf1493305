// What the worker's log says happened (docs/import.md, "The worker's log"):
// the jobs as configured at the first boot, the boots, every call of a
// `call` job with what came back, and every slot with its runs and
// notifications, followed the way the simulator's slot tracker follows them
// (sim/monitors/slot_tracker.hpp), from the log lines alone.
//
// Calls: a `call` job's run makes its calls in order and stops at the first
// that fails (`call_failed` names it by its request id, ".../cK"), so the
// calls before it succeeded, and a run that finished with success made all
// of them. When each call was sent is not logged: it is placed by each
// service's latency (the scenario's, or inferred from the runs' durations,
// docs/import.md), counted from the run's start.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "sim/import/call_observation.hpp"
#include "sim/import/fault_windows.hpp"
#include "sim/import/worker_log.hpp"

namespace rehearse::sim {

// A job as `job_configured` wrote it at the first boot.
struct ConfiguredJob {
  nlohmann::ordered_json fields;  // the line's fields, as written
  std::string where;
  std::string id() const { return fields.value("job_id", ""); }
  std::string kind() const { return fields.value("kind", ""); }
};

// A slot as the log shows it: the slot tracker's states, from log lines.
struct ObservedSlot {
  std::string state = "handed";  // the tracker's state names (SlotState)
  std::vector<TimeMs> attempt_at;
  std::map<std::string, int> notifications;
};

// A run that started and has not finished yet in the log.
struct OpenRun {
  TimeMs slot = 0;
  int attempt = 1;
  bool retry = false;
  std::string state_before;  // the slot's state before it started
  std::size_t boots = 0;     // boots seen when it started
};

struct ObservedJob {
  std::map<TimeMs, ObservedSlot> slots;  // regular slots, by instant
  std::vector<OpenRun> open;             // runs started, not finished
  int runs = 0;
  std::map<std::pair<TimeMs, int>, bool> retry_attempts;  // distinct (slot, attempt) retried
  std::map<std::string, int> notifications;
  std::string final_status;  // "" while nothing ended
};

struct LogEvidence {
  std::vector<ConfiguredJob> jobs;        // the first boot's, in the log's order
  std::vector<std::string> refused_jobs;  // schedule_config_error, job_config_error at boot
  std::vector<TimeMs> boots;              // every scheduler_boot
  std::vector<TimeMs> last_before_boot;   // per boot after the first: the line before it
  std::vector<CallObservation> calls;
  std::map<std::string, DurationMs> latency;  // per service, as used to place calls
  std::map<std::string, DurationMs> timeout;  // per service, when a call timed out
  std::map<std::string, ObservedJob> observed;
  std::map<std::string, int> notifications;  // by event, every job
  std::vector<Ambiguity> ambiguities;
  std::vector<std::string> notes;
  TimeMs first_t = 0;
  TimeMs last_t = 0;
  int lines = 0;
  int cut_runs = 0;  // call runs with no end in the log (a crash)
};

// A scenario's declared service latencies (absent: the default 100 ms; a
// latency that is not a duration string is left to inference).
std::map<std::string, DurationMs> declared_latencies(const nlohmann::ordered_json& scenario);

// `declared_latency`: the scenario's latencies, which win over inference.
LogEvidence read_log_evidence(const WorkerLogRead& log,
                              const std::map<std::string, DurationMs>& declared_latency);

// The notification events (model/notification.hpp), in the core's order.
const std::vector<std::string>& notification_events();

}  // namespace rehearse::sim
