// Goal: bounded_run fires once, when a trace passes queue.max_events.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(BoundedRun, FiresOnceWhenTheEventBoundIsPassed) {
  Scenario sc = base_scenario();
  sc.queue.max_events = 3;
  Script s;
  for (int i = 0; i < 5; ++i) s.add("noise", "2026-03-02T10:00:00Z");
  const Outcome o = run(s, sc);
  ASSERT_EQ(o.seen.size(), 1u) << describe(o.seen);
  EXPECT_EQ(o.seen.front().invariant, "bounded_run");
  EXPECT_EQ(o.seen.front().event_index, 3u);
  sc.queue.max_events = 5;
  expect_clean(run(s, sc));
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
