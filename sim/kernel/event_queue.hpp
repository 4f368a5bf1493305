// EventQueue: the simulator's pending events, ordered by (time, sequence).
//
// Order. Events pop in increasing time; events at the same time pop in the
// order they were pushed (the sequence number is assigned at push and never
// reused), so a run never depends on heap internals or pointer values.
//
// Layout, for speed. The heap holds only compact 16-byte keys: the time and
// one 64-bit tag that packs the sequence number (high 40 bits) with the index
// of the payload's slot (low 24 bits). Comparing tags therefore compares
// sequence numbers. Payloads live apart in a slot array and never move while
// the heap sifts. The heap is 4-ary and its array is offset so that the four
// children of a node share one 64-byte cache line: a pop touches one line per
// level over log4(n) levels instead of log2(n) for a binary heap. Comparisons
// are branch-free and pops are bottom-up (see EventKeyHeap).
//
// Cancel is lazy: it frees the payload's slot at once (the payload is
// destroyed) and leaves the key in the heap; a key whose tag no longer matches
// its slot is stale and is skipped when it reaches the top. The top of the
// heap is kept live at all times, and the heap is rebuilt without the stale
// keys when they outnumber the live ones, so memory stays O(pending).
//
// Bounds: at most `pending_max` live events (at most 2^24 - 1, the slot
// field's range); push beyond it returns no id and changes nothing. At most
// 2^40 pushes per queue (the sequence field), which is asserted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/assert.hpp"
#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse::sim {

// Identifies one pushed event; stays unique for the queue's lifetime (a
// cancelled or executed id never matches a later event).
struct EventId {
  std::uint64_t tag = 0;  // 0: no event
  explicit operator bool() const noexcept { return tag != 0; }
  friend bool operator==(EventId a, EventId b) noexcept { return a.tag == b.tag; }
};

// Hints the cache to load the line holding `p` (never faults, no effect on
// results). On x86-64 a volatile asm: g++ 12 at -O2 silently deleted the
// __builtin_prefetch calls of the heap's sift loop (seen in the generated
// code), and a hint the compiler may drop cannot be measured or relied on.
inline void prefetch_line(const void* p) noexcept {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// The key heap, without payloads (also usable on its own).
//
// Keys are stored as one unsigned 128-bit integer, (time with its sign bit
// flipped) << 64 | tag, so that (time, tag) order is plain integer order: a
// comparison is branch-free (cmp/sbb), which matters because the outcome of
// "which child is smaller" is a coin toss the branch predictor cannot learn.
// Pop is bottom-up (Wegener / libstdc++'s __adjust_heap, here 4-ary): the hole
// left by the minimum walks down to a leaf along the smallest children
// without comparing against the displaced last key, which then sifts up from
// there; the last key is usually among the latest, so it rarely climbs. Once
// the heap outgrows the caches, every level also prefetches the four
// possible next child groups, so the misses of a level overlap instead of
// queueing behind the comparisons.
class EventKeyHeap {
 public:
  struct Key {
    TimeMs time;
    std::uint64_t tag;
  };

  static bool less(const Key& a, const Key& b) noexcept { return pack(a) < pack(b); }

  EventKeyHeap() = default;
  EventKeyHeap(const EventKeyHeap&) = delete;
  EventKeyHeap& operator=(const EventKeyHeap&) = delete;
  EventKeyHeap(EventKeyHeap&&) noexcept = default;
  EventKeyHeap& operator=(EventKeyHeap&&) noexcept = default;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  Key top() const noexcept {
    REHEARSE_ASSERT_GT(size_, 0u);  // callers check empty() first
    return unpack(at(0));
  }

  void push(Key key) {
    if (size_ == capacity_) grow();
    REHEARSE_ASSERT_LT(size_, capacity_);
    sift_up(size_++, pack(key));
    // The minimum is at the top: nothing pushed can be smaller than it.
    REHEARSE_ASSERT(!(pack(key) < at(0)));
  }

  void pop() noexcept {
    pop([](std::uint64_t) {});
  }

  // Pops, and as soon as the first level is decided calls on_next_top(tag)
  // with the tag of the new top: the smallest child of the root (the
  // displaced last key descends from some child, so it is larger). Called
  // only when the root has four children. The event queue uses it to start
  // loading the next payload early.
  template <typename OnNextTop>
  void pop(OnNextTop on_next_top) noexcept {
    REHEARSE_ASSERT(size_ > 0);
    const Packed last = at(--size_);
    if (size_ == 0) return;
    // Walk the hole down to a leaf along the smallest children.
    std::size_t hole = 0;
    const bool far_from_cache = size_ > kPrefetchFromSize;
    if (kArity + 1 <= size_) {
      if (far_from_cache) prefetch_grandchildren(1);
      const std::size_t best = min_of_four(1);
      on_next_top(static_cast<std::uint64_t>(at(best)));
      at(0) = at(best);
      hole = best;
    }
    for (;;) {
      const std::size_t first = kArity * hole + 1;
      if (first + kArity <= size_) {
        if (far_from_cache) prefetch_grandchildren(first);
        const std::size_t best = min_of_four(first);
        at(hole) = at(best);
        hole = best;
      } else {
        if (first < size_) {
          std::size_t best = first;
          for (std::size_t c = first + 1; c < size_; ++c) {
            if (at(c) < at(best)) best = c;
          }
          at(hole) = at(best);
          hole = best;
        }
        break;
      }
    }
    sift_up(hole, last);
    // The new top is the smallest key left, the displaced last key included.
    REHEARSE_ASSERT(!(last < at(0)));
  }

  // Keeps the keys for which keep(key) is true and restores the heap in O(n).
  template <typename Keep>
  void retain(Keep keep) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      if (keep(unpack(at(i)))) at(kept++) = at(i);
    }
    REHEARSE_ASSERT_LE(kept, size_);
    size_ = kept;
    heapify();
  }

  void clear() noexcept { size_ = 0; }

 private:
  __extension__ using Packed = unsigned __int128;  // GNU extension; g++ and clang have it

  static constexpr std::size_t kArity = 4;
  // Element i lives at storage index i + kOffset so that children 4i+1..4i+4
  // land on storage indices 4(i+1)..4(i+1)+3: one aligned 64-byte line.
  static constexpr std::size_t kOffset = kArity - 1;
  static constexpr std::size_t kLineBytes = 64;
  // Below this many keys (64 KiB) the heap sits in L1 and prefetching only
  // costs instructions.
  static constexpr std::size_t kPrefetchFromSize = std::size_t{1} << 12;
  static constexpr std::uint64_t kSignBit = std::uint64_t{1} << 63;

  static Packed pack(const Key& key) noexcept {
    return (static_cast<Packed>(static_cast<std::uint64_t>(key.time) ^ kSignBit) << 64) | key.tag;
  }
  static Key unpack(Packed packed) noexcept {
    return Key{static_cast<TimeMs>(static_cast<std::uint64_t>(packed >> 64) ^ kSignBit),
               static_cast<std::uint64_t>(packed)};
  }

  struct AlignedDelete {
    void operator()(Packed* p) const noexcept {
      ::operator delete[](p, std::align_val_t{kLineBytes});
    }
  };

  Packed& at(std::size_t i) noexcept { return keys_[i + kOffset]; }
  const Packed& at(std::size_t i) const noexcept { return keys_[i + kOffset]; }

  void sift_up(std::size_t i, Packed key) noexcept {
    REHEARSE_ASSERT_LT(i, size_);  // the hole is inside the heap
    while (i > 0) {
      const std::size_t parent = (i - 1) / kArity;
      if (!(key < at(parent))) break;
      at(i) = at(parent);
      i = parent;
    }
    at(i) = key;
  }

  // Index of the smallest of the full group first..first+3, branch-free.
  std::size_t min_of_four(std::size_t first) const noexcept {
    // Only full groups: the caller checked first + 3 is a key.
    REHEARSE_ASSERT_LE(first + kArity, size_);
    const Packed k0 = at(first), k1 = at(first + 1), k2 = at(first + 2), k3 = at(first + 3);
    const bool b01 = k1 < k0;
    const bool b23 = k3 < k2;
    const Packed m01 = b01 ? k1 : k0;
    const Packed m23 = b23 ? k3 : k2;
    const std::size_t i01 = first + static_cast<std::size_t>(b01);
    const std::size_t i23 = first + 2 + static_cast<std::size_t>(b23);
    return m23 < m01 ? i23 : i01;
  }

  // Prefetches the four child groups of first..first+3, each index clamped
  // to the last key so every address stays inside the array.
  void prefetch_grandchildren(std::size_t first) const noexcept {
    REHEARSE_ASSERT_LT(first, size_);  // so size_ - 1 below is a key
    const Packed* base = keys_.get() + kOffset;
    const std::size_t last = size_ - 1;
    const std::size_t group = kArity * first + 1;
    prefetch_line(base + std::min(group, last));
    prefetch_line(base + std::min(group + kArity, last));
    prefetch_line(base + std::min(group + 2 * kArity, last));
    prefetch_line(base + std::min(group + 3 * kArity, last));
  }

  // Top-down sift used by heapify (cold path).
  void sift_down(std::size_t i, Packed key) noexcept;
  void grow();
  void heapify() noexcept;

  std::unique_ptr<Packed[], AlignedDelete> keys_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// A popped event.
template <typename Payload>
struct PoppedEvent {
  TimeMs time = 0;
  std::uint64_t seq = 0;  // the push order; strictly increasing per queue
  EventId id;
  Payload payload;
};

// Payload must be default-constructible and movable; a freed slot holds a
// default Payload (so a cancelled payload's resources are released at once).
template <typename Payload>
class EventQueue {
 public:
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kSlotMask = (std::uint64_t{1} << kSlotBits) - 1;
  static constexpr std::size_t kPendingLimit = kSlotMask;  // slot index kSlotMask unused
  static constexpr std::uint64_t kSeqMax = (std::uint64_t{1} << (64 - kSlotBits)) - 1;

  explicit EventQueue(std::size_t pending_max = std::size_t{1} << 20) : pending_max_(pending_max) {
    REHEARSE_ASSERT(pending_max_ >= 1);
    REHEARSE_ASSERT(pending_max_ <= kPendingLimit);
  }

  std::size_t size() const noexcept { return live_; }
  bool empty() const noexcept { return live_ == 0; }
  std::size_t pending_max() const noexcept { return pending_max_; }
  // Pushes so far (the next event's sequence number is pushed_count() + 1).
  std::uint64_t pushed_count() const noexcept { return next_seq_ - 1; }
  // Keys held by the heap, live and stale (cancelled but not yet skipped):
  // stays below 2 * size() + 64 (see maybe_compact).
  std::size_t key_count() const noexcept { return heap_.size(); }

  // Time of the earliest pending event; the queue must not be empty.
  TimeMs next_time() const noexcept {
    REHEARSE_ASSERT(live_ > 0);
    return heap_.top().time;
  }

  // Schedules `payload` at `time`. Empty id when the queue is full.
  EventId push(TimeMs time, Payload payload) {
    if (live_ >= pending_max_) return EventId{};
    REHEARSE_ASSERT(next_seq_ <= kSeqMax);
    std::uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    // A free slot is free (tag 0), and its index fits the tag's slot bits.
    REHEARSE_ASSERT_LT(slot, kPendingLimit);
    REHEARSE_ASSERT_EQ(slots_[slot].tag, 0u);
    const std::uint64_t tag = (next_seq_++ << kSlotBits) | slot;
    slots_[slot].tag = tag;
    slots_[slot].payload = std::move(payload);
    heap_.push({time, tag});
    ++live_;
    REHEARSE_ASSERT_LE(live_, pending_max_);
    REHEARSE_ASSERT_EQ(heap_.size(), live_ + stale_);
    return EventId{tag};
  }

  bool is_pending(EventId id) const noexcept {
    if (!id) return false;
    const std::size_t slot = id.tag & kSlotMask;
    return slot < slots_.size() && slots_[slot].tag == id.tag;
  }

  // The payload of a pending event (to inspect it before deciding to cancel).
  const Payload* find(EventId id) const noexcept {
    return is_pending(id) ? &slots_[id.tag & kSlotMask].payload : nullptr;
  }

  // Cancels a pending event; false when it already ran or was cancelled.
  bool cancel(EventId id) {
    if (!is_pending(id)) return false;
    release(static_cast<std::uint32_t>(id.tag & kSlotMask));
    ++stale_;
    drop_stale_top();
    maybe_compact();
    // Ids are never reused: a cancelled one stays cancelled.
    REHEARSE_ASSERT(!is_pending(id));
    return true;
  }

  // Cancels every pending event whose payload satisfies pred(payload);
  // returns how many. Visits slots in index order (deterministic).
  template <typename Pred>
  std::size_t cancel_if(Pred pred) {
    const std::size_t live_before = live_;
    std::size_t cancelled = 0;
    for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
      if (slots_[slot].tag != 0 && pred(std::as_const(slots_[slot].payload))) {
        release(static_cast<std::uint32_t>(slot));
        ++stale_;
        ++cancelled;
      }
    }
    if (cancelled > 0) {
      drop_stale_top();
      maybe_compact();
    }
    REHEARSE_ASSERT_EQ(heap_.size(), live_ + stale_);
    REHEARSE_ASSERT_EQ(live_ + cancelled, live_before);
    return cancelled;
  }

  // Removes and returns the earliest event (FIFO among equal times).
  std::optional<PoppedEvent<Payload>> pop() {
    if (live_ == 0) return std::nullopt;
    const EventKeyHeap::Key key = heap_.top();
    // The next pop will read the new top's slot, which is anywhere in the
    // slot array: start loading it now so the miss overlaps with the rest of
    // this pop and whatever the caller does in between.
    heap_.pop(
        [this](std::uint64_t next_tag) { prefetch_line(slots_.data() + (next_tag & kSlotMask)); });
    const auto slot = static_cast<std::uint32_t>(key.tag & kSlotMask);
    // drop_stale_top keeps the top live: what pops was never cancelled.
    REHEARSE_ASSERT_EQ(slots_[slot].tag, key.tag);
    PoppedEvent<Payload> event{key.time, key.tag >> kSlotBits, EventId{key.tag},
                               std::move(slots_[slot].payload)};
    release(slot);
    if (stale_ != 0) {  // only after cancellations: the hot path skips both
      drop_stale_top();
      maybe_compact();
    }
    REHEARSE_ASSERT_EQ(heap_.size(), live_ + stale_);
    // (time, sequence) order: every key left comes strictly after this one.
    REHEARSE_ASSERT(heap_.empty() || EventKeyHeap::less(key, heap_.top()));
    return event;
  }

  // Drops every event; sequence numbers keep counting (ids stay unique).
  void clear() {
    heap_.clear();
    slots_.clear();
    free_slots_.clear();
    live_ = 0;
    stale_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t tag = 0;  // tag of the live event using this slot; 0 = free
    Payload payload{};
  };

  void release(std::uint32_t slot) {
    // Only a live slot is released, once.
    REHEARSE_ASSERT_NE(slots_[slot].tag, 0u);
    REHEARSE_ASSERT_GT(live_, 0u);
    slots_[slot].tag = 0;
    // Release what the payload holds now (a cancelled callback's captures);
    // plain data is simply overwritten by the next push.
    if constexpr (!std::is_trivially_destructible_v<Payload>) slots_[slot].payload = Payload{};
    free_slots_.push_back(slot);
    --live_;
  }

  bool is_stale(const EventKeyHeap::Key& key) const noexcept {
    // Every key in the heap was pushed with a slot that exists.
    REHEARSE_ASSERT_LT(key.tag & kSlotMask, slots_.size());
    return slots_[key.tag & kSlotMask].tag != key.tag;
  }

  // Keeps the invariant "the top key is live" (next_time() relies on it).
  void drop_stale_top() noexcept {
    while (stale_ > 0 && !heap_.empty() && is_stale(heap_.top())) {
      heap_.pop();
      --stale_;
    }
    // With no stale key left the top is live, or nothing is pending.
    REHEARSE_ASSERT(heap_.empty() || stale_ > 0 || !is_stale(heap_.top()));
  }

  // Rebuilds the heap without stale keys once they outnumber the live ones
  // (and are at least 64): O(n) work after at least n/2 cancellations.
  void maybe_compact() {
    if (stale_ < 64 || stale_ <= live_) return;
    heap_.retain([this](const EventKeyHeap::Key& key) { return !is_stale(key); });
    stale_ = 0;
    // Exactly the live events' keys are left.
    REHEARSE_ASSERT_EQ(heap_.size(), live_);
  }

  EventKeyHeap heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t pending_max_;
  std::size_t live_ = 0;
  std::size_t stale_ = 0;  // keys in heap_ whose event was cancelled
  std::uint64_t next_seq_ = 1;
};

}  // namespace rehearse::sim
