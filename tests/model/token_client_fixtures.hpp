// Shared fixtures of the token client tests (tests/model/test_token_*.cpp):
// a simulated world with a brokerage and a worker whose memory holds the
// TokenClient, the request helpers, and the trace readers that judge it as an
// independent witness. Inline: every test file of the binary includes it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/token_client.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"
#include "sim/world/sim_log.hpp"
#include "sim/world/sim_services.hpp"

namespace rehearse::sim::token_test {

inline TimeMs instant(std::string_view iso) { return parse_instant(iso).value(); }
inline const TimeMs kStart = instant("2026-11-30T00:00:00Z");

inline ServiceRequest quote_request(const std::string& id, const std::string& operation = "quote") {
  ServiceRequest request;
  request.service = kBrokerageName;
  request.operation = operation;
  request.target = "ACME";
  request.headers[kHeaderJob] = "quote-fetch";
  request.headers[kHeaderRequestId] = id;
  return request;
}

// Coroutines take what they use as parameters (see docs/simulator.md).
// Coroutines of the fixtures are defined in token_client_fixtures.cpp, not inline here:
// clang 14 under ASan cannot emit a coroutine with vague (inline) linkage
// ("Cannot represent a difference across sections").
Task<void> send_request(TokenClient& client, ServiceRequest request,
                        std::optional<ServiceResult>& out);

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

inline std::vector<const TraceEvent*> events(const Trace& trace, std::string_view type,
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
inline std::size_t issuances(const Trace& trace, std::string_view reason) {
  return events(trace, "token_issued", reason).size() +
         events(trace, "token_issue_failed", reason).size();
}

// Every token value the brokerage ever issued is absent from the trace and
// from the log text.
inline ::testing::AssertionResult no_token_leaked(const World& world) {
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

}  // namespace rehearse::sim::token_test
