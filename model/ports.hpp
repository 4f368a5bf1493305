// Ports: the only ways the core reaches time, external services, the
// messenger and the log (the disk port is model/disk.hpp).
//
// Each port is a small abstract class passed by reference into the core's
// constructors: no globals, no singletons, no "am I simulated?". The simulator
// implements each one once, faithfully, in sim/ (and injects faults only
// there); production adapters live beside this file (system_clock.hpp,
// real_driver.hpp).
//
// Awaitable operations return Task<...> (model/task.hpp). An implementation
// either completes at once or suspends and is resumed later by its executor;
// it never resumes the caller from inside its own await_suspend (that is what
// keeps the native stack shallow; see task.hpp). Arguments are taken by value
// because a lazily started Task may outlive the caller's temporaries.
#pragma once

#include <coroutine>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/failure.hpp"
#include "model/result.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

// --- Clock -------------------------------------------------------------------

// Virtual or real UTC time in integer milliseconds. now() is synchronous and
// never goes backwards within one executor. Sleeping is a suspension point
// (a crash may cut the process there): even a deadline already past suspends
// once and resumes after every event already due at now(), so a loop that
// sleeps always yields.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual TimeMs now() const = 0;
  // Resumes the caller at `deadline_ms` (or at now() if that is later).
  virtual Task<void> sleep_until(TimeMs deadline_ms) = 0;

  Task<void> sleep_for(DurationMs delay_ms) {
    return sleep_until(now() + (delay_ms > 0 ? delay_ms : 0));
  }

  // Wake-ups, for primitives that park a coroutine until another coroutine
  // makes progress (the token client's single-flight reissue, WaitList in
  // model/token_client.hpp). schedule_wake resumes `handle` from the
  // executor's event queue at now(), after every event already due, never
  // inline from this call; it returns a non-zero id (0 only when the executor
  // refused: a simulator whose queue overflowed, which ends the run).
  // cancel_wake withdraws a wake not yet delivered (true if it was pending).
  // Whoever schedules a wake must cancel it when the parked frame is destroyed
  // first (a crash, a dropped task), so that no destroyed frame is resumed.
  using WakeId = std::uint64_t;
  virtual WakeId schedule_wake(std::coroutine_handle<> handle) = 0;
  virtual bool cancel_wake(WakeId id) = 0;
};

// --- Services ----------------------------------------------------------------

// A request to an external service (model API, orchestrator, token broker).
// `service` names the system ("model-api"), `operation` what is asked
// ("generate", "get_issue"), `target` the resource (a task or issue id).
struct ServiceRequest {
  std::string service;
  std::string operation;
  std::string target;
  nlohmann::json body;
  std::map<std::string, std::string> headers;  // ordered: deterministic traces
};

// Any HTTP answer, success or not: the status is a field, never text
// (docs/semantics.md §1). Whether 4xx/5xx is a failure is the caller's call.
struct ServiceResponse {
  int status = 0;
  nlohmann::json body;
  // Response headers the caller reads, names in lower case ("retry-after").
  std::map<std::string, std::string> headers = {};

  bool is_success() const noexcept { return status >= 200 && status <= 299; }
};

// No HTTP answer at all: timeout, refused, reset, DNS, broken pipe.
struct TransportError {
  TransportErrorKind kind = TransportErrorKind::timeout;
  std::string message;
};

// Response or transport error; exactly one of the two.
class ServiceResult {
 public:
  ServiceResult(ServiceResponse response) : v_(std::move(response)) {}  // NOLINT
  ServiceResult(TransportError error) : v_(std::move(error)) {}         // NOLINT

  bool has_response() const noexcept { return v_.index() == 0; }
  const ServiceResponse& response() const {
    REHEARSE_ASSERT(has_response());
    return std::get<0>(v_);
  }
  const TransportError& transport_error() const {
    REHEARSE_ASSERT(!has_response());
    return std::get<1>(v_);
  }
  // A 2xx response.
  bool is_success() const noexcept { return has_response() && std::get<0>(v_).is_success(); }

 private:
  std::variant<ServiceResponse, TransportError> v_;
};

// The failure as the classifier sees it: the HTTP status as a field, or the
// transport kind, plus the message text verbatim (for logs). Only for results
// that are not a success.
inline FailureInfo to_failure_info(const ServiceResult& result) {
  FailureInfo info;
  if (result.has_response()) {
    const ServiceResponse& response = result.response();
    info.http_status = response.status;
    if (response.body.is_object() && response.body.contains("message") &&
        response.body.at("message").is_string()) {
      info.message = response.body.at("message").get<std::string>();
    } else {
      info.message = "HTTP " + std::to_string(response.status);
    }
    if (auto it = response.headers.find("retry-after"); it != response.headers.end()) {
      info.retry_after_ms = parse_retry_after_ms(it->second);
    }
  } else {
    info.transport = result.transport_error().kind;
    info.message = result.transport_error().message;
  }
  return info;
}

class Services {
 public:
  virtual ~Services() = default;
  // One request, one answer. A suspension point: the answer arrives later (and
  // a crash in between loses it, as a real process would).
  virtual Task<ServiceResult> call(ServiceRequest request) = 0;
};

// --- Notifier ----------------------------------------------------------------

// Sends a message to a delivery target (a chat channel, a mailbox). The
// message is structured JSON so the simulated messenger and the monitors can
// read its fields (event, job_id, slot, ...) without parsing text. The
// messenger may be down: the Status says whether the message was accepted
// (an error's message says why). A suspension point like Services::call.
class Notifier {
 public:
  virtual ~Notifier() = default;
  virtual Task<Status> send(std::string target, nlohmann::json message) = 0;
};

// --- Log ---------------------------------------------------------------------

enum class LogLevel : unsigned char { debug, info, warning, error };

inline const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "unknown";
}

// One key/value of a structured log line; fields keep the order written.
struct LogField {
  std::string key;
  nlohmann::json value;
};
using LogFields = std::vector<LogField>;

// `fields` followed by `more`: a run's common fields plus an event's own.
inline LogFields with_fields(LogFields fields, std::initializer_list<LogField> more) {
  fields.insert(fields.end(), more.begin(), more.end());
  return fields;
}

// Structured log lines: a level, an event name shared with notifications and
// traces ("retry_scheduled"), and ordered fields (job_id, failure_class,
// attempt, ...). Synchronous and infallible from the core's point of view.
// Secrets (token values, full agent ids) must never be passed in.
class Log {
 public:
  virtual ~Log() = default;
  virtual void write(LogLevel level, std::string_view event, const LogFields& fields) = 0;

  void info(std::string_view event, const LogFields& fields = {}) {
    write(LogLevel::info, event, fields);
  }
  void warning(std::string_view event, const LogFields& fields = {}) {
    write(LogLevel::warning, event, fields);
  }
  void error(std::string_view event, const LogFields& fields = {}) {
    write(LogLevel::error, event, fields);
  }
};

}  // namespace rehearse
