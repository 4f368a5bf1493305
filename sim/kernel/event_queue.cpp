#include "sim/kernel/event_queue.hpp"

#include <new>

namespace rehearse::sim {

// Cold path: doubles the aligned key array (keys are trivially copyable).
void EventKeyHeap::grow() {
  REHEARSE_ASSERT_EQ(size_, capacity_);  // push grows only a full array
  const std::size_t capacity = capacity_ == 0 ? 256 : capacity_ * 2;
  const std::size_t storage = capacity + kOffset;
  auto* raw = static_cast<Packed*>(
      ::operator new[](storage * sizeof(Packed), std::align_val_t{kLineBytes}));
  std::unique_ptr<Packed[], AlignedDelete> keys(raw);
  REHEARSE_ASSERT_GT(capacity, size_);
  if (size_ > 0) std::memcpy(raw + kOffset, keys_.get() + kOffset, size_ * sizeof(Packed));
  keys_ = std::move(keys);
  capacity_ = capacity;
}

void EventKeyHeap::sift_down(std::size_t i, Packed key) noexcept {
  REHEARSE_ASSERT_LT(i, size_);  // heapify sifts internal nodes only
  for (;;) {
    const std::size_t first = kArity * i + 1;
    if (first >= size_) break;
    std::size_t best = first;
    const std::size_t end = first + kArity < size_ ? first + kArity : size_;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (at(c) < at(best)) best = c;
    }
    if (!(at(best) < key)) break;
    at(i) = at(best);
    i = best;
  }
  at(i) = key;
}

// Floyd's bottom-up construction: sift down every internal node, last first.
void EventKeyHeap::heapify() noexcept {
  if (size_ < 2) return;
  for (std::size_t i = (size_ - 2) / kArity + 1; i-- > 0;) {
    sift_down(i, at(i));
  }
  // The heap order holds again: no key is smaller than its parent (a cold
  // path, O(n) like the construction itself).
  for (std::size_t i = 1; i < size_; ++i) REHEARSE_ASSERT(!(at(i) < at((i - 1) / kArity)));
}

}  // namespace rehearse::sim
