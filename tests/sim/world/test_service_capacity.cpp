// Goal: a service's capacity behaves as sim/world/service_capacity.hpp says
// (a token bucket refilled exactly, refusals that cost no token and carry
// their Retry-After, a line for the servers whose wait the caller sees or
// times out on, a capacity fault lowering the rate for its window), and the
// loader refuses what cannot be meant (a rate of 0, a window of 0, a capacity
// with no limit, a lowered rate on a service that declares none or is not
// declared) at the exact pointer.
// Method: the gate driven by hand at chosen instants; GenericService through
// its handle(); the loader on the shared fixture with one mutation each.
#include <gtest/gtest.h>

#include "sim/kernel/rng.hpp"
#include "sim/world/generic_service.hpp"
#include "sim/world/service_capacity.hpp"
#include "tests/sim/world/scenario_loader_fixtures.hpp"

namespace rehearse::sim {
namespace {

using loader_test::check;
using loader_test::has_error;
using loader_test::set;

ServiceCapacity rate_limit(std::int64_t rate, DurationMs per, std::int64_t burst = 0) {
  ServiceCapacity c;
  c.rate = rate;
  c.per_ms = per;
  c.burst = burst;
  return c;
}

TEST(ServiceCapacity, TheBucketAdmitsItsBurstThenItsRate) {
  CapacityGate gate(rate_limit(2, kSecondMs));
  EXPECT_FALSE(gate.admit(0, 0).refused);
  EXPECT_FALSE(gate.admit(0, 0).refused);
  EXPECT_TRUE(gate.admit(0, 0).refused) << "a burst of 2";
  EXPECT_TRUE(gate.admit(499, 0).refused) << "0.998 of a token";
  EXPECT_FALSE(gate.admit(500, 0).refused) << "2 per second: one token every 500 ms";
  EXPECT_TRUE(gate.admit(500, 0).refused) << "a refusal costs no token, and none is left";
  EXPECT_FALSE(gate.admit(10 * kMinuteMs, 0).refused);
  EXPECT_FALSE(gate.admit(10 * kMinuteMs, 0).refused);
  EXPECT_TRUE(gate.admit(10 * kMinuteMs, 0).refused) << "an idle spell fills the bucket, no more";
}

TEST(ServiceCapacity, RetryAfterIsFixedOrUntilTheNextToken) {
  ServiceCapacity fixed = rate_limit(1, kMinuteMs);
  fixed.retry_after = ServiceCapacity::RetryAfter::fixed;
  fixed.retry_after_ms = 30 * kSecondMs;
  CapacityGate a(fixed);
  EXPECT_EQ(a.admit(0, 0).retry_after_ms, 0);
  EXPECT_EQ(a.admit(0, 0).retry_after_ms, 30 * kSecondMs);
  ServiceCapacity next = rate_limit(1, kMinuteMs);
  next.retry_after = ServiceCapacity::RetryAfter::next_token;
  CapacityGate b(next);
  EXPECT_FALSE(b.admit(0, 0).refused);
  EXPECT_EQ(b.admit(20 * kSecondMs, 0).retry_after_ms, 40 * kSecondMs);
  EXPECT_EQ(b.admit(59'500, 0).retry_after_ms, kSecondMs) << "whole seconds, at least one";
  CapacityGate none(rate_limit(1, kMinuteMs));
  EXPECT_FALSE(none.admit(0, 0).refused);
  EXPECT_EQ(none.admit(0, 0).retry_after_ms, 0) << "no Retry-After declared";
}

TEST(ServiceCapacity, ConcurrencyQueuesInArrivalOrder) {
  ServiceCapacity c;
  c.concurrency = 2;
  CapacityGate gate(c);
  EXPECT_EQ(gate.admit(0, 1000).wait_ms, 0);
  EXPECT_EQ(gate.admit(0, 1000).wait_ms, 0);
  EXPECT_EQ(gate.admit(0, 1000).wait_ms, 1000);
  EXPECT_EQ(gate.admit(100, 1000).wait_ms, 900);
  EXPECT_EQ(gate.admit(5000, 1000).wait_ms, 0) << "the line drained";
}

TEST(ServiceCapacity, ACapacityDropLowersTheRateForItsWindow) {
  CapacityGate gate(rate_limit(10, kSecondMs));
  gate.add_drop(CapacityDrop{kMinuteMs, 2 * kMinuteMs, 1});
  EXPECT_EQ(gate.rate_at(0), 10);
  EXPECT_EQ(gate.rate_at(kMinuteMs), 1);
  EXPECT_EQ(gate.rate_at(2 * kMinuteMs), 10);
  EXPECT_FALSE(gate.admit(kMinuteMs, 0).refused);
  EXPECT_TRUE(gate.admit(kMinuteMs, 0).refused) << "the bucket holds one token while lowered";
  EXPECT_FALSE(gate.admit(kMinuteMs + kSecondMs, 0).refused);
}

TEST(ServiceCapacity, TheServiceRefusesWithItsStatusAndHeaderOrTimesOut) {
  ServiceCapacity c = rate_limit(1, kMinuteMs);
  c.status = 503;
  c.retry_after = ServiceCapacity::RetryAfter::fixed;
  c.retry_after_ms = 90 * kSecondMs;
  GenericService api("billing-api", Rng(1), GenericServiceOptions{100, 30 * kSecondMs, c});
  ServiceRequest request;
  request.service = "billing-api";
  EXPECT_TRUE(api.handle(request, 0).result.is_success());
  const SimReply refused = api.handle(request, 0);
  ASSERT_TRUE(refused.result.has_response());
  EXPECT_EQ(refused.result.response().status, 503);
  EXPECT_EQ(refused.result.response().headers.at("retry-after"), "90");

  ServiceCapacity one;
  one.concurrency = 1;
  GenericService slow("slow-api", Rng(1),
                      GenericServiceOptions{20 * kSecondMs, 30 * kSecondMs, one});
  request.service = "slow-api";
  EXPECT_EQ(slow.handle(request, 0).latency_ms, 20 * kSecondMs);
  const SimReply late = slow.handle(request, 0);
  ASSERT_FALSE(late.result.has_response()) << "40 s in line and service: past the 30 s timeout";
  EXPECT_EQ(late.result.transport_error().kind, TransportErrorKind::timeout);
  EXPECT_EQ(late.latency_ms, 30 * kSecondMs);
}

TEST(ServiceCapacity, TheLoaderReadsACapacity) {
  auto doc = loader_test::base_scenario();
  set(doc, "/services/billing-api/capacity",
      {{"rate", 100},
       {"per", "1m"},
       {"burst", 20},
       {"concurrency", 4},
       {"status", 503},
       {"retry_after", "auto"}});
  const auto c = check(doc);
  ASSERT_TRUE(c.errors.empty()) << loader_test::all_errors(c);
  const ServiceCapacity& got = *c.scenario->services.user.at("billing-api").capacity;
  EXPECT_EQ(got.rate, 100);
  EXPECT_EQ(got.per_ms, kMinuteMs);
  EXPECT_EQ(got.burst, 20);
  EXPECT_EQ(got.concurrency, 4);
  EXPECT_EQ(got.status, 503);
  EXPECT_EQ(got.retry_after, ServiceCapacity::RetryAfter::next_token);
}

TEST(ServiceCapacity, TheLoaderRefusesWhatCannotBeMeant) {
  const std::string at = "/services/billing-api/capacity";
  struct Case {
    nlohmann::json capacity;
    std::string pointer;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{{"rate", 0}}, at + "/rate", "from 1 to"},
      {{{"rate", -5}}, at + "/rate", "from 1 to"},
      {{{"rate", 10}, {"per", 0}}, at + "/per", "positive duration"},
      {{{"rate", 10}, {"per", "0s"}}, at + "/per", "positive duration"},
      {{{"concurrency", 0}}, at + "/concurrency", "from 1 to"},
      {nlohmann::json::object(), at, "needs \"rate\""},
      {{{"concurrency", 2}, {"burst", 5}}, at + "/burst", "no \"rate\""},
      {{{"rate", 1}, {"status", 500}}, at + "/status", "429 or 503"},
      {{{"rate", 1}, {"retry_after", "1500ms"}}, at + "/retry_after", "whole seconds"},
      {{{"rate", 1}, {"limit", 3}}, at + "/limit", "unknown key"},
  };
  for (const Case& k : cases) {
    auto doc = loader_test::base_scenario();
    set(doc, at.c_str(), k.capacity);
    EXPECT_TRUE(has_error(check(doc), k.pointer, k.fragment)) << k.capacity.dump();
  }
}

TEST(ServiceCapacity, ACapacityFaultNeedsADeclaredRateLimit) {
  auto doc = loader_test::base_scenario();
  doc["faults"].push_back({{"at", "+1h"},
                           {"for", "10m"},
                           {"kind", "capacity"},
                           {"service", "billing-api"},
                           {"share", 0.1}});
  const std::string pointer = "/faults/" + std::to_string(doc["faults"].size() - 1) + "/service";
  EXPECT_TRUE(has_error(check(doc), pointer, "declares no rate limit"));
  doc["faults"].back()["service"] = "ledger-api";
  EXPECT_TRUE(has_error(check(doc), pointer, "not declared in /services"));
  set(doc, "/services/billing-api/capacity", {{"rate", 100}, {"per", "1m"}});
  doc["faults"].back()["service"] = "billing-api";
  const auto ok = check(doc);
  EXPECT_TRUE(ok.errors.empty()) << loader_test::all_errors(ok);
  doc["faults"].back()["share"] = 2;
  EXPECT_TRUE(has_error(
      check(doc), "/faults/" + std::to_string(doc["faults"].size() - 1) + "/share", "from 0 to 1"));
}

}  // namespace
}  // namespace rehearse::sim
