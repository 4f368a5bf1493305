// Fault windows inferred from observed calls (docs/import.md, "Inference").
//
// Per service, in order of the calls' start: a window opens at the first
// failed call after a success (or at the first call), holds while calls fail
// with the same signature (HTTP status, timeout, network error), and closes
// at the next call that does not: a success, or a failure of another
// signature, which opens the next window. The true edges are only bounded:
// the start lies in (the last call before, first failure], the end in (last
// failure, closing call]; both bounds travel with the window as its
// evidence. The window written puts each edge in the middle of its bounds
// (the first failure itself when no call came before): every observed call
// is answered as it was, with the most room for a replay's calls to drift.
//
// What the calls cannot settle is reported, never silently resolved:
// calls that overlapped in time and disagree, a window no call closed
// (it may have lasted past the evidence), signatures that alternate inside
// one outage, an error that names no known network failure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sim/import/call_observation.hpp"

namespace rehearse::sim {

struct WindowEvidence {
  int failures = 0;                      // calls inside the window
  TimeMs first_failure_ms = 0;           // the start lies in (start_after_ms, first_failure_ms]
  TimeMs last_failure_ms = 0;            // the end lies in (last_failure_ms, end_by_ms]
  std::optional<TimeMs> start_after_ms;  // the last call before that did not fail this way
  std::optional<TimeMs> end_by_ms;       // the call that closed it (none: nothing did)
  std::string end_by;                    // that call's signature ("ok", "429", "timeout")
  std::string first_where;
  std::string last_where;
  std::string end_by_where;
};

struct InferredWindow {
  std::string service;
  CallObservation failure;  // the first failed call: its outcome, status, error
  TimeMs from_ms = 0;
  std::optional<TimeMs> until_ms;  // exclusive; none: to the end of the evidence
  WindowEvidence evidence;
};

struct Ambiguity {
  std::string service;
  TimeMs at_ms = 0;
  std::string what;   // a sentence: what the evidence cannot settle
  std::string guess;  // what the import did without --strict
  std::string where;  // the record(s)
};

struct InferredWindows {
  std::vector<InferredWindow> windows;  // by service name, then time
  std::vector<Ambiguity> ambiguities;   // by service name, then time
  int calls = 0;                        // observations read
};

InferredWindows infer_fault_windows(std::vector<CallObservation> calls);

}  // namespace rehearse::sim
