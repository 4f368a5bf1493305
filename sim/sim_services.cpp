#include "sim/sim_services.hpp"

namespace rehearse::sim {

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
    ServiceResult failed(TransportError{TransportErrorKind::dns,
                                        "getaddrinfo ENOTFOUND " + request.service});
    co_await simulator_.clock().sleep_for(0);
    co_return failed;
  }
  SimReply reply = it->second->handle(request, sent_ms);
  trace_.record(std::move(sent));

  // The answer travels back; a crash here loses it (the effect stays).
  co_await simulator_.clock().sleep_for(reply.latency_ms);

  TraceEvent received;
  received.t = simulator_.now();
  received.type = "service_reply";
  received.service = request.service;
  received.data["operation"] = request.operation;
  if (!request.target.empty()) received.data["target"] = request.target;
  attribute_from_headers(received, request.headers);
  if (reply.result.has_response()) {
    received.data["status"] = reply.result.response().status;
  } else {
    received.data["transport_error"] = to_string(reply.result.transport_error().kind);
  }
  trace_.record(std::move(received));
  co_return reply.result;
}

}  // namespace rehearse::sim
