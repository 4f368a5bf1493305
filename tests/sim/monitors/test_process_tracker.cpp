// Goal: the process facts every monitor reads: a standby acts only once granted
// the worker lock, a survivor without one at once, a store refusing writes is
// known from the raw commit of state_corrupt.
// Method: hand-made traces of two workers (monitor_fixtures.hpp), read event
// by event by a ProcessTracker.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(ProcessTracker, AStandbyActsOnlyOnceGrantedTheWorkerLock) {
  const Script s = two_workers(true, true);
  ProcessTracker p;
  std::vector<std::pair<bool, bool>> seen;  // (came up, went down) per event
  for (std::size_t i = 0; i < s.events().size(); ++i) {
    p.observe(s.events()[i], i);
    seen.emplace_back(p.came_up_at(i), p.went_down_at(i));
  }
  // boot of 1: up; its lock: nothing; boot of the standby: nothing; the
  // crash of 1: down; the grant to 2: up.
  EXPECT_EQ(seen[0], std::make_pair(true, false));
  EXPECT_EQ(seen[1], std::make_pair(false, false));
  EXPECT_EQ(seen[2], std::make_pair(false, false));
  EXPECT_EQ(seen[4], std::make_pair(false, true));
  EXPECT_EQ(seen[6], std::make_pair(true, false));
  EXPECT_EQ(p.boots(), 2);
  EXPECT_TRUE(p.up());
}

TEST(ProcessTracker, WithoutAWorkerLockASurvivorActsAtOnce) {
  Script s;  // two workers, no worker lock ever granted (a core that skips it)
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt, {{"pid", 1}, {"boots", 1}});
  s.add("process_boot", "2026-03-02T09:31:00Z", {}, std::nullopt, {{"pid", 2}, {"boots", 1}});
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt, {{"pid", 1}});
  ProcessTracker p;
  for (std::size_t i = 0; i < s.events().size(); ++i) p.observe(s.events()[i], i);
  EXPECT_TRUE(p.went_down_at(2));
  EXPECT_TRUE(p.came_up_at(2));  // worker 2 acts from the crash on
  EXPECT_TRUE(p.up());
  EXPECT_EQ(p.boots(), 2);
}

// The store refusing writes is known from the raw commit of `state_corrupt`
// too: a reboot at the same instant commits the same notice again, which
// the notification facts read once.
TEST(ProcessTracker, AStateCorruptCommittedAgainAtTheSameInstantStillRefuses) {
  TraceEvent commit;
  commit.type = "outbox_add";
  commit.data = {{"event", "state_corrupt"}};
  TraceEvent boot;
  boot.type = "process_boot";
  boot.data = {{"pid", 1}};
  TraceEvent crash;
  crash.type = "process_crash";
  crash.data = {{"pid", 1}};
  ProcessTracker p;
  p.observe(boot, 0);
  p.observe(commit, 1);
  EXPECT_TRUE(p.store_refused());
  p.observe(crash, 2);
  p.observe(boot, 3);
  EXPECT_FALSE(p.store_refused());
  p.observe(commit, 4);
  EXPECT_TRUE(p.store_refused());
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
