// Goal: no_duplicate_delivery fires on a second delivery without a crash, a
// completed or held slot asking the model again, a failed run setting the
// guard; a crash inside the at-least-once window allows one duplicate,
// reported.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(NoDuplicateDelivery, FiresOnASecondDeliveryWithoutACrash) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add_event(delivered("2026-03-02T10:01:00Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:01:00Z", "hourly", slot, ledger({"team-chat"}));
  const auto bad = s.add_event(delivered("2026-03-02T10:06:00Z", slot, "team-chat"));
  expect_first(run(s, base_scenario()), "no_duplicate_delivery", bad);
}

TEST(NoDuplicateDelivery, NearMissCrashInsideTheWindowAllowsOneAndReportsIt) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  s.add_event(delivered("2026-03-02T10:01:00Z", slot, "team-chat"));
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add_event(delivered("2026-03-02T10:02:00Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:02:00Z", "hourly", slot, ledger({"team-chat"}));
  // Failure notices may repeat on every retry, by design.
  s.add_event(
      delivered("2026-03-02T10:00:30Z", "2026-03-02T11:00:00Z", "team-chat", "failure_notice"));
  s.add_event(
      delivered("2026-03-02T10:05:30Z", "2026-03-02T11:00:00Z", "team-chat", "failure_notice"));
  const Outcome o = run(s, only({}), at("2026-03-02T10:03:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["duplicate_deliveries_in_window"], 1);
  EXPECT_EQ(o.tallies["failure_notices"], 2);
  // The window allows one more delivery per crash, not two.
  Script more = s;
  const auto bad = more.add_event(delivered("2026-03-02T10:03:00Z", slot, "team-chat"));
  expect_first(run(more, base_scenario()), "no_duplicate_delivery", bad);
}

// A slot the ledger marks complete is never re-entered, and a retry of a slot
// whose decided delivery the ledger holds resends it: neither asks the model
// API for the slot again (docs/group-jobs.md).
Script model_call_after(const json& ledger_facts, const char* call_slot) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger_facts);
  TraceEvent call;
  call.t = at("2026-03-02T10:05:00Z");
  call.type = "service_call";
  call.service = "model-api";
  call.job = "hourly";
  call.slot = at(call_slot);
  call.data = {{"operation", "generate"}, {"request_id", "hourly/x"}};
  s.add_event(std::move(call));
  return s;
}

TEST(NoDuplicateDelivery, FiresWhenACompletedOrHeldSlotAsksTheModelAgain) {
  const char* slot = "2026-03-02T10:00:00Z";
  const Script marked = model_call_after(ledger({"team-chat"}, true, "delivered"), slot);
  EXPECT_TRUE(fired(run(marked, group_hourly()), "no_duplicate_delivery", "marks it complete"));
  json held_facts = ledger({}, false);
  held_facts["outbox"] = true;
  const Script held = model_call_after(held_facts, slot);
  EXPECT_TRUE(fired(run(held, group_hourly()), "no_duplicate_delivery", "stored outbox"));
  // Another slot's call, and a slot whose ledger holds neither: quiet.
  const Script other =
      model_call_after(ledger({"team-chat"}, true, "delivered"), "2026-03-02T11:00:00Z");
  EXPECT_FALSE(fired(run(other, group_hourly()), "no_duplicate_delivery", ""));
  const Script open = model_call_after(ledger({}, false), slot);
  EXPECT_FALSE(fired(run(open, group_hourly()), "no_duplicate_delivery", ""));
}

TEST(NoDuplicateDelivery, FiresWhenAFailedRunSetTheGuard) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  run_start(s, "2026-03-02T10:00:00Z", "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger({}, true));
  const auto bad = run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
                           {{"kind", "regular"},
                            {"attempt", 1},
                            {"outcome", "failure"},
                            {"failure_class", "rate_limit"}});
  expect_first(run(s, base_scenario()), "no_duplicate_delivery", bad);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
