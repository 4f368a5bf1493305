// Goal: the brokerage token client follows docs/semantics.md §7 and the 401
// boundary cases of §11 (incident 001): after a 401 the token is reissued
// and the request retried exactly once; a second 401, a 403, a 429 and a 5xx
// cause no reissue; the cached token is refreshed 60 s before its known expiry
// (and not 61 s); a failing reissue fails the request with the reissue's class;
// concurrent 401s share one reissue; a 401 with an older generation retries
// without reissuing.
// Method: the real TokenClient on the simulated world (token_client_fixtures.hpp:
// Simulator, SimServices, SimLog, SimBrokerage; no mocks), one boundary case per
// test, judged by brokerage call counts and by the trace, read as an
// independent witness (service_call / service_reply / token_issued /
// auth_rejected events).
#include "model/token_client.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/model/token_client_fixtures.hpp"

namespace rehearse::sim::token_test {
namespace {

// --- vocabulary ----------------------------------------------------------------

TEST(TokenClientVocabulary, HeaderNamesAgreeWithTheSimulatedServices) {
  EXPECT_EQ(std::string_view(kRequestHeaderJob), std::string_view(kHeaderJob));
  EXPECT_EQ(std::string_view(kRequestHeaderSlot), std::string_view(kHeaderSlot));
  EXPECT_EQ(std::string_view(kRequestHeaderAttempt), std::string_view(kHeaderAttempt));
  EXPECT_EQ(std::string_view(kRequestHeaderItem), std::string_view(kHeaderItem));
  EXPECT_EQ(std::string_view(kRequestHeaderId), std::string_view(kHeaderRequestId));
  EXPECT_EQ(std::string_view(kRequestHeaderAuthorization), std::string_view(kHeaderAuthorization));
}

TEST(TokenClientVocabulary, FingerprintIsShortStableAndNotTheToken) {
  const std::string token = "tok_0123456789abcdef0123456789abcdef";
  const std::string fp = token_fingerprint(token);
  EXPECT_EQ(fp.size(), 11u);
  EXPECT_EQ(fp.rfind("fp-", 0), 0u);
  EXPECT_EQ(fp, token_fingerprint(token));
  EXPECT_NE(fp, token_fingerprint(token + "x"));
  EXPECT_EQ(fp.find(token.substr(4, 8)), std::string::npos);
  // FNV-1a 64 of "" is the offset basis cbf29ce484222325: its top 32 bits.
  EXPECT_EQ(token_fingerprint(""), "fp-cbf29ce4");
}

// --- reuse and the 401 rules ----------------------------------------------------

TEST(TokenClient, ReusesTheCachedTokenAcrossRequests) {
  World world;
  for (int i = 0; i < 3; ++i) world.request_at(kStart + i * kMinuteMs, "r" + std::to_string(i));
  ASSERT_TRUE(world.sim.run().ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(world.status("r" + std::to_string(i)), 200);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 1u);
  EXPECT_EQ(world.brokerage.calls("quote"), 3u);
  EXPECT_EQ(issuances(world.trace, "initial"), 1u);
  ASSERT_TRUE(world.client->cached().has_value());
  EXPECT_EQ(world.client->cached()->generation, 1u);
  EXPECT_TRUE(no_token_leaked(world));
}

// 001: "after a 401 the token is reissued and the request retried exactly once".
TEST(TokenClient, After401TheTokenIsReissuedAndTheRequestRetriedExactlyOnce) {
  World world;
  world.request_at(kStart, "r1");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  world.request_at(kStart + 2 * kHourMs, "r2");
  ASSERT_TRUE(world.sim.run().ok());

  EXPECT_EQ(world.status("r1"), 200);
  EXPECT_EQ(world.status("r2"), 200);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);
  EXPECT_EQ(world.brokerage.calls("quote"), 3u);  // r1 once, r2 twice
  const auto reissued = events(world.trace, "token_issued", "after_401");
  ASSERT_EQ(reissued.size(), 1u);
  EXPECT_EQ(reissued[0]->str("request_id"), "r2");
  EXPECT_EQ(reissued[0]->num("generation"), 2);
  const auto rejected = events(world.trace, "auth_rejected");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0]->str("reason"), "revoked");
  EXPECT_EQ(rejected[0]->num("generation"), 1);
  EXPECT_EQ(world.client->stats().reissues, 1u);
  EXPECT_EQ(world.client->stats().sends, 3u);
  EXPECT_EQ(world.client->cached()->generation, 2u);
  EXPECT_TRUE(no_token_leaked(world));
}

// 001: "a second 401 causes no reissue": the 401 stands (auth), message and
// status untouched; each request has its own single reissue.
TEST(TokenClient, SecondConsecutive401FailsWithAuthWithoutAnotherReissue) {
  World world;
  world.request_at(kStart, "r1");
  BrokerageFault fault;
  fault.operation = "quote";
  fault.from_ms = kStart + kHourMs;
  fault.http_status = 401;
  fault.message = "외부 증권 API HTTP 오류: 401";  // an existing text, kept verbatim
  world.brokerage.add_fault(fault);
  world.request_at(kStart + 2 * kHourMs, "r2");
  world.request_at(kStart + 3 * kHourMs, "r3");
  ASSERT_TRUE(world.sim.run().ok());

  EXPECT_EQ(world.status("r1"), 200);
  for (const char* id : {"r2", "r3"}) {
    EXPECT_EQ(world.status(id), 401) << id;
    const FailureInfo info = to_failure_info(world.result(id));
    EXPECT_EQ(classify(info), FailureClass::auth);
    EXPECT_EQ(info.message, "외부 증권 API HTTP 오류: 401");
  }
  EXPECT_EQ(world.brokerage.calls("quote"), 5u);               // 1 + 2 + 2
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 3u);  // initial + one per request
  EXPECT_EQ(issuances(world.trace, "after_401"), 2u);
  EXPECT_EQ(world.client->stats().auth_failures, 2u);
  EXPECT_EQ(events(world.trace, "token_rejected_again").size(), 2u);
}

struct NoReissueCase {
  int status;  // 0: transport error `transport`
  TransportErrorKind transport;
  FailureClass expected;
};

class TokenClientNoReissue : public ::testing::TestWithParam<NoReissueCase> {};

// 001: "403, 429 and 5xx never cause a reissue" (nor do transport errors).
TEST_P(TokenClientNoReissue, StatusIsReturnedAsIsWithoutReissue) {
  const NoReissueCase c = GetParam();
  World world;
  world.request_at(kStart, "r1");
  BrokerageFault fault;
  fault.operation = "quote";
  fault.from_ms = kStart + kHourMs;
  fault.http_status = c.status;
  fault.transport = c.status == 0 ? c.transport : TransportErrorKind::none;
  world.brokerage.add_fault(fault);
  world.request_at(kStart + 2 * kHourMs, "r2");
  ASSERT_TRUE(world.sim.run().ok());

  const ServiceResult& r2 = world.result("r2");
  if (c.status != 0) {
    ASSERT_TRUE(r2.has_response());
    EXPECT_EQ(r2.response().status, c.status);
  } else {
    ASSERT_FALSE(r2.has_response());
    EXPECT_EQ(r2.transport_error().kind, c.transport);
  }
  EXPECT_EQ(classify(to_failure_info(r2)), c.expected);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 1u);
  EXPECT_EQ(world.brokerage.calls("quote"), 2u);
  EXPECT_EQ(world.client->stats().reissues, 0u);
  EXPECT_EQ(world.client->cached()->generation, 1u);  // kept: it was not rejected
}

INSTANTIATE_TEST_SUITE_P(
    Statuses, TokenClientNoReissue,
    ::testing::Values(NoReissueCase{403, TransportErrorKind::none, FailureClass::auth},
                      NoReissueCase{429, TransportErrorKind::none, FailureClass::rate_limit},
                      NoReissueCase{500, TransportErrorKind::none, FailureClass::provider_5xx},
                      NoReissueCase{503, TransportErrorKind::none, FailureClass::provider_5xx},
                      NoReissueCase{504, TransportErrorKind::none, FailureClass::provider_5xx},
                      NoReissueCase{0, TransportErrorKind::timeout, FailureClass::timeout},
                      NoReissueCase{0, TransportErrorKind::connection_reset,
                                    FailureClass::network}));

// --- early refresh ---------------------------------------------------------------

TEST(TokenClient, RefreshesSixtySecondsBeforeKnownExpiryAndNotSixtyOne) {
  BrokerageConfig config;
  config.token_lifetime_ms = kHourMs;
  World world(config);
  world.request_at(kStart, "r1");  // issued at kStart: known expiry kStart + 1h
  const TimeMs expiry = kStart + kHourMs;
  world.request_at(expiry - 61 * kSecondMs, "at-61s");
  world.request_at(expiry - 60 * kSecondMs, "at-60s");
  ASSERT_TRUE(world.sim.run_until(expiry - 61 * kSecondMs + 500).ok());
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 1u) << "61 s before expiry: reuse";
  EXPECT_EQ(world.status("at-61s"), 200);
  ASSERT_TRUE(world.sim.run().ok());

  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u) << "60 s before expiry: refresh";
  const auto refreshed = events(world.trace, "token_issued", "refresh");
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed[0]->str("request_id"), "at-60s");
  EXPECT_EQ(refreshed[0]->t, expiry - 60 * kSecondMs);  // issued first, before the send
  EXPECT_EQ(world.status("at-60s"), 200);
  EXPECT_EQ(world.brokerage.calls("quote"), 3u);
  EXPECT_TRUE(events(world.trace, "auth_rejected").empty());
  ASSERT_TRUE(world.client->cached().has_value());
  EXPECT_EQ(world.client->cached()->generation, 2u);
  EXPECT_EQ(world.client->cached()->expires_at_ms, expiry - 60 * kSecondMs + kHourMs);
}

TEST(TokenClient, HonoursAConfiguredRefreshMargin) {
  // The margin is configuration (incident 001's 60 s is the default).
  BrokerageConfig config;
  config.token_lifetime_ms = 10 * kMinuteMs;
  TokenClientConfig client_config;
  client_config.refresh_margin_ms = 5 * kMinuteMs;
  World world(config, 7, client_config);
  world.request_at(kStart, "r1");
  world.request_at(kStart + 5 * kMinuteMs - 1, "r2");  // 1 ms before the margin: reuse
  world.request_at(kStart + 5 * kMinuteMs, "r3");      // at the margin: refresh
  ASSERT_TRUE(world.sim.run().ok());
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);
  const auto refreshed = events(world.trace, "token_issued", "refresh");
  ASSERT_EQ(refreshed.size(), 1u);
  EXPECT_EQ(refreshed[0]->str("request_id"), "r3");
}

TEST(TokenClient, WithoutAKnownLifetimeTheTokenIsReusedUntilRejected) {
  // An issuer that gives no expires_in: the client cannot refresh early and
  // relies on the 401 rule alone. Built from the brokerage's own answers by a
  // wrapper service that strips the field (a faithful variant, not a mock:
  // the brokerage still judges every token).
  class NoLifetime final : public SimService {
   public:
    explicit NoLifetime(SimBrokerage& inner) : inner_(inner) {}
    const std::string& name() const override { return inner_.name(); }
    SimReply handle(const ServiceRequest& request, TimeMs now_ms) override {
      SimReply reply = inner_.handle(request, now_ms);
      if (request.operation == kIssueTokenOperation && reply.result.is_success()) {
        ServiceResponse response = reply.result.response();
        response.body.erase("expires_in");
        reply.result = ServiceResult(std::move(response));
      }
      return reply;
    }

   private:
    SimBrokerage& inner_;
  };
  Simulator sim(SimulatorOptions{.start_ms = kStart, .seed = 3});
  Trace trace;
  SimServices services(sim, trace);
  SimLog log(sim, trace);
  BrokerageConfig config;
  config.token_lifetime_ms = kHourMs;
  SimBrokerage brokerage(sim, trace, config);
  NoLifetime wrapper(brokerage);
  services.add(wrapper);
  std::map<std::string, std::optional<ServiceResult>> results;
  const ProcessId p = sim.add_process("worker", [&](Simulator& s, ProcessId self) {
    TokenClient& client = s.emplace_memory<TokenClient>(self, s.clock(), services, log);
    for (const char* id : {"r1", "r2"}) results[id];
    s.schedule_call(kStart, [&s, &client, &results, self] {
      s.spawn(self, send_request(client, quote_request("r1"), results["r1"]));
    });
    s.schedule_call(kStart + 2 * kHourMs, [&s, &client, &results, self] {
      EXPECT_FALSE(client.cached()->expires_at_ms.has_value());
      s.spawn(self, send_request(client, quote_request("r2"), results["r2"]));
    });
  });
  sim.boot(p);
  ASSERT_TRUE(sim.run().ok());
  sim.crash(p);
  // r2 used the expired token (no known expiry), got 401 expired, reissued once.
  EXPECT_EQ(results["r2"]->response().status, 200);
  const auto rejected = events(trace, "auth_rejected", "expired");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0]->str("request_id"), "r2");
  EXPECT_EQ(issuances(trace, "after_401"), 1u);
}

// --- failing reissue ---------------------------------------------------------------

struct IssueFailureCase {
  int status;
  TransportErrorKind transport;
  FailureClass expected;
};

class TokenClientFailingReissue : public ::testing::TestWithParam<IssueFailureCase> {};

TEST_P(TokenClientFailingReissue, FailsTheRequestWithTheReissuesClassThenRecovers) {
  const IssueFailureCase c = GetParam();
  World world;
  world.request_at(kStart, "r1");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  BrokerageFault fault;
  fault.operation = kIssueTokenOperation;
  fault.from_ms = kStart + kHourMs;
  fault.until_ms = kStart + 3 * kHourMs;
  fault.http_status = c.status;
  fault.transport = c.status == 0 ? c.transport : TransportErrorKind::none;
  world.brokerage.add_fault(fault);
  world.request_at(kStart + 2 * kHourMs, "r2");
  world.request_at(kStart + 4 * kHourMs, "r3");  // the issuer is back
  ASSERT_TRUE(world.sim.run().ok());

  const ServiceResult& r2 = world.result("r2");
  EXPECT_EQ(classify(to_failure_info(r2)), c.expected);
  if (c.status != 0) {
    ASSERT_TRUE(r2.has_response());
    EXPECT_EQ(r2.response().status, c.status);
  }
  // r2: one 401, one failed reissue, no retry and no second reissue.
  EXPECT_EQ(issuances(world.trace, "after_401"), 1u);
  EXPECT_EQ(events(world.trace, "token_issue_failed").size(), 1u);
  EXPECT_EQ(world.client->stats().issue_failures, 1u);
  // Recovers without a restart: r3 obtains a token and succeeds.
  EXPECT_EQ(world.status("r3"), 200);
  EXPECT_EQ(issuances(world.trace, "initial"), 2u);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 3u);
  EXPECT_EQ(world.brokerage.calls("quote"), 3u);  // r1, r2 (401), r3
  EXPECT_EQ(world.sim.boot_count(world.process), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    IssuerFaults, TokenClientFailingReissue,
    ::testing::Values(IssueFailureCase{503, TransportErrorKind::none, FailureClass::provider_5xx},
                      IssueFailureCase{429, TransportErrorKind::none, FailureClass::rate_limit},
                      IssueFailureCase{401, TransportErrorKind::none, FailureClass::auth},
                      IssueFailureCase{400, TransportErrorKind::none, FailureClass::validation},
                      IssueFailureCase{0, TransportErrorKind::timeout, FailureClass::timeout},
                      IssueFailureCase{0, TransportErrorKind::dns, FailureClass::network}));

TEST(TokenClient, FailedFirstIssuanceFailsTheRequestWithoutSendingIt) {
  World world;
  BrokerageFault fault;
  fault.operation = kIssueTokenOperation;
  fault.http_status = 500;
  fault.hits_max = 1;
  world.brokerage.add_fault(fault);
  world.request_at(kStart, "r1");
  world.request_at(kStart + kMinuteMs, "r2");
  ASSERT_TRUE(world.sim.run().ok());
  EXPECT_EQ(world.status("r1"), 500);
  EXPECT_EQ(world.status("r2"), 200);
  EXPECT_EQ(world.brokerage.calls("quote"), 1u);
  EXPECT_EQ(world.brokerage.fault_hits(0), 1u);
}

// --- single flight and generations -------------------------------------------------

TEST(TokenClient, ConcurrentRequestsMeetingA401ShareOneReissue) {
  constexpr int kRequests = 8;
  World world;
  world.request_at(kStart, "warm");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  for (int i = 0; i < kRequests; ++i)
    world.request_at(kStart + 2 * kHourMs, "c" + std::to_string(i));
  ASSERT_TRUE(world.sim.run().ok());

  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(world.status("c" + std::to_string(i)), 200);
  EXPECT_EQ(events(world.trace, "auth_rejected", "revoked").size(), std::size_t{kRequests});
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);  // warm-up + ONE reissue
  EXPECT_EQ(issuances(world.trace, "after_401"), 1u);
  EXPECT_EQ(world.brokerage.calls("quote"), 1u + 2u * kRequests);
  EXPECT_EQ(world.client->stats().reissues, 1u);
  EXPECT_EQ(world.client->stats().joined, std::uint64_t{kRequests - 1});
  EXPECT_EQ(events(world.trace, "token_wait").size(), std::size_t{kRequests - 1});
  EXPECT_TRUE(no_token_leaked(world));
}

TEST(TokenClient, ColdStartRequestsShareOneIssuance) {
  World world;
  for (int i = 0; i < 5; ++i) world.request_at(kStart, "c" + std::to_string(i));
  ASSERT_TRUE(world.sim.run().ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(world.status("c" + std::to_string(i)), 200);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 1u);
  EXPECT_EQ(world.client->stats().joined, 4u);
}

// A request that sent the old token before the reissue and hears its 401
// after the new token is cached retries with the new one: no second issuance.
TEST(TokenClient, A401WithAnOlderGenerationRetriesWithTheNewerTokenWithoutReissuing) {
  BrokerageConfig config;
  config.latency_ms = 100;
  config.issue_latency_ms = 20;  // the reissue completes before B's 401 arrives
  World world(config);
  world.request_at(kStart, "warm");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  const TimeMs t = kStart + 2 * kHourMs;
  world.request_at(t, "A");       // 401 at t+100, reissue done at t+120
  world.request_at(t + 50, "B");  // sent with generation 1, 401 at t+150
  ASSERT_TRUE(world.sim.run().ok());

  EXPECT_EQ(world.status("A"), 200);
  EXPECT_EQ(world.status("B"), 200);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);
  EXPECT_EQ(world.client->stats().stale_retries, 1u);
  EXPECT_EQ(world.client->stats().joined, 0u);
  const auto newer = events(world.trace, "token_retry_newer");
  ASSERT_EQ(newer.size(), 1u);
  EXPECT_EQ(newer[0]->str("request_id"), "B");
  EXPECT_EQ(newer[0]->num("rejected_generation"), 1);
  EXPECT_EQ(newer[0]->num("generation"), 2);
}

// Two requests meet the 401 together and the one reissue fails: both fail
// with its class, including the one whose 401 arrives after the failure.
TEST(TokenClient, ConcurrentRequestsShareAFailedReissue) {
  BrokerageConfig config;
  config.issue_latency_ms = 20;
  World world(config);
  world.request_at(kStart, "warm");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  BrokerageFault fault;
  fault.operation = kIssueTokenOperation;
  fault.from_ms = kStart + kHourMs;
  fault.until_ms = kStart + 3 * kHourMs;
  fault.http_status = 503;
  world.brokerage.add_fault(fault);
  const TimeMs t = kStart + 2 * kHourMs;
  world.request_at(t, "A");       // leads the reissue, fails at t+120
  world.request_at(t + 10, "W");  // 401 at t+110: waits for A's reissue
  world.request_at(t + 50, "L");  // 401 at t+150: after the failure
  ASSERT_TRUE(world.sim.run().ok());

  for (const char* id : {"A", "W", "L"}) EXPECT_EQ(world.status(id), 503) << id;
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);
  EXPECT_EQ(world.client->stats().joined, 1u);
  EXPECT_EQ(events(world.trace, "token_shared_failure").size(), 1u);
  EXPECT_EQ(world.brokerage.calls("quote"), 4u);  // warm + A, W, L once each
}

// A leader whose task is dropped mid-issuance (not a crash) abandons the
// flight; the waiter wakes, finds no outcome and leads its own.
TEST(TokenClient, AnAbandonedIssuanceIsTakenOverByAWaiter) {
  World world;
  std::optional<ServiceResult> leader_result;
  Task<void> leader;
  world.sim.schedule_call_for(world.process, kStart, [&] {
    leader = send_request(*world.client, quote_request("leader"), leader_result);
    leader.start_handle().resume();  // runs until it waits for the issuer
  });
  world.request_at(kStart + 10, "waiter");
  world.sim.schedule_call_for(world.process, kStart + 50, [&] {
    EXPECT_TRUE(world.client->issuance_in_flight());
    leader.reset();
    EXPECT_FALSE(world.client->issuance_in_flight());
  });
  ASSERT_TRUE(world.sim.run().ok());
  EXPECT_FALSE(leader_result.has_value());
  EXPECT_EQ(world.status("waiter"), 200);
  EXPECT_EQ(world.brokerage.calls(kIssueTokenOperation), 2u);  // abandoned + the waiter's
  EXPECT_EQ(world.client->cached()->generation, 1u);           // the abandoned one never reached us
}

}  // namespace
}  // namespace rehearse::sim::token_test
