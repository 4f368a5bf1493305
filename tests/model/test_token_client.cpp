// Goal: the brokerage token client follows docs/semantics.md §7 and the 401
// boundary cases of §11 (incident 001): after a 401 the token is reissued
// and the request retried exactly once; a second 401, a 403, a 429 and a 5xx
// cause no reissue; the cached token is refreshed 60 s before its known expiry
// (and not 61 s); a failing reissue fails the request with the reissue's class;
// a revocation recovers without a restart (where the original client, kept
// here as a test double, fails until restart); concurrent 401s share one
// reissue; a 401 with an older generation retries without reissuing; and, under
// random scripts of revocations and faults, no request ever reissues twice.
// Also: the WaitList primitive and the Clock wake-up capability it stands on.
// Method: the real TokenClient and FetchJob on the simulated world (Simulator,
// SimServices, SimLog, SimBrokerage; no mocks), judged by brokerage call
// counts and by the trace, read as an independent witness (service_call /
// service_reply / token_issued / auth_rejected events), plus a RapidCheck
// property over generated fault scripts.
#include "model/token_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/fetch_job.hpp"
#include "model/real_driver.hpp"
#include "model/system_clock.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

TimeMs instant(std::string_view iso) { return parse_instant(iso).value(); }
const TimeMs kStart = instant("2026-11-30T00:00:00Z");

ServiceRequest quote_request(const std::string& id, const std::string& operation = "quote") {
  ServiceRequest request;
  request.service = kBrokerageName;
  request.operation = operation;
  request.target = "ACME";
  request.headers[kHeaderJob] = "quote-fetch";
  request.headers[kHeaderRequestId] = id;
  return request;
}

// Coroutines take what they use as parameters (see docs/simulator.md).
Task<void> send_request(TokenClient& client, ServiceRequest request,
                        std::optional<ServiceResult>& out) {
  ServiceResult result = co_await client.request(std::move(request));
  out.emplace(std::move(result));
}

// One simulated world: a brokerage, and a worker process whose memory holds
// the TokenClient (a crash empties it).
struct World {
  explicit World(BrokerageConfig config = {}, std::uint64_t seed = 7,
                 TokenClientConfig client_config_in = {})
      : sim(SimulatorOptions{.start_ms = kStart, .seed = seed}),
        services(sim, trace),
        log(sim, trace),
        brokerage(sim, trace, std::move(config)),
        client_config(std::move(client_config_in)) {
    services.add(brokerage);
    process = sim.add_process("worker", [this](Simulator& s, ProcessId self) {
      client = &s.emplace_memory<TokenClient>(self, s.clock(), services, log, client_config);
      if (on_boot) on_boot(s, self);
    });
    sim.boot(process);
  }
  // Frames and process memory go first, while everything they use is alive.
  ~World() {
    if (sim.is_up(process)) sim.crash(process);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Sends request `id` from the worker at `t_ms`; its answer lands in results[id].
  void request_at(TimeMs t_ms, const std::string& id, const std::string& operation = "quote") {
    results.emplace(id, std::nullopt);
    sim.schedule_call_for(
        process, t_ms,
        [this, id, operation] {
          sim.spawn(process, send_request(*client, quote_request(id, operation), results.at(id)),
                    id);
        },
        "request");
  }

  const ServiceResult& result(const std::string& id) const {
    const auto& r = results.at(id);
    REHEARSE_ASSERT(r.has_value());
    return *r;
  }
  int status(const std::string& id) const {
    const ServiceResult& r = result(id);
    return r.has_response() ? r.response().status : 0;
  }

  Simulator sim;
  Trace trace;
  SimServices services;
  SimLog log;
  SimBrokerage brokerage;
  TokenClientConfig client_config;
  std::function<void(Simulator&, ProcessId)> on_boot;
  ProcessId process = 0;
  TokenClient* client = nullptr;
  std::map<std::string, std::optional<ServiceResult>> results;
};

// --- trace readers (the independent witness) ----------------------------------

std::vector<const TraceEvent*> events(const Trace& trace, std::string_view type,
                                      std::string_view reason = {}) {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : trace.events()) {
    if (e.type != type) continue;
    if (!reason.empty() && e.str("reason") != reason) continue;
    out.push_back(&e);
  }
  return out;
}

// Issuances the brokerage saw for a reason ("initial", "refresh", "after_401"),
// successful or not.
std::size_t issuances(const Trace& trace, std::string_view reason) {
  return events(trace, "token_issued", reason).size() +
         events(trace, "token_issue_failed", reason).size();
}

// Every token value the brokerage ever issued is absent from the trace and
// from the log text.
::testing::AssertionResult no_token_leaked(const World& world) {
  const std::string jsonl = world.trace.to_jsonl();
  for (const BrokerageToken& token : world.brokerage.tokens()) {
    if (jsonl.find(token.value) != std::string::npos) {
      return ::testing::AssertionFailure()
             << "token of generation " << token.generation << " appears in the trace";
    }
    for (const std::string& line : world.log.lines()) {
      if (line.find(token.value) != std::string::npos) {
        return ::testing::AssertionFailure() << "token appears in log line: " << line.substr(0, 40);
      }
    }
  }
  return ::testing::AssertionSuccess();
}

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

// --- the original bug, and the recovery without restart ----------------------------

// The client of incident 001 before the fix: reuses its cached token until 60 s
// before expiry and KEEPS it after a 401. Test-only; never in model/.
class KeepsTokenAfter401Client {
 public:
  KeepsTokenAfter401Client(Clock& clock, Services& services) : clock_(clock), services_(services) {}

  Task<ServiceResult> request(ServiceRequest request) {
    if (token_.empty() || clock_.now() >= expires_at_ms_ - kMinuteMs) {
      ServiceRequest issue;
      issue.service = kBrokerageName;
      issue.operation = kIssueTokenOperation;
      issue.body = nlohmann::json{{"reason", "initial"}};
      const TimeMs sent_ms = clock_.now();
      ServiceResult issued = co_await services_.call(std::move(issue));
      if (!issued.is_success()) co_return issued;
      token_ = issued.response().body.at("access_token").get<std::string>();
      expires_at_ms_ = sent_ms + issued.response().body.at("expires_in").get<DurationMs>() * 1000;
    }
    request.headers[kRequestHeaderAuthorization] = "Bearer " + token_;
    ServiceResult result = co_await services_.call(std::move(request));
    co_return result;  // a 401 changes nothing: the cache is kept
  }

 private:
  Clock& clock_;
  Services& services_;
  std::string token_;
  TimeMs expires_at_ms_ = 0;
};

// Durable outcome per hourly slot (outside the process).
using SlotOutcomes = std::map<TimeMs, bool>;

Task<void> hourly_fetch_fixed(Clock& clock, FetchJob& job, SlotOutcomes& outcomes,
                              TimeMs until_ms) {
  for (TimeMs slot = kStart; slot < until_ms; slot += kHourMs) {
    if (outcomes.count(slot) != 0 || slot + kMinuteMs < clock.now()) continue;
    co_await clock.sleep_until(slot);
    // A named local, never an aggregate temporary inside co_await (g++ 12).
    RunContext context{"quote-fetch", slot, 1, false};
    const rehearse::RunOutcome outcome = co_await job.run(context);
    outcomes[slot] = !outcome.failed();
  }
}

Task<void> hourly_fetch_buggy(Clock& clock, KeepsTokenAfter401Client& client,
                              SlotOutcomes& outcomes, TimeMs until_ms) {
  for (TimeMs slot = kStart; slot < until_ms; slot += kHourMs) {
    if (outcomes.count(slot) != 0 || slot + kMinuteMs < clock.now()) continue;
    co_await clock.sleep_until(slot);
    bool ok = true;
    for (int i = 0; i < 2 && ok; ++i) {
      ServiceResult result = co_await client.request(quote_request("q" + std::to_string(i)));
      ok = result.is_success();
    }
    outcomes[slot] = ok;
  }
}

// The scenario of incident 001: a day of hourly fetches, the brokerage revokes the
// token at 06:30, the process restarts at 17:30. The judge: no slot fails
// after the revocation (a 401 must recover without a restart).
struct DayResult {
  SlotOutcomes outcomes;
  std::uint64_t issue_calls = 0;
  Status verdict;
};

Status judge_recovers_without_restart(const SlotOutcomes& outcomes, TimeMs until_ms) {
  std::vector<std::string> failed;
  for (TimeMs slot = kStart; slot < until_ms; slot += kHourMs) {
    const auto it = outcomes.find(slot);
    if (it == outcomes.end() || !it->second) failed.push_back(format_instant(slot));
  }
  if (failed.empty()) return {};
  return make_error(ErrorCode::internal,
                    fmt::format("{} slots failed after a 401, first {}", failed.size(), failed[0]));
}

DayResult run_day(bool buggy) {
  World world;
  const TimeMs until = kStart + kDayMs;
  DayResult day;
  world.on_boot = [&](Simulator& s, ProcessId self) {
    if (buggy) {
      auto& client = s.emplace_memory<KeepsTokenAfter401Client>(self, s.clock(), world.services);
      s.spawn(self, hourly_fetch_buggy(s.clock(), client, day.outcomes, until), "hourly");
    } else {
      FetchJobConfig config;
      config.requests = {{"quote", "ACME", {}}, {"positions", "", {}}};
      auto& job = s.emplace_memory<FetchJob>(self, s.clock(), *world.client, world.log, config);
      s.spawn(self, hourly_fetch_fixed(s.clock(), job, day.outcomes, until), "hourly");
    }
  };
  world.sim.crash(world.process);  // reboot with on_boot installed
  world.sim.boot(world.process);
  world.brokerage.schedule_revoke_all(instant("2026-11-30T06:30:00Z"));
  world.sim.schedule_crash(world.process, instant("2026-11-30T17:30:00Z"), 5 * kMinuteMs);
  const RunResult r = world.sim.run_until(until);
  EXPECT_TRUE(r.ok()) << r.message;
  day.issue_calls = world.brokerage.calls(kIssueTokenOperation);
  day.verdict = judge_recovers_without_restart(day.outcomes, until);
  EXPECT_TRUE(no_token_leaked(world));
  return day;
}

TEST(TokenClientScenario, RevocationMidDayRecoversWithoutRestart) {
  const DayResult day = run_day(false);
  EXPECT_TRUE(day.verdict.ok()) << day.verdict.error().message;
  EXPECT_EQ(day.outcomes.size(), 24u);
  // 00:00 initial, 07:00 one reissue, 18:00 initial again after the restart.
  EXPECT_EQ(day.issue_calls, 3u);
}

TEST(TokenClientScenario, TheOriginalClientFailsUntilRestartAndTheJudgeSaysSo) {
  const DayResult day = run_day(true);
  ASSERT_FALSE(day.verdict.ok());
  EXPECT_NE(day.verdict.error().message.find("11 slots failed"), std::string::npos)
      << day.verdict.error().message;
  EXPECT_NE(day.verdict.error().message.find("2026-11-30T07:00:00Z"), std::string::npos);
  // Exactly incident 001's shape: fails from the revocation until the restart,
  // then "recovers" only because the restart emptied the cache.
  for (TimeMs slot = kStart; slot < kStart + kDayMs; slot += kHourMs) {
    const bool expected_ok =
        slot < instant("2026-11-30T07:00:00Z") || slot >= instant("2026-11-30T18:00:00Z");
    EXPECT_EQ(day.outcomes.at(slot), expected_ok) << format_instant(slot);
  }
  EXPECT_EQ(day.issue_calls, 2u);  // never reissued after the 401s
}

// --- FetchJob ----------------------------------------------------------------------

Task<void> run_job(FetchJob& job, RunContext context, std::optional<rehearse::RunOutcome>& out) {
  rehearse::RunOutcome outcome = co_await job.run(std::move(context));
  out.emplace(std::move(outcome));
}

struct JobWorld {
  explicit JobWorld(FetchJobConfig config, BrokerageConfig brokerage = {})
      : world(std::move(brokerage)), job_config(std::move(config)) {
    job = &world.sim.emplace_memory<FetchJob>(world.process, world.sim.clock(), *world.client,
                                              world.log, job_config);
  }
  void run_at(TimeMs slot, std::optional<rehearse::RunOutcome>& out, int attempt = 1) {
    world.sim.schedule_call_for(world.process, slot, [this, slot, attempt, &out] {
      world.sim.spawn(world.process,
                      run_job(*job, RunContext{"quote-fetch", slot, attempt, false}, out));
    });
  }
  World world;
  FetchJobConfig job_config;
  FetchJob* job = nullptr;
};

TEST(FetchJob, ParallelRequestsShareOneIssuanceAndOneReissue) {
  FetchJobConfig config;
  config.parallel = true;
  for (const char* op : {"quote", "positions", "quote", "balance"})
    config.requests.push_back({op, "X", {}});
  JobWorld jw(config);
  jw.world.brokerage.schedule_revoke_all(kStart + 30 * kMinuteMs);
  std::optional<rehearse::RunOutcome> first, second;
  jw.run_at(kStart, first);
  jw.run_at(kStart + kHourMs, second);
  ASSERT_TRUE(jw.world.sim.run().ok());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->kind, RunOutcomeKind::success);
  EXPECT_EQ(second->kind, RunOutcomeKind::success);
  EXPECT_EQ(issuances(jw.world.trace, "initial"), 1u);
  EXPECT_EQ(issuances(jw.world.trace, "after_401"), 1u);
  EXPECT_EQ(jw.world.brokerage.calls(kIssueTokenOperation), 2u);
  // Every request of the second run was rejected once and retried once.
  EXPECT_EQ(events(jw.world.trace, "auth_rejected").size(), 4u);
  EXPECT_EQ(jw.world.brokerage.calls("quote") + jw.world.brokerage.calls("positions") +
                jw.world.brokerage.calls("balance"),
            12u);
  // Attribution: every call carries the run's job, slot, attempt, request id.
  for (const TraceEvent* e : events(jw.world.trace, "service_call")) {
    EXPECT_EQ(e->job, "quote-fetch");
    EXPECT_TRUE(e->slot.has_value());
    EXPECT_EQ(e->num("attempt"), 1);  // a number in the trace
    EXPECT_FALSE(e->str("request_id").empty());
  }
}

TEST(FetchJob, FailureCarriesTheClassOfTheFirstFailedRequestAndItsTextVerbatim) {
  FetchJobConfig config;
  config.parallel = true;
  config.requests = {{"quote", "A", {}}, {"positions", "", {}}, {"balance", "", {}}};
  JobWorld jw(config);
  BrokerageFault forbidden;
  forbidden.operation = "positions";
  forbidden.http_status = 403;
  forbidden.message = "ConnectionError: HTTP 403 Forbidden";
  jw.world.brokerage.add_fault(forbidden);
  BrokerageFault busy;
  busy.operation = "balance";
  busy.http_status = 429;
  jw.world.brokerage.add_fault(busy);
  std::optional<rehearse::RunOutcome> outcome;
  jw.run_at(kStart, outcome, 2);
  ASSERT_TRUE(jw.world.sim.run().ok());
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->kind, RunOutcomeKind::failure);
  EXPECT_EQ(outcome->failure_class, FailureClass::auth);  // positions (index 1) before balance
  EXPECT_EQ(outcome->error, "ConnectionError: HTTP 403 Forbidden");
  EXPECT_EQ(jw.world.brokerage.calls(kIssueTokenOperation), 1u);  // 403/429: no reissue
  const auto failed = events(jw.world.trace, "fetch_request_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]->str("request_id"), "quote-fetch/2026-11-30T00:00:00Z/a2/r1");
  EXPECT_EQ(failed[0]->str("failure_class"), "auth");
}

TEST(FetchJob, SequentialRunStopsAtTheFirstFailureAndA401AfterTheReissueIsAuth) {
  FetchJobConfig config;
  config.requests = {{"quote", "A", {}}, {"positions", "", {}}, {"balance", "", {}}};
  JobWorld jw(config);
  BrokerageFault unauthorized;
  unauthorized.operation = "positions";
  unauthorized.http_status = 401;
  jw.world.brokerage.add_fault(unauthorized);
  std::optional<rehearse::RunOutcome> outcome;
  jw.run_at(kStart, outcome);
  ASSERT_TRUE(jw.world.sim.run().ok());
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->failure_class, FailureClass::auth);
  EXPECT_FALSE(is_retryable_by_default(outcome->failure_class));
  EXPECT_EQ(outcome->error, "401 Unauthorized");
  EXPECT_EQ(jw.world.brokerage.calls("positions"), 2u);
  EXPECT_EQ(jw.world.brokerage.calls("balance"), 0u);  // not sent after the failure
  EXPECT_EQ(jw.world.brokerage.calls(kIssueTokenOperation), 2u);
}

TEST(FetchJob, AJobWithoutRequestsIsAConfigFailure) {
  JobWorld jw(FetchJobConfig{});
  std::optional<rehearse::RunOutcome> outcome;
  jw.run_at(kStart, outcome);
  ASSERT_TRUE(jw.world.sim.run().ok());
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->failure_class, FailureClass::config);
  EXPECT_EQ(jw.world.services.calls(), 0u);
}

// --- determinism ---------------------------------------------------------------------

std::uint64_t revocation_trace_hash(std::uint64_t seed, std::string* first_token = nullptr) {
  World world({}, seed);
  world.request_at(kStart, "r1");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  for (int i = 0; i < 3; ++i) world.request_at(kStart + 2 * kHourMs + i, "c" + std::to_string(i));
  EXPECT_TRUE(world.sim.run().ok());
  if (first_token != nullptr) *first_token = world.brokerage.tokens().at(0).value;
  return world.trace.hash();
}

// Token values are secrets, not faults: the brokerage draws them from a stream
// fixed by its name, so a run without random faults gives the same trace (the
// fingerprints included) for every seed, while every issued token still
// differs from the others.
TEST(TokenClientDeterminism, SameTraceForEverySeedWithoutRandomFaults) {
  std::string a, b, c;
  const std::uint64_t hash = revocation_trace_hash(11, &a);
  EXPECT_EQ(hash, revocation_trace_hash(11, &b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(hash, revocation_trace_hash(12, &c));
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.size(), 36u);
  EXPECT_EQ(a.rfind("tok_", 0), 0u);
}

TEST(TokenClientDeterminism, EveryIssuedTokenIsDistinct) {
  World world({}, 5);
  world.request_at(kStart, "r1");
  world.brokerage.schedule_revoke_all(kStart + kHourMs);
  world.request_at(kStart + 2 * kHourMs, "r2");
  world.brokerage.schedule_revoke_all(kStart + 3 * kHourMs);
  world.request_at(kStart + 4 * kHourMs, "r3");
  ASSERT_TRUE(world.sim.run().ok());
  std::set<std::string> values;
  for (const auto& token : world.brokerage.tokens()) values.insert(token.value);
  EXPECT_GE(world.brokerage.tokens().size(), 3u);
  EXPECT_EQ(values.size(), world.brokerage.tokens().size());
}

// --- property: at most one reissue per request under random fault scripts ----------

struct ScriptFault {
  std::string operation;
  DurationMs from_ms = 0;
  DurationMs length_ms = 0;
  int status = 0;  // 0: transport timeout, -1: connection reset
  bool half_rate = false;
  int hits_max = 0;  // 0: no limit
};

// Checks, from the trace alone, the rules a monitor would: per request at most
// two sends, a second send only after a 401, at most one after_401 issuance and
// only after a 401 of that request; at most one issuance in flight; no token
// in the trace or log. Returns the first violation.
std::optional<std::string> check_token_rules(const Trace& trace) {
  std::map<std::string, int> sends;
  std::map<std::string, std::vector<int>> reply_statuses;
  std::map<std::string, int> reissues;
  int issuing = 0;
  for (const TraceEvent& e : trace.events()) {
    const std::string op = e.str("operation");
    const std::string id = e.str("request_id");
    if (e.type == "service_call" && op == kIssueTokenOperation) {
      if (++issuing > 1) return "two issuances in flight at " + format_instant(e.t);
    } else if (e.type == "service_reply" && op == kIssueTokenOperation) {
      --issuing;
    } else if (e.type == "service_call") {
      if (++sends[id] > 2) return "request " + id + " sent more than twice";
      if (sends[id] == 2 && (reply_statuses[id].empty() || reply_statuses[id].back() != 401)) {
        return "request " + id + " retried without a 401";
      }
    } else if (e.type == "service_reply") {
      reply_statuses[id].push_back(static_cast<int>(e.num("status", 0)));
    } else if ((e.type == "token_issued" || e.type == "token_issue_failed") &&
               e.str("reason") == "after_401") {
      if (++reissues[id] > 1) return "request " + id + " reissued twice";
      const auto& seen = reply_statuses[id];
      if (std::find(seen.begin(), seen.end(), 401) == seen.end()) {
        return "request " + id + " reissued without a 401";
      }
    }
  }
  return std::nullopt;
}

// inRange scales with RapidCheck's size (small ranges in early cases); the
// scripts want the whole range in every case, and still shrink.
template <typename T>
T uniform(T lo, T hi_exclusive) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi_exclusive));
}

REHEARSE_PROP(TokenClientProperty, AtMostOneReissuePerRequestUnderRandomFaults, ()) {
  BrokerageConfig config;
  // Lifetimes around the refresh margin, short ones, and a day.
  config.token_lifetime_ms =
      *rc::gen::element<DurationMs>(45, 61, 90, 600, 3600, 86400, 86400) * kSecondMs;
  config.latency_ms = uniform<DurationMs>(1, 300);
  config.issue_latency_ms = uniform<DurationMs>(1, 300);
  config.timeout_ms = uniform<DurationMs>(100, 2000);
  const std::uint64_t seed = *rc::gen::arbitrary<std::uint64_t>();
  World world(config, seed);

  // A warm-up request caches a token; the others cluster around a few
  // instants so that many meet revocations and faults together.
  world.request_at(kStart, "warm");
  const int bases = uniform(1, 4);
  std::vector<DurationMs> base_ms;
  for (int i = 0; i < bases; ++i) base_ms.push_back(uniform<DurationMs>(1, 8) * kMinuteMs);
  const int request_count = uniform(1, 14);
  for (int i = 0; i < request_count; ++i) {
    const DurationMs base = base_ms[static_cast<std::size_t>(uniform(0, bases))];
    world.request_at(kStart + base + uniform<DurationMs>(0, 400), "r" + std::to_string(i));
  }
  // Revocations anywhere, or just before a cluster (so that it meets them).
  const int revocations = uniform(0, 4);
  for (int i = 0; i < revocations; ++i) {
    const bool near_cluster = *rc::gen::arbitrary<bool>();
    const DurationMs at_ms =
        near_cluster
            ? std::max<DurationMs>(0, base_ms[static_cast<std::size_t>(uniform(0, bases))] -
                                          uniform<DurationMs>(0, 2000))
            : uniform<DurationMs>(0, 8 * kMinuteMs);
    world.brokerage.schedule_revoke_all(kStart + at_ms);
  }
  const int fault_count = uniform(0, 5);
  for (int i = 0; i < fault_count; ++i) {
    ScriptFault f;
    f.operation = *rc::gen::element(std::string("quote"), std::string("quote"),
                                    std::string(kIssueTokenOperation), std::string());
    f.from_ms = uniform<DurationMs>(0, 8 * kMinuteMs);
    f.length_ms = uniform<DurationMs>(0, 3 * kMinuteMs);
    f.status = *rc::gen::element(401, 401, 403, 429, 500, 503, 0, -1);
    f.half_rate = *rc::gen::arbitrary<bool>();
    f.hits_max = uniform(0, 4);
    BrokerageFault fault;
    fault.operation = f.operation;
    fault.from_ms = kStart + f.from_ms;
    fault.until_ms = fault.from_ms + f.length_ms;
    fault.rate = f.half_rate ? 0.5 : 1.0;
    if (f.hits_max > 0) fault.hits_max = static_cast<std::uint64_t>(f.hits_max);
    if (f.status > 0) {
      fault.http_status = f.status;
    } else {
      fault.transport =
          f.status == 0 ? TransportErrorKind::timeout : TransportErrorKind::connection_reset;
    }
    world.brokerage.add_fault(fault);
  }

  const RunResult run = world.sim.run();
  RC_ASSERT(run.ok());
  for (const auto& [id, result] : world.results) {
    RC_ASSERT(result.has_value());  // every request got its answer
  }
  if (const std::optional<std::string> violation = check_token_rules(world.trace)) {
    RC_FAIL(*violation);
  }
  RC_ASSERT(world.client->stats().reissues <= world.client->stats().requests);
  RC_ASSERT(static_cast<bool>(no_token_leaked(world)));
  const TokenClientStats& stats = world.client->stats();
  RC_TAG(stats.reissues > 0 ? "reissued" : "no reissue");
  RC_TAG(stats.joined + stats.stale_retries > 0 ? "shared" : "alone");
  RC_TAG(stats.auth_failures > 0 ? "second 401" : "no second 401");
}

void add_event(Trace& trace, std::string type, std::string operation, std::string id, int status,
               std::string reason) {
  TraceEvent e;
  e.type = std::move(type);
  if (!operation.empty()) e.data["operation"] = operation;
  e.data["request_id"] = id;
  if (status != 0) e.data["status"] = status;
  if (!reason.empty()) e.data["reason"] = reason;
  trace.record(std::move(e));
}

TEST(TokenClientProperty, TheRuleCheckerCatchesViolations) {
  // Teeth for the property's witness: hand-made traces breaking each rule.
  Trace twice;
  add_event(twice, "service_call", "quote", "r", 0, "");
  add_event(twice, "service_reply", "quote", "r", 401, "");
  add_event(twice, "token_issued", "", "r", 0, "after_401");
  add_event(twice, "token_issued", "", "r", 0, "after_401");
  EXPECT_EQ(check_token_rules(twice), std::optional<std::string>("request r reissued twice"));

  Trace retried;
  add_event(retried, "service_call", "quote", "s", 0, "");
  add_event(retried, "service_reply", "quote", "s", 403, "");
  add_event(retried, "service_call", "quote", "s", 0, "");
  EXPECT_EQ(check_token_rules(retried),
            std::optional<std::string>("request s retried without a 401"));

  Trace forbidden;
  add_event(forbidden, "service_call", "quote", "f", 0, "");
  add_event(forbidden, "service_reply", "quote", "f", 403, "");
  add_event(forbidden, "token_issue_failed", "", "f", 0, "after_401");
  EXPECT_EQ(check_token_rules(forbidden),
            std::optional<std::string>("request f reissued without a 401"));

  Trace overlapping;
  add_event(overlapping, "service_call", kIssueTokenOperation, "a", 0, "");
  add_event(overlapping, "service_call", kIssueTokenOperation, "b", 0, "");
  ASSERT_TRUE(check_token_rules(overlapping).has_value());
  EXPECT_NE(check_token_rules(overlapping)->find("two issuances in flight"), std::string::npos);
}

// --- SimBrokerage on its own -----------------------------------------------------------

Task<void> call_service(Services& services, ServiceRequest request,
                        std::optional<ServiceResult>& out) {
  ServiceResult result = co_await services.call(std::move(request));
  out.emplace(std::move(result));
}

// Direct calls (no client) from a process, each at its own instant.
struct DirectCalls {
  explicit DirectCalls(World& world_in) : world(world_in) {}
  std::optional<ServiceResult>& at(TimeMs t_ms, ServiceRequest request) {
    slots.push_back(std::make_unique<std::optional<ServiceResult>>());
    std::optional<ServiceResult>& out = *slots.back();
    world.sim.schedule_call_for(world.process, t_ms, [this, request, &out] {
      world.sim.spawn(world.process, call_service(world.services, request, out));
    });
    return out;
  }
  World& world;
  std::vector<std::unique_ptr<std::optional<ServiceResult>>> slots;
};

ServiceRequest with_token(ServiceRequest request, const std::string& token) {
  request.headers[kHeaderAuthorization] = "Bearer " + token;
  return request;
}

TEST(SimBrokerage, IssuesOpaqueTokensAndJudgesEachOne) {
  BrokerageConfig config;
  config.token_lifetime_ms = kHourMs;
  World world(config);
  DirectCalls calls(world);
  ServiceRequest issue = quote_request("i1", kIssueTokenOperation);
  issue.body = nlohmann::json{{"reason", "initial"}};
  auto& issued = calls.at(kStart, issue);
  ASSERT_TRUE(world.sim.run().ok());
  ASSERT_TRUE(issued && issued->is_success());
  const nlohmann::json& body = issued->response().body;
  EXPECT_EQ(body.at("expires_in"), 3600);
  EXPECT_EQ(body.at("token_type"), "Bearer");
  const std::string token = body.at("access_token").get<std::string>();
  EXPECT_EQ(token, world.brokerage.tokens().at(0).value);

  auto& valid = calls.at(kStart + kMinuteMs, with_token(quote_request("ok"), token));
  auto& missing = calls.at(kStart + kMinuteMs, quote_request("missing"));
  auto& unknown = calls.at(kStart + kMinuteMs, with_token(quote_request("unknown"), "tok_x"));
  auto& expired = calls.at(kStart + kHourMs, with_token(quote_request("expired"), token));
  ASSERT_TRUE(world.sim.run().ok());
  EXPECT_EQ(valid->response().status, 200);
  EXPECT_EQ(missing->response().status, 401);
  EXPECT_EQ(unknown->response().status, 401);
  EXPECT_EQ(expired->response().status, 401);
  EXPECT_EQ(to_failure_info(*expired).message, "401 Unauthorized: token expired");
  std::vector<std::string> reasons;
  for (const TraceEvent* e : events(world.trace, "auth_rejected"))
    reasons.push_back(e->str("reason"));
  EXPECT_EQ(reasons, (std::vector<std::string>{"missing", "unknown", "expired"}));

  // A second token, revoked by the fault: revoked wins over expired later.
  auto& second = calls.at(kStart + 2 * kHourMs, issue);
  ASSERT_TRUE(world.sim.run().ok());
  const std::string token2 = second->response().body.at("access_token").get<std::string>();
  EXPECT_NE(token2, token);
  world.brokerage.schedule_revoke_all(kStart + 2 * kHourMs + kMinuteMs);
  auto& revoked =
      calls.at(kStart + 2 * kHourMs + 2 * kMinuteMs, with_token(quote_request("rv"), token2));
  ASSERT_TRUE(world.sim.run().ok());
  EXPECT_EQ(revoked->response().status, 401);
  const auto revocations = events(world.trace, "token_revoked");
  ASSERT_EQ(revocations.size(), 1u);  // the expired first token is not "revoked"
  EXPECT_EQ(revocations[0]->num("generation"), 2);
  EXPECT_EQ(revocations[0]->str("fingerprint"), token_fingerprint(token2));
  EXPECT_EQ(events(world.trace, "auth_rejected", "revoked").size(), 1u);
  EXPECT_EQ(world.brokerage.rejected_count(), 4u);
  EXPECT_EQ(world.brokerage.issued_count(), 2u);
  EXPECT_TRUE(no_token_leaked(world));
}

TEST(SimBrokerage, FaultsHonourTheirWindowRateAndHitLimit) {
  World world;
  BrokerageFault limited;
  limited.operation = "positions";
  limited.http_status = 500;
  limited.hits_max = 2;
  limited.label = "two-500s";
  world.brokerage.add_fault(limited);
  BrokerageFault windowed;
  windowed.operation = "quote";
  windowed.from_ms = kStart + 10 * kMinuteMs;
  windowed.until_ms = kStart + 20 * kMinuteMs;
  windowed.http_status = 429;
  windowed.rate = 0.5;
  world.brokerage.add_fault(windowed);
  DirectCalls calls(world);
  std::vector<std::optional<ServiceResult>*> positions, inside, outside;
  for (int i = 0; i < 4; ++i) {
    positions.push_back(&calls.at(kStart + i, quote_request("p", "positions")));
  }
  for (int i = 0; i < 200; ++i) {
    inside.push_back(&calls.at(kStart + 10 * kMinuteMs + i, quote_request("q")));
    outside.push_back(&calls.at(kStart + 20 * kMinuteMs + i, quote_request("q")));
  }
  ASSERT_TRUE(world.sim.run().ok());
  // positions: the first two hit the 500s, then the (missing) token is judged.
  std::vector<int> statuses;
  for (auto* r : positions) statuses.push_back((*r)->response().status);
  EXPECT_EQ(statuses, (std::vector<int>{500, 500, 401, 401}));
  EXPECT_EQ(world.brokerage.fault_hits(0), 2u);
  int hits_inside = 0;
  for (auto* r : inside) hits_inside += (*r)->response().status == 429 ? 1 : 0;
  for (auto* r : outside) EXPECT_EQ((*r)->response().status, 401);  // window closed: token judged
  EXPECT_GT(hits_inside, 70);
  EXPECT_LT(hits_inside, 130);
  EXPECT_EQ(world.brokerage.fault_hits(1), static_cast<std::uint64_t>(hits_inside));
  EXPECT_EQ(events(world.trace, "fault_hit").size(), static_cast<std::size_t>(hits_inside) + 2u);
}

// --- WaitList and Clock::schedule_wake ------------------------------------------------

Task<void> park(WaitList& list, std::vector<std::string>& order, std::string name) {
  co_await list.wait();
  order.push_back(name);
}

TEST(WaitList, NotifyHandsWaitersToTheExecutorInOrderNeverInline) {
  Simulator sim;
  const ProcessId p = sim.add_process("p", [](Simulator&, ProcessId) {});
  sim.boot(p);
  WaitList list(sim.clock());
  std::vector<std::string> order;
  for (const char* name : {"w1", "w2", "w3"}) sim.spawn(p, park(list, order, name), name);
  std::vector<std::string> labels;
  sim.add_event_listener([&](const ExecutedEvent& e) { labels.emplace_back(e.label); });
  sim.schedule_call_for(p, 10, [&] {
    EXPECT_EQ(list.size(), 3u);
    list.notify_all();
    order.push_back("notifier continues");  // before any waiter: nothing resumed inline
    EXPECT_EQ(list.size(), 0u);
  });
  ASSERT_TRUE(sim.run().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"notifier continues", "w1", "w2", "w3"}));
  EXPECT_EQ(std::count(labels.begin(), labels.end(), std::string("notify")), 3);
  EXPECT_EQ(sim.now(), 10);  // woken at the notifier's instant
}

TEST(WaitList, AWaiterParkedAfterNotifyWaitsForTheNextOne) {
  Simulator sim;
  const ProcessId p = sim.add_process("p", [](Simulator&, ProcessId) {});
  sim.boot(p);
  WaitList list(sim.clock());
  std::vector<std::string> order;
  sim.schedule_call_for(p, 5, [&] { list.notify_all(); });  // nobody parked yet
  sim.schedule_call_for(p, 6, [&] { sim.spawn(p, park(list, order, "late"), "late"); });
  ASSERT_TRUE(sim.run_until(100).ok());
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(list.size(), 1u);
  sim.schedule_call_for(p, 200, [&] { list.notify_all(); });
  ASSERT_TRUE(sim.run().ok());
  EXPECT_EQ(order, std::vector<std::string>{"late"});
}

// The crash case: notified waiters whose frames die before their wake fires
// are never resumed (the wake belongs to the world here, so only the waiter's
// own cancellation can stop it; ASan would flag a resumed destroyed frame).
TEST(WaitList, ACrashBetweenNotifyAndWakeCancelsTheWakes) {
  Simulator sim;
  WaitList list(sim.clock());  // outlives the process, as a worst case
  std::vector<std::string> order;
  const ProcessId p = sim.add_process("p", [&](Simulator& s, ProcessId self) {
    for (const char* name : {"w1", "w2"}) s.spawn(self, park(list, order, name), name);
  });
  sim.boot(p);
  ASSERT_TRUE(sim.run_until(1).ok());
  ASSERT_EQ(list.size(), 2u);
  sim.schedule_call_for(kWorld, 5, [&] {
    list.notify_all();
    EXPECT_EQ(sim.pending_count(), 2u);
    sim.crash(p);
    EXPECT_EQ(sim.pending_count(), 0u);  // both wakes withdrawn by the dying frames
  });
  ASSERT_TRUE(sim.run().ok());
  EXPECT_TRUE(order.empty());
}

TEST(WaitList, AFrameDestroyedWhileParkedLeavesTheList) {
  Simulator sim;
  WaitList list(sim.clock());
  std::vector<std::string> order;
  const ProcessId p = sim.add_process("p", [&](Simulator& s, ProcessId self) {
    s.spawn(self, park(list, order, "doomed"), "doomed");
  });
  sim.boot(p);
  ASSERT_TRUE(sim.run_until(1).ok());
  EXPECT_EQ(list.size(), 1u);
  sim.crash(p);
  EXPECT_EQ(list.size(), 0u);
  list.notify_all();
  EXPECT_EQ(sim.pending_count(), 0u);
}

TEST(WaitList, DestroyingTheListDetachesParkedWaiters) {
  Simulator sim;
  auto list = std::make_unique<WaitList>(sim.clock());
  std::vector<std::string> order;
  const ProcessId p = sim.add_process("p", [&](Simulator& s, ProcessId self) {
    s.spawn(self, park(*list, order, "orphan"), "orphan");
  });
  sim.boot(p);
  ASSERT_TRUE(sim.run_until(1).ok());
  list.reset();  // the waiter is never resumed...
  sim.crash(p);  // ...and its frame can still be destroyed safely
  EXPECT_TRUE(order.empty());
}

TEST(ClockWake, SimClockWakesBehindEventsAlreadyDueAndCanBeCancelled) {
  Simulator sim;
  const ProcessId p = sim.add_process("p", [](Simulator&, ProcessId) {});
  sim.boot(p);
  WaitList list(sim.clock());
  std::vector<std::string> order;
  sim.spawn(p, park(list, order, "waiter"), "waiter");
  sim.schedule_call_for(p, 7, [&] {
    sim.schedule_call_for(kWorld, 7, [&] { order.push_back("already due"); });
    list.notify_all();
  });
  ASSERT_TRUE(sim.run().ok());
  EXPECT_EQ(order, (std::vector<std::string>{"already due", "waiter"}));

  // cancel_wake: true while pending, false afterwards and for 0.
  const Clock::WakeId id = sim.clock().schedule_wake(std::noop_coroutine());
  EXPECT_NE(id, 0u);
  EXPECT_TRUE(sim.clock().cancel_wake(id));
  EXPECT_FALSE(sim.clock().cancel_wake(id));
  EXPECT_FALSE(sim.clock().cancel_wake(0));
}

// Schedules the wake, then at once a sentinel timer due at the clock's
// reading taken after it. SystemClock::now() never goes backwards and the
// driver orders timers by (due, id), the sentinel's id being the larger: a
// wake due "now" is resumed first whatever the machine's speed, while a wake
// due any later than the sentinel's reading (a sleep instead of a wake) lets
// the sentinel (a no-op) run first.
struct WakeThenSentinel {
  RealDriver& driver;
  Clock::WakeId& id;
  RealDriver::TimerId& sentinel;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> handle) {
    id = driver.clock().schedule_wake(handle);
    sentinel = driver.add_timer(driver.clock().now(), std::noop_coroutine());
  }
  void await_resume() const noexcept {}
};

Task<int> wake_once(RealDriver& driver, Clock::WakeId& id, RealDriver::TimerId& sentinel) {
  WakeThenSentinel wake{driver, id, sentinel};
  co_await wake;
  co_return 42;
}

TEST(ClockWake, RealDriverResumesAWakeFromItsLoop) {
  RealDriver driver;
  Clock::WakeId id = 0;
  RealDriver::TimerId sentinel = 0;
  const Result<int> r = driver.run(wake_once(driver, id, sentinel));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, 42);
  EXPECT_NE(id, 0u);
  // Due at once: the wake ran before a timer registered after it at the same
  // or a later reading of the clock, which is still pending. (This replaces a
  // bound on the wall-clock time the run took, which a slow machine could break.)
  EXPECT_EQ(driver.timer_count(), 1u);
  EXPECT_TRUE(driver.cancel_timer(sentinel)) << "the sentinel ran before the wake";
  EXPECT_EQ(driver.timer_count(), 0u);
  EXPECT_FALSE(driver.clock().cancel_wake(id));  // already delivered
}

}  // namespace
}  // namespace rehearse::sim
