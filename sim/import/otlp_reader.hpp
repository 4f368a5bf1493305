// OpenTelemetry trace exports as observed calls (docs/import.md, "OTLP").
//
// Reads OTLP/JSON, the protobuf-JSON mapping of ExportTraceServiceRequest:
// one document ({"resourceSpans": [...]}) or JSON Lines of them, as the
// Collector's file exporter writes. Every HTTP client span is one call:
//   - the service: `peer.service`, else `server.address`, else the host of
//     `url.full` (`net.peer.name`, `http.url` of the older conventions too),
//     then renamed by the caller's map (--service ADDRESS=NAME);
//   - start and end: `startTimeUnixNano`, `endTimeUnixNano` (decimal
//     strings, as the mapping writes 64-bit integers; numbers accepted);
//   - the outcome: `http.response.status_code` (`http.status_code`), else
//     `error.type` read as a timeout or a network failure.
// Spans of other kinds, and client spans with no HTTP attribute, are
// counted and skipped. A malformed export is refused: the error names the
// file, the line of a JSON Lines file and the JSON pointer of the record.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/import/call_observation.hpp"
#include "sim/import/fault_windows.hpp"

namespace rehearse::sim {

struct OtlpCalls {
  std::vector<CallObservation> calls;
  std::vector<Ambiguity> ambiguities;  // spans read with a guess
  int spans = 0;
  int skipped_not_client = 0;
  int skipped_not_http = 0;
  std::vector<std::string> addresses;  // every service address seen, sorted, before renaming
};

// `text` is the file's content; `path` names it in errors and evidence.
Result<OtlpCalls> read_otlp_calls(const std::string& text, const std::string& path,
                                  const std::map<std::string, std::string>& rename);

}  // namespace rehearse::sim
