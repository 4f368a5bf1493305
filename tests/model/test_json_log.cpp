// Goal: the production log adapter writes the documented line format
// (docs/log-format.md) and never writes a secret: not under a credential's
// key, not a registered value anywhere in a line.
// Method: a fixed clock, lines caught by the sink, parsed back as JSON.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_log.hpp"

namespace {

using namespace rehearse;
using nlohmann::json;

class FixedClock final : public Clock {
 public:
  TimeMs now() const override { return t; }
  Task<void> sleep_until(TimeMs) override { co_return; }
  WakeId schedule_wake(std::coroutine_handle<>) override { return 0; }
  bool cancel_wake(WakeId) override { return false; }
  TimeMs t = *parse_instant("2026-11-30T06:00:00.250Z");
};

TEST(JsonLog, OneObjectPerLineInTheDocumentedShape) {
  FixedClock clock;
  std::vector<std::string> lines;
  JsonLineLog log(clock, [&](std::string_view l) { lines.emplace_back(l); });
  log.warning("call_failed", {{"job_id", "invoice-sync"}, {"attempt", 2}, {"status", 503}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            R"({"log":1,"t":"2026-11-30T06:00:00.250Z","level":"warning","event":"call_failed",)"
            R"("fields":{"job_id":"invoice-sync","attempt":2,"status":503}})");
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
}

TEST(JsonLog, CredentialKeysAreRedactedAtAnyDepth) {
  EXPECT_TRUE(is_secret_key("access_token"));
  EXPECT_TRUE(is_secret_key("Authorization"));
  EXPECT_TRUE(is_secret_key("token"));
  EXPECT_TRUE(is_secret_key("refresh-tokens"));
  EXPECT_TRUE(is_secret_key("API_KEY"));
  EXPECT_FALSE(is_secret_key("tokenizer_version"));
  EXPECT_FALSE(is_secret_key("job_id"));
  const std::string line = format_log_line(
      0, LogLevel::info, "token_obtained",
      {{"access_token", "eyJhbGciOi.secret"},
       {"params", json{{"headers", json{{"Authorization", "Bearer x"}}}, {"path", "/a"}}}});
  const json doc = json::parse(line);
  EXPECT_EQ(doc["fields"]["access_token"], kRedacted);
  EXPECT_EQ(doc["fields"]["params"]["headers"]["Authorization"], kRedacted);
  EXPECT_EQ(doc["fields"]["params"]["path"], "/a");
  EXPECT_EQ(line.find("eyJhbGciOi"), std::string::npos);
  EXPECT_EQ(line.find("Bearer"), std::string::npos);
}

TEST(JsonLog, RegisteredSecretsNeverAppear) {
  FixedClock clock;
  std::ostringstream out;
  JsonLineLog log(clock, stream_sink(out));
  log.add_secret("agent-7f3a9c21-full-id");
  log.add_secret("ab");  // too short to redact without mangling words
  log.error("notice_send_failed", {{"error", "POST /assign agent-7f3a9c21-full-id refused"},
                                   {"nested", json::array({"x agent-7f3a9c21-full-id y"})},
                                   {"about", "ab"}});
  const std::string text = out.str();
  EXPECT_EQ(text.find("agent-7f3a9c21-full-id"), std::string::npos) << text;
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  const json doc = json::parse(text);
  EXPECT_EQ(doc["fields"]["error"], "POST /assign [redacted] refused");
  EXPECT_EQ(doc["fields"]["nested"][0], "x [redacted] y");
  EXPECT_EQ(doc["fields"]["about"], "ab");
}

TEST(JsonLog, InvalidUtf8IsReplacedNotLost) {
  const std::string line =
      format_log_line(0, LogLevel::error, "call_failed", {{"error", std::string("bad \xff byte")}});
  const json doc = json::parse(line);
  EXPECT_EQ(doc["event"], "call_failed");
  EXPECT_NE(doc["fields"]["error"].get<std::string>().find("byte"), std::string::npos);
}

}  // namespace
