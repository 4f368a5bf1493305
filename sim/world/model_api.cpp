#include "sim/world/model_api.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

namespace {

const char* reason_phrase(int status) {
  REHEARSE_ASSERT(status >= 400 && status <= 599);  // only error answers are phrased here
  const char* phrase = http_reason_phrase(status);
  return phrase != nullptr ? phrase : "Error";
}

ServiceResponse error_response(int status, std::string message) {
  REHEARSE_ASSERT(status >= 400 && status <= 599);  // only errors answer here
  ServiceResponse r;
  r.status = status;
  r.body = nlohmann::json{{"error", reason_phrase(status)}, {"message", std::move(message)}};
  return r;
}

std::string transport_message(TransportErrorKind kind) {
  REHEARSE_ASSERT(kind != TransportErrorKind::none);  // a network fault names its error
  switch (kind) {
    case TransportErrorKind::connection_refused: return "connect ECONNREFUSED model-api:443";
    case TransportErrorKind::connection_reset: return "read ECONNRESET (socket hang up)";
    case TransportErrorKind::dns: return "getaddrinfo ENOTFOUND model-api";
    case TransportErrorKind::broken_pipe: return "write EPIPE (broken pipe)";
    case TransportErrorKind::timeout: return "ETIMEDOUT";
    case TransportErrorKind::none: break;
  }
  return "network error";
}

}  // namespace

const char* to_string(ModelOutput output) noexcept {
  switch (output) {
    case ModelOutput::summary: return "summary";
    case ModelOutput::preview: return "preview";
    case ModelOutput::skip: return "skip";
  }
  return "summary";
}

const char* to_string(ModelFaultKind kind) noexcept {
  switch (kind) {
    case ModelFaultKind::quota: return "quota";
    case ModelFaultKind::http_error: return "http_error";
    case ModelFaultKind::timeout: return "timeout";
    case ModelFaultKind::network: return "network";
  }
  return "quota";
}

ModelApi::ModelApi(const Rng& run_rng, ModelApiOptions options)
    : options_(options), rng_(run_rng.derive(kName)) {
  REHEARSE_ASSERT(options_.latency_ms >= 0);
  REHEARSE_ASSERT(options_.timeout_ms > 0);
}

void ModelApi::set_output(const std::string& task, ModelOutput output) {
  REHEARSE_ASSERT(!task.empty());
  outputs_[{std::string(), task}] = output;
}

void ModelApi::set_output(const std::string& job, const std::string& task, ModelOutput output) {
  // An empty job is the key of the job-less scripts (the other overload).
  REHEARSE_ASSERT(!job.empty());
  REHEARSE_ASSERT(!task.empty());
  outputs_[{job, task}] = output;
}

void ModelApi::add_fault(ModelFault fault) {
  REHEARSE_ASSERT(fault.from_ms <= fault.until_ms);
  REHEARSE_ASSERT(fault.rate >= 0.0 && fault.rate <= 1.0);
  REHEARSE_ASSERT(faults_.size() < kFaultsMax);
  faults_.push_back(fault);
}

void ModelApi::add_quota_outage(TimeMs from_ms, TimeMs until_ms) {
  add_fault({ModelFaultKind::quota, from_ms, until_ms, 429, 1.0, TransportErrorKind::none});
}

void ModelApi::add_http_errors(TimeMs from_ms, TimeMs until_ms, int status, double rate) {
  REHEARSE_ASSERT(status >= 400 && status <= 599);
  add_fault(
      {ModelFaultKind::http_error, from_ms, until_ms, status, rate, TransportErrorKind::none});
}

void ModelApi::add_timeouts(TimeMs from_ms, TimeMs until_ms, double rate) {
  add_fault({ModelFaultKind::timeout, from_ms, until_ms, 0, rate, TransportErrorKind::timeout});
}

void ModelApi::add_network_errors(TimeMs from_ms, TimeMs until_ms, double rate,
                                  TransportErrorKind kind) {
  REHEARSE_ASSERT(kind != TransportErrorKind::none && kind != TransportErrorKind::timeout);
  add_fault({ModelFaultKind::network, from_ms, until_ms, 0, rate, kind});
}

std::optional<SimReply> ModelApi::inject_fault(TimeMs now_ms) {
  for (const ModelFault& f : faults_) {
    if (!f.active_at(now_ms)) continue;
    if (!rng_.next_bool(f.rate)) continue;
    switch (f.kind) {
      case ModelFaultKind::quota:
        return SimReply{error_response(429,
                                       fmt::format("You exceeded your current quota: usage limit "
                                                   "reached; the limit resets at {}",
                                                   format_instant(f.until_ms))),
                        options_.latency_ms};
      case ModelFaultKind::http_error:
        return SimReply{error_response(f.http_status, fmt::format("HTTP {} {}", f.http_status,
                                                                  reason_phrase(f.http_status))),
                        options_.latency_ms};
      case ModelFaultKind::timeout:
        return SimReply{TransportError{TransportErrorKind::timeout,
                                       fmt::format("ETIMEDOUT: model-api did not answer within {}",
                                                   format_duration(options_.timeout_ms))},
                        options_.timeout_ms};
      case ModelFaultKind::network:
        return SimReply{TransportError{f.transport, transport_message(f.transport)},
                        options_.latency_ms};
    }
  }
  return std::nullopt;
}

SimReply ModelApi::handle(const ServiceRequest& request, TimeMs now_ms) {
  std::string job;
  if (auto it = request.headers.find(kHeaderJob); it != request.headers.end()) job = it->second;
  ++calls_[{job, request.target}];
  ++total_calls_;

  if (auto faulted = inject_fault(now_ms)) {
    ++faulted_calls_;
    REHEARSE_ASSERT_LE(faulted_calls_, total_calls_);
    return std::move(*faulted);
  }
  if (request.operation != "generate") {
    return {error_response(400, fmt::format("unknown operation '{}'", request.operation)),
            options_.latency_ms};
  }
  auto it = outputs_.find({job, request.target});
  if (it == outputs_.end()) it = outputs_.find({std::string(), request.target});
  if (it == outputs_.end()) {
    return {error_response(404, fmt::format("no such task '{}'", request.target)),
            options_.latency_ms};
  }
  ServiceResponse ok;
  ok.status = 200;
  ok.body = nlohmann::json{{"output", to_string(it->second)}};
  if (it->second != ModelOutput::skip) {
    std::string slot = "?";
    if (auto s = request.headers.find(kHeaderSlot); s != request.headers.end()) slot = s->second;
    ok.body["text"] = fmt::format("{} of {} for {}", to_string(it->second), request.target, slot);
  }
  return {std::move(ok), options_.latency_ms};
}

std::int64_t ModelApi::calls(const std::string& job, const std::string& task) const {
  const auto it = calls_.find({job, task});
  if (it == calls_.end()) return 0;
  REHEARSE_ASSERT_GE(it->second, 1);  // an entry is made by a call
  return it->second;
}

std::int64_t ModelApi::calls_for_job(const std::string& job) const {
  std::int64_t n = 0;
  for (auto it = calls_.lower_bound({job, std::string()});
       it != calls_.end() && it->first.first == job; ++it) {
    n += it->second;
  }
  REHEARSE_ASSERT_LE(n, total_calls_);  // a job's calls are some of all the calls
  return n;
}

}  // namespace rehearse::sim
