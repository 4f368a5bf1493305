#include "sim/monitors/witness_error_names.hpp"

#include <array>
#include <utility>

namespace rehearse::sim {

namespace {

// By the name's last segment (after the last "." or "::"). "*" is every
// class; "~timeout" every class but timeout (Step Functions' TaskFailed).
const std::array<std::pair<std::string_view, std::string_view>, 46> kTable{{
    {"Exception", "*"},
    {"BaseException", "*"},
    {"StandardError", "*"},
    {"Error", "*"},
    {"ALL", "*"},
    {"TaskFailed", "~timeout"},
    {"Timeout", "timeout"},
    {"TimeoutError", "timeout"},
    {"ReadTimeout", "timeout"},
    {"ConnectTimeout", "timeout"},
    {"ReadTimeoutError", "timeout"},
    {"TimeoutException", "timeout"},
    {"OpenTimeout", "timeout"},
    {"timeout", "timeout"},
    {"ConnectionError", "network"},
    {"ConnectionRefusedError", "network"},
    {"ConnectionResetError", "network"},
    {"BrokenPipeError", "network"},
    {"ConnectionFailed", "network"},
    {"ECONNREFUSED", "network"},
    {"ECONNRESET", "network"},
    {"SocketError", "network"},
    {"gaierror", "network"},
    {"NetworkError", "network"},
    {"OSError", "network timeout"},
    {"IOError", "network timeout"},
    {"SdkClientException", "network"},
    {"RequestException", "timeout network provider_5xx rate_limit auth validation not_found"},
    {"HTTPError", "provider_5xx rate_limit auth validation not_found"},
    {"ServerError", "provider_5xx"},
    {"ServiceUnavailable", "provider_5xx"},
    {"InternalServerError", "provider_5xx"},
    {"ServiceException", "provider_5xx"},
    {"AWSLambdaException", "provider_5xx"},
    {"TooManyRequestsException", "rate_limit"},
    {"ThrottlingException", "rate_limit"},
    {"RateLimitError", "rate_limit"},
    {"TooManyRequests", "rate_limit"},
    {"AuthenticationError", "auth"},
    {"PermissionError", "auth"},
    {"Unauthorized", "auth"},
    {"Forbidden", "auth"},
    {"AccessDeniedException", "auth"},
    {"ValueError", "validation"},
    {"ValidationError", "validation"},
    {"NotFoundError", "not_found"},
}};

std::set<std::string> words(std::string_view text) {
  std::set<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    out.insert(std::string(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

}  // namespace

const std::set<std::string>& witness_all_classes() {
  static const std::set<std::string> all{"timeout",    "network", "provider_5xx",
                                         "rate_limit", "auth",    "validation",
                                         "not_found",  "config",  "unknown"};
  return all;
}

std::set<std::string> witness_error_classes(std::string_view name) {
  for (const std::string_view sep : {std::string_view("::"), std::string_view(".")}) {
    const auto at = name.rfind(sep);
    if (at != std::string_view::npos) name = name.substr(at + sep.size());
  }
  for (const auto& [key, classes] : kTable) {
    if (key != name) continue;
    if (classes == "*") return witness_all_classes();
    if (classes[0] == '~') {
      std::set<std::string> out = witness_all_classes();
      out.erase(std::string(classes.substr(1)));
      return out;
    }
    return words(classes);
  }
  return {"unknown"};
}

}  // namespace rehearse::sim
