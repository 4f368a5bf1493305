// Goal: deterministic compares two traces of the same seed line by line.
// Method: two traces built here: equal, then apart in one event's data, then
// one longer than the other.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(Deterministic, ComparesTracesLineByLine) {
  Trace a, b;
  for (Trace* tr : {&a, &b}) {
    TraceEvent e;
    e.t = kStart;
    e.type = "scheduler_boot";
    tr->record(e);
    e.type = "slot_due";
    e.job = "hourly";
    tr->record(e);
  }
  EXPECT_FALSE(compare_traces(a, b));
  TraceEvent x;
  x.t = kStart + 1;
  x.type = "run_started";
  a.record(x);
  x.data["attempt"] = 2;
  b.record(x);
  const auto v = compare_traces(a, b);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->invariant, "deterministic");
  EXPECT_EQ(v->event_index, 2u);
  // One trace longer than the other: the first extra line.
  Trace c = a;
  TraceEvent y;
  y.type = "run_finished";
  c.record(y);
  const auto w = compare_traces(a, c);
  ASSERT_TRUE(w);
  EXPECT_EQ(w->event_index, 3u);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
