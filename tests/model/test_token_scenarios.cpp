// Goal: the token client in use: a revocation mid-day recovers without a
// restart (where the original client, kept here as a test double, fails until
// restart); FetchJob shares one issuance and one reissue among its requests and
// fails with the class of the first failure; a run is the same for every seed;
// and, under random scripts of revocations and faults, no request ever
// reissues twice.
// Method: the real TokenClient and FetchJob on the simulated world
// (token_client_fixtures.hpp), judged by the trace as an independent witness,
// plus a RapidCheck property over generated fault scripts whose rule checker is
// itself shown catching hand-made violations.
#include "model/token_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/fetch_job.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"
#include "tests/model/token_client_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim::token_test {
namespace {

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

}  // namespace
}  // namespace rehearse::sim::token_test
