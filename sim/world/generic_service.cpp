#include "sim/world/generic_service.hpp"

#include <algorithm>
#include <cmath>
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
  if (options_.capacity) gate_.emplace(*options_.capacity);
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

void GenericService::add_capacity_drop(TimeMs from, TimeMs until, double share) {
  REHEARSE_ASSERT(gate_.has_value() && gate_->capacity().limits_rate());  // the loader's check
  REHEARSE_ASSERT(share >= 0.0 && share <= 1.0);
  const auto declared = static_cast<double>(gate_->capacity().rate);
  const auto rate = static_cast<std::int64_t>(std::floor(declared * share));
  gate_->add_drop(CapacityDrop{from, until, std::max<std::int64_t>(1, rate)});
}

SimReply GenericService::handle(const ServiceRequest& request, TimeMs now_ms) {
  REHEARSE_ASSERT(request.service == name_);  // SimServices routes by name
  ++total_calls_;
  if (auto faulted = inject_fault(now_ms)) return std::move(*faulted);
  return serve(request, now_ms);
}

// Past the faults: the capacity gate, then the answer.
SimReply GenericService::serve(const ServiceRequest& request, TimeMs now_ms) {
  const Admission admission = gate_ ? gate_->admit(now_ms, options_.latency_ms) : Admission{};
  if (admission.refused) {
    const int status = gate_->capacity().status;
    ServiceResponse refused = error_response(
        status, fmt::format("rate limit exceeded: {} requests per {}", gate_->rate_at(now_ms),
                            format_duration(gate_->capacity().per_ms)));
    if (admission.retry_after_ms > 0) {
      refused.headers["retry-after"] = std::to_string(admission.retry_after_ms / kSecondMs);
    }
    return {std::move(refused), options_.latency_ms, "refused"};
  }
  const DurationMs total_ms = admission.wait_ms + options_.latency_ms;
  if (total_ms > options_.timeout_ms) {
    // The caller gives up; the service still serves the request later.
    return {TransportError{TransportErrorKind::timeout,
                           transport_error_text(TransportErrorKind::timeout, name_,
                                                options_.timeout_ms)},
            options_.timeout_ms, "timed_out_in_line"};
  }
  ServiceResponse ok;
  ok.status = 200;
  ok.body = nlohmann::json{{"ok", true}, {"method", request.operation}, {"path", request.target}};
  return {std::move(ok), total_ms};
}

}  // namespace rehearse::sim
