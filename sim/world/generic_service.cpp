#include "sim/world/generic_service.hpp"

#include <utility>

#include <fmt/format.h>

namespace rehearse::sim {
namespace {

ServiceResponse error_response(int status, std::string message) {
  REHEARSE_ASSERT(status >= 400 && status <= 599);  // 429 or a fault's status (400..599)
  const char* reason = http_reason_phrase(status);
  ServiceResponse r;
  r.status = status;
  r.body = nlohmann::json{{"error", reason ? reason : "Error"}, {"message", std::move(message)}};
  return r;
}

}  // namespace

GenericService::GenericService(std::string name, const Rng& run_rng, GenericServiceOptions options)
    : name_(std::move(name)), options_(options), rng_(run_rng.derive("service/" + name_)) {
  REHEARSE_ASSERT(!name_.empty());  // routed to by name
  REHEARSE_ASSERT_GE(options_.latency_ms, 0);
  REHEARSE_ASSERT_GE(options_.timeout_ms, 0);
}

std::optional<SimReply> GenericService::inject_fault(TimeMs now_ms) {
  for (const ModelFault& f : faults_) {
    if (!f.active_at(now_ms)) continue;
    const bool hit = f.kind == ModelFaultKind::quota || rng_.next_bool(f.rate);
    if (!hit) continue;
    switch (f.kind) {
      case ModelFaultKind::quota:
        return SimReply{error_response(429, fmt::format("quota exhausted: usage limit reached; "
                                                        "the limit resets at {}",
                                                        format_instant(f.until_ms))),
                        options_.latency_ms};
      case ModelFaultKind::http_error: {
        const char* reason = http_reason_phrase(f.http_status);
        return SimReply{error_response(f.http_status, fmt::format("HTTP {} {}", f.http_status,
                                                                  reason ? reason : "Error")),
                        options_.latency_ms};
      }
      case ModelFaultKind::timeout:
        return SimReply{TransportError{TransportErrorKind::timeout,
                                       transport_error_text(TransportErrorKind::timeout, name_,
                                                            options_.timeout_ms)},
                        options_.timeout_ms};
      case ModelFaultKind::network:
        REHEARSE_ASSERT(f.transport != TransportErrorKind::none);
        return SimReply{TransportError{f.transport, transport_error_text(f.transport, name_,
                                                                         options_.timeout_ms)},
                        options_.latency_ms};
    }
  }
  return std::nullopt;
}

SimReply GenericService::handle(const ServiceRequest& request, TimeMs now_ms) {
  REHEARSE_ASSERT(request.service == name_);  // SimServices routes by name
  ++total_calls_;
  if (auto faulted = inject_fault(now_ms)) return std::move(*faulted);
  ServiceResponse ok;
  ok.status = 200;
  ok.body = nlohmann::json{{"ok", true}, {"method", request.operation}, {"path", request.target}};
  return {std::move(ok), options_.latency_ms};
}

}  // namespace rehearse::sim
