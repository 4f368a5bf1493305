// What an import knows of one call to a service, whatever recorded it (an
// OpenTelemetry client span, a line of the worker's log): when it was made,
// what came back, and where the evidence is, so every inferred fault can
// name the records that bound it (docs/import.md).
#pragma once

#include <string>

#include "model/time.hpp"

namespace rehearse::sim {

enum class CallOutcome : unsigned char {
  success,        // an answer below 400
  http_error,     // an answer of 400 or above: `status`
  timeout,        // no answer before the caller gave up
  network_error,  // failed below HTTP: `error` names how (a network_errors name)
};

struct CallObservation {
  std::string service;  // the scenario's name of the service
  TimeMs start_ms = 0;
  TimeMs end_ms = 0;
  CallOutcome outcome = CallOutcome::success;
  int status = 0;     // the HTTP status when there was one
  std::string error;  // network_error: connection_refused, connection_reset, dns, broken_pipe
  std::string where;  // the record: "FILE:/json/pointer" or "FILE:LINE"
  bool retry_after = false;  // the refusal said when to come back (a rate limit's answer)
};

// "503", "timeout", "network connection_reset", "ok": a failure's signature,
// the unit a fault window is made of.
std::string signature_of(const CallObservation& call);

}  // namespace rehearse::sim
