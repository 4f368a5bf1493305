#include "sim/world/service_load.hpp"

#include <algorithm>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;

// num / den in thousandths, rounded half up (num >= 0, den > 0). The
// operands stay far below 2^63: counts of a run's events times 2 * 10^3,
// or a rate of at most 10^6 times a minute's milliseconds times 2 * 10^3.
std::int64_t ratio_milli(std::int64_t num, std::int64_t den) {
  REHEARSE_ASSERT_GE(num, 0);
  REHEARSE_ASSERT_GT(den, 0);
  return (num * 2000 + den) / (2 * den);
}

// The first minute index whose minute starts at or after `t`.
std::size_t first_minute_from(TimeMs start_ms, TimeMs t) {
  if (t <= start_ms) return 0;
  return static_cast<std::size_t>((t - start_ms + kLoadBucketMs - 1) / kLoadBucketMs);
}

// A series grown by events cut to the run's `n` minutes: anything counted
// past the last minute (an event at the run's end) joins the last one.
std::vector<std::int64_t> fitted(std::vector<std::int64_t> series, std::size_t n) {
  REHEARSE_ASSERT_GT(n, 0u);
  if (series.size() > n) {
    std::int64_t tail = 0;
    for (std::size_t i = n; i < series.size(); ++i) tail += series[i];
    series.resize(n);
    series.back() += tail;
  }
  series.resize(n, 0);
  return series;
}

void count_at(std::vector<std::int64_t>& series, std::size_t minute) {
  if (series.size() <= minute) series.resize(minute + 1, 0);
  ++series[minute];
}

// Peak after the trigger, how long failures went on, and the metastability
// judgment (docs/run.md "Fleet load").
void judge_trigger(ServiceLoad& load) {
  REHEARSE_ASSERT(load.trigger_end.has_value());  // called for a service with faults
  const std::size_t n = load.calls_per_minute.size();
  const std::size_t after = first_minute_from(load.start_ms, *load.trigger_end);
  if (after < n) {
    load.peak_after_trigger_per_minute =
        *std::max_element(load.calls_per_minute.begin() + static_cast<std::ptrdiff_t>(after),
                          load.calls_per_minute.end());
    std::optional<std::size_t> last_failed;
    for (std::size_t i = after; i < n; ++i) {
      if (load.failed_per_minute[i] > 0) last_failed = i;
    }
    if (!last_failed) {
      load.drain_ms = 0;
    } else if (*last_failed + 1 < n) {
      load.drain_ms = load.minute_start(*last_failed + 1) - *load.trigger_end;
    }
  }
  if (!load.capacity_per_minute_milli) return;
  const std::size_t judged =
      first_minute_from(load.start_ms, *load.trigger_end + kMetastableAfterMs);
  if (judged >= n || load.minute_start(judged) + kLoadBucketMs > load.end_ms) return;
  load.metastable_minute = judged;
  load.metastable = load.calls_per_minute[judged] * 1000 > *load.capacity_per_minute_milli ||
                    load.failed_per_minute[judged] > 0;
}

}  // namespace

std::optional<std::int64_t> service_capacity_per_minute_milli(const ServiceCapacity& capacity,
                                                              DurationMs latency_ms) {
  REHEARSE_ASSERT_GE(latency_ms, 0);
  std::optional<std::int64_t> out;
  if (capacity.limits_rate()) {
    REHEARSE_ASSERT_GT(capacity.per_ms, 0);  // the loader's range
    out = ratio_milli(capacity.rate * kLoadBucketMs, capacity.per_ms);
  }
  if (capacity.limits_concurrency() && latency_ms > 0) {
    const std::int64_t served = ratio_milli(capacity.concurrency * kLoadBucketMs, latency_ms);
    out = out ? std::min(*out, served) : served;
  }
  return out;
}

bool wants_service_load(const Scenario& scenario) {
  for (const auto& [name, service] : scenario.services.user) {
    if (service.capacity) return true;
  }
  return std::any_of(scenario.faults.begin(), scenario.faults.end(),
                     [](const FaultSpec& f) { return !f.user_service.empty(); });
}

ServiceLoadCounter::ServiceLoadCounter(const Scenario& scenario, TimeMs start_ms)
    : scenario_(scenario), start_ms_(start_ms) {
  // Every user service is reported, called or not.
  for (const auto& [name, service] : scenario.services.user) tallies_[name];
}

ServiceLoadCounter::Tally& ServiceLoadCounter::tally(const std::string& service) {
  return tallies_[service];
}

std::size_t ServiceLoadCounter::minute_of(TimeMs t) const noexcept {
  if (t <= start_ms_) return 0;
  return static_cast<std::size_t>((t - start_ms_) / kLoadBucketMs);
}

void ServiceLoadCounter::add_fault_event(const TraceEvent& event) {
  Tally& t = tally(event.service);
  const std::int64_t index = event.num("fault", -1);
  if (event.type == "fault_end") {
    // The latest window of that fault still open (a fault index starts once).
    for (auto it = t.faults.rbegin(); it != t.faults.rend(); ++it) {
      if (it->fault == index && !it->ended) {
        it->until_ms = event.t;
        it->ended = true;
        break;
      }
    }
    return;
  }
  LoadFaultWindow window{index, event.str("kind"), event.t, event.t, true};
  if (const std::string until = event.str("until"); !until.empty()) {
    // A lasting fault: until its fault_end, or (none by the run's end) this.
    if (auto parsed = parse_instant(until); parsed.ok()) window.until_ms = *parsed;
    window.ended = false;
  }
  t.faults.push_back(std::move(window));
}

void ServiceLoadCounter::add(const TraceEvent& event) {
  // The core's log lines are its own account, never a fact about the world.
  if (event.source == EventSource::core || event.service.empty()) return;
  if (event.type == "service_call") {
    Tally& t = tally(event.service);
    t.called = true;
    count_at(t.calls, minute_of(event.t));
  } else if (event.type == "service_reply") {
    Tally& t = tally(event.service);
    const std::size_t minute = minute_of(event.t);
    const bool has_status = event.data.contains("status") && event.data.at("status").is_number();
    const std::int64_t status = has_status ? event.num("status") : 0;
    if (has_status && status >= 200 && status <= 299) {
      count_at(t.useful, minute);
      return;
    }
    count_at(t.failed, minute);
    // No HTTP answer at all is a transport error, named or not.
    if (has_status) {
      ++t.refused;
    } else {
      ++t.transport_errors;
    }
  } else if (event.type == "fault_start" || event.type == "fault_end") {
    add_fault_event(event);
  }
}

std::vector<ServiceLoad> ServiceLoadCounter::finish(TimeMs end_ms) const {
  REHEARSE_ASSERT_GE(end_ms, start_ms_);  // a run never ends before it starts
  const DurationMs span = end_ms - start_ms_;
  // At least one minute, so that a run of no time still has a row.
  const auto minutes =
      std::max<std::size_t>(1,
                            static_cast<std::size_t>((span + kLoadBucketMs - 1) / kLoadBucketMs));
  std::vector<ServiceLoad> out;
  for (const auto& [name, t] : tallies_) {
    const auto user = scenario_.services.user.find(name);
    const bool is_user = user != scenario_.services.user.end();
    if (!is_user && !t.called) continue;
    ServiceLoad load;
    load.service = name;
    load.user = is_user;
    load.start_ms = start_ms_;
    load.end_ms = end_ms;
    load.calls_per_minute = fitted(t.calls, minutes);
    load.useful_per_minute = fitted(t.useful, minutes);
    load.failed_per_minute = fitted(t.failed, minutes);
    for (std::size_t i = 0; i < minutes; ++i) {
      load.calls += load.calls_per_minute[i];
      load.useful += load.useful_per_minute[i];
      load.peak_per_minute = std::max(load.peak_per_minute, load.calls_per_minute[i]);
    }
    load.refused = t.refused;
    load.transport_errors = t.transport_errors;
    if (load.useful > 0) load.work_amplification_milli = ratio_milli(load.calls, load.useful);
    if (span > 0) load.goodput_per_minute_milli = ratio_milli(load.useful * kLoadBucketMs, span);
    if (is_user && user->second.capacity) {
      load.capacity_per_minute_milli =
          service_capacity_per_minute_milli(*user->second.capacity, user->second.timing.latency_ms);
    }
    load.faults = t.faults;
    for (const LoadFaultWindow& w : load.faults) {
      load.trigger_end = std::max(load.trigger_end.value_or(w.until_ms), w.until_ms);
    }
    if (load.trigger_end) judge_trigger(load);
    out.push_back(std::move(load));
  }
  return out;
}

std::vector<ServiceLoad> service_load(const Scenario& scenario,
                                      const std::vector<TraceEvent>& events, TimeMs start_ms,
                                      TimeMs end_ms) {
  ServiceLoadCounter counter(scenario, start_ms);
  for (const TraceEvent& e : events) counter.add(e);
  return counter.finish(end_ms);
}

json milli_json(std::int64_t milli) {
  if (milli % 1000 == 0) return milli / 1000;
  return static_cast<double>(milli) / 1000.0;
}

namespace {

json windows_json(const std::vector<LoadFaultWindow>& faults) {
  json out = json::array();
  for (const LoadFaultWindow& w : faults) {
    out.push_back({{"fault", w.fault},
                   {"kind", w.kind},
                   {"from", format_instant(w.from_ms)},
                   {"until", format_instant(w.until_ms)},
                   {"ended", w.ended}});
  }
  return out;
}

}  // namespace

json to_json(const ServiceLoad& load) {
  json out{{"user", load.user},
           {"calls", load.calls},
           {"useful", load.useful},
           {"failed", load.failed()},
           {"refused", load.refused},
           {"transport_errors", load.transport_errors},
           {"goodput_per_minute", milli_json(load.goodput_per_minute_milli)},
           {"peak_per_minute", load.peak_per_minute},
           {"faults", windows_json(load.faults)},
           {"metastable", load.metastable},
           {"metastable_judged", load.metastable_judged()}};
  if (load.work_amplification_milli) {
    out["work_amplification"] = milli_json(*load.work_amplification_milli);
  }
  if (load.capacity_per_minute_milli) {
    out["capacity_per_minute"] = milli_json(*load.capacity_per_minute_milli);
  }
  if (load.trigger_end) out["trigger_end"] = format_instant(*load.trigger_end);
  if (load.peak_after_trigger_per_minute) {
    out["peak_after_trigger_per_minute"] = *load.peak_after_trigger_per_minute;
  }
  if (load.drain_ms) out["drain_ms"] = *load.drain_ms;
  if (load.metastable_minute) {
    out["metastable_minute"] = format_instant(load.minute_start(*load.metastable_minute));
  }
  out["per_minute"] = {{"from", format_instant(load.start_ms)},
                       {"minute_ms", kLoadBucketMs},
                       {"calls", load.calls_per_minute},
                       {"useful", load.useful_per_minute},
                       {"failed", load.failed_per_minute}};
  return out;
}

json to_json(const std::vector<ServiceLoad>& loads) {
  json out = json::object();
  for (const ServiceLoad& load : loads) out[load.service] = to_json(load);
  return out;
}

}  // namespace rehearse::sim
