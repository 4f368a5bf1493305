// Goal: queue_discipline fires on a run beside another at concurrency one, a
// job taken twice at once, a standby taking over later than one poll; runs one
// after another and after a crash are quiet.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

// The queue's leases as the world records them: a take names the taking
// process; a finish ends the lease.
std::size_t take(Script& s, const char* t, const std::string& job, int id, int process) {
  return s.add(
      "queue_take", t, job, "2026-03-02T10:00:00Z",
      {{"id", id}, {"kind", "regular"}, {"attempt", 1}, {"process", process}, {"ready_at", t}});
}

void done(Script& s, const char* t, const std::string& job, int id) {
  s.add("queue_done", t, job, "2026-03-02T10:00:00Z",
        {{"id", id}, {"kind", "regular"}, {"attempt", 1}});
}

TEST(QueueDiscipline, FiresWhenARunStartsBesideAnotherAtConcurrencyOne) {
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  const auto bad = take(s, "2026-03-02T10:00:01Z", "broken", 2, 1);
  expect_first(run(s, base_scenario()), "queue_discipline", bad);
}

TEST(QueueDiscipline, FiresWhenAJobIsTakenTwiceAtOnce) {
  Scenario sc = base_scenario();
  sc.queue.concurrency = 3;
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  const auto bad = take(s, "2026-03-02T10:00:01Z", "slotty", 2, 1);
  const Outcome o = run(s, sc);
  expect_first(o, "queue_discipline", bad);
  EXPECT_TRUE(fired(o, "queue_discipline", "a job runs once at a time"));
}

// A finished run frees its place; a dead process's leases end with it.
TEST(QueueDiscipline, NearMissRunsOneAfterAnotherAndAfterACrash) {
  Script s;
  take(s, "2026-03-02T10:00:00Z", "slotty", 1, 1);
  done(s, "2026-03-02T10:00:01Z", "slotty", 1);
  take(s, "2026-03-02T10:00:02Z", "broken", 2, 1);
  s.add("process_crash", "2026-03-02T10:00:03Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  take(s, "2026-03-02T10:05:00Z", "slotty", 3, 2);
  const Outcome o = run(s, base_scenario());
  EXPECT_FALSE(fired(o, "queue_discipline", "")) << describe(o.seen);
}

// The takeover (docs/worker.md): the holder of the worker lock dies at 10:00;
// the standby, asking every 30 s (queue.standby_poll), holds the lock by
// 10:00:30. Granted at 10:00:45 it fires; a standby that died too, or a grant
// within the poll, does not.
Script holder_dies_then_granted(const char* granted, bool standby_dies) {
  Script s;
  const char* lock = "/srv/state/worker.lock";
  s.add("process_boot", "2026-03-02T09:30:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"boots", 1}});
  s.add("process_boot", "2026-03-02T09:30:00Z", {}, std::nullopt,
        {{"process", "worker-2"}, {"pid", 2}, {"boots", 1}});
  s.add("disk_lock", "2026-03-02T09:30:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_process_crashed", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"process", 1}});
  s.add("process_crash", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  if (standby_dies) {
    s.add("process_crash", "2026-03-02T10:00:10Z", {}, std::nullopt,
          {{"process", "worker-2"}, {"pid", 2}, {"cause", "restart"}});
  }
  if (granted != nullptr) {
    s.add("disk_lock", granted, {}, std::nullopt, {{"path", lock}, {"process", 2}});
  }
  return s;
}

TEST(QueueDiscipline, FiresWhenAStandbyTakesOverLaterThanOnePoll) {
  const Script late = holder_dies_then_granted("2026-03-02T10:00:45Z", false);
  const Outcome o = run(late, only({"hourly"}), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(o, "queue_discipline", "standby process 2 was up")) << describe(o.seen);
  // Never granted: judged at the end, once the poll interval is over.
  const Script never = holder_dies_then_granted(nullptr, false);
  EXPECT_FALSE(fired(run(never, only({"hourly"}), at("2026-03-02T10:00:20Z")), "queue_discipline",
                     "standby"));
  const Outcome end = run(never, only({"hourly"}), at("2026-03-02T10:05:00Z"));
  EXPECT_TRUE(fired(end, "queue_discipline", "standby process 2 was up")) << describe(end.end);
  for (const auto& [granted, dies] :
       {std::pair{"2026-03-02T10:00:30Z", false}, std::pair{"2026-03-02T10:00:45Z", true}}) {
    const Outcome near =
        run(holder_dies_then_granted(granted, dies), only({"hourly"}), at("2026-03-02T10:05:00Z"));
    EXPECT_FALSE(fired(near, "queue_discipline", "standby")) << granted << describe(near.seen);
  }
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
