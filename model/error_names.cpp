#include "model/error_names.hpp"

#include <array>
#include <utility>

namespace rehearse {

namespace {

using C = FailureClass;

constexpr unsigned bits(std::initializer_list<FailureClass> classes) {
  unsigned out = 0;
  for (const FailureClass c : classes) out |= 1u << static_cast<unsigned>(c);
  return out;
}

struct NameRow {
  std::string_view name;  // the last segment, as the library spells it
  unsigned classes;       // bits(...); 0 is a wide name: every class
};

// Exact names of the usual clients (Python requests/httpx/stdlib, Ruby
// Net::HTTP/Faraday, Java/JS, AWS service errors as Step Functions sees
// them). An empty class list is a wide name: every class.
const std::array<NameRow, 46> kNames{{
    {"Exception", 0},
    {"BaseException", 0},
    {"StandardError", 0},
    {"Error", 0},
    {"ALL", 0},  // States.ALL
    {"TaskFailed",
     bits({C::network, C::provider_5xx, C::rate_limit, C::auth, C::validation, C::not_found,
           C::config, C::unknown})},  // States.TaskFailed: all but timeout
    {"Timeout", bits({C::timeout})},  // States.Timeout, requests.exceptions.Timeout
    {"TimeoutError", bits({C::timeout})},
    {"ReadTimeout", bits({C::timeout})},
    {"ConnectTimeout", bits({C::timeout})},
    {"ReadTimeoutError", bits({C::timeout})},
    {"TimeoutException", bits({C::timeout})},
    {"OpenTimeout", bits({C::timeout})},
    {"timeout", bits({C::timeout})},  // socket.timeout
    {"ConnectionError", bits({C::network})},
    {"ConnectionRefusedError", bits({C::network})},
    {"ConnectionResetError", bits({C::network})},
    {"BrokenPipeError", bits({C::network})},
    {"ConnectionFailed", bits({C::network})},  // Faraday::ConnectionFailed
    {"ECONNREFUSED", bits({C::network})},      // Errno::ECONNREFUSED
    {"ECONNRESET", bits({C::network})},
    {"SocketError", bits({C::network})},
    {"gaierror", bits({C::network})},  // socket.gaierror: DNS
    {"NetworkError", bits({C::network})},
    {"OSError", bits({C::network, C::timeout})},  // Python: IOError, socket errors
    {"IOError", bits({C::network, C::timeout})},
    {"RequestException",
     bits({C::timeout, C::network, C::provider_5xx, C::rate_limit, C::auth, C::validation,
           C::not_found})},  // requests' base of every HTTP error
    {"HTTPError", bits({C::provider_5xx, C::rate_limit, C::auth, C::validation, C::not_found})},
    {"ServerError", bits({C::provider_5xx})},
    {"ServiceUnavailable", bits({C::provider_5xx})},
    {"InternalServerError", bits({C::provider_5xx})},
    {"ServiceException", bits({C::provider_5xx})},        // Lambda.ServiceException
    {"AWSLambdaException", bits({C::provider_5xx})},      // Lambda.AWSLambdaException
    {"SdkClientException", bits({C::network})},           // Lambda.SdkClientException
    {"TooManyRequestsException", bits({C::rate_limit})},  // Lambda.TooManyRequestsException
    {"ThrottlingException", bits({C::rate_limit})},
    {"RateLimitError", bits({C::rate_limit})},
    {"TooManyRequests", bits({C::rate_limit})},
    {"AuthenticationError", bits({C::auth})},
    {"PermissionError", bits({C::auth})},
    {"Unauthorized", bits({C::auth})},
    {"Forbidden", bits({C::auth})},
    {"AccessDeniedException", bits({C::auth})},
    {"ValueError", bits({C::validation})},
    {"ValidationError", bits({C::validation})},
    {"NotFoundError", bits({C::not_found})},
}};

std::string_view last_segment(std::string_view name) {
  for (const std::string_view sep : {std::string_view("::"), std::string_view(".")}) {
    const auto at = name.rfind(sep);
    if (at != std::string_view::npos) name = name.substr(at + sep.size());
  }
  return name;
}

}  // namespace

ErrorNameClasses classes_of_error_name(std::string_view name) {
  const std::string_view last = last_segment(name);
  for (const NameRow& row : kNames) {
    if (row.name != last) continue;
    ErrorNameClasses out;
    out.known = true;
    if (row.classes == 0) return ErrorNameClasses{all_classes_set(), true};
    out.classes = FailureClassSet(row.classes);
    return out;
  }
  ErrorNameClasses out;
  insert(out.classes, FailureClass::unknown);
  return out;
}

}  // namespace rehearse
