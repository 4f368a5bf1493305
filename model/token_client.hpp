// TokenClient: authenticated requests to the brokerage with a cached access
// token (docs/semantics.md §7; incident 001, its token part).
//
// The original client reused its cached token until 60 s before the known
// expiry and kept it after a 401, so a token the server revoked early failed
// every request until the process restarted and its memory (the cache) was
// emptied. This client:
// - reuses the cached token until `refresh_margin_ms` (60 s) before its known
//   expiry; from then on a request first obtains a new one ("refresh");
// - on the FIRST 401 of a request drops the cached token, obtains a new one
//   and retries that request once; a second 401 is returned as is (class
//   auth). 403, 429, 5xx and transport errors are returned as is: they never
//   cause a reissue;
// - if obtaining the token fails, the request fails with the issuance's own
//   result (its status as a field, its message verbatim), hence its class,
//   and there is no second reissue;
// - single flight: at most one issuance is in flight per client. A request
//   that needs a token while one is in flight waits for it and shares its
//   outcome (success or failure) instead of starting another. Tokens carry a
//   generation number (1, 2, ... per client); a request rejected with a token
//   older than the cached one just retries with the cached one.
//
// The cache is process memory: a TokenClient lives as long as its process
// (a crash empties it, a reboot starts with no token).
//
// Secrets: the token value goes only into the request's "authorization"
// header. Logs carry the client's generation number and a short fingerprint
// (token_fingerprint), never the token.
//
// Waiting for an in-flight issuance uses WaitList (below): waiters park on it
// and are resumed by the executor through Clock::schedule_wake, never inline
// by the coroutine that completes the issuance.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/ports.hpp"
#include "model/task.hpp"
#include "model/time.hpp"

namespace rehearse {

// Request headers that attribute a call to a job run, for whatever observes
// the calls (traces, gateway logs); a test checks that the simulated world
// uses the same names. "authorization" carries the token and is never copied
// anywhere else.
inline constexpr const char* kRequestHeaderJob = "x-job-id";
inline constexpr const char* kRequestHeaderSlot = "x-slot";
inline constexpr const char* kRequestHeaderAttempt = "x-attempt";
inline constexpr const char* kRequestHeaderItem = "x-item";
inline constexpr const char* kRequestHeaderId = "x-request-id";
inline constexpr const char* kRequestHeaderAuthorization = "authorization";

// The operation that issues a token, and the reasons a client gives for it (in
// the request body's "reason", so the service and the trace can tell them
// apart: only `after_401` is a *reissue* in the sense of invariant 7).
inline constexpr const char* kIssueTokenOperation = "issue_token";
enum class TokenIssueReason : unsigned char {
  initial,    // no cached token (first use, or after a restart or a failed issuance)
  refresh,    // the cached token is within the refresh margin of its known expiry
  after_401,  // the request was rejected with the cached token
};
const char* to_string(TokenIssueReason reason) noexcept;

// "fp-" and 8 hex digits: the top 32 bits of 64-bit FNV-1a over the token.
// Identifies a token in logs and traces (the client's and the brokerage's
// agree) without revealing it.
std::string token_fingerprint(std::string_view token);

// --- WaitList ------------------------------------------------------------------

// Parks coroutines until notify_all(), which hands each one to the executor
// (Clock::schedule_wake) instead of resuming it inline: the notifier keeps
// running undisturbed and every waiter continues later from the event queue
// with a fresh stack (model/task.hpp).
//
// Crash safety. A waiter's registration lives in its own frame (a named local
// of wait()): destroying the frame unlinks it, or cancels its wake if it was
// already notified, so no destroyed frame is ever resumed. Destroying the
// list itself detaches the waiters still parked (they are never resumed; the
// owner of the list must be going away with them, as process memory does in
// a crash, where frames are destroyed first).
class WaitList {
 public:
  explicit WaitList(Clock& clock) noexcept : clock_(clock) {}
  WaitList(const WaitList&) = delete;
  WaitList& operator=(const WaitList&) = delete;
  ~WaitList();

  // Suspends the caller until the next notify_all(), then resumes it from the
  // event queue. Always a suspension point.
  Task<void> wait();
  // Schedules a wake for every parked waiter, in the order they parked.
  // Waiters that park after this call wait for the next one.
  void notify_all();
  std::size_t size() const noexcept { return size_; }

 private:
  class Node;
  Clock& clock_;
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  std::size_t size_ = 0;

  void link(Node& node) noexcept;
  void unlink(Node& node) noexcept;
};

// --- TokenClient ---------------------------------------------------------------

struct TokenClientConfig {
  std::string service = "brokerage";
  // Reissue this long before the known expiry (incident 001's 60 s): the
  // cached token is used while now < expires_at - refresh_margin_ms.
  DurationMs refresh_margin_ms = 60 * kSecondMs;
  // Bound on the wait-and-recheck rounds of one token acquisition (each round
  // waits for an issuance started by another request). A limit on everything.
  int acquire_rounds_max = 16;
};

// What the client knows of its cached token (never the value itself).
struct TokenInfo {
  std::uint64_t generation = 0;
  std::string fingerprint;
  std::optional<TimeMs> expires_at_ms;  // empty: the issuer gave no lifetime
};

// Counters over the client's life (process memory), for tests and reports.
struct TokenClientStats {
  std::uint64_t requests = 0;        // request() calls
  std::uint64_t sends = 0;           // authenticated sends (first tries + retries)
  std::uint64_t issuances = 0;       // issue_token calls this client made
  std::uint64_t reissues = 0;        // of which after a 401
  std::uint64_t issue_failures = 0;  // issuances that failed
  std::uint64_t joined = 0;          // times a request waited for another's issuance
  std::uint64_t stale_retries = 0;   // 401 with an older token: retried with the newer one
  std::uint64_t auth_failures = 0;   // second 401 of a request, returned as is
};

class TokenClient {
 public:
  TokenClient(Clock& clock, Services& services, Log& log, TokenClientConfig config = {});
  TokenClient(const TokenClient&) = delete;
  TokenClient& operator=(const TokenClient&) = delete;
  ~TokenClient();

  // Sends `request` (to its own service and operation) with the cached token
  // in the "authorization" header ("Bearer ..."), following the rules above.
  // Returns the request's final answer, or, when no token could be obtained,
  // the issuance's answer. The attribution headers of `request` (job, slot,
  // attempt, request id) are copied onto the issuance it triggers. The client
  // must outlive every request in flight.
  Task<ServiceResult> request(ServiceRequest request);

  // The cached token, if any (for status views and tests).
  std::optional<TokenInfo> cached() const;
  bool issuance_in_flight() const noexcept { return flight_.has_value(); }
  std::uint64_t generation() const noexcept { return generation_; }
  const TokenClientStats& stats() const noexcept { return stats_; }
  const TokenClientConfig& config() const noexcept { return config_; }

 private:
  struct CachedToken {
    std::string value;
    std::uint64_t generation = 0;
    std::string fingerprint;
    std::optional<TimeMs> expires_at_ms;
  };
  struct Flight {
    std::uint64_t id = 0;
    std::uint64_t replaces_generation = 0;  // generation_ when it started
  };
  // The outcome of the last issuance that completed (not abandoned).
  struct FlightOutcome {
    std::uint64_t id = 0;
    std::uint64_t replaces_generation = 0;
    std::uint64_t generation = 0;          // the token it produced (success only)
    std::optional<ServiceResult> failure;  // the issuance's answer (failure only)
  };
  // A token to send with, or the answer to return instead.
  struct Grant {
    std::string token;
    std::uint64_t generation = 0;
    std::optional<ServiceResult> failure;
    bool ok() const noexcept { return !failure.has_value(); }
  };
  class FlightGuard;

  bool needs_refresh(const CachedToken& token) const;
  Grant grant_cached() const;
  // A token newer than `rejected_generation` (0: any usable token), waiting
  // for or leading an issuance as needed.
  Task<Grant> acquire(std::uint64_t rejected_generation, ServiceRequest origin);
  Task<Grant> issue(TokenIssueReason reason, ServiceRequest origin);
  LogFields context_fields(const ServiceRequest& origin) const;

  Clock& clock_;
  Services& services_;
  Log& log_;
  TokenClientConfig config_;
  std::optional<CachedToken> cached_;
  std::uint64_t generation_ = 0;  // of the newest token obtained (0: none yet)
  std::optional<Flight> flight_;
  std::uint64_t next_flight_id_ = 1;
  std::optional<FlightOutcome> last_flight_;
  WaitList flight_waiters_;
  TokenClientStats stats_;
};

}  // namespace rehearse
