#include "sim/cli/wall_clock.hpp"

#include <chrono>

namespace rehearse::cli {
TimeMs wall_clock_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace rehearse::cli
