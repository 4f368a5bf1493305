// The run's seeded generator: xoshiro256** 1.0 (Blackman and Vigna, 2018),
// its 256-bit state filled from the 64-bit seed by SplitMix64 (Steele, Lea and
// Flood, 2014), as the authors recommend.
//
// Determinism rules (docs/simulator.md): one generator per run, owned by the
// simulator; never std::random_device or the std::*_distribution classes,
// whose output differs between standard libraries. Every draw that shapes a
// run goes through the functions below, which are defined bit for bit here.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "model/random.hpp"

namespace rehearse::sim {

// SplitMix64 as a stream: state += golden gamma, then the mix function.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) noexcept : state_(state) {}
  std::uint64_t next() noexcept;

 private:
  std::uint64_t state_;
};

class Rng final : public RandomSource {
 public:
  using State = std::array<std::uint64_t, 4>;

  // State words are the first four SplitMix64 outputs from `seed`.
  explicit Rng(std::uint64_t seed) noexcept;
  // A raw state, as the reference C code takes it (tests use published
  // vectors). Must not be all zero (the one fixed point of xoshiro).
  static Rng from_state(const State& state) noexcept;

  std::uint64_t next_u64() noexcept override;

  // Uniform integer in [0, bound), bound >= 1, without modulo bias: Lemire's
  // multiply-and-reject ("Fast Random Integer Generation in an Interval",
  // ACM TOMACS 2019). The high 64 bits of next_u64() * bound are the result;
  // draws whose low 64 bits fall below 2^64 mod bound are rejected and redrawn,
  // so every value has exactly the same number of accepted 64-bit inputs.
  std::uint64_t next_below(std::uint64_t bound) noexcept;
  // Uniform integer in [lo, hi] (inclusive), lo <= hi; the full 64-bit range
  // is allowed.
  std::int64_t next_in(std::int64_t lo, std::int64_t hi) noexcept;
  // Uniform double in [0, 1): the top 53 bits times 2^-53 (RandomSource).
  using RandomSource::next_unit;
  // True with probability p (p <= 0 never, p >= 1 always); one draw either way.
  bool next_bool(double p) noexcept;

  // Advances the state by 2^128 draws (the reference jump()): sub-streams made
  // by jumping never overlap for 2^128 draws.
  void jump() noexcept;
  // An independent generator for a named sub-stream (a simulated service, a
  // fault injector), seeded from this generator's *seed* and the name, not
  // from its current state: adding a draw in one component does not shift the
  // numbers another component sees. The name is hashed with 64-bit FNV-1a.
  Rng derive(std::string_view stream_name) const noexcept;
  Rng derive(std::uint64_t stream_id) const noexcept;

  std::uint64_t seed() const noexcept { return seed_; }
  const State& state() const noexcept { return s_; }

 private:
  Rng() noexcept = default;
  State s_{};
  std::uint64_t seed_ = 0;
};

}  // namespace rehearse::sim
