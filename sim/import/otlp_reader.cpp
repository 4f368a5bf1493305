#include "sim/import/otlp_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rehearse::sim {

namespace {

using nlohmann::json;

constexpr int kSpanKindClient = 3;
constexpr std::int64_t kNanosPerMs = 1'000'000;

// Where the reader is: the file (and line, for JSON Lines) and the pointer.
struct Place {
  std::string file;
  std::string pointer;
  std::string where() const { return file + ":" + pointer; }
  Place at(const std::string& key) const { return {file, pointer + "/" + key}; }
  Place at(std::size_t i) const { return {file, pointer + "/" + std::to_string(i)}; }
};

Error bad(const Place& place, const std::string& expected, const json& got) {
  std::string shown = got.dump();
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  return make_error(ErrorCode::schema_error, fmt::format("expected {}, got {}", expected, shown),
                    place.where());
}

Result<const json*> member_array(const json& object, const char* key, const Place& place,
                                 bool required) {
  const auto it = object.find(key);
  if (it == object.end()) {
    if (!required) return static_cast<const json*>(nullptr);
    return make_error(ErrorCode::schema_error, fmt::format("missing \"{}\" (an array)", key),
                      place.where());
  }
  if (!it->is_array()) return bad(place.at(key), "an array", *it);
  return &*it;
}

// An AnyValue ({"stringValue": ...}, {"intValue": "503"}, ...) as JSON.
std::optional<json> any_value(const json& value) {
  if (!value.is_object()) return std::nullopt;
  if (auto it = value.find("stringValue"); it != value.end() && it->is_string()) return *it;
  if (auto it = value.find("intValue"); it != value.end()) {
    if (it->is_number_integer()) return *it;
    if (it->is_string()) {
      std::int64_t v = 0;
      const std::string& s = it->get_ref<const std::string&>();
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size()) return v;
    }
    return std::nullopt;
  }
  if (auto it = value.find("doubleValue"); it != value.end() && it->is_number()) return *it;
  if (auto it = value.find("boolValue"); it != value.end() && it->is_boolean()) return *it;
  return std::nullopt;
}

Result<std::map<std::string, json>> attributes(const json& owner, const Place& place) {
  std::map<std::string, json> out;
  auto list = member_array(owner, "attributes", place, false);
  if (!list) return std::move(list).error();
  if (*list == nullptr) return out;
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const json& kv = (**list)[i];
    const Place p = place.at("attributes").at(i);
    if (!kv.is_object() || !kv.contains("key") || !kv["key"].is_string()) {
      return bad(p, "a key/value ({\"key\": ..., \"value\": {...}})", kv);
    }
    const auto v = any_value(kv.value("value", json()));
    if (!v)
      return bad(p.at("value"), "an AnyValue (stringValue, intValue, ...)",
                 kv.value("value", json()));
    out[kv["key"].get<std::string>()] = *v;
  }
  return out;
}

Result<TimeMs> nanos(const json& span, const char* key, const Place& place) {
  const auto it = span.find(key);
  if (it == span.end()) {
    return make_error(ErrorCode::schema_error,
                      fmt::format("missing \"{}\" (decimal nanoseconds since 1970)", key),
                      place.where());
  }
  std::uint64_t v = 0;
  if (it->is_number_unsigned()) {
    v = it->get<std::uint64_t>();
  } else if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
      return bad(place.at(key), "a string of decimal nanoseconds", *it);
    }
  } else {
    return bad(place.at(key), "a string of decimal nanoseconds", *it);
  }
  return static_cast<TimeMs>(v / kNanosPerMs);
}

bool is_client(const json& kind) {
  if (kind.is_number_integer()) return kind.get<int>() == kSpanKindClient;
  return kind.is_string() && kind.get<std::string>() == "SPAN_KIND_CLIENT";
}

std::string text_of(const std::map<std::string, json>& attrs,
                    std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    const auto it = attrs.find(k);
    if (it != attrs.end() && it->second.is_string()) return it->second.get<std::string>();
  }
  return {};
}

// "https://ledger.internal:8443/entries" -> "ledger.internal".
std::string host_of(const std::string& url) {
  std::size_t from = url.find("://");
  from = from == std::string::npos ? 0 : from + 3;
  std::size_t to = url.find_first_of(":/?#", from);
  std::string host = url.substr(from, to == std::string::npos ? std::string::npos : to - from);
  if (const auto at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);
  return host;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains_any(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return text.find(w) != std::string::npos; });
}

}  // namespace

namespace {

struct ErrorRead {
  CallOutcome outcome = CallOutcome::network_error;
  std::string error;  // a network_errors name
  bool known = true;  // false: no rule matched, read as connection_reset
};

// `error.type` as the conventions and common clients write it
// ("timeout", "java.net.ConnectException", "ECONNRESET", ...).
ErrorRead read_error_type(const std::string& type) {
  const std::string t = lower(type);
  if (contains_any(t, {"timeout", "timedout", "timed out", "deadline"})) {
    return {CallOutcome::timeout, "", true};
  }
  if (contains_any(t, {"refused", "connectexception"}))
    return {CallOutcome::network_error, "connection_refused", true};
  if (contains_any(t, {"reset"})) return {CallOutcome::network_error, "connection_reset", true};
  if (contains_any(t, {"enotfound", "eai_", "unknownhost", "dns", "name_not_resolved",
                       "nameresolution"})) {
    return {CallOutcome::network_error, "dns", true};
  }
  if (contains_any(t, {"epipe", "broken_pipe", "broken pipe"}))
    return {CallOutcome::network_error, "broken_pipe", true};
  return {CallOutcome::network_error, "connection_reset", false};
}

bool is_http(const std::map<std::string, json>& attrs) {
  for (const char* k : {"http.request.method", "http.method", "url.full", "http.url",
                        "http.response.status_code", "http.status_code"}) {
    if (attrs.count(k) != 0) return true;
  }
  return false;
}

std::string address_of(const std::map<std::string, json>& attrs) {
  std::string a = text_of(attrs, {"peer.service", "server.address", "net.peer.name"});
  if (a.empty()) a = host_of(text_of(attrs, {"url.full", "http.url"}));
  return a;
}

bool span_failed(const json& span) {
  const json status = span.value("status", json::object());
  const json code = status.is_object() ? status.value("code", json()) : json();
  return (code.is_number_integer() && code.get<int>() == 2) ||
         (code.is_string() && code.get<std::string>() == "STATUS_CODE_ERROR");
}

class SpanReader {
 public:
  SpanReader(OtlpCalls& out, const std::map<std::string, std::string>& rename)
      : out_(out), rename_(rename) {}

  Status read(const json& span, const Place& place) {
    if (!span.is_object()) return bad(place, "a span (an object)", span);
    out_.spans += 1;
    if (!is_client(span.value("kind", json()))) {
      out_.skipped_not_client += 1;
      return {};
    }
    auto attrs = attributes(span, place);
    if (!attrs) return std::move(attrs).error();
    if (!is_http(*attrs)) {
      out_.skipped_not_http += 1;
      return {};
    }
    CallObservation call;
    call.where = place.where();
    auto start = nanos(span, "startTimeUnixNano", place);
    if (!start) return std::move(start).error();
    auto end = nanos(span, "endTimeUnixNano", place);
    if (!end) return std::move(end).error();
    if (*end < *start) {
      return make_error(ErrorCode::schema_error, "endTimeUnixNano is before startTimeUnixNano",
                        place.where());
    }
    call.start_ms = *start;
    call.end_ms = *end;
    const std::string address = address_of(*attrs);
    if (address.empty())
      return skip(call,
                  "an HTTP client span names no server (peer.service, server.address or url.full)");
    note_address(address);
    const auto renamed = rename_.find(address);
    call.service = renamed == rename_.end() ? address : renamed->second;
    if (auto judged = judge(*attrs, span, place, call); !judged) return judged;
    out_.calls.push_back(std::move(call));
    return {};
  }

 private:
  Status judge(const std::map<std::string, json>& attrs, const json& span, const Place& place,
               CallObservation& call) {
    for (const char* key : {"http.response.status_code", "http.status_code"}) {
      const auto it = attrs.find(key);
      if (it == attrs.end()) continue;
      if (!it->second.is_number_integer() || it->second.get<int>() < 100 ||
          it->second.get<int>() > 599) {
        return bad(place.at("attributes"), fmt::format("{} from 100 to 599", key), it->second);
      }
      call.status = it->second.get<int>();
      call.outcome = call.status < 400 ? CallOutcome::success : CallOutcome::http_error;
      return {};
    }
    const std::string type = text_of(attrs, {"error.type"});
    if (!type.empty()) {
      const ErrorRead e = read_error_type(type);
      call.outcome = e.outcome;
      call.error = e.error;
      if (!e.known)
        guess(call, fmt::format("error.type \"{}\" names no known network failure", type),
              "read as connection_reset");
      return {};
    }
    if (span_failed(span)) {
      call.outcome = CallOutcome::network_error;
      call.error = "connection_reset";
      guess(call, "the span failed with no status code and no error.type",
            "read as connection_reset");
      return {};
    }
    // No answer and no error: still in flight when exported, or cut short.
    return skip(call, "an HTTP client span with no status code, no error.type and no error status");
  }

  Status skip(const CallObservation& call, const std::string& why) {
    out_.ambiguities.push_back(
        Ambiguity{call.service, call.start_ms, why, "the span is not counted", call.where});
    out_.skipped_not_http += 1;
    return {};
  }

  void guess(const CallObservation& call, const std::string& what, const std::string& guess) {
    out_.ambiguities.push_back(Ambiguity{call.service, call.start_ms, what, guess, call.where});
  }

  void note_address(const std::string& address) {
    if (std::find(out_.addresses.begin(), out_.addresses.end(), address) == out_.addresses.end()) {
      out_.addresses.push_back(address);
    }
  }

  OtlpCalls& out_;
  const std::map<std::string, std::string>& rename_;
};

// One ExportTraceServiceRequest.
Status read_document(const json& doc, const Place& place, SpanReader& spans) {
  if (!doc.is_object()) return bad(place, "an OTLP trace export ({\"resourceSpans\": [...]})", doc);
  auto resources = member_array(doc, "resourceSpans", place, true);
  if (!resources) return std::move(resources).error();
  for (std::size_t r = 0; r < (*resources)->size(); ++r) {
    const json& resource = (**resources)[r];
    const Place rp = place.at("resourceSpans").at(r);
    if (!resource.is_object()) return bad(rp, "a ResourceSpans object", resource);
    // instrumentationLibrarySpans: the name before OTLP 0.15, still written by old SDKs.
    const char* key =
        resource.contains("scopeSpans") ? "scopeSpans" : "instrumentationLibrarySpans";
    auto scopes = member_array(resource, key, rp, false);
    if (!scopes) return std::move(scopes).error();
    if (*scopes == nullptr) continue;
    for (std::size_t s = 0; s < (*scopes)->size(); ++s) {
      const json& scope = (**scopes)[s];
      const Place sp = rp.at(key).at(s);
      if (!scope.is_object()) return bad(sp, "a ScopeSpans object", scope);
      auto list = member_array(scope, "spans", sp, false);
      if (!list) return std::move(list).error();
      if (*list == nullptr) continue;
      for (std::size_t i = 0; i < (*list)->size(); ++i) {
        if (auto st = spans.read((**list)[i], sp.at("spans").at(i)); !st) return st;
      }
    }
  }
  return {};
}

Result<json> parse_json(const std::string& text, const std::string& where_prefix) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < e.byte - 1 && i < text.size(); ++i) {
      column = text[i] == '\n' ? 1 : column + 1;
      line += text[i] == '\n' ? 1 : 0;
    }
    return make_error(ErrorCode::parse_error,
                      "not JSON (an OTLP/JSON export or JSON Lines of them)",
                      fmt::format("{}{}:{}", where_prefix, line, column));
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t nl = text.find('\n', from);
    out.push_back(text.substr(from, nl == std::string::npos ? std::string::npos : nl - from));
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return out;
}

bool is_blank(const std::string& line) {
  return std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); });
}

// JSON Lines: more than one line, and the first non-blank one a whole object.
bool looks_like_json_lines(const std::vector<std::string>& lines) {
  int non_blank = 0;
  for (const std::string& l : lines) non_blank += is_blank(l) ? 0 : 1;
  if (non_blank < 2) return false;
  for (const std::string& l : lines) {
    if (is_blank(l)) continue;
    return json::accept(l);
  }
  return false;
}

}  // namespace

Result<OtlpCalls> read_otlp_calls(const std::string& text, const std::string& path,
                                  const std::map<std::string, std::string>& rename) {
  OtlpCalls out;
  SpanReader spans(out, rename);
  const std::vector<std::string> lines = lines_of(text);
  if (looks_like_json_lines(lines)) {
    for (std::size_t n = 0; n < lines.size(); ++n) {
      if (is_blank(lines[n])) continue;
      const std::string file_line = fmt::format("{}:{}", path, n + 1);
      auto doc = parse_json(lines[n], file_line + ":");
      if (!doc) return std::move(doc).error();
      if (auto st = read_document(*doc, Place{file_line, ""}, spans); !st) return st.error();
    }
  } else {
    auto doc = parse_json(text, path + ":");
    if (!doc) return std::move(doc).error();
    if (auto st = read_document(*doc, Place{path, ""}, spans); !st) return st.error();
  }
  std::sort(out.addresses.begin(), out.addresses.end());
  return out;
}

}  // namespace rehearse::sim
