// SimBrokerage: the simulated external brokerage API ("brokerage"), a
// SimService plugged into SimServices.
//
// Tokens. Operation "issue_token" issues an access token: an opaque random
// string ("tok_" and 32 hex digits) drawn from a stream seeded by the name
// "<name>/tokens" alone (not by the run's seed), valid for
// `token_lifetime_ms` from the instant of issue.
// The reply is {"access_token", "token_type": "Bearer", "expires_in"
// (seconds, rounded down)}. Tokens are numbered 1, 2, ... (the brokerage's
// generation, independent of any client's).
//
// Authenticated operations. Every other operation ("quote", "positions", ...)
// needs "authorization: Bearer <token>": a missing, unknown, expired or
// revoked token gets 401; a valid one gets 200 with a small deterministic
// body. Scripted faults are checked before the token (they model the gateway
// or an outage in front of the API).
//
// Faults (injected here only; the programmatic API the scenario loader uses):
// - revoke_all() / schedule_revoke_all(at): revokes every live token at once,
//   before its expiry (incident 001's early revocation);
// - add_fault(BrokerageFault): a window [from, until) per operation (or every
//   operation) in which a share `rate` of calls (drawn from the sub-stream
//   "brokerage/faults"), at most `hits_max` of them, answer with an HTTP status
//   (401, 403, 429, 5xx, ...) or a transport error. A fault on "issue_token" is
//   an issuance failure. Faults are checked in the order added; the first hit
//   answers.
//
// Trace events (service "brokerage", attributed with the request's job / slot /
// item / attempt / request_id headers; a token appears only as its generation
// and token_fingerprint(), never as its value):
// - token_issued {generation, fingerprint, expires_at, reason}: an issuance
//   succeeded; `reason` is the client's ("initial", "refresh", "after_401").
// - token_issue_failed {reason, status | transport_error, fault}: a fault hit
//   an issuance.
// - token_revoked {generation, fingerprint, cause: "revoke_all"}: one per
//   live token a revocation fault revoked (world event, no job).
// - auth_rejected {operation, reason: "missing" | "unknown" | "expired" |
//   "revoked" | "scripted", generation?, fingerprint?}: a 401 answer.
// - fault_hit {operation, fault, status | transport_error}: a scripted fault
//   other than a 401 answered an authenticated operation (a scripted 401 is
//   recorded as auth_rejected with reason "scripted" and the fault's label).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/failure.hpp"
#include "model/time.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim {

inline constexpr const char* kBrokerageName = "brokerage";

struct BrokerageConfig {
  std::string name = kBrokerageName;
  DurationMs token_lifetime_ms = 24 * kHourMs;
  DurationMs latency_ms = 100;
  // The token endpoint's own latency (empty: latency_ms).
  std::optional<DurationMs> issue_latency_ms;
  // How long a call hit by a transport `timeout` fault takes to fail (the
  // client's own limit).
  DurationMs timeout_ms = 30 * kSecondMs;
};

struct BrokerageFault {
  std::string operation;  // empty: every operation, "issue_token" included
  TimeMs from_ms = std::numeric_limits<TimeMs>::min();
  TimeMs until_ms = std::numeric_limits<TimeMs>::max();  // exclusive
  double rate = 1.0;                                     // share of matching calls hit
  std::optional<std::uint64_t> hits_max;                 // at most this many hits (empty: no limit)
  // What a hit answers: an HTTP status, or (http_status == 0) a transport
  // error of kind `transport`.
  int http_status = 0;
  TransportErrorKind transport = TransportErrorKind::none;
  std::string message;  // body / error message; empty: a standard text
  std::string label;    // names the fault in the trace ("fault" field)
};

// What the brokerage knows of one token (tests and monitors; the value is
// here only so that a secrets check can search for it).
struct BrokerageToken {
  std::string value;
  std::uint64_t generation = 0;
  TimeMs issued_at_ms = 0;
  TimeMs expires_at_ms = 0;
  std::optional<TimeMs> revoked_at_ms;
};

class SimBrokerage final : public SimService {
 public:
  SimBrokerage(Simulator& simulator, Trace& trace, BrokerageConfig config = {});

  const std::string& name() const override { return config_.name; }
  SimReply handle(const ServiceRequest& request, TimeMs now_ms) override;

  // --- faults ---
  // Revokes every token that is neither expired nor revoked, now.
  void revoke_all();
  // A world event at `at_ms` that calls revoke_all().
  void schedule_revoke_all(TimeMs at_ms);
  void add_fault(BrokerageFault fault);

  // --- observations ---
  const BrokerageConfig& config() const noexcept { return config_; }
  // Calls received per operation ("issue_token" included), faulted or not.
  std::uint64_t calls(const std::string& operation) const;
  std::uint64_t issued_count() const noexcept { return tokens_.size(); }
  std::uint64_t rejected_count() const noexcept { return rejected_; }  // 401 answers
  // Every token ever issued, in issue order.
  const std::vector<BrokerageToken>& tokens() const noexcept { return tokens_; }
  std::uint64_t fault_hits(std::size_t fault_index) const;

 private:
  struct FaultState {
    BrokerageFault fault;
    std::uint64_t hits = 0;
  };

  std::optional<SimReply> apply_faults(const ServiceRequest& request, TimeMs now_ms);
  SimReply issue(const ServiceRequest& request, TimeMs now_ms);
  SimReply serve(const ServiceRequest& request, TimeMs now_ms);
  SimReply reject(const ServiceRequest& request, TimeMs now_ms, const char* reason,
                  const BrokerageToken* token);
  TraceEvent event(const ServiceRequest& request, TimeMs now_ms, std::string type) const;
  SimReply reply_status(int status, std::string message) const;

  Simulator& simulator_;
  Trace& trace_;
  BrokerageConfig config_;
  Rng token_rng_;
  Rng fault_rng_;
  std::vector<BrokerageToken> tokens_;
  std::map<std::string, std::size_t, std::less<>> by_value_;  // token value -> index
  std::vector<FaultState> faults_;
  std::map<std::string, std::uint64_t, std::less<>> calls_;
  std::uint64_t rejected_ = 0;
};

}  // namespace rehearse::sim
