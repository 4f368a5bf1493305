// A sequential run stops at its first failed request (docs/token-client.md
// "FetchJob": a fetch job without `parallel`; docs/scenario-format.md: a call
// job stops at its first failed call). Judged from the world's records of the
// run's own requests (`service_call` / `service_reply`, attributed with the
// run's job and request id, which names the run's slot and attempt): a
// request sent while another request of the same run has a failed last
// answer fires. In a sequential run the earlier request is finished by then,
// so its last answer is its final one (a 401 the client recovers from is
// followed by the issuance's reply and the resend's, under the same request
// id, before the next request goes out).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/monitors/monitor.hpp"
#include "sim/world/scenario.hpp"

namespace rehearse::sim {

class SequentialRequests {
 public:
  explicit SequentialRequests(const Scenario& scenario);

  // A `service_call` or `service_reply`; other events are ignored.
  void observe(const TraceEvent& event, std::size_t index, const char* invariant, Violations& out);
  // The acting worker went down: its runs are cut (a stalled run re-runs
  // later with the same slot, attempt and request ids).
  void forget() { runs_.clear(); }

 private:
  struct Run {
    std::string name;  // `{job}/{slot}/a{attempt}`
    // Requests whose last answer failed, with that answer's description.
    std::map<std::string, std::string> failed;
  };
  // The job's run this event belongs to (another slot or attempt starts a
  // new run: the queue takes one run of a job at a time); nullptr when the
  // event is not a request of a sequential run.
  Run* run_of(const TraceEvent& event);

  std::map<std::string, const char*> sequential_;  // job -> its kind's name
  std::map<std::string, Run> runs_;                // job -> its run in progress
};

}  // namespace rehearse::sim
