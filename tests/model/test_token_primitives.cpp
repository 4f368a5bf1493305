// Goal: the parts the token client stands on: the simulated brokerage issues
// opaque tokens, judges each one and applies its faults inside their window,
// rate and hit limit; the WaitList primitive hands waiters to the executor in
// order, never inline, and survives crashes and destroyed frames; the Clock
// wake-up capability wakes behind events already due, on the simulated clock
// and on the real driver.
// Method: each part driven directly on a Simulator (or the RealDriver loop),
// judged by the replies, the trace and the order of executed events.
#include "model/token_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/real_driver.hpp"
#include "model/system_clock.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/model/token_client_fixtures.hpp"

namespace rehearse::sim::token_test {
namespace {

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
}  // namespace rehearse::sim::token_test
