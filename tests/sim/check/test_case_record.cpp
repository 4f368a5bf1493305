// A check case record survives JSON Lines: to_json then case_record_from_json
// gives it back, and a malformed line is refused naming the key.
#include "sim/check/case_record.hpp"

#include <gtest/gtest.h>

namespace rehearse::sim {
namespace {

CaseRecord failing_case() {
  CaseRecord r;
  r.scenario = "restart-mid-run";
  r.path = "scenarios/restart-mid-run.json";
  r.seed = 18446744073709551615ULL;
  r.verdict = CaseVerdict::fail;
  r.violations = {"retries_bounded", "nothing_lost"};
  r.message = "job a: 5 retries, budget 3";
  r.replay = "rehearse check scenarios/restart-mid-run.json --seeds 1 --first-seed 7";
  r.shrunk = "shrunk/restart-mid-run-seed7.json";
  r.trace_hash = "0123456789abcdef";
  r.events = 1234;
  return r;
}

TEST(CaseRecord, RoundTripsThroughJsonText) {
  const CaseRecord r = failing_case();
  const auto back = case_record_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(*back, r);
}

TEST(CaseRecord, EveryVerdictHasItsName) {
  EXPECT_STREQ(to_string(CaseVerdict::pass), "pass");
  EXPECT_STREQ(to_string(CaseVerdict::fail), "fail");
  EXPECT_STREQ(to_string(CaseVerdict::error), "error");
}

TEST(CaseRecord, RefusalsNameTheKey) {
  for (const char* key : {"scenario", "seed", "verdict", "violations", "events", "replay"}) {
    nlohmann::json j = to_json(failing_case());
    j[key] = nlohmann::json::object();
    const auto back = case_record_from_json(j);
    ASSERT_FALSE(back.ok()) << key;
    EXPECT_EQ(back.error().where, std::string("/") + key);
  }
  nlohmann::json j = to_json(failing_case());
  j["verdict"] = "maybe";
  EXPECT_FALSE(case_record_from_json(j).ok());
  EXPECT_FALSE(case_record_from_json(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace rehearse::sim
