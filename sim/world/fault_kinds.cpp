// The table of fault kinds (sim/world/fault_kinds.hpp) and what follows from it:
// the schema's fault part and the docs' table of kinds.
#include "sim/world/fault_kinds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "model/assert.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/generic_service.hpp"
#include "sim/world/messenger.hpp"
#include "sim/world/model_api.hpp"
#include "sim/world/orchestrator.hpp"

// The entries below use designated initializers that name only the fields
// an entry sets; the others keep their defaults on purpose. GCC 12 warns
// about every omitted field even so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace rehearse::sim {

using nlohmann::json;

namespace {

// ------------------------------------------------------- vocabulary of keys

// network_errors `error` values, in this order.
const std::vector<std::pair<std::string, TransportErrorKind>>& transport_errors() {
  static const std::vector<std::pair<std::string, TransportErrorKind>> kErrors{
      {"connection_refused", TransportErrorKind::connection_refused},
      {"connection_reset", TransportErrorKind::connection_reset},
      {"dns", TransportErrorKind::dns},
      {"broken_pipe", TransportErrorKind::broken_pipe}};
  return kErrors;
}

std::vector<std::string> transport_error_names() {
  std::vector<std::string> names;
  for (const auto& [name, kind] : transport_errors()) names.push_back(name);
  return names;
}

template <typename E>
std::vector<std::string> names_up_to(E last) {
  std::vector<std::string> names;
  for (int i = 0; i <= static_cast<int>(last); ++i)
    names.emplace_back(to_string(static_cast<E>(i)));
  return names;
}

// The built-in services a service fault may name (the messenger has its own kind).
const std::vector<std::string> kFaultServices{"model-api", "orchestrator", "brokerage"};

// ------------------------------------------------------------------- keys

FaultKeySpec service_key(std::vector<std::string> names, bool user_services, std::string_view doc) {
  REHEARSE_ASSERT(!names.empty());  // the first built-in is the default when it is the only one
  FaultKeySpec key{.name = "service", .type = FaultKeyType::service};
  key.required = names.size() > 1;  // one built-in: it is the default
  key.names = std::move(names);
  key.user_services = user_services;
  key.doc = doc;
  if (!key.required) key.default_value = key.names.front();
  key.store = [](FaultSpec& f, const FaultValue& v) {
    if (v.user_service) {
      f.user_service = v.value.get<std::string>();
    } else {
      f.service = parse_service_kind(v.value.get<std::string>());
      REHEARSE_ASSERT(f.service.has_value());  // one of the key's built-in names
    }
  };
  return key;
}

FaultKeySpec rate_key() {
  return FaultKeySpec{.name = "rate",
                      .type = FaultKeyType::rate,
                      .schema_ref = "rate",
                      .doc = "`rate` (default 1)",
                      .default_value = 1.0,
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.rate = v.value.get<double>();
                        REHEARSE_ASSERT(f.rate >= 0.0 && f.rate <= 1.0);  // read_rate's range
                      }};
}

// An HTTP status a hit answers with (required).
FaultKeySpec http_status_key() {
  return FaultKeySpec{.name = "status",
                      .type = FaultKeyType::integer,
                      .required = true,
                      .min = 400,
                      .max = 599,
                      .what = "an HTTP status",
                      .doc = "`status` (required, 400..599)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.http_status = v.value.get<int>();
                        // read_fault_integer keeps to the key's min and max
                        REHEARSE_ASSERT(f.http_status >= 400 && f.http_status <= 599);
                      }};
}

FaultKeySpec state_file_key(std::string_view doc) {
  return FaultKeySpec{.name = "file",
                      .type = FaultKeyType::name,
                      .names = names_up_to(StateFile::jobs_state),
                      .what = "state file",
                      .schema_ref = "state_file",
                      .doc = doc,
                      .default_value = "retry_state.json",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        // The index of one of `names`, which end at jobs_state.
                        REHEARSE_ASSERT_LE(v.index,
                                           static_cast<std::size_t>(StateFile::jobs_state));
                        f.file = static_cast<StateFile>(v.index);
                      }};
}

FaultKeySpec down_for_key(bool required, std::string_view doc) {
  return FaultKeySpec{.name = "down_for",
                      .type = FaultKeyType::down_time,
                      .required = required,
                      .schema_ref = "duration",
                      .doc = doc,
                      .default_value = required ? json() : json(0),
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.down_for_ms = v.value.get<DurationMs>();
                        REHEARSE_ASSERT_GE(f.down_for_ms, 0);  // a down_time value or the default 0
                      }};
}

// Which worker process a restart crashes (absent: the machine, every worker).
FaultKeySpec worker_key() {
  return FaultKeySpec{.name = "worker",
                      .type = FaultKeyType::worker,
                      .min = 1,
                      .max = 4,
                      .what = "a worker number",
                      .doc = "`worker` (1 to `queue.workers`; absent: the machine, every worker)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.worker = v.value.get<int>();
                        REHEARSE_ASSERT(f.worker >= 1 && f.worker <= 4);  // 1 to queue.workers
                      }};
}

FaultKeySpec agent_key() {
  return FaultKeySpec{.name = "agent",
                      .type = FaultKeyType::agent,
                      .required = true,
                      .schema_ref = "identifier",
                      .doc = "`agent` (required, a declared agent id)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.agent = v.value.get<std::string>();
                        REHEARSE_ASSERT(!f.agent.empty());  // a declared agent id
                      }};
}

// --------------------------------------------------------- trace fields

FaultTraceField trace_status() {
  return {"status", [](const FaultSpec& f) -> std::optional<json> { return f.http_status; }};
}
FaultTraceField trace_rate() {
  return {"rate", [](const FaultSpec& f) -> std::optional<json> {
            REHEARSE_ASSERT(f.rate >= 0.0 && f.rate <= 1.0);  // a share of the calls
            return f.rate;
          }};
}
FaultTraceField trace_file() {
  return {"file", [](const FaultSpec& f) -> std::optional<json> { return to_string(f.file); }};
}
FaultTraceField trace_worker() {
  return {"worker", [](const FaultSpec& f) -> std::optional<json> {
            if (f.worker == 0) return std::nullopt;
            REHEARSE_ASSERT_GE(f.worker, 1);  // worker numbers are 1-based
            return f.worker;
          }};
}
FaultTraceField trace_down_for() {
  return {"down_for_ms", [](const FaultSpec& f) -> std::optional<json> {
            REHEARSE_ASSERT_GE(f.down_for_ms, 0);  // a down_time value or the default 0
            return f.down_for_ms;
          }};
}

// ------------------------------------------------ applying: service windows

Error needs_orchestrator(const FaultSpec& fault) {
  return make_error(ErrorCode::invalid_argument, "the fault needs the orchestrator service",
                    fault.pointer);
}

// A hit of a service fault answers with a status or a transport error.
struct Hit {
  ModelFaultKind model_kind = ModelFaultKind::quota;
  int http_status = 0;
  TransportErrorKind transport = TransportErrorKind::none;
};

void add_brokerage_window(const FaultSpec& fault, std::size_t index, TimeMs from, TimeMs until,
                          SimBrokerage& brokerage, const Hit& hit) {
  // A hit answers with a status or a transport error, never both or neither.
  REHEARSE_ASSERT((hit.http_status != 0) != (hit.transport != TransportErrorKind::none));
  BrokerageFault b;
  b.from_ms = from;
  b.until_ms = until;
  b.rate = fault.rate;
  b.label = fmt::format("{}#{}", to_string(fault.kind), index);
  b.http_status = hit.http_status;
  b.transport = hit.transport;
  if (hit.model_kind == ModelFaultKind::quota) {
    b.rate = 1.0;
    b.message = "quota exhausted: usage limit reached";
  }
  brokerage.add_fault(b);
}

void add_user_window(const FaultSpec& fault, TimeMs from, TimeMs until, GenericService& service,
                     const Hit& hit) {
  REHEARSE_ASSERT(fault.rate >= 0.0 && fault.rate <= 1.0);
  ModelFault window;
  window.from_ms = from;
  window.until_ms = until;
  window.rate = fault.rate;
  window.kind = hit.model_kind;
  if (hit.model_kind == ModelFaultKind::http_error) window.http_status = hit.http_status;
  if (hit.model_kind == ModelFaultKind::network) window.transport = hit.transport;
  service.add_fault(window);
}

Status add_orchestrator_window(const FaultSpec& fault, TimeMs from, TimeMs until,
                               SimOrchestrator& orchestrator, const Hit& hit) {
  REHEARSE_ASSERT_LE(from, until);
  OrchestratorFault window;
  window.from_ms = from;
  window.until_ms = until;
  window.rate = fault.rate;
  window.label = fault.pointer.empty() ? std::string(to_string(fault.kind)) : fault.pointer;
  window.http_status = hit.http_status;
  window.transport = hit.transport;
  if (hit.model_kind == ModelFaultKind::network && hit.transport == TransportErrorKind::none) {
    window.transport = TransportErrorKind::connection_refused;
  }
  if (hit.model_kind == ModelFaultKind::quota ||
      (window.http_status == 0 && window.transport == TransportErrorKind::none)) {
    return make_error(ErrorCode::invalid_argument,
                      fmt::format("fault kind {} does not concern the orchestrator",
                                  to_string(fault.kind)),
                      fault.pointer);
  }
  orchestrator.add_fault(std::move(window));
  return {};
}

// A service fault's window inside the service it names.
Status add_service_window(const FaultSpec& fault, std::size_t index, TimeMs from, TimeMs until,
                          FaultWorld& world, const Hit& hit) {
  // The window of a fault at `at`: it ends by `for` or at the scenario's until, never before.
  REHEARSE_ASSERT_LE(from, until);
  if (fault.service == ServiceKind::model_api && world.model_api) {
    ModelApi& api = *world.model_api;
    switch (hit.model_kind) {
      case ModelFaultKind::quota: api.add_quota_outage(from, until); break;
      case ModelFaultKind::http_error:
        api.add_http_errors(from, until, hit.http_status, fault.rate);
        break;
      case ModelFaultKind::timeout: api.add_timeouts(from, until, fault.rate); break;
      case ModelFaultKind::network:
        api.add_network_errors(from, until, fault.rate, hit.transport);
        break;
    }
  } else if (fault.service == ServiceKind::brokerage && world.brokerage) {
    add_brokerage_window(fault, index, from, until, *world.brokerage, hit);
  }
  if (GenericService* user =
          world.user_service ? world.user_service(fault.user_service) : nullptr) {
    add_user_window(fault, from, until, *user, hit);
  }
  if (fault.service != ServiceKind::orchestrator) return {};
  if (world.orchestrator == nullptr) return needs_orchestrator(fault);
  return add_orchestrator_window(fault, from, until, *world.orchestrator, hit);
}

// A schedule hook for a service kind whose hit `hit_of` describes.
template <typename HitOf>
auto service_window(HitOf hit_of) {
  return [hit_of](const FaultSpec& fault, std::size_t index, TimeMs from, TimeMs until,
                  FaultWorld& world) {
    return add_service_window(fault, index, from, until, world, hit_of(fault));
  };
}

// A schedule hook for an orchestrator kind: `act` schedules its event.
template <typename Act>
auto on_orchestrator(Act act) {
  return [act](const FaultSpec& fault, std::size_t, TimeMs from, TimeMs until,
               FaultWorld& world) -> Status {
    REHEARSE_ASSERT_LE(from, until);  // the world's window of the fault
    if (world.orchestrator == nullptr) return needs_orchestrator(fault);
    act(fault, *world.orchestrator);
    return {};
  };
}

// ----------------------------------------------------------- the kinds

FaultKindSpec quota_exhausted() {
  return FaultKindSpec{
      .name = "quota_exhausted",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {service_key({"model-api"}, true,
                           "`service` (`\"model-api\"`, the default, or a service of your own)")},
      .trace = {},
      .meaning = "calls fail with the usage limit (HTTP 429, quota message)",
      .schedule = service_window([](const FaultSpec&) {
        return Hit{ModelFaultKind::quota, 429};
      }),
  };
}

FaultKindSpec http_errors() {
  return FaultKindSpec{
      .name = "http_errors",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {service_key(kFaultServices, true,
                           "`service` (required: `model-api`, `orchestrator`, `brokerage` or a "
                           "service of your own; the messenger's fault is `messenger_down`)"),
               http_status_key(), rate_key()},
      .trace = {trace_status(), trace_rate()},
      .meaning = "calls to the service fail with that status",
      .schedule = service_window([](const FaultSpec& f) {
        return Hit{ModelFaultKind::http_error, f.http_status};
      }),
  };
}

FaultKindSpec timeouts() {
  return FaultKindSpec{
      .name = "timeouts",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {service_key(kFaultServices, true, "`service` (required, as for `http_errors`)"),
               rate_key()},
      .trace = {trace_rate()},
      .meaning = "calls time out after the service's `timeout`",
      .schedule = service_window([](const FaultSpec&) {
        return Hit{ModelFaultKind::timeout, 0, TransportErrorKind::timeout};
      }),
  };
}

FaultKindSpec network_errors() {
  return FaultKindSpec{
      .name = "network_errors",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {service_key(kFaultServices, true, "`service` (required, as for `http_errors`)"),
               rate_key(),
               FaultKeySpec{.name = "error",
                            .type = FaultKeyType::name,
                            .names = transport_error_names(),
                            .what = "network error",
                            .doc = "`error` (`connection_refused`, `connection_reset` (default), "
                                   "`dns`, `broken_pipe`)",
                            .default_value = "connection_reset",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  REHEARSE_ASSERT_LT(v.index, transport_errors().size());
                                  f.transport = transport_errors()[v.index].second;
                                }}},
      .trace = {trace_rate()},
      .meaning = "calls fail below HTTP",
      .schedule = service_window([](const FaultSpec& f) {
        return Hit{ModelFaultKind::network, 0, f.transport};
      }),
  };
}

FaultKindSpec token_revoked() {
  return FaultKindSpec{
      .name = "token_revoked",
      .applies_to = FaultTarget::service,
      .keys = {service_key({"brokerage"}, false, "`service` (`\"brokerage\"`, the default)")},
      .meaning = "the server revokes the current access token before its known expiry",
      .at_instant =
          [](const FaultSpec&, FaultWorld& world) {
            if (world.brokerage) world.brokerage->revoke_all();
          },
  };
}

FaultKindSpec issues_deleted() {
  return FaultKindSpec{
      .name = "issues_deleted",
      .applies_to = FaultTarget::orchestrator,
      .keys = {FaultKeySpec{.name = "issues",
                            .type = FaultKeyType::issue_list,
                            .required = true,
                            .doc = "`issues` (required, non-empty, unique orchestrator issue ids)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.issues = v.value.get<std::vector<std::string>>();
                                  REHEARSE_ASSERT(!f.issues.empty());  // issue_list: non-empty
                                }},
               FaultKeySpec{.name = "new_instance",
                            .type = FaultKeyType::new_instance,
                            .schema_ref = "identifier",
                            .doc = "`new_instance` (ID, must differ from the current instance)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.new_instance = v.value.get<std::string>();
                                  REHEARSE_ASSERT(!f.new_instance->empty());  // an identifier
                                }},
               FaultKeySpec{.name = "status",
                            .type = FaultKeyType::integer,
                            .names = {"404", "410"},
                            .min = 404,
                            .max = 410,
                            .what = "the status a lost issue answers with",
                            .doc = "`status` (404, the default, or 410 Gone)",
                            .default_value = 404,
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.http_status = v.value.get<int>();
                                  // one of the key's names (or its default)
                                  REHEARSE_ASSERT(f.http_status == 404 || f.http_status == 410);
                                }}},
      .trace = {trace_status()},
      .meaning =
          "a migration loses these issues (404, or 410 with `status`, from now on), optionally "
          "reporting a new instance id",
      .schedule = on_orchestrator([](const FaultSpec& f, SimOrchestrator& o) {
        o.schedule_delete_issues(f.at_ms, f.issues, f.new_instance, f.http_status);
      }),
  };
}

FaultKindSpec issue_status() {
  return FaultKindSpec{
      .name = "issue_status",
      .applies_to = FaultTarget::orchestrator,
      .keys = {FaultKeySpec{.name = "issue",
                            .type = FaultKeyType::issue,
                            .required = true,
                            .schema_ref = "identifier",
                            .doc = "`issue` (required)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.issue = v.value.get<std::string>();
                                  REHEARSE_ASSERT(!f.issue.empty());  // a declared issue id
                                }},
               FaultKeySpec{.name = "status",
                            .type = FaultKeyType::name,
                            .required = true,
                            .names = issue_status_names(),
                            .what = "issue status",
                            .expected = "the new external status",
                            .schema_ref = "issue_status",
                            .doc = "`status` (required, STATUS)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.status = v.value.get<std::string>();
                                  REHEARSE_ASSERT_LT(v.index, issue_status_names().size());
                                }}},
      .meaning = "an external status change (possibly out of order)",
      .schedule = on_orchestrator([](const FaultSpec& f, SimOrchestrator& o) {
        o.schedule_issue_status(f.at_ms, f.issue, f.status);
      }),
  };
}

FaultKindSpec agent_removed() {
  return FaultKindSpec{
      .name = "agent_removed",
      .applies_to = FaultTarget::orchestrator,
      .keys = {agent_key()},
      .meaning = "the agent disappears from the orchestrator's list",
      .schedule = on_orchestrator([](const FaultSpec& f, SimOrchestrator& o) {
        o.schedule_remove_agent(f.at_ms, f.agent);
      }),
  };
}

FaultKindSpec agent_restored() {
  return FaultKindSpec{
      .name = "agent_restored",
      .applies_to = FaultTarget::orchestrator,
      .keys = {agent_key()},
      .meaning = "the agent is (back) in the list",
      .schedule = on_orchestrator([](const FaultSpec& f, SimOrchestrator& o) {
        o.schedule_restore_agent(f.at_ms, f.agent);
      }),
  };
}

FaultKindSpec restart() {
  return FaultKindSpec{
      .name = "restart",
      .applies_to = FaultTarget::process,
      .keys = {down_for_key(true, "`down_for` (required, DURATION >= 0, must end by `until`)"),
               worker_key()},
      .trace = {trace_down_for(), trace_worker()},
      .meaning =
          "the machine loses power at `at` (every worker process crashes, unsynced writes "
          "are lost) and comes back `down_for` later; with `worker`, that process alone "
          "crashes (the page cache survives) and comes back `down_for` later",
      .at_instant =
          [](const FaultSpec& f, FaultWorld& world) {
            REHEARSE_ASSERT(static_cast<bool>(world.crash_worker));  // the world always sets it
            REHEARSE_ASSERT_GE(f.down_for_ms, 0);
            world.crash_worker("restart", f.down_for_ms, f.worker);
          },
  };
}

FaultKindSpec state_corrupted() {
  return FaultKindSpec{
      .name = "state_corrupted",
      .applies_to = FaultTarget::state_file,
      .keys = {state_file_key("`file` (`retry_state.json` (default), `jobs.json`, "
                              "`jobs_state.json`)"),
               FaultKeySpec{.name = "mode",
                            .type = FaultKeyType::name,
                            .names = names_up_to(CorruptionMode::flip),
                            .what = "corruption mode",
                            .doc = "`mode` (`garbage` (default), `empty`, `truncated`, `schema`, "
                                   "`flip`)",
                            .default_value = "garbage",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  REHEARSE_ASSERT_LE(v.index, static_cast<std::size_t>(
                                                                  CorruptionMode::flip));
                                  f.mode = static_cast<CorruptionMode>(v.index);
                                }},
               FaultKeySpec{.name = "cut",
                            .type = FaultKeyType::cut,
                            .doc = "`cut` (mode `truncated` only: bytes kept, integer >= 0)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  // read_fault_cut: mode truncated only (`mode` is read first)
                                  REHEARSE_ASSERT(f.mode == CorruptionMode::truncated);
                                  f.cut = v.value.get<std::uint64_t>();
                                }},
               FaultKeySpec{.name = "flips",
                            .type = FaultKeyType::flips,
                            .doc = "`flips` (mode `flip` only: non-empty array of unique byte "
                                   "offsets)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  // read_fault_flips: mode flip only (`mode` is read first)
                                  REHEARSE_ASSERT(f.mode == CorruptionMode::flip);
                                  f.flips = v.value.get<std::vector<std::uint64_t>>();
                                  REHEARSE_ASSERT(!f.flips.empty());
                                }}},
      .trace = {trace_file(),
                {"mode",
                 [](const FaultSpec& f) -> std::optional<json> { return to_string(f.mode); }},
                {"cut",
                 [](const FaultSpec& f) -> std::optional<json> {
                   if (!f.cut) return std::nullopt;
                   return *f.cut;
                 }},
                {"flips",
                 [](const FaultSpec& f) -> std::optional<json> {
                   if (f.flips.empty()) return std::nullopt;
                   return f.flips;
                 }}},
      .meaning = "the state file is damaged on disk (see below)",
      .at_instant =
          [](const FaultSpec& f, FaultWorld& world) {
            REHEARSE_ASSERT(static_cast<bool>(world.corrupt_state));  // the world always sets it
            world.corrupt_state(f);
          },
  };
}

FaultKindSpec torn_write() {
  return FaultKindSpec{
      .name = "torn_write",
      .applies_to = FaultTarget::state_file,
      .keys = {state_file_key("`file` (as above)"),
               down_for_key(false, "`down_for` (DURATION >= 0, default 0)")},
      .trace = {trace_down_for(), trace_file()},
      .meaning =
          "the next write of that file is torn by a crash; the process restarts "
          "`down_for` later",
      .at_instant =
          [](const FaultSpec& f, FaultWorld& world) {
            REHEARSE_ASSERT(static_cast<bool>(world.tear_next_write));  // the world always sets it
            REHEARSE_ASSERT_GE(f.down_for_ms, 0);
            world.tear_next_write(f.file, f.down_for_ms);
          },
  };
}

FaultKindSpec messenger_down() {
  return FaultKindSpec{
      .name = "messenger_down",
      .lasting = true,
      .applies_to = FaultTarget::messenger,
      .keys = {FaultKeySpec{.name = "targets",
                            .type = FaultKeyType::targets,
                            .schema_ref = "target_list",
                            .doc = "`targets` (non-empty, default: every target)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.targets = v.value.get<std::vector<std::string>>();
                                  // present: non-empty (absent: every target, nothing stored)
                                  REHEARSE_ASSERT(!f.targets.empty());
                                }},
               FaultKeySpec{.name = "status",
                            .type = FaultKeyType::integer,
                            .min = 400,
                            .max = 599,
                            .what = "an HTTP status",
                            .doc = "`status` (400..599, default 503): 503 is the platform's "
                                   "outage page; any other status is refused as text only, "
                                   "`ConnectionError: HTTP <status>`",
                            .default_value = MessengerOutage::kDefaultStatus,
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.http_status = v.value.get<int>();
                                  REHEARSE_ASSERT(f.http_status >= 400 && f.http_status <= 599);
                                }}},
      .trace = {{"targets", [](const FaultSpec& f) -> std::optional<json> { return f.targets; }},
                trace_status()},
      .meaning = "deliveries to these targets are refused with that status",
      .schedule =
          [](const FaultSpec& f, std::size_t, TimeMs from, TimeMs until, FaultWorld& world) {
            REHEARSE_ASSERT_LE(from, until);  // the world's window of the fault
            if (world.messenger) {
              world.messenger->add_outage(from, until, f.targets,
                                          f.http_status == 0 ? MessengerOutage::kDefaultStatus
                                                             : f.http_status);
            }
            return Status{};
          },
  };
}

// ----------------------------------------------------- schema and docs

json key_schema(const FaultKeySpec& key) {
  json out = json::object();
  const auto ref = [](std::string_view name) {
    return json{{"$ref", fmt::format("#/$defs/{}", name)}};
  };
  switch (key.type) {
    case FaultKeyType::service: {
      json builtins =
          key.names.size() == 1 ? json{{"const", key.names.front()}} : json{{"enum", key.names}};
      out = key.user_services ? json{{"anyOf", {builtins, ref("identifier")}}} : builtins;
      break;
    }
    case FaultKeyType::integer:
    case FaultKeyType::worker:
      REHEARSE_ASSERT_LE(key.min, key.max);  // a table entry's range is never empty
      out = json{{"type", "integer"}, {"minimum", key.min}, {"maximum", key.max}};
      if (!key.names.empty()) {
        out["enum"] = json::array();
        for (const std::string& n : key.names) out["enum"].push_back(std::stoi(n));
      }
      break;
    case FaultKeyType::name:
      out = key.schema_ref.empty() ? json{{"enum", key.names}} : ref(key.schema_ref);
      break;
    case FaultKeyType::issue_list:
      out = json{
          {"type", "array"}, {"minItems", 1}, {"uniqueItems", true}, {"items", ref("identifier")}};
      break;
    case FaultKeyType::cut: out = json{{"type", "integer"}, {"minimum", 0}}; break;
    case FaultKeyType::step: out = ref("clock_step"); break;
    case FaultKeyType::rate_limited: out = ref("identifier"); break;
    case FaultKeyType::flips:
      out = json{{"type", "array"},
                 {"minItems", 1},
                 {"uniqueItems", true},
                 {"items", {{"type", "integer"}, {"minimum", 0}}}};
      break;
    default:
      REHEARSE_ASSERT(!key.schema_ref.empty());
      out = ref(key.schema_ref);
      break;
  }
  if (!key.default_value.is_null()) out["default"] = key.default_value;
  out["description"] = key.doc;
  return out;
}

json kind_schema(const FaultKindSpec& kind) {
  json properties = json::object();
  json required = json::array();
  for (const FaultKeySpec& key : kind.keys) {
    properties[std::string(key.name)] = key_schema(key);
    if (key.required) required.push_back(key.name);
  }
  if (kind.lasting) {
    properties["for"] = {{"$ref", "#/$defs/positive_duration"},
                         {"description", "How long the fault lasts (default: until the end)."}};
  }
  // A kind's key names are unique and none of them is `for`.
  REHEARSE_ASSERT_EQ(properties.size(), kind.keys.size() + (kind.lasting ? 1 : 0));
  json out{{"description", kind.meaning}, {"properties", properties}};
  if (!required.empty()) out["required"] = required;
  return out;
}

}  // namespace

const char* to_string(FaultTarget target) noexcept {
  switch (target) {
    case FaultTarget::service: return "service";
    case FaultTarget::orchestrator: return "orchestrator";
    case FaultTarget::messenger: return "messenger";
    case FaultTarget::process: return "worker process";
    case FaultTarget::state_file: return "state file";
    case FaultTarget::job_file: return "job file";
  }
  return "service";
}

const FaultKinds& fault_kinds() {
  // One entry per kind, in FaultKind order (sim/world/scenario.hpp names them).
  static const FaultKinds kinds{
      quota_exhausted(), http_errors(),
      timeouts(),        network_errors(),
      token_revoked(),   issues_deleted(),
      issue_status(),    agent_removed(),
      agent_restored(),  restart(),
      state_corrupted(), torn_write(),
      messenger_down(),  job_file_corrupted_kind(),
      clock_step_kind(), capacity_kind(),
  };
  // FaultKind values are positions in the table: the last enumerator is its last entry.
  REHEARSE_ASSERT_EQ(kinds.size(), static_cast<std::size_t>(FaultKind::capacity) + 1);
  return kinds;
}

const FaultKindSpec& fault_kind_spec(FaultKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  REHEARSE_ASSERT(i < fault_kinds().size());
  return fault_kinds()[i];
}

const FaultKindSpec* find_fault_kind(std::string_view name, const FaultKinds& kinds) {
  for (const FaultKindSpec& kind : kinds) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

std::vector<std::string> fault_key_names(const FaultKindSpec& kind) {
  std::vector<std::string> names;
  for (const FaultKeySpec& key : kind.keys) names.emplace_back(key.name);
  if (kind.lasting) names.emplace_back("for");
  return names;
}

json fault_kinds_schema(const FaultKinds& kinds) {
  json names = json::array();
  json branches = json::array();
  json defs = json::object();
  for (const FaultKindSpec& kind : kinds) {
    const std::string def = fmt::format("fault_{}", kind.name);
    names.push_back(kind.name);
    branches.push_back(
        {{"if", {{"properties", {{"kind", {{"const", kind.name}}}}}, {"required", {"kind"}}}},
         {"then", {{"$ref", "#/$defs/" + def}}}});
    defs[def] = kind_schema(kind);
  }
  defs["fault"] = {{"type", "object"},
                   {"required", {"at", "kind"}},
                   {"properties",
                    {{"at", {{"$ref", "#/$defs/fault_time"}}},
                     {"kind", {{"enum", names}}},
                     {"note", {{"type", "string"}}}}},
                   {"allOf", branches},
                   {"unevaluatedProperties", false}};
  // One definition per kind (names are unique) and the `fault` that branches to them.
  REHEARSE_ASSERT_EQ(defs.size(), kinds.size() + 1);
  return defs;
}

std::string fault_kinds_markdown(const FaultKinds& kinds) {
  std::string out =
      "| kind | lasts | applies to | keys (besides `at`, `kind`, `note`) | `fault_start` fields | "
      "meaning |\n"
      "|---|---|---|---|---|---|\n";
  for (const FaultKindSpec& kind : kinds) {
    std::string keys;
    for (const FaultKeySpec& key : kind.keys) {
      if (!keys.empty()) keys += ", ";
      keys += key.doc;
    }
    if (kind.lasting) keys += keys.empty() ? "`for`" : ", `for`";
    std::string trace;
    for (const FaultTraceField& field : kind.trace) {
      trace += fmt::format("{}`{}`", trace.empty() ? "" : ", ", field.name);
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", kind.name,
                       kind.lasting ? "lasting" : "instant", to_string(kind.applies_to), keys,
                       trace.empty() ? "—" : trace, kind.meaning);
  }
  // One line per kind below the two header lines: no entry's text breaks a row.
  REHEARSE_ASSERT_EQ(static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')),
                     kinds.size() + 2);
  return out;
}

}  // namespace rehearse::sim
