// Goal: nothing_lost fires when a failure, a retry, a recovery or an item
// leaves no report where the semantics owe one (store damage included), and
// stays quiet on the near misses the semantics allow.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

// An item entering DESIGN_FAILED must say why (docs/semantics.md §8): the
// durable pipeline file's reconcile error. Without one it failed silently.
TEST(NothingLost, FiresWhenAnItemEntersDesignFailedWithoutAReason) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-2", {{"stage", "BUILDING"}, {"error", ""}});
  const auto bad = s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
                          {{"stage", "DESIGN_FAILED"}, {"error", ""}});
  expect_first(run(s, base_scenario()), "nothing_lost", bad);
}

TEST(NothingLost, NearMissAnItemEntersDesignFailedWithItsReason) {
  Script s;
  s.item("durable_stage", "2026-03-02T10:00:00Z", "ISS-2", {{"stage", "BUILDING"}, {"error", ""}});
  s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found in the orchestrator"}});
  // Written again later (another item's change rewrites the file): still its reason.
  s.item("durable_stage", "2026-03-02T10:20:00Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 not found in the orchestrator"}});
  expect_clean(run(s, base_scenario(), at("2026-03-02T10:30:00Z")));
}

// An unreachable agent list fails the run after the items were visited: a
// row saying ok swallowed it. A list answered 200 at last (a second cycle's
// answer) is no failure.
TEST(NothingLost, FiresWhenAReconcileRunSwallowsAnUnreachableAgentList) {
  const Outcome o = run(reconcile_run({503}, "ok"), reconcile_retried());
  EXPECT_TRUE(fired(o, "nothing_lost", "a swallowed failure")) << describe(o.seen);
  for (const std::vector<int>& statuses : {std::vector<int>{200}, std::vector<int>{503, 200}}) {
    const Outcome near = run(reconcile_run(statuses, "ok"), reconcile_retried());
    EXPECT_FALSE(fired(near, "nothing_lost", "a swallowed failure")) << describe(near.seen);
  }
}

// ------------------------------------------------------------ 4 nothing_lost

// A run's finish is one queue operation: its queue_done says how many
// entries it adds and messages it commits, then come those adds and those
// messages. A retry queued without its retry_scheduled message in the same
// finish is a retry nobody is told of (004's hidden retry).
Script finish_with(int outbox, const std::vector<std::string>& events) {
  Script s;
  s.add("queue_intent", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 1}, {"kind", "regular"}, {"attempt", 1}});
  s.add("queue_done", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 1}, {"kind", "regular"}, {"attempt", 1}, {"adds", 1}, {"outbox", outbox}});
  s.add("queue_add", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", 2},
         {"kind", "retry"},
         {"attempt", 2},
         {"added", true},
         {"ready_at", "2026-03-02T10:20:00Z"}});
  for (const std::string& event : events) {
    note(s, event, "slotty", "2026-03-02T10:15:00Z", "2026-03-02T10:15:00Z", 1, "provider_5xx");
  }
  return s;
}

TEST(NothingLost, FiresWhenAFinishQueuesARetryWithoutItsNotice) {
  const Script other = finish_with(1, {"recovered"});
  EXPECT_TRUE(fired(run(other, base_scenario()), "nothing_lost", "without a retry_scheduled"));
  const Script none = finish_with(0, {});
  EXPECT_TRUE(fired(run(none, base_scenario()), "nothing_lost", "without a retry_scheduled"));
}

TEST(NothingLost, NearMissARetryAnnouncedToTwoTargetsInItsFinish) {
  const Outcome o = run(finish_with(2, {"retry_scheduled", "retry_scheduled"}), base_scenario());
  EXPECT_FALSE(fired(o, "nothing_lost", "")) << describe(o.seen);
}

// A regular entry leaves the queue only after its run's intent: one finished
// with none was dropped, not run. A retry may be dropped so (the state no
// longer backs it).
TEST(NothingLost, FiresWhenARegularEntryLeavesTheQueueWithNoIntent) {
  Script s;
  handout(s, "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
          {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(s, "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z", {{"kind", "regular"}});
  s.add("queue_done", "2026-03-02T10:15:00Z", "slotty", "2026-03-02T10:15:00Z",
        {{"id", s.run_of("slotty")}, {"kind", "regular"}, {"attempt", 1}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(fired(o, "nothing_lost", "with no intent")) << describe(o.seen);
  Script retry;
  run_start(retry, "2026-03-02T10:20:00Z", "slotty", "2026-03-02T10:15:00Z",
            {{"kind", "retry"}, {"attempt", 2}});
  retry.add("queue_done", "2026-03-02T10:20:00Z", "slotty", "2026-03-02T10:15:00Z",
            {{"id", retry.run_of("slotty")}, {"kind", "retry"}, {"attempt", 2}});
  EXPECT_FALSE(fired(run(retry, base_scenario()), "nothing_lost", "with no intent"));
}

// A job whose policy is invalid fails closed visibly: once its state is
// durable the row records the policy error and the outbox received
// policy_invalid (004: reveal the omission). "broken" has no policy.
Script broken_row(bool in_state, bool noticed) {
  Script s;
  s.add("durable_job_state", "2026-03-02T09:30:00Z", "broken", std::nullopt,
        {{"retry_status", "ok"}, {"policy_invalid", in_state}, {"slots", json::object()}});
  if (noticed) {
    note(s, "policy_invalid", "broken", nullptr, "2026-03-02T09:30:00Z", 0, "config");
  }
  return s;
}

TEST(NothingLost, FiresAtTheEndWhenAnInvalidPolicyIsNotShown) {
  EXPECT_TRUE(fired(run(broken_row(false, true), base_scenario()), "nothing_lost",
                    "never recorded the policy error"));
  EXPECT_TRUE(fired(run(broken_row(true, false), base_scenario()), "nothing_lost",
                    "no policy_invalid notice"));
  EXPECT_FALSE(fired(run(broken_row(true, true), base_scenario()), "nothing_lost", ""));
}

// A fetch or call run whose own request's last answer failed has failed: its
// row saying ok swallows the failure. A 401 answered again with 200 (the
// reissue's resend) is no failure.
TEST(NothingLost, FiresWhenAFetchRunWithAFailedRequestReportsSuccess) {
  const char* slot = "2026-03-02T10:15:00Z";
  Script s;
  handout(s, slot, "slotty", slot, {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(s, slot, "slotty", slot, {{"kind", "regular"}});
  failed_reply(s, slot, "slotty", slot, "provider_5xx");
  run_end(s, slot, "slotty", slot, {{"kind", "regular"}, {"outcome", "success"}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(fired(o, "nothing_lost", "a swallowed failure")) << describe(o.seen);
  Script resent;
  handout(resent, slot, "slotty", slot, {{"next_run_at", "2026-03-02T11:15:00Z"}});
  run_start(resent, slot, "slotty", slot, {{"kind", "regular"}});
  resent.add("service_reply", slot, "slotty", slot,
             {{"request_id", "slotty/r0"}, {"operation", "GET"}, {"status", 401}});
  resent.add("service_reply", slot, "slotty", slot,
             {{"request_id", "slotty/r0"}, {"operation", "GET"}, {"status", 200}});
  run_end(resent, slot, "slotty", slot, {{"kind", "regular"}, {"outcome", "success"}});
  EXPECT_FALSE(fired(run(resent, base_scenario()), "nothing_lost", "a swallowed failure"));
}

// A sequential fetch run stops at its first failed request (docs/token-client.md
// "FetchJob"): request r1 of slotty's run goes out after r0 was refused with a
// 403. The closest legal runs: r0 recovers from a 401 (the issuance led by r0
// answered, r0 sent again and answered 200) before r1 goes out; and the same
// 403 in a parallel fetch job, whose requests do not wait for each other.
Script sequential_run(bool recovered) {
  const char* slot = "2026-03-02T10:30:00Z";
  const std::string prefix = "slotty/2026-03-02T10:30:00Z/a1/";
  Script s;
  const auto request = [&](const char* type, const char* t, const std::string& rid, json data) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.job = "slotty";
    e.slot = at(slot);
    e.service = "brokerage";
    data["request_id"] = prefix + rid;
    e.data = std::move(data);
    return s.add_event(std::move(e));
  };
  run_start(s, slot, "slotty", slot, {{"kind", "regular"}});
  request("service_call", "2026-03-02T10:30:00Z", "r0", {{"operation", "quote"}});
  request("service_reply", "2026-03-02T10:30:00.100Z", "r0",
          {{"operation", "quote"}, {"status", recovered ? 401 : 403}});
  if (recovered) {
    request("service_call", "2026-03-02T10:30:00.100Z", "r0", {{"operation", "issue_token"}});
    request("service_reply", "2026-03-02T10:30:00.200Z", "r0",
            {{"operation", "issue_token"}, {"status", 200}});
    request("service_call", "2026-03-02T10:30:00.200Z", "r0", {{"operation", "quote"}});
    request("service_reply", "2026-03-02T10:30:00.300Z", "r0",
            {{"operation", "quote"}, {"status", 200}});
  }
  request("service_call", "2026-03-02T10:30:00.300Z", "r1", {{"operation", "positions"}});
  return s;
}

TEST(NothingLost, FiresWhenASequentialFetchRunGoesOnAfterAFailedRequest) {
  const Script s = sequential_run(false);
  const Outcome o = run(s, base_scenario());
  expect_first(o, "nothing_lost", s.events().size() - 1);
  EXPECT_TRUE(fired(o, "nothing_lost", "a sequential run stops at its first failed request"))
      << describe(o.seen);
  EXPECT_TRUE(fired(o, "nothing_lost", "status 403")) << describe(o.seen);
  // A call job stops at its first failed call the same way.
  Scenario calls = base_scenario();
  for (JobSpec& j : calls.jobs) j.kind = j.id == "slotty" ? JobKind::call : j.kind;
  const Outcome call = run(s, calls);
  expect_first(call, "nothing_lost", s.events().size() - 1);
  EXPECT_TRUE(fired(call, "nothing_lost", "call job slotty")) << describe(call.seen);
}

TEST(NothingLost, NearMissASequentialFetchRunGoesOnAfterARecovered401) {
  const std::string text = "a sequential run stops";
  const Outcome recovered = run(sequential_run(true), base_scenario());
  EXPECT_FALSE(fired(recovered, "nothing_lost", text)) << describe(recovered.seen);
  Scenario parallel = base_scenario();
  for (JobSpec& j : parallel.jobs) j.parallel = j.parallel || j.id == "slotty";
  const Outcome fan_out = run(sequential_run(false), parallel);
  EXPECT_FALSE(fired(fan_out, "nothing_lost", text)) << describe(fan_out.seen);
}

// Under per_slot each slot keeps its retries: a cancel drops one it was owed.
// "weekly" runs "auto" (per_slot); "hourly" is per_episode (the per-job form),
// where the next regular slot supersedes a pending retry.
TEST(NothingLost, FiresWhenAPerSlotRetryIsCancelled) {
  const auto cancel = [](Script& s, const std::string& job) {
    s.add("queue_cancel", "2026-03-02T18:00:00Z", job, "2026-03-02T17:00:00Z",
          {{"id", 9}, {"kind", "retry"}, {"attempt", 2}, {"ready_at", "2026-03-02T18:30:00Z"}});
  };
  Script per_slot;
  cancel(per_slot, "weekly");
  EXPECT_TRUE(fired(run(per_slot, base_scenario()), "nothing_lost", "per_slot budget"));
  Script per_episode;
  cancel(per_episode, "hourly");
  EXPECT_FALSE(fired(run(per_episode, base_scenario()), "nothing_lost", "per_slot budget"));
}

// A run a crash cut runs again once; a second stall of the same run fails it
// (BullMQ's maxStalledCount 1): the queue puts the entry back at most once.
TEST(NothingLost, FiresWhenARunStalledTwiceIsPutBackAgain) {
  const auto stall = [](Script& s, const char* t, int pid) {
    s.add("queue_take", t, "slotty", "2026-03-02T10:30:00Z",
          {{"id", 5}, {"kind", "regular"}, {"attempt", 1}, {"process", pid}, {"ready_at", t}});
    s.add("process_crash", t, {}, std::nullopt,
          {{"process", "worker"}, {"pid", pid}, {"cause", "restart"}});
    s.add("queue_requeue", t, "slotty", "2026-03-02T10:30:00Z",
          {{"id", 5}, {"kind", "regular"}, {"attempt", 1}});
  };
  Script once;
  stall(once, "2026-03-02T10:30:00Z", 1);
  EXPECT_FALSE(fired(run(once, base_scenario()), "nothing_lost", "stalled"));
  Script twice;
  stall(twice, "2026-03-02T10:30:00Z", 1);
  stall(twice, "2026-03-02T10:35:00Z", 2);
  EXPECT_TRUE(fired(run(twice, base_scenario()), "nothing_lost", "a run stalled twice fails"));
  // The stall count is the state store's: a boot that found the store damaged
  // cannot know the first stall, so the second counts as a first.
  Script blind;
  stall(blind, "2026-03-02T10:30:00Z", 1);
  blind.add("store_corrupt_injected", "2026-03-02T10:34:00Z", {}, std::nullopt,
            {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}});
  blind.add("process_boot", "2026-03-02T10:34:30Z", {}, std::nullopt,
            {{"process", "worker"}, {"pid", 2}, {"boots", 2}});
  stall(blind, "2026-03-02T10:35:00Z", 2);
  EXPECT_FALSE(fired(run(blind, base_scenario()), "nothing_lost", "stalled"));
}

TEST(NothingLost, FiresAtTheEndOnASwallowedFailure) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  handout(s, "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
          {{"next_run_at", "2026-03-02T11:30:00Z"}});
  run_start(s, "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  const auto failed = run_end(s, "2026-03-02T10:31:00Z", "slotty", "2026-03-02T10:30:00Z",
                              {{"kind", "regular"},
                               {"attempt", 1},
                               {"outcome", "failure"},
                               {"failure_class", "rate_limit"}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  ASSERT_FALSE(o.end.empty());
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "nothing_lost"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_EQ(it->event_index, failed);
  EXPECT_NE(it->message.find("slotty"), std::string::npos);
}

TEST(NothingLost, FiresWhenExhaustedBeforeTheBudgetIsSpent) {
  Script s;
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "rate_limit");
  retry_run(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:40:00Z", 2, "failure",
            "rate_limit");
  const auto bad = note(s, "retry_exhausted", "slotty", "2026-03-02T10:30:00Z",
                        "2026-03-02T10:40:00Z", 1, "rate_limit");
  expect_first(run(s, base_scenario()), "nothing_lost", bad);
}

// The class judged is the one the world saw fail the run, not the one the
// notification carries: a core that classed a 429 as auth (not retried)
// writes `auth` into its notice, and the world's 429 says rate_limit.
TEST(NothingLost, FiresWhenARetryableFailureIsDeclaredPermanent) {
  for (const char* notice_class : {"rate_limit", "auth"}) {
    Script s;
    regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
            "failure", "rate_limit");
    const auto bad = note(s, "failed_permanent", "hourly", "2026-03-02T10:00:00Z",
                          "2026-03-02T10:00:00Z", 0, notice_class);
    SCOPED_TRACE(notice_class);
    expect_first(run(s, base_scenario()), "nothing_lost", bad);
  }
}

// A failed episode that was announced and ends in success owes a
// `recovered` notification (docs/semantics.md §4), read from the messenger.
Script announced_failure_then_success(bool recovered) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "timeout");
  s.add(
      "message_delivered", slot, "hourly", slot,
      {{"kind", "notification"}, {"event", "retry_scheduled"}, {"attempt", 1}, {"target", "ops"}});
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  if (recovered) {
    s.add("message_delivered", "2026-03-02T10:05:00Z", "hourly", slot,
          {{"kind", "notification"}, {"event", "recovered"}, {"target", "ops"}});
  }
  return s;
}

Scenario hourly_with_messenger() {
  Scenario sc = only({"hourly"});
  sc.services.messenger = MessengerService{};
  return sc;
}

TEST(NothingLost, FiresAtTheEndWhenARecoveryIsNeverAnnounced) {
  const Outcome o = run(announced_failure_then_success(false), hourly_with_messenger(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  ASSERT_FALSE(o.end.empty());
  EXPECT_EQ(o.end.front().invariant, "nothing_lost") << describe(o.end);
  EXPECT_NE(o.end.front().message.find("recovered"), std::string::npos);
}

TEST(NothingLost, NearMissARecoveryAnnounced) {
  const Outcome o = run(announced_failure_then_success(true), hourly_with_messenger(),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(o.end.empty()) << describe(o.end);
}

TEST(NothingLost, NearMissRetryPendingAtTheEndIsInFlight) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", "2026-03-02T11:30:00Z",
          "failure", "rate_limit");
  note(s, "retry_scheduled", "slotty", "2026-03-02T10:30:00Z", "2026-03-02T10:30:00Z", 1,
       "rate_limit");
  const Outcome o = run(s, only({"slotty"}), at("2026-03-02T10:35:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["slotty"]["in_flight_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["slotty"]["failed_slots"], 0);
}

TEST(NothingLost, NearMissAuthFailureIsPermanentAndVisible) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "failure", "auth");
  note(s, "failed_permanent", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", 0, "auth");
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["failed_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["final_status"], "failed");
}

TEST(NothingLost, FiresWhenAGroupRunReportsSuccessWithoutDelivering) {
  // 001's bug: every task failed, the run set guard and marker and said success.
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T10:00:05Z", "hourly", slot, ledger({}, true));
  const auto bad = run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
                           {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  expect_first(run(s, group_hourly(), at("2026-03-02T10:30:00Z")), "nothing_lost", bad);
}

// A delivered slot reached every target (a retry sends only to the missing
// ones, so each may have got it in an earlier run, or the ledger holds it).
TEST(NothingLost, FiresWhenASuccessfulRunLeftATargetWithoutTheDelivery) {
  Scenario two = group_hourly();
  two.jobs.front().targets = {"team-chat", "ops-chat"};
  const char* slot = "2026-03-02T10:00:00Z";
  const auto one_target = [&](bool ledger_holds_the_other) {
    Script s;
    handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
    run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
    s.add_event(delivered("2026-03-02T10:00:04Z", slot, "team-chat"));
    const std::vector<std::string> held = ledger_holds_the_other
                                              ? std::vector<std::string>{"team-chat", "ops-chat"}
                                              : std::vector<std::string>{"team-chat"};
    s.add("durable_delivery", "2026-03-02T10:00:04Z", "hourly", slot,
          ledger(held, true, "delivered"));
    run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
            {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
    return s;
  };
  EXPECT_TRUE(fired(run(one_target(false), two, at("2026-03-02T10:30:00Z")), "nothing_lost",
                    "target ops-chat never got"));
  EXPECT_FALSE(
      fired(run(one_target(true), two, at("2026-03-02T10:30:00Z")), "nothing_lost", "never got"));
}

TEST(NothingLost, NearMissGroupRunThatDeliveredOrMarkedTheSlotSkipped) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  s.add_event(delivered("2026-03-02T10:00:04Z", slot, "team-chat"));
  s.add("durable_delivery", "2026-03-02T10:00:04Z", "hourly", slot, ledger({"team-chat"}));
  run_end(s, "2026-03-02T10:00:06Z", "hourly", slot,
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  const char* skipped = "2026-03-02T11:00:00Z";
  handout(s, skipped, "hourly", skipped, {{"next_run_at", "2026-03-02T12:00:00Z"}});
  run_start(s, skipped, "hourly", skipped, {{"kind", "regular"}, {"attempt", 1}});
  s.add("durable_delivery", "2026-03-02T11:00:05Z", "hourly", skipped, ledger({}, true, "skipped"));
  run_end(s, "2026-03-02T11:00:06Z", "hourly", skipped,
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "skipped"}});
  const Outcome o = run(s, group_hourly(), at("2026-03-02T11:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 1);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["skipped_slots"], 1);
  // The per-slot records behind the counts: typed state, attempts.
  ASSERT_EQ(o.slots.size(), 2u);
  EXPECT_EQ(o.slots[0].slot, at(slot));
  EXPECT_EQ(o.slots[0].state, SlotState::delivered);
  EXPECT_EQ(o.slots[0].attempts, 1);
  EXPECT_EQ(o.slots[1].state, SlotState::skipped);
  EXPECT_STREQ(to_string(o.slots[1].state), "skipped");
}

// The event index of the first violation of `invariant` whose message holds `text`.
std::optional<std::size_t> fired_at(const Outcome& o, const std::string& invariant,
                                    const std::string& text) {
  for (const auto* list : {&o.seen, &o.end}) {
    for (const Violation& v : *list) {
      if (v.invariant == invariant && v.message.find(text) != std::string::npos) {
        return v.event_index;
      }
    }
  }
  return std::nullopt;
}

// A failed group verdict sends the failure notice to every target directly
// (docs/semantics.md §6): one target refusing it is logged and the others are
// still tried. By the run's intent each target had one attempt.
Scenario group_two_targets() {
  Scenario s = group_hourly();
  s.jobs.front().targets = {"team-chat", "ops-chat"};
  s.jobs.front().tasks = {GroupTask{"digest", TaskOutput::summary, 1}};
  return s;
}

Script failed_group_run(const std::vector<std::pair<std::string, std::string>>& notices) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  handout(s, slot, "hourly", slot, {{"next_run_at", "2026-03-02T11:00:00Z"}});
  run_start(s, slot, "hourly", slot, {{"kind", "regular"}, {"attempt", 1}});
  TraceEvent reply;
  reply.t = at("2026-03-02T10:00:02Z");
  reply.type = "service_reply";
  reply.service = "model-api";
  reply.job = "hourly";
  reply.slot = at(slot);
  reply.data = {{"target", "digest"}, {"status", 429}, {"request_id", "hourly/r0"}};
  s.add_event(std::move(reply));
  for (const auto& [type, target] : notices) {
    s.add(type, "2026-03-02T10:00:03Z", "hourly", slot,
          {{"kind", "failure_notice"}, {"target", target}, {"attempt", 1}});
  }
  run_end(s, "2026-03-02T10:00:04Z", "hourly", slot,
          {{"kind", "regular"},
           {"attempt", 1},
           {"outcome", "failure"},
           {"failure_class", "rate_limit"}});
  return s;
}

TEST(NothingLost, FiresWhenAFailedGroupRunLeavesATargetWithoutItsFailureNotice) {
  const Script s = failed_group_run({{"message_refused", "team-chat"}});
  const Outcome o = run(s, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "without sending its failure notice to target ops-chat"))
      << describe(o.seen);
}

TEST(NothingLost, NearMissAFailedGroupRunWhoseNoticeOneTargetRefused) {
  const Script s =
      failed_group_run({{"message_refused", "team-chat"}, {"message_delivered", "ops-chat"}});
  const Outcome o = run(s, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "failure notice")) << describe(o.seen);
}

// A task's error is a notice item; the other tasks still run (§6). Two tasks,
// the first refused by the model API: a run that returns without the second
// task's call fires; one that ran it (its answer failed too) does not.
TEST(NothingLost, FiresWhenAGroupRunStopsAtItsFirstFailedTask) {
  Scenario two_tasks = group_two_targets();
  two_tasks.jobs.front().tasks = {GroupTask{"digest", TaskOutput::summary, 1},
                                  GroupTask{"preview", TaskOutput::preview, 1}};
  const Script stopped =
      failed_group_run({{"message_refused", "team-chat"}, {"message_delivered", "ops-chat"}});
  const Outcome o = run(stopped, two_tasks, at("2026-03-02T10:01:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "without running task preview")) << describe(o.seen);
  const Outcome one_task = run(stopped, group_two_targets(), at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(one_task, "nothing_lost", "without running task")) << describe(one_task.seen);
  TraceEvent reply;  // the second task asked too, before the run returned
  reply.t = at("2026-03-02T10:00:02Z");
  reply.type = "service_reply";
  reply.service = "model-api";
  reply.job = "hourly";
  reply.slot = at("2026-03-02T10:00:00Z");
  reply.data = {{"target", "preview"}, {"status", 500}, {"request_id", "hourly/r1"}};
  Script ran;
  for (const TraceEvent& e : stopped.events()) {
    if (e.type == "queue_intent") ran.add_event(reply);
    ran.add_event(e);
  }
  const Outcome near = run(ran, two_tasks, at("2026-03-02T10:01:00Z"));
  EXPECT_FALSE(fired(near, "nothing_lost", "without running task")) << describe(near.seen);
}

// A notification as the messenger records it (`message_delivered` or
// `message_refused`), with the fields the outbox message carries.
std::size_t notice_sent(Script& s, const std::string& type, const char* t, const char* slot) {
  return s.add(
      type, t, "hourly", slot,
      {{"kind", "notification"}, {"event", "retry_scheduled"}, {"attempt", 1}, {"target", "ops"}});
}

// The outbox's message `id` of a retry_scheduled for hourly's slot.
std::size_t outbox_message(Script& s, const char* t, const char* slot, int id) {
  TraceEvent e;
  e.t = at(t);
  e.type = "outbox_add";
  e.service = "queue";
  e.job = "hourly";
  e.slot = at(slot);
  e.data = {{"id", id},     {"event", "retry_scheduled"}, {"target", "ops"},
            {"attempt", 1}, {"failure_class", "timeout"}, {"at", t}};
  return s.add_event(std::move(e));
}

// A refused notification is logged, not retried (docs/semantics.md §9): the
// outbox sends a message once; only a crash before its removal makes the
// next boot send it again.
TEST(NothingLost, FiresWhenARefusedNotificationIsSentAgain) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  notice_sent(s, "message_refused", "2026-03-02T10:00:00Z", slot);
  const auto bad = notice_sent(s, "message_refused", "2026-03-02T10:00:01Z", slot);
  s.add("outbox_remove", "2026-03-02T10:00:01Z", {}, std::nullopt,
        {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:01:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "after the messenger refused it"), bad) << describe(o.seen);
}

TEST(NothingLost, NearMissARefusedNotificationSentAgainAfterACrash) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  notice_sent(s, "message_refused", "2026-03-02T10:00:00Z", slot);
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  boot(s, "2026-03-02T10:00:30Z", 2);
  notice_sent(s, "message_refused", "2026-03-02T10:00:30Z", slot);
  s.add("outbox_remove", "2026-03-02T10:00:30Z", {}, std::nullopt,
        {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  // A second message with the same fields, committed anew, is sent once too.
  outbox_message(s, "2026-03-02T10:05:00Z", slot, 8);
  notice_sent(s, "message_refused", "2026-03-02T10:05:00Z", slot);
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "notification")) << describe(o.seen) << describe(o.end);
}

// Notifications are sent at least once across crashes (docs/semantics.md §9):
// a message leaves the outbox only after it reached the messenger, and one
// still unsent is owed once the worker has been up for the settle bound.
TEST(NothingLost, FiresWhenANotificationLeavesTheOutboxUnsent) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  const auto bad = s.add("outbox_remove", "2026-03-02T10:00:01Z", {}, std::nullopt,
                         {{"id", 7}, {"target", "ops"}, {"event", "retry_scheduled"}});
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:01:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "without reaching the messenger"), bad) << describe(o.seen);
}

TEST(NothingLost, FiresAtTheEndWhenACommittedNotificationIsNeverSent) {
  const char* slot = "2026-03-02T10:00:00Z";
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  const auto committed = outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  // Up for the settle bound after the commit: owed.
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T10:05:00Z"));
  EXPECT_EQ(fired_at(o, "nothing_lost", "never reached the messenger"), committed)
      << describe(o.end);
}

TEST(NothingLost, NearMissANotificationNotYetSentAtTheEndOrLostToACrash) {
  const char* slot = "2026-03-02T10:00:00Z";
  const auto owed = [](const Script& s, const char* until) {
    const Outcome o = run(s, hourly_with_messenger(), at(until));
    return fired(o, "nothing_lost", "reached the messenger");
  };
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  outbox_message(s, "2026-03-02T10:00:00Z", slot, 7);
  // Committed less than the settle bound before the end: still in flight.
  EXPECT_FALSE(owed(s, "2026-03-02T10:04:59Z"));
  // The worker down at the end, or back up for less than the bound: not owed.
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  EXPECT_FALSE(owed(s, "2026-03-02T11:00:00Z"));
  boot(s, "2026-03-02T10:58:00Z", 2);
  EXPECT_FALSE(owed(s, "2026-03-02T11:00:00Z"));
  // Sent by the next boot: kept.
  notice_sent(s, "message_delivered", "2026-03-02T10:58:00Z", slot);
  EXPECT_FALSE(owed(s, "2026-03-02T12:00:00Z"));
}

// policy_invalid once per change of the recorded error (docs/semantics.md
// §9): the scenario fixes the policy, so a second notice at a later boot
// while the durable row records the error repeats one. "broken" has no
// policy. A boot notifies first, then writes the row.
Script policy_noticed_then_rebooted() {
  Script s;
  boot(s, "2026-03-02T09:30:00Z", 1);
  note(s, "policy_invalid", "broken", nullptr, "2026-03-02T09:30:00Z", 0, "config");
  s.add("durable_job_state", "2026-03-02T09:30:00Z", "broken", std::nullopt,
        {{"retry_status", "ok"}, {"policy_invalid", true}, {"slots", json::object()}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", "worker"}});
  boot(s, "2026-03-02T10:30:00Z", 2);
  return s;
}

TEST(NothingLost, FiresWhenPolicyInvalidIsSentAgainForTheSameError) {
  Script s = policy_noticed_then_rebooted();
  const auto bad =
      note(s, "policy_invalid", "broken", nullptr, "2026-03-02T10:30:00Z", 0, "config");
  const Outcome o = run(s, base_scenario());
  EXPECT_EQ(fired_at(o, "nothing_lost", "policy_invalid sent again"), bad) << describe(o.seen);
}

TEST(NothingLost, NearMissPolicyInvalidAgainAfterTheStoreLostItsRecord) {
  // The first boot: its notice, then its row.
  const Outcome first = run(policy_noticed_then_rebooted(), base_scenario());
  EXPECT_FALSE(fired(first, "nothing_lost", "")) << describe(first.seen) << describe(first.end);
  // The store refusing writes at the next boot (its state_corrupt committed):
  // the core starts from fresh states and says so again.
  Script refused = policy_noticed_then_rebooted();
  note_state_corrupt(refused, "2026-03-02T10:30:00Z");
  note(refused, "policy_invalid", "broken", nullptr, "2026-03-02T10:30:00Z", 0, "config");
  EXPECT_FALSE(fired(run(refused, base_scenario()), "nothing_lost", "policy_invalid sent again"));
}

// The world damaged the store's snapshot behind the running store (which
// follows its journal), so the world reads no durable row of the runs after
// it. A run's outcome is then what its finish carries (its failure notice),
// so the retries are still counted (not every run taken for a success and the
// exhaustion for one after 0 of 2 retries). `retries` failed retries before
// retry_exhausted: 2 spends the budget; 1 does not, and fires.
Script retries_with_rows_unreadable(int retries) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  damage_store(s, "2026-03-02T09:40:00Z", "retry_state.json");
  const char* times[] = {slot, "2026-03-02T10:05:00Z", "2026-03-02T10:15:00Z"};
  for (int n = 0; n <= retries; ++n) {
    const std::uint64_t id = s.start_run("hourly");
    const json entry = {{"id", id}, {"kind", n == 0 ? "regular" : "retry"}, {"attempt", n + 1}};
    s.add("queue_take", times[n], "hourly", slot, entry);
    failed_reply(s, times[n], "hourly", slot, "rate_limit");
    s.add("queue_intent", times[n], "hourly", slot, entry);
    s.add("queue_done", times[n], "hourly", slot, entry);
    note(s, n == retries ? "retry_exhausted" : "retry_scheduled", "hourly", slot, times[n],
         n == retries ? n : n + 1, "rate_limit");
  }
  return s;
}

TEST(NothingLostStoreDamage, RetriesAreCountedWhenTheWorldCannotReadTheRows) {
  const Outcome spent =
      run(retries_with_rows_unreadable(2), only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_FALSE(fired(spent, "nothing_lost", "")) << describe(spent.seen);
  const Outcome early =
      run(retries_with_rows_unreadable(1), only({"hourly"}), at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(fired(early, "nothing_lost", "declared retry_exhausted after 1 of 2"))
      << describe(early.seen);
}

// A failure announced at 10:00, the process down 10:03-10:04, then a
// success at 11:00 with no `recovered`; `damaged`: the store was damaged
// before that boot.
Script failure_shown_then_restart(bool damaged) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  s.add("message_delivered", slot, "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  if (damaged) damage_store(s, "2026-03-02T10:02:00Z");
  crash(s, "2026-03-02T10:03:00Z");
  boot(s, "2026-03-02T10:04:00Z", 2);
  if (damaged) note_state_corrupt(s, "2026-03-02T10:04:00Z");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  return s;
}

TEST(NothingLostStoreDamage, NearMissNoRecoveredOwedForAFailureShownBeforeABlindBoot) {
  const Outcome o =
      run(failure_shown_then_restart(true), hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

// The failure shown while the store refused writes (it reported itself
// corrupt at 09:50, so the failure was never recorded), then a boot that
// finds no damage to see: the new process cannot know what was shown, so
// no `recovered` is owed (e.g. the store failed closed on lost records the ledger showed).
TEST(NothingLostStoreDamage, NearMissNoRecoveredOwedForAFailureShownWhileTheStoreRefused) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  note_state_corrupt(s, "2026-03-02T09:50:00Z");
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  s.add("message_delivered", slot, "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  crash(s, "2026-03-02T10:03:00Z");
  boot(s, "2026-03-02T10:04:00Z", 2);
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  const Outcome o = run(s, hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

// The same failure notice committed to the outbox before the crash and sent
// only after the reboot (the outbox replays it): it is judged as shown when
// and as it was committed. Committed while the store refused writes, no
// `recovered` is owed; committed under a sound store, a plain restart still
// owes one.
Script failure_committed_then_sent_after_restart(bool refused) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  boot(s, "2026-03-02T09:31:00Z", 1);
  if (refused) note_state_corrupt(s, "2026-03-02T09:50:00Z");
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "failed_permanent", "hourly", slot, slot, 0, "timeout");
  crash(s, "2026-03-02T10:00:01Z");
  boot(s, "2026-03-02T10:01:00Z", 2);
  s.add("message_delivered", "2026-03-02T10:01:00Z", "hourly", slot,
        {{"kind", "notification"}, {"event", "failed_permanent"}, {"target", "ops"}});
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  return s;
}

TEST(NothingLostStoreDamage, NearMissAReplayedNoticeCommittedWhileTheStoreRefusedOwesNothing) {
  const Outcome o = run(failure_committed_then_sent_after_restart(true), hourly_with_messenger(),
                        at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

TEST(NothingLostStoreDamage, FiresWhenAReplayedNoticeOfASoundStoreGetsNoRecovered) {
  const Outcome o = run(failure_committed_then_sent_after_restart(false), hourly_with_messenger(),
                        at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

TEST(NothingLostStoreDamage, FiresWhenRecoveredIsMissingAfterAPlainRestart) {
  const Outcome o =
      run(failure_shown_then_restart(false), hourly_with_messenger(), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost", "recovered")) << describe(o.seen) << describe(o.end);
}

TEST(NothingLost, FiresWhenWorkIsTakenBeforeADeadWorkersLeaseIsRecovered) {
  const Outcome o = run(two_workers(true, false), only({"hourly"}), at("2026-03-02T11:30:00Z"));
  EXPECT_TRUE(fired(o, "nothing_lost",
                    "queue entry 1 (hourly 2026-03-02T10:00:00Z attempt 1) was "
                    "leased by process 1"))
      << describe(o.seen);
}

TEST(NothingLost, NearMissADeadWorkersLeaseIsPutBackBeforeTheNextTake) {
  const Outcome o = run(two_workers(true, true), only({"hourly"}), at("2026-03-02T11:30:00Z"));
  EXPECT_FALSE(fired(o, "nothing_lost", "was leased by process")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
