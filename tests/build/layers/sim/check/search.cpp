#include "sim/check/search.hpp"
#include "sim/kernel/clock.hpp"
int search_start() { return seeds() + now_ms(); }
