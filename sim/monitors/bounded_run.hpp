// bounded_run: a run records at most `queue.max_events` trace events (fires
// once). Reads every event ("*"), counting them; the world runner also
// reports the simulator's own bound on executed events.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class BoundedRun final : public Monitor {
 public:
  static constexpr const char* kName = "bounded_run";
  static constexpr const char* kSummary =
      "the run ended by itself: the simulator's event limit was not reached";
  static std::vector<std::string> reads() { return {"*"}; }

  BoundedRun(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;

 private:
  const MonitorContext& context_;
  std::int64_t max_events_ = 0;
  bool fired_ = false;
};

}  // namespace rehearse::sim
