// Fleet load per service: the retry-storm view of a run (docs/run.md "Fleet
// load").
//
// A service's load is read from the world's own events only: every request
// is a `service_call` at the instant it is sent, its answer a `service_reply`
// (an HTTP `status`, or a `transport_error`), and a fault on the service a
// `fault_start` / `fault_end` pair naming it. Events the core logged
// (EventSource::core) are its claims, not facts, and are left out.
//
// From those: requests, useful answers (2xx) and failed ones (any other
// status, or a transport error) per minute of the run; the work
// amplification (requests per useful answer) and the peak load (Brooker,
// "Exponential Backoff and Jitter", AWS Architecture Blog, 2015); the end of
// the last fault on the service (the trigger) and how long failures went on
// after it; and whether the load was still above the service's capacity an
// hour after the trigger ended: a metastable failure (Bronson et al., HotOS
// 2021; Huang et al., OSDI 2022), where the retries themselves keep the
// overload going after its cause is gone.
//
// Integer arithmetic throughout: ratios are kept in thousandths (rounded half
// up), so the same events always give the same numbers and the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

inline constexpr DurationMs kLoadBucketMs = kMinuteMs;
// How long after the trigger's end the load is judged for metastability.
inline constexpr DurationMs kMetastableAfterMs = kHourMs;

// One fault on the service, as the trace tells it.
struct LoadFaultWindow {
  std::int64_t fault = 0;  // the fault's index in the scenario's `faults`
  std::string kind;
  TimeMs from_ms = 0;
  // fault_end's instant; for a lasting fault without one (it outlasted the
  // run) its fault_start's `until`; for an instant fault its own instant.
  TimeMs until_ms = 0;
  bool ended = false;  // a fault_end was recorded
};

struct ServiceLoad {
  std::string service;
  bool user = false;  // a service of the user's own (else a built-in one)
  TimeMs start_ms = 0;
  TimeMs end_ms = 0;

  // One entry per minute from start_ms (the last one may be cut by end_ms;
  // an event at end_ms itself counts in the last minute). A reply counts in
  // the minute it arrives.
  std::vector<std::int64_t> calls_per_minute;
  std::vector<std::int64_t> useful_per_minute;
  std::vector<std::int64_t> failed_per_minute;

  std::int64_t calls = 0;
  std::int64_t useful = 0;            // 2xx replies
  std::int64_t refused = 0;           // replies with any other status
  std::int64_t transport_errors = 0;  // timeouts, resets, ... (no HTTP answer)
  std::int64_t failed() const noexcept { return refused + transport_errors; }

  // calls / useful in thousandths; absent when nothing was useful.
  std::optional<std::int64_t> work_amplification_milli;
  // The declared capacity's sustained rate, in thousandths of a request per
  // minute (service_capacity_per_minute_milli); absent: no limit declared.
  std::optional<std::int64_t> capacity_per_minute_milli;
  // useful / run minutes, in thousandths.
  std::int64_t goodput_per_minute_milli = 0;

  std::vector<LoadFaultWindow> faults;  // in fault_start order
  std::optional<TimeMs> trigger_end;    // the latest until_ms of `faults`

  std::int64_t peak_per_minute = 0;  // the busiest minute's calls
  // The busiest minute among those starting at or after trigger_end.
  std::optional<std::int64_t> peak_after_trigger_per_minute;
  // From trigger_end to the end of the last minute (starting at or after it)
  // holding a failed reply: 0 when none failed; absent when failures reach
  // the run's last minute, or no whole minute follows the trigger.
  std::optional<DurationMs> drain_ms;

  // The minute judged for metastability: the first one starting at or after
  // trigger_end + 1h, judged only when it ends by end_ms and the service has
  // a capacity and a trigger.
  std::optional<std::size_t> metastable_minute;
  bool metastable_judged() const noexcept { return metastable_minute.has_value(); }
  // Judged, and in that minute the calls exceed capacity_per_minute or a
  // reply failed.
  bool metastable = false;

  // The minute an index stands for (its first instant).
  TimeMs minute_start(std::size_t index) const noexcept {
    return start_ms + static_cast<TimeMs>(index) * kLoadBucketMs;
  }
};

// The declared capacity's sustained rate in thousandths of a request per
// minute: a rate limit serves `rate` per `per_ms` (its burst only for a
// moment); a concurrency limit serves `concurrency` per `latency_ms` (none
// with latency 0: each request is served at once); both: the smaller.
std::optional<std::int64_t> service_capacity_per_minute_milli(const ServiceCapacity& capacity,
                                                              DurationMs latency_ms);

// Whether a run of the scenario is reported with its fleet load: it declares
// a service of the user's own with a capacity, or has a fault on one.
bool wants_service_load(const Scenario& scenario);

// Counts a run's events one at a time (a kept trace, or a stream of them),
// then computes each service's load once the run's end is known.
class ServiceLoadCounter {
 public:
  ServiceLoadCounter(const Scenario& scenario, TimeMs start_ms);
  void add(const TraceEvent& event);
  // Every user service (called or not) and every other service that was
  // called, in name order.
  std::vector<ServiceLoad> finish(TimeMs end_ms) const;

 private:
  struct Tally {
    std::vector<std::int64_t> calls, useful, failed;  // per minute, grown as needed
    std::int64_t refused = 0;
    std::int64_t transport_errors = 0;
    std::vector<LoadFaultWindow> faults;
    bool called = false;
  };
  Tally& tally(const std::string& service);
  std::size_t minute_of(TimeMs t) const noexcept;
  void add_fault_event(const TraceEvent& event);

  const Scenario& scenario_;
  TimeMs start_ms_ = 0;
  std::map<std::string, Tally> tallies_;
};

// The whole computation over a list of events (ServiceLoadCounter).
std::vector<ServiceLoad> service_load(const Scenario& scenario,
                                      const std::vector<TraceEvent>& events, TimeMs start_ms,
                                      TimeMs end_ms);

// A ratio kept in thousandths as a JSON number (6149 -> 6.149).
nlohmann::json milli_json(std::int64_t milli);
// Durations in ms, instants ISO, the per-minute series as arrays
// (docs/run.md "Fleet load").
nlohmann::json to_json(const ServiceLoad& load);
// {service: to_json(load)} for every entry.
nlohmann::json to_json(const std::vector<ServiceLoad>& loads);

}  // namespace rehearse::sim
