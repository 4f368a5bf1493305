// The worker's log as a product surface: one JSON object per line, in the
// format docs/log-format.md documents (format number kLogFormat). What
// `rehearse import` reads back to rebuild an incident, so its shape is a
// contract: the envelope keys, the instant format and the order of fields.
//
// Secrets: the core never passes a token value or a full agent id (the Log
// port's rule); this adapter adds two guards a production log needs anyway.
// A field whose key names a credential (is_secret_key) is written as
// "[redacted]", and every value registered with add_secret is replaced by
// "[redacted]" wherever it would appear in a line.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "model/ports.hpp"

namespace rehearse {

inline constexpr int kLogFormat = 1;
inline constexpr const char* kRedacted = "[redacted]";

// True for keys that name a credential: they contain "token" as a whole word
// part, "secret", "password", "passwd", "authorization", "api_key",
// "apikey" or "credential" (case-insensitive).
bool is_secret_key(std::string_view key);

// {"log":1,"t":INSTANT,"level":LEVEL,"event":EVENT,"fields":{...}}: no
// newline; fields in the order written (a repeated key keeps its first
// position and its last value); the values of secret keys, at any depth,
// and every occurrence of a registered secret inside a string redacted.
std::string format_log_line(TimeMs t, LogLevel level, std::string_view event,
                            const LogFields& fields, const std::vector<std::string>& secrets = {});

// Replaces every occurrence of each secret in `text` by kRedacted. Secrets
// shorter than 4 characters are ignored: they would redact ordinary words.
std::string redact_secrets(std::string text, const std::vector<std::string>& secrets);

class JsonLineLog final : public Log {
 public:
  // Receives each finished line without its newline.
  using Sink = std::function<void(std::string_view line)>;

  JsonLineLog(const Clock& clock, Sink sink) : clock_(clock), sink_(std::move(sink)) {}

  void write(LogLevel level, std::string_view event, const LogFields& fields) override;

  // A value that must never be written (an API key read from the
  // environment, a full agent id).
  void add_secret(std::string value);

 private:
  const Clock& clock_;
  Sink sink_;
  std::vector<std::string> secrets_;
};

// A sink that writes each line and a newline to `out` and flushes it, so a
// crash loses at most the line being written.
JsonLineLog::Sink stream_sink(std::ostream& out);

}  // namespace rehearse
