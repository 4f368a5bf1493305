// A block of memory held back for running out of it (docs/run.md, "Out of
// memory").
//
// Without it, an allocation that fails deep inside a run throws
// std::bad_alloc from wherever it was: a core task, a JSON parse of the state
// snapshot. Some of those frames cannot take an exception (a JSON value's
// destructor allocates its own work stack while unwinding, and is noexcept),
// and the process ends in std::terminate with nothing reported.
//
// With it armed, the first allocation that fails is served instead: the
// handler (std::set_new_handler) lets the reserve go and marks it spent, and
// operator new tries again. The world sees the mark at its next event
// boundary and ends the run there, with the event complete, reported as a run
// cut short by running out of memory. Only a second failure before the
// reserve is re-armed throws std::bad_alloc as before.
//
// Its price: under an address-space limit (ulimit -v) the reserve takes its
// size of the limit, so a run within that much of the limit is cut short
// where it would have completed (docs/run.md has the measurements).
//
// The mark is process-wide: runs on other threads see it too and end the same
// way. It never shapes a run's events (determinism: docs/simulator.md), it
// only cuts a run short, which is reported as such and never as a result.
#pragma once

#include <cstddef>

namespace rehearse::sim {

inline constexpr std::size_t kMemoryReserveBytes = std::size_t{64} << 20;

// Holds `bytes` of address space back and installs the new-handler. Arming again while armed keeps
// the one reserve. False when the reserve itself could not be had (nothing is installed).
bool arm_memory_reserve(std::size_t bytes = kMemoryReserveBytes);

// The reserve was let go to serve a failed allocation, and not re-armed.
bool memory_reserve_spent() noexcept;

// After a run cut short: takes the reserve back when the memory is there
// again (true), else it stays spent (false).
bool rearm_memory_reserve() noexcept;

// Frees the reserve and removes the handler (tests; the process's end).
void disarm_memory_reserve() noexcept;

}  // namespace rehearse::sim
