#include "sim/world/brokerage.hpp"

#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/token_client.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {
namespace {

constexpr std::string_view kBearerPrefix = "Bearer ";

std::string standard_status_text(int status) {
  REHEARSE_ASSERT(status >= 100 && status <= 599);  // a fault's HTTP status (add_fault)
  const char* phrase = http_reason_phrase(status);
  return phrase != nullptr ? fmt::format("{} {}", status, phrase) : fmt::format("HTTP {}", status);
}

}  // namespace

SimBrokerage::SimBrokerage(Simulator& simulator, Trace& trace, BrokerageConfig config)
    : simulator_(simulator),
      trace_(trace),
      config_(std::move(config)),
      // Token values are secrets, not faults: they come from a stream fixed by
      // the brokerage's name alone, so a scenario without random faults gives
      // the same trace (token fingerprints included) for every seed.
      token_rng_(fnv1a64(config_.name + "/tokens")),
      fault_rng_(simulator.rng().derive(config_.name + "/faults")) {
  REHEARSE_ASSERT(config_.token_lifetime_ms > 0);
  REHEARSE_ASSERT(config_.latency_ms >= 0);
  REHEARSE_ASSERT(config_.timeout_ms >= 0);
  REHEARSE_ASSERT(config_.issue_latency_ms.value_or(0) >= 0);
}

std::uint64_t SimBrokerage::calls(const std::string& operation) const {
  const auto it = calls_.find(operation);
  if (it == calls_.end()) return 0;
  REHEARSE_ASSERT_GE(it->second, 1u);  // an entry is made by a call
  return it->second;
}

std::uint64_t SimBrokerage::fault_hits(std::size_t fault_index) const {
  REHEARSE_ASSERT_LT(fault_index, faults_.size());  // the index of a fault add_fault took
  return faults_.at(fault_index).hits;
}

void SimBrokerage::add_fault(BrokerageFault fault) {
  REHEARSE_ASSERT(fault.from_ms <= fault.until_ms);
  REHEARSE_ASSERT(fault.rate >= 0.0 && fault.rate <= 1.0);
  // A hit answers with a status or a transport error, never both or neither.
  REHEARSE_ASSERT((fault.http_status != 0) != (fault.transport != TransportErrorKind::none));
  if (fault.label.empty()) fault.label = fmt::format("fault-{}", faults_.size());
  faults_.push_back(FaultState{std::move(fault), 0});
}

void SimBrokerage::revoke_all() {
  const TimeMs now_ms = simulator_.now();
  for (BrokerageToken& token : tokens_) {
    if (token.revoked_at_ms || now_ms >= token.expires_at_ms) continue;
    REHEARSE_ASSERT_LE(token.issued_at_ms, now_ms);  // issued at an earlier event, never later
    token.revoked_at_ms = now_ms;
    TraceEvent e;
    e.t = now_ms;
    e.type = "token_revoked";
    e.service = config_.name;
    e.data["generation"] = token.generation;
    e.data["fingerprint"] = token_fingerprint(token.value);
    e.data["cause"] = "revoke_all";
    trace_.record(std::move(e));
  }
}

void SimBrokerage::schedule_revoke_all(TimeMs at_ms) {
  simulator_.schedule_call_for(
      kWorld, at_ms, [this] { revoke_all(); }, "revoke_all");
}

TraceEvent SimBrokerage::event(const ServiceRequest& request, TimeMs now_ms,
                               std::string type) const {
  TraceEvent e;
  e.t = now_ms;
  e.type = std::move(type);
  e.service = config_.name;
  attribute_from_headers(e, request.headers);
  return e;
}

SimReply SimBrokerage::reply_status(int status, std::string message) const {
  // Only faults (status 400..599 from the loader) and rejections (401) answer here.
  REHEARSE_ASSERT(status >= 100 && status <= 599);
  ServiceResponse response;
  response.status = status;
  response.body = nlohmann::json{{"message", std::move(message)}};
  return SimReply{ServiceResult(std::move(response)), config_.latency_ms};
}

SimReply SimBrokerage::handle(const ServiceRequest& request, TimeMs now_ms) {
  ++calls_[request.operation];
  if (std::optional<SimReply> faulted = apply_faults(request, now_ms)) return std::move(*faulted);
  if (request.operation == kIssueTokenOperation) return issue(request, now_ms);
  return serve(request, now_ms);
}

std::optional<SimReply> SimBrokerage::apply_faults(const ServiceRequest& request, TimeMs now_ms) {
  for (FaultState& state : faults_) {
    const BrokerageFault& fault = state.fault;
    if (!fault.operation.empty() && fault.operation != request.operation) continue;
    if (now_ms < fault.from_ms || now_ms >= fault.until_ms) continue;
    if (fault.hits_max && state.hits >= *fault.hits_max) continue;
    // One draw per matching call, and only for partial rates, so adding a
    // certain fault does not shift the draws of the others.
    if (fault.rate < 1.0 && !fault_rng_.next_bool(fault.rate)) continue;
    ++state.hits;
    REHEARSE_ASSERT(!fault.hits_max || state.hits <= *fault.hits_max);

    const bool issuing = request.operation == kIssueTokenOperation;
    const DurationMs latency_ms =
        issuing ? config_.issue_latency_ms.value_or(config_.latency_ms) : config_.latency_ms;
    SimReply reply{ServiceResult(ServiceResponse{}), latency_ms};
    TraceEvent e = event(request, now_ms,
                         issuing ? "token_issue_failed"
                                 : (fault.http_status == 401 ? "auth_rejected" : "fault_hit"));
    e.data["fault"] = fault.label;
    if (issuing) {
      e.data["reason"] = request.body.is_object() && request.body.contains("reason") &&
                                 request.body.at("reason").is_string()
                             ? request.body.at("reason").get<std::string>()
                             : std::string("unspecified");
    } else {
      e.data["operation"] = request.operation;
    }
    if (fault.http_status != 0) {
      reply = reply_status(fault.http_status, fault.message.empty()
                                                  ? standard_status_text(fault.http_status)
                                                  : fault.message);
      reply.latency_ms = latency_ms;
      e.data["status"] = fault.http_status;
      if (fault.http_status == 401) {
        ++rejected_;
        if (!issuing) e.data["reason"] = "scripted";
      }
    } else {
      std::string message =
          fault.message.empty()
              ? transport_error_text(fault.transport, config_.name, config_.timeout_ms)
              : fault.message;
      reply = SimReply{ServiceResult(TransportError{fault.transport, std::move(message)}),
                       fault.transport == TransportErrorKind::timeout ? config_.timeout_ms
                                                                      : latency_ms};
      e.data["transport_error"] = to_string(fault.transport);
    }
    trace_.record(std::move(e));
    return reply;
  }
  return std::nullopt;
}

SimReply SimBrokerage::issue(const ServiceRequest& request, TimeMs now_ms) {
  BrokerageToken token;
  token.value = fmt::format("tok_{:016x}{:016x}", token_rng_.next_u64(), token_rng_.next_u64());
  token.generation = tokens_.size() + 1;
  token.issued_at_ms = now_ms;
  token.expires_at_ms = now_ms + config_.token_lifetime_ms;
  REHEARSE_ASSERT(by_value_.count(token.value) == 0);  // 128 random bits: never in practice

  TraceEvent e = event(request, now_ms, "token_issued");
  e.data["generation"] = token.generation;
  e.data["fingerprint"] = token_fingerprint(token.value);
  e.data["expires_at"] = format_instant(token.expires_at_ms);
  e.data["reason"] = request.body.is_object() && request.body.contains("reason") &&
                             request.body.at("reason").is_string()
                         ? request.body.at("reason").get<std::string>()
                         : std::string("unspecified");
  trace_.record(std::move(e));

  ServiceResponse response;
  response.status = 200;
  response.body = nlohmann::json{{"access_token", token.value},
                                 {"token_type", "Bearer"},
                                 {"expires_in", config_.token_lifetime_ms / kSecondMs}};
  by_value_.emplace(token.value, tokens_.size());
  tokens_.push_back(std::move(token));
  // Every issued token is findable by value, and only issued ones are.
  REHEARSE_ASSERT_EQ(by_value_.size(), tokens_.size());
  return SimReply{ServiceResult(std::move(response)),
                  config_.issue_latency_ms.value_or(config_.latency_ms)};
}

SimReply SimBrokerage::reject(const ServiceRequest& request, TimeMs now_ms, const char* reason,
                              const BrokerageToken* token) {
  REHEARSE_ASSERT(reason != nullptr);
  ++rejected_;
  TraceEvent e = event(request, now_ms, "auth_rejected");
  e.data["operation"] = request.operation;
  e.data["reason"] = reason;
  if (token != nullptr) {
    e.data["generation"] = token->generation;
    e.data["fingerprint"] = token_fingerprint(token->value);
  }
  trace_.record(std::move(e));
  return reply_status(401, fmt::format("401 Unauthorized: token {}", reason));
}

SimReply SimBrokerage::serve(const ServiceRequest& request, TimeMs now_ms) {
  const auto header = request.headers.find(kHeaderAuthorization);
  if (header == request.headers.end() || header->second.rfind(kBearerPrefix, 0) != 0) {
    return reject(request, now_ms, "missing", nullptr);
  }
  const std::string_view presented = std::string_view(header->second).substr(kBearerPrefix.size());
  const auto found = by_value_.find(presented);
  if (found == by_value_.end()) return reject(request, now_ms, "unknown", nullptr);
  REHEARSE_ASSERT_LT(found->second, tokens_.size());
  const BrokerageToken& token = tokens_[found->second];
  REHEARSE_ASSERT(token.value == presented);  // by_value_ indexes tokens_ by value
  if (token.revoked_at_ms) return reject(request, now_ms, "revoked", &token);
  if (now_ms >= token.expires_at_ms) return reject(request, now_ms, "expired", &token);
  // The world's own record of which token a request presented (the witness
  // of the client's reuse rule reads it; docs/trace-events.md).
  TraceEvent e = event(request, now_ms, "token_presented");
  e.data["operation"] = request.operation;
  e.data["generation"] = token.generation;
  e.data["fingerprint"] = token_fingerprint(token.value);
  e.data["expires_at"] = format_instant(token.expires_at_ms);
  trace_.record(std::move(e));

  ServiceResponse response;
  response.status = 200;
  response.body = nlohmann::json{{"operation", request.operation}, {"target", request.target}};
  return SimReply{ServiceResult(std::move(response)), config_.latency_ms};
}

}  // namespace rehearse::sim
