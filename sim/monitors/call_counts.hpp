// Shared tracker, for the tallies only: service calls (per service and per
// job, from `service_call`) and the notifications committed to the outbox
// (per event, overall and per job). It judges nothing.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/kernel/trace.hpp"
#include "sim/monitors/job_table.hpp"

namespace rehearse::sim {

class CallCounts {
 public:
  explicit CallCounts(const JobTable& jobs) : jobs_(jobs) {}

  void observe_call(const TraceEvent& service_call);
  void observe_notification(const TraceEvent& notice);
  // jobs.<id>.calls / .notifications, services.<name>.calls, notifications.
  void tally(nlohmann::json& tallies) const;

 private:
  const JobTable& jobs_;
  std::map<std::string, std::int64_t> service_calls_;
  std::map<std::string, std::int64_t> job_calls_;
  std::map<std::string, std::int64_t> notifications_total_;
  std::map<std::string, std::map<std::string, std::int64_t>> job_notifications_;
};

}  // namespace rehearse::sim
