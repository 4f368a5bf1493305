// Goal: schedule_kept fires on a slot skipped, moved, handed out off the grid
// or again after a restart (store damage included), and stays quiet on slots
// coalesced after downtime; the cron forms it reads.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(ScheduleKept, FiresWhenARegularSlotIsSkipped) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  const auto bad = handout(s, "2026-03-02T12:00:00Z", "hourly", "2026-03-02T12:00:00Z",
                           {{"next_run_at", "2026-03-02T13:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

// The machine's clock as the world stepped it: a clock_step's fault_start.
void clock_step(Script& s, const char* t, DurationMs by_ms) {
  s.add("fault_start", t, {}, std::nullopt,
        {{"fault", 0}, {"kind", "clock_step"}, {"by_ms", by_ms}});
}

TEST(ScheduleKept, FiresWhenASlotRunsAgainAfterTheClockStepsBack) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  // At 10:30 the clock steps back an hour: at 11:00 true it reads 10:00 again.
  clock_step(s, "2026-03-02T10:30:00Z", -kHourMs);
  const auto again = handout(s, "2026-03-02T11:00:00Z", "hourly", "2026-03-02T10:00:00Z",
                             {{"next_run_at", "2026-03-02T11:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", again);
}

TEST(ScheduleKept, NearMissAfterAStepBackTheNextSlotWaitsForTheClock) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  clock_step(s, "2026-03-02T10:30:00Z", -kHourMs);
  // 11:00 on the clock is 12:00 true; the end (12:30 true) reads 11:30.
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  expect_clean(run(s, only({"hourly"}), at("2026-03-02T12:30:00Z")));
}

TEST(ScheduleKept, NearMissAStepForwardFoldsTheSkippedSlotsIntoOneLateRun) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  // At 10:30 true the clock jumps 2 h to 12:30: 11:00 runs late, 12:00 folds in.
  clock_step(s, "2026-03-02T10:30:00Z", 2 * kHourMs);
  handout(s, "2026-03-02T10:30:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T13:00:00Z"}, {"coalesced_count", 1}});
  run_start(s, "2026-03-02T10:30:00Z", "hourly", "2026-03-02T11:00:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  run_end(s, "2026-03-02T10:30:30Z", "hourly", "2026-03-02T11:00:00Z",
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  expect_clean(run(s, only({"hourly"}), at("2026-03-02T10:45:00Z")));
}

TEST(ScheduleKept, FiresWhenAStepForwardSkipsASlotWithoutRecordingIt) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  clock_step(s, "2026-03-02T10:30:00Z", 2 * kHourMs);
  // 12:00 handed out with 11:00 never run nor counted.
  const auto bad = handout(s, "2026-03-02T10:30:00Z", "hourly", "2026-03-02T12:00:00Z",
                           {{"next_run_at", "2026-03-02T13:00:00Z"}});
  expect_first(run(s, only({"hourly"}), at("2026-03-02T10:45:00Z")), "schedule_kept", bad);
}

TEST(ScheduleKept, FiresWhenNextRunAtIsMovedByAFailure) {
  Script s;
  const auto added = handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
                             {{"next_run_at", "2026-03-02T10:05:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", added + 1);  // the durable row
}

TEST(ScheduleKept, FiresWhenAnOffGridSlotIsHandedOut) {
  Script s;
  const auto bad = handout(s, "2026-03-02T10:07:00Z", "hourly", "2026-03-02T10:07:00Z",
                           {{"next_run_at", "2026-03-02T11:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

TEST(ScheduleKept, FiresWhenCoalescedSlotsAreNotRecorded) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  // Down 10:30-13:10: 11:00 runs late at 13:10 and 12:00, 13:00 fold into
  // it, but the durable row after the hand-out counts none of them.
  const auto late = handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
                            {{"next_run_at", "2026-03-02T14:00:00Z"}});
  handout(s, "2026-03-02T14:00:00Z", "hourly", "2026-03-02T14:00:00Z",
          {{"next_run_at", "2026-03-02T15:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", late + 1);
}

TEST(ScheduleKept, NearMissSlotsMissedWhileDownAreCoalescedAndRecorded) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  s.add("process_crash", "2026-03-02T10:30:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
  s.add("process_boot", "2026-03-02T13:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", 2}});
  run_start(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  run_end(s, "2026-03-02T13:10:30Z", "hourly", "2026-03-02T11:00:00Z",
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "success"}});
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T14:30:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["coalesced_slots"], 2);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["max_delay_ms"], 130 * kMinuteMs);
}

TEST(ScheduleKept, FiresWhenARestartHandsAnOlderSlotOutAgain) {
  Script s;
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  regular(s, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  s.add("process_crash", "2026-03-02T11:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T11:11:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  const auto bad = handout(s, "2026-03-02T11:11:00Z", "hourly", "2026-03-02T10:00:00Z",
                           {{"next_run_at", "2026-03-02T12:00:00Z"}});
  expect_first(run(s, base_scenario()), "schedule_kept", bad);
}

TEST(ScheduleKept, NearMissSameSlotAgainAfterACrashOrUnderACorruptStore) {
  // A crash between the queue add and the state write hands the same slot
  // out again (the add is idempotent).
  Script s;
  handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  handout(s, "2026-03-02T10:01:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  EXPECT_TRUE(run(s, base_scenario()).seen.empty());
  // A corrupt store fails closed and cannot know its schedule: an older slot
  // handed out again is expected (the ledger makes the run exit quietly).
  Script c;
  regular(c, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  regular(c, "hourly", "2026-03-02T11:00:00Z", "2026-03-02T11:00:00Z", "2026-03-02T12:00:00Z",
          "success");
  c.add("disk_corrupted", "2026-03-02T11:30:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
  c.add("process_boot", "2026-03-02T11:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note_state_corrupt(c, "2026-03-02T11:31:00Z");
  handout(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}, {"coalesced_count", 1}});
  run_start(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
            {{"kind", "regular"}, {"attempt", 1}});
  run_end(c, "2026-03-02T11:31:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"kind", "regular"}, {"attempt", 1}, {"outcome", "already_complete"}});
  const Outcome o = run(c, only({"hourly"}), at("2026-03-02T11:45:00Z"));
  expect_clean(o);
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["delivered_slots"], 2);  // 11:00 keeps its own fate
  EXPECT_EQ(o.tallies["jobs"]["hourly"]["runs"], 3);
}

TEST(ScheduleKept, FiresAtTheEndWhenSlotsStopBeingHandedOutWhileUp) {
  Script s;
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  MonitorSet set(base_scenario());
  // Only the hourly job matters here: hand the others nothing and read the
  // violation about hourly.
  for (std::size_t i = 0; i < s.events().size(); ++i) EXPECT_FALSE(set.observe(s.events()[i], i));
  const auto end = set.finish(at("2026-03-02T11:30:00Z"));
  const auto it = std::find_if(end.begin(), end.end(), [](const Violation& v) {
    return v.invariant == "schedule_kept" && v.message.find("hourly") != std::string::npos;
  });
  ASSERT_NE(it, end.end()) << describe(end);
  EXPECT_NE(it->message.find("2026-03-02T11:00:00Z"), std::string::npos);
  EXPECT_EQ(it->event_index, s.events().size());
}

TEST(ScheduleKept, SixFieldAndNamedSchedulesAreUnderstood) {
  std::string why;
  auto c = WitnessCron::parse("0 0 17 * * fri", &why);
  ASSERT_TRUE(c) << why;
  EXPECT_TRUE(c->low_frequency());
  const auto fridays = c->between(at("2026-12-01T00:00:00Z"), at("2026-12-31T00:00:00Z"), 10);
  ASSERT_EQ(fridays.size(), 4u);
  EXPECT_EQ(format_instant(fridays[0]), "2026-12-04T17:00:00Z");
  // Both day fields restricted: either matches (odd days or Mondays).
  auto either = WitnessCron::parse("0 0 */2 * 1", &why);
  ASSERT_TRUE(either);
  EXPECT_EQ(either->between(at("2026-03-01T00:00:00Z"), at("2026-03-04T23:59:00Z"), 10).size(), 2u);
  // A range covering the whole field is unrestricted: Mondays only (and, by
  // the literal rule, low-frequency: the weekday is one fixed value).
  auto mondays = WitnessCron::parse("0 0 1-31 * 1", &why);
  ASSERT_TRUE(mondays);
  EXPECT_TRUE(mondays->low_frequency());
  EXPECT_FALSE(WitnessCron::parse("10 17 * * 1-5", &why)->low_frequency());
  EXPECT_EQ(mondays->between(at("2026-03-01T00:00:00Z"), at("2026-03-31T23:59:00Z"), 10).size(),
            5u);
  EXPECT_FALSE(WitnessCron::parse("*/3 * * * *", &why)->low_frequency());
  EXPECT_TRUE(WitnessCron::parse("@weekly", &why)->low_frequency());
}

// An empty element beside `L` is no element dropped: the core refuses the
// list, so the witness must not read it as a schedule that fires.
TEST(ScheduleKept, AnEmptyListElementBesideLIsNotDropped) {
  std::string why;
  EXPECT_FALSE(WitnessCron::parse("0 0 L,,5 * *", &why));
  EXPECT_FALSE(WitnessCron::parse("0 0 L, * *", &why));
  EXPECT_FALSE(WitnessCron::parse("0 0 ,L * *", &why));
  EXPECT_TRUE(WitnessCron::parse("0 0 L,5 * *", &why)) << why;
}

TEST(ScheduleKept, UnknownSyntaxIsSkippedLoudlyNotPassedSilently) {
  std::string why;
  // cron-parser's odd readings the core reproduces: `LL` is `L`, `55L` the
  // last Friday, `5#1e0` the first Friday (docs/cron.md).
  EXPECT_FALSE(WitnessCron::parse("0 0 LL * *", &why));
  EXPECT_NE(why.find("LL"), std::string::npos);
  EXPECT_FALSE(WitnessCron::parse("0 0 * * 55L", &why));
  EXPECT_FALSE(WitnessCron::parse("0 0 * * 5#1e0", &why));
  Scenario sc = base_scenario();
  sc.jobs[0].schedule = "0 0 LL * *";
  sc.env["EMPTY"] = "";
  sc.jobs[1].schedule_env = "EMPTY";
  MonitorSet set(sc);
  const json unchecked = set.tallies()["unchecked"];
  // The empty override is no longer skipped: it is asserted never to run.
  ASSERT_EQ(unchecked.size(), 1u) << unchecked.dump();
  EXPECT_EQ(unchecked[0]["invariant"], "schedule_kept");
  EXPECT_EQ(unchecked[0]["subject"], "hourly");
}

// `L` in day-of-month, `dL` and `d#n` in day-of-week (docs/cron.md): the
// matcher's own reading, by hand from a calendar.
TEST(ScheduleKept, LastDaysAndNthWeekdaysAreUnderstood) {
  std::string why;
  const auto firings = [&](const char* expr, const char* from, const char* to) {
    std::vector<std::string> out;
    const auto c = WitnessCron::parse(expr, &why);
    EXPECT_TRUE(c) << expr << ": " << why;
    if (!c) return out;
    EXPECT_TRUE(c->low_frequency()) << expr;
    for (const TimeMs t : c->between(at(from), at(to), 10)) out.push_back(format_instant(t));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(firings("0 9 L * *", "2028-01-15T00:00:00Z", "2028-04-15T00:00:00Z"),
            (V{"2028-01-31T09:00:00Z", "2028-02-29T09:00:00Z", "2028-03-31T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * FRIL", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-27T09:00:00Z", "2026-04-24T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * 7L", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-29T09:00:00Z", "2026-04-26T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 * * mon#1", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-02T09:00:00Z", "2026-04-06T09:00:00Z"}));
  // Both day fields restricted: either matches; a `#n` then limits every
  // matching day to the n-th week (the 10th and second Fridays).
  EXPECT_EQ(firings("0 9 10 * 5#2", "2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-03-10T09:00:00Z", "2026-03-13T09:00:00Z", "2026-04-10T09:00:00Z"}));
  EXPECT_EQ(firings("0 9 15,L * 5L", "2026-04-01T00:00:00Z", "2026-05-01T00:00:00Z"),
            (V{"2026-04-15T09:00:00Z", "2026-04-24T09:00:00Z", "2026-04-30T09:00:00Z"}));
  EXPECT_FALSE(WitnessCron::parse("0 9 * * 1,5L", &why)->low_frequency());
}

// A last-day-of-month job (`0 9 L * *`): April's last day skipped between the
// hand-outs of March's and May's fires, and so does a slot on another day;
// every last day handed out in turn is the near miss.
TEST(ScheduleKept, FiresWhenALastDayOfMonthFiringIsSkippedOrMissed) {
  Scenario sc = base_scenario();
  sc.jobs[0].schedule = "0 9 L * *";
  sc.jobs[3].schedule_env.reset();
  sc.jobs[3].schedule = "0 9 * * MON#1";
  const auto last_day = [](Script& s, const char* slot, const char* next) {
    return handout(s, slot, "hourly", slot, {{"next_run_at", next}});
  };
  Script kept;
  last_day(kept, "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z");
  handout(kept, "2026-04-06T09:00:00Z", "weekly", "2026-04-06T09:00:00Z",
          {{"next_run_at", "2026-05-04T09:00:00Z"}});
  last_day(kept, "2026-04-30T09:00:00Z", "2026-05-31T09:00:00Z");
  last_day(kept, "2026-05-31T09:00:00Z", "2026-06-30T09:00:00Z");
  const Outcome clean = run(kept, sc, at("2026-06-01T00:00:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  EXPECT_TRUE(clean.tallies["unchecked"].empty()) << clean.tallies["unchecked"].dump();
  Script skipped;
  last_day(skipped, "2026-03-31T09:00:00Z", "2026-04-30T09:00:00Z");
  const auto late = last_day(skipped, "2026-05-31T09:00:00Z", "2026-06-30T09:00:00Z");
  expect_first(run(skipped, sc, at("2026-06-01T00:00:00Z")), "schedule_kept", late);
  Script off;
  const auto bad = last_day(off, "2026-04-29T09:00:00Z", "2026-04-30T09:00:00Z");
  expect_first(run(off, sc, at("2026-05-01T00:00:00Z")), "schedule_kept", bad);
  Script second_monday;
  const auto monday = handout(second_monday, "2026-04-13T09:00:00Z", "weekly",
                              "2026-04-13T09:00:00Z", {{"next_run_at", "2026-05-04T09:00:00Z"}});
  expect_first(run(second_monday, sc, at("2026-04-14T00:00:00Z")), "schedule_kept", monday);
}

// An override that is no valid cron by the documented grammar (the
// monitors' own rules, cron_grammar.hpp) is a config error: the job never
// runs. One the matcher merely cannot read (`1*`: cron-parser reads
// 10-59) stays unchecked, never asserted.
TEST(ScheduleKept, TellsAnInvalidCronFromSyntaxTheMatcherLacks) {
  using R = WitnessCron::Refusal;
  const auto refusal = [](const char* expr) {
    std::string why;
    R r = R::unknown_syntax;
    EXPECT_FALSE(WitnessCron::parse(expr, &why, &r)) << expr;
    return r;
  };
  for (const char* bad :
       {"61 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 * 13 *", "0 0 * * 8", "60 0 0 * * *",
        "0 0 * *", "0 0 * * * * 2027", "@reboot", "@DAILY", " @daily", "   ", "0 0 30 2 *",
        "0 0 30 2 1", "0 0 30,L FEB *", "0 0 31 4,6 *"}) {
    EXPECT_EQ(refusal(bad), R::invalid) << bad;
  }
  // The last: four fields to the matcher, five to the core (U+00A0 is a
  // JavaScript space), so no field count is asserted.
  for (const char* lacks :
       {"1* * * * *", "0 0 15W * *", "0 0 * * 5#1e0", "0 0 LL * *", "0 0 * * 9L",
        "0\xc2\xa0"
        "0 * * *"}) {
    EXPECT_EQ(refusal(lacks), R::unknown_syntax) << lacks;
  }
  EXPECT_TRUE(WitnessCron::parse("0 0 31 4,6 1", nullptr)) << "fires on Mondays";
  EXPECT_TRUE(WitnessCron::parse("0 0 31,L 4,6 *", nullptr)) << "fires on the last days";
}

TEST(ScheduleKept, FiresWhenAJobWithAnInvalidOverrideIsQueued) {
  Scenario sc = base_scenario();
  sc.env["BAD_CRON"] = "61 * * * *";
  sc.env["ODD_CRON"] = "1* * * * *";  // valid: cron-parser reads 10-59
  sc.jobs[1].schedule_env = "BAD_CRON";
  sc.jobs[2].schedule_env = "ODD_CRON";
  Script s;
  s.add("queue_add", "2026-03-02T10:10:00Z", "broken", "2026-03-02T10:10:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:10:00Z"}});
  const Outcome lacks = run(s, sc, at("2026-03-02T10:11:00Z"));
  EXPECT_TRUE(lacks.seen.empty()) << describe(lacks.seen);
  ASSERT_EQ(lacks.tallies["unchecked"].size(), 1u) << lacks.tallies["unchecked"].dump();
  EXPECT_EQ(lacks.tallies["unchecked"][0]["subject"], "broken");
  const auto bad =
      s.add("queue_add", "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:30:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T10:31:00Z"));
  expect_first(o, "schedule_kept", bad);
  EXPECT_TRUE(fired(o, "schedule_kept", "BAD_CRON='61 * * * *' is not a valid cron"))
      << describe(o.seen);
}

// A job whose override is set but empty has no schedule: the queue receiving
// any entry for it fires schedule_kept (it used to be listed as
// unchecked, so a core falling back to the default schedule passed).
TEST(ScheduleKept, FiresWhenAJobWithAnEmptyOverrideIsQueued) {
  Scenario sc = base_scenario();
  sc.env["EMPTY"] = "";
  sc.jobs[1].schedule_env = "EMPTY";
  Script s;
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:00:00Z"}});
  const auto bad =
      s.add("queue_add", "2026-03-02T10:30:00Z", "slotty", "2026-03-02T10:30:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:30:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T10:31:00Z"));
  ASSERT_FALSE(o.seen.empty());
  EXPECT_EQ(o.seen.front().invariant, "schedule_kept");
  EXPECT_EQ(o.seen.front().event_index, bad) << describe(o.seen);
}

// From the queue's own record: a regular entry whose slot is
// no firing of the schedule, or which is due at another instant than its
// slot, fires schedule_kept whatever the core logged; one at its firing does
// not.
TEST(ScheduleKept, FiresWhenTheQueueReceivesARegularEntryOffItsFiring) {
  Scenario sc = base_scenario();
  Script s;
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T10:00:00Z"}});
  const auto late =
      s.add("queue_add", "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T11:05:00Z"}});
  const auto off =
      s.add("queue_add", "2026-03-02T11:10:00Z", "hourly", "2026-03-02T11:10:00Z",
            {{"added", true}, {"kind", "regular"}, {"ready_at", "2026-03-02T11:10:00Z"}});
  const Outcome o = run(s, sc, at("2026-03-02T11:11:00Z"));
  std::vector<std::size_t> fired_at;
  for (const Violation& v : o.seen) {
    if (v.invariant == "schedule_kept") fired_at.push_back(v.event_index);
  }
  EXPECT_EQ(fired_at, (std::vector<std::size_t>{late, off})) << describe(o.seen);
}

// The firing instants of `expr` read in `zone`, in (from, to], as text.
std::vector<std::string> zoned(const char* expr, const char* zone, const char* from,
                               const char* to) {
  std::string why;
  const auto c = WitnessCron::parse(expr, &why, nullptr, std::string(zone));
  EXPECT_TRUE(c) << expr << " in " << zone << ": " << why;
  std::vector<std::string> out;
  if (!c) return out;
  for (const TimeMs t : c->between(at(from), at(to), 100)) out.push_back(format_instant(t));
  return out;
}

using Instants = std::vector<std::string>;

// Europe/Berlin, 2026-03-29: at 01:00Z the clocks jump from 02:00 CET to
// 03:00 CEST, so 02:xx does not exist. By hand: 02:30 runs at the instant it
// has under CET (01:30Z), once; of 02:00, 02:20, 02:40 only the first runs
// (at 01:00Z); the next day's 02:30 CEST is 00:30Z.
TEST(ScheduleKeptZones, BerlinSpringGapShiftsTheMissingReadingOnce) {
  EXPECT_EQ(zoned("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-30T12:00:00Z"),
            (Instants{"2026-03-29T01:30:00Z", "2026-03-30T00:30:00Z"}));
  EXPECT_EQ(zoned("*/20 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-29T12:00:00Z"),
            (Instants{"2026-03-29T01:00:00Z"}));
  // `*` hours: the missing hour's shifted 02:30 is the real 03:30 (01:30Z).
  EXPECT_EQ(zoned("30 * * * *", "Europe/Berlin", "2026-03-29T00:00:00Z", "2026-03-29T02:45:00Z"),
            (Instants{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"}));
}

// Europe/Berlin, 2026-10-25: at 01:00Z the clocks fall back from 03:00 CEST
// to 02:00 CET, so 02:xx is read twice (00:xxZ, then 01:xxZ). A fixed or
// stepped hour fires in the first pass only; a `*` hour in both.
TEST(ScheduleKeptZones, BerlinAutumnFoldFiresOnceUnlessTheHourIsStar) {
  EXPECT_EQ(zoned("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-25T12:00:00Z"),
            (Instants{"2026-10-25T00:30:00Z"}));
  EXPECT_EQ(zoned("30 * * * *", "Europe/Berlin", "2026-10-24T23:45:00Z", "2026-10-25T02:45:00Z"),
            (Instants{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}));
  // 00:00 CEST (22:00Z), 02:00 CEST (00:00Z), not 02:00 CET, 04:00 CET (03:00Z).
  EXPECT_EQ(zoned("0 */2 * * *", "Europe/Berlin", "2026-10-24T21:00:00Z", "2026-10-25T03:00:00Z"),
            (Instants{"2026-10-24T22:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T03:00:00Z"}));
  std::string why;
  const auto c = WitnessCron::parse("0 */2 * * *", &why, nullptr, std::string("Europe/Berlin"));
  ASSERT_TRUE(c) << why;
  const auto first = c->next_after(at("2026-10-24T23:00:00Z"), kDayMs);
  ASSERT_TRUE(first);
  EXPECT_EQ(format_instant(*first), "2026-10-25T00:00:00Z");
  const auto second = c->next_after(*first, kDayMs);
  ASSERT_TRUE(second);
  EXPECT_EQ(format_instant(*second), "2026-10-25T03:00:00Z");
}

// America/Santiago, 2026-09-06: midnight (-04) jumps to 01:00 (-03), so the
// day's 00:00 does not exist: it runs at 00:00 -04 (04:00Z), never skipped;
// the next midnight is 00:00 -03 (03:00Z).
TEST(ScheduleKeptZones, SantiagoMidnightGapKeepsTheDay) {
  EXPECT_EQ(zoned("0 0 * * *", "America/Santiago", "2026-09-05T12:00:00Z", "2026-09-07T12:00:00Z"),
            (Instants{"2026-09-06T04:00:00Z", "2026-09-07T03:00:00Z"}));
}

// Australia/Lord_Howe, 2026-10-04: 02:00 (+10:30, 15:30Z) jumps to 02:30
// (+11). 02:20 is skipped (its shift would be 15:50Z) but the real 02:40
// (15:40Z) comes earlier and stands for it: one run that night. The night
// before, 02:20 and 02:40 +10:30 both exist.
TEST(ScheduleKeptZones, LordHoweHalfHourGapTakesTheEarlierRealMatch) {
  EXPECT_EQ(zoned("20,40 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00:00Z",
                  "2026-10-04T06:00:00Z"),
            (Instants{"2026-10-02T15:50:00Z", "2026-10-02T16:10:00Z", "2026-10-03T15:40:00Z"}));
}

// The zone may come from the expression (`CRON_TZ=`, `TZ=`); both it and the
// job's zone must name the same one; a zone the database lacks is a config
// error naming it.
TEST(ScheduleKeptZones, ZonePrefixesAndUnknownZones) {
  using R = WitnessCron::Refusal;
  std::string why;
  for (const char* expr : {"CRON_TZ=Europe/Berlin 30 2 * * *", "TZ=Europe/Berlin 30 2 * * *"}) {
    const auto c = WitnessCron::parse(expr, &why);
    ASSERT_TRUE(c) << expr << ": " << why;
    EXPECT_EQ(c->zone_name(), "Europe/Berlin");
    const auto next = c->next_after(at("2026-03-28T12:00:00Z"), kDayMs);
    ASSERT_TRUE(next);
    EXPECT_EQ(format_instant(*next), "2026-03-29T01:30:00Z") << expr;
  }
  EXPECT_TRUE(WitnessCron::parse("CRON_TZ=Europe/Berlin 30 2 * * *", &why, nullptr,
                                 std::string("Europe/Berlin")))
      << why;
  R r = R::unknown_syntax;
  EXPECT_FALSE(WitnessCron::parse("CRON_TZ=Europe/Berlin 30 2 * * *", &why, &r,
                                  std::string("Europe/Paris")));
  EXPECT_EQ(r, R::invalid);
  for (const char* zone : {"Mars/Olympus_Mons", "CET-1CEST,M3.5.0", ""}) {
    r = R::unknown_syntax;
    EXPECT_FALSE(WitnessCron::parse("30 2 * * *", &why, &r, std::string(zone))) << zone;
    EXPECT_EQ(r, R::invalid) << zone;
    EXPECT_NE(why.find(std::string("'") + zone + "'"), std::string::npos) << why;
  }
  r = R::unknown_syntax;
  EXPECT_FALSE(WitnessCron::parse("TZ=Nowhere/Atlantis 30 2 * * *", &why, &r));
  EXPECT_EQ(r, R::invalid);
  EXPECT_NE(why.find("Nowhere/Atlantis"), std::string::npos) << why;
  // No zone: UTC, as before.
  const auto utc = WitnessCron::parse("30 2 * * *", &why);
  ASSERT_TRUE(utc);
  EXPECT_TRUE(utc->zone_name().empty());
  EXPECT_EQ(utc->between(at("2026-10-24T12:00:00Z"), at("2026-10-25T12:00:00Z"), 10),
            (std::vector<TimeMs>{at("2026-10-25T02:30:00Z")}));
}

// A Berlin job at 02:30 (slotty), judged on its wall-clock slots.
Scenario berlin_night(const char* start) {
  Scenario sc = only({"slotty"});
  sc.jobs[0].schedule = "30 2 * * *";
  sc.jobs[0].tz = "Europe/Berlin";
  sc.start_ms = at(start);
  return sc;
}

// The fold's second 02:30 (01:30Z) is no slot of a fixed hour: a world that
// hands it out as well fires schedule_kept; the first pass alone is kept.
TEST(ScheduleKeptZones, FiresWhenTheFoldsRepeatedSlotIsHandedOutAgain) {
  const Scenario sc = berlin_night("2026-10-24T00:00:00Z");
  const auto night = [](Script& s) {
    handout(s, "2026-10-24T00:30:00Z", "slotty", "2026-10-24T00:30:00Z",
            {{"next_run_at", "2026-10-25T00:30:00Z"}});
    handout(s, "2026-10-25T00:30:00Z", "slotty", "2026-10-25T00:30:00Z",
            {{"next_run_at", "2026-10-26T01:30:00Z"}});
  };
  Script kept;
  night(kept);
  handout(kept, "2026-10-26T01:30:00Z", "slotty", "2026-10-26T01:30:00Z",
          {{"next_run_at", "2026-10-27T01:30:00Z"}});
  const Outcome clean = run(kept, sc, at("2026-10-26T02:00:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  EXPECT_TRUE(clean.tallies["unchecked"].empty()) << clean.tallies["unchecked"].dump();
  Script twice;
  night(twice);
  const auto bad = handout(twice, "2026-10-25T01:30:00Z", "slotty", "2026-10-25T01:30:00Z",
                           {{"next_run_at", "2026-10-26T01:30:00Z"}});
  expect_first(run(twice, sc, at("2026-10-25T02:00:00Z")), "schedule_kept", bad);
}

// The gap day's 02:30 runs at 01:30Z: a world that hands out no slot that
// night fires schedule_kept at the next night's hand-out.
TEST(ScheduleKeptZones, FiresWhenTheGapDaysSlotIsNeverHandedOut) {
  const Scenario sc = berlin_night("2026-03-28T00:00:00Z");
  Script kept;
  handout(kept, "2026-03-28T01:30:00Z", "slotty", "2026-03-28T01:30:00Z",
          {{"next_run_at", "2026-03-29T01:30:00Z"}});
  handout(kept, "2026-03-29T01:30:00Z", "slotty", "2026-03-29T01:30:00Z",
          {{"next_run_at", "2026-03-30T00:30:00Z"}});
  handout(kept, "2026-03-30T00:30:00Z", "slotty", "2026-03-30T00:30:00Z",
          {{"next_run_at", "2026-03-31T00:30:00Z"}});
  const Outcome clean = run(kept, sc, at("2026-03-30T01:00:00Z"));
  EXPECT_TRUE(clean.seen.empty()) << describe(clean.seen);
  Script skipped;
  handout(skipped, "2026-03-28T01:30:00Z", "slotty", "2026-03-28T01:30:00Z",
          {{"next_run_at", "2026-03-29T01:30:00Z"}});
  const auto late = handout(skipped, "2026-03-30T00:30:00Z", "slotty", "2026-03-30T00:30:00Z",
                            {{"next_run_at", "2026-03-31T00:30:00Z"}});
  expect_first(run(skipped, sc, at("2026-03-30T01:00:00Z")), "schedule_kept", late);
}

// Up until 10:30 (10:00 handed out), damaged at `damage_at`, down from
// `down_at` to a boot at 13:10 that reports the corruption, then 14:00
// handed out: nothing of 11:00-13:00 was handed out nor coalesced.
Script boot_after_damage(const char* down_at, const char* file, bool applied) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  damage_store(s, "2026-03-02T10:20:00Z", file, applied);
  crash(s, down_at);
  boot(s, "2026-03-02T13:10:00Z", 2);
  note_state_corrupt(s, "2026-03-02T13:10:00Z");
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissSlotsMissedWhileDownBeforeABlindBoot) {
  const Outcome o = run(boot_after_damage("2026-03-02T10:30:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, NearMissAFiringAtTheCrashInstantFellWhileDown) {
  // The crash at 11:00 came before any hand-out of 11:00.
  const Outcome o = run(boot_after_damage("2026-03-02T11:00:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

// Up from 09:31; 10:00 handed out (the queue's add) and the process dead at
// once, before the hand-out's state write.
Script handout_then_crash() {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  s.add("queue_add", "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
        {{"id", 0},
         {"kind", "regular"},
         {"attempt", 1},
         {"ready_at", "2026-03-02T10:00:00Z"},
         {"added", true}});
  crash(s, "2026-03-02T10:00:00Z");
  return s;
}

// 10:00 handed out and the process dead before the state write; with
// `damaged` the journal is damaged while down; the boot's first row of the
// job is a fresh one (next_run_at none), then it hands out 10:00 again late
// with 11:00-13:00 folded into it (counted from the fresh state: 3).
Script handout_lost_then_boot(bool damaged) {
  Script s = handout_then_crash();
  if (damaged) damage_store(s, "2026-03-02T10:20:00Z");
  boot(s, "2026-03-02T13:10:00Z", 2);
  if (damaged) {
    s.add("journal_tail_gone", "2026-03-02T13:10:00Z", {}, std::nullopt,
          {{"path", "/srv/state/retry_state.journal"},
           {"torn", true},
           {"kept_as", json::array({"/srv/state/retry_state.journal.damaged-0-10"})}});
  }
  s.add("durable_job_state", "2026-03-02T13:10:00Z", "hourly", std::nullopt,
        {{"next_run_at", nullptr}, {"coalesced_slots", 0}, {"slots", json::object()}});
  handout(s, "2026-03-02T13:10:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", 3}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissRowsOwedBeforeABlindBootAreNotJudged) {
  const Outcome o = run(handout_lost_then_boot(true), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnARowOwedBeforeAPlainRestart) {
  const Outcome o =
      run(handout_lost_then_boot(false), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "next_run_at is none after handing out"))
      << describe(o.seen);
}

// 10:00 handed out and the process dead before the state write (a torn
// journal record); the next boot first replays an intent, whose row still
// shows 10:00 as next (the state from before the hand-out), then hands 10:00
// out again and records 11:00. A row of the later boot showing anything else
// (here 12:00) still fires.
Script handout_cut_then_intent_row(const char* row_next) {
  Script s = handout_then_crash();
  boot(s, "2026-03-02T10:00:00Z", 2);
  s.add("durable_job_state", "2026-03-02T10:00:00Z", "hourly", std::nullopt,
        {{"next_run_at", row_next}, {"coalesced_slots", 0}, {"slots", json::object()}});
  handout(s, "2026-03-02T10:00:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissARowOfTheNextBootShowingTheStateBeforeACutHandout) {
  const Outcome o = run(handout_cut_then_intent_row("2026-03-02T10:00:00Z"), only({"hourly"}),
                        at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  const Outcome moved = run(handout_cut_then_intent_row("2026-03-02T12:00:00Z"), only({"hourly"}),
                            at("2026-03-02T10:30:00Z"));
  EXPECT_TRUE(
      fired(moved, "schedule_kept", "next_run_at is 2026-03-02T12:00:00Z after handing out"))
      << describe(moved.seen);
}

// Down 10:20-12:10, a boot at 12:10 that dies at the instant it booted (its
// store's first write torn: `dies_at`), the store damaged at 12:20, a blind
// boot at 13:10: 11:00 and 12:00 were owed by a boot that never ran its
// scheduler, so the blind boot's window reaches back to 10:20. A boot that lived (dies
// at 12:15) owed them itself: 11:00 skipped still fires.
Script boot_that_dies_then_blind_boot(const char* dies_at) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  crash(s, "2026-03-02T10:20:00Z");
  boot(s, "2026-03-02T12:10:00Z", 2);
  crash(s, dies_at);
  damage_store(s, "2026-03-02T12:20:00Z");
  boot(s, "2026-03-02T13:10:00Z", 3);
  note_state_corrupt(s, "2026-03-02T13:10:00Z");
  regular(s, "hourly", "2026-03-02T14:00:00Z", "2026-03-02T14:00:00Z", "2026-03-02T15:00:00Z",
          "success");
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissABootThatDiedAtOnceOwedNothing) {
  const Outcome o = run(boot_that_dies_then_blind_boot("2026-03-02T12:10:00Z"), only({"hourly"}),
                        at("2026-03-02T14:30:00Z"));
  EXPECT_FALSE(fired(o, "schedule_kept", "")) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotABootThatLivedOwed) {
  const Outcome o = run(boot_that_dies_then_blind_boot("2026-03-02T12:15:00Z"), only({"hourly"}),
                        at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
      << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotSkippedWhileUpBeforeTheBlindBoot) {
  // 11:00 fell while the process was up (down only from 11:30): not excused.
  const Outcome o = run(boot_after_damage("2026-03-02T11:30:00Z", "retry_state.json", true),
                        only({"hourly"}), at("2026-03-02T14:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
      << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresWhenTheBootFoundTheStoreWhole) {
  // Damage the world could not apply, or to a runtime view the store does
  // not read its schedule from, leaves the boot able to read its last slot.
  for (const auto& [file, applied] : std::vector<std::pair<const char*, bool>>{
           {"retry_state.json", false}, {"jobs.json", true}}) {
    const Outcome o = run(boot_after_damage("2026-03-02T10:30:00Z", file, applied),
                          only({"hourly"}), at("2026-03-02T14:30:00Z"));
    EXPECT_TRUE(fired(o, "schedule_kept", "regular slot 2026-03-02T11:00:00Z was skipped"))
        << file << describe(o.seen);
  }
}

TEST(ScheduleKeptStoreDamage, FiresOnASlotSkippedAfterTheBlindBoot) {
  Script s = boot_after_damage("2026-03-02T10:30:00Z", "retry_state.json", true);
  const auto bad = handout(s, "2026-03-02T16:00:00Z", "hourly", "2026-03-02T16:00:00Z",
                           {{"next_run_at", "2026-03-02T17:00:00Z"}});
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T16:30:00Z"));
  expect_first(o, "schedule_kept", bad);
  EXPECT_NE(o.seen.front().message.find("15:00:00Z was skipped"), std::string::npos);
}

TEST(ScheduleKeptStoreDamage, NearMissNoDurableRowJudgedWhileTheStoreIsDamaged) {
  // Damaged at 10:20: the row read after the 11:00 hand-out is not the
  // store's write (it writes nothing); once the world saw the damaged tail
  // go, the rows are judged again.
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  damage_store(s, "2026-03-02T10:20:00Z");
  handout(s, "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T11:00:00Z"}});
  s.add("journal_tail_gone", "2026-03-02T11:30:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"},
         {"torn", true},
         {"kept_as", json::array({"/srv/state/retry_state.journal.damaged-0-10"})}});
  const auto stale = handout(s, "2026-03-02T12:00:00Z", "hourly", "2026-03-02T12:00:00Z",
                             {{"next_run_at", "2026-03-02T12:00:00Z"}});
  const Outcome o = run(s, only({"hourly"}), at("2026-03-02T12:30:00Z"));
  expect_first(o, "schedule_kept", stale + 1);
  EXPECT_EQ(o.seen.size(), 1u) << describe(o.seen);
}

// 10:00 handed out; down 10:30-13:10; at 13:10 11:00 is handed out late
// (12:00 and 13:00 folded into it) and the process dies before the state
// write; the next boot hands 11:00 out again and writes `counted` misfires.
Script late_run_handed_out_twice(int counted) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  regular(s, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z",
          "success");
  crash(s, "2026-03-02T10:30:00Z");
  boot(s, "2026-03-02T13:10:00Z", 2);
  s.add("queue_add", "2026-03-02T13:10:00Z", "hourly", "2026-03-02T11:00:00Z",
        {{"id", 0},
         {"kind", "regular"},
         {"attempt", 1},
         {"ready_at", "2026-03-02T11:00:00Z"},
         {"added", true}});
  crash(s, "2026-03-02T13:10:00Z");
  boot(s, "2026-03-02T13:10:30Z", 3);
  handout(s, "2026-03-02T13:10:30Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T14:00:00Z"}, {"coalesced_count", counted}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissMisfireRecordOwedAcrossTheSameSlotHandedOutAgain) {
  const Outcome o = run(late_run_handed_out_twice(2), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
}

TEST(ScheduleKeptStoreDamage, FiresWhenTheLateRunHandedOutAgainRecordsNoMisfire) {
  const Outcome o = run(late_run_handed_out_twice(0), only({"hourly"}), at("2026-03-02T13:30:00Z"));
  EXPECT_TRUE(fired(o, "schedule_kept", "records 0 coalesced slots")) << describe(o.seen);
}

// Down 09:45-10:10; the boot at 10:10 finds the store corrupt and runs from
// memory (it hands out 11:00); the store is damaged again while down
// (11:40) and the blind boot at 12:10 hands out 10:00, older than 11:00
// but never handed out: what the surviving records lead to, not a schedule
// moved back. The same hand-out
// after a boot that found the store whole fires.
Script older_slot_after_blind_boot(bool blind) {
  Script s;
  boot(s, "2026-03-02T09:31:00Z", 1);
  crash(s, "2026-03-02T09:45:00Z");
  boot(s, "2026-03-02T10:10:00Z", 2);
  note_state_corrupt(s, "2026-03-02T10:10:00Z");
  handout(s, "2026-03-02T11:00:00Z", "hourly", "2026-03-02T11:00:00Z",
          {{"next_run_at", "2026-03-02T12:00:00Z"}});
  crash(s, "2026-03-02T11:30:00Z");
  if (blind) damage_store(s, "2026-03-02T11:40:00Z");
  boot(s, "2026-03-02T12:10:00Z", 3);
  handout(s, "2026-03-02T12:10:00Z", "hourly", "2026-03-02T10:00:00Z",
          {{"next_run_at", "2026-03-02T13:00:00Z"}, {"coalesced_count", 2}});
  return s;
}

TEST(ScheduleKeptStoreDamage, NearMissAnOlderSlotNeverHandedOutAfterABlindBoot) {
  const Outcome o =
      run(older_slot_after_blind_boot(true), only({"hourly"}), at("2026-03-02T12:30:00Z"));
  EXPECT_FALSE(fired(o, "schedule_kept", "handed out after the later slot")) << describe(o.seen);
  const Outcome whole =
      run(older_slot_after_blind_boot(false), only({"hourly"}), at("2026-03-02T12:30:00Z"));
  EXPECT_TRUE(fired(whole, "schedule_kept", "handed out after the later slot"))
      << describe(whole.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
