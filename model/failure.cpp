// Names and defaults of the failure classes. The classifier itself lives in
// classify.cpp.
#include "model/failure.hpp"

#include <algorithm>
#include <array>

#include "model/assert.hpp"

namespace rehearse {

namespace {
constexpr std::array<const char*, kFailureClassCount> kClassNames{
    "timeout",    "network",   "provider_5xx", "rate_limit", "auth",
    "validation", "not_found", "config",       "unknown"};
}  // namespace

const char* to_string(FailureClass c) noexcept { return kClassNames[static_cast<std::size_t>(c)]; }

std::optional<FailureClass> parse_failure_class(std::string_view name) noexcept {
  for (std::size_t i = 0; i < kClassNames.size(); ++i) {
    if (name == kClassNames[i]) return static_cast<FailureClass>(i);
  }
  return std::nullopt;
}

const std::vector<FailureClass>& all_failure_classes() {
  static const std::vector<FailureClass> kAll = [] {
    std::vector<FailureClass> v;
    for (std::size_t i = 0; i < kFailureClassCount; ++i) v.push_back(static_cast<FailureClass>(i));
    REHEARSE_ASSERT_EQ(v.size(), kFailureClassCount);
    return v;
  }();
  return kAll;
}

std::vector<std::string> class_names(const FailureClassSet& set) {
  std::vector<std::string> out;
  for (const FailureClass c : all_failure_classes()) {
    if (contains(set, c)) out.emplace_back(to_string(c));
  }
  return out;
}

bool is_retryable_by_default(FailureClass c) noexcept {
  switch (c) {
    case FailureClass::timeout:
    case FailureClass::network:
    case FailureClass::provider_5xx:
    case FailureClass::rate_limit: return true;
    case FailureClass::auth:
    case FailureClass::validation:
    case FailureClass::not_found:
    case FailureClass::config:
    case FailureClass::unknown: return false;
  }
  return false;
}

FailureClassSet default_retryable_classes() {
  FailureClassSet s;
  for (const FailureClass c : all_failure_classes()) {
    if (is_retryable_by_default(c)) insert(s, c);
  }
  REHEARSE_ASSERT(!contains(s, FailureClass::auth) && contains(s, FailureClass::timeout));
  return s;
}

FailureClassSet all_classes_set() {
  FailureClassSet s;
  s.set();
  return s;
}

const char* to_string(TransportErrorKind k) noexcept {
  switch (k) {
    case TransportErrorKind::none: return "none";
    case TransportErrorKind::timeout: return "timeout";
    case TransportErrorKind::connection_refused: return "connection_refused";
    case TransportErrorKind::connection_reset: return "connection_reset";
    case TransportErrorKind::dns: return "dns";
    case TransportErrorKind::broken_pipe: return "broken_pipe";
  }
  return "none";
}

std::int64_t parse_retry_after_ms(std::string_view value) noexcept {
  constexpr std::int64_t kMaxSeconds = 366LL * 24 * 60 * 60;
  // Optional whitespace around the digits (header values are often padded).
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty() || value.size() > 12) return 0;
  std::int64_t seconds = 0;
  for (const char c : value) {
    if (c < '0' || c > '9') return 0;
    seconds = seconds * 10 + (c - '0');
  }
  return std::min(seconds, kMaxSeconds) * 1000;
}

}  // namespace rehearse
