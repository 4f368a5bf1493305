// Goal: item_queries_bounded fires on a reconcile run that asks about an item
// sooner than its answers allow (after a 404 or 410, within a backoff, within
// the hour of a config error or a failed validation), and stays quiet on the
// queries the semantics allow.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

// The orchestrator's move to a new instance at `t`, as the world records it.
void migrate(Script& s, const char* t) {
  TraceEvent moved;
  moved.t = at(t);
  moved.type = "instance_changed";
  moved.service = "orchestrator";
  s.add_event(moved);
}

// A cycle's list_agents at `t`, answered 200 (the core sees the agent list
// and the instance) or lost to a network error.
void agent_list(Script& s, const char* t, bool answered = true) {
  s.item("service_call", t, "", {{"operation", "list_agents"}});
  if (answered) {
    s.item("service_reply", t, "", {{"operation", "list_agents"}, {"status", 200}});
  } else {
    s.item("service_reply", t, "",
           {{"operation", "list_agents"}, {"transport_error", "broken_pipe"}});
  }
}

TEST(ItemQueriesBounded, FiresOnAQueryAfterA404) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 404}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

// A request the orchestrator refused (a config error, deferred an hour): the
// item's next query within the hour fires, whatever the core logged.
// 410 is gone too (docs/semantics.md §1: not_found): no call for the item after it.
TEST(ItemQueriesBounded, FiresOnAQueryAfterA410) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 410}});
  const auto bad =
      s.item("service_call", "2026-03-02T11:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  expect_first(o, "item_queries_bounded", bad);
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 410"));
}

// The per-item backoff after transient failures: 1 min, then 2 min after the
// second in a row (docs/semantics.md §8). Asked again before it ends fires.
Script transient_twice_then_asked(const char* again) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 503}});
  s.item("service_call", "2026-03-02T10:01:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:01:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"transport_error", "connection_reset"}});
  s.item("service_call", again, "ISS-1", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenATransientFailureIsAskedBeforeItsBackoff) {
  const Script early = transient_twice_then_asked("2026-03-02T10:02:30Z");
  expect_first(run(early, base_scenario()), "item_queries_bounded", early.events().size() - 1);
  EXPECT_TRUE(fired(run(early, base_scenario()), "item_queries_bounded", "its backoff is 2m"));
}

TEST(ItemQueriesBounded, NearMissATransientFailureAskedWhenItsBackoffEnds) {
  const Outcome o = run(transient_twice_then_asked("2026-03-02T10:03:00Z"), base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ItemQueriesBounded, FiresOnConfigAttemptsCloserThanHourly) {
  Script s;
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:30:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, FiresOnAnyOrchestratorCallAfterA404OnAssign) {
  Script s;
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-2",
         {{"operation", "assign"}, {"status", 404}});
  s.item("durable_stage", "2026-03-02T10:00:01Z", "ISS-2",
         {{"stage", "DESIGN_FAILED"}, {"error", "issue ISS-2 is gone (404)"}});
  const auto bad =
      s.item("service_call", "2026-03-02T11:00:00Z", "ISS-2", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  expect_first(o, "item_queries_bounded", bad);
  EXPECT_EQ(o.tallies["items"]["ISS-2"]["reason"], "issue ISS-2 is gone (404)");
}

// Config attempts judged from the orchestrator's own answers and request
// times, not from item_deferred (a config failure logged as a backoff would
// hide there): the lead agent is gone, ISS-2 (BUILDING) is reported in_review,
// so its handoff cannot be made: querying it again within the hour fires.
Script lead_missing_then_queried(const char* again, bool list_answered = true) {
  Script s;
  TraceEvent removed;
  removed.t = at("2026-03-02T10:00:00Z");
  removed.type = "agent_removed";
  removed.service = "orchestrator";
  removed.data = {{"agent", kAgentId.substr(0, 8)}, {"role", "lead"}};
  s.add_event(removed);
  // The cycle's agent list: answered, the core sees the lead missing.
  agent_list(s, "2026-03-02T10:10:00Z", list_answered);
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  // The store's first cycle validates every item; this one was due and its
  // attempt was deferred: the durable record carries the reconcile error.
  s.item("durable_stage", "2026-03-02T10:10:00Z", "ISS-2",
         {{"stage", "BUILDING"}, {"error", "cannot hand REVIEWING work to an agent"}});
  s.item("service_call", again, "ISS-2", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenAConfigErrorShownByTheOrchestratorIsRetriedWithinTheHour) {
  const Script s = lead_missing_then_queried("2026-03-02T10:20:00Z");
  expect_first(run(s, base_scenario()), "item_queries_bounded", s.events().size() - 1);
  const Outcome later = run(lead_missing_then_queried("2026-03-02T11:10:00Z"), base_scenario());
  EXPECT_TRUE(later.seen.empty()) << describe(later.seen);
}

// The cycle's list_agents was lost to a network error, so the core could not know
// the lead was missing and backed off as for a network error; the item's
// query ten minutes later is no config attempt within the hour.
// A reconcile job with batch_size 1 and two items, the lead agent missing
// from the start: the store's first cycle validates both ids but tries only
// ISS-1 (its deferral is durable); ISS-2's lookup sees a handoff the missing
// lead blocks, yet nothing was attempted (its record is unchanged), so its
// first attempt at the next cycle, 30 minutes later, is no config attempt
// within the hour. That attempt's own answer then binds: asking again inside
// the hour after it fires.
Script first_cycle_lookup_then_attempt(const char* attempt_at) {
  Script s;
  TraceEvent removed;
  removed.t = at("2026-03-02T10:00:00Z");
  removed.type = "agent_removed";
  removed.service = "orchestrator";
  removed.data = {{"agent", kAgentId.substr(0, 8)}, {"role", "lead"}};
  s.add_event(removed);
  agent_list(s, "2026-03-02T10:10:00Z");
  // ISS-2 is outside the batch: looked up, its handoff blocked, not tried.
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  agent_list(s, attempt_at);
  s.item("service_call", attempt_at, "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", attempt_at, "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  s.item("durable_stage", attempt_at, "ISS-2",
         {{"stage", "BUILDING"}, {"error", "cannot hand REVIEWING work to an agent"}});
  return s;
}

TEST(ItemQueriesBounded, NearMissAFirstCycleLookupOutsideTheBatchIsNoAttempt) {
  const Outcome o = run(first_cycle_lookup_then_attempt("2026-03-02T10:40:00Z"), base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ItemQueriesBounded, FiresWithinTheHourOfTheAttemptThatFollowedALookup) {
  Script s = first_cycle_lookup_then_attempt("2026-03-02T10:40:00Z");
  agent_list(s, "2026-03-02T11:10:00Z");
  const auto bad =
      s.item("service_call", "2026-03-02T11:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

// An item refused before any answer in a cycle that knew the instance (its
// agent list lost) holds no validated id: the core does not validate it while
// its deferral runs, so a query inside the hour fires even after a migration.
TEST(ItemQueriesBounded, AnItemRefusedBeforeItWasEverValidatedIsNotValidatedInItsHour) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z", /*answered=*/false);
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  migrate(s, "2026-03-02T10:30:00Z");
  agent_list(s, "2026-03-02T10:40:00Z");
  const auto bad =
      s.item("service_call", "2026-03-02T10:40:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, NearMissAnAgentListLostToTheNetworkHidesTheMissingLead) {
  const Outcome o = run(lead_missing_then_queried("2026-03-02T10:20:00Z", /*list_answered=*/false),
                        base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// A config error at 10:00, a migration at 10:30: the item's first query after
// it (10:40) is the validation the hour allows, and its answer is no config
// attempt, so the hour still ends at 11:00. A second query inside the hour fires.
// (`validation_status`: what the validation is answered, a refusal by default.)
Script config_error_then_migration(const char* again, int validation_status = 403) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z");  // the item's id is validated on the old instance
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  migrate(s, "2026-03-02T10:30:00Z");
  // The cycle's agent list, answered: the core knows the new instance.
  agent_list(s, "2026-03-02T10:40:00Z");
  s.item("service_call", "2026-03-02T10:40:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:40:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", validation_status}});
  s.item("service_call", again, "ISS-1", {{"operation", "get_issue"}});
  return s;
}

TEST(ItemQueriesBounded, AValidationAfterAMigrationLeavesTheHourWhereItWas) {
  const Outcome after_the_hour =
      run(config_error_then_migration("2026-03-02T11:00:01Z"), base_scenario());
  EXPECT_TRUE(after_the_hour.seen.empty()) << describe(after_the_hour.seen);
  const Script twice = config_error_then_migration("2026-03-02T10:50:00Z");
  expect_first(run(twice, base_scenario()), "item_queries_bounded", twice.events().size() - 1);
}

// A migration long before the config error: the item's first query after it
// is a full attempt, not a validation the next hour would allow.
TEST(ItemQueriesBounded, AMigrationAllowsOnlyTheFirstQueryAfterIt) {
  Script s;
  migrate(s, "2026-03-02T09:00:00Z");
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:00Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 422}});
  const auto bad =
      s.item("service_call", "2026-03-02T10:10:00Z", "ISS-1", {{"operation", "get_issue"}});
  expect_first(run(s, base_scenario()), "item_queries_bounded", bad);
}

TEST(ItemQueriesBounded, NearMissLeadPresentItemDueEveryCycle) {
  Script s;
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:00Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 200}, {"body_class", "in_review"}});
  s.item("service_call", "2026-03-02T10:20:00Z", "ISS-2", {{"operation", "get_issue"}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// The script's last event is item_queries_bounded's first violation, which says `text`.
void expect_last_fires(const Script& s, const Scenario& scenario, const char* text) {
  const Outcome o = run(s, scenario);
  expect_first(o, "item_queries_bounded", s.events().size() - 1);
  EXPECT_TRUE(fired(o, "item_queries_bounded", text)) << describe(o.seen);
}

// A config error, a migration, and the validation the migration calls for
// failing transiently: the item now backs off, and an item backing off is
// not validated again, so its next query inside the hour is an attempt.
TEST(ItemQueriesBounded, FiresWhenAValidationThatFailedIsFollowedByAnAttemptInsideTheHour) {
  expect_last_fires(config_error_then_migration("2026-03-02T10:50:00Z", 503), base_scenario(),
                    "after a config error");
}

TEST(ItemQueriesBounded, NearMissAValidationThatFailedLeavesTheAttemptAtTheHour) {
  expect_clean(run(config_error_then_migration("2026-03-02T11:00:01Z", 503), base_scenario()));
}

// Events of the reconcile job's own cycle (the job the world attributes them to).
void reconcile_event(Script& s, const char* type, const char* t, const std::string& item,
                     json data) {
  TraceEvent e;
  e.t = at(t);
  e.type = type;
  e.job = "reconcile";
  e.item = item;
  e.data = std::move(data);
  if (std::string(type).starts_with("service_")) e.service = "orchestrator";
  s.add_event(std::move(e));
}

// The cap: an item's durable next attempt, `next` after a 503 about it at 10:00.
Script backoff_written(const char* next) {
  Script s;
  reconcile_event(s, "service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:00:00Z", "ISS-1",
                  {{"operation", "get_issue"}, {"status", 503}});
  reconcile_event(s, "durable_schedule", "2026-03-02T10:00:00Z", "ISS-1",
                  {{"next_attempt_at", next}, {"updated_at", "2026-03-02T10:00:00Z"}});
  return s;
}

TEST(ItemQueriesBounded, FiresWhenADurableNextAttemptIsMoreThanAnHourAfterTheLastAnswer) {
  expect_last_fires(backoff_written("2026-03-02T11:04:00Z"), base_scenario(), "waits at most 1h");
}

TEST(ItemQueriesBounded, NearMissADurableNextAttemptAtTheCap) {
  expect_clean(run(backoff_written("2026-03-02T11:00:00Z"), base_scenario()));
}

// A cycle at 10:10 with both items due (ISS-1 last visited at 09:00, ISS-2
// at 09:30) that asks only `asked`, then reaches its intent.
Script cycle_asking(const std::string& asked) {
  Script s;
  reconcile_event(s, "durable_schedule", "2026-03-02T09:00:00Z", "ISS-1",
                  {{"next_attempt_at", "2026-03-02T09:00:00Z"},
                   {"updated_at", "2026-03-02T09:00:00Z"}});
  reconcile_event(s, "durable_schedule", "2026-03-02T09:30:00Z", "ISS-2",
                  {{"next_attempt_at", "2026-03-02T09:30:00Z"},
                   {"updated_at", "2026-03-02T09:30:00Z"}});
  reconcile_event(s, "service_call", "2026-03-02T10:10:00Z", "", {{"operation", "list_agents"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:10:00Z", "",
                  {{"operation", "list_agents"}, {"status", 200}});
  reconcile_event(s, "service_call", "2026-03-02T10:10:00Z", asked, {{"operation", "get_issue"}});
  reconcile_event(s, "service_reply", "2026-03-02T10:10:00Z", asked,
                  {{"operation", "get_issue"}, {"status", 200}, {"body_class", "todo"}});
  reconcile_event(s, "queue_intent", "2026-03-02T10:10:00Z", "", json::object());
  return s;
}

Scenario batch_of_one() {
  Scenario sc = base_scenario();
  for (JobSpec& j : sc.jobs) {
    if (j.kind == JobKind::reconcile) j.batch_size = 1;
  }
  return sc;
}

TEST(ItemQueriesBounded, FiresWhenABatchTakesAMoreRecentlyVisitedItemFirst) {
  expect_last_fires(cycle_asking("ISS-2"), batch_of_one(), "issue ISS-1 was due");
}

TEST(ItemQueriesBounded, FiresWhenACycleWithoutABatchSizeLeavesADueItem) {
  expect_last_fires(cycle_asking("ISS-1"), base_scenario(), "no batch_size");
}

TEST(ItemQueriesBounded, NearMissABatchTakesTheLeastRecentlyVisitedItem) {
  expect_clean(run(cycle_asking("ISS-1"), batch_of_one()));
}

TEST(ItemQueriesBounded, NearMissHourlyConfigAttemptsAndOtherItems) {
  Script s;
  agent_list(s, "2026-03-02T10:00:00Z");
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 403}});
  // A validation query after a migration is not an attempt.
  migrate(s, "2026-03-02T10:04:00Z");
  agent_list(s, "2026-03-02T10:05:00Z");
  s.item("service_call", "2026-03-02T10:05:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_call", "2026-03-02T10:10:00Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:10:01Z", "ISS-2",
         {{"operation", "get_issue"}, {"status", 503}});
  s.item("service_call", "2026-03-02T10:11:02Z", "ISS-2", {{"operation", "get_issue"}});
  s.item("service_call", "2026-03-02T11:00:01Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T11:00:02Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", 403}});
  const Outcome o = run(s, base_scenario());
  expect_clean(o);
  EXPECT_EQ(o.tallies["items"]["ISS-1"]["queries"], 3);
  EXPECT_EQ(o.tallies["items"]["ISS-2"]["queries"], 2);
}

// The at-least-once window of item_queries_bounded: an orchestrator answer
// binds once the item's durable record was written after it. A crash
// between the two (the crash sweep's disk points inside the pipeline store's
// write) lets the next process ask once more; a crash after it does not, and
// the answer the second query gets binds again.
Script reply_then_crash(int status, bool recorded, bool ask_twice) {
  Script s;
  boot(s, "2026-03-02T09:59:00Z", 1);
  s.item("service_call", "2026-03-02T10:00:00Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:00:01Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", status}});
  if (recorded) {
    s.item("durable_stage", "2026-03-02T10:00:01Z", "ISS-1",
           {{"stage", "DESIGNING"}, {"error", "the answer, recorded"}});
  }
  crash(s, "2026-03-02T10:00:01Z");
  boot(s, "2026-03-02T10:01:00Z", 2);
  s.item("service_call", "2026-03-02T10:01:01Z", "ISS-1", {{"operation", "get_issue"}});
  s.item("service_reply", "2026-03-02T10:01:02Z", "ISS-1",
         {{"operation", "get_issue"}, {"status", status}});
  if (ask_twice) {
    s.item("service_call", "2026-03-02T10:02:00Z", "ISS-1", {{"operation", "get_issue"}});
  }
  return s;
}

TEST(ItemQueriesBounded, NearMissA404LostWithACrashBeforeItsRecordIsAskedOnceMore) {
  const Outcome o = run(reply_then_crash(404, false, false), base_scenario());
  EXPECT_FALSE(fired(o, "item_queries_bounded", "")) << describe(o.seen);
  const Outcome refused = run(reply_then_crash(422, false, false), base_scenario());
  EXPECT_FALSE(fired(refused, "item_queries_bounded", "")) << describe(refused.seen);
}

TEST(ItemQueriesBounded, FiresOnAQueryAfterA404RecordedBeforeTheCrash) {
  const Outcome o = run(reply_then_crash(404, true, false), base_scenario());
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 404")) << describe(o.seen);
  const Outcome refused = run(reply_then_crash(422, true, false), base_scenario());
  EXPECT_TRUE(fired(refused, "item_queries_bounded", "after a config error"))
      << describe(refused.seen);
}

TEST(ItemQueriesBounded, FiresOnTheThirdQueryAfterTheSecond404) {
  const Outcome o = run(reply_then_crash(404, false, true), base_scenario());
  EXPECT_TRUE(fired(o, "item_queries_bounded", "after its 404")) << describe(o.seen);
}

// After a migration, stored ids first (docs/semantics.md §8): the first cycle
// that learns the new instance asks every item whose record holds an earlier
// answer, unless the item is terminal or backing off.
std::size_t job_asked(Script& s, const char* t, const std::string& item, int status) {
  for (const char* type : {"service_call", "service_reply"}) {
    TraceEvent e;
    e.t = at(t);
    e.type = type;
    e.service = "orchestrator";
    e.job = "reconcile";
    e.item = item;
    e.data = {{"operation", "get_issue"}, {"target", item}};
    if (std::string(type) == "service_reply") {
      e.data["status"] = status;
      e.data["body_class"] = "todo";
    }
    s.add_event(std::move(e));
  }
  return 0;
}

std::size_t cycle_end(Script& s, const char* t) {
  return s.add("queue_intent", t, "reconcile", "2026-03-02T10:00:00Z",
               {{"id", 90}, {"kind", "regular"}, {"attempt", 1}});
}

// A cycle at 09:40 answered about both items (ISS-1 with `first_status`), a
// migration at 09:45, and the 10:00 cycle on the new instance asking `asked`.
Script migration(int first_status, const std::vector<std::string>& asked, bool crash_first) {
  Script s;
  boot(s, "2026-03-02T09:39:00Z", 1);
  agents_listed(s, "2026-03-02T09:40:00Z");
  job_asked(s, "2026-03-02T09:40:01Z", "ISS-1", first_status);
  job_asked(s, "2026-03-02T09:40:01Z", "ISS-2", 200);
  if (crash_first) {
    crash(s, "2026-03-02T09:40:02Z");
    boot(s, "2026-03-02T09:40:02Z", 2);
  }
  cycle_end(s, "2026-03-02T09:40:03Z");
  s.add("instance_changed", "2026-03-02T09:45:00Z", {}, std::nullopt,
        {{"from", "orchestrator-1"}, {"to", "orchestrator-2"}});
  agents_listed(s, "2026-03-02T10:00:00Z");
  for (const std::string& item : asked) job_asked(s, "2026-03-02T10:00:01Z", item, 200);
  cycle_end(s, "2026-03-02T10:00:02Z");
  return s;
}

// The index of the 10:00 cycle's end in migration()'s script.
std::size_t migration_end(const Script& s) { return s.events().size() - 1; }

TEST(ItemQueriesBounded, FiresWhenAStoredIdIsNotCheckedInTheFirstCycleAfterAMigration) {
  Script s = migration(200, {"ISS-2"}, false);
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:05:00Z"));
  expect_first(o, "item_queries_bounded", migration_end(s));
  EXPECT_TRUE(fired(o, "item_queries_bounded", "issue ISS-1 of job reconcile was not asked"))
      << describe(o.seen);
  // A refusal is an answer the record keeps too.
  const Outcome refused =
      run(migration(403, {"ISS-2"}, false), base_scenario(), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(refused, "item_queries_bounded", "ISS-1 of job reconcile was not asked"));
}

TEST(ItemQueriesBounded, NearMissItemsTheFirstCycleAfterAMigrationMayLeave) {
  const auto quiet = [](const Script& s) {
    const Outcome o = run(s, base_scenario(), at("2026-03-02T10:05:00Z"));
    EXPECT_FALSE(fired(o, "item_queries_bounded", "first cycle after")) << describe(o.seen);
  };
  quiet(migration(200, {"ISS-1", "ISS-2"}, false));   // both checked
  quiet(migration(503, {"ISS-2"}, false));            // ISS-1 backing off
  quiet(migration(200, {"ISS-2"}, true));             // ISS-1's answer maybe lost in the crash
  Script no_list = migration(200, {"ISS-2"}, false);  // ISS-1 answered again without a list:
  Script unlisted;                                    // its handoff may have backed off
  for (std::size_t k = 0; k < no_list.events().size(); ++k) {
    const TraceEvent& e = no_list.events()[k];
    if (e.type == "instance_changed") {
      TraceEvent lost = e;
      lost.type = "service_reply";
      lost.service = "orchestrator";
      lost.job = "reconcile";
      lost.data = {{"operation", "list_agents"}, {"status", 504}};
      lost.t = at("2026-03-02T09:44:00Z");
      unlisted.add_event(std::move(lost));
      job_asked(unlisted, "2026-03-02T09:44:01Z", "ISS-1", 200);
      cycle_end(unlisted, "2026-03-02T09:44:02Z");
    }
    unlisted.add_event(e);
  }
  quiet(unlisted);
  Script closed;  // ISS-1 terminal before the migration
  agents_listed(closed, "2026-03-02T09:40:00Z");
  job_asked(closed, "2026-03-02T09:40:01Z", "ISS-1", 200);
  cycle_end(closed, "2026-03-02T09:40:03Z");
  TraceEvent stage;
  stage.t = at("2026-03-02T09:40:04Z");
  stage.type = "durable_stage";
  stage.job = "reconcile";
  stage.item = "ISS-1";
  stage.data = {{"stage", "DONE"}, {"error", ""}};
  closed.add_event(std::move(stage));
  closed.add("instance_changed", "2026-03-02T09:45:00Z", {}, std::nullopt,
             {{"from", "orchestrator-1"}, {"to", "orchestrator-2"}});
  agents_listed(closed, "2026-03-02T10:00:00Z");
  cycle_end(closed, "2026-03-02T10:00:02Z");
  const Outcome o = run(closed, base_scenario(), at("2026-03-02T10:05:00Z"));
  EXPECT_FALSE(fired(o, "item_queries_bounded", "first cycle after")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
