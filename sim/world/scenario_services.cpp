// The loader's services: the built-in ones, the orchestrator's issues and
// agents, user services and a call job's calls.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

ServiceTiming Loader::load_timing(const json& obj, const std::string& pointer) {
  ServiceTiming timing;
  if (const json* v = field(obj, "latency")) {
    if (auto d = read_duration(*v, child(pointer, "latency"), 0)) timing.latency_ms = *d;
  }
  if (const json* v = field(obj, "timeout")) {
    if (auto d = read_duration(*v, child(pointer, "timeout"), 1)) timing.timeout_ms = *d;
  }
  // What the services' constructors require: a latency >= 0 and a positive timeout.
  REHEARSE_ASSERT(timing.latency_ms >= 0 && timing.timeout_ms > 0);
  return timing;
}

void Loader::load_services(const json& v, const std::string& pointer) {
  // The first section that declares services: nothing is declared before it.
  REHEARSE_ASSERT(declared_services_.empty() && user_services_.empty());
  if (!expect_object(v, pointer, "the simulated services")) return;
  for (const auto& [name, body] : v.items()) {
    const auto kind = parse_service_kind(name);
    const std::string at = child(pointer, name);
    if (!kind) {
      load_user_service(name, body, at);
      continue;
    }
    // Declared even if its body has errors, so references to it do not
    // cascade into "not declared" errors.
    declared_services_.insert(*kind);
    if (!expect_object(body, at, fmt::format("the '{}' service settings", name))) continue;
    switch (*kind) {
      case ServiceKind::model_api:
        check_keys(body, at, keys_of("model_api"));
        scenario_.services.model_api = ModelApiService{load_timing(body, at)};
        break;
      case ServiceKind::orchestrator: load_orchestrator(body, at); break;
      case ServiceKind::brokerage: {
        check_keys(body, at, keys_of("brokerage"));
        BrokerageService brokerage;
        brokerage.timing = load_timing(body, at);
        if (const json* t = field(body, "token_lifetime")) {
          if (auto d = read_duration(*t, child(at, "token_lifetime"), 1)) {
            brokerage.token_lifetime_ms = *d;
          }
        }
        if (const json* t = field(body, "issue_latency")) {
          if (auto d = read_duration(*t, child(at, "issue_latency"), 0)) {
            brokerage.issue_latency_ms = *d;
          }
        }
        scenario_.services.brokerage = brokerage;
        break;
      }
      case ServiceKind::messenger: {
        check_keys(body, at, keys_of("messenger"));
        MessengerService messenger;
        messenger.timing = load_timing(body, at);
        if (const json* t = require(body, at, "targets", "a non-empty array of target names")) {
          messenger.targets = read_name_list(*t, child(at, "targets"), "target", true);
        }
        target_names_ = messenger.targets;
        scenario_.services.messenger = messenger;
        break;
      }
    }
  }
}

// A key of /services that is no built-in name declares a user service, unless
// it is so close to a built-in name that it is more likely a typo of it.
void Loader::load_user_service(const std::string& name, const json& body,
                               const std::string& pointer) {
  REHEARSE_ASSERT(!parse_service_kind(name));  // a built-in name is load_services' own
  if (const auto near = closest(name, keys_of("services"))) {
    error(pointer, fmt::format("unknown key '{}' (did you mean '{}'? a service of your own needs "
                               "a name not this close to a built-in one)",
                               name, *near));
    return;
  }
  if (!is_identifier(name)) {
    value_error(pointer,
                fmt::format("invalid service name \"{}\": expected {}", name, kIdentifierRule));
    return;
  }
  user_services_.insert(name);
  if (!expect_object(body, pointer, fmt::format("the '{}' service settings", name))) return;
  check_keys(body, pointer, keys_of("user_service"));
  UserService service{load_timing(body, pointer)};
  if (const json* c = field(body, "capacity")) {
    service.capacity = load_capacity(*c, child(pointer, "capacity"));
  }
  scenario_.services.user[name] = service;
}

// A call job's `calls`: a non-empty list of {service, method?, path?}, each
// service a user service declared in /services.
void Loader::load_calls(const json& v, const std::string& pointer, JobSpec& job) {
  REHEARSE_ASSERT(job.calls.empty());  // a job's one `calls` key
  if (!expect_array(v, pointer, "a list of calls {service, method, path}", true, kMaxCalls)) return;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = child(pointer, i);
    if (!expect_object(v[i], at, "a call {service, method, path}")) continue;
    check_keys(v[i], at, keys_of("call"));
    JobSpec::Call call;
    if (const json* s = require(v[i], at, "service", "a service declared in /services")) {
      const std::string sp = child(at, "service");
      if (auto name = read_identifier(*s, sp, "service name")) {
        if (parse_service_kind(*name)) {
          value_error(sp, fmt::format("a call job calls services of your own; '{}' is a built-in "
                                      "service with its own job kind",
                                      *name));
        } else if (user_services_.count(*name) == 0) {
          reference_error(sp, fmt::format("job '{}' calls the '{}' service, which is not declared "
                                          "in /services",
                                          job.id, *name));
        }
        call.service = *name;
      }
    }
    if (const json* m = field(v[i], "method")) {
      const std::vector<std::string> methods{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"};
      if (auto k = read_name(*m, child(at, "method"), methods, "HTTP method")) {
        call.method = methods[*k];
      }
    }
    if (const json* p = field(v[i], "path")) {
      const std::string pp = child(at, "path");
      if (auto text = read_string(*p, pp, "a path starting with '/'")) {
        if (text->empty() || text->front() != '/') {
          value_error(pp,
                      fmt::format("invalid path \"{}\": expected a path starting with '/'", *text));
        } else {
          call.path = *text;
        }
      }
    }
    job.calls.push_back(std::move(call));
  }
  REHEARSE_ASSERT_LE(job.calls.size(), kMaxCalls);  // expect_array's bound
}

void Loader::load_orchestrator(const json& v, const std::string& pointer) {
  check_keys(v, pointer, keys_of("orchestrator"));
  OrchestratorService orchestrator;
  orchestrator.timing = load_timing(v, pointer);
  if (const json* i = field(v, "instance")) {
    if (auto s = read_identifier(*i, child(pointer, "instance"), "instance id")) {
      orchestrator.instance = *s;
    }
  }
  if (const json* list = field(v, "issues")) {
    const std::string at = child(pointer, "issues");
    if (expect_array(*list, at, "a list of issues", false)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ip = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ip, "an issue")) continue;
        check_keys(entry, ip, keys_of("issue"));
        OrchestratorIssue issue;
        bool ok = true;
        if (const json* id = require(entry, ip, "id", "the issue id")) {
          auto s = read_identifier(*id, child(ip, "id"), "issue id");
          if (s && std::find(issue_ids_.begin(), issue_ids_.end(), *s) != issue_ids_.end()) {
            value_error(child(ip, "id"), fmt::format("duplicate issue id '{}'", *s));
            s.reset();
          }
          if (s) {
            issue.id = *s;
            issue_ids_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* st = require(entry, ip, "status", "the external status")) {
          if (auto k = read_name(*st, child(ip, "status"), issue_status_names(), "issue status")) {
            issue.status = issue_status_names()[*k];
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (ok) orchestrator.issues.push_back(issue);
      }
    }
  }
  if (const json* list = field(v, "agents")) {
    const std::string at = child(pointer, "agents");
    if (expect_array(*list, at, "a list of agents", false)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ap = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ap, "an agent")) continue;
        check_keys(entry, ap, keys_of("agent"));
        OrchestratorAgent agent;
        bool ok = true;
        if (const json* id = require(entry, ap, "id", "the agent id")) {
          auto s = read_identifier(*id, child(ap, "id"), "agent id");
          if (s && std::find(agent_ids_.begin(), agent_ids_.end(), *s) != agent_ids_.end()) {
            value_error(child(ap, "id"), fmt::format("duplicate agent id '{}'", *s));
            s.reset();
          }
          if (s) {
            agent.id = *s;
            agent_ids_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* r = require(entry, ap, "role", "the role name the orchestrator reports")) {
          auto s = read_string(*r, child(ap, "role"), "a role name");
          if (s && !is_role_name(*s)) {
            value_error(
                child(ap, "role"),
                fmt::format("invalid role name \"{}\": expected lower-case letters, digits, "
                            "_ and -, starting with a letter",
                            *s));
            s.reset();
          }
          if (s) {
            agent.role = *s;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* p = field(entry, "present")) {
          if (auto b = read_bool(*p, child(ap, "present"))) agent.present = *b;
        }
        if (ok) orchestrator.agents.push_back(agent);
      }
    }
  }
  scenario_.services.orchestrator = orchestrator;
}

bool Loader::require_service(ServiceKind kind, const std::string& pointer, std::string_view who) {
  if (declared_services_.count(kind) != 0) return true;
  reference_error(pointer, fmt::format("{} uses the '{}' service, which is not declared in "
                                       "/services",
                                       who, to_string(kind)));
  return false;
}

std::vector<std::string> Loader::load_targets(const json& v, const std::string& pointer,
                                              bool non_empty) {
  if (declared_services_.count(ServiceKind::messenger) == 0) {
    reference_error(pointer,
                    "targets are messenger targets, but no 'messenger' service is "
                    "declared in /services");
    return {};
  }
  std::vector<std::string> targets = read_name_list(v, pointer, "target", non_empty, &target_names_,
                                                    "/services/messenger/targets");
  // Declared targets only, each at most once.
  REHEARSE_ASSERT_LE(targets.size(), target_names_.size());
  return targets;
}

}  // namespace rehearse::sim::scenario_detail
