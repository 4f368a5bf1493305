// Goal: no_secret_leak fires on a token value or a full agent id in the trace.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(NoSecretLeak, FiresOnATokenValueOrAFullAgentId) {
  const std::string token = "tok_00112233445566778899aabbccddeeff";
  Script s;
  s.broker("token_issued", "2026-03-02T10:00:00Z", "r1", {{"fingerprint", "fp-1234abcd"}});
  s.add("reconcile_started", "2026-03-02T10:00:00Z", "reconcile", std::nullopt,
        {{"lead", kAgentId.substr(0, 8)}});  // the allowed 8-character prefix
  const auto bad = s.add("debug_dump", "2026-03-02T10:00:01Z", "fetch", std::nullopt,
                         {{"header", "Bearer " + token}});
  const Outcome o = run(s, base_scenario(), kUntil, {token});
  expect_first(o, "no_secret_leak", bad);
  EXPECT_EQ(o.seen.front().message.find(token), std::string::npos);  // never repeated

  Script agent;
  const auto leak = agent.add("handoff", "2026-03-02T10:00:00Z", "reconcile", std::nullopt,
                              {{"agent", kAgentId}});
  expect_first(run(agent, base_scenario()), "no_secret_leak", leak);

  MonitorSet set(base_scenario());
  set.add_secret(token);
  EXPECT_FALSE(set.observe_text("info token_obtained fingerprint=fp-1234abcd", 3, kStart));
  const auto text = set.observe_text("warning token_rejected token=" + token, 4, kStart);
  ASSERT_TRUE(text);
  EXPECT_EQ(text->invariant, "no_secret_leak");
  EXPECT_EQ(text->event_index, 4u);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
