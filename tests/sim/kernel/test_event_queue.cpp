// Goal: the event queue pops in (time, push order), cancels exactly what it is
// asked to, bounds its size, and keeps its memory proportional to the pending
// events, whatever mix of operations reaches it.
// Method: unit tests for each rule, then RapidCheck properties that replay a
// generated sequence of push / pop / cancel / cancel_if operations against a
// plain model (a std::map keyed by (time, insertion count)) and compare every
// answer; small time ranges force many ties.
#include "sim/kernel/event_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "tests/support/property.hpp"

namespace rehearse::sim {
namespace {

using Queue = EventQueue<int>;

std::vector<std::pair<TimeMs, int>> drain(Queue& q) {
  std::vector<std::pair<TimeMs, int>> out;
  while (auto e = q.pop()) out.emplace_back(e->time, e->payload);
  return out;
}

TEST(EventQueue, PopsByTimeThenPushOrder) {
  Queue q;
  q.push(30, 1);
  q.push(10, 2);
  q.push(20, 3);
  q.push(10, 4);
  q.push(30, 5);
  q.push(10, 6);
  EXPECT_EQ(q.size(), 6u);
  EXPECT_EQ(q.next_time(), 10);
  const std::vector<std::pair<TimeMs, int>> expected = {{10, 2}, {10, 4}, {10, 6},
                                                        {20, 3}, {30, 1}, {30, 5}};
  EXPECT_EQ(drain(q), expected);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.pop().has_value());
}

TEST(EventQueue, SequenceNumbersFollowPushOrder) {
  Queue q;
  q.push(5, 0);
  q.push(1, 0);
  q.push(5, 0);
  std::vector<std::uint64_t> seqs;
  while (auto e = q.pop()) seqs.push_back(e->seq);
  EXPECT_EQ(seqs, (std::vector<std::uint64_t>{2, 1, 3}));
  EXPECT_EQ(q.pushed_count(), 3u);
}

TEST(EventQueue, CancelRemovesExactlyOnce) {
  Queue q;
  const EventId a = q.push(10, 1);
  const EventId b = q.push(10, 2);
  const EventId c = q.push(5, 3);
  EXPECT_TRUE(q.is_pending(b));
  EXPECT_TRUE(q.cancel(b));
  EXPECT_FALSE(q.cancel(b));
  EXPECT_FALSE(q.is_pending(b));
  EXPECT_EQ(q.size(), 2u);
  // Cancelling the earliest moves next_time() on at once.
  EXPECT_TRUE(q.cancel(c));
  EXPECT_EQ(q.next_time(), 10);
  const auto e = q.pop();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->payload, 1);
  EXPECT_EQ(e->id, a);
  EXPECT_FALSE(q.cancel(a));  // already executed
  EXPECT_FALSE(q.cancel(EventId{}));
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, ReusedSlotsNeverConfuseOldIds) {
  Queue q;
  const EventId first = q.push(1, 1);
  ASSERT_TRUE(q.cancel(first));
  const EventId second = q.push(1, 2);  // takes the freed slot
  EXPECT_NE(first, second);
  EXPECT_FALSE(q.is_pending(first));
  EXPECT_FALSE(q.cancel(first));
  EXPECT_TRUE(q.is_pending(second));
  ASSERT_NE(q.find(second), nullptr);
  EXPECT_EQ(*q.find(second), 2);
  EXPECT_EQ(q.find(first), nullptr);
}

TEST(EventQueue, CancelReleasesThePayloadAtOnce) {
  EventQueue<std::shared_ptr<int>> q;
  auto resource = std::make_shared<int>(1);
  const EventId id = q.push(100, resource);
  EXPECT_EQ(resource.use_count(), 2);
  q.cancel(id);
  EXPECT_EQ(resource.use_count(), 1);
}

TEST(EventQueue, BoundedSizeRefusesAndChangesNothing) {
  Queue q(3);
  EXPECT_TRUE(q.push(3, 1));
  EXPECT_TRUE(q.push(2, 2));
  EXPECT_TRUE(q.push(1, 3));
  const EventId refused = q.push(0, 4);
  EXPECT_FALSE(refused);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.next_time(), 1);
  EXPECT_EQ(q.pushed_count(), 3u);
  q.pop();
  EXPECT_TRUE(q.push(0, 5));  // room again
  const std::vector<std::pair<TimeMs, int>> expected = {{0, 5}, {2, 2}, {3, 1}};
  EXPECT_EQ(drain(q), expected);
}

TEST(EventQueue, CancelIfRemovesMatchingPayloads) {
  Queue q;
  for (int i = 0; i < 10; ++i) q.push(10 - i, i);
  EXPECT_EQ(q.cancel_if([](int p) { return p % 2 == 0; }), 5u);
  const std::vector<std::pair<TimeMs, int>> expected = {{1, 9}, {3, 7}, {5, 5}, {7, 3}, {9, 1}};
  EXPECT_EQ(drain(q), expected);
}

TEST(EventQueue, StaleKeysAreCompacted) {
  Queue q;
  std::vector<EventId> ids;
  for (int i = 0; i < 10'000; ++i) ids.push_back(q.push(i, i));
  for (int i = 0; i < 10'000; ++i) {
    if (i % 10 != 0) q.cancel(ids[static_cast<std::size_t>(i)]);
    EXPECT_LE(q.key_count(), 2 * q.size() + 64);
  }
  EXPECT_EQ(q.size(), 1000u);
  int expected = 0;
  while (auto e = q.pop()) {
    EXPECT_EQ(e->payload, expected);
    expected += 10;
  }
  EXPECT_EQ(expected, 10'000);
}

TEST(EventQueue, ClearKeepsIdsUnique) {
  Queue q;
  const EventId before = q.push(1, 1);
  q.clear();
  EXPECT_TRUE(q.empty());
  const EventId after = q.push(1, 2);
  EXPECT_NE(before, after);
  EXPECT_FALSE(q.is_pending(before));
  EXPECT_TRUE(q.is_pending(after));
}

TEST(EventQueue, LargeHeapStaysOrdered) {
  // Deterministic pseudo-random times (an LCG; no generator needed here).
  Queue q;
  std::uint64_t x = 1;
  std::vector<std::pair<TimeMs, int>> pushed;
  for (int i = 0; i < 50'000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto t = static_cast<TimeMs>((x >> 33) % 1000);
    q.push(t, i);
    pushed.emplace_back(t, i);
  }
  std::stable_sort(pushed.begin(), pushed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  EXPECT_EQ(drain(q), pushed);
}

// --- properties against a model --------------------------------------------

struct Op {
  int kind;  // 0..3 push, 4..5 pop, 6 cancel, 7 cancel_if
  int arg;
};

// The model: (time, insertion count) -> payload, and the list of ids.
struct Model {
  std::map<std::pair<TimeMs, std::uint64_t>, int> pending;
  std::uint64_t pushes = 0;
};

void replay(const std::vector<Op>& ops, TimeMs time_range, std::size_t pending_max) {
  Queue q(pending_max);
  Model m;
  std::vector<std::pair<EventId, std::pair<TimeMs, std::uint64_t>>> issued;
  int payload = 0;
  for (const Op& op : ops) {
    if (op.kind <= 3) {
      const TimeMs t = static_cast<TimeMs>(op.arg) % time_range;
      const EventId id = q.push(t, payload);
      if (m.pending.size() >= pending_max) {
        RC_ASSERT(!id);
      } else {
        RC_ASSERT(static_cast<bool>(id));
        ++m.pushes;
        m.pending.emplace(std::make_pair(t, m.pushes), payload);
        issued.emplace_back(id, std::make_pair(t, m.pushes));
      }
      ++payload;
    } else if (op.kind <= 5) {
      const auto e = q.pop();
      if (m.pending.empty()) {
        RC_ASSERT(!e.has_value());
      } else {
        RC_ASSERT(e.has_value());
        const auto it = m.pending.begin();
        RC_ASSERT(e->time == it->first.first);
        RC_ASSERT(e->seq == it->first.second);
        RC_ASSERT(e->payload == it->second);
        m.pending.erase(it);
      }
    } else if (op.kind == 6) {
      if (issued.empty()) continue;
      const auto& [id, key] = issued[static_cast<std::size_t>(op.arg) % issued.size()];
      const bool in_model = m.pending.erase(key) == 1;
      RC_ASSERT(q.cancel(id) == in_model);
      RC_ASSERT(!q.is_pending(id));
    } else {
      const int divisor = 2 + op.arg % 5;
      const auto cancelled = q.cancel_if([divisor](int p) { return p % divisor == 0; });
      std::size_t in_model = 0;
      for (auto it = m.pending.begin(); it != m.pending.end();) {
        if (it->second % divisor == 0) {
          it = m.pending.erase(it);
          ++in_model;
        } else {
          ++it;
        }
      }
      RC_ASSERT(cancelled == in_model);
    }
    RC_ASSERT(q.size() == m.pending.size());
    RC_ASSERT(q.empty() == m.pending.empty());
    if (!m.pending.empty()) RC_ASSERT(q.next_time() == m.pending.begin()->first.first);
    RC_ASSERT(q.key_count() <= 2 * q.size() + 64);
  }
  // Whatever is left drains in model order.
  for (const auto& [key, value] : m.pending) {
    const auto e = q.pop();
    RC_ASSERT(e.has_value());
    RC_ASSERT(e->time == key.first);
    RC_ASSERT(e->payload == value);
  }
  RC_ASSERT(!q.pop().has_value());
}

rc::Gen<std::vector<Op>> gen_ops() {
  return rc::gen::container<std::vector<Op>>(
      rc::gen::construct<Op>(rc::gen::inRange(0, 8), rc::gen::inRange(0, 1'000'000)));
}

REHEARSE_PROP(EventQueueProp, MatchesModelWithManyTies, ()) {
  const auto ops = *gen_ops();
  replay(ops, 4, 1u << 20);
}

REHEARSE_PROP(EventQueueProp, MatchesModelWithSpreadTimes, ()) {
  const auto ops = *gen_ops();
  replay(ops, 1'000'000, 1u << 20);
}

REHEARSE_PROP(EventQueueProp, MatchesModelWhenBounded, ()) {
  const auto ops = *gen_ops();
  const auto pending_max = *rc::gen::inRange<std::size_t>(1, 12);
  replay(ops, 16, pending_max);
}

// The early "next top" hint of a pop names exactly the key that is on top
// afterwards (the queue prefetches that key's payload on the strength of it).
REHEARSE_PROP(EventQueueProp, NextTopHintIsExact, (const std::vector<std::int64_t>& times)) {
  EventKeyHeap heap;
  std::uint64_t tag = 0;
  for (const std::int64_t t : times) heap.push({t % 1000, ++tag});
  std::size_t hints = 0;
  while (!heap.empty()) {
    std::optional<std::uint64_t> hint;
    const bool full_first_level = heap.size() > 5;
    heap.pop([&hint](std::uint64_t next_tag) { hint = next_tag; });
    RC_ASSERT(hint.has_value() == full_first_level);
    if (hint) {
      RC_ASSERT(*hint == heap.top().tag);
      ++hints;
    }
  }
  RC_TAG(hints > 0 ? "hinted" : "too small");
}

// Push-only then pop-all is a stable sort by time, for any times (negative
// and extreme values included).
REHEARSE_PROP(EventQueueProp, DrainIsStableSortByTime, (const std::vector<std::int64_t>& times)) {
  Queue q;
  std::vector<std::pair<TimeMs, int>> expected;
  int i = 0;
  for (const std::int64_t t : times) {
    q.push(t, i);
    expected.emplace_back(t, i);
    ++i;
  }
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  RC_ASSERT(drain(q) == expected);
}

}  // namespace
}  // namespace rehearse::sim
