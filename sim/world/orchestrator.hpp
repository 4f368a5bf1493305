// SimOrchestrator: the simulated agent orchestrator ("orchestrator"), a
// SimService plugged into SimServices; the external system the reconcile job
// (model/reconcile.hpp) reads issues from and hands work to.
//
// Building it from a scenario (sim/world/scenario.hpp), for the world runner:
//   SimOrchestrator orch(sim, trace, *scenario.services.orchestrator);
//     // instance, issues {id, status}, agents {id, role, present}, timing
//   orch.apply_job_items(job.items);    // `lost` items: gone at start
//   // Faults reach it through their kinds' hooks (sim/world/fault_kinds.cpp):
//   // issues_deleted, issue_status, agent_removed / agent_restored as the
//   // schedule_* world events below; http_errors, network_errors, timeouts
//   // with service orchestrator as add_fault windows.
//   ReconcileJob job(clock, services, log, disk, scenario.env,
//                    reconcile_config_from(job_spec));  // items, batch_size
//
// Operations (what the core calls; bodies are JSON):
//   list_agents -> 200 {"instance", "agents": [{"id", "role"}]}: the present
//                  agents, in declaration order;
//   whoami      -> 200 {"instance"};
//   get_issue   (target issue) -> 200 {"id", "status"}, or 404 when the issue
//                  never existed or a migration deleted it;
//   assign      (target issue, body {"agent", "role"}) -> 200 {"id", "agent"};
//                  404 for a missing issue; 422 when the agent is not present;
//   anything else -> 400.
// Scripted error windows are checked first (they model the gateway or an
// outage in front of the API), in the order added; the first hit answers.
//
// Faults (injected here only; each also as a world event at an instant):
//   - delete_issues(issues, new_instance, gone_status): a migration that loses
//     issues (they answer 404, or 410 Gone) and, when a new instance id is
//     given, changes the instance id;
//   - set_issue_status(issue, status): an external status change; any order,
//     so a status may go "back" (in_review -> in_progress);
//   - remove_agent(id) / restore_agent(id): the agent leaves / rejoins the list;
//   - add_fault(OrchestratorFault): a window of HTTP errors or transport errors.
//
// Trace events (service "orchestrator"; item = the issue id; agent ids only as
// their first 8 characters, never whole):
//   issue_deleted     {instance, status}          a migration deleted the issue
//   instance_changed  {from, to}                  a migration changed the instance id
//   issue_status_set  {status, previous}          an external status change
//   agent_removed     {agent, role}               agent left the list
//   agent_restored    {agent, role}               agent is back
//   issue_not_found   {operation, queries, first, status}
//                                                 a 404 / 410 answered for an item (job-attributed)
//   issue_assigned    {agent, role}               an assign call succeeded
//   fault_hit         {operation, fault, status | transport_error}
// Counters (queries per issue, queries after the first 404) let tests and
// monitors check invariant 8 from the service's side.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/reconcile.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/scenario.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {

inline constexpr const char* kOrchestratorName = "orchestrator";

struct OrchestratorFault {
  std::string operation;  // empty: every operation
  TimeMs from_ms = std::numeric_limits<TimeMs>::min();
  TimeMs until_ms = std::numeric_limits<TimeMs>::max();  // exclusive
  double rate = 1.0;
  // An HTTP status, or (http_status == 0) a transport error of kind `transport`.
  int http_status = 0;
  TransportErrorKind transport = TransportErrorKind::none;
  std::string label;  // names the fault in the trace
};

class SimOrchestrator final : public SimService {
 public:
  // `service` is the scenario's services.orchestrator (timing included).
  SimOrchestrator(Simulator& simulator, Trace& trace, const OrchestratorService& service,
                  std::string name = kOrchestratorName);

  const std::string& name() const override { return name_; }
  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override;

  // --- setup from a reconcile job's items: a `lost` item's issue is gone at
  // start (deleted without a trace event: it was lost before the run) ---
  void apply_job_items(const std::vector<ReconcileItem>& items);

  // --- faults, now ---
  void delete_issues(const std::vector<std::string>& issues,
                     const std::optional<std::string>& new_instance, int gone_status = 404);
  void set_issue_status(const std::string& issue, const std::string& status);
  void remove_agent(const std::string& agent);
  void restore_agent(const std::string& agent);
  void add_fault(OrchestratorFault fault);

  // --- faults, as world events ---
  // The lost issues answer `gone_status` (404 or 410) from then on.
  void schedule_delete_issues(TimeMs at_ms, std::vector<std::string> issues,
                              std::optional<std::string> new_instance, int gone_status = 404);
  void schedule_issue_status(TimeMs at_ms, std::string issue, std::string status);
  void schedule_remove_agent(TimeMs at_ms, std::string agent);
  void schedule_restore_agent(TimeMs at_ms, std::string agent);

  // --- observations ---
  const std::string& instance() const noexcept { return instance_; }
  bool has_issue(const std::string& issue) const;
  std::optional<std::string> issue_status(const std::string& issue) const;
  bool agent_present(const std::string& agent) const;
  // get_issue and assign calls naming the issue (faulted ones included).
  std::uint64_t queries(const std::string& issue) const;
  // Of those, how many arrived after a 404 had been answered for the issue.
  std::uint64_t queries_after_not_found(const std::string& issue) const;
  std::uint64_t not_found_answers(const std::string& issue) const;
  std::uint64_t calls(const std::string& operation) const;
  std::uint64_t total_calls() const noexcept { return total_calls_; }
  // Successful assign calls per issue.
  std::uint64_t assignments(const std::string& issue) const;

 private:
  struct IssueState {
    std::string status;
    bool deleted = false;
    int gone_status = 404;  // what a deleted issue answers: 404, or 410 Gone
    std::uint64_t queries = 0;
    std::uint64_t after_404 = 0;
    std::uint64_t not_found = 0;
    std::uint64_t assigned = 0;
  };
  struct AgentState {
    std::string id;
    std::string role;
    bool present = true;
  };

  std::optional<SimReply> apply_faults(const ServiceRequest& request, TimeMs now_ms);
  SimReply reply(int status, nlohmann::json body) const;
  SimReply not_found(const ServiceRequest& request, TimeMs now_ms);
  TraceEvent event(TimeMs now_ms, std::string type) const;
  AgentState* find_agent(const std::string& id);
  const AgentState* find_agent(const std::string& id) const;

  Simulator& simulator_;
  Trace& trace_;
  std::string name_;
  ServiceTiming timing_;
  std::string instance_;
  std::map<std::string, IssueState, std::less<>> issues_;
  std::vector<AgentState> agents_;  // declaration order
  std::vector<OrchestratorFault> faults_;
  Rng fault_rng_;
  std::map<std::string, std::uint64_t, std::less<>> calls_;
  std::uint64_t total_calls_ = 0;
};

// The reconcile job's configuration from a scenario job (kind reconcile):
// items {issue, stage} in file order (the store directory is
// "pipeline/<job id>") and batch_size.
ReconcileConfig reconcile_config_from(const JobSpec& job);

}  // namespace rehearse::sim
