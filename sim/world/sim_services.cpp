#include "sim/world/sim_services.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

const char* http_reason_phrase(int status) noexcept {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 410: return "Gone";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return nullptr;
  }
}

std::string transport_error_text(TransportErrorKind kind, const std::string& service,
                                 DurationMs timeout_ms) {
  // A fault's transport error: each service's add_fault refuses a hit with none.
  REHEARSE_ASSERT(kind != TransportErrorKind::none);
  REHEARSE_ASSERT(!service.empty());  // a registered service's name
  switch (kind) {
    case TransportErrorKind::timeout:
      return fmt::format("request to {} timed out after {}", service, format_duration(timeout_ms));
    case TransportErrorKind::connection_refused: return "connect ECONNREFUSED " + service;
    case TransportErrorKind::connection_reset: return "read ECONNRESET " + service;
    case TransportErrorKind::dns: return "getaddrinfo ENOTFOUND " + service;
    case TransportErrorKind::broken_pipe: return "write EPIPE " + service;
    case TransportErrorKind::none: break;
  }
  return "transport error " + service;
}

void attribute_from_headers(TraceEvent& event, const std::map<std::string, std::string>& headers) {
  if (auto it = headers.find(kHeaderJob); it != headers.end()) event.job = it->second;
  if (auto it = headers.find(kHeaderSlot); it != headers.end()) {
    if (auto t = parse_instant(it->second)) event.slot = *t;
  }
  if (auto it = headers.find(kHeaderItem); it != headers.end()) event.item = it->second;
  if (auto it = headers.find(kHeaderAttempt); it != headers.end()) {
    event.data["attempt"] = it->second;
  }
  if (auto it = headers.find(kHeaderRequestId); it != headers.end()) {
    event.data["request_id"] = it->second;
  }
}

void SimServices::add(SimService& service) {
  REHEARSE_ASSERT(services_.count(service.name()) == 0);
  services_.emplace(service.name(), &service);
}

Task<ServiceResult> SimServices::call(ServiceRequest request) {
  ++calls_;
  const TimeMs sent_ms = simulator_.now();
  TraceEvent sent;
  sent.t = sent_ms;
  sent.type = "service_call";
  sent.service = request.service;
  sent.data["operation"] = request.operation;
  if (!request.target.empty()) sent.data["target"] = request.target;
  attribute_from_headers(sent, request.headers);

  const auto it = services_.find(request.service);
  if (it == services_.end()) {
    sent.data["error"] = "unknown service";
    trace_.record(std::move(sent));
    ServiceResult failed(
        TransportError{TransportErrorKind::dns, "getaddrinfo ENOTFOUND " + request.service});
    co_await simulator_.clock().sleep_for(0);
    co_return failed;
  }
  SimReply reply = it->second->handle(request, sent_ms);
  trace_.record(std::move(sent));

  // The answer travels back; a crash here loses it (the effect stays).
  co_await simulator_.clock().sleep_for(reply.latency_ms);

  TraceEvent received;
  received.t = simulator_.now();
  REHEARSE_ASSERT_GE(received.t, sent_ms);  // virtual time never goes backwards
  received.type = "service_reply";
  received.service = request.service;
  received.data["operation"] = request.operation;
  if (!request.target.empty()) received.data["target"] = request.target;
  attribute_from_headers(received, request.headers);
  if (reply.result.has_response()) {
    const ServiceResponse& response = reply.result.response();
    received.data["status"] = response.status;
    // The class of the answer's body, where the service gives one (the model
    // API's `output`: summary, preview, skip): a world fact the witnesses read.
    // The orchestrator's get_issue answer: the issue's `status`.
    for (const char* key : {"output", "status"}) {
      if (response.body.is_object() && response.body.contains(key) &&
          response.body.at(key).is_string()) {
        received.data["body_class"] = response.body.at(key);
        break;
      }
    }
    // The error text of a refusal, verbatim (the witnesses classify it with
    // their own table where no status decides: sim/monitors/reply_class.hpp).
    if (!response.is_success() && response.body.is_object() && response.body.contains("message") &&
        response.body.at("message").is_string()) {
      received.data["message"] = response.body.at("message");
    }
    // A refusal's Retry-After as the service sent it (the header's text).
    if (auto header = response.headers.find("retry-after"); header != response.headers.end()) {
      received.data["retry_after"] = header->second;
    }
  } else {
    received.data["transport_error"] = to_string(reply.result.transport_error().kind);
    received.data["message"] = reply.result.transport_error().message;
  }
  if (reply.capacity != nullptr) received.data["capacity"] = reply.capacity;
  trace_.record(std::move(received));
  co_return reply.result;
}

}  // namespace rehearse::sim
