// Failure classes and the classifier (docs/semantics.md §1).
//
// A structured status always wins over message text: the HTTP status travels
// as a field, never parsed back out of a message. Text fallback, for errors
// that only carry a message, goes most specific first.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rehearse {

enum class FailureClass : unsigned char {
  timeout,       // transport timeout, HTTP 408
  network,       // connection refused/reset, DNS, broken pipe
  provider_5xx,  // HTTP 500-599
  rate_limit,    // HTTP 429, quota / usage limit exhausted
  auth,          // HTTP 401, 403
  validation,    // HTTP 400, 422
  not_found,     // HTTP 404, 410
  config,        // local configuration error
  unknown,       // anything else (fail closed)
};
inline constexpr std::size_t kFailureClassCount = 9;

using FailureClassSet = std::bitset<kFailureClassCount>;

const char* to_string(FailureClass c) noexcept;
std::optional<FailureClass> parse_failure_class(std::string_view name) noexcept;
// All classes in declaration order (for loops, tables and generators).
const std::vector<FailureClass>& all_failure_classes();

inline bool contains(const FailureClassSet& set, FailureClass c) {
  return set.test(static_cast<std::size_t>(c));
}
inline void insert(FailureClassSet& set, FailureClass c) { set.set(static_cast<std::size_t>(c)); }
std::vector<std::string> class_names(const FailureClassSet& set);

// The per-job form's defaults (table of docs/semantics.md §1): timeout, network,
// provider_5xx and rate_limit are retryable; the rest are not.
bool is_retryable_by_default(FailureClass c) noexcept;
FailureClassSet default_retryable_classes();
FailureClassSet all_classes_set();

// How a request failed below HTTP.
enum class TransportErrorKind : unsigned char {
  none,
  timeout,
  connection_refused,
  connection_reset,
  dns,
  broken_pipe,
};
const char* to_string(TransportErrorKind k) noexcept;

// An error as it reaches the core. Exactly what the caller knows: an HTTP
// status (as a field), a transport error kind, a locally raised class (e.g.
// config), and the original message text, kept verbatim for logs.
struct FailureInfo {
  std::optional<int> http_status;
  TransportErrorKind transport = TransportErrorKind::none;
  std::optional<FailureClass> local_class;
  std::string message;
  // A refusal's Retry-After header in milliseconds (0: none or unreadable).
  std::int64_t retry_after_ms = 0;
};

// Retry-After as delta-seconds (RFC 9110 §10.2.3: a non-negative integer),
// in milliseconds, at most 366 days; 0 for anything else. The HTTP-date form
// is not read: it needs the caller's clock, and the services that refuse for
// capacity send seconds.
std::int64_t parse_retry_after_ms(std::string_view value) noexcept;

// Structured fields first (local class, then HTTP status, then transport
// kind); the message text only when none is present.
FailureClass classify(const FailureInfo& failure);
// 408 timeout; 429 rate_limit; 500-599 provider_5xx; 401/403 auth;
// 400/422 validation; 404/410 not_found; anything else unknown.
FailureClass classify_http_status(int status) noexcept;
// Text fallback: auth > validation > not_found > config > rate_limit >
// provider_5xx > timeout > network > unknown; first match wins.
FailureClass classify_message(std::string_view message);

}  // namespace rehearse
