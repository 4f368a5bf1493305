#include "sim/kernel/memory_reserve.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

std::atomic<void*> g_reserve{nullptr};
std::atomic<std::size_t> g_bytes{0};
std::atomic<bool> g_spent{false};

// Allocated with malloc, outside operator new, so that taking it never
// re-enters the handler. Not touched: what runs out is the address space a
// limit allows (ulimit -v, RLIMIT_AS), which counts the block untouched; a
// process the kernel's OOM killer ends never reaches the handler at all.
void* take_block(std::size_t bytes) noexcept {
  REHEARSE_ASSERT_GT(bytes, 0u);  // malloc(0) may return a block that reserves nothing
  return std::malloc(bytes);
}

// operator new's handler: the first failure spends the reserve and lets the
// allocation be tried again; with nothing left to give, it fails as usual.
void on_allocation_failure() {
  if (void* block = g_reserve.exchange(nullptr)) {
    std::free(block);
    g_spent.store(true);
    return;
  }
  throw std::bad_alloc();
}

}  // namespace

bool arm_memory_reserve(std::size_t bytes) {
  REHEARSE_ASSERT(bytes > 0);  // a reserve of 0 bytes serves nothing
  if (g_reserve.load() != nullptr) return true;
  void* block = take_block(bytes);
  if (block == nullptr) return false;
  g_bytes.store(bytes);
  g_reserve.store(block);
  g_spent.store(false);
  std::set_new_handler(on_allocation_failure);
  return true;
}

bool memory_reserve_spent() noexcept { return g_spent.load(std::memory_order_relaxed); }

bool rearm_memory_reserve() noexcept {
  if (!g_spent.load()) return true;
  // Only an armed reserve is spent, and arming recorded its (non-zero) size.
  REHEARSE_ASSERT_GT(g_bytes.load(), 0u);
  void* block = take_block(g_bytes.load());
  if (block == nullptr) return false;
  void* expected = nullptr;
  if (!g_reserve.compare_exchange_strong(expected, block)) std::free(block);
  g_spent.store(false);
  return true;
}

void disarm_memory_reserve() noexcept {
  std::set_new_handler(nullptr);
  std::free(g_reserve.exchange(nullptr));
  g_spent.store(false);
}

}  // namespace rehearse::sim
