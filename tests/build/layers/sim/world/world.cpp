#include "sim/kernel/clock.hpp"
// The world reaching up into the search: what the layer check refuses.
#include "sim/check/search.hpp"
int world_start() { return now_ms() + seeds(); }
