#include "sim/kernel/clock.hpp"
int clock_start() { return now_ms(); }
