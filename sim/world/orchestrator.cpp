#include "sim/world/orchestrator.hpp"

#include <utility>

#include <fmt/format.h>

#include "model/agent_roles.hpp"
#include "model/assert.hpp"

namespace rehearse::sim {
using nlohmann::json;

SimOrchestrator::SimOrchestrator(Simulator& simulator, Trace& trace,
                                 const OrchestratorService& service, std::string name)
    : simulator_(simulator),
      trace_(trace),
      name_(std::move(name)),
      timing_(service.timing),
      instance_(service.instance),
      fault_rng_(simulator.rng().derive(name_ + "/faults")) {
  REHEARSE_ASSERT(!instance_.empty());
  REHEARSE_ASSERT(timing_.latency_ms >= 0 && timing_.timeout_ms >= 0);
  for (const OrchestratorIssue& issue : service.issues) {
    REHEARSE_ASSERT(issues_.count(issue.id) == 0);
    issues_[issue.id].status = issue.status;
  }
  for (const OrchestratorAgent& agent : service.agents) {
    REHEARSE_ASSERT(find_agent(agent.id) == nullptr);
    agents_.push_back(AgentState{agent.id, agent.role, agent.present});
  }
}

void SimOrchestrator::apply_job_items(const std::vector<ReconcileItem>& items) {
  for (const ReconcileItem& item : items) {
    if (!item.lost) continue;
    REHEARSE_ASSERT(!item.issue.empty());  // a job's items name their issue
    // Lost before the run: the issue answers 404 from the start.
    IssueState& state = issues_[item.issue];
    state.deleted = true;
  }
}

TraceEvent SimOrchestrator::event(TimeMs now_ms, std::string type) const {
  TraceEvent e;
  e.t = now_ms;
  e.type = std::move(type);
  e.service = name_;
  return e;
}

SimOrchestrator::AgentState* SimOrchestrator::find_agent(const std::string& id) {
  for (AgentState& agent : agents_) {
    if (agent.id == id) return &agent;
  }
  return nullptr;
}

const SimOrchestrator::AgentState* SimOrchestrator::find_agent(const std::string& id) const {
  for (const AgentState& agent : agents_) {
    if (agent.id == id) return &agent;
  }
  return nullptr;
}

// --- faults -------------------------------------------------------------------

void SimOrchestrator::delete_issues(const std::vector<std::string>& issues,
                                    const std::optional<std::string>& new_instance,
                                    int gone_status) {
  const TimeMs now_ms = simulator_.now();
  if (new_instance && *new_instance != instance_) {
    TraceEvent e = event(now_ms, "instance_changed");
    e.data["from"] = instance_;
    e.data["to"] = *new_instance;
    trace_.record(std::move(e));
    instance_ = *new_instance;
  }
  // The instance reported by a migration is the one answered from now on.
  REHEARSE_ASSERT(!new_instance || instance_ == *new_instance);
  REHEARSE_ASSERT(!instance_.empty());
  for (const std::string& issue : issues) {
    auto it = issues_.find(issue);
    if (it == issues_.end() || it->second.deleted) continue;
    it->second.deleted = true;
    it->second.gone_status = gone_status;
    TraceEvent e = event(now_ms, "issue_deleted");
    e.item = issue;
    e.data["instance"] = instance_;
    e.data["status"] = gone_status;
    trace_.record(std::move(e));
  }
}

void SimOrchestrator::set_issue_status(const std::string& issue, const std::string& status) {
  auto it = issues_.find(issue);
  if (it == issues_.end() || it->second.deleted) return;  // nothing to change on a lost issue
  REHEARSE_ASSERT(!status.empty());                       // one of the issue status names
  TraceEvent e = event(simulator_.now(), "issue_status_set");
  e.item = issue;
  e.data["status"] = status;
  e.data["previous"] = it->second.status;
  trace_.record(std::move(e));
  it->second.status = status;
}

void SimOrchestrator::remove_agent(const std::string& agent) {
  AgentState* state = find_agent(agent);
  if (state == nullptr || !state->present) return;
  REHEARSE_ASSERT(!state->id.empty());
  state->present = false;
  TraceEvent e = event(simulator_.now(), "agent_removed");
  e.data["agent"] = short_id(agent);
  e.data["role"] = state->role;
  trace_.record(std::move(e));
}

void SimOrchestrator::restore_agent(const std::string& agent) {
  AgentState* state = find_agent(agent);
  if (state == nullptr || state->present) return;
  REHEARSE_ASSERT(!state->id.empty());
  state->present = true;
  TraceEvent e = event(simulator_.now(), "agent_restored");
  e.data["agent"] = short_id(agent);
  e.data["role"] = state->role;
  trace_.record(std::move(e));
}

void SimOrchestrator::add_fault(OrchestratorFault fault) {
  REHEARSE_ASSERT(fault.from_ms <= fault.until_ms);
  REHEARSE_ASSERT(fault.rate >= 0.0 && fault.rate <= 1.0);
  REHEARSE_ASSERT((fault.http_status != 0) != (fault.transport != TransportErrorKind::none));
  if (fault.label.empty()) fault.label = fmt::format("fault-{}", faults_.size());
  faults_.push_back(std::move(fault));
}

void SimOrchestrator::schedule_delete_issues(TimeMs at_ms, std::vector<std::string> issues,
                                             std::optional<std::string> new_instance,
                                             int gone_status) {
  simulator_.schedule_call_for(
      kWorld, at_ms,
      [this, issues = std::move(issues), new_instance = std::move(new_instance), gone_status] {
        delete_issues(issues, new_instance, gone_status);
      },
      "issues_deleted");
}

void SimOrchestrator::schedule_issue_status(TimeMs at_ms, std::string issue, std::string status) {
  REHEARSE_ASSERT(!issue.empty() && !status.empty());  // both required by issue_status
  simulator_.schedule_call_for(
      kWorld, at_ms,
      [this, issue = std::move(issue), status = std::move(status)] {
        set_issue_status(issue, status);
      },
      "issue_status");
}

void SimOrchestrator::schedule_remove_agent(TimeMs at_ms, std::string agent) {
  REHEARSE_ASSERT(!agent.empty());  // a declared agent id
  simulator_.schedule_call_for(
      kWorld, at_ms, [this, agent = std::move(agent)] { remove_agent(agent); }, "agent_removed");
}

void SimOrchestrator::schedule_restore_agent(TimeMs at_ms, std::string agent) {
  REHEARSE_ASSERT(!agent.empty());  // a declared agent id
  simulator_.schedule_call_for(
      kWorld, at_ms, [this, agent = std::move(agent)] { restore_agent(agent); }, "agent_restored");
}

// --- requests -----------------------------------------------------------------

SimReply SimOrchestrator::reply(int status, json body) const {
  // 0: the placeholder apply_faults overwrites; otherwise an HTTP status.
  REHEARSE_ASSERT(status == 0 || (status >= 200 && status <= 599));
  ServiceResponse response;
  response.status = status;
  response.body = std::move(body);
  return SimReply{ServiceResult(std::move(response)), timing_.latency_ms};
}

std::optional<SimReply> SimOrchestrator::apply_faults(const ServiceRequest& request,
                                                      TimeMs now_ms) {
  for (const OrchestratorFault& fault : faults_) {
    if (!fault.operation.empty() && fault.operation != request.operation) continue;
    if (now_ms < fault.from_ms || now_ms >= fault.until_ms) continue;
    // One draw per matching call, and only for partial rates (as the brokerage).
    if (fault.rate < 1.0 && !fault_rng_.next_bool(fault.rate)) continue;
    TraceEvent e = event(now_ms, "fault_hit");
    attribute_from_headers(e, request.headers);
    e.data["operation"] = request.operation;
    e.data["fault"] = fault.label;
    SimReply answer = reply(0, json());
    if (fault.http_status != 0) {
      answer = reply(fault.http_status,
                     json{{"message", fmt::format("HTTP {} from {}", fault.http_status, name_)}});
      e.data["status"] = fault.http_status;
    } else {
      REHEARSE_ASSERT(fault.transport != TransportErrorKind::none);  // add_fault: one or the other
      answer = SimReply{
          ServiceResult(TransportError{fault.transport, transport_error_text(fault.transport, name_,
                                                                             timing_.timeout_ms)}),
          fault.transport == TransportErrorKind::timeout ? timing_.timeout_ms : timing_.latency_ms};
      e.data["transport_error"] = to_string(fault.transport);
    }
    trace_.record(std::move(e));
    return answer;
  }
  return std::nullopt;
}

SimReply SimOrchestrator::not_found(const ServiceRequest& request, TimeMs now_ms) {
  IssueState& state = issues_[request.target];
  REHEARSE_ASSERT(state.deleted);  // only a lost issue answers "not found"
  ++state.not_found;
  TraceEvent e = event(now_ms, "issue_not_found");
  attribute_from_headers(e, request.headers);
  e.item = request.target;
  e.data["operation"] = request.operation;
  e.data["queries"] = state.queries;
  e.data["first"] = state.not_found == 1;
  e.data["status"] = state.gone_status;
  trace_.record(std::move(e));
  if (state.gone_status == 410) {
    return reply(410, json{{"message", fmt::format("issue {} was deleted", request.target)}});
  }
  return reply(404, json{{"message", fmt::format("issue {} not found", request.target)}});
}

SimReply SimOrchestrator::handle(const ServiceRequest& request, TimeMs now_ms) {
  ++calls_[request.operation];
  ++total_calls_;
  const bool about_issue = request.operation == "get_issue" || request.operation == "assign";
  if (about_issue) {
    auto it = issues_.find(request.target);
    if (it != issues_.end()) {
      ++it->second.queries;
      if (it->second.not_found > 0) ++it->second.after_404;
    } else {
      IssueState& unknown = issues_[request.target];  // never existed: deleted from the start
      unknown.deleted = true;
      unknown.queries = 1;
    }
  }
  if (std::optional<SimReply> faulted = apply_faults(request, now_ms)) return std::move(*faulted);

  if (request.operation == "list_agents") {
    json agents = json::array();
    for (const AgentState& agent : agents_) {
      if (agent.present) agents.push_back(json{{"id", agent.id}, {"role", agent.role}});
    }
    return reply(200, json{{"instance", instance_}, {"agents", std::move(agents)}});
  }
  if (request.operation == "whoami") return reply(200, json{{"instance", instance_}});
  if (request.operation == "get_issue") {
    const IssueState& state = issues_.at(request.target);
    if (state.deleted) return not_found(request, now_ms);
    return reply(200, json{{"id", request.target}, {"status", state.status}});
  }
  if (request.operation == "assign") {
    IssueState& state = issues_.at(request.target);
    if (state.deleted) return not_found(request, now_ms);
    const std::string agent_id = request.body.is_object() && request.body.contains("agent") &&
                                         request.body.at("agent").is_string()
                                     ? request.body.at("agent").get<std::string>()
                                     : std::string();
    const AgentState* agent = find_agent(agent_id);
    if (agent == nullptr || !agent->present) {
      return reply(422,
                   json{{"message", fmt::format("agent {} is not available", short_id(agent_id))}});
    }
    ++state.assigned;
    REHEARSE_ASSERT_LE(state.assigned, state.queries);  // every assign counted as a query first
    TraceEvent e = event(now_ms, "issue_assigned");
    attribute_from_headers(e, request.headers);
    e.item = request.target;
    e.data["agent"] = short_id(agent_id);
    e.data["role"] = request.body.value("role", std::string());
    trace_.record(std::move(e));
    return reply(200, json{{"id", request.target}, {"agent", short_id(agent_id)}});
  }
  return reply(400, json{{"message", "unknown operation " + request.operation}});
}

// --- observations -------------------------------------------------------------

bool SimOrchestrator::has_issue(const std::string& issue) const {
  auto it = issues_.find(issue);
  return it != issues_.end() && !it->second.deleted;
}

std::optional<std::string> SimOrchestrator::issue_status(const std::string& issue) const {
  auto it = issues_.find(issue);
  if (it == issues_.end() || it->second.deleted) return std::nullopt;
  return it->second.status;
}

bool SimOrchestrator::agent_present(const std::string& agent) const {
  const AgentState* state = find_agent(agent);
  return state != nullptr && state->present;
}

std::uint64_t SimOrchestrator::queries(const std::string& issue) const {
  auto it = issues_.find(issue);
  if (it == issues_.end()) return 0;
  // Every 404 and every assignment was counted as a query first.
  REHEARSE_ASSERT_LE(it->second.not_found, it->second.queries);
  return it->second.queries;
}

std::uint64_t SimOrchestrator::queries_after_not_found(const std::string& issue) const {
  auto it = issues_.find(issue);
  if (it == issues_.end()) return 0;
  REHEARSE_ASSERT_LE(it->second.after_404, it->second.queries);
  return it->second.after_404;
}

std::uint64_t SimOrchestrator::not_found_answers(const std::string& issue) const {
  auto it = issues_.find(issue);
  if (it == issues_.end()) return 0;
  // A 404 answers a query about the issue (a fault answers before the lookup).
  REHEARSE_ASSERT_LE(it->second.not_found, it->second.queries);
  return it->second.not_found;
}

std::uint64_t SimOrchestrator::calls(const std::string& operation) const {
  auto it = calls_.find(operation);
  if (it == calls_.end()) return 0;
  REHEARSE_ASSERT_LE(it->second, total_calls_);
  return it->second;
}

std::uint64_t SimOrchestrator::assignments(const std::string& issue) const {
  auto it = issues_.find(issue);
  if (it == issues_.end()) return 0;
  REHEARSE_ASSERT_LE(it->second.assigned, it->second.queries);
  return it->second.assigned;
}

ReconcileConfig reconcile_config_from(const JobSpec& job) {
  REHEARSE_ASSERT(!job.id.empty());  // names the job's store directory
  ReconcileConfig config;
  config.service = kOrchestratorName;
  config.store_dir = "pipeline-" + job.id;
  for (const ReconcileItem& item : job.items) {
    ReconcileSeed seed;
    seed.issue = item.issue;
    seed.stage = item.stage;
    config.items.push_back(std::move(seed));
  }
  config.batch_size = job.batch_size;
  return config;
}

}  // namespace rehearse::sim
