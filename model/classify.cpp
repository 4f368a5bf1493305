// The failure classifier (docs/semantics.md §1).
//
// Order of evidence: a locally raised class, then the HTTP status field, then
// the transport error kind; the message text is read only when the error
// carries none of these (001: the status travels as a field, never parsed
// back out of a message when the field exists).
//
// Text fallback. The message is lower-cased (ASCII only; other bytes pass
// through) and the classes are tried most specific first; the first class
// with any marker in the message wins:
//
//   auth        401, 403; unauthorized, unauthorised, unauthenticated,
//               forbidden, invalid token, invalid_token, invalid api key,
//               invalid_api_key, invalid x-api-key, authentication fail(ed),
//               authentication error, authentication_error, not authorized,
//               access denied, permission denied, permission_denied,
//               invalid credentials, token expired, expired token,
//               token has expired, token revoked
//   validation  400, 422; bad request, unprocessable, validation (at a word
//               start: "cache invalidation" is not a validation error),
//               invalid request, invalid_request, invalid argument,
//               invalid_argument, invalid parameter, invalid input, malformed
//   not_found   404, 410; not found, not_found, does not exist, doesn't exist
//               ("host/server/address/domain/hostname not found" is DNS talk
//               and left to `network`)
//   config      config (configuration, misconfigured, ConfigError...),
//               missing agent, agent missing, unknown role, invalid role,
//               bad role, invalid policy, bad override
//   rate_limit  429; quota, usage limit, rate limit, rate-limit, rate_limit,
//               ratelimit, too many requests, resource exhausted,
//               resource_exhausted, throttl(ed/ing)
//   provider_5xx 500-599; 5xx, internal server error, bad gateway,
//               service unavailable, gateway timeout, server error, overloaded
//   timeout     408; timeout, timed out, time out, time-out, etimedout,
//               deadline exceeded, deadline_exceeded
//   network     connection, econnrefused, econnreset, econnaborted,
//               enotfound, eai_again, ehostunreach, enetunreach, epipe,
//               broken pipe, socket, network, unreachable, dns, host not
//               found, no such host, name resolution, could not resolve,
//               getaddrinfo, reset by peer, refused, disconnect
//   unknown     everything else (fail closed: not retried by default)
//
// Why permanent classes come first: "ConnectionError: HTTP 403 Forbidden" is
// an authorisation failure wearing a network exception's name (004); reading
// the broad word first would retry a permanent error forever.
//
// Status numbers in text. A number counts as an HTTP status only when it is a
// standalone run of exactly three digits: not glued to letters, digits, '_',
// '.', '/', '#' or '$' (so "port 5000", "v1.500", "/users/404", "issue #404",
// "500ms" and "12:00:00.500Z" are not statuses), not "host:503" (a port;
// "status:503" and "http:503" still count), not followed by a unit
// ("500 ms", "429 bytes", "500%"), and not right after a word that names
// some other number (port, line, pid, id, issue, item, row, column, attempt,
// version). Only statuses that classify_http_status maps to a class count.
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "model/assert.hpp"
#include "model/failure.hpp"

namespace rehearse {

FailureClass classify_http_status(int status) noexcept {
  switch (status) {
    case 408: return FailureClass::timeout;
    case 429: return FailureClass::rate_limit;
    case 401:
    case 403: return FailureClass::auth;
    case 400:
    case 422: return FailureClass::validation;
    case 404:
    case 410: return FailureClass::not_found;
    default: break;
  }
  if (status >= 500 && status <= 599) return FailureClass::provider_5xx;
  return FailureClass::unknown;
}

namespace {

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lower_ascii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

enum class MatchKind {
  anywhere,  // substring anywhere (distinctive phrases, exception names)
  word,      // not preceded or followed by a letter or digit
  prefix,    // not preceded by a letter or digit ("validation" but not "invalidation")
};

struct Marker {
  std::string_view text;
  MatchKind kind = MatchKind::anywhere;
};

struct ClassMarkers {
  FailureClass failure_class;
  std::vector<Marker> markers;
};

// The word immediately before position `pos` (skipping spaces), lower-cased
// already because the whole message is.
std::string_view word_before(std::string_view text, std::size_t pos) {
  std::size_t end = pos;
  while (end > 0 && text[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && is_alnum(text[begin - 1])) --begin;
  return text.substr(begin, end - begin);
}

std::string_view word_after(std::string_view text, std::size_t pos) {
  std::size_t begin = pos;
  while (begin < text.size() && text[begin] == ' ') ++begin;
  std::size_t end = begin;
  while (end < text.size() && is_alnum(text[end])) ++end;
  return text.substr(begin, end - begin);
}

bool is_dns_not_found(std::string_view text, std::size_t pos) {
  const std::string_view before = word_before(text, pos);
  return before == "host" || before == "server" || before == "address" || before == "domain" ||
         before == "hostname";
}

bool marker_matches(std::string_view text, const Marker& marker, FailureClass cls) {
  std::size_t pos = text.find(marker.text);
  while (pos != std::string_view::npos) {
    bool ok = true;
    if (marker.kind != MatchKind::anywhere && pos > 0 && is_alnum(text[pos - 1])) ok = false;
    if (marker.kind == MatchKind::word) {
      const std::size_t end = pos + marker.text.size();
      if (end < text.size() && is_alnum(text[end])) ok = false;
    }
    if (ok && cls == FailureClass::not_found && marker.text == "not found" &&
        is_dns_not_found(text, pos)) {
      ok = false;
    }
    if (ok) return true;
    pos = text.find(marker.text, pos + 1);
  }
  return false;
}

const std::array<std::string_view, 10> kNumberNamingWords{
    "port", "line", "pid", "id", "issue", "item", "row", "column", "attempt", "version"};
const std::array<std::string_view, 4> kStatusWords{"http", "https", "status", "code"};
const std::array<std::string_view, 22> kUnitWords{
    "ms",    "s",     "sec",    "secs",    "second", "seconds", "millis", "milliseconds",
    "min",   "mins",  "minute", "minutes", "h",      "hr",      "hrs",    "hour",
    "hours", "bytes", "kb",     "mb",      "gb",     "px"};

template <std::size_t N>
bool one_of(std::string_view word, const std::array<std::string_view, N>& words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// Three-digit numbers in the (lower-cased) text that read as HTTP statuses;
// see the rules in the file comment.
std::vector<int> status_numbers(std::string_view text) {
  std::vector<int> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_digit(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_digit(text[end])) ++end;
    const std::size_t begin = i;
    i = end;
    if (end - begin != 3) continue;
    if (begin > 0) {
      const char prev = text[begin - 1];
      if (is_alnum(prev) || prev == '_' || prev == '.' || prev == '/' || prev == '#' ||
          prev == '$') {
        continue;
      }
      if (prev == '-' && begin > 1 && is_digit(text[begin - 2])) continue;
      if (prev == ':' && begin > 1 && (is_alnum(text[begin - 2]) || text[begin - 2] == '.')) {
        // "host:503" is a port; "status:503" is a status.
        if (!one_of(word_before(text, begin - 1), kStatusWords)) continue;
      }
    }
    if (end < text.size()) {
      const char next = text[end];
      if (is_alnum(next) || next == '_' || next == '/' || next == '%' || next == '$') continue;
      if ((next == '.' || next == ':' || next == ',') && end + 1 < text.size() &&
          is_digit(text[end + 1])) {
        continue;
      }
      if (next == ' ' && one_of(word_after(text, end), kUnitWords)) continue;
    }
    if (one_of(word_before(text, begin), kNumberNamingWords)) continue;
    const int value =
        (text[begin] - '0') * 100 + (text[begin + 1] - '0') * 10 + (text[begin + 2] - '0');
    REHEARSE_ASSERT_LE(value, 999);
    out.push_back(value);
  }
  return out;
}

const std::vector<ClassMarkers>& text_rules() {
  using enum MatchKind;
  static const std::vector<ClassMarkers> kRules{
      {FailureClass::auth,
       {{"unauthorized"},        {"unauthorised"},         {"unauthenticated"},
        {"forbidden"},           {"invalid token"},        {"invalid_token"},
        {"invalid api key"},     {"invalid_api_key"},      {"invalid x-api-key"},
        {"authentication fail"}, {"authentication error"}, {"authentication_error"},
        {"not authorized"},      {"access denied"},        {"permission denied"},
        {"permission_denied"},   {"invalid credentials"},  {"token expired"},
        {"expired token"},       {"token has expired"},    {"token revoked"}}},
      {FailureClass::validation,
       {{"bad request"},
        {"unprocessable"},
        {"validation", prefix},
        {"invalid request"},
        {"invalid_request"},
        {"invalid argument"},
        {"invalid_argument"},
        {"invalid parameter"},
        {"invalid input"},
        {"malformed"}}},
      {FailureClass::not_found,
       {{"not found"}, {"not_found"}, {"does not exist"}, {"doesn't exist"}}},
      {FailureClass::config,
       {{"config"},
        {"missing agent"},
        {"agent missing"},
        {"unknown role"},
        {"invalid role"},
        {"bad role"},
        {"invalid policy"},
        {"bad override"}}},
      {FailureClass::rate_limit,
       {{"quota"},
        {"usage limit"},
        {"rate limit"},
        {"rate-limit"},
        {"rate_limit"},
        {"ratelimit"},
        {"too many requests"},
        {"resource exhausted"},
        {"resource_exhausted"},
        {"throttl"}}},
      {FailureClass::provider_5xx,
       {{"5xx", word},
        {"internal server error"},
        {"bad gateway"},
        {"service unavailable"},
        {"gateway timeout"},
        {"server error"},
        {"overloaded"}}},
      {FailureClass::timeout,
       {{"timeout"},
        {"timed out"},
        {"time out"},
        {"time-out"},
        {"etimedout"},
        {"deadline exceeded"},
        {"deadline_exceeded"}}},
      {FailureClass::network,
       {{"connection"},      {"econnrefused"},      {"econnreset"},     {"econnaborted"},
        {"enotfound"},       {"eai_again"},         {"ehostunreach"},   {"enetunreach"},
        {"epipe", word},     {"broken pipe"},       {"socket"},         {"network"},
        {"unreachable"},     {"dns", word},         {"host not found"}, {"no such host"},
        {"name resolution"}, {"could not resolve"}, {"getaddrinfo"},    {"reset by peer"},
        {"refused"},         {"disconnect"}}},
  };
  return kRules;
}

}  // namespace

FailureClass classify_message(std::string_view message) {
  const std::string text = lower_ascii(message);
  const std::vector<int> statuses = status_numbers(text);
  for (const ClassMarkers& rule : text_rules()) {
    for (const int status : statuses) {
      if (classify_http_status(status) == rule.failure_class) return rule.failure_class;
    }
    for (const Marker& marker : rule.markers) {
      if (marker_matches(text, marker, rule.failure_class)) return rule.failure_class;
    }
  }
  return FailureClass::unknown;
}

FailureClass classify(const FailureInfo& failure) {
  if (failure.local_class) return *failure.local_class;
  if (failure.http_status) return classify_http_status(*failure.http_status);
  switch (failure.transport) {
    case TransportErrorKind::none: break;
    case TransportErrorKind::timeout: return FailureClass::timeout;
    case TransportErrorKind::connection_refused:
    case TransportErrorKind::connection_reset:
    case TransportErrorKind::dns:
    case TransportErrorKind::broken_pipe: return FailureClass::network;
  }
  return classify_message(failure.message);
}

}  // namespace rehearse
