#include "model/token_client.hpp"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "model/job_runner.hpp"

namespace rehearse {
namespace {

using Headers = std::map<std::string, std::string>;

bool is_unauthorized(const ServiceResult& result) {
  return result.has_response() && result.response().status == 401;
}

// The headers that attribute a call to a job run; never the credentials.
Headers context_headers(const ServiceRequest& request) {
  Headers out;
  for (const char* key : {kRequestHeaderJob, kRequestHeaderSlot, kRequestHeaderAttempt,
                          kRequestHeaderItem, kRequestHeaderId}) {
    if (auto it = request.headers.find(key); it != request.headers.end()) {
      out.emplace(key, it->second);
    }
  }
  return out;
}

// Log fields named as everywhere else (job_id, slot, attempt, item).
LogFields fields_from(const Headers& context) {
  LogFields fields;
  const std::pair<const char*, const char*> names[] = {
      {kRequestHeaderJob, "job_id"},      {kRequestHeaderSlot, "slot"},
      {kRequestHeaderAttempt, "attempt"}, {kRequestHeaderItem, "item"},
      {kRequestHeaderId, "request_id"},
  };
  for (const auto& [header, field] : names) {
    if (auto it = context.find(header); it != context.end()) {
      fields.push_back({field, it->second});
    }
  }
  return fields;
}

void add_failure_fields(LogFields& fields, const ServiceResult& result) {
  const FailureInfo info = to_failure_info(result);
  fields.push_back({"failure_class", to_string(classify(info))});
  append_failure_fields(fields, info);
}

// A failure answer made up by the client itself (no service said it). 5xx
// semantics: the issuer's reply could not be used, as a gateway would say.
ServiceResult local_failure(int status, std::string message) {
  ServiceResponse response;
  response.status = status;
  response.body = nlohmann::json{{"message", std::move(message)}};
  return ServiceResult(std::move(response));
}

}  // namespace

const char* to_string(TokenIssueReason reason) noexcept {
  switch (reason) {
    case TokenIssueReason::initial: return "initial";
    case TokenIssueReason::refresh: return "refresh";
    case TokenIssueReason::after_401: return "after_401";
  }
  return "initial";
}

std::string token_fingerprint(std::string_view token) {
  std::uint64_t hash = 14695981039346656037ull;
  for (const char c : token) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return fmt::format("fp-{:08x}", hash >> 32);
}

// --- WaitList ------------------------------------------------------------------

// One parked coroutine: a named local of WaitList::wait(), so its destructor
// runs whenever that frame is destroyed, at the suspension point included.
class WaitList::Node {
 public:
  explicit Node(WaitList& list) noexcept : list_(&list), clock_(&list.clock_) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() {
    if (list_ != nullptr && linked_) list_->unlink(*this);
    // Notified but not yet resumed: withdraw the wake so the executor never
    // resumes this (destroyed) frame.
    if (wake_id_ != 0) clock_->cancel_wake(wake_id_);
  }

  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) noexcept {
    handle_ = handle;
    list_->link(*this);
  }
  void await_resume() noexcept { wake_id_ = 0; }

 private:
  friend class WaitList;
  WaitList* list_;  // null once the list is gone
  Clock* clock_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  std::coroutine_handle<> handle_;
  Clock::WakeId wake_id_ = 0;
  bool linked_ = false;
};

WaitList::~WaitList() {
  for (Node* node = head_; node != nullptr;) {
    Node* next = node->next_;
    node->list_ = nullptr;
    node->linked_ = false;
    node->prev_ = node->next_ = nullptr;
    node = next;
  }
  head_ = tail_ = nullptr;
  size_ = 0;
}

void WaitList::link(Node& node) noexcept {
  REHEARSE_ASSERT(!node.linked_);
  node.prev_ = tail_;
  node.next_ = nullptr;
  if (tail_ != nullptr) {
    tail_->next_ = &node;
  } else {
    head_ = &node;
  }
  tail_ = &node;
  node.linked_ = true;
  ++size_;
}

void WaitList::unlink(Node& node) noexcept {
  REHEARSE_ASSERT(node.linked_);
  if (node.prev_ != nullptr) {
    node.prev_->next_ = node.next_;
  } else {
    head_ = node.next_;
  }
  if (node.next_ != nullptr) {
    node.next_->prev_ = node.prev_;
  } else {
    tail_ = node.prev_;
  }
  node.prev_ = node.next_ = nullptr;
  node.linked_ = false;
  REHEARSE_ASSERT(size_ > 0);
  --size_;
}

Task<void> WaitList::wait() {
  Node node(*this);  // a named local: unlinked / cancelled if this frame dies
  co_await node;
}

void WaitList::notify_all() {
  // schedule_wake never resumes anything inline, so the list cannot change
  // under this loop.
  while (head_ != nullptr) {
    Node& node = *head_;
    unlink(node);
    node.wake_id_ = clock_.schedule_wake(node.handle_);
  }
}

// --- TokenClient ---------------------------------------------------------------

// Marks an issuance in flight for as long as the leading request's frame
// holds it. complete() publishes the outcome and wakes the waiters; if the
// frame is destroyed first (the task was dropped, or a crash), the flight is
// abandoned: the waiters wake, find no outcome and re-evaluate (one of them
// leads anew). No logging here: a destructor that runs during a crash must
// have no effect outside the process.
class TokenClient::FlightGuard {
 public:
  FlightGuard(TokenClient& client, Flight flight) noexcept : client_(client) {
    REHEARSE_ASSERT(!client_.flight_.has_value());
    client_.flight_ = flight;
  }
  FlightGuard(const FlightGuard&) = delete;
  FlightGuard& operator=(const FlightGuard&) = delete;
  ~FlightGuard() {
    if (!active_) return;
    client_.flight_.reset();
    client_.flight_waiters_.notify_all();
  }

  void complete(FlightOutcome outcome) {
    REHEARSE_ASSERT(active_);
    active_ = false;
    client_.last_flight_ = std::move(outcome);
    client_.flight_.reset();
    client_.flight_waiters_.notify_all();
  }

 private:
  TokenClient& client_;
  bool active_ = true;
};

TokenClient::TokenClient(Clock& clock, Services& services, Log& log, TokenClientConfig config)
    : clock_(clock),
      services_(services),
      log_(log),
      config_(std::move(config)),
      flight_waiters_(clock) {
  REHEARSE_ASSERT(config_.refresh_margin_ms >= 0);
  REHEARSE_ASSERT(config_.acquire_rounds_max >= 1);
}

// Requests in flight must have ended (or been destroyed) before the client:
// their frames reference it.
TokenClient::~TokenClient() { REHEARSE_ASSERT(!flight_.has_value()); }

std::optional<TokenInfo> TokenClient::cached() const {
  if (!cached_) return std::nullopt;
  return TokenInfo{cached_->generation, cached_->fingerprint, cached_->expires_at_ms};
}

bool TokenClient::needs_refresh(const CachedToken& token) const {
  // At exactly expires_at - margin the token is no longer reused.
  return token.expires_at_ms && clock_.now() >= *token.expires_at_ms - config_.refresh_margin_ms;
}

TokenClient::Grant TokenClient::grant_cached() const {
  REHEARSE_ASSERT(cached_.has_value());
  return Grant{cached_->value, cached_->generation, std::nullopt};
}

LogFields TokenClient::context_fields(const ServiceRequest& origin) const {
  return fields_from(context_headers(origin));
}

Task<ServiceResult> TokenClient::request(ServiceRequest request) {
  ++stats_.requests;
  ServiceRequest origin;  // only the attribution headers travel to issuances
  origin.headers = context_headers(request);
  request.headers.erase(kRequestHeaderAuthorization);

  Grant grant = co_await acquire(0, origin);
  if (!grant.ok()) co_return std::move(*grant.failure);

  for (int send = 1;; ++send) {
    ServiceRequest attempt = request;
    attempt.headers[kRequestHeaderAuthorization] = "Bearer " + grant.token;
    ++stats_.sends;
    ServiceResult result = co_await services_.call(std::move(attempt));
    if (!is_unauthorized(result)) co_return result;

    LogFields fields = context_fields(origin);
    fields.push_back({"generation", grant.generation});
    fields.push_back({"fingerprint", token_fingerprint(grant.token)});
    if (send >= 2) {
      // The one reissue-and-retry is spent: the 401 stands (class auth),
      // with the server's message and status untouched.
      ++stats_.auth_failures;
      add_failure_fields(fields, result);
      log_.error("token_rejected_again", fields);
      co_return result;
    }
    log_.warning("token_rejected", fields);
    const std::uint64_t rejected_generation = grant.generation;
    grant = co_await acquire(rejected_generation, origin);
    if (!grant.ok()) co_return std::move(*grant.failure);
  }
}

Task<TokenClient::Grant> TokenClient::acquire(std::uint64_t rejected_generation,
                                              ServiceRequest origin) {
  const bool after_401 = rejected_generation != 0;
  for (int round = 0; round < config_.acquire_rounds_max; ++round) {
    TokenIssueReason reason = after_401 ? TokenIssueReason::after_401 : TokenIssueReason::initial;
    if (cached_) {
      if (after_401 && cached_->generation <= rejected_generation) {
        // The token the server rejected (or an older one): drop it so no
        // other request sends it again.
        LogFields fields = context_fields(origin);
        fields.push_back({"generation", cached_->generation});
        fields.push_back({"fingerprint", cached_->fingerprint});
        log_.info("token_dropped", fields);
        cached_.reset();
      } else if (!needs_refresh(*cached_)) {
        if (after_401) {
          // Rejected with an older generation: someone already replaced it.
          ++stats_.stale_retries;
          LogFields fields = context_fields(origin);
          fields.push_back({"rejected_generation", rejected_generation});
          fields.push_back({"generation", cached_->generation});
          log_.info("token_retry_newer", fields);
        }
        co_return grant_cached();
      } else {
        reason = TokenIssueReason::refresh;
      }
    }

    if (flight_) {
      // Single flight: share the issuance already under way.
      const std::uint64_t awaited = flight_->id;
      ++stats_.joined;
      LogFields fields = context_fields(origin);
      fields.push_back({"flight", awaited});
      log_.info("token_wait", fields);
      co_await flight_waiters_.wait();
      if (last_flight_ && last_flight_->id == awaited) {
        if (last_flight_->failure) co_return Grant{{}, 0, last_flight_->failure};
        if (cached_ && cached_->generation == last_flight_->generation) {
          co_return grant_cached();  // the shared token, even if already near expiry
        }
      }
      continue;  // abandoned, or already superseded: look again
    }

    if (after_401 && last_flight_ && last_flight_->failure &&
        last_flight_->replaces_generation >= rejected_generation) {
      // An issuance started after our token was current has already failed:
      // it was this request's reissue too (it met the 401 together with the
      // one that led it). Share its failure; no second reissue.
      LogFields fields = context_fields(origin);
      fields.push_back({"flight", last_flight_->id});
      log_.warning("token_shared_failure", fields);
      co_return Grant{{}, 0, last_flight_->failure};
    }

    Grant grant = co_await issue(reason, std::move(origin));
    co_return grant;
  }
  co_return Grant{{},
                  0,
                  local_failure(503, fmt::format("token issuance did not settle after {} waits",
                                                 config_.acquire_rounds_max))};
}

Task<TokenClient::Grant> TokenClient::issue(TokenIssueReason reason, ServiceRequest origin) {
  const std::uint64_t flight_id = next_flight_id_++;
  const std::uint64_t replaces_generation = generation_;
  FlightGuard guard(*this, Flight{flight_id, replaces_generation});

  ServiceRequest issue_request;
  issue_request.service = config_.service;
  issue_request.operation = kIssueTokenOperation;
  issue_request.body = nlohmann::json{{"reason", to_string(reason)}};
  issue_request.headers = origin.headers;
  ++stats_.issuances;
  if (reason == TokenIssueReason::after_401) ++stats_.reissues;
  // The issuer's lifetime counts from when it issued, which is no earlier
  // than this send: the expiry we compute is never later than the real one.
  const TimeMs sent_ms = clock_.now();
  ServiceResult result = co_await services_.call(std::move(issue_request));

  LogFields fields = context_fields(origin);
  fields.push_back({"flight", flight_id});
  fields.push_back({"reason", to_string(reason)});

  std::optional<ServiceResult> failure;
  std::string token;
  std::optional<TimeMs> expires_at_ms;
  if (!result.is_success()) {
    failure = std::move(result);
  } else {
    const nlohmann::json& body = result.response().body;
    if (body.is_object() && body.contains("access_token") && body.at("access_token").is_string() &&
        !body.at("access_token").get_ref<const std::string&>().empty()) {
      token = body.at("access_token").get<std::string>();
      if (body.contains("expires_in") && body.at("expires_in").is_number() &&
          body.at("expires_in").get<double>() >= 0) {
        const double lifetime_s = body.at("expires_in").get<double>();
        expires_at_ms = sent_ms + static_cast<DurationMs>(std::llround(lifetime_s * 1000.0));
      }
    } else {
      failure = local_failure(502, "token response without access_token");
    }
  }

  if (failure) {
    ++stats_.issue_failures;
    // No usable token: the old one (if this was a refresh) is not reused.
    cached_.reset();
    add_failure_fields(fields, *failure);
    log_.warning("token_obtain_failed", fields);
    guard.complete(FlightOutcome{flight_id, replaces_generation, 0, failure});
    co_return Grant{{}, 0, std::move(failure)};
  }

  const std::uint64_t generation = ++generation_;
  cached_ = CachedToken{token, generation, token_fingerprint(token), expires_at_ms};
  fields.push_back({"generation", generation});
  fields.push_back({"fingerprint", cached_->fingerprint});
  if (expires_at_ms) fields.push_back({"expires_at", format_instant(*expires_at_ms)});
  log_.info("token_obtained", fields);
  guard.complete(FlightOutcome{flight_id, replaces_generation, generation, std::nullopt});
  co_return Grant{std::move(token), generation, std::nullopt};
}

}  // namespace rehearse
