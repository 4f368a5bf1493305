// Goal: the windows inferred from observed calls are the narrowest that
// replay every call as it went, carry the calls that bound their edges, and
// every case the calls cannot settle is reported.
// Method: hand-written call sequences, each checked against windows and
// bounds derived by hand from the rule in sim/import/fault_windows.hpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/import/fault_windows.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::sim;

constexpr TimeMs kMin = 60'000;

CallObservation call(const std::string& service, TimeMs at, int status, TimeMs took = 100) {
  CallObservation c;
  c.service = service;
  c.start_ms = at;
  c.end_ms = at + took;
  c.status = status;
  c.outcome = status < 400 ? CallOutcome::success : CallOutcome::http_error;
  c.where = service + "@" + std::to_string(at);
  return c;
}

CallObservation timeout(const std::string& service, TimeMs at) {
  CallObservation c = call(service, at, 0);
  c.outcome = CallOutcome::timeout;
  return c;
}

TEST(FaultWindows, OneOutageClosedByASuccess) {
  const auto got =
      infer_fault_windows({call("ledger", 0, 200), call("ledger", 10 * kMin, 503),
                           call("ledger", 15 * kMin, 503), call("ledger", 20 * kMin, 200)});
  ASSERT_EQ(got.windows.size(), 1u);
  const InferredWindow& w = got.windows[0];
  EXPECT_EQ(w.service, "ledger");
  EXPECT_EQ(w.failure.status, 503);
  // Each edge in the middle of its bounds: (0, 10 min] and (15 min, 20 min].
  EXPECT_EQ(w.from_ms, 5 * kMin);
  ASSERT_TRUE(w.until_ms.has_value());
  EXPECT_EQ(*w.until_ms, 17 * kMin + 30'000);
  EXPECT_EQ(w.evidence.failures, 2);
  EXPECT_EQ(w.evidence.start_after_ms, std::optional<TimeMs>(0));
  EXPECT_EQ(w.evidence.last_failure_ms, 15 * kMin);
  EXPECT_EQ(w.evidence.end_by, "ok");
  EXPECT_EQ(w.evidence.end_by_where, "ledger@1200000");
  EXPECT_TRUE(got.ambiguities.empty());
  EXPECT_EQ(got.calls, 4);
}

TEST(FaultWindows, ServicesAreJudgedApartAndCallsSortedByStart) {
  // Given out of order: the fold sorts by start within each service.
  const auto got = infer_fault_windows({call("b", 5 * kMin, 200), call("a", 3 * kMin, 429),
                                        call("b", 1 * kMin, 500), call("a", 4 * kMin, 200)});
  ASSERT_EQ(got.windows.size(), 2u);
  EXPECT_EQ(got.windows[0].service, "a");
  EXPECT_EQ(got.windows[0].from_ms, 3 * kMin);  // no call before: the first failure
  EXPECT_EQ(*got.windows[0].until_ms, 3 * kMin + 30'000);
  EXPECT_FALSE(got.windows[0].evidence.start_after_ms.has_value());  // no call before it
  EXPECT_EQ(got.windows[1].service, "b");
  EXPECT_EQ(got.windows[1].failure.status, 500);
  EXPECT_EQ(got.windows[1].from_ms, 1 * kMin);
  EXPECT_EQ(*got.windows[1].until_ms, 3 * kMin);
}

TEST(FaultWindows, ASignatureChangeClosesOneWindowAndOpensTheNext) {
  const auto got =
      infer_fault_windows({call("m", 0, 503), timeout("m", kMin), call("m", 2 * kMin, 200)});
  ASSERT_EQ(got.windows.size(), 2u);
  EXPECT_EQ(*got.windows[0].until_ms, 30'000);
  EXPECT_EQ(got.windows[0].evidence.end_by, "timeout");
  EXPECT_EQ(got.windows[1].from_ms, 30'000);  // the same edge: one window ends, the next begins
  EXPECT_EQ(got.windows[1].failure.outcome, CallOutcome::timeout);
  EXPECT_EQ(got.windows[1].evidence.start_after_ms, std::optional<TimeMs>(0));
  EXPECT_TRUE(got.ambiguities.empty());
}

TEST(FaultWindows, AWindowNoCallClosedIsReportedAndLastsToTheEnd) {
  const auto got = infer_fault_windows({call("x", 0, 200), call("x", kMin, 502)});
  ASSERT_EQ(got.windows.size(), 1u);
  EXPECT_FALSE(got.windows[0].until_ms.has_value());
  ASSERT_EQ(got.ambiguities.size(), 1u);
  EXPECT_NE(got.ambiguities[0].what.find("may have lasted past the evidence"), std::string::npos);
  EXPECT_EQ(got.ambiguities[0].where, "x@60000");
}

TEST(FaultWindows, AlternatingStatusesWithNoSuccessBetweenAreAmbiguous) {
  const auto got = infer_fault_windows({call("x", 0, 503), call("x", kMin, 429),
                                        call("x", 2 * kMin, 503), call("x", 3 * kMin, 200)});
  EXPECT_EQ(got.windows.size(), 3u);
  ASSERT_EQ(got.ambiguities.size(), 1u);
  EXPECT_NE(got.ambiguities[0].what.find("alternate (503, 429, 503)"), std::string::npos);
  EXPECT_EQ(got.ambiguities[0].at_ms, 2 * kMin);
}

TEST(FaultWindows, ASuccessBetweenResetsTheAlternation) {
  const auto got = infer_fault_windows({call("x", 0, 503), call("x", kMin, 200),
                                        call("x", 2 * kMin, 429), call("x", 3 * kMin, 200),
                                        call("x", 4 * kMin, 503), call("x", 5 * kMin, 200)});
  EXPECT_EQ(got.windows.size(), 3u);
  EXPECT_TRUE(got.ambiguities.empty());
}

TEST(FaultWindows, OverlappingCallsThatDisagreeAreAmbiguous) {
  // A 30 s call that succeeded while a call started inside it failed.
  const auto got = infer_fault_windows(
      {call("x", 0, 200, 30'000), call("x", 10'000, 503), call("x", kMin, 200)});
  ASSERT_EQ(got.ambiguities.size(), 1u);
  EXPECT_NE(got.ambiguities[0].what.find("in flight together disagree"), std::string::npos);
  EXPECT_EQ(got.ambiguities[0].guess, "ordered by their start");
  ASSERT_EQ(got.windows.size(), 1u);  // still inferred: the guess is stated
  EXPECT_EQ(got.windows[0].from_ms, 5'000);
}

TEST(FaultWindows, NoCallsNoWindows) {
  const auto got = infer_fault_windows({});
  EXPECT_TRUE(got.windows.empty());
  EXPECT_TRUE(got.ambiguities.empty());
  EXPECT_EQ(got.calls, 0);
}

}  // namespace
