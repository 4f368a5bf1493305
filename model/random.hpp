// RandomSource: the port through which the core draws randomness (BullMQ
// jitter). The simulator passes its one seeded generator; a production driver
// passes whatever it likes. The core never constructs a generator itself.
#pragma once

#include <cstdint>

namespace rehearse {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual std::uint64_t next_u64() = 0;

  // Uniform double in [0, 1) from the top 53 bits (like Math.random()'s range).
  double next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
};

}  // namespace rehearse
