// Goal: the classifier follows docs/semantics.md §1: structured fields beat
// message text (local class > HTTP status > transport kind), the text fallback
// puts permanent markers before broad words, status numbers are read only
// where they stand as statuses, and classification is total.
// Method: a vector per rule and per documented keyword, the incidents' own
// examples, then properties: random bytes never crash and always yield a
// class; messages that mix a permanent marker with broad network/timeout
// words classify as the permanent class; the structured field wins over any
// message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/failure.hpp"
#include "tests/support/property.hpp"

namespace rehearse {
namespace {

FailureInfo message_only(std::string text) {
  FailureInfo f;
  f.message = std::move(text);
  return f;
}

TEST(ClassifyHttpStatus, FollowsTheTable) {
  EXPECT_EQ(classify_http_status(408), FailureClass::timeout);
  EXPECT_EQ(classify_http_status(429), FailureClass::rate_limit);
  EXPECT_EQ(classify_http_status(401), FailureClass::auth);
  EXPECT_EQ(classify_http_status(403), FailureClass::auth);
  EXPECT_EQ(classify_http_status(400), FailureClass::validation);
  EXPECT_EQ(classify_http_status(422), FailureClass::validation);
  EXPECT_EQ(classify_http_status(404), FailureClass::not_found);
  EXPECT_EQ(classify_http_status(410), FailureClass::not_found);
  for (int s = 500; s <= 599; ++s) EXPECT_EQ(classify_http_status(s), FailureClass::provider_5xx);
  EXPECT_EQ(classify_http_status(504), FailureClass::provider_5xx);  // "504 included"
  for (int s : {0, 100, 200, 204, 302, 402, 405, 409, 418, 499, 600, 999, -1}) {
    EXPECT_EQ(classify_http_status(s), FailureClass::unknown) << s;
  }
}

TEST(Classify, StructuredFieldsComeFirstInOrder) {
  FailureInfo f;
  f.message = "HTTP 429 Too Many Requests: connection reset";
  f.http_status = 403;
  EXPECT_EQ(classify(f), FailureClass::auth) << "status field beats message text";
  f.transport = TransportErrorKind::timeout;
  EXPECT_EQ(classify(f), FailureClass::auth) << "status field beats transport kind";
  f.local_class = FailureClass::config;
  EXPECT_EQ(classify(f), FailureClass::config) << "local class beats everything";

  FailureInfo t;
  t.message = "403 Forbidden";
  t.transport = TransportErrorKind::timeout;
  EXPECT_EQ(classify(t), FailureClass::timeout) << "transport kind beats message text";
  t.transport = TransportErrorKind::connection_refused;
  EXPECT_EQ(classify(t), FailureClass::network);
  t.transport = TransportErrorKind::connection_reset;
  EXPECT_EQ(classify(t), FailureClass::network);
  t.transport = TransportErrorKind::dns;
  EXPECT_EQ(classify(t), FailureClass::network);
  t.transport = TransportErrorKind::broken_pipe;
  EXPECT_EQ(classify(t), FailureClass::network);

  // A status without a class (e.g. 418) is still a structured answer:
  // unknown, not whatever the message says (001: never parse it back out).
  FailureInfo odd;
  odd.http_status = 418;
  odd.message = "HTTP 503 Service Unavailable";
  EXPECT_EQ(classify(odd), FailureClass::unknown);
}

TEST(Classify, ReportExamples) {
  // 004: the network exception name must not hide a permanent 403.
  EXPECT_EQ(classify(message_only("ConnectionError: HTTP 403 Forbidden")), FailureClass::auth);
  // 001: the model API's usage limit is a rate limit, never unknown.
  EXPECT_EQ(classify(message_only("Model API usage limit exceeded; resets in 4 hours")),
            FailureClass::rate_limit);
  EXPECT_EQ(classify(message_only("quota exhausted for project")), FailureClass::rate_limit);
  EXPECT_EQ(classify(message_only("QuotaExceededError")), FailureClass::rate_limit);
  EXPECT_EQ(classify(message_only("")), FailureClass::unknown);
}

struct TextCase {
  const char* message;
  FailureClass expected;
};

TEST(ClassifyMessage, KeywordsPerClass) {
  const std::vector<TextCase> cases{
      // auth
      {"401 Unauthorized", FailureClass::auth},
      {"request failed: unauthorised", FailureClass::auth},
      {"UNAUTHENTICATED: missing credentials", FailureClass::auth},
      {"Invalid token supplied", FailureClass::auth},
      {"invalid_api_key", FailureClass::auth},
      {"Authentication failed for user", FailureClass::auth},
      {"Permission denied (publickey)", FailureClass::auth},
      {"Access denied", FailureClass::auth},
      {"token expired at 10:00", FailureClass::auth},
      {"token revoked by server", FailureClass::auth},
      // validation
      {"400 Bad Request", FailureClass::validation},
      {"422 Unprocessable Entity", FailureClass::validation},
      {"ValidationError: title is required", FailureClass::validation},
      {"invalid_request_error: messages: field required", FailureClass::validation},
      {"malformed JSON body", FailureClass::validation},
      // not_found
      {"HTTP 404", FailureClass::not_found},
      {"410 Gone", FailureClass::not_found},
      {"Issue not found", FailureClass::not_found},
      {"resource does not exist", FailureClass::not_found},
      // config
      {"ConfigError: lead agent missing from agent list", FailureClass::config},
      {"unknown role 'wizard'", FailureClass::config},
      {"invalid policy for job", FailureClass::config},
      {"service misconfigured", FailureClass::config},
      // rate_limit
      {"429", FailureClass::rate_limit},
      {"Too Many Requests", FailureClass::rate_limit},
      {"rate limit exceeded", FailureClass::rate_limit},
      {"RateLimitError", FailureClass::rate_limit},
      {"RESOURCE_EXHAUSTED", FailureClass::rate_limit},
      {"request throttled", FailureClass::rate_limit},
      // provider_5xx
      {"HTTP 500", FailureClass::provider_5xx},
      {"status code 503", FailureClass::provider_5xx},
      {"504 Gateway Timeout", FailureClass::provider_5xx},
      {"Bad Gateway", FailureClass::provider_5xx},
      {"upstream returned 5xx", FailureClass::provider_5xx},
      {"overloaded_error: Overloaded", FailureClass::provider_5xx},
      {"status:502", FailureClass::provider_5xx},
      // timeout
      {"ReadTimeout", FailureClass::timeout},
      {"request timed out after 30s", FailureClass::timeout},
      {"connect ETIMEDOUT 10.0.0.1:443", FailureClass::timeout},
      {"DEADLINE_EXCEEDED", FailureClass::timeout},
      {"408 Request Timeout", FailureClass::timeout},
      // network
      {"connect ECONNREFUSED 127.0.0.1:5432", FailureClass::network},
      {"read ECONNRESET", FailureClass::network},
      {"getaddrinfo ENOTFOUND api.example.com", FailureClass::network},
      {"EPIPE", FailureClass::network},
      {"write: broken pipe", FailureClass::network},
      {"socket hang up", FailureClass::network},
      {"Network is unreachable", FailureClass::network},
      {"DNS lookup failed", FailureClass::network},
      {"Host not found: api.example.com", FailureClass::network},
      {"dial tcp: lookup api: no such host", FailureClass::network},
      {"Connection reset by peer", FailureClass::network},
      // unknown
      {"something odd happened", FailureClass::unknown},
      {"NullPointerException", FailureClass::unknown},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(classify_message(c.message), c.expected)
        << c.message << " -> " << to_string(classify_message(c.message));
  }
}

TEST(ClassifyMessage, PriorityOrderFirstMatchWins) {
  // Each pair: both markers present, the earlier class in the order wins.
  const std::vector<TextCase> cases{
      {"403 Forbidden: invalid request body", FailureClass::auth},
      {"validation failed: resource not found", FailureClass::validation},
      {"not found: config for job", FailureClass::not_found},
      {"config error: quota table missing", FailureClass::config},
      {"quota exceeded (HTTP 503)", FailureClass::rate_limit},
      {"502 Bad Gateway after timeout", FailureClass::provider_5xx},
      {"timeout while opening connection", FailureClass::timeout},
      {"connection to example failed: weird", FailureClass::network},
      {"TimeoutError: HTTP 401", FailureClass::auth},
      {"socket closed: 429 Too Many Requests", FailureClass::rate_limit},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(classify_message(c.message), c.expected)
        << c.message << " -> " << to_string(classify_message(c.message));
  }
}

TEST(ClassifyMessage, NumbersCountOnlyWhereTheyReadAsStatuses) {
  // None of these numbers is an HTTP status.
  const std::vector<TextCase> cases{
      {"connection refused on port 5000", FailureClass::network},
      {"connection refused on port 500", FailureClass::network},
      {"connect ECONNREFUSED 10.0.0.1:503", FailureClass::network},
      {"timed out after 500 ms", FailureClass::timeout},
      {"timed out after 500ms", FailureClass::timeout},
      {"timeout at 2026-12-04T10:00:00.500Z", FailureClass::timeout},
      {"socket error in v1.404.2", FailureClass::network},
      {"GET /users/404 failed: ECONNRESET", FailureClass::network},
      {"issue #404 sync failed: socket closed", FailureClass::network},
      {"job failed at line 401", FailureClass::unknown},
      {"processed 4290 items", FailureClass::unknown},
      {"error code 5003", FailureClass::unknown},
      {"disk 500% full", FailureClass::unknown},
      {"cache invalidation failed: connection reset", FailureClass::network},
      // ...while these are.
      {"HTTP/1.1 503 Service Unavailable", FailureClass::provider_5xx},
      {"Request failed with status code 429", FailureClass::rate_limit},
      {"error (401)", FailureClass::auth},
      {"[404] nope", FailureClass::not_found},
      {"status=500", FailureClass::provider_5xx},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(classify_message(c.message), c.expected)
        << c.message << " -> " << to_string(classify_message(c.message));
  }
}

TEST(ClassifyMessage, CaseInsensitive) {
  EXPECT_EQ(classify_message("FORBIDDEN"), FailureClass::auth);
  EXPECT_EQ(classify_message("fOrBiDdEn"), FailureClass::auth);
  EXPECT_EQ(classify_message("Rate Limit"), FailureClass::rate_limit);
  EXPECT_EQ(classify_message("CONNECTION REFUSED"), FailureClass::network);
}

// ---- properties ----

REHEARSE_PROP(ClassifyProperty, TotalOnArbitraryBytes, (const std::string& text)) {
  const FailureClass c = classify_message(text);
  RC_ASSERT(static_cast<std::size_t>(c) < kFailureClassCount);
  // Deterministic: the same text, the same class.
  RC_ASSERT(classify_message(text) == c);
}

REHEARSE_PROP(ClassifyProperty, TotalOnArbitraryFailureInfo,
              (const std::string& text, int status, bool use_status, bool use_local,
               unsigned char local, unsigned char transport)) {
  FailureInfo f;
  f.message = text;
  if (use_status) f.http_status = status;
  if (use_local) f.local_class = static_cast<FailureClass>(local % kFailureClassCount);
  f.transport = static_cast<TransportErrorKind>(transport % 6);
  const FailureClass c = classify(f);
  RC_ASSERT(static_cast<std::size_t>(c) < kFailureClassCount);
  if (use_local) {
    RC_ASSERT(c == *f.local_class);
  } else if (use_status) {
    RC_ASSERT(c == classify_http_status(status));
  }
}

// Pieces of text a message may be assembled from.
const std::vector<std::string> kBroadWords{"ConnectionError", "connection reset", "ECONNRESET",
                                           "socket hang up",  "network error",    "timeout",
                                           "timed out",       "ETIMEDOUT",        "broken pipe",
                                           "retrying",        "upstream",         "port 5000",
                                           "after 500 ms",    "request",          "failed:"};
const std::vector<std::string> kAuthMarkers{
    "HTTP 403",       "403",           "401",           "Forbidden",
    "Unauthorized",   "invalid token", "access denied", "permission denied",
    "invalid_api_key"};
const std::vector<std::string> kSeparators{" ", ": ", " - ", " (", ") ", ", ", "\n"};

std::string upper_some(std::string text, unsigned mask) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((mask >> (i % 32)) & 1U) {
      if (text[i] >= 'a' && text[i] <= 'z') text[i] = static_cast<char>(text[i] - 'a' + 'A');
    }
  }
  return text;
}

REHEARSE_PROP(ClassifyProperty, PermanentMarkersBeatBroadWords, ()) {
  const auto words = *rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(kBroadWords));
  const auto marker = *rc::gen::elementOf(kAuthMarkers);
  const auto position = *rc::gen::inRange<std::size_t>(0, words.size() + 1);
  const auto mask = *rc::gen::arbitrary<unsigned>();
  std::string text;
  for (std::size_t i = 0; i <= words.size(); ++i) {
    if (i == position) text += marker + *rc::gen::elementOf(kSeparators);
    if (i < words.size()) text += words[i] + *rc::gen::elementOf(kSeparators);
  }
  text = upper_some(text, mask);
  RC_ASSERT(classify_message(text) == FailureClass::auth);
}

REHEARSE_PROP(ClassifyProperty, RateLimitBeatsTransientWords, ()) {
  const std::vector<std::string> markers{"429", "quota", "usage limit", "rate limit",
                                         "too many requests"};
  const std::vector<std::string> transient{"timeout",     "connection reset", "HTTP 503",
                                           "Bad Gateway", "socket hang up",   "ETIMEDOUT"};
  const auto words = *rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(transient));
  const auto marker = *rc::gen::elementOf(markers);
  const auto position = *rc::gen::inRange<std::size_t>(0, words.size() + 1);
  std::string text;
  for (std::size_t i = 0; i <= words.size(); ++i) {
    if (i == position) text += marker + " ";
    if (i < words.size()) text += words[i] + " ";
  }
  RC_ASSERT(classify_message(upper_some(text, *rc::gen::arbitrary<unsigned>())) ==
            FailureClass::rate_limit);
}

REHEARSE_PROP(ClassifyProperty, StatusFieldBeatsAnyMessage,
              (const std::string& text, unsigned char transport)) {
  const int status = *rc::gen::inRange(100, 600);
  FailureInfo f;
  f.message = text + " ConnectionError timeout 403 quota";
  f.http_status = status;
  f.transport = static_cast<TransportErrorKind>(transport % 6);
  RC_ASSERT(classify(f) == classify_http_status(status));
}

}  // namespace
}  // namespace rehearse
