// The only place the command line reads the wall clock: defaults such as
// `cron next` without --from. Never used inside a simulated run.
#pragma once

#include "model/time.hpp"

namespace rehearse::cli {
TimeMs wall_clock_now();
}
