// Goal: token_reissue_bounded fires on a second reissue for one request, a
// token reused after a 401 or near its expiry, a reissue after 403, two
// issuances in flight; one reissue then success is quiet.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(TokenReissueBounded, FiresOnASecondReissueForOneRequest) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  const auto bad = s.broker("token_issued", "2026-03-02T10:00:03Z", "r1",
                            {{"reason", "after_401"}, {"generation", 3}});
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

// A request sent with token fp-A after a 401 for fp-A reached the client: the
// rejected token was kept (001's bug). A request sent before that 401 arrived
// (in parallel) may still be refused with fp-A: that is no violation. In the
// world's order: the brokerage judges a call when it is sent, so its
// `auth_rejected` (stamped with the send) comes before the `service_call`.
Script token_reuse(const char* second_sent_at, bool second_before_the_401) {
  Script s;
  const auto second = [&s, second_sent_at] {
    s.broker("auth_rejected", second_sent_at, "r2",
             {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
    s.broker("service_call", second_sent_at, "r2", {{"operation", "quote"}});
  };
  s.broker("auth_rejected", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
  s.broker("service_call", "2026-03-02T10:00:00Z", "r1", {{"operation", "quote"}});
  if (second_before_the_401) second();
  s.broker("service_reply", "2026-03-02T10:00:00.200Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  if (!second_before_the_401) second();
  return s;
}

TEST(TokenReissueBounded, FiresWhenATokenRefusedWithA401IsUsedAgain) {
  const Script s = token_reuse("2026-03-02T10:00:00.250Z", false);
  expect_first(run(s, base_scenario(), at("2026-03-02T10:30:00Z")), "token_reissue_bounded",
               s.events().size() - 2);
}

TEST(TokenReissueBounded, NearMissParallelRequestSentBeforeThe401Arrived) {
  const Outcome o = run(token_reuse("2026-03-02T10:00:00.150Z", true), base_scenario(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_EQ(
      std::count_if(o.seen.begin(), o.seen.end(),
                    [](const Violation& v) { return v.invariant == "token_reissue_bounded"; }),
      0)
      << describe(o.seen);
}

// The same request id sent again with the refused token after its own 401
// (a client that retries without dropping the token): the second send fires,
// the first rejection does not.
TEST(TokenReissueBounded, FiresWhenTheSameRequestIsResentWithItsRefusedToken) {
  Script s;
  for (const char* sent : {"2026-03-02T10:00:00Z", "2026-03-02T10:00:01Z"}) {
    s.broker("auth_rejected", sent, "r1",
             {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
    s.broker("service_call", sent, "r1", {{"operation", "quote"}});
    s.broker("service_reply", sent, "r1", {{"operation", "quote"}, {"status", 401}});
  }
  expect_first(run(s, base_scenario(), at("2026-03-02T10:30:00Z")), "token_reissue_bounded", 3);
}

// A request's second 401 (its reissued token refused too) is returned as is
// and drops nothing (docs/token-client.md rule 2): the next request may
// present that token once more, and its first 401 then drops it.
TEST(TokenReissueBounded, NearMissTokenRefusedOnlyOnARequestsSecond401IsSentAgain) {
  Script s;
  const json rejected{
      {"operation", "quote"}, {"fingerprint", "fp-bbbb0002"}, {"reason", "revoked"}};
  s.broker("auth_rejected", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"fingerprint", "fp-aaaa0001"}, {"reason", "revoked"}});
  s.broker("service_call", "2026-03-02T10:00:00Z", "r1", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T10:00:00.100Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:00.100Z", "r1", {{"reason", "after_401"}});
  s.broker("auth_rejected", "2026-03-02T10:00:00.200Z", "r1", rejected);
  s.broker("service_call", "2026-03-02T10:00:00.200Z", "r1", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T10:00:00.300Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("auth_rejected", "2026-03-02T11:00:00Z", "r2", rejected);
  s.broker("service_call", "2026-03-02T11:00:00Z", "r2", {{"operation", "quote"}});
  s.broker("service_reply", "2026-03-02T11:00:00.100Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  const Outcome clean = run(s, base_scenario(), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  // That first 401 of r2 drops it: a third request with it fires.
  s.broker("auth_rejected", "2026-03-02T12:00:00Z", "r3", rejected);
  expect_first(run(s, base_scenario(), at("2026-03-02T12:30:00Z")), "token_reissue_bounded",
               s.events().size() - 1);
}

// The reuse rule (docs/semantics.md §7), from the brokerage's record of the
// token each accepted request presented: reused only until 60 s before its
// expiry. 61 s before is fine; 59 s before fires.
TEST(TokenReissueBounded, FiresWhenATokenIsReusedWithin60sOfItsExpiry) {
  Script s;
  const json token = {
      {"generation", 1}, {"operation", "list"}, {"expires_at", "2026-03-02T11:00:00Z"}};
  s.broker("token_presented", "2026-03-02T10:58:59Z", "r-1", token);
  const auto bad = s.broker("token_presented", "2026-03-02T10:59:01Z", "r-2", token);
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

TEST(TokenReissueBounded, FiresOnAReissueAfter403) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 403}});
  const auto bad = s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
                            {{"reason", "initial"}, {"generation", 2}});
  expect_first(run(s, base_scenario()), "token_reissue_bounded", bad);
}

// A failed issuance ends its request: the request fails with the issuance's
// class; neither a second issuance nor the request sent again (§7).
TEST(TokenReissueBounded, FiresWhenARequestGoesOnAfterItsIssuanceFailed) {
  Script again;
  again.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
               {{"reason", "initial"}, {"status", 503}});
  const auto bad = again.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
                                {{"reason", "initial"}, {"generation", 1}});
  expect_first(run(again, base_scenario()), "token_reissue_bounded", bad);
  Script resent;
  resent.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
                {{"reason", "initial"}, {"status", 503}});
  const auto sent =
      resent.broker("service_call", "2026-03-02T10:00:01Z", "r1", {{"operation", "quote"}});
  expect_first(run(resent, base_scenario()), "token_reissue_bounded", sent);
  // Another request of the next run may ask for a token again.
  Script next;
  next.broker("token_issue_failed", "2026-03-02T10:00:00Z", "r1",
              {{"reason", "initial"}, {"status", 503}});
  next.broker("token_issued", "2026-03-02T10:05:00Z", "r2",
              {{"reason", "initial"}, {"generation", 1}});
  EXPECT_TRUE(run(next, base_scenario()).seen.empty());
}

// Single flight (docs/token-client.md rule 5): r1 and r2 meet a 401 together.
// A client that shares one issuance sends another only after r1's was
// answered (or a crash lost it with its process); one that lets r2 start its
// own while r1's is in flight sends two `issue_token` calls at once.
enum class Second { in_flight, after_reply, after_crash };

Script two_issuances(Second when) {
  Script s;
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("service_reply", "2026-03-02T10:00:00.010Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:00.020Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_call", "2026-03-02T10:00:00.020Z", "r1", {{"operation", "issue_token"}});
  const auto second = [&s](const char* t, const char* rid, const char* reason) {
    s.broker("token_issued", t, rid, {{"reason", reason}, {"generation", 3}});
    s.broker("service_call", t, rid, {{"operation", "issue_token"}});
  };
  switch (when) {
    case Second::in_flight: second("2026-03-02T10:00:00.050Z", "r2", "after_401"); break;
    case Second::after_reply:
      s.broker("service_reply", "2026-03-02T10:00:00.120Z", "r1",
               {{"operation", "issue_token"}, {"status", 200}});
      second("2026-03-02T10:00:00.120Z", "r2", "after_401");
      break;
    case Second::after_crash:
      s.add("process_crash", "2026-03-02T10:00:00.030Z", {}, std::nullopt,
            {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
      s.add("process_boot", "2026-03-02T10:00:00.040Z", {}, std::nullopt,
            {{"process", "worker"}, {"boots", 2}});
      second("2026-03-02T10:00:00.050Z", "r3", "initial");  // the new process's cold start
      break;
  }
  return s;
}

TEST(TokenReissueBounded, FiresOnTwoIssuancesInFlightAtOnce) {
  const Outcome o =
      run(two_issuances(Second::in_flight), base_scenario(), at("2026-03-02T10:30:00Z"));
  expect_first(o, "token_reissue_bounded", 5);
  ASSERT_FALSE(o.seen.empty());
  EXPECT_NE(o.seen.front().message.find("single flight"), std::string::npos)
      << o.seen.front().message;
}

// Closest legal cases: the second issuance is sent at the instant the first
// one's reply arrived (after it, in the world's order), or after a crash lost
// the first one with its process.
TEST(TokenReissueBounded, NearMissAnIssuanceRightAfterTheOneInFlightEnded) {
  for (const Second when : {Second::after_reply, Second::after_crash}) {
    const Outcome o = run(two_issuances(when), base_scenario(), at("2026-03-02T10:30:00Z"));
    EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
      return v.invariant == "token_reissue_bounded";
    })) << describe(o.seen);
  }
}

TEST(TokenReissueBounded, NearMissOneReissueThenSuccessAndARefresh) {
  Script s;
  s.broker("token_issued", "2026-03-02T09:59:59Z", "r0",
           {{"reason", "initial"}, {"generation", 1}});
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r1",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("service_reply", "2026-03-02T10:00:00Z", "r2",
           {{"operation", "quote"}, {"status", 401}});
  s.broker("token_issued", "2026-03-02T10:00:01Z", "r1",
           {{"reason", "after_401"}, {"generation", 2}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r1",
           {{"operation", "quote"}, {"status", 200}});
  s.broker("service_reply", "2026-03-02T10:00:02Z", "r2",
           {{"operation", "quote"}, {"status", 200}});
  s.broker("token_issued", "2026-03-02T16:00:00Z", "r9",
           {{"reason", "refresh"}, {"generation", 3}});
  const Outcome o = run(s, base_scenario());
  expect_clean(o);
  EXPECT_EQ(o.tallies["services"]["brokerage"]["token_issues"], 3);
  EXPECT_EQ(o.tallies["services"]["brokerage"]["reissues"], 1);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
