#include "model/json_log.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <ostream>
#include <utility>

#include <nlohmann/json.hpp>

namespace rehearse {

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// "token" as a part of a snake_case key ("access_token", "token", "x_token_y"),
// not inside a longer word ("tokenizer_version" keeps its value).
bool has_token_part(const std::string& key) {
  std::size_t at = 0;
  while ((at = key.find("token", at)) != std::string::npos) {
    const bool starts = at == 0 || key[at - 1] == '_' || key[at - 1] == '-';
    const std::size_t end = at + 5;
    const bool ends = end == key.size() || key[end] == '_' || key[end] == '-' || key[end] == 's';
    if (starts && ends) return true;
    at = end;
  }
  return false;
}

}  // namespace

bool is_secret_key(std::string_view key) {
  const std::string k = lower(key);
  if (has_token_part(k)) return true;
  for (const char* word :
       {"secret", "password", "passwd", "authorization", "api_key", "apikey", "credential"}) {
    if (k.find(word) != std::string::npos) return true;
  }
  return false;
}

std::string redact_secrets(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    if (secret.size() < 4) continue;
    std::size_t at = 0;
    while ((at = text.find(secret, at)) != std::string::npos) {
      text.replace(at, secret.size(), kRedacted);
      at += std::char_traits<char>::length(kRedacted);
    }
  }
  return text;
}

namespace {

// The field's value in the line's own (order-keeping) JSON type, with every
// string redacted: a secret inside a nested error message is still a secret.
nlohmann::ordered_json to_line_value(const nlohmann::json& value,
                                     const std::vector<std::string>& secrets) {
  if (value.is_string()) return redact_secrets(value.get<std::string>(), secrets);
  if (value.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& v : value) out.push_back(to_line_value(v, secrets));
    return out;
  }
  if (value.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [k, v] : value.items()) {
      out[k] = is_secret_key(k) ? nlohmann::ordered_json(kRedacted) : to_line_value(v, secrets);
    }
    return out;
  }
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_boolean()) return value.get<bool>();
  return nullptr;
}

}  // namespace

std::string format_log_line(TimeMs t, LogLevel level, std::string_view event,
                            const LogFields& fields, const std::vector<std::string>& secrets) {
  nlohmann::ordered_json out;
  out["log"] = kLogFormat;
  out["t"] = format_instant(t);
  out["level"] = to_string(level);
  out["event"] = redact_secrets(std::string(event), secrets);
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  for (const LogField& f : fields) {
    body[f.key] =
        is_secret_key(f.key) ? nlohmann::ordered_json(kRedacted) : to_line_value(f.value, secrets);
  }
  out["fields"] = std::move(body);
  // Invalid UTF-8 in a value is replaced, never a reason to lose the line.
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void JsonLineLog::write(LogLevel level, std::string_view event, const LogFields& fields) {
  sink_(format_log_line(clock_.now(), level, event, fields, secrets_));
}

void JsonLineLog::add_secret(std::string value) {
  if (value.empty()) return;
  if (std::find(secrets_.begin(), secrets_.end(), value) == secrets_.end()) {
    secrets_.push_back(std::move(value));
  }
}

JsonLineLog::Sink stream_sink(std::ostream& out) {
  return [&out](std::string_view line) {
    out << line << '\n';
    out.flush();
  };
}

}  // namespace rehearse
